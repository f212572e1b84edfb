"""One table of routes (issue 13, item 2; issue 28, item 2; gateway.md §5, security.md ROUTE-1): a route is
named in `benchwarmers.wire.routes` and nowhere else, its row holds its handler once served
(`server.gateway.ROUTES`), and everything the gateway says about routes is read off it: dispatch, the 404's
help, the 405's `Allow`, the gateway-route test, the format of a refusal."""

import ast
import http.client
import inspect
import json
import re

import pytest

from benchwarmers.server import exchange, gateway, routing
from benchwarmers.core import paths
from benchwarmers.wire import routes
from benchwarmers.wire.routes import Route

# The modules that answer requests. The others (the client, the demo upstream, each format's outbound
# half) name the providers' own paths, which share their spelling with ours.
SERVING = ["gateway.py", "serve.py", "metrics/server/gateway.py", "metrics/server/routing.py",
           "metrics/server/exchange.py", "metrics/dashboard/serve.py", "metrics/server/guard.py",
           "metrics/server/httpserver.py", "metrics/server/gatekeys.py", "metrics/wire/__init__.py"]
GET_HELP = "GET /v1/models, /bench/record, /api/tags, /api/version or /v1beta/models"
POST_HELP = ("POST /v1/chat/completions, /v1/messages, /v1/responses, /v1/completions, /api/chat, /api/generate, "
             "/v1beta/models/<collection>:generateContent or /bench/verdict")


@pytest.fixture
def gw(home):
    """The real gateway on a free port; the routes under test refuse before any collection is read."""
    server = gateway.serve("127.0.0.1", 0)
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def request(port, method, path, body=None, headers=None):
    """`(status, {lower-case header: value}, parsed body or None)`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, data, {**({"Content-Type": "application/json"} if data else {}), **(headers or {})})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(raw) if raw else None


def named(text):
    """Whether `text` is a literal a route is known by: a path, an alias or its head (a trailing `/` or
    not), a namespace, a secret tail. The `/v1` of a client's base URL is none of them."""
    shapes = [shape for row in routes.ROUTES for shape in (row.path, *row.aliases)]
    heads = {shape.split("<", 1)[0].rstrip("/") for shape in shapes}
    return text.rstrip("/") in heads or text in routes.NAMESPACES or text in routes.SECRET_TAILS


def example(shape):
    """A request path a row's shape answers: each `<name>` filled in."""
    return shape.replace("<collection>", "bench/core").replace("<method>", "embedContent").replace(
        "<model>", "bench/core").replace("<name>", "bench/core")


def test_no_route_is_named_outside_the_table():
    """A string that is a route's path, anywhere in the modules that answer requests, is a second table."""
    found = []
    for name in SERVING:
        path = paths.CODE / name
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and named(node.value):
                found.append(f"{name}:{node.lineno} {node.value!r}")
    assert not found


def test_every_row_holds_a_handler_that_takes_the_request():
    """A served row holds its handler itself (nothing is looked up by name); it takes the request, whose
    `params` carry what the row's `<name>`s read, the same names in every alias."""
    assert [row.path for row in gateway.ROUTES] == [row.path for row in routes.ROUTES]
    for row in gateway.ROUTES:
        assert list(inspect.signature(row.handler).parameters) == ["request"], row
        read = routes.PLACEHOLDER.findall(row.path)
        for alias in row.aliases:
            assert routes.PLACEHOLDER.findall(alias) == read, row
    with pytest.raises(LookupError):
        routes.answered(routes.ROUTES, {routes.HEALTH: gateway.health})


def test_help_strings_list_every_listed_route():
    """GW-1..3: the 404's help is the listed rows of the method, in table order; the pinned wording holds."""
    for method, pinned in (("GET", GET_HELP), ("POST", POST_HELP)):
        assert routes.help_text(routes.ROUTES, method) == pinned
        named = pinned.split(" ", 1)[1].replace(" or ", ", ").split(", ")
        assert named == [row.path for row in routes.ROUTES if row.method == method and row.listed]
    assert routes.spoken(["a"]) == "a" and routes.spoken(["a", "b", "c"]) == "a, b or c"


def test_unknown_paths_are_404_with_the_help(gw):
    status, _, reply = request(gw, "GET", "/nowhere")
    assert (status, reply["error"]["message"]) == (404, f"no such route; try {GET_HELP}")
    status, _, reply = request(gw, "POST", "/v1/nowhere", {})
    assert (status, reply["error"]["message"]) == (404, f"no such route; try {POST_HELP}")
    status, _, reply = request(gw, "POST", "/mcp", {})  # the MCP server's row: JSON-RPC's own refusal (MCP-5)
    assert (status, reply["error"]) == (200, {"code": -32600, "message": "invalid request"})
    status, _, reply = request(gw, "GET", "/v1beta/nowhere")  # an unknown path in Gemini's namespace
    assert status == 404 and reply["error"]["status"] == "NOT_FOUND"


@pytest.mark.parametrize("method, path, allow, shape", [
    ("GET", "/v1/chat/completions", "POST", "chat"),
    ("GET", "/chat/completions/?x=1", "POST", "chat"),
    ("GET", "/v1/messages", "POST", "anthropic"),
    ("GET", "/api/generate", "POST", "ollama"),
    ("GET", "/bench/verdict", "POST", "chat"),
    ("POST", "/v1/models", "GET, HEAD", "chat"),
    ("POST", "/api/tags", "GET, HEAD", "ollama"),
    ("POST", "/health", "GET, HEAD", "chat"),
])
def test_a_known_path_asked_with_another_method_is_405_with_allow(gw, method, path, allow, shape):
    """A route that takes another method is a 405 naming the methods it takes, in the route's format shape."""
    status, headers, reply = request(gw, method, path, {} if method == "POST" else None)
    assert (status, headers["allow"]) == (405, allow)
    message = reply["error"] if shape == "ollama" else reply["error"]["message"]
    assert message == f"{method} is not allowed on {routes.normalized(path)}; use {routes.spoken(allow.split(', '))}"
    if shape == "anthropic":
        assert reply["type"] == "error"


def test_head_and_mcp_and_a_stranger(gw, monkeypatch):
    """HEAD is a GET without the body; GET /mcp keeps its own 405 (§5.1); with keys required a stranger
    is refused (401) before learning which methods a route takes."""
    status, headers, reply = request(gw, "HEAD", "/v1/chat/completions")
    assert (status, headers["allow"], reply) == (405, "POST", None)
    for path in ("/mcp", "/v1/mcp/", "//mcp"):
        status, headers, reply = request(gw, "GET", path)
        assert (status, headers["allow"], reply) == (
            405, "POST", {"error": {"message": "POST /mcp, one JSON-RPC message per request"}}), path
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    status, headers, _ = request(gw, "GET", "/v1/chat/completions")
    assert status == 401 and "allow" not in headers


def test_classification_and_format_are_read_off_the_table():
    """ROUTE-1, ROUTE-4, FMT-3: a gateway row's path is a gateway route, an alias outside the namespaces is
    not; a path speaks its first row's format whatever the method."""
    for row in routes.ROUTES:
        assert routes.is_gateway_route(example(row.path)) is row.gateway, row
        assert routes.format_of(example(row.path)) == row.fmt or "<" in row.path, row
        for alias in row.aliases:
            assert routes.is_gateway_route(example(alias)) is alias.startswith(tuple(routes.NAMESPACES)), alias
    assert routes.format_of("/v1/models/bench/core:merged") == "gemini"  # Gemini's paths come first
    row, arguments = routes.find(gateway.ROUTES, "GET", "/v1/models/bench%2Fcore:merged")
    assert (row.handler, arguments) == (gateway.model_row, {"model": "bench/core:merged"})
    assert routes.logged("/connect/callback/secret?code=1") == "/connect/callback/..."


def test_the_dashboard_extends_the_table_it_does_not_copy_it(home):
    """serve.py's way: a site whose table is `extend(...)`ed, no handler subclass: its own rows answer, the
    gateway's keep theirs, a row for a method and path already there replaces that row, the gateway's table is
    untouched."""
    stamp = Route("GET", "/api/stamp", lambda request: exchange.json_reply(200, {"ok": True, "stamp": 1}),
                  gateway=False)
    health = Route("GET", "/health", gateway.health, gateway=False, scope=routes.OPEN, fmt="anthropic", listed=False)
    table = routes.extend(gateway.ROUTES, stamp, health)
    assert table[-1] == stamp and health in table and len(table) == len(gateway.ROUTES) + 1
    assert gateway.ROUTES[table.index(health)].fmt == "chat"

    server = gateway.serve("127.0.0.1", 0, routing.Site(table))
    try:
        port = server.server_address[1]
        assert request(port, "GET", "/api/stamp")[::2] == (200, {"ok": True, "stamp": 1})
        assert request(port, "GET", "/health")[::2] == (200, {"ok": True})
        assert request(port, "POST", "/api/stamp", {})[1]["allow"] == "GET, HEAD"
        status, _, reply = request(port, "GET", "/nowhere")
        assert status == 404 and reply["error"]["message"].endswith("/v1beta/models or /api/stamp")
    finally:
        server.shutdown()
        server.server_close()
    assert not routes.is_gateway_route("/api/stamp")


def test_gateway_md_mirrors_the_table():
    """GATEWAY.md's routes table names every row's path and alias."""
    doc = (paths.CODE / "GATEWAY.md").read_text(encoding="utf-8")
    for row in routes.ROUTES:
        for shape in (row.path, *row.aliases):
            head, _, rest = shape.partition("<")
            assert re.search(f"`((GET|POST) )?{re.escape(head)}", doc), shape
            assert rest.rpartition(">")[2] in doc, shape
