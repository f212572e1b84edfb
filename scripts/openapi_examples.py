"""Capture the OpenAPI document's examples from a real demo bench (issue 33, OAS-3).

    python -m benchwarmers.scripts.openapi_examples          write ui/openapi-examples.json
    python -m benchwarmers.scripts.openapi_examples --check  say which captured shapes the live server no longer has

Starts the offline demo bench, serves the dashboard (the gateway's rows and its own) on a free port, and asks
every documented operation once: a panel in each API's format with that format's own `example`, a verdict on a
call id the chat panel just named, each dashboard write with `{}` (its refusal is the example: no write is made).
Each reply is kept by `METHOD path` (the row's own path) with the path and body sent; `server.openapi` puts them
into the document. The file is committed, and tests/test_openapi.py asks the same again and checks every reply
still has the captured shape, so an example that no longer matches the server fails a test rather than mislead.
"""

import http.client
import json
import sys
import urllib.parse
from typing import Any

from .. import wire
from ..core import paths
from ..dashboard import serve
from ..server import openapi
from ..wire import routes

# what each path placeholder is asked with; `<collection>` and its kin are the demo bench's collection
PLACES = {"collection": "bench/demo", "model": "bench/demo", "name": "bench/demo", "method": "embedContent",
          "response_id": "resp_0", "file": "bench.css", "sign_in": "unknown"}
QUERIES = {"collection": "bench/demo", "log": "none", "state": "unknown", "provider": "benchwarmers-demo",
           "model": "scout"}
PROMPT = [{"role": "user", "content": "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"}]
BODIES: dict[str, Any] = {
    "/v1/messages/count_tokens": {"model": "bench/demo", "messages": PROMPT},
    "/api/show": {"model": "bench/demo"},
    "/v1beta/models/<collection>:countTokens": {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]},
    "/v1beta/models/<collection>:<method>": {},
    "/mcp": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    "/login": {"token": "wrong"},
}
TEXT_CHARS = 400  # a page's or a stylesheet's example: its start


def rows() -> list[routes.Route]:
    """The documented rows of both ports (the dashboard's table holds the gateway's), each once; not the document."""
    return [row for row in serve.DASHBOARD.table if row.doc.summary and row.path != routes.OPENAPI.path]


def key(row: routes.Route) -> str:
    """How the examples file and the document know a row: `METHOD path`."""
    return f"{row.method} {row.path}"


def sent_path(row: routes.Route, call: str) -> str:
    shape = row.doc.shown or row.path
    path = routes.PLACEHOLDER.sub(lambda m: urllib.parse.quote(PLACES[m.group(1)], safe=""), shape)
    known = {**QUERIES, "call": call, "panel": call.rpartition(".")[0]}  # a call id is `<panel>.<seat>` (GW-ID-1)
    query = {arg.name: known.get(arg.name, "") for arg in row.doc.args if arg.required}
    return path + ("?" + urllib.parse.urlencode(query) if query else "")


def body_of(row: routes.Route, call: str) -> Any:
    if row.doc.panel:
        return wire.get(row.fmt).example
    if key(row) == key(routes.VERDICT):
        return {"call": call, "useful": True, "note": "the off-by-one is real"}
    if key(row) == key(routes.PENDING):
        return {"calls": [call]}
    return BODIES.get(row.path, {})


def ask(port: int, method: str, path: str, body: Any = None) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, data, {"Content-Type": "application/json"} if data is not None else {})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, (response.getheader("Content-Type") or "").split(";")[0], raw


def reply_of(media: str, raw: bytes) -> Any:
    if media == openapi.JSON and raw:
        return json.loads(raw)
    return raw.decode("utf-8", "replace")[:TEXT_CHARS] or None


def capture(port: int) -> dict[str, dict[str, Any]]:
    """Every documented operation asked once on `port`, the chat panel first (its call id is the verdict's)."""
    captured: dict[str, dict[str, Any]] = {}
    ordered = sorted(rows(), key=lambda row: key(row) != key(routes.CHAT))
    call = ""
    for row in ordered:
        path = sent_path(row, call)
        body = body_of(row, call) if row.method == "POST" else None
        status, media, raw = ask(port, row.method, path, body)
        entry: dict[str, Any] = {"path": path, "status": status, "media": media, "reply": reply_of(media, raw)}
        if body is not None:
            entry["request"] = body
        captured[key(row)] = entry
        if key(row) == key(routes.CHAT):
            call = entry["reply"]["bench"]["seats"][0]["call"]
    return captured


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The operations whose live status or Content-Type differ from the captured ones, or whose live reply lacks a
    field the example shows (a field the live reply adds is a field the example does not need: ids and times
    change, and some fields come once the bench has learned something, such as a context window)."""
    found = []
    for key, was in old.items():
        now = new.get(key)
        if now is None:
            found.append(f"{key}: no longer documented")
        elif (was["status"], was["media"]) != (now["status"], now["media"]):
            found.append(f"{key}: {was['status']} {was['media']} then, {now['status']} {now['media']} now")
        elif isinstance(was["reply"], dict) and set(was["reply"]) - set(now["reply"]):
            found.append(f"{key}: {sorted(set(was['reply']) - set(now['reply']))} captured, not there now")
    found += [f"{key}: documented, not captured" for key in new if key not in old]
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--check"]):
        print("usage: python -m benchwarmers.scripts.openapi_examples [--check]", file=sys.stderr)
        return 2
    from ..demo import demo

    upstream = demo.start_demo()
    server = serve.serve("127.0.0.1", 0)
    try:
        captured = capture(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        demo.stop_demo(upstream)
    if argv:
        problems = differences(openapi.examples(), captured)
        print("\n".join(problems) or "every captured example still has the live server's shape")
        return 1 if problems else 0
    text = json.dumps(captured, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    openapi.EXAMPLES.write_text(text, encoding="utf-8")
    print(f"{len(captured)} examples written to {openapi.EXAMPLES.relative_to(paths.CODE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
