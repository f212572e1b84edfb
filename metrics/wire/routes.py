"""Every route the gateway answers, by its path facts, in one table (gateway.md §5, security.md ROUTE-1, ROUTE-5).

A `Route` names a method and a path, the format its refusals speak (FMT-3), the credential it takes
(`scope`), whether it is a gateway route (ROUTE-1: CORS, preflights, the gateway's body cap; the
dashboard hands it to the gateway's rows), and, once served, the `handler` that answers it: a function
taking the request and returning the reply (`server.exchange`). `ROUTES` here holds the gateway's rows
(the MCP server's among them) without handlers, since the formats come before the server that runs
them: what needs a path's facts before any handler exists reads them here (FORMATS' `format_of`,
GUARD's `is_gateway_route`, the access log's masking). `server.gateway` gives each row its handler
(`answered`, by the row itself, never by a name looked up at run time) and the dashboard adds its own
rows, handlers and all (`extend`). The dispatch, the 404's help and the 405's `Allow` read the table a
server was given. GATEWAY.md's routes table mirrors this one.

A path is GW-1's: no query, no trailing `/`. A `<name>` in it stands for one or more characters and
reaches the handler percent-decoded, in the request's `params`. Within a method the first row that
matches wins (Gemini's catch-all `<collection>:<method>` follows its three methods); a path's format is
its first row's whatever the method, so Gemini's model paths come before `/v1/models/<model>`
(`/v1/models/x:generateContent` speaks Gemini). The 404's help names the `listed` rows in table order.

`extend(table, Route(...), ...)` keeps every row of `table`, and a new row for a method and path the
table has replaces that one. A `Route` subclass may match the path as sent its own way (`answers`: the
dashboard's raw-path quirks, RT-6) and name its own scope (the dashboard's admin login).

A row's `doc` (a `Doc`) is what the OpenAPI document (`server.openapi`, OAS-1) says of it beyond its path
facts: a summary, the body it takes and the reply it gives (`wire.schemas`; a panel row names only how it
answers, and its API's `Format` gives the shapes), the statuses its handler refuses with, the query it reads.
It is never compared: a row is still known by its method, path and the rest.
"""

import dataclasses
import functools
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from . import schemas
from .schemas import Schema

# Scopes: the checks a request passes before its route's handler (GW-2, GW-3, RT-4, RT-5)
OPEN = "open"  # no Host check and no credential (OPEN-1)
KEY = "key"  # the Host check, then a gateway key when keys are required (GW-2, §7)
ADMIN = "admin"  # the Host check, then the admin login when it is on (AUTH-4); a stranger is a 401
PAGE = "page"  # as ADMIN, but a stranger is sent to /login: a page, not an API (AUTH-4)
HOST = "host"  # the Host check alone: the login itself, and a sign-in's callback, whose single-use state is the secret

# ROUTE-1: every path under these is a gateway route, known or not; an unknown one is refused in its namespace's format
NAMESPACES = {"/v1/": "chat", "/v1beta/": "gemini", "/bench/": "chat"}
# LOG-2: what follows these in a path is a secret (an OAuth callback's id), never logged on any port
SECRET_TAILS = ("/connect/callback/",)
PLACEHOLDER = re.compile(r"<(\w+)>")

Handler = Callable[[Any], Any]  # the request in, the reply out (`server.exchange`); wire calls none

# What a panel row's reply is (`Doc.panel`): its API's `Format` names the body, the reply and the events
ASKS = "asks"  # JSON, or the API's stream when the body asks for one (`stream`)
WHOLE = "whole"  # always JSON
STREAMED = "streamed"  # always the API's stream


@dataclasses.dataclass(frozen=True)
class Arg:
    """A query parameter a row reads."""

    name: str
    text: str
    required: bool = False
    values: tuple[str, ...] = ()  # the values it takes, when it takes only these


@dataclasses.dataclass(frozen=True)
class Doc:
    """What the OpenAPI document says of a row that its path facts do not (OAS-1): a summary, the JSON body it
    takes and the 200 it gives (the shapes of `wire.schemas`; a panel row's come from its API's `Format`), the
    statuses its handler refuses with beside those its scope's checks give (`core.errors` says each), the query
    it reads, other replies with bodies of their own, the 200s that are no JSON (`media`) or server-sent events
    (`events`; a panel row's are its API's), and, for a row that matches a path's head (the dashboard's
    folders), the path the document writes (`shown`; "" leaves it out)."""

    summary: str = ""
    takes: Schema | None = None
    gives: Schema | None = None
    panel: str = ""
    refuses: tuple[int, ...] = ()
    args: tuple[Arg, ...] = ()
    replies: tuple[tuple[int, Schema | None, str], ...] = ()  # (status, body or None for none, what it means)
    media: tuple[str, ...] = ()
    events: Schema | None = None  # a 200 streamed as server-sent events, each `data` one of these
    shown: str | None = None


@dataclasses.dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler | None = None  # None in `ROUTES`, which only names the gateway's routes
    fmt: str = "chat"
    aliases: tuple[str, ...] = ()  # more paths answered the same; outside a namespace no gateway route (ROUTE-4)
    gateway: bool = True
    scope: str = KEY
    listed: bool = True
    loose: bool = False  # runs of `/` collapsed before matching (MCP, §15.3)
    raw: bool = False  # the handler reads the body itself (MCP: a body that is no JSON is its own JSON-RPC reply)
    # What `/openapi.json` says of the row (issue 33, OAS-1), beside the facts above: never compared, so a row
    # is known by its method and path as before.
    doc: Doc = dataclasses.field(default=Doc(), compare=False)

    def match(self, path: str, aliases: bool = True) -> dict[str, str] | None:
        """What the `<name>`s read when this row answers `path` (GW-1 form), else None."""
        if self.loose:
            path = re.sub("/+", "/", path)
        for shape in (self.path, *self.aliases) if aliases else (self.path,):
            found = _match(shape, path)
            if found is not None:
                return found
        return None

    def answers(self, sent: str) -> dict[str, str] | None:
        """`match` for the path as sent (query and all): a subclass may read it its own way."""
        return self.match(normalized(sent))


Table = Sequence[Route]

# the panel in every client's format (FMT-8); the unprefixed aliases answer on the gateway's port only
PANEL_REFUSES = (400, 403, 404, 413, 429, 502, 503)  # the key's scope and rate cap, the collection, the panel
CHAT = Route("POST", "/v1/chat/completions", aliases=("/chat/completions",), doc=Doc(
    "Ask a panel, in OpenAI's chat completions format", panel=ASKS, refuses=PANEL_REFUSES))
MESSAGES = Route("POST", "/v1/messages", fmt="anthropic", doc=Doc(
    "Ask a panel, in Anthropic's Messages format", panel=ASKS, refuses=PANEL_REFUSES))
COUNT_TOKENS = Route("POST", "/v1/messages/count_tokens", fmt="anthropic", listed=False, doc=Doc(
    "Count a Messages request's input tokens (no model is called)", schemas.COUNT_ASK, schemas.TOKEN_COUNT,
    refuses=(400, 404)))
RESPONSES = Route("POST", "/v1/responses", fmt="responses", aliases=("/responses",), doc=Doc(
    "Ask a panel, in OpenAI's Responses format", panel=ASKS, refuses=PANEL_REFUSES))
COMPLETIONS = Route("POST", "/v1/completions", fmt="completion", aliases=("/completions",), doc=Doc(
    "Ask a panel, in OpenAI's legacy completions format", panel=ASKS, refuses=PANEL_REFUSES))
OLLAMA_CHAT = Route("POST", "/api/chat", fmt="ollama_chat", doc=Doc(
    "Ask a panel, in Ollama's chat format", panel=ASKS, refuses=PANEL_REFUSES))
OLLAMA_GENERATE = Route("POST", "/api/generate", fmt="ollama_generate", doc=Doc(
    "Ask a panel, in Ollama's generate format", panel=ASKS, refuses=PANEL_REFUSES))
OLLAMA_SHOW = Route("POST", "/api/show", fmt="ollama_chat", listed=False, doc=Doc(
    "Ollama's model card of a collection", schemas.OLLAMA_SHOW_ASK, schemas.OLLAMA_CARD, refuses=(404,)))
GEMINI_COUNT = Route("POST", "/v1beta/models/<collection>:countTokens", fmt="gemini",
                     aliases=("/v1/models/<collection>:countTokens",), listed=False, doc=Doc(
                         "Count a Gemini request's tokens (no model is called)", schemas.GEMINI_COUNT_ASK,
                         schemas.GEMINI_COUNT, refuses=(400, 404)))
GEMINI_GENERATE = Route("POST", "/v1beta/models/<collection>:generateContent", fmt="gemini",
                        aliases=("/v1/models/<collection>:generateContent",), doc=Doc(
                            "Ask a panel, in Gemini's generateContent format", panel=WHOLE, refuses=PANEL_REFUSES))
GEMINI_STREAM = Route("POST", "/v1beta/models/<collection>:streamGenerateContent", fmt="gemini",
                      aliases=("/v1/models/<collection>:streamGenerateContent",), listed=False, doc=Doc(
                          "Ask a panel, streamed in Gemini's format (`?alt=sse` for server-sent events)",
                          panel=STREAMED, refuses=PANEL_REFUSES,
                          args=(Arg("alt", "`sse` for server-sent events, else one JSON array", values=("sse",)),)))
GEMINI_METHOD = Route("POST", "/v1beta/models/<collection>:<method>", fmt="gemini",
                      aliases=("/v1/models/<collection>:<method>",), listed=False, doc=Doc(
                          "Any other Gemini method: a panel does not answer it", refuses=(404,)))
# listings (LST-1, IMP-21)
MODELS = Route("GET", "/v1/models", aliases=("/models",), doc=Doc(
    "List the collections the caller may ask, in OpenAI's and Gemini's shapes at once", gives=schemas.LISTING,
    refuses=(503,)))
MODEL = Route("GET", "/v1/models/<model>", listed=False, doc=Doc(
    "One collection's listing row", gives=schemas.COLLECTION_ROW, refuses=(404, 503)))
RESPONSE = Route("GET", "/v1/responses/<response_id>", fmt="responses", listed=False, doc=Doc(  # issue 30
    "Retrieve a response: none is stored, and the 404 says so", refuses=(404,)))
# verdicts (§12): each charges the key's rate cap, which is written down
VERDICT = Route("POST", "/bench/verdict", doc=Doc(
    "Judge one seat's answer, by the call id a panel reply names", schemas.VERDICT_ASK, schemas.VERDICT,
    refuses=(400, 404, 413, 429)))
RECORD = Route("GET", "/bench/record", doc=Doc(
    "A collection's verdicts, by member", gives=schemas.RECORD, refuses=(400, 429),
    args=(Arg("collection", "`bench/<name>`", required=True), Arg("task", "words in the verdicts' notes"))))
BOARD_ARGS = (Arg("collection", "`bench/<name>`", required=True), Arg("shape", "one explorer shape's panels only"),
              Arg("format", "`csv` for a download", values=("json", "csv")),
              Arg("source", "what the fit counts: `verdicts` (the default), council panels' `peers` rankings, or `both`",
                  values=("verdicts", "peers", "both")))
LEADERBOARD = Route("GET", "/bench/leaderboard", listed=False, doc=Doc(  # issue 20
    "A collection's Bradley–Terry leaderboard from its judged panels (JSON, or CSV with `format=csv`)",
    gives=schemas.BOARD, refuses=(400, 429), args=BOARD_ARGS, media=("text/csv",)))
PENDING = Route("POST", "/bench/pending", listed=False, doc=Doc(
    "Which of these call ids still wait for a verdict", schemas.PENDING_ASK, schemas.PENDING, refuses=(400, 429)))
# Ollama's and Gemini's listings (§7.3, §7.4, §8.2)
OLLAMA_TAGS = Route("GET", "/api/tags", fmt="ollama_chat", doc=Doc(
    "List the collections, in Ollama's shape", gives=schemas.OLLAMA_TAGS, refuses=(503,)))
OLLAMA_VERSION = Route("GET", "/api/version", fmt="ollama_chat", doc=Doc(
    "The Ollama version the gateway speaks", gives=schemas.OLLAMA_VERSION))
GEMINI_MODELS = Route("GET", "/v1beta/models", fmt="gemini", doc=Doc(
    "List the collections, in Gemini's shape", gives=schemas.GEMINI_MODELS, refuses=(503,)))
GEMINI_MODEL = Route("GET", "/v1beta/models/<name>", fmt="gemini", listed=False, doc=Doc(
    "One collection, in Gemini's shape", gives=schemas.GEMINI_MODEL, refuses=(404, 503)))
# open on both ports, before the Host check (OPEN-1, security improvement 21)
HEALTH = Route("GET", "/health", gateway=False, scope=OPEN, listed=False, doc=Doc(
    "Whether the server is up, and what an operator must know", gives=schemas.HEALTH))
# the MCP server's streamable HTTP transport (suite-cli-mcp.md MCP-15..20): POST one message; a GET is told to
MCP_GET = Route("GET", "/mcp", aliases=("/v1/mcp",), listed=False, loose=True, doc=Doc(
    "The MCP transport takes no GET: every message is a POST",
    replies=((405, schemas.MCP_GET, "POST one JSON-RPC message per request"),)))
MCP_POST = Route("POST", "/mcp", aliases=("/v1/mcp",), listed=False, loose=True, raw=True, doc=Doc(
    "One MCP JSON-RPC message (a tool call from a client that reads event streams is answered as one)",
    schemas.JSONRPC, schemas.JSONRPC_REPLY, events=schemas.MCP_EVENT,
    replies=((202, None, "a notification, taken"), (400, schemas.JSONRPC_REPLY, "JSON-RPC's parse error"))))
# this document (issue 33, OAS-1): the port's own table, each port its own
OPENAPI = Route("GET", "/openapi.json", gateway=False, listed=False, doc=Doc(
    "This OpenAPI 3.1 description of the port's routes, generated from its route table", gives=schemas.OPENAPI))

ROUTES = (CHAT, MESSAGES, COUNT_TOKENS, RESPONSES, COMPLETIONS, OLLAMA_CHAT, OLLAMA_GENERATE, OLLAMA_SHOW,
          GEMINI_COUNT, GEMINI_GENERATE, GEMINI_STREAM, GEMINI_METHOD, MODELS, MODEL, RESPONSE, VERDICT, RECORD,
          LEADERBOARD,
          PENDING, OLLAMA_TAGS, OLLAMA_VERSION, GEMINI_MODELS, GEMINI_MODEL, HEALTH, MCP_GET, MCP_POST, OPENAPI)


def answered(table: Table, handlers: Mapping[Route, Handler]) -> tuple[Route, ...]:
    """`table` with each row's handler from `handlers`, keyed by the row itself; a row left without one, or a
    handler for no row, is a mistake found when the server's module is imported."""
    strays = set(handlers) - set(table)
    missing = [row.path for row in table if row not in handlers]
    if strays or missing:
        raise LookupError(f"handlers for rows not in the table: {[row.path for row in strays]}; "
                          f"rows without one: {missing}")
    return tuple(dataclasses.replace(row, handler=handlers[row]) for row in table)


def extend(table: Table, *rows: Route) -> tuple[Route, ...]:
    """`table` with `rows` added; a row for a method and path `table` has replaces that row in place."""
    added = {(row.method, row.path): row for row in rows}
    kept = tuple(added.pop((row.method, row.path), row) for row in table)
    return kept + tuple(added.values())


def normalized(path: str) -> str:
    """GW-1: the path without its query string or trailing `/`."""
    return path.split("?", 1)[0].rstrip("/") or "/"


def find(table: Iterable[Route], method: str, path: str) -> tuple[Route | None, dict[str, str]]:
    """`(route, params)` of the first row of `method` that answers `path` (as sent), or `(None, {})`."""
    for route in table:
        if route.method == method:
            found = route.answers(path)
            if found is not None:
                return route, found
    return None, {}


def allowed(table: Iterable[Route], path: str) -> list[str]:
    """The methods whose rows answer `path`, HEAD after GET (it is answered as a GET, improvement 23)."""
    methods = list(dict.fromkeys(route.method for route in table if route.answers(path) is not None))
    if "GET" in methods:
        methods.insert(methods.index("GET") + 1, "HEAD")
    return methods


def help_text(table: Iterable[Route], method: str) -> str:
    """What the 404's `no such route; try ...` names: `method` and its listed paths, in table order."""
    paths = [route.path for route in table if route.method == method and route.listed]
    return f"{method} {spoken(paths)}"


def spoken(items: Sequence[str]) -> str:
    """`a, b or c`."""
    return " or ".join(filter(None, (", ".join(items[:-1]), *items[-1:])))


def format_of(path: str) -> str:
    """The fmt id a path speaks (FMT-3), whatever the method: its first row's, else its namespace's, else chat."""
    path = normalized(path)
    for route in ROUTES:
        if route.match(path) is not None:
            return route.fmt
    return next((fmt for prefix, fmt in NAMESPACES.items() if path.startswith(prefix)), "chat")


def is_gateway_route(path: str) -> bool:
    """ROUTE-1: a path in a gateway namespace, or a gateway row's own path (not an alias: ROUTE-4)."""
    path = path.split("?", 1)[0]
    if path.startswith(tuple(NAMESPACES)):
        return True
    return any(route.gateway and route.match(normalized(path), aliases=False) is not None for route in ROUTES)


def logged(path: str) -> str:
    """LOG-2: the path as the access log shows it: no query, and `...` for a secret tail."""
    path = path.split("?", 1)[0]
    secret = next((head for head in SECRET_TAILS if path.startswith(head)), "")
    return secret + "..." if secret else path


@functools.cache
def _shape(shape: str) -> tuple[str, re.Pattern[str] | None]:
    """A path shape's literal head and a pattern for the rest (None when it has no `<name>`)."""
    start = shape.find("<")
    if start < 0:
        return shape, None
    pieces = PLACEHOLDER.split(shape[start:])  # literal, name, literal, name, ..., literal
    pattern = "".join(f"(?P<{piece}>.+)" if i % 2 else re.escape(piece) for i, piece in enumerate(pieces))
    return shape[:start], re.compile(pattern, re.DOTALL)


def _match(shape: str, path: str) -> dict[str, str] | None:
    """The arguments a shape reads from `path` (percent-decoded past its literal head), or None."""
    head, pattern = _shape(shape)
    if pattern is None:
        return {} if path == head else None
    if not path.startswith(head):
        return None
    found = pattern.fullmatch(urllib.parse.unquote(path[len(head):]))
    return found.groupdict() if found else None
