"""The panel gateway: an OpenAI-compatible API on 127.0.0.1:8123 (gateway.md §5).

    python gateway.py            serve the data folder's collections
    python gateway.py --demo     serve a throwaway demo bench backed by the local upstream

This module holds the routes only: the handler parses, checks, dispatches and
answers. The panel lives in `metrics.panel`, the checks in `metrics.guard`, the
chat completions format in `metrics.chat`, the offload log in `metrics.offload`.

The handler speaks HTTP/1.0 as the reference does: every response closes its
connection and a stream ends at the close.
"""

import argparse
import ipaddress
import json
import os
import queue
import socket
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from metrics import __version__, chat, client, collections, demo, guard, offload, panel

STREAM_GRACE = 1.0
KEEPALIVE = 10.0
GET_ROUTES = "GET /v1/models, /bench/record, /api/tags, /api/version or /v1beta/models"
POST_ROUTES = ("POST /v1/chat/completions, /v1/messages, /v1/responses, /v1/completions, /api/chat, /api/generate, "
               "/v1beta/models/<collection>:generateContent or /bench/verdict")
RECORD_USAGE = "GET /bench/record?collection=bench/<name>[&task=<words in the verdicts' notes>]"
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


def route_of(raw):
    """GW-1: the path without its query string or trailing `/`."""
    return raw.split("?", 1)[0].rstrip("/") or "/"


def listing(may_call=None):
    rows = [{"id": row["id"], "object": "model", "owned_by": "benchwarmers",
             **{k: v for k, v in row.items() if k != "id"}} for row in collections.listed(may_call)]
    return {"object": "list", "data": rows}


class Handler(BaseHTTPRequestHandler):
    server_version = f"benchwarmers/{__version__}"
    protocol_version = "HTTP/1.0"
    who = "-"

    @property
    def port(self):
        return self.server.server_address[1]

    # -- GET ---------------------------------------------------------------

    def do_GET(self):
        path = route_of(self.path)
        problem = guard.host_problem(self.headers, self.port)
        if problem:
            return self.refuse(403, problem)
        if not self.identify():
            return
        if path in ("/v1/models", "/models"):
            return self.send_json(200, listing())
        if path.startswith("/v1/models/"):
            return self.model_row(path[len("/v1/models/"):])
        if path == "/bench/record":
            return self.record()
        if path in ("/mcp", "/v1/mcp"):
            return self.send_json(405, {"error": {"message": "POST /mcp, one JSON-RPC message per request"}},
                                  {"Allow": "POST"})
        if path == "/health":
            return self.send_json(200, {"ok": True})
        self.refuse(404, f"no such route; try {GET_ROUTES}")

    def model_row(self, wanted):
        """IMP-21: OpenAI's retrieve-model route answers the listing row."""
        wanted = urllib.parse.unquote(wanted)
        for row in listing()["data"]:
            if row["id"] == wanted or row["id"] == f"bench/{wanted}":
                return self.send_json(200, row)
        self.refuse(404, collections.choose_message(wanted))

    def record(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        collection = (query.get("collection") or [""])[0]
        task = (query.get("task") or [""])[0]
        if not collection:
            return self.refuse(400, f"name the collection: {RECORD_USAGE}")
        self.send_json(200, {"collection": collection, "task": task,
                             "aliases": offload.record(collection, task)})

    # -- POST --------------------------------------------------------------

    def do_POST(self):
        path = route_of(self.path)
        problem = guard.write_problem(self.headers, self.port, guard.is_gateway_route(self.path),
                                      guard.GATEWAY_CAP)
        if problem:
            return self.refuse(*problem)
        if not self.identify():
            return
        body = self.read_json()
        if body is None:
            return
        if path == "/bench/verdict":
            return self.verdict(body)
        if path == "/bench/pending":
            return self.pending(body)
        if path in ("/v1/chat/completions", "/chat/completions"):
            return self.chat_completions(body)
        self.refuse(404, f"no such route; try {POST_ROUTES}")

    def read_json(self):
        """GW-3 (4): exactly Content-Length bytes; `{}` when empty; 400 when not a JSON object."""
        length = guard.content_length(self.headers)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            self.refuse(400, "body is not JSON")
            return None
        if not isinstance(body, dict):
            self.refuse(400, "body must be a JSON object")
            return None
        return body

    def verdict(self, body):
        """VRD-1: judge one seat's answer."""
        useful = body.get("useful")
        if not isinstance(useful, bool):
            return self.refuse(400, '"useful" must be true or false')
        claims = {}
        for field in ("real", "false"):
            value = body.get(field) or []
            if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
                return self.refuse(400, '"real" and "false" must be lists of one-sentence claims')
            claims[field] = value
        note = body.get("note") if isinstance(body.get("note"), str) else ""
        call = body.get("call") if isinstance(body.get("call"), str) else ""
        try:
            entry = offload.verdict(call, useful, note, claims["real"], claims["false"])
        except KeyError as exc:
            return self.refuse(404, exc.args[0])
        self.send_json(200, {"ok": True, "recorded": entry})

    def pending(self, body):
        calls = body.get("calls")
        if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
            return self.refuse(400, '"calls" must be a list of call ids')
        self.send_json(200, {"pending": offload.pending(calls)})

    def chat_completions(self, body):
        try:
            ask = chat.ask(body)
        except chat.Unsupported as exc:
            return self.refuse(400, str(exc))
        base, suffix = collections.split_reply(ask["model"])
        name = collections.resolve(base)
        if name is None:
            return self.refuse(400 if not base.strip() else 404, collections.choose_message(base))
        reply = ask["reply"] or suffix
        mode = reply or (collections.load().get(name) or {}).get("reply") or "all"
        if mode == "route":
            return self.refuse(400, f"route mode (bench/{name}:route) is not available in this gateway yet; "
                                    "ask the panel with :all or :merged")
        if ask["agentic"]:
            return self.refuse(400, "the request carries tools, tool calls or tool results, but a panel answers "
                                    f"with several models' text; use bench/{name}:route or "
                                    '"bench": {"reply": "route"} for one model that can use tools')
        shown = f"bench/{name}"
        if ask["stream"]:
            return self.stream_panel(name, ask, reply, shown)
        try:
            content, bench = panel.run(name, ask["messages"], ask["with"], reply, self.who)
        except Exception as exc:  # IMP-1: every failure is answered, never a dropped connection
            return self.refuse(*panel.refusal(exc))
        self.send_json(200, chat.reply(content, shown, bench))

    def stream_panel(self, name, ask, reply, shown):
        """§10: the 200 once the panel is seated (1 s grace), then each piece as it comes."""
        events = panel.start(name, ask["messages"], ask["with"], reply, self.who)
        try:
            event = events.get(timeout=STREAM_GRACE)
        except queue.Empty:
            event = None
        if event and event[0] == "error":
            return self.refuse(*panel.refusal(event[1]))
        writer = chat.Stream(self.write_now, shown)
        try:
            self.send_response(200)
            self.send_header("Content-Type", writer.content_type)
            self.send_header("Cache-Control", "no-cache")
            self.send_cors()
            self.end_headers()
            writer.start()
            streamed = False
            while True:
                if event is None:
                    try:
                        event = events.get(timeout=KEEPALIVE)
                    except queue.Empty:
                        writer.keepalive()
                        continue
                kind, value = event
                event = None
                if kind == "part":
                    writer.text(value)
                    streamed = True
                elif kind == "done":
                    content, bench = value
                    if not streamed:
                        writer.text(content)
                    return writer.end(bench)
                else:
                    return writer.error(*panel.refusal(value))
        except CLIENT_GONE:
            return  # STR-9: the panel thread goes on and records every seat

    # -- OPTIONS and the rest ----------------------------------------------

    def do_OPTIONS(self):
        if not guard.is_gateway_route(self.path):
            return self.send_error(501, "Unsupported method ('OPTIONS')")
        problem = guard.host_problem(self.headers, self.port)
        if problem:
            return self.refuse(403, problem)
        if not guard.origin_allowed(self.headers, self.port):
            origin = (self.headers.get("Origin") or "").strip()
            shown = repr(origin) if origin else "'(none)'"
            return self.refuse(403, f"Origin {shown} is not allowed; set BENCH_ALLOWED_ORIGINS or "
                                    "BENCHWARMERS_PUBLIC_URL to add one")
        self.send_response(204)
        for header, value in guard.preflight_headers(self.headers).items():
            self.send_header(header, value)
        self.send_cors()
        self.end_headers()

    # -- answering -----------------------------------------------------------

    def identify(self):
        """Who is calling (GW-2, GW-3 step 2): sets `self.who`, or refuses and returns False."""
        who, refusal = guard.identify(self.headers, self.path)
        if refusal:
            self.refuse(*refusal)
            return False
        self.who = who
        return True

    def write_now(self, data):
        self.wfile.write(data)

    def send_cors(self):
        for header, value in guard.cors_headers(self.headers, self.port).items():
            self.send_header(header, value)

    def send_json(self, status, payload, headers=None):
        data = json.dumps(payload).encode("ascii")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for header, value in (headers or {}).items():
                self.send_header(header, value)
            self.send_cors()
            self.end_headers()
            self.wfile.write(data)
        except CLIENT_GONE:
            pass

    def refuse(self, status, message, headers=None):
        """Every refusal is JSON in the route's format shape (ERR-1)."""
        self.send_json(status, chat.error_body(status, message), headers)

    def log_request(self, code="-", size="-"):
        guard.log(guard.access_line(self.command, self.path or "", code, self.who))

    def log_message(self, format, *args):
        guard.log(f"{self.log_date_time_string()} {guard.mask_secrets(format % args)}")


class Server(ThreadingHTTPServer):
    """One thread per connection, a deep listen backlog so bursts queue instead of being reset."""

    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True

    def __init__(self, address, handler=Handler):
        host = address[0].strip("[]")
        try:
            if ipaddress.ip_address(host).version == 6:  # IMP-18
                self.address_family = socket.AF_INET6
        except ValueError:
            pass
        super().__init__((host, address[1]), handler)


def serve(host="127.0.0.1", port=0):
    """A gateway on a thread (tests, the demo): returns the server; `server.shutdown()` stops it."""
    server = Server((host, port))
    threading.Thread(target=server.serve_forever, name="gateway", daemon=True).start()
    return server


def main(argv=None):
    parser = argparse.ArgumentParser(description="Benchwarmers panel gateway")
    parser.add_argument("--demo", action="store_true", help="serve a throwaway demo bench on the local upstream")
    parser.add_argument("--port", type=int, default=None, help="port (default BENCH_GATEWAY_PORT or 8123)")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(encoding="utf-8")
    address = guard.bind_address()
    problem = guard.startup_problem(address)
    if problem:
        sys.exit(problem)
    port = args.port if args.port is not None else int(os.environ.get("BENCH_GATEWAY_PORT") or 8123)
    upstream = None
    if args.demo:
        upstream = demo.start_demo()
    server = Server((address, port))
    threading.Thread(target=panel.warm_up, name="warm-up", daemon=True).start()
    host = f"[{address}]" if ":" in address else address
    base = f"http://{host}:{server.server_address[1]}/v1"
    names = ", ".join(f"bench/{n}" for n in collections.load())
    print(f"bench gateway on {base} — models: {names or 'none yet'}", flush=True)
    if args.demo:
        print(demo.snippets(base), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        client.STOP.set()
        server.server_close()
        if upstream:
            upstream.stop()


if __name__ == "__main__":
    main()
