"""Every route the gateway answers, in one table (gateway.md §5, security.md ROUTE-1, ROUTE-5).

A `Route` names a method and a path, the handler method that answers it, the format its refusals
speak (FMT-3), the credential it takes (`scope`), whether it is a gateway route (ROUTE-1: CORS,
preflights, the gateway's body cap; the dashboard hands it to the gateway), and whether it writes to
the data folder (a write the disk refuses is answered 507 or 503, never a dropped connection).
Everything else that knows a route reads it here: the gateway's dispatch, its 404 help and 405
`Allow`, GUARD's `is_gateway_route`, FORMATS' `format_of`, the access log's masking. GATEWAY.md's
routes table mirrors this one.

A path is GW-1's: no query, no trailing `/`. A `<name>` in it stands for one or more characters and
reaches the handler percent-decoded, as the keyword argument `name`. Within a method the first row
that matches wins (Gemini's catch-all `<collection>:<method>` follows its three methods); a path's
format is its first row's whatever the method, so Gemini's model paths come before `/v1/models/<model>`
(`/v1/models/x:generateContent` speaks Gemini). The 404's help names the `listed` rows in table order.

`serve.py` (the dashboard) extends this table instead of copying it, and so inherits the MCP rows:
`extend(ROUTES, Route(...), ...)` keeps every gateway row, and a new row for a method and path the
table has replaces that one. Its handler subclasses the gateway's, so
the gateway's handler names still resolve; a `Route` subclass may match paths its own way (the
dashboard's raw-path quirks, RT-6) and name its own scope (the dashboard's admin login).
"""

import dataclasses
import functools
import re
import urllib.parse
from collections.abc import Iterable, Sequence

OPEN = "open"  # no Host check and no credential (OPEN-1)
KEY = "key"  # the Host check, then a gateway key when keys are required (GW-2, §7)

# ROUTE-1: every path under these is a gateway route, known or not; an unknown one is refused in its namespace's format
NAMESPACES = {"/v1/": "chat", "/v1beta/": "gemini", "/bench/": "chat"}
# LOG-2: what follows these in a path is a secret (an OAuth callback's id), never logged on any port
SECRET_TAILS = ("/connect/callback/",)
PLACEHOLDER = re.compile(r"<(\w+)>")


@dataclasses.dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: str | None  # None: named here, answered by another server; this one answers as if unknown
    fmt: str = "chat"
    aliases: tuple[str, ...] = ()  # more paths answered the same; outside a namespace no gateway route (ROUTE-4)
    gateway: bool = True
    scope: str = KEY
    writes: bool = False
    listed: bool = True
    loose: bool = False  # runs of `/` collapsed before matching (MCP, §15.3)
    raw: bool = False  # the handler reads the body itself (MCP: a body that is no JSON is its own JSON-RPC reply)

    def match(self, path: str, aliases: bool = True) -> dict[str, str] | None:
        """The handler's keyword arguments when this row answers `path` (GW-1 form), else None."""
        if self.loose:
            path = re.sub("/+", "/", path)
        for shape in (self.path, *self.aliases) if aliases else (self.path,):
            found = _match(shape, path)
            if found is not None:
                return found
        return None


ROUTES = (
    # the panel in every client's format (FMT-8); the unprefixed aliases answer on the gateway's port only
    Route("POST", "/v1/chat/completions", "panel", aliases=("/chat/completions",), writes=True),
    Route("POST", "/v1/messages", "panel", fmt="anthropic", writes=True),
    Route("POST", "/v1/messages/count_tokens", "anthropic_count", fmt="anthropic", listed=False),
    Route("POST", "/v1/responses", "panel", fmt="responses", aliases=("/responses",), writes=True),
    Route("POST", "/v1/completions", "panel", fmt="completion", aliases=("/completions",), writes=True),
    Route("POST", "/api/chat", "panel", fmt="ollama_chat", writes=True),
    Route("POST", "/api/generate", "panel", fmt="ollama_generate", writes=True),
    Route("POST", "/api/show", "show", fmt="ollama_chat", listed=False),
    Route("POST", "/v1beta/models/<collection>:countTokens", "gemini_count", fmt="gemini",
          aliases=("/v1/models/<collection>:countTokens",), listed=False),
    Route("POST", "/v1beta/models/<collection>:generateContent", "gemini_generate", fmt="gemini",
          aliases=("/v1/models/<collection>:generateContent",), writes=True),
    Route("POST", "/v1beta/models/<collection>:streamGenerateContent", "gemini_stream", fmt="gemini",
          aliases=("/v1/models/<collection>:streamGenerateContent",), writes=True, listed=False),
    Route("POST", "/v1beta/models/<collection>:<method>", "gemini_method", fmt="gemini",
          aliases=("/v1/models/<collection>:<method>",), listed=False),
    # listings (LST-1, IMP-21)
    Route("GET", "/v1/models", "models", aliases=("/models",)),
    Route("GET", "/v1/models/<model>", "model_row", listed=False),
    # verdicts (§12): each charges the key's rate cap, which is written down
    Route("POST", "/bench/verdict", "verdict", writes=True),
    Route("GET", "/bench/record", "record", writes=True),
    Route("GET", "/bench/leaderboard", "leaderboard", writes=True, listed=False),  # issue 20
    Route("POST", "/bench/pending", "pending", writes=True, listed=False),
    # Ollama's and Gemini's listings (§7.3, §7.4, §8.2)
    Route("GET", "/api/tags", "ollama_tags", fmt="ollama_chat"),
    Route("GET", "/api/version", "ollama_version", fmt="ollama_chat"),
    Route("GET", "/v1beta/models", "gemini_models", fmt="gemini"),
    Route("GET", "/v1beta/models/<name>", "gemini_model", fmt="gemini", listed=False),
    # open on both ports, before the Host check (OPEN-1, security improvement 21)
    Route("GET", "/health", "health", gateway=False, scope=OPEN, listed=False),
    # the MCP server's streamable HTTP transport (suite-cli-mcp.md MCP-15..20): POST one message; a GET is told to
    Route("GET", "/mcp", "mcp_get", aliases=("/v1/mcp",), listed=False, loose=True),
    Route("POST", "/mcp", "mcp_post", aliases=("/v1/mcp",), listed=False, loose=True, raw=True),
)


def extend(table: Sequence[Route], *rows: Route) -> tuple[Route, ...]:
    """`table` with `rows` added; a row for a method and path `table` has replaces that row in place."""
    added = {(row.method, row.path): row for row in rows}
    kept = tuple(added.pop((row.method, row.path), row) for row in table)
    return kept + tuple(added.values())


def normalized(path: str) -> str:
    """GW-1: the path without its query string or trailing `/`."""
    return path.split("?", 1)[0].rstrip("/") or "/"


def find(table: Iterable[Route], method: str, path: str) -> tuple[Route | None, dict[str, str]]:
    """`(route, arguments)` of the first row of `method` that answers `path`, or `(None, {})`."""
    path = normalized(path)
    for route in table:
        if route.method == method:
            found = route.match(path)
            if found is not None:
                return route, found
    return None, {}


def allowed(table: Iterable[Route], path: str) -> list[str]:
    """The methods whose rows answer `path`, HEAD after GET (it is answered as a GET, improvement 23)."""
    path = normalized(path)
    methods = list(dict.fromkeys(route.method for route in table if route.match(path) is not None))
    if "GET" in methods:
        methods.insert(methods.index("GET") + 1, "HEAD")
    return methods


def help_text(table: Iterable[Route], method: str) -> str:
    """What the 404's `no such route; try ...` names: `method` and its listed paths, in table order."""
    paths = [route.path for route in table if route.method == method and route.listed]
    return f"{method} {spoken(paths)}"


def spoken(items: list[str]) -> str:
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
