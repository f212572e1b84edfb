"""The dashboard on 127.0.0.1:8122 (`BENCH_PORT`): the bench in a browser, and the gateway on the same port
(dashboard.md §1-4, §11; security.md §3-8, §13-14).

    python serve.py            serve the data folder
    python serve.py --demo     the dashboard and the gateway on a throwaway demo bench (local upstream)

The handler extends the gateway's: its route table is the gateway's with the dashboard's rows added
(`routes.extend`), and any gateway route (ROUTE-1) is handed to the gateway's own methods, so every
gateway rule (key auth, Host check against this port, CORS, its body cap, its error shapes) holds here
too. Everything else is a dashboard route, in the order RT-4 (GET) and RT-5 (POST) give: /health, Host,
/login, login, the route, else the page (GET) or 404 `unknown endpoint` (POST).

Decisions where the spec leaves room, or where an improvement changes it:
- SRV-4's release is `metrics.__version__` (this checkout has no VERSION file), with `-<branch>` off main.
- `X-Benchwarmers-Version` goes on every reply to an identified caller (`local`, `admin`, a key), not to a
  stranger refused before (security improvement 19 over SRV-5), like the `Server` header.
- GET JSON routes tolerate a query string (IMP-3); POST routes match the raw path exactly (RT-6), and an
  unknown `/api/` GET still answers the page, which older CLIs rely on.
- `POST /logout` (security improvement 8) answers the cleared cookie; it passes the write checks and
  needs no login, since signing out can hurt no one.
- The page is one document: the shell, the theme tokens, `ui/bench.css` and `ui/bench.js` inlined, and
  `window.BENCH`; the script draws the tables from that JSON and from the APIs (one request per page load).
- No fonts are shipped (OFF-2 allows none: the CSS fallback stacks apply), so `/fonts/<file>` is 404;
  `/ui/<file>` serves the two named page files.
- Every page's routes are here (`admin.endpointedit`, `admin.onboarding`, `dashboard.discover`,
  `admin.connect`, `admin.hubadd`, `dashboard.quotaview` ...); `GET /api/discover` (Discover's rows) is our
  addition to the API index.
- Benchmarks has no route: its data is `charts-data`, embedded in the page once (BM-1).
- The Connect callback's page links back to the public URL when set, else `http://localhost:<port>/`.
"""

import argparse
import dataclasses
import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse

from ..server import gateway
from .. import __version__
from ..core import changes, paths, themes
from ..wire import routes
from ..models import endpoints, registry
from ..calling import client
from ..panel import collections, leaderboard, panel
from ..server import guard
from ..admin import collectionedit, connect, endpointedit, hubadd, jobs, modeledit, modelfacts, onboarding, scheduler, settingsedit
from . import benchmarks, benchview, discover, gatewaycard, quotaview

UI = paths.CODE / "ui"
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
ADMIN = "admin"  # the route's scope: the admin login when it is on (AUTH-4)
STATIC = {"bench.css": "text/css; charset=utf-8", "bench.js": "text/javascript; charset=utf-8"}
FAVICON = ("data:image/svg+xml," + urllib.parse.quote(
    "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><rect x='3' y='12' width='26' height='5' "
    "rx='1' fill='{seat}'/><rect x='6' y='17' width='3' height='11' fill='#4c4136'/><rect x='23' y='17' "
    "width='3' height='11' fill='#4c4136'/><rect x='6' y='23' width='20' height='2' fill='#4c4136'/></svg>"))


def page_script():
    """`ui/bench.js`, then each page's own file in `ui/pages/` by name: one page's code is one file, drawn with
    the helpers bench.js lends it as `window.Bench`."""
    files = [UI / "bench.js"] + sorted((UI / "pages").glob("*.js"))
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


def script_json(value):
    """JSON to inline in a `<script>` (SHELL-9): `</` written `<\\/` so no string ends the script, and `<!--`
    written `\\u003c!--` so none opens the script-data escape state that a later `<script` would turn into a
    trap. Both are the same JSON."""
    return json.dumps(value).replace("</", "<\\/").replace("<!--", "\\u003c!--")


@dataclasses.dataclass(frozen=True)
class Page(routes.Route):
    """A dashboard row: never a gateway route, the admin login as its credential, matched on the raw path."""

    gateway: bool = False
    scope: str = ADMIN
    listed: bool = False
    query: bool = False  # RT-6: answers only with a query string; without one the path is the page

    def answers(self, raw):
        path, mark, _ = raw.partition("?")
        if self.method == "POST":
            return raw == self.path
        if self.path.endswith("/"):  # a folder of named files: the rest of the raw path is the name
            return raw.startswith(self.path)
        return path == self.path and (bool(mark) or not self.query)


DASHBOARD = (
    Page("GET", "/api/stamp", "api_stamp"),
    Page("GET", "/api/status", "api_status"),
    Page("GET", "/api/models", "api_models"),
    Page("GET", "/api/gateway-keys", "api_keys"),
    Page("GET", "/api/collections", "api_collections"),
    Page("GET", "/api/gateway-card", "api_card"),
    Page("GET", "/api/logs", "api_logs"),
    Page("GET", "/api/settings", "api_settings"),
    Page("GET", "/api/gateway-seat", "api_seat", query=True),
    Page("GET", "/api/endpoints", "api_endpoints"),
    Page("GET", "/api/connections", "api_connections"),
    Page("GET", "/api/connect", "api_connect"),
    Page("GET", "/api/candidates", "api_candidates"),
    Page("GET", "/api/onboard-queue", "api_queue"),
    Page("GET", "/api/onboard", "api_onboard_log", query=True),
    Page("GET", "/api/leaderboard", "api_leaderboard", query=True),
    Page("GET", "/api/discover", "api_discover"),
    Page("GET", "/api/discover-model", "api_discover_model", query=True),
    Page("GET", "/api/quotas", "api_quotas"),
    Page("GET", "/ui/", "static"),
    Page("GET", "/fonts/", "static"),
    Page("POST", "/api/model", "write", writes=True),
    Page("POST", "/api/remove", "write", writes=True),
    Page("POST", "/api/restore", "write", writes=True),
    Page("POST", "/api/retry", "write", writes=True),
    Page("POST", "/api/model-facts", "write", writes=True),
    Page("POST", "/api/model-options", "write", writes=True),
    Page("POST", "/api/collection", "write", writes=True),
    Page("POST", "/api/collection/remove", "write", writes=True),
    Page("POST", "/api/gateway-settings", "write", writes=True),
    Page("POST", "/api/verdict", "write", writes=True),
    Page("POST", "/api/gateway-key", "write", writes=True),
    Page("POST", "/api/gateway-key/remove", "write", writes=True),
    Page("POST", "/api/client", "write", writes=True),
    Page("POST", "/api/theme", "write", writes=True),
    Page("POST", "/api/scheduler", "write", writes=True),
    Page("POST", "/api/own-client-free", "write", writes=True),
    Page("POST", "/api/endpoint", "write", writes=True),
    Page("POST", "/api/endpoint/remove", "write", writes=True),
    Page("POST", "/api/endpoint/default", "write", writes=True),
    Page("POST", "/api/connection-limits", "write", writes=True),
    Page("POST", "/api/dismiss", "write", writes=True),
    Page("POST", "/api/onboard", "write", writes=True),
    Page("POST", "/api/onboard-queue", "write", writes=True),
    Page("POST", "/api/onboard-queue/stop", "write", writes=True),
    Page("POST", "/api/onboard-queue/clear", "write", writes=True),
    Page("POST", "/api/connect/start", "write", writes=True),
    Page("POST", "/api/connect/poll", "write", writes=True),
    Page("POST", "/api/connect/app", "write", writes=True),
    Page("POST", "/api/discover/add", "write", writes=True),
)
WRITES = {
    "/api/model": modeledit.change, "/api/remove": modeledit.remove, "/api/restore": modeledit.restore,
    "/api/retry": modeledit.retry, "/api/model-facts": modelfacts.save_facts,
    "/api/model-options": modelfacts.save_options, "/api/collection": collectionedit.save,
    "/api/collection/remove": collectionedit.remove, "/api/gateway-settings": collectionedit.gateway_settings,
    "/api/verdict": lambda body, who: gatewaycard.verdict(body), "/api/gateway-key": settingsedit.make_key,
    "/api/gateway-key/remove": settingsedit.revoke_key, "/api/client": settingsedit.choose_client,
    "/api/theme": settingsedit.choose_theme, "/api/scheduler": jobs.save,
    "/api/own-client-free": settingsedit.save_own_client, "/api/endpoint": endpointedit.save,
    "/api/endpoint/remove": endpointedit.remove, "/api/endpoint/default": endpointedit.make_default,
    "/api/connection-limits": endpointedit.save_limits, "/api/dismiss": onboarding.dismiss,
    "/api/onboard": onboarding.onboard_now, "/api/onboard-queue": lambda body, who: onboarding.queue().add(body, who),
    "/api/onboard-queue/stop": lambda body, who: onboarding.queue().stop(),
    "/api/onboard-queue/clear": lambda body, who: onboarding.queue().clear(),
    "/api/connect/poll": connect.poll, "/api/connect/app": connect.app, "/api/discover/add": hubadd.add,
}
# writes that need the port this dashboard listens on (a sign-in's redirect comes back to it)
PORTED = {"/api/connect/start": connect.start}


def _git(*args):
    try:
        done = subprocess.run(["git", *args], cwd=UI.parent, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def version():
    """SRV-4: `(release, date, commit)`; the release gains `-<branch>` off main; date/commit "unknown" without git."""
    release = __version__ or "0.0.0"
    branch = _git("rev-parse", "--abbrev-ref", "HEAD")
    if branch and branch not in ("main", "HEAD"):
        release += "-" + "".join(c if c.isalnum() or c == "." else "-" for c in branch)
    date, _, commit = _git("log", "-1", "--format=%cs %h").partition(" ")
    return release, date or "unknown", commit or "unknown"


VERSION = version()


def version_header():
    release, date, _ = VERSION
    return release if date == "unknown" else f"{release} {date}"


class Handler(gateway.Handler):
    """The gateway's handler with the dashboard's rows: gateway routes go to the gateway's methods."""

    route_table = routes.extend(routes.ROUTES, *DASHBOARD)

    # -- the order a request meets -----------------------------------------------------

    def do_GET(self):
        """RT-4."""
        if routes.is_gateway_route(self.path):
            return super().do_GET()
        self.parse("GET")
        if self.route and self.route.scope == routes.OPEN:  # /health, before any Host check (RT-4 step 1)
            return getattr(self, self.route.handler)(**self.arguments)
        path = self.path.split("?", 1)[0]
        problem = guard.host_problem(self.headers, self.port)
        if problem:
            return self.deny(403, problem)
        if path == "/login":
            return self.login_page()
        if self.path.startswith((connect.CALLBACK + "?", connect.CALLBACK + "/")):
            return self.connect_callback()  # RT-4 step 4 / OPEN-3: no login; the single-use state is the secret
        if not self.signed_in(page=not path.startswith("/api/")):
            return
        route = self.dashboard_route("GET")
        try:
            if route is None:
                return self.page()
            getattr(self, route.handler)()
        except RuntimeError as exc:  # API-4 / IMP-3: an unreadable endpoints.json is said, never a dropped connection
            self.answer(400, {"ok": False, "errors": [str(exc)]})
        except gateway.CLIENT_GONE:
            pass
        except Exception as exc:  # IMP-3: a file a person edited by hand that no reader expected is said, not a blank page
            self.answer(500, {"ok": False, "errors": [f"the dashboard could not read its data ({type(exc).__name__}: "
                                                      f"{exc}); a file under config/ may hold a value of the wrong type"]})

    def do_POST(self):
        """RT-5: gateway, /login, the write checks, the login, the route, the body, the operation."""
        if routes.is_gateway_route(self.path):
            return super().do_POST()
        problem = guard.write_problem(self.headers, self.port, False, guard.DASHBOARD_CAP)
        if problem:
            return self.deny(*problem)
        if self.path in ("/login", "/logout"):
            return self.login() if self.path == "/login" else self.logout()
        if not self.signed_in(page=False):
            return
        route = self.dashboard_route("POST")
        if route is None:
            return self.deny(404, "unknown endpoint")
        body, problem = self.body()
        if problem:
            return self.answer(400, {"ok": False, "errors": [f"bad request: {problem}"], "changed": [], "sync": ""})
        try:
            if route.path in PORTED:
                result = PORTED[route.path](body, changes.by(self.who), self.port)
            else:
                result = WRITES[route.path](body, changes.by(self.who))
        except (ValueError, TypeError) as exc:
            result = {"ok": False, "errors": [f"bad request: {exc}"], "changed": [], "sync": ""}
        except RuntimeError as exc:  # RESP-3: the endpoints layer's "no endpoints configured" and the like
            result = {"ok": False, "errors": [str(exc)]}
        except OSError as exc:  # the data folder refused the write: said (507/503), never a dropped connection
            if isinstance(exc, gateway.CLIENT_GONE):
                return
            return self.deny(*paths.unwritable(exc)[:2])
        self.answer(200 if result.get("ok") else 400, result)

    def dashboard_route(self, method):
        return next((r for r in self.route_table if isinstance(r, Page) and r.method == method
                     and r.answers(self.path)), None)

    def signed_in(self, page):
        """AUTH-4 / ADM-6, ADM-7: sets `self.who`, or refuses (303 to /login for a page, else 401 JSON)."""
        who, refusal = guard.dashboard_caller(self.headers, self.address())
        if who:
            self.who = who
            return True
        if page and refusal[0] == 401:
            self.redirect("/login")
        else:
            self.deny(*refusal)
        return False

    def body(self):
        """RESP-3/4, IMP-2: `(object, "")`, or `(None, why)`; an empty body is `{}`."""
        raw = self.read_body(guard.content_length(self.headers))
        if not raw.strip():
            return {}, ""
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            return None, str(exc)[:200]
        if not isinstance(body, dict):
            return None, "body must be a JSON object"
        return body, ""

    # -- login (AUTH-5..7) ------------------------------------------------------------

    def login_page(self):
        if not guard.admin_token():
            return self.redirect("/")
        self.who = "-"
        text = (UI / "login.html").read_text(encoding="utf-8")
        self.send_html(200, text.replace("{{favicon}}", self.favicon(themes.saved())))

    def login(self):
        body, problem = self.body()
        status, message, headers = guard.login(None if problem else body, self.address())
        if status == 200:
            self.who = "admin"
            return self.answer(200, {"ok": True, "errors": []}, headers)
        self.deny(status, message, {k: v for k, v in headers.items() if k == "Retry-After"})

    def logout(self):
        self.read_body(guard.content_length(self.headers))
        self.answer(200, {"ok": True, "errors": []}, {"Set-Cookie": guard.logout_cookie()})

    # -- GET routes ---------------------------------------------------------------

    def api_stamp(self):
        self.answer(200, {"stamp": benchview.stamp()})

    def api_status(self):
        self.answer(200, {**benchview.status_api(self.port, VERSION[0]), "onboarding": onboarding.queue().summary()})

    def api_models(self):
        self.answer(200, benchview.models_api())

    def api_keys(self):
        endpoints.load()  # API-4: an unreadable endpoints.json is said here too
        self.answer(200, benchview.keys_api())

    def api_collections(self):
        self.answer(200, collectionedit.view())

    def api_card(self):
        self.answer(200, {"ok": True, "errors": [], "gateway": benchview.gateway_url(self.port),
                          **gatewaycard.card()})

    def api_logs(self):
        self.answer(200, {"ok": True, "errors": [], **benchview.logs()})

    def api_settings(self):
        """What Settings and Info show: themes, keys, the client, server and access, the version; never a secret."""
        backend, chosen_by = client.chosen()
        gateway_port = guard.port_setting("BENCH_GATEWAY_PORT", 8123)
        release, date, commit = VERSION
        folder, reason = paths.located()
        self.answer(200, {
            "ok": True, "errors": [], "theme": themes.saved(),
            "themes": [{"name": n, "label": themes.label(n), "swatch": themes.swatch(n)} for n in themes.names()],
            "keys": benchview.keys_api(), "auth": bool(guard.admin_token()),
            "client": {"client": backend, "by": chosen_by, "pinned": bool(os.environ.get("BENCH_CLIENT", "").strip()),
                       "llm": bool(shutil.which("llm"))},
            "access": benchview.access(self.port, gateway_port),
            "info": {"version": release, "date": date, "commit": commit,
                     "python": f"{sys.version.split()[0]} · {sys.executable}", "folder": str(paths.CODE),
                     "data": f"{folder} ({reason})", "endpoints": len(endpoints.readable()),
                     "models": len(registry.registrations()), "scheduler": jobs.state()[0],
                     "client": backend, "theme": themes.saved()},
            "gateway": benchview.gateway_url(self.port), "collections": sorted(collections.load()),
            "scheduler": jobs.table(), "own_client": settingsedit.own_client()})

    def api_seat(self):
        query = urllib.parse.parse_qs(self.path.partition("?")[2])
        call = (query.get("call") or [""])[0]
        found = gatewaycard.seat(call)
        if found is None:
            return self.answer(404, {"ok": False, "errors": [f"no gateway seat with call id '{call}'"]})
        self.answer(200, found)

    def api_endpoints(self):
        self.answer(200, endpointedit.view())

    def api_connections(self):
        self.answer(200, endpointedit.connections_view())

    def api_connect(self):
        self.answer(200, connect.view())

    def connect_callback(self):
        """CN-8: finish the sign-in, save it, answer a small page; any failure is said on the page."""
        self.who = "-"
        try:
            result = connect.callback(self.path)
        except Exception as exc:
            result = {"ok": False, "errors": [f"could not save it ({type(exc).__name__}: {exc})"]}
        home = guard.public()[1] or f"http://localhost:{self.port}"
        data = connect.page(result, home + "/").encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(data)

    def api_candidates(self):
        """OB-6..10: `ok: false` with no endpoint or nothing reachable, still a 200 (the page says why)."""
        self.answer(200, onboarding.candidates())

    def api_queue(self):
        self.answer(200, onboarding.queue().state())

    def api_onboard_log(self):
        query = urllib.parse.parse_qs(self.path.partition("?")[2])
        self.answer(200, onboarding.log_view((query.get("log") or [""])[0]))

    def api_leaderboard(self):
        """At a glance's leaderboard (issue 20): `/bench/leaderboard`'s board for the signed-in admin, who sees
        every collection; `&format=csv` is the panel's download link."""
        query = urllib.parse.parse_qs(self.path.partition("?")[2])
        collection, shape, fmt = ((query.get(k) or [""])[0] for k in ("collection", "shape", "format"))
        fmt = fmt or "json"
        refused = leaderboard.problem("/api/leaderboard", collection, shape, fmt)
        if refused:
            return self.answer(400, {"ok": False, "errors": [refused]})
        answer = leaderboard.board(leaderboard.named(collection), shape)
        if fmt == "csv":
            return self.send_text(200, leaderboard.csv_text(answer), "text/csv; charset=utf-8",
                                  {"Content-Disposition": f'attachment; filename="{leaderboard.filename(answer)}"'})
        self.answer(200, {"ok": True, "errors": [], **answer})

    def api_discover(self):
        """Discover's rows (DS-1, DS-2; our addition), from the cached feeds only: never a network call."""
        self.answer(200, discover.page())

    def api_discover_model(self):
        """DS-3: one row's routes; 404 when Discover has no such row."""
        query = urllib.parse.parse_qs(self.path.partition("?")[2])
        self.answer(*discover.model((query.get("provider") or [""])[0], (query.get("model") or [""])[0]))

    def api_quotas(self):
        """The Quotas page (QT-1..5) and the token cost per model."""
        self.answer(200, quotaview.view())

    def static(self):
        """TH-8: only named files; anything else (another name, a query, a path) is 404."""
        folder, _, name = self.path.partition("/")[2].partition("/")
        if folder != "ui" or name not in STATIC:
            return self.answer(404, {"ok": False, "errors": ["no such file"]})
        data = (UI / name).read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", STATIC[name])
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "max-age=86400")
        self.end_headers()
        self.wfile.write(data)

    # -- the page -----------------------------------------------------------------

    def favicon(self, theme):
        return FAVICON.replace("%7Bseat%7D", urllib.parse.quote(themes.merged(theme).get("brand", "#990000")))

    def page(self):
        """SHELL-1, RESP-5: one document; an unreadable endpoints.json gets a one-paragraph page instead."""
        try:
            endpoints.load()
        except RuntimeError as exc:
            return self.send_html(200, f"<!doctype html><p>{html.escape(str(exc))}. Fix it by hand; nothing was "
                                       "written over it.</p>")
        preview = urllib.parse.parse_qs(self.path.partition("?")[2]).get("theme", [""])[0]
        theme = themes.in_use(preview)
        bench = script_json({**benchview.bench_json(), "theme": theme, "auth": bool(guard.admin_token()),
                             "gateway": benchview.gateway_url(self.port)})
        parts = {"theme": theme, "favicon": self.favicon(theme), "tokens": themes.css(),
                 "style": (UI / "bench.css").read_text(encoding="utf-8"), "bench": bench,
                 "script": page_script(),
                 "charts": script_json(benchmarks.charts_data())}
        text = (UI / "index.html").read_text(encoding="utf-8")
        # one pass over the template: a `{{script}}` inside the data (a retire reason, say) stays text
        self.send_html(200, PLACEHOLDER.sub(lambda m: parts.get(m.group(1), m.group(0)), text))

    # -- answering ----------------------------------------------------------------

    def send_response(self, code, message=None):
        super().send_response(code, message)
        if self.who != "-":
            self.send_header("X-Benchwarmers-Version", version_header())

    def send_json(self, status, payload, headers=None):
        """RESP-2 on every JSON reply from this port, gateway routes' included (RT-2)."""
        data = json.dumps(payload).encode("ascii")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            for header, value in (headers or {}).items():
                self.send_header(header, value)
            if routes.is_gateway_route(self.path or ""):
                self.send_cors()  # CORS on gateway routes only
            self.end_headers()
            self.wfile.write(data)
        except gateway.CLIENT_GONE:
            pass

    answer = send_json

    def deny(self, status, message, headers=None):
        """ERR-2: a dashboard refusal."""
        self.send_json(status, {"ok": False, "errors": [message]}, headers)

    def send_html(self, status, text):
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def redirect(self, where):
        self.send_response(303)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_request(self, code="-", size="-"):
        """LOG-4: the dashboard port logs only when login is on."""
        if guard.admin_token():
            super().log_request(code, size)

    def log_message(self, format, *args):
        """LOG-5: the dashboard keeps the server's diagnostic lines to itself."""


def serve(host="127.0.0.1", port=0):
    """A dashboard on a thread (tests, the benchmarks): returns the server; `server.shutdown()` stops it."""
    server = gateway.Server((host, port), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="dashboard",
                     daemon=True).start()
    return server


def banner(address, port):
    """SRV-1 / START-5: never a secret."""
    shown = "localhost" if address == "127.0.0.1" else address
    return f"Benchwarmers on http://{shown}:{port}" + ("  (login on)" if guard.admin_token() else "") + \
        "  (ctrl-c to stop)"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Benchwarmers dashboard (and the gateway on the same port)")
    parser.add_argument("--demo", action="store_true", help="serve a throwaway demo bench on the local upstream")
    parser.add_argument("--port", type=int, default=None, help="port (default BENCH_PORT or 8122)")
    args = parser.parse_args(argv)
    address, port, upstream = gateway.starting(args.port, "BENCH_PORT", 8122, args.demo)
    paths.data()  # SRV-1: the data folder's layout, made at start
    server = gateway.listen(address, port, Handler, "BENCH_PORT", upstream)
    gateway.stop_on_signals(server)
    scheduler.start()  # §4: the recurring jobs run inside the dashboard; one loop per data folder (SCH-7)
    onboarding.queue()  # IMP-7: a batch the last server left queued or running carries on
    # the first panel and the Gateway card's first read (the offload index) pay no one-off cost
    threading.Thread(target=panel.warm_up, name="warm-up", daemon=True).start()
    print(banner(address, server.server_address[1]), flush=True)
    if args.demo:
        from ..demo import demo
        print(demo.snippets(benchview.gateway_url(server.server_address[1])), flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        gateway.drain(server, collections.settings().stop_grace)
        if upstream:
            from ..demo import demo
            demo.stop_demo(upstream)


if __name__ == "__main__":
    main()
