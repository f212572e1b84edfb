"""One request's way through a port: the row, the checks its scope asks for, the body, the handler, the reply
(gateway.md GW-1..3, §14; dashboard.md RT-1..6; security.md §3-8).

`Server` is the hardened server of `server.httpserver` with a `Site`: the route table it answers and what
its port does its own way. Both ports run this one `Handler`; the dashboard gives it a bigger table (the
gateway's rows plus its own) and its own site, never a subclass. A request meets, in order:

1. the row: the first of its method whose path matches (`wire.routes.find`); on the dashboard's port a
   gateway route (ROUTE-1) is looked up among the gateway's rows alone, any other path among the rest (RT-1);
2. the checks of the row's scope: a POST's write checks first (Host, cross-site, Origin, Content-Type,
   Content-Length and the body cap: WRITE-1..6, before a byte of the body is read), a GET's Host check
   unless the route is open (OPEN-1); then who is calling: a gateway key (GW-2, §7), or the admin login
   (AUTH-4: a stranger asking for a page is sent to /login);
3. the body, read once: its bytes on a `raw` row, else the JSON object it holds (GW-3 step 4, RESP-4);
4. the handler, or a 405 naming the methods the path takes, or a 404 naming the routes to try;
5. the reply, with the headers this port adds (CORS, RESP-2, the version).

Whatever a step raises is answered in one place (`refusal_reply`): a refusal with its own status, in the
shape of its path (the route's format, ERR-1; the dashboard's `{"ok": false, "errors": [...]}` for a path
that is no gateway route, ERR-2); the data folder refusing a write as its 507 or 503; anything unplanned as
a 500 whose id is logged with its traceback (`core.errors.planned`); every secret the bench knows hidden in
it (TM-9: a refusal may quote an upstream, and an upstream may echo its key). A client that went away is let go.

The handler speaks HTTP/1.0 as the reference does: every response closes its connection and a stream ends
at the close.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

from .. import __version__, wire
from ..core import errors, keys
from ..wire import routes
from . import exchange, guard, httpserver


@dataclasses.dataclass(frozen=True)
class Site:
    """What one port serves: its route table, and what it does its own way.

    The gateway's port answers every path from its table. The dashboard's keeps the gateway's rows for the
    gateway's routes and its own for the rest (`apart`, RT-1), refuses those in its own shape (`refusal`,
    ERR-2) with its own body cap (`cap`), puts RESP-2's headers on every JSON reply, names its version to a
    caller it knows, keeps CORS to the gateway's routes, and logs only with a login on (LOG-4, LOG-5).
    """

    table: routes.Table
    apart: bool = False
    cap: int = guard.GATEWAY_CAP
    refusal: Callable[[errors.Refusal], Any] | None = None  # the body of a refusal outside the gateway's routes
    json_type: str = exchange.JSON
    json_cache: str = ""
    version: str = ""
    cors: bool = True  # CORS headers on every reply to an allowed origin, not only on a gateway route's
    logs: Callable[[], bool] = lambda: True  # each reply is an access line
    diagnostics: bool = True  # the server's own lines (timeouts, errors) go to the log too

    def rows(self, path: str) -> routes.Table:
        """The rows that may answer `path` on this port."""
        if not self.apart:
            return self.table
        gateway = routes.is_gateway_route(path)
        return [row for row in self.table if row.gateway == gateway]

    def own(self, path: str) -> bool:
        """Whether a refusal on `path` speaks this port's own shape rather than a route format's."""
        return self.refusal is not None and not routes.is_gateway_route(path)


class Handler(httpserver.Handler):
    """The request's way, one method a step, in the order it meets them (see the module's docstring)."""

    server: "Server"
    server_version = f"benchwarmers/{__version__}"

    @property
    def site(self) -> Site:
        return self.server.site

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def do_GET(self) -> None:
        self.answer("GET")

    def do_POST(self) -> None:
        self.answer("POST")

    def answer(self, method: str) -> None:
        """The row, its checks, the body and the handler; whatever one of them raises is answered as a refusal."""
        route, params = routes.find(self.site.rows(self.path), method, self.path)
        scope = route.scope if route else routes.KEY  # a path no row answers is checked as a gateway key's
        try:
            self.checked(method, scope)
            reply = self.turned_away(scope) or self.dispatched(method, route, params)
        except exchange.CLIENT_GONE:
            raise
        except Exception as exc:
            reply = self.refusal_reply(errors.planned(exc))
        self.send(reply)

    def checked(self, method: str, scope: str) -> None:
        """WRITE-1..6 for a POST, before a byte of its body is read (the gateway's body cap on a gateway route,
        the port's elsewhere); HOST-1..4 for a GET on any route but an open one (OPEN-1)."""
        if method == "POST":
            gateway = routes.is_gateway_route(self.path)
            problem = guard.write_problem(self.headers, self.port, gateway, guard.GATEWAY_CAP if gateway else
                                          self.site.cap)
            if problem:
                raise errors.Refused(*problem)
        elif scope != routes.OPEN:
            host = guard.host_problem(self.headers, self.port)
            if host:
                raise errors.Refused(403, host)

    def turned_away(self, scope: str) -> exchange.Reply | None:
        """Who is calling, as the scope asks (GW-2, AUTH-4): None once known (`who` set), a stranger's page
        sent to /login, any other refusal raised."""
        if scope in (routes.OPEN, routes.HOST):
            return None
        if scope == routes.KEY:
            who, refusal = guard.identify(self.headers, self.path)
        else:
            who, refusal = guard.dashboard_caller(self.headers, self.address(), self.port)
        if refusal and scope == routes.PAGE and refusal[0] == 401:
            return exchange.empty_reply(303, {"Location": "/login"})
        if refusal:
            raise errors.Refused(*refusal)
        self.who = who or "-"
        return None

    def dispatched(self, method: str, route: routes.Route | None, params: dict[str, str]) -> exchange.Reply:
        """The body, then the route's handler; a path no row answers is refused (GW-1..3)."""
        body = self.body(route) if method == "POST" else None
        if route is None or route.handler is None:
            raise self.unrouted(method)
        request = exchange.Request(method, self.path, route, params, self.headers, self.who, self.port,
                                   str(self.server.server_address[0]), self.address(), body)
        reply: exchange.Reply = route.handler(request)
        return reply

    def body(self, route: routes.Route | None) -> Any:
        """GW-3 step 4, RESP-4: exactly Content-Length bytes (the write checks made it a number); the bytes on a
        `raw` row, else the JSON object; a gateway route's too deep, or holding text no seat can take, is a 400
        (issue 21)."""
        length = guard.content_length(self.headers)
        raw = self.read_body(length if isinstance(length, int) else 0)
        if route is not None and route.raw:
            return raw
        body = exchange.json_body(raw)
        problem = "" if self.site.own(self.path) else wire.body_problem(raw, body)
        if problem:
            raise errors.Invalid(problem)
        return body

    def unrouted(self, method: str) -> errors.Refusal:
        """405 with `Allow` when rows of other methods answer the path, else 404 naming the routes to try."""
        rows = self.site.rows(self.path)
        allow = routes.allowed(rows, self.path)
        if allow:
            return errors.Refused(405, f"{self.command} is not allowed on {routes.normalized(self.path)}; use "
                                       f"{routes.spoken(allow)}", {"Allow": ", ".join(allow)})
        return errors.NotFound(f"no such route; try {routes.help_text(rows, method)}")

    def do_OPTIONS(self) -> None:
        """CORS-4/5: a preflight on a gateway route from an allowed origin is a 204; refusals speak chat."""
        if not routes.is_gateway_route(self.path):
            return self.send_error(501, "Unsupported method ('OPTIONS')")
        problem = guard.host_problem(self.headers, self.port)
        if not problem and not guard.origin_allowed(self.headers, self.port):
            origin = (self.headers.get("Origin") or "").strip()
            shown = repr(origin) if origin else "'(none)'"
            problem = f"Origin {shown} is not allowed; set BENCH_ALLOWED_ORIGINS or BENCHWARMERS_PUBLIC_URL to add one"
        if problem:
            return self.send(self.refusal_reply(errors.Refused(403, problem)))
        self.send(exchange.empty_reply(204, guard.preflight_headers(self.headers)))

    # -- answering -----------------------------------------------------------

    def refusal_reply(self, exc: errors.Refusal) -> exchange.Reply:
        """ERR-1, ERR-2: a refusal in its path's shape: this port's own outside the gateway's routes, else the
        route's format, chosen from the path alone (FMT-3; chat for OPTIONS)."""
        if self.site.refusal is not None and self.site.own(self.path or ""):
            payload = self.site.refusal(exc)
        else:
            fmt = "chat" if self.command == "OPTIONS" else routes.format_of(self.path or "")
            payload = wire.error_body(fmt, exc.status, exc.message)
        return exchange.json_reply(exc.status, keys.hide_all(payload), exc.reply_headers())

    def send(self, reply: exchange.Reply) -> None:
        """The reply with this port's headers; a streamed one is written while the connection is held."""
        if reply.who is not None:
            self.who = reply.who
        try:
            self.send_response(reply.status)
            content_type = self.site.json_type if reply.json else reply.content_type
            if content_type:
                self.send_header("Content-Type", content_type)
            if reply.stream is None and reply.status != 204:  # a 204 says no length (RFC 9110 §8.6)
                self.send_header("Content-Length", str(len(reply.body)))
            cache = self.site.json_cache if reply.json else reply.cache
            if cache:
                self.send_header("Cache-Control", cache)
            for header, value in reply.headers.items():
                self.send_header(header, value)
            if self.site.cors or routes.is_gateway_route(self.path or ""):
                self.send_cors()
            self.end_headers()
            if reply.stream is not None:
                reply.stream(self.wfile.write)
            else:
                self.wfile.write(reply.body)
        except exchange.CLIENT_GONE:
            pass

    def send_cors(self) -> None:
        for header, value in guard.cors_headers(self.headers, self.port).items():
            self.send_header(header, value)

    def send_response(self, code: int, message: str | None = None) -> None:
        """The version goes to a caller this port knows (`local`, `admin`, a key), never to a stranger."""
        super().send_response(code, message)
        if self.who != "-" and self.site.version:
            self.send_header("X-Benchwarmers-Version", self.site.version)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if self.site.logs():
            super().log_request(code, size)

    def log_message(self, format: str, *args: Any) -> None:
        if self.site.diagnostics:
            super().log_message(format, *args)


class Server(httpserver.Server):
    """The shared server (deadlines, connection cap, head limits) answering `site`'s routes."""

    def __init__(self, address: tuple[str, int], site: Site) -> None:
        self.site = site
        super().__init__(address, Handler)
