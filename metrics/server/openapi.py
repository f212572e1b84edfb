"""`GET /openapi.json` (issue 33, OAS-1..4): an OpenAPI 3.1 description of a port's routes, generated from the
route table it serves, so it cannot drift from what the port answers.

Every path, method and path parameter is a row's (`wire.routes`; on the dashboard's port its table, the gateway's
rows and its own); what a row takes and gives is its `Doc`, or, on a panel row, its API's `Format` (the body, the
reply, one streamed event). The statuses are the checks its scope meets before the handler (`server.routing`:
the write checks on a POST, Host, the key or the login) and those its `Doc` says the handler refuses with, each
described by `core.errors.MEANINGS` and shaped as the port answers it: the route format's error body (ERR-1),
or the dashboard's `{"ok": false, "errors": [...]}` outside the gateway's routes (ERR-2), both read off the code
that writes them. The security schemes are the credentials the port takes now: a gateway key in each header
form (GW-2, CRED-2; `?key=` on Gemini's paths), the dashboard's session cookie or the admin token as a bearer;
with keys not required (or the login off) the document says so with an empty requirement.

Each operation's example is a real reply of the demo bench, captured by `scripts/openapi_examples.py` into
`ui/openapi-examples.json` (tests/test_openapi.py checks the captured shapes still match the live server's);
a panel's reply links its seats' call ids to `POST /bench/verdict` (the stateful link a fuzzer follows).
"""

import functools
import json
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from .. import __version__, wire
from ..core import errors, paths
from ..wire import routes, schemas
from ..wire.schemas import Schema
from . import exchange, guard, routing

EXAMPLES = paths.CODE / "ui" / "openapi-examples.json"
# a panel reply's call ids, which `POST /bench/verdict` takes: a panel's first seat's, or a route turn's
VERDICT_LINKS = (("verdict", "judge the first seat's answer", "$response.body#/bench/seats/0/call"),
                 ("verdict_turn", "judge a route turn's answer", "$response.body#/bench/call"))
JSON = "application/json"
SSE = "text/event-stream"
DESCRIPTION = """The Benchwarmers panel gateway and dashboard: generated from the route table this port serves.

Not written as paths: `HEAD` answers every GET path as its GET does; the dashboard answers any other GET path
with its page and any other POST with 404 `unknown endpoint`; methods other than GET, POST and (on gateway
routes) OPTIONS are the HTTP library's 501. A streamed reply ends when the connection closes."""


def example_path(shape: str) -> str:
    """A path a row's shape answers, `<name>`s filled in: what tells a dashboard's gateway paths from its own."""
    return routes.PLACEHOLDER.sub("x", shape)


def shapes(site: routing.Site, row: routes.Route) -> tuple[str, ...]:
    """The paths the document writes for `row`: its own and its aliases, less those this port does not route
    to it (ROUTE-4: the gateway's unprefixed aliases are the dashboard's pages), or the `Doc`'s own."""
    if row.doc.shown is not None:
        return (row.doc.shown,) if row.doc.shown else ()
    found = (row.path, *row.aliases)
    if site.apart:
        found = tuple(shape for shape in found if routes.is_gateway_route(example_path(shape)) == row.gateway)
    return found


def templated(shape: str) -> str:
    """`<name>` as OpenAPI writes it, `{name}`."""
    return routes.PLACEHOLDER.sub(r"{\1}", shape)


def operation_id(method: str, shape: str) -> str:
    return f"{method.lower()}_{re.sub('[^A-Za-z0-9]+', '_', shape).strip('_') or 'root'}"


@functools.cache
def examples() -> dict[str, Any]:
    """The captured replies, by `METHOD path` (an empty set when the file is missing: the document still stands)."""
    try:
        loaded: dict[str, Any] = json.loads(EXAMPLES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded


# -- statuses ---------------------------------------------------------------------


def checked(row: routes.Route) -> tuple[int, ...]:
    """The statuses the checks before a row's handler answer with (`routing.Handler.checked`, `turned_away`)."""
    found = [500]
    if row.method == "POST":
        found += [400, 403, 411, 413, 415, 503, 507]  # WRITE-1..6; a write the data folder refused
    elif row.scope != routes.OPEN:
        found.append(403)  # HOST-1..4
    if row.scope == routes.KEY:
        found.append(401)
    elif row.scope == routes.ADMIN:
        found += [401, 429]
    elif row.scope == routes.PAGE:
        found += [303, 429]
    return tuple(found)


def error_schema(site: routing.Site, shape: str, status: int) -> Schema:
    """The body a refusal on `shape` carries on this port (ERR-1, ERR-2), read off the code that writes it."""
    path = example_path(shape)
    if site.refusal is not None and site.own(path):
        body = errors.Refused(status, "why").body()
    else:
        body = wire.error_body(routes.format_of(path), status, "why")
    return schemas.infer(body)


def json_media(schema: Schema, example: Any = None) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": schema}
    if example is not None:
        media["example"] = example
    return media


def responses(site: routing.Site, row: routes.Route, shape: str) -> dict[str, Any]:
    """Every status the row answers with, and what each carries: a refusal's error body, a reply of its own."""
    answered: dict[int, dict[str, Any]] = {}
    if not any(status == 200 for status, _, _ in row.doc.replies):
        answered[200] = success(row)
    own = {status: (body, text) for status, body, text in row.doc.replies}
    refusals = set(checked(row) + row.doc.refuses)
    for status in sorted(refusals | set(own)):
        reply: dict[str, Any] = {"description": own[status][1] if status in own else errors.MEANINGS[status]}
        if status == 303:
            reply["headers"] = {"Location": {"schema": schemas.STR}}
        bodies = [own[status][0]] if status in own else []
        if status in refusals and status != 303:
            bodies.append(error_schema(site, shape, status))
        shown = [body for body in bodies if body is not None]
        if shown:
            reply["content"] = {JSON: json_media(shown[0] if len(shown) == 1 else schemas.either(*shown))}
        answered[status] = reply
    return {str(status): answered[status] for status in sorted(answered)}


def success(row: routes.Route) -> dict[str, Any]:
    """The 200: JSON, a panel API's reply or stream, or a reply that is no JSON (a page, a CSV download)."""
    doc = row.doc
    content: dict[str, Any] = {}
    if doc.panel:
        api = wire.get(row.fmt)
        if doc.panel != routes.STREAMED:
            content[JSON] = json_media(api.gives)
        if doc.panel != routes.WHOLE:
            content.update({media: stream_media(api.events, media) for media in api.stream_types})
    elif doc.gives is not None:
        content[JSON] = json_media(doc.gives)
    if doc.events is not None:
        content[SSE] = stream_media(doc.events, SSE)
    content.update({media: {"schema": schemas.STR} for media in doc.media})
    reply: dict[str, Any] = {"description": doc.summary or errors.MEANINGS[200]}
    if content:
        reply["content"] = content
    if doc.panel and "bench" in wire.get(row.fmt).gives.get("properties", {}):
        reply["links"] = {name: {"operationId": operation_id(routes.VERDICT.method, routes.VERDICT.path),
                                 "description": text, "requestBody": {"call": call, "useful": True}}
                          for name, text, call in VERDICT_LINKS}
    return reply


def stream_media(events: Schema, media: str) -> dict[str, Any]:
    """A streamed reply, each piece `events`: one JSON array (Gemini), NDJSON lines (Ollama), or server-sent
    events, whose `schema` is one event (OpenAPI 3.1 has no `itemSchema`) with its `data` the JSON."""
    said = events.get("description", "")
    if media == JSON:
        return {"schema": schemas.arr(events)}
    if "ndjson" in media:
        return {"schema": schemas.described(schemas.STR, f"NDJSON, one JSON object a line: {said}"),
                "x-line-schema": events}
    data = schemas.either({"const": "[DONE]", "description": "the end, where the API ends its stream so"},
                          {"type": "string", "contentMediaType": JSON, "contentSchema": events})
    return {"schema": schemas.described(schemas.obj({"data": data}, event=schemas.STR, id=schemas.STR),
                                        f"one server-sent event (keep-alives are comments): {said}")}


# -- operations -------------------------------------------------------------------


def attach(answered: dict[str, Any], captured: dict[str, Any]) -> None:
    """The captured reply as the example of its status and content type."""
    media = answered.get(str(captured.get("status")), {}).get("content", {}).get(captured.get("media"))
    if media is not None and captured.get("reply") is not None:
        media["example"] = captured["reply"]


def parameters(row: routes.Route, shape: str, captured: dict[str, Any]) -> list[dict[str, Any]]:
    """The path's `<name>`s and the query the row reads, each with the value the captured example was asked with."""
    sent = captured.get("path", "")
    asked = routes.Route(row.method, row.doc.shown or row.path).match(routes.normalized(sent)) or {}
    asked.update(urllib.parse.parse_qsl(urllib.parse.urlsplit(sent).query))
    found: list[dict[str, Any]] = [{"name": name, "in": "path", "required": True, "schema": schemas.STR}
                                   for name in routes.PLACEHOLDER.findall(shape)]
    for arg in row.doc.args:
        # a blank value is no value (`exchange.Request.query`): the row's default
        schema: Schema = {**schemas.STR, "enum": [*arg.values, ""]} if arg.values else schemas.STR
        found.append({"name": arg.name, "in": "query", "required": arg.required, "description": arg.text,
                      "schema": schema})
    for parameter in found:
        if parameter["name"] in asked:
            parameter["example"] = asked[parameter["name"]]
    return found


def request_body(row: routes.Route, captured: dict[str, Any]) -> dict[str, Any] | None:
    if row.method != "POST":
        return None
    api = wire.get(row.fmt) if row.doc.panel else None
    schema = api.takes if api else row.doc.takes
    if schema is None:
        return None
    example = api.example if api else captured.get("request")
    return {"required": True, "content": {JSON: json_media(schema, example)}}


def security(row: routes.Route, shape: str) -> list[dict[str, list[str]]]:
    """Who may call the row now: a gateway key in any form it is taken in, or the login; `{}` when none is asked."""
    if row.scope in (routes.OPEN, routes.HOST):
        return []
    if row.scope == routes.KEY:
        asked: list[dict[str, list[str]]] = [{"gatewayKey": []}, {"apiKeyHeader": []}, {"googApiKeyHeader": []}]
        if guard.is_gemini_route(example_path(shape)):
            asked.append({"googKeyQuery": []})
        return asked if guard.keys_required() else [{}, *asked]
    asked = [{"session": []}, {"adminToken": []}]
    return asked if guard.admin_token() else [{}, *asked]


def operation(site: routing.Site, row: routes.Route, shape: str) -> dict[str, Any]:
    captured = examples().get(f"{row.method} {row.path}", {})
    answered = responses(site, row, shape)
    attach(answered, captured)
    found: dict[str, Any] = {
        "operationId": operation_id(row.method, shape),
        "summary": row.doc.summary or shape,
        "tags": ["gateway" if row.gateway else "dashboard" if row.scope in (routes.ADMIN, routes.PAGE) else "server"],
        "security": security(row, shape),
        "responses": answered}
    arguments = parameters(row, shape, captured)
    if arguments:
        found["parameters"] = arguments
    body = request_body(row, captured)
    if body:
        found["requestBody"] = body
    return found


def schemes(port: int) -> dict[str, Any]:
    """GW-2, CRED-2: the key as a bearer, `x-api-key` or `x-goog-api-key` (`?key=` on Gemini's paths); AUTH-4:
    the dashboard's session cookie, named for its port, or the admin token as a bearer."""
    key = "a gateway key (`bwk_...`), made on the dashboard's Settings page"
    return {
        "gatewayKey": {"type": "http", "scheme": "bearer", "description": key},
        "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-api-key", "description": key},
        "googApiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-goog-api-key", "description": key},
        "googKeyQuery": {"type": "apiKey", "in": "query", "name": "key", "description": key + " (Gemini's paths)"},
        "session": {"type": "apiKey", "in": "cookie", "name": guard.cookie_name(port),
                    "description": "the session `POST /login` sets"},
        "adminToken": {"type": "http", "scheme": "bearer", "description": "BENCHWARMERS_ADMIN_TOKEN"}}


def document(site: routing.Site, port: int) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `site`'s routes as served on `port`."""
    paths_: dict[str, dict[str, Any]] = {}
    for row in site.table:
        for shape in shapes(site, row):
            methods = paths_.setdefault(templated(shape), {})
            methods.setdefault(row.method.lower(), operation(site, row, shape))  # the first row of a method wins
    return {"openapi": "3.1.0",
            "info": {"title": "Benchwarmers", "version": __version__, "description": DESCRIPTION},
            "servers": [{"url": "/"}], "paths": paths_, "components": {"securitySchemes": schemes(port)}}


def answer(site: Callable[[], routing.Site]) -> routes.Handler:
    """The handler of a port's `/openapi.json`: `site()` is the port's own, read when asked."""
    def openapi_document(request: exchange.Request) -> exchange.Reply:
        return exchange.json_reply(200, document(site(), request.port))

    return openapi_document
