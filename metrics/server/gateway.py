"""The panel gateway: an OpenAI-compatible API on 127.0.0.1:8123 (gateway.md §5).

    python gateway.py            serve the data folder's collections
    python gateway.py --demo     serve a throwaway demo bench backed by the local upstream

This module holds the route handlers only: the handler parses, checks, dispatches and
answers. The table of routes lives in `wire.routes`, the errors a request is
refused with in `core.errors`, the panel in `panel.panel`, the checks in `server.guard`, keys,
scopes and rate caps in `server.gatekeys`, the server's deadlines and limits in
`server.httpserver`, every client's own API (chat completions among them) in
`wire`, the offload log in `panel.offload`.

The handler speaks HTTP/1.0 as the reference does: every response closes its
connection and a stream ends at the close.
"""

import argparse
import errno
import json
import os
import queue
import signal
import sys
import threading
import time
import urllib.parse

from .. import __version__, wire
from ..core import errors, paths
from ..wire import routes
from ..net import remote
from ..panel import collections, leaderboard, offload, panel, route_mode
from . import gatekeys, guard, httpserver, mcp_server

STREAM_GRACE = 1.0
KEEPALIVE = 10.0
REPLY_WAIT = 2.0  # a stopping gateway's wait for the last replies to be written
MAX_PENDING = 1000  # ids one `/bench/pending` may ask about (security review 4: no guessing in bulk)
RECORD_QUERY = "?collection=bench/<name>[&task=<words in the verdicts' notes>]"
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)
LOOPBACK_HEADERS = ("Authorization", "Host", "x-api-key", "x-goog-api-key")  # MCP-20: what the tools pass on


def sse_event(message):
    """One JSON-RPC message as a server-sent event (MCP-19)."""
    return b"event: message\ndata: " + json.dumps(message).encode("ascii") + b"\n\n"


def listing(may_call=None):
    """`GET /v1/models` (LST-1). Google's own SDK lists at this path too (its default API version
    is v1) and reads `models`, so the Gemini listing (FMT-71) rides along beside OpenAI's `data`."""
    rows = [{"id": row["id"], "object": "model", "owned_by": "benchwarmers",
             **{k: v for k, v in row.items() if k != "id"}} for row in collections.listed(may_call)]
    return {"object": "list", "data": rows, **wire.gemini.models(rows)}


def health_report():
    """`/health`: `{"ok": true}`, and what an operator must know: config files read around (by file
    name), the data folder not taking writes (the system's reason, never a path)."""
    payload = {"ok": True}
    problems = collections.config_problems()
    if problems:
        payload["problems"] = problems
    problem = paths.write_problem()
    if problem:
        payload["data_folder"] = {"writable": False, "problem": problem}
    return payload


def format_note(ask, name, bench):
    """FMT-15a: a panel answers in prose whatever `response_format` asks for; a client expecting JSON is told
    why in `bench.notes`, and where structured output is had (route mode passes the field on)."""
    if ask.passthrough.get("response_format") not in (None, {"type": "text"}):
        bench.setdefault("notes", []).append(
            "response_format is ignored by a panel: several models answer in markdown, so the reply is not JSON; "
            f"for structured output ask one member with route mode (bench/{name}:route)")


class Handler(httpserver.Handler):
    """Parse (the route), check (Host, then who is calling; or the write checks), dispatch (the route's
    handler) — each step one method below, in the order a request meets them."""

    server_version = f"benchwarmers/{__version__}"
    route_table = routes.ROUTES  # the dashboard's handler extends it (wire.routes)

    @property
    def port(self):
        return self.server.server_address[1]

    def do_GET(self):
        """GW-2: the Host check, then who is calling, then the route; an open route skips both."""
        self.parse("GET")
        if not (self.route and self.route.scope == routes.OPEN):
            problem = guard.host_problem(self.headers, self.port)
            if problem:
                return self.refuse(403, problem)
            if not self.identify():
                return
        self.dispatch("GET")

    def do_POST(self):
        """GW-3: the write checks (before the body is read), who is calling, the body, then the route."""
        self.parse("POST")
        problem = guard.write_problem(self.headers, self.port, routes.is_gateway_route(self.path),
                                      guard.GATEWAY_CAP)
        if problem:
            return self.refuse(*problem)
        if not self.identify():
            return
        body = self.read_body(guard.content_length(self.headers)) if self.route and self.route.raw else self.read_json()
        if body is None:
            return
        self.dispatch("POST", body)

    def parse(self, method):
        """GW-1: the row of `method` that answers this path, and what its `<name>`s read."""
        self.route, self.arguments = routes.find(self.route_table, method, self.path)

    def dispatch(self, method, *body):
        """The route's handler, or the 404 or 405 when no handler here answers (GW-1..3, §14).

        A refusal raised on the way (a broken collections.json, a request no format can take) is
        answered with its status; on a route that writes, so is a write the data folder refused.
        """
        if not (self.route and self.route.handler):
            return self.unrouted(method)
        try:
            getattr(self, self.route.handler)(*body, **self.arguments)
        except errors.Refusal as exc:
            self.refuse(*errors.refusal(exc))
        except OSError as exc:
            if not self.route.writes:
                raise
            if not isinstance(exc, CLIENT_GONE):  # say so, never drop the connection
                self.refuse(*paths.unwritable(exc))

    def unrouted(self, method):
        """405 with `Allow` when rows of other methods answer the path, else 404 naming the routes to try."""
        allow = [] if self.route else routes.allowed(self.route_table, self.path)
        if allow:
            return self.refuse(405, f"{self.command} is not allowed on {routes.normalized(self.path)}; use "
                                    f"{routes.spoken(allow)}", {"Allow": ", ".join(allow)})
        self.refuse(404, f"no such route; try {routes.help_text(self.route_table, method)}")

    # -- GET routes ------------------------------------------------------------

    def health(self):
        self.send_json(200, health_report())

    def models(self):
        self.send_json(200, listing(gatekeys.may_call(self.who)))

    def model_row(self, model):
        """IMP-21: OpenAI's retrieve-model route answers the listing row."""
        may_call = gatekeys.may_call(self.who)
        for row in listing(may_call)["data"]:
            if row["id"] == model or row["id"] == f"bench/{model}":
                return self.send_json(200, row)
        self.refuse(404, collections.choose_message(model, may_call))

    def record(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        collection = (query.get("collection") or [""])[0]
        task = (query.get("task") or [""])[0]
        if not collection:
            return self.refuse(400, f"name the collection: GET {self.route.path}{RECORD_QUERY}")
        if not self.charged():
            return
        seen = gatekeys.sees_collection(self.who, collection)  # a scoped key reads only its own
        self.send_json(200, {"collection": collection, "task": task,
                             "aliases": offload.record(collection, task) if seen else {}})

    def leaderboard(self):
        """Issue 20: the collection's Bradley–Terry leaderboard from its judged panels, as JSON or CSV.

        Refused and scoped as `/bench/record` is: no collection is a 400; an unknown collection, or one
        a scoped key may not call, answers an empty board (improvement 12). A bad shape or format is a 400."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        collection, shape, fmt = ((query.get(k) or [""])[0] for k in ("collection", "shape", "format"))
        fmt = fmt or "json"
        refused = leaderboard.problem(self.route.path, collection, shape, fmt)
        if refused:
            return self.refuse(400, refused)
        if not self.charged():
            return
        name = leaderboard.named(collection)
        seen = gatekeys.sees_collection(self.who, name)
        answer = leaderboard.board(name, shape, entries=None if seen else [])
        if fmt == "csv":
            return self.send_text(200, leaderboard.csv_text(answer), "text/csv; charset=utf-8",
                                  {"Content-Disposition": f'attachment; filename="{leaderboard.filename(answer)}"'})
        self.send_json(200, answer)

    def listed_rows(self):
        """The listing's rows the caller may see, which Ollama's and Gemini's listings and cards are built from."""
        return listing(gatekeys.may_call(self.who))["data"]

    def ollama_tags(self):
        self.send_json(200, wire.ollama.tags(self.listed_rows()))

    def ollama_version(self):
        self.send_json(200, {"version": wire.ollama.VERSION})

    def gemini_models(self):
        self.send_json(200, wire.gemini.models(self.listed_rows()))

    def gemini_model(self, name):
        entry = wire.gemini.model(self.listed_rows(), name)
        if entry is None:
            return self.refuse(404, wire.gemini.not_listed(name))
        self.send_json(200, entry)

    def mcp_get(self):
        """MCP-17: no server-initiated stream (and no `Mcp-Session-Id`): every message is a POST."""
        self.send_json(405, {"error": {"message": f"POST {self.route.path}, one JSON-RPC message per request"}},
                       {"Allow": "POST"})

    # -- POST routes -----------------------------------------------------------

    def mcp_post(self, body):
        """MCP-18: one JSON-RPC message per request, answered by `server.mcp_server`; a notification is a 202,
        a body that does not parse a 400, a tool call from a client that reads event streams an SSE stream."""
        message = mcp_server.parse(body)  # the raw bytes (the row's `raw`): a parse error is JSON-RPC's own reply
        if message is None:
            return self.send_json(400, mcp_server.PARSE_ERROR)
        conn = mcp_server.Conn(self.loopback())
        accept = self.headers.get("Accept") or ""
        if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message \
                and "text/event-stream" in accept:
            return self.mcp_stream(message, conn)
        reply = mcp_server.answer(message, conn)
        if reply is None:
            return self.accepted()
        self.send_json(200, reply)

    def accepted(self):
        """MCP-4: a notification's 202, with an empty body."""
        try:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.send_cors()
            self.end_headers()
        except CLIENT_GONE:
            pass

    def mcp_stream(self, message, conn):
        """MCP-19: the 200 at once, a progress notification (with a token) or a keep-alive comment every
        KEEPALIVE seconds, then the reply as the last event. A caller who hangs up stops the writing only:
        the tool's own request to this server goes on, so the panel finishes and every seat is recorded."""
        token = mcp_server.progress_token(message)

        def tick(seconds):
            if token is None:
                return self.write_now(b": keep-alive\n\n")
            self.write_now(sse_event(mcp_server.progress(token, seconds)))

        try:
            self.open_stream("text/event-stream")
            self.write_now(sse_event(mcp_server.answer_waiting(message, conn, tick)))
        except CLIENT_GONE:
            pass

    def loopback(self):
        """MCP-20: this very server, reached on the socket it listens on, with the caller's credentials (and its
        Host, which the guard already accepted), so a key's scope and rate cap hold as on `/v1`."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.server.server_address[0],
                                                                          self.server.server_address[0])
        host = f"[{host}]" if ":" in host else host
        forwarded = tuple((name, self.headers[name]) for name in LOOPBACK_HEADERS if self.headers.get(name) is not None)
        return remote.Server(base=f"http://{host}:{self.port}", timeout=remote.env_timeout(), forwarded=forwarded)

    def read_json(self):
        """GW-3 (4): exactly Content-Length bytes; `{}` when empty; 400 when not a JSON object."""
        length = guard.content_length(self.headers)
        raw = self.read_body(length)
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
        problem = wire.body_problem(raw, body)  # issue 21: too deep, or text no seat or log can take
        if problem:
            self.refuse(400, problem)
            return None
        return body

    def verdict(self, body):
        """VRD-1: judge one seat's answer."""
        if not self.charged():
            return
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
        if not call.strip():  # the first-hour issue: a missing id is the caller's slip, not an unknown call
            return self.refuse(400, '"call" is required: the call id of the answer you judge (a seat\'s "call" in '
                                    'the reply\'s bench, or the id under its section, such as p20261203-...member1)')
        if not gatekeys.sees_call(self.who, call):  # another collection's call reads as unknown to a scoped key
            return self.refuse(404, offload.UNKNOWN_CALL.format(call))
        try:
            entry = offload.verdict(call, useful, note, claims["real"], claims["false"])
        except KeyError as exc:
            return self.refuse(404, exc.args[0])
        # the task holds the prompt's first words: a verdict's reply never shows them (security review 4)
        self.send_json(200, {"ok": True, "recorded": {k: v for k, v in entry.stored.items() if k != "task"}})

    def pending(self, body):
        if not self.charged():
            return
        calls = body.get("calls")
        if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
            return self.refuse(400, '"calls" must be a list of call ids')
        if len(calls) > MAX_PENDING:
            return self.refuse(400, f'"calls" holds {len(calls):,} ids; ask about at most {MAX_PENDING:,} at a time')
        self.send_json(200, {"pending": offload.pending([c for c in calls if gatekeys.sees_call(self.who, c)])})

    def charged(self):
        """DSP-3 on the verdict routes: the call counts against the key's rate cap, or is refused (429)."""
        refusal = gatekeys.charge(self.who)
        if refusal:
            self.refuse(*refusal)
        return not refusal

    def panel(self, body):
        """FMT-8 steps 6-11: the route's format reads the Ask, then the panel answers in that format."""
        api = wire.get(self.route.fmt)
        self.ask_panel(api, api.read(body))

    def anthropic_count(self, body):
        self.count(body.get("model"), {"input_tokens": wire.anthropic.count(body)})

    def gemini_count(self, body, collection):
        self.count(collection, {"totalTokens": wire.gemini.count(body)})

    def gemini_generate(self, body, collection):
        api = wire.get(self.route.fmt)
        self.ask_panel(api, api.read(body, collection, "generateContent"))

    def gemini_stream(self, body, collection):
        api = wire.get(self.route.fmt)
        self.ask_panel(api, api.read(body, collection, "streamGenerateContent"))

    def gemini_method(self, body, collection, method):
        """FMT-4: a Gemini model path with a method a panel does not answer."""
        self.refuse(404, wire.gemini.not_allowed(method))

    def count(self, model, payload):
        """A token count (FMT-9): no model is called and the rate cap is not charged.

        Improvement 3: a named collection that does not resolve, or that the key may not
        call, is a 404 (the reference counted for any name); an unnamed one still counts.
        """
        base = collections.split_reply(model)[0] if isinstance(model, str) else ""
        may_call = gatekeys.may_call(self.who)
        name = collections.resolve(base)
        if base.strip() and (name is None or (may_call is not None and not may_call(name))):
            return self.refuse(404, collections.choose_message(base, may_call))
        self.send_json(200, payload)

    def show(self, body):
        """FMT-31: Ollama's model card for a collection the key may call."""
        name = wire.ollama.shown_name(body)
        card = wire.ollama.show(name, self.listed_rows())
        if card is None:
            return self.refuse(404, wire.ollama.not_found(name))
        self.send_json(200, card)

    def ask_panel(self, api, ask):
        """FMT-11..17: resolve the collection and the reply mode, then answer with a panel in `api`'s shape."""
        base, suffix = collections.split_reply(ask.model)
        name = collections.resolve(base)
        if name is None:
            return self.refuse(400 if not base.strip() else 404,
                               collections.choose_message(base, gatekeys.may_call(self.who)))
        refusal = gatekeys.admit(self.who, name)  # DSP-2 scope, then DSP-3 rate cap
        if refusal:
            return self.refuse(*refusal)
        reply = ask.reply or suffix
        mode = collections.reply_mode(name, reply)
        shown = api.shown(name, ask)
        if ask.load:
            return self.loaded(api, ask, shown)
        if mode == "route":
            return self.route_turn(api, ask, name, shown)
        if ask.agentic:
            return self.refuse(400, "the request carries tools, tool calls or tool results, but a panel answers "
                                    f"with several models' prose, not a tool call; use route mode instead: "
                                    f'bench/{name}:route or "bench": {{"reply": "route"}} for one model that can '
                                    "use tools")
        messages = ask.messages
        if ask.stream:
            sse = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("alt") == ["sse"]  # GW-6
            usage = {"include_usage": True} if ask.include_usage else {}  # only chat completions asks for it
            writer = api.writer(shown, wire.prompt_tokens(messages), sse, **usage)
            return self.stream_panel(name, ask, reply, writer)
        started = time.monotonic()
        try:
            content, bench = panel.run(name, messages, ask.nominees, reply, self.who)
        except Exception as exc:  # IMP-1: every failure is answered, never a dropped connection
            return self.refuse(*errors.refusal(exc))
        format_note(ask, name, bench)
        payload, headers = api.reply(content, shown, bench, wire.usage(messages, content),
                                     time.monotonic() - started)
        self.send_json(200, payload, headers)

    def route_turn(self, api, ask, name, shown):
        """§11: one member answers the turn, tools and all; `X-Bench-Conversation` on every reply (errors too,
        improvement 13) and `X-Bench-Model` once the member is known."""
        asked = time.monotonic()
        try:
            turn = route_mode.start(name, ask, self.who)
        except Exception as exc:
            conversation = route_mode.known(name, ask, self.who)
            return self.refuse_route(exc, {"X-Bench-Conversation": conversation} if conversation else {})
        headers = {"X-Bench-Conversation": turn.conversation}
        tokens_in = wire.prompt_tokens(ask.messages)
        if not ask.stream:
            while True:
                event = turn.events.get()
                if isinstance(event, route_mode.Live):
                    headers["X-Bench-Model"] = event.alias
                elif isinstance(event, route_mode.Done):
                    payload, extra = api.route_reply(event.turn, shown, event.bench, tokens_in,
                                                     time.monotonic() - asked, ask.custom)
                    headers["X-Bench-Model"] = event.bench["alias"]
                    return self.send_json(200, payload, {**headers, **extra})
                elif isinstance(event, route_mode.Failed):
                    return self.refuse_route(event.exc, headers)
        self.stream_route(api, ask, shown, turn, headers, asked + route_mode.ROUTE_GRACE, tokens_in)

    def stream_route(self, api, ask, shown, turn, headers, grace_ends, tokens_in):
        """RT-20: the 200 waits for the member's first piece (at most ROUTE_GRACE), then each chunk as it comes
        in the API's shape, a keep-alive whenever nothing was written for KEEPALIVE. Chunks that queued up while
        the last were written go out in one write: a busy gateway falls behind by fewer system calls."""
        event = None
        try:
            event = turn.events.get(timeout=max(0.0, grace_ends - time.monotonic()))
        except queue.Empty:
            pass
        if isinstance(event, route_mode.Failed):
            return self.refuse_route(event.exc, headers)
        if isinstance(event, route_mode.Live):
            headers["X-Bench-Model"] = event.alias
            event = None
        sse = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("alt") == ["sse"]
        pending = []
        writer = api.route_writer(shown, tokens_in, sse, ask.custom)(pending.append)
        written = time.monotonic()
        try:
            self.open_stream(writer.content_type, headers)
            writer.start()
            if event is None and pending:  # the grace ran out: the opening goes now, not with the first piece
                self.write_now(b"".join(pending))
                pending.clear()
            while True:
                if event is None:
                    try:
                        event = turn.events.get(timeout=max(0.0, written + KEEPALIVE - time.monotonic()))
                    except queue.Empty:
                        writer.keepalive()
                if isinstance(event, route_mode.Chunk):
                    writer.chunk(event.chunk, event.text)
                elif isinstance(event, route_mode.Done):
                    writer.end(event.turn, event.bench)
                elif isinstance(event, route_mode.Failed):
                    writer.error(*errors.refusal(event.exc)[:2])
                ended = isinstance(event, (route_mode.Done, route_mode.Failed))
                try:
                    event = None if ended else turn.events.get_nowait()
                except queue.Empty:
                    event = None
                if event is None:
                    if not pending and time.monotonic() - written >= KEEPALIVE:
                        writer.keepalive()  # a run of chunks that rendered to nothing (reasoning, for most APIs)
                    if pending:
                        self.write_now(b"".join(pending))
                        pending.clear()
                        written = time.monotonic()
                    if ended:
                        return
        except CLIENT_GONE:
            pass  # RT-18: the member call goes on to its end and the turn is recorded

    def refuse_route(self, exc, headers):
        """A route refusal: its status and message, its own headers (Retry-After) and the conversation's."""
        status, message, *extra = errors.refusal(exc)
        alias = getattr(exc, "alias", "")
        own = {**headers, **({"X-Bench-Model": alias} if alias else {}), **(extra[0] if extra else {})}
        self.refuse(status, message, own)

    def loaded(self, api, ask, shown):
        """Improvement 9: Ollama's "load the model" call (no prompt) gets an empty `done` reply, no panel."""
        payload = api.loaded(shown)
        if not ask.stream:
            return self.send_json(200, payload)
        try:
            self.open_stream(api.Stream.content_type)
            self.write_now(json.dumps(payload).encode() + b"\n")
        except CLIENT_GONE:
            pass

    def open_stream(self, content_type, headers=None):
        """The head of a streamed reply (FMT-1): no Content-Length, the close ends it."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        for header, value in (headers or {}).items():
            self.send_header(header, value)
        self.send_cors()
        self.end_headers()

    def stream_panel(self, name, ask, reply, make_writer):
        """§10: the 200 once the panel is seated (1 s grace), then each piece as it comes.

        `make_writer(write)` gives the format's stream writer (STR-1), so one loop serves every format.
        """
        gone = threading.Event()
        try:
            events = panel.start(name, ask.messages, ask.nominees, reply, self.who, gone)
        except errors.Refusal as exc:  # Busy: the caps, or a stopping gateway
            return self.refuse(*errors.refusal(exc))
        try:
            event = events.get(timeout=STREAM_GRACE)
        except queue.Empty:
            event = None
        if isinstance(event, panel.Failed):
            return self.refuse(*errors.refusal(event.exc))
        writer = make_writer(self.write_now)
        try:
            self.open_stream(writer.content_type)
            writer.start()
            if event is None:
                writer.keepalive()  # STR-4: the grace ran out, so a keep-alive follows the 200 at once
            streamed = False
            while True:
                if event is None:
                    try:
                        event = events.get(timeout=KEEPALIVE)
                    except queue.Empty:
                        writer.keepalive()
                        continue
                if isinstance(event, panel.Part):
                    writer.text(event.text)
                    streamed = True
                elif isinstance(event, panel.Done):
                    if not streamed:
                        writer.text(event.content)
                    format_note(ask, name, event.bench)
                    return writer.end(event.bench)
                elif isinstance(event, panel.Failed):
                    status, message = errors.refusal(event.exc)[:2]  # headers cannot follow a 200
                    return writer.error(status, message)
                # a part is written; `Seated` needs nothing, as the 200 has gone (the heading follows once every
                # seat's request is out)
                event = None
        except CLIENT_GONE:
            gone.set()  # STR-9: the panel thread goes on and records every seat, but asks no merger

    # -- OPTIONS and the rest ----------------------------------------------

    def do_OPTIONS(self):
        if not routes.is_gateway_route(self.path):
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

    def send_text(self, status, text, content_type, headers=None):
        """A reply that is no JSON (the leaderboard's CSV), with the same CORS headers as JSON ones."""
        data = text.encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            for header, value in (headers or {}).items():
                self.send_header(header, value)
            if routes.is_gateway_route(self.path or ""):
                self.send_cors()  # the dashboard's own download goes to its own page only
            self.end_headers()
            self.wfile.write(data)
        except CLIENT_GONE:
            pass

    def refuse(self, status, message, headers=None):
        """Every refusal is JSON in the route's format shape, chosen from the path alone (ERR-1, FMT-3).

        OPTIONS refusals always use the chat shape.
        """
        fmt = "chat" if self.command == "OPTIONS" else routes.format_of(self.path or "")
        self.send_json(status, wire.error_body(fmt, status, message), headers)


class Server(httpserver.Server):
    """The shared server (deadlines, connection cap, head limits) with the gateway's handler."""

    def __init__(self, address, handler=Handler):
        super().__init__(address, handler)


def serve(host="127.0.0.1", port=0):
    """A gateway on a thread (tests, the demo): returns the server; `server.shutdown()` stops it."""
    server = Server((host, port))
    # a short poll so shutdown() returns at once (tests start and stop many servers)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="gateway",
                     daemon=True).start()
    return server


def stop_on_signals(server):
    """SIGTERM and SIGINT stop the gateway gently (nothing-lost item 7): no new connections, the panels
    in flight get `stop_grace` seconds to finish, then their seats are ended and logged. A second
    signal ends the grace at once. Forked workers inherit the handlers, so each drains its own."""
    stopping = threading.Event()

    def handle(signum, frame):
        if stopping.is_set():
            # on its own thread: the main thread may be inside the very locks stop_seats takes (drain)
            threading.Thread(target=panel.stop_seats, name="stop-now", daemon=True).start()
            return
        stopping.set()
        threading.Thread(target=server.shutdown, name="stop", daemon=True).start()  # not from serve_forever's thread

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handle)


def drain(server, grace):
    """Wait up to `grace` seconds for the panels in flight, end the seats still asked, then give every
    reply (a stream's error sections and its end in its own format) time to reach its client."""
    if not panel.flight.wait_idle(grace):
        print(f"stopping: panels still in flight after {grace:g}s; ending their seats", file=sys.stderr, flush=True)
    panel.stop_seats()  # also refuses a panel whose request was taken before the stop but not yet begun
    panel.flight.wait_idle(panel.STOP_SETTLE + REPLY_WAIT)
    server.wait_closed(REPLY_WAIT)


def starting(port, setting, default, demo_wanted):
    """What both servers do first (START-1): stdout as UTF-8; the bind address checked before anything is bound or
    made, its warnings said; the port (`--port`, else the `setting` variable, else `default`); the demo upstream and
    its throwaway folder when asked. Returns `(address, port, upstream or None)`."""
    sys.stdout.reconfigure(encoding="utf-8")
    address = guard.bind_address()
    problem = guard.startup_problem(address)
    if problem:
        sys.exit(problem)
    for warning in guard.startup_warnings():
        print(f"warning: {warning}", file=sys.stderr)
    port = port if port is not None else guard.port_setting(setting, default)
    if not demo_wanted:
        return address, port, None
    from ..demo import demo
    return address, port, demo.start_demo()


def listen(address, port, handler, setting, upstream=None):
    """The server on `address:port`, or exit 1 with one sentence saying why not and how to choose another port
    (`--port`, or the `setting` variable); a demo's upstream and throwaway folder go with it."""
    try:
        return Server((address, port), handler)
    except OSError as exc:
        if upstream:
            from ..demo import demo
            demo.stop_demo(upstream)
        taken = "taken (another server?)" if exc.errno == errno.EADDRINUSE else "not usable"
        sys.exit(f"port {port} on {address} is {taken}: {exc.strerror}; choose another with --port N or {setting}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Benchwarmers panel gateway")
    parser.add_argument("--demo", action="store_true", help="serve a throwaway demo bench on the local upstream")
    parser.add_argument("--port", type=int, default=None, help="port (default BENCH_GATEWAY_PORT or 8123)")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes serving the port (default 1); one process uses at most about one core")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers: at least 1")
    if args.workers > 1 and (args.demo or not hasattr(os, "fork")):
        parser.error("--workers above 1 needs fork (Linux, macOS) and cannot be used with --demo")
    address, port, upstream = starting(args.port, "BENCH_GATEWAY_PORT", 8123, args.demo)
    collections.config_problems()  # a broken config file is said on stderr now, once, not at the first request
    server = listen(address, port, Handler, "BENCH_GATEWAY_PORT", upstream)
    stop_on_signals(server)
    workers = httpserver.share(server, args.workers - 1) if args.workers > 1 else []
    threading.Thread(target=panel.warm_up, name="warm-up", daemon=True).start()
    if workers is not None:  # the parent (or the only process) announces the server
        host = f"[{address.strip('[]')}]" if ":" in address else address  # BENCH_BIND may come bracketed
        base = f"http://{host}:{server.server_address[1]}/v1"
        names = ", ".join(collections.public_names())
        processes = f" ({args.workers} processes)" if workers else ""
        shown = names or collections.collections_problem() or "none yet"
        print(f"bench gateway on {base}{processes} — models: {shown}", flush=True)
        if args.demo:
            from ..demo import demo
            print(demo.snippets(base), flush=True)
    grace = collections.settings().stop_grace
    try:
        server.serve_forever()
    finally:
        server.server_close()
        if workers:
            httpserver.release(server)  # the workers drain at the same time as this process
        drain(server, grace)
        if workers:
            httpserver.reap(server, workers, timeout=grace + panel.STOP_SETTLE + 2 * REPLY_WAIT)
        if upstream:
            from ..demo import demo
            demo.stop_demo(upstream)


if __name__ == "__main__":
    main()
