"""The panel gateway: an OpenAI-compatible API on 127.0.0.1:8123 (gateway.md §5).

    python gateway.py            serve the data folder's collections
    python gateway.py --demo     serve a throwaway demo bench backed by the local upstream

This module holds the gateway's route handlers, each a plain function from the request to its reply
(`server.exchange`), and `ROUTES`, the table that gives each of `wire.routes`' rows its handler; the MCP
server's rows are in it too, and the dashboard extends it. How a request reaches a handler (the checks,
the body, the refusals) is `server.routing`; the errors a request is refused with are `core.errors`, the
panel `panel.panel`, the checks `server.guard`, keys, scopes and rate caps `server.gatekeys`, the
server's deadlines and limits `server.httpserver`, every client's own API (chat completions among them)
`wire`, the offload log `panel.offload`.
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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from .. import wire
from ..core import console, errors, keys, paths
from ..wire import routes
from ..net import remote
from ..panel import collections, offload
from ..store import store
from . import exchange, gatekeys, guard, httpserver, mcp_server, openapi, routing
from .exchange import Reply, Request, json_reply

if TYPE_CHECKING:  # the panel's modules load after the port is open (warm_up), or with the first route needing them
    from ..panel import panel

STREAM_GRACE = 1.0
KEEPALIVE = 10.0
REPLY_WAIT = 2.0  # a stopping gateway's wait for the last replies to be written
MAX_PENDING = 1000  # ids one `/bench/pending` may ask about (security review 4: no guessing in bulk)
RECORD_QUERY = "?collection=bench/<name>[&task=<words in the verdicts' notes>]"
PANEL = "the panel"  # what failed, when a panel meets an exception nobody planned for (IMP-1, STR-8)
LOOPBACK_HEADERS = ("Authorization", "Host", "x-api-key", "x-goog-api-key")  # MCP-20: what the tools pass on


def sse_event(message: Any) -> bytes:
    """One JSON-RPC message as a server-sent event (MCP-19)."""
    return b"event: message\ndata: " + json.dumps(message).encode("ascii") + b"\n\n"


def listing(may_call: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """`GET /v1/models` (LST-1). Google's own SDK lists at this path too (its default API version
    is v1) and reads `models`, so the Gemini listing (FMT-71) rides along beside OpenAI's `data`."""
    rows = [{"id": row["id"], "object": "model", "owned_by": "benchwarmers",
             **{k: v for k, v in row.items() if k != "id"}} for row in collections.listed(may_call)]
    return {"object": "list", "data": rows, **wire.gemini.models(rows)}


def health_report() -> dict[str, Any]:
    """`/health`: `{"ok": true}`, and what an operator must know: config files read around (by file
    name), the data folder not taking writes (the system's reason, never a path), and on Postgres whether
    the store's server answers (HEALTH-1; its reason, never its address or password)."""
    payload: dict[str, Any] = {"ok": True}
    shared = store.health()
    if shared:
        payload["store"] = shared
    problems = _config_problems() if shared.get("answers", True) else []
    if problems:
        payload["problems"] = problems
    problem = paths.write_problem()
    if problem:
        payload["data_folder"] = {"writable": False, "problem": problem}
    return payload


def _config_problems() -> list[str]:
    """The configuration's faults; none to tell when the store holding it went away since it was asked (the next
    /health says so): /health answers, never a 503."""
    try:
        return collections.config_problems()
    except errors.StoreUnavailable:
        return []


def format_note(ask: Any, name: str, bench: dict[str, Any]) -> None:
    """FMT-15a: a panel answers in prose whatever `response_format`, `max_tokens` or `n` ask for; a client is
    told so in `bench.notes`, and where they are applied (route mode passes them on): `wire.panel_notes`."""
    notes = wire.panel_notes(ask, name)
    if notes:
        bench.setdefault("notes", []).extend(notes)


def charge(who: str) -> None:
    """DSP-3 on the verdict routes: the call counts against the key's rate cap, or is refused (429)."""
    refusal = gatekeys.charge(who)
    if refusal:
        raise errors.Refused(*refusal)


def listed_rows(request: Request) -> list[dict[str, Any]]:
    """The listing's rows the caller may see, which Ollama's and Gemini's listings and cards are built from."""
    rows: list[dict[str, Any]] = listing(gatekeys.may_call(request.who))["data"]
    return rows


class Outbox:
    """A stream writer's bytes, held until the connection takes them: the writers are made before the 200
    (its Content-Type is theirs), and pieces that queued while the last were written go out in one write."""

    def __init__(self) -> None:
        self.held: list[bytes] = []

    def __call__(self, data: bytes) -> None:
        self.held.append(data)

    def flush(self, send: exchange.Write) -> bool:
        """Send what is held; whether there was anything."""
        if not self.held:
            return False
        send(b"".join(self.held))
        self.held.clear()
        return True


# -- GET routes ------------------------------------------------------------


def health(request: Request) -> Reply:
    return json_reply(200, health_report())


def models(request: Request) -> Reply:
    return json_reply(200, listing(gatekeys.may_call(request.who)))


def model_row(request: Request) -> Reply:
    """IMP-21: OpenAI's retrieve-model route answers the listing row."""
    model = request.params["model"]
    may_call = gatekeys.may_call(request.who)
    for row in listing(may_call)["data"]:
        if row["id"] == model or row["id"] == f"bench/{model}":
            return json_reply(200, row)
    raise errors.NotFound(collections.choose_message(model, may_call))


def response_row(request: Request) -> Reply:
    """Issue 30: OpenAI's retrieve-response route; nothing is stored, and the 404 says so."""
    raise errors.NotFound(wire.responses.not_stored(request.params["response_id"]))


def record(request: Request) -> Reply:
    collection, task = request.arg("collection"), request.arg("task")
    if not collection:
        raise errors.Invalid(f"name the collection: GET {request.route.path}{RECORD_QUERY}")
    charge(request.who)
    seen = gatekeys.sees_collection(request.who, collection)  # a scoped key reads only its own
    return json_reply(200, {"collection": collection, "task": task,
                            "aliases": offload.record(collection, task) if seen else {}})


def board_query(request: Request) -> tuple[str, str, str, str]:
    """Issue 20: the leaderboard's `collection`, `shape`, `format` (`json` unless asked) and `source` (issue 32,
    CNC-10: `verdicts` unless asked); no collection, a bad shape, format or source is a 400."""
    from ..panel import leaderboard, peers
    collection, shape, fmt = request.arg("collection"), request.arg("shape"), request.arg("format") or "json"
    source = request.arg("source") or peers.VERDICTS
    refused = leaderboard.problem(request.route.path, collection, shape, fmt)
    if not refused and source not in peers.SOURCES:
        refused = peers.BAD_SOURCE
    if refused:
        raise errors.Invalid(refused)
    return collection, shape, fmt, source


def board_reply(answer: dict[str, Any], fmt: str, wrapped: Callable[[dict[str, Any]], Any] = dict) -> Reply:
    """A Bradley–Terry leaderboard as JSON (`wrapped` as the port answers it), or as a CSV download."""
    if fmt != "csv":
        return json_reply(200, wrapped(answer))
    from ..panel import leaderboard
    disposition = {"Content-Disposition": f'attachment; filename="{leaderboard.filename(answer)}"'}
    return exchange.text_reply(200, leaderboard.csv_text(answer), "text/csv; charset=utf-8", disposition)


def bench_leaderboard(request: Request) -> Reply:
    """Issue 20: the collection's leaderboard from its judged panels, refused and scoped as `/bench/record` is:
    an unknown collection, or one a scoped key may not call, answers an empty board (improvement 12)."""
    from ..panel import leaderboard, peers
    collection, shape, fmt, source = board_query(request)
    charge(request.who)
    name = leaderboard.named(collection)
    seen = gatekeys.sees_collection(request.who, name)
    hidden: list[offload.Line] | None = None if seen else []
    return board_reply(peers.board(name, shape, source, entries=hidden, rankings=hidden), fmt)


def ollama_tags(request: Request) -> Reply:
    return json_reply(200, wire.ollama.tags(listed_rows(request)))


def ollama_version(request: Request) -> Reply:
    return json_reply(200, {"version": wire.ollama.VERSION})


def gemini_models(request: Request) -> Reply:
    return json_reply(200, wire.gemini.models(listed_rows(request)))


def gemini_model(request: Request) -> Reply:
    name = request.params["name"]
    entry = wire.gemini.model(listed_rows(request), name)
    if entry is None:
        raise errors.NotFound(wire.gemini.not_listed(name))
    return json_reply(200, entry)


def mcp_get(request: Request) -> Reply:
    """MCP-17: no server-initiated stream (and no `Mcp-Session-Id`): every message is a POST."""
    return json_reply(405, {"error": {"message": f"POST {request.route.path}, one JSON-RPC message per request"}},
                      {"Allow": "POST"})


# -- POST routes -----------------------------------------------------------


def mcp_post(request: Request) -> Reply:
    """MCP-18: one JSON-RPC message per request, answered by `server.mcp_server`; a notification is a 202,
    a body that does not parse a 400, a tool call from a client that reads event streams an SSE stream."""
    message = mcp_server.parse(request.body)  # the raw bytes (the row's `raw`): a parse error is JSON-RPC's own reply
    if message is None:
        return json_reply(400, mcp_server.PARSE_ERROR)
    conn = mcp_server.Conn(loopback(request))
    accept = request.headers.get("Accept") or ""
    if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message \
            and "text/event-stream" in accept:
        return mcp_stream(message, conn)
    reply = mcp_server.answer(message, conn)
    if reply is None:
        return exchange.empty_reply(202)  # MCP-4: a notification's 202, with an empty body
    return json_reply(200, reply)


def mcp_stream(message: dict[str, Any], conn: mcp_server.Conn) -> Reply:
    """MCP-19: the 200 at once, a progress notification (with a token) or a keep-alive comment every
    KEEPALIVE seconds, then the reply as the last event. A caller who hangs up stops the writing only:
    the tool's own request to this server goes on, so the panel finishes and every seat is recorded."""
    token = mcp_server.progress_token(message)

    def write(send: exchange.Write) -> None:
        def tick(seconds: int) -> None:
            send(b": keep-alive\n\n" if token is None else sse_event(mcp_server.progress(token, seconds)))

        send(sse_event(mcp_server.answer_waiting(message, conn, tick)))

    return exchange.stream_reply("text/event-stream", write)


def loopback(request: Request) -> remote.Server:
    """MCP-20: this very server, reached on the socket it listens on, with the caller's credentials (and its
    Host, which the guard already accepted), so a key's scope and rate cap hold as on `/v1`."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(request.host, request.host)
    host = f"[{host}]" if ":" in host else host
    forwarded = tuple((name, request.headers[name]) for name in LOOPBACK_HEADERS
                      if request.headers.get(name) is not None)
    return remote.Server(base=f"http://{host}:{request.port}", timeout=remote.env_timeout(), forwarded=forwarded)


def verdict(request: Request) -> Reply:
    """VRD-1: judge one seat's answer."""
    body, who = request.body, request.who
    charge(who)
    useful = body.get("useful")
    if not isinstance(useful, bool):
        raise errors.Invalid('"useful" must be true or false')
    claims = {}
    for field in ("real", "false"):
        value = body.get(field) or []
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            raise errors.Invalid('"real" and "false" must be lists of one-sentence claims')
        claims[field] = value
    note = body.get("note") if isinstance(body.get("note"), str) else ""
    call = body.get("call") if isinstance(body.get("call"), str) else ""
    if not call.strip():  # the first-hour issue: a missing id is the caller's slip, not an unknown call
        raise errors.Invalid('"call" is required: the call id of the answer you judge (a seat\'s "call" in the '
                             'reply\'s bench, or the id under its section, such as p20261203-...member1)')
    if not gatekeys.sees_call(who, call):  # another collection's call reads as unknown to a scoped key
        raise errors.UnknownCall(offload.UNKNOWN_CALL.format(call))
    entry = offload.verdict(call, useful, note, claims["real"], claims["false"], by=who)
    return json_reply(200, {"ok": True, "recorded": offload.receipt(entry.stored)})


def pending(request: Request) -> Reply:
    charge(request.who)
    calls = request.body.get("calls")
    if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
        raise errors.Invalid('"calls" must be a list of call ids')
    if len(calls) > MAX_PENDING:
        raise errors.Invalid(f'"calls" holds {len(calls):,} ids; ask about at most {MAX_PENDING:,} at a time')
    return json_reply(200, {"pending": offload.pending([c for c in calls if gatekeys.sees_call(request.who, c)])})


def panel_answer(request: Request) -> Reply:
    """FMT-8 steps 6-11: the route's format reads the Ask, then the panel answers in that format."""
    api = wire.get(request.route.fmt)
    return ask_panel(request, api, api.read(request.body))


def anthropic_count(request: Request) -> Reply:
    return count(request, request.body.get("model"), {"input_tokens": wire.anthropic.count(request.body)})


def gemini_count(request: Request) -> Reply:
    return count(request, request.params["collection"], {"totalTokens": wire.gemini.count(request.body)})


def gemini_generate(request: Request) -> Reply:
    api = wire.get(request.route.fmt)
    return ask_panel(request, api, wire.gemini.ask(request.body, request.params["collection"], "generateContent"))


def gemini_stream(request: Request) -> Reply:
    api = wire.get(request.route.fmt)
    return ask_panel(request, api, wire.gemini.ask(request.body, request.params["collection"],
                                                   "streamGenerateContent"))


def gemini_method(request: Request) -> NoReturn:
    """FMT-4: a Gemini model path with a method a panel does not answer."""
    raise errors.NotFound(wire.gemini.not_allowed(request.params["method"]))


def count(request: Request, model: Any, payload: dict[str, Any]) -> Reply:
    """A token count (FMT-9): no model is called and the rate cap is not charged.

    Improvement 3: a named collection that does not resolve, or that the key may not
    call, is a 404 (the reference counted for any name); an unnamed one still counts.
    """
    base = collections.split_reply(model)[0] if isinstance(model, str) else ""
    may_call = gatekeys.may_call(request.who)
    name = collections.resolve(base)
    if base.strip() and (name is None or (may_call is not None and not may_call(name))):
        raise errors.NotFound(collections.choose_message(base, may_call))
    return json_reply(200, payload)


def show(request: Request) -> Reply:
    """FMT-31: Ollama's model card for a collection the key may call."""
    name = wire.ollama.shown_name(request.body)
    card = wire.ollama.show(name, listed_rows(request))
    if card is None:
        raise errors.NotFound(wire.ollama.not_found(name))
    return json_reply(200, card)


def ask_panel(request: Request, api: Any, ask: Any) -> Reply:
    """FMT-11..17: resolve the collection and the reply mode, then answer with a panel in `api`'s shape."""
    from ..panel import council, panel
    base, suffix = collections.split_reply(ask.model)
    name = collections.resolve(base)
    if name is None:
        message = collections.choose_message(base, gatekeys.may_call(request.who))
        raise errors.NotFound(message) if base.strip() else errors.Invalid(message)
    refusal = gatekeys.admit(request.who, name)  # DSP-2 scope, then DSP-3 rate cap
    if refusal:
        raise errors.Refused(*refusal)
    reply = ask.reply or suffix
    mode = collections.reply_mode(name, reply)
    shown = api.shown(name, ask)
    if ask.load:
        return loaded(api, ask, shown)
    if mode == "route":
        return route_turn(request, api, ask, name, shown)
    if ask.agentic:
        raise errors.Invalid("the request carries tools, tool calls or tool results, but a panel answers with "
                             "several models' prose, not a tool call; use route mode instead: "
                             f'bench/{name}:route or "bench": {{"reply": "route"}} for one model that can use tools')
    messages = ask.messages
    finish = council.finish if mode == "council" else None  # CNC-1: stages 2 and 3 follow the seats
    if ask.stream:
        sse = request.query.get("alt") == ["sse"]  # GW-6
        usage = {"include_usage": True} if ask.include_usage else {}  # only chat completions asks for it
        writer = api.writer(shown, wire.prompt_tokens(messages), sse, **usage)
        return stream_panel(request, name, ask, reply, writer, finish)
    started = time.monotonic()
    try:
        content, bench = panel.run(name, messages, ask.nominees, reply, request.who, finish=finish)
    except errors.Refusal:
        raise
    except Exception as exc:  # IMP-1: every failure is answered, never a dropped connection
        raise errors.planned(exc, PANEL) from exc
    format_note(ask, name, bench)
    payload, headers = api.reply(content, shown, bench, wire.usage(messages, bench), time.monotonic() - started)
    return json_reply(200, payload, headers)


def route_turn(request: Request, api: Any, ask: Any, name: str, shown: str) -> Reply:
    """§11: one member answers the turn, tools and all; `X-Bench-Conversation` on every reply (errors too,
    improvement 13) and `X-Bench-Model` once the member is known."""
    from ..panel import route_mode
    asked = time.monotonic()
    try:
        turn = route_mode.start(name, ask, request.who)
    except Exception as exc:
        conversation = route_mode.known(name, ask, request.who)
        raise route_refusal(exc, {"X-Bench-Conversation": conversation} if conversation else {}) from exc
    headers = {"X-Bench-Conversation": turn.conversation}
    tokens_in = wire.prompt_tokens(ask.messages)
    if ask.stream:
        return stream_route(request, api, ask, shown, turn, headers, asked + route_mode.ROUTE_GRACE, tokens_in)
    while True:
        event = turn.events.get()
        if isinstance(event, route_mode.Live):
            headers["X-Bench-Model"] = event.alias
        elif isinstance(event, route_mode.Done):
            payload, extra = api.route_reply(event.turn, shown, event.bench, tokens_in, time.monotonic() - asked,
                                             ask.custom)
            headers["X-Bench-Model"] = event.bench["alias"]
            return json_reply(200, payload, {**headers, **extra})
        elif isinstance(event, route_mode.Failed):
            raise route_refusal(event.exc, headers)


def route_refusal(exc: BaseException, headers: dict[str, str]) -> errors.Refusal:
    """A route refusal: its status and message, its own headers (Retry-After, the member's) and the
    conversation's."""
    refusal = errors.planned(exc, PANEL)
    refusal.headers.update({k: v for k, v in headers.items() if k not in refusal.headers})
    return refusal


def stream_route(request: Request, api: Any, ask: Any, shown: str, turn: Any, headers: dict[str, str],
                 grace_ends: float, tokens_in: int) -> Reply:
    """RT-20: the 200 waits for the member's first piece (at most ROUTE_GRACE), then each chunk as it comes
    in the API's shape, a keep-alive whenever nothing was written for KEEPALIVE. Chunks that queued up while
    the last were written go out in one write: a busy gateway falls behind by fewer system calls."""
    from ..panel import route_mode
    event = None
    try:
        event = turn.events.get(timeout=max(0.0, grace_ends - time.monotonic()))
    except queue.Empty:
        pass
    if isinstance(event, route_mode.Failed):
        raise route_refusal(event.exc, headers)
    if isinstance(event, route_mode.Live):
        headers["X-Bench-Model"] = event.alias
        event = None
    outbox = Outbox()
    writer = api.route_writer(shown, tokens_in, request.query.get("alt") == ["sse"], ask.custom)(outbox)

    def write(send: exchange.Write) -> None:
        relay_route(send, writer, outbox, turn, event)  # RT-18: a caller gone stops this; the turn goes on

    return exchange.stream_reply(writer.content_type, write, headers)


def relay_route(send: exchange.Write, writer: Any, outbox: Outbox, turn: Any, event: Any) -> None:
    """RT-20's loop, from the first event (None when the grace ran out) to the turn's end."""
    from ..panel import route_mode
    writer.start()
    if event is None:  # the grace ran out: the opening goes now, not with the first piece
        outbox.flush(send)
    written = time.monotonic()
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
            refusal = errors.planned(event.exc, PANEL)
            writer.error(refusal.status, keys.hide(refusal.message))  # TM-9
        ended = isinstance(event, (route_mode.Done, route_mode.Failed))
        try:
            event = None if ended else turn.events.get_nowait()
        except queue.Empty:
            event = None
        if event is None:
            if not outbox.held and time.monotonic() - written >= KEEPALIVE:
                writer.keepalive()  # a run of chunks that rendered to nothing (reasoning, for most APIs)
            if outbox.flush(send):
                written = time.monotonic()
            if ended:
                return


def loaded(api: Any, ask: Any, shown: str) -> Reply:
    """Improvement 9: Ollama's "load the model" call (no prompt) gets an empty `done` reply, no panel."""
    payload = api.loaded(shown)
    if not ask.stream:
        return json_reply(200, payload)
    return exchange.stream_reply(api.Stream.content_type, lambda send: send(json.dumps(payload).encode() + b"\n"))


def stream_panel(request: Request, name: str, ask: Any, reply: str, make_writer: Callable[..., Any],
                 finish: "panel.Finish | None" = None) -> Reply:
    """§10: the 200 once the panel is seated (1 s grace), then each piece as it comes.

    `make_writer(write)` gives the format's stream writer (STR-1), so one loop serves every format.
    A refusal before the 200 (the caps, a stopping gateway, a plan that fails) is answered as such.
    """
    from ..panel import panel
    gone = threading.Event()
    events = panel.start(name, ask.messages, ask.nominees, reply, request.who, gone, finish)
    try:
        event = events.get(timeout=STREAM_GRACE)
    except queue.Empty:
        event = None
    if isinstance(event, panel.Failed):
        raise errors.planned(event.exc, PANEL)
    outbox = Outbox()
    writer = make_writer(outbox)

    def write(send: exchange.Write) -> None:
        try:
            relay_panel(send, writer, outbox, events, event, lambda bench: format_note(ask, name, bench))
        except exchange.CLIENT_GONE:
            gone.set()  # STR-9: the panel thread goes on and records every seat, but asks no merger
            raise

    return exchange.stream_reply(writer.content_type, write)


def relay_panel(send: exchange.Write, writer: Any, outbox: Outbox, events: "queue.Queue[Any]", event: Any,
                noted: Callable[[dict[str, Any]], None]) -> None:
    """§10's loop, from the first event (None when the grace ran out) to the panel's end."""
    from ..panel import panel
    writer.start()
    if event is None:
        writer.keepalive()  # STR-4: the grace ran out, so a keep-alive follows the 200 at once
    outbox.flush(send)
    streamed = False
    while True:
        if event is None:
            try:
                event = events.get(timeout=KEEPALIVE)
            except queue.Empty:
                writer.keepalive()
                outbox.flush(send)
                continue
        if isinstance(event, panel.Part):
            writer.text(event.text)
            streamed = True
        elif isinstance(event, panel.Done):
            if not streamed:
                writer.text(event.content)
            noted(event.bench)
            writer.end(event.bench)
            outbox.flush(send)
            return
        elif isinstance(event, panel.Failed):
            refusal = errors.planned(event.exc, PANEL)  # headers cannot follow a 200
            writer.error(refusal.status, keys.hide(refusal.message))  # TM-9
            outbox.flush(send)
            return
        # a part is written; `Seated` needs nothing, as the 200 has gone (the heading follows once every
        # seat's request is out)
        outbox.flush(send)
        event = None


ROUTES = routes.answered(routes.ROUTES, {
    routes.CHAT: panel_answer, routes.MESSAGES: panel_answer, routes.COUNT_TOKENS: anthropic_count,
    routes.RESPONSES: panel_answer, routes.COMPLETIONS: panel_answer, routes.OLLAMA_CHAT: panel_answer,
    routes.OLLAMA_GENERATE: panel_answer, routes.OLLAMA_SHOW: show,
    routes.GEMINI_COUNT: gemini_count, routes.GEMINI_GENERATE: gemini_generate, routes.GEMINI_STREAM: gemini_stream,
    routes.GEMINI_METHOD: gemini_method, routes.MODELS: models, routes.MODEL: model_row, routes.RESPONSE: response_row,
    routes.VERDICT: verdict,
    routes.RECORD: record, routes.LEADERBOARD: bench_leaderboard, routes.PENDING: pending,
    routes.OLLAMA_TAGS: ollama_tags, routes.OLLAMA_VERSION: ollama_version, routes.GEMINI_MODELS: gemini_models,
    routes.GEMINI_MODEL: gemini_model, routes.HEALTH: health, routes.MCP_GET: mcp_get, routes.MCP_POST: mcp_post,
    routes.OPENAPI: openapi.answer(lambda: GATEWAY),
})
GATEWAY: routing.Site = routing.Site(ROUTES)


class Server(routing.Server):
    """The shared server (deadlines, connection cap, head limits) answering the gateway's routes, or `site`'s."""

    def __init__(self, address: tuple[str, int], site: routing.Site = GATEWAY) -> None:
        super().__init__(address, site)


def serve(host: str = "127.0.0.1", port: int = 0, site: routing.Site = GATEWAY, name: str = "gateway") -> Server:
    """A server of `site` on a thread (tests, the demo): returns it; `server.shutdown()` stops it."""
    server = Server((host, port), site)
    # a short poll so shutdown() returns at once (tests start and stop many servers)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True).start()
    return server


def stop_on_signals(server: routing.Server) -> None:
    """SIGTERM and SIGINT stop the gateway gently (nothing-lost item 7): no new connections, the panels
    in flight get `stop_grace` seconds to finish, then their seats are ended and logged. A second
    signal ends the grace at once. Forked workers inherit the handlers, so each drains its own."""
    stopping = threading.Event()

    def handle(signum: int, frame: Any) -> None:
        if stopping.is_set():
            from ..panel import panel
            # on its own thread: the main thread may be inside the very locks stop_seats takes (drain)
            threading.Thread(target=panel.stop_seats, name="stop-now", daemon=True).start()
            return
        stopping.set()
        threading.Thread(target=server.shutdown, name="stop", daemon=True).start()  # not from serve_forever's thread

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handle)


def warm_up() -> None:
    """Issue 35: once the port is open, what answering a panel needs and `/health` does not: the panel's,
    council's and route mode's modules, then the panel's caches (`panel.warm_up`)."""
    from ..panel import council, leaderboard, panel, peers, route_mode
    del council, leaderboard, peers, route_mode  # loaded now, so the first panel or turn does not wait for them
    panel.warm_up()


def drain(server: routing.Server, grace: float) -> None:
    """Wait up to `grace` seconds for the panels in flight, end the seats still asked, then give every
    reply (a stream's error sections and its end in its own format) time to reach its client."""
    from ..panel import panel
    if not panel.flight.wait_idle(grace):
        console.say(f"stopping: panels still in flight after {grace:g}s; ending their seats")
    panel.stop_seats()  # also refuses a panel whose request was taken before the stop but not yet begun
    panel.flight.wait_idle(panel.STOP_SETTLE + REPLY_WAIT)
    server.wait_closed(REPLY_WAIT)


def starting(port: int | None, setting: str, demo_wanted: bool) -> tuple[str, int, Any]:
    """What both servers do first (START-1): stdout as UTF-8; the bind address checked before anything is bound or
    made, its warnings said; the port (`--port`, else the `setting` variable or its default); the demo upstream and
    its throwaway folder when asked. Returns `(address, port, upstream or None)`."""
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    address = guard.bind_address()
    problem = guard.startup_problem(address)
    if problem:
        sys.exit(problem)
    for warning in guard.startup_warnings():
        console.say(f"warning: {warning}")
    port = port if port is not None else guard.port_setting(setting)
    if not demo_wanted:
        return address, port, None
    from ..demo import demo
    return address, port, demo.start_demo()


def listen(address: str, port: int, site: routing.Site, setting: str, upstream: Any = None) -> Server:
    """The server on `address:port`, or exit 1 with one sentence saying why not and how to choose another port
    (`--port`, or the `setting` variable); a demo's upstream and throwaway folder go with it."""
    try:
        return Server((address, port), site)
    except OSError as exc:
        if upstream:
            from ..demo import demo
            demo.stop_demo(upstream)
        taken = "taken (another server?)" if exc.errno == errno.EADDRINUSE else "not usable"
        sys.exit(f"port {port} on {address} is {taken}: {exc.strerror}; choose another with --port N or {setting}")


def main(argv: list[str] | None = None) -> None:
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
    store.deferred()  # the store (and the configuration it may hold) is opened after the fork
    address, port, upstream = starting(args.port, "BENCH_GATEWAY_PORT", args.demo)
    server = listen(address, port, GATEWAY, "BENCH_GATEWAY_PORT", upstream)
    stop_on_signals(server)
    workers = httpserver.share(server, args.workers - 1) if args.workers > 1 else []
    refused = store.opened()  # each process its own pool, after the fork
    if refused:
        sys.exit(refused)
    if workers is not None:
        collections.config_problems()  # a broken config file is said on stderr now, once, not at the first request
    threading.Thread(target=warm_up, name="warm-up", daemon=True).start()
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
            from ..panel import panel
            httpserver.reap(server, workers, timeout=grace + panel.STOP_SETTLE + 2 * REPLY_WAIT)
        if upstream:
            from ..demo import demo
            demo.stop_demo(upstream)


if __name__ == "__main__":
    main()
