"""The MCP server for coding agents (suite-cli-mcp.md §11): one implementation, `answer(message, conn)`,
and its stdio transport. The streamable HTTP transport is the gateway's `POST /mcp` (gateway.py), which
calls the same `answer` through `answer_waiting`.

    bench mcp                      (or: benchwarmers mcp, python -m benchwarmers.server.mcp_server)

Why the standard library and not the `mcp` SDK on the server side: the HTTP transport must live on the
gateway's and the dashboard's own ports, behind the same guard (Host, Origin, keys, body cap) as `/v1`,
in a server that is the standard library's `http.server`; the SDK's server wants its own ASGI app and
event loop, and would make the core depend on a third-party stack. What the agent sees is four tools
and a handful of JSON-RPC methods, small enough to answer by hand and pinned by tests that drive this
server with the official SDK's client on both transports (tests/test_mcp.py, MCP-21).

stdio (MCP-7): JSON-RPC 2.0, one message per line; stdout carries protocol messages only (everything
else goes to stderr). Each `tools/call` runs on its own non-daemon thread, so a `ping` or a second
call is answered while a panel runs, and a call already sent completes after stdin closes. Replies
are written whole, one per line, under a lock. Improvement 19: a call that carries a progress token
gets a progress notification every KEEPALIVE seconds, as over HTTP, because agent clients abort a
tool that stays silent for about 300 s.
"""

import dataclasses
import json
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from .. import __version__
from ..core import settings
from ..net import remote
from . import mcp_tools

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first (MCP-1)
KEEPALIVE = float(settings.default("BENCH_MCP_KEEPALIVE"))

INSTRUCTIONS = (
    "Benchwarmers puts one prompt to a panel of models (a collection) and returns every seat's answer. "
    "Ask a collection rather than a favourite model: list_collections says what each is for. "
    "Verify every claim against the real code before acting on it: seats fail together, and agreement "
    "between them is not evidence. Name every seat that answered in what you report, including errors "
    "and empty replies (an empty reply from a reasoning model is usually its token budget, not its "
    "judgement). After checking, send one verdict per judged seat, with its true claims in `real` and "
    "its untrue ones in `false`. Panels are good for exhaustive enumeration over real files (every "
    "caller, every place a rule is broken) and for adversarial review; put the real text in the "
    "prompt, since the seats cannot read your files."
)


REMINDERS = mcp_tools.Reminders()  # MCP-13: one memory per process, whichever transport a session uses


@dataclasses.dataclass
class Conn:
    """Who the tools speak for: the server they call (with the caller's credentials), and whether a
    local transcript may be read (stdio only, improvement 18)."""

    server: remote.Server
    reads_transcripts: bool = False
    reminders: mcp_tools.Reminders = dataclasses.field(default_factory=lambda: REMINDERS)


def error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def result(id_: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


PARSE_ERROR = error(None, -32700, "parse error")


def parse(text: str | bytes) -> Any:
    """A JSON-RPC message from a line or a body; None when it does not parse (MCP-5: also when it nests
    too deep to parse)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def answer(message: Any, conn: Conn) -> dict[str, Any] | None:
    """The reply to one parsed JSON-RPC message, or None for a notification (MCP-3..6). Never raises."""
    id_ = message.get("id") if isinstance(message, dict) else None
    if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str)):
        return error(id_, -32600, "invalid request")
    if "id" not in message:
        return None
    params = message.get("params", {})
    if not isinstance(params, dict):
        return error(id_, -32602, "params must be an object")
    try:
        return _method(message["method"], params, id_, conn)
    except Exception as exc:  # MCP-5: a request is never left unanswered
        return error(id_, -32603, f"{type(exc).__name__}: {exc}")


def _method(method: str, params: dict[str, Any], id_: Any, conn: Conn) -> dict[str, Any]:
    if method == "initialize":
        asked = params.get("protocolVersion")
        return result(id_, {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "benchwarmers", "title": "Benchwarmers", "version": __version__},
            "instructions": INSTRUCTIONS})
    if method == "ping":
        return result(id_, {})
    if method == "tools/list":
        return result(id_, {"tools": mcp_tools.TOOLS})
    if method == "tools/call":
        name = params.get("name")
        if not isinstance(name, str) or name not in mcp_tools.RUN:
            return error(id_, -32602, f"unknown tool {name!r}")
        return result(id_, call_tool(name, params.get("arguments", {}), conn))
    return error(id_, -32601, f"no method {method!r}")


def call_tool(name: str, arguments: Any, conn: Conn) -> dict[str, Any]:
    """MCP-6: a tool's texts, or its failure as a result with `isError: true`."""
    try:
        if not isinstance(arguments, dict):
            raise mcp_tools.ToolError("arguments must be an object")
        texts = mcp_tools.RUN[name](conn.server, arguments, conn)
    except mcp_tools.ToolError as exc:
        return tool_result([str(exc)], True)
    except remote.Problem as exc:
        return tool_result([problem_text(exc)], True)
    except Exception as exc:
        return tool_result([f"{type(exc).__name__}: {exc}"], True)
    return tool_result(texts, False)


def tool_result(texts: list[str], is_error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text} for text in texts], "isError": is_error}


def problem_text(exc: remote.Problem) -> str:
    """MCP-14: a server's refusal or absence in words an agent can act on."""
    if isinstance(exc, remote.Refused):
        message = exc.error_message() or exc.text(500) or exc.reason
        return f"Benchwarmers refused {exc.method} {exc.path} ({exc.status}): {message}"
    if isinstance(exc, remote.Unreachable):
        return (f"Benchwarmers is not running at {exc.base} ({exc.reason}). Start it with `bench gateway` "
                "(or its service), or point BENCHWARMERS_URL at the server you use.")
    if isinstance(exc, remote.NoAnswer):
        return (f"no answer from Benchwarmers at {exc.base} in {exc.seconds:g} s; set BENCHWARMERS_TIMEOUT "
                "for longer panels")
    assert isinstance(exc, remote.NotJSON)  # the one kind left
    return (f"Benchwarmers at {exc.base} answered {exc.path} with something that is not JSON; is "
            "BENCHWARMERS_URL a Benchwarmers server?")


def keepalive() -> float:
    """Seconds between progress notifications (KEEPALIVE); `BENCH_MCP_KEEPALIVE` shortens it for a proxy
    that drops idle connections sooner (and for the tests)."""
    try:
        value = float(settings.env("BENCH_MCP_KEEPALIVE"))
    except ValueError:
        return KEEPALIVE
    return value if value > 0 else KEEPALIVE


def progress_token(message: dict[str, Any]) -> str | int | float | None:
    """`params._meta.progressToken` of a request (a string or a number), else None."""
    meta = message.get("params", {}).get("_meta") if isinstance(message.get("params"), dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, (str, int, float)) and not isinstance(token, bool) else None


def progress(token: str | int | float, seconds: int) -> dict[str, Any]:
    """MCP-19's progress notification: `progress` is the whole seconds elapsed."""
    return {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": seconds, "message": f"the panel is running, {seconds} s"}}


def answer_waiting(message: dict[str, Any], conn: Conn, tick: Callable[[int], object],
                   daemon: bool = True) -> dict[str, Any] | None:
    """`answer(message, conn)` on a worker thread; `tick(whole seconds elapsed)` every keepalive() seconds
    while it runs. Returns the reply. A `tick` that raises stops the waiting (its caller is gone), never
    the call: the worker goes on and every seat is still recorded."""
    replies: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=1)
    started = time.monotonic()
    threading.Thread(target=lambda: replies.put(answer(message, conn)), name="mcp-call", daemon=daemon).start()
    interval = keepalive()
    while True:
        try:
            return replies.get(timeout=interval)
        except queue.Empty:
            tick(int(time.monotonic() - started))


class Stdio:
    """The stdio transport: read lines, answer each, write each reply whole under a lock."""

    def __init__(self, conn: Conn, out: TextIO) -> None:
        self.conn = conn
        self.out = out
        self.lock = threading.Lock()

    def write(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False) + "\n"
        with self.lock:
            self.out.write(line)
            self.out.flush()

    def serve(self, lines: Iterable[str]) -> None:
        """Answer every line until the input ends; calls still running finish on their own threads."""
        for line in lines:
            if not line.strip():
                continue
            message = parse(line)
            if message is None:
                self.write(PARSE_ERROR)
            elif isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
                threading.Thread(target=self.call, args=(message,), name="mcp-stdio-call").start()
            else:
                reply = answer(message, self.conn)
                if reply is not None:
                    self.write(reply)

    def call(self, message: dict[str, Any]) -> None:
        token = progress_token(message)
        tick = (lambda seconds: self.write(progress(token, seconds))) if token is not None else (lambda seconds: None)
        self.write(answer_waiting(message, self.conn, tick, daemon=False))


def main(argv: list[str] | None = None) -> int:
    """`bench mcp`: the stdio server, a thin client of the server at BENCHWARMERS_URL (§11)."""
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n", 1)[0] + "\n\nRuns until its input ends; configure BENCHWARMERS_URL, "
              "BENCHWARMERS_KEY and BENCHWARMERS_TIMEOUT.")
        return 0
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")  # type: ignore[union-attr]
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    stdio = Stdio(Conn(remote.Server.from_env(), reads_transcripts=True), sys.stdout)
    try:
        stdio.serve(sys.stdin)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
