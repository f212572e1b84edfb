"""The dashboard on 127.0.0.1:8122 (`BENCH_PORT`): the bench in a browser, and the gateway on the same port
(dashboard.md §1-4, §11; security.md §3-8, §13-14).

    python serve.py            serve the data folder
    python serve.py --demo     the dashboard and the gateway on a throwaway demo bench (local upstream)

The dashboard is a `server.routing.Site`: the gateway's table with the dashboard's rows added
(`routes.extend(gateway.ROUTES, *ROWS)`), answered by the one request handler both ports run. A gateway
route (ROUTE-1) goes to the gateway's rows, so every gateway rule (key auth, Host check against this
port, CORS, its body cap, its error shapes) holds here too; any other path goes to the rows below, in the
order RT-4 (GET) and RT-5 (POST) give: /health, Host, /login, login, the route, else the page (GET) or
404 `unknown endpoint` (POST). Each row names its handler, a function from the request to its reply; a
write of the bench is its `admin` module's operation (`operation`), which returns its result or raises
its refusal (`core.errors`), said as `{"ok": false, "errors": [...]}` (`Refusal.body`).

Decisions where the spec leaves room, or where an improvement changes it:
- SRV-4's release is `metrics.__version__` (this checkout has no VERSION file), with `-<branch>` off main.
- `X-Benchwarmers-Version` goes on every reply to an identified caller (`local`, `admin`, a key), not to a
  stranger refused before (security improvement 19 over SRV-5), like the `Server` header.
- GET JSON routes tolerate a query string (IMP-3); POST routes match the raw path exactly (RT-6), and an
  unknown `/api/` GET still answers the page, which older CLIs rely on.
- `POST /logout` (security improvement 8) answers the cleared cookie; it passes the write checks and
  needs no login. Signed in, it also ends every session issued before it (issue 29 item 5, `guard.logout`);
  a stranger's clears only its own cookie.
- A refusal keeps the status its class names (RESP-3: a refused write is a 400); an exception nobody planned
  for is a 500 naming the id its traceback is logged under (IMP-3 asked for a reply, not a dropped connection).
- The page is one document: the shell, the theme tokens, `ui/bench.css` and `ui/bench.js` inlined, and
  `window.BENCH`; the script draws the tables from that JSON and from the APIs (one request per page load).
- No fonts are shipped (OFF-2 allows none: the CSS fallback stacks apply), so `/fonts/<file>` is 404;
  `/ui/<file>` serves the two named page files.
- Every page's routes are here (`admin.endpointedit`, `admin.onboarding`, `dashboard.discover`,
  `admin.connect`, `admin.hubadd`, `dashboard.quotaview` ...); `GET /api/discover` (Discover's rows) is our
  addition to the API index.
- Benchmarks has no route: its data is `charts-data`, embedded in the page once (BM-1).
- The Connect callback's page links back to the public URL when set, else `http://localhost:<port>/`.
- Each row's `doc` is what this port's `/openapi.json` says of it (OAS-1, `server.openapi`): a write's body is
  described as a JSON object, its fields checked (and named in its refusal) by its `admin` operation.
"""

import argparse
import dataclasses
import html
import json
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, NoReturn

from .. import __version__
from ..core import changes, errors, paths, settings, themes
from ..wire import routes, schemas
from ..models import endpoints, registry
from ..calling import client
from ..panel import collections, leaderboard, panel, peers
from ..store import store
from ..server import exchange, gateway, guard, openapi, routing
from ..server.exchange import Reply, Request, json_reply
from ..admin import (collectionedit, connect, endpointedit, hubadd, jobs, modeledit, modelfacts, onboarding,
                     scheduler, settingsedit)
from . import benchmarks, benchview, discover, gatewaycard, quotaview, review

UI = paths.CODE / "ui"
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
SCRIPT = "text/javascript; charset=utf-8"
VENDOR = ("vendor/marked.umd.js", "vendor/purify.min.js")  # ui/vendor/README.md: what they are, whence, which version
STATIC = {"bench.css": "text/css; charset=utf-8", "bench.js": SCRIPT, **dict.fromkeys(VENDOR, SCRIPT)}
FAVICON = ("data:image/svg+xml," + urllib.parse.quote(
    "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><rect x='3' y='12' width='26' height='5' "
    "rx='1' fill='{seat}'/><rect x='6' y='17' width='3' height='11' fill='#4c4136'/><rect x='23' y='17' "
    "width='3' height='11' fill='#4c4136'/><rect x='6' y='23' width='20' height='2' fill='#4c4136'/></svg>"))

Operation = Callable[[dict[str, Any], str], dict[str, Any]]


def page_script() -> str:
    """`ui/bench.js`, then each page's own file in `ui/pages/` by name: one page's code is one file, drawn with
    the helpers bench.js lends it as `window.Bench`."""
    files = [UI / "bench.js"] + sorted((UI / "pages").glob("*.js"))
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


def page_style() -> str:
    """`ui/bench.css`, then each page's own styles in `ui/pages/` by name (the Review page's), as page_script."""
    files = [UI / "bench.css"] + sorted((UI / "pages").glob("*.css"))
    return "\n".join(f.read_text(encoding="utf-8") for f in files)


def script_json(value: Any) -> str:
    """JSON to inline in a `<script>` (SHELL-9): `</` written `<\\/` so no string ends the script, and `<!--`
    written `\\u003c!--` so none opens the script-data escape state that a later `<script` would turn into a
    trap. Both are the same JSON."""
    return json.dumps(value).replace("</", "<\\/").replace("<!--", "\\u003c!--")


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=UI.parent, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def version() -> tuple[str, str, str]:
    """SRV-4: `(release, date, commit)`; the release gains `-<branch>` off main; date/commit "unknown" without git."""
    release = __version__ or "0.0.0"
    branch = _git("rev-parse", "--abbrev-ref", "HEAD")
    if branch and branch not in ("main", "HEAD"):
        release += "-" + "".join(c if c.isalnum() or c == "." else "-" for c in branch)
    date, _, commit = _git("log", "-1", "--format=%cs %h").partition(" ")
    return release, date or "unknown", commit or "unknown"


VERSION = version()


def version_header() -> str:
    release, date, _ = VERSION
    return release if date == "unknown" else f"{release} {date}"


def favicon(theme: str) -> str:
    return FAVICON.replace("%7Bseat%7D", urllib.parse.quote(themes.merged(theme).get("brand", "#990000")))


def redirect(where: str) -> Reply:
    return exchange.empty_reply(303, {"Location": where})


def operation(change: Operation) -> routes.Handler:
    """A write of the bench (RESP-3): `change(body, who)` returns its result (the 200) or raises its refusal."""
    def answer(request: Request) -> Reply:
        return json_reply(200, change(request.body, changes.by(request.who)))

    answer.__qualname__ = answer.__name__ = change.__name__
    return answer


# -- login (AUTH-5..7) ------------------------------------------------------------


def login_page(request: Request) -> Reply:
    if not guard.admin_token():
        return redirect("/")
    text = (UI / "login.html").read_text(encoding="utf-8")
    return exchange.html_reply(200, text.replace("{{favicon}}", favicon(themes.saved())))


def login(request: Request) -> Reply:
    """ADM-2: a body that is no JSON object is `send {"token": ...}`, as a wrong token's shape is."""
    try:
        body = exchange.json_body(request.body)
    except errors.BadBody:
        body = None
    status, message, headers = guard.login(body, request.address, request.port)
    if status != 200:
        raise errors.Refused(status, message, {k: v for k, v in headers.items() if k == "Retry-After"})
    return dataclasses.replace(json_reply(200, {"ok": True, "errors": []}, headers), who="admin")


def logout(request: Request) -> Reply:
    """Issue 29 item 5: a signed-in logout ends every session issued before it; a stranger's clears its cookie."""
    status, message, headers = guard.logout(request.headers, request.address, request.port)
    if status != 200:
        raise errors.Refused(status, message)
    return json_reply(200, {"ok": True, "errors": []}, headers)


# -- GET routes ---------------------------------------------------------------


def api_stamp(request: Request) -> Reply:
    return json_reply(200, {"stamp": benchview.stamp()})


def api_status(request: Request) -> Reply:
    return json_reply(200, {**benchview.status_api(request.port, VERSION[0]),
                            "onboarding": onboarding.queue().summary()})


def api_models(request: Request) -> Reply:
    return json_reply(200, benchview.models_api())


def api_keys(request: Request) -> Reply:
    endpoints.load()  # API-4: an unreadable endpoints.json is said here too
    return json_reply(200, benchview.keys_api())


def api_collections(request: Request) -> Reply:
    return json_reply(200, collectionedit.view())


def api_card(request: Request) -> Reply:
    return json_reply(200, {"ok": True, "errors": [], "gateway": benchview.gateway_url(request.port),
                            **gatewaycard.card()})


def api_logs(request: Request) -> Reply:
    return json_reply(200, {"ok": True, "errors": [], **benchview.logs()})


def api_settings(request: Request) -> Reply:
    """What Settings and Info show: themes, keys, the client, server and access, the version; never a secret."""
    backend, chosen_by = client.chosen()
    gateway_port = guard.port_setting("BENCH_GATEWAY_PORT")
    release, date, commit = VERSION
    folder, reason = paths.located()
    return json_reply(200, {
        "ok": True, "errors": [], "theme": themes.saved(),
        "themes": [{"name": n, "label": themes.label(n), "swatch": themes.swatch(n)} for n in themes.names()],
        "keys": benchview.keys_api(), "auth": bool(guard.admin_token()),
        "client": {"client": backend, "by": chosen_by, "pinned": bool(settings.env("BENCH_CLIENT").strip()),
                   "llm": bool(shutil.which("llm"))},
        "access": benchview.access(request.port, gateway_port),
        "info": {"version": release, "date": date, "commit": commit,
                 "python": f"{sys.version.split()[0]} · {sys.executable}", "folder": str(paths.CODE),
                 "data": f"{folder} ({reason})", "endpoints": len(endpoints.readable()),
                 "models": len(registry.registrations()), "scheduler": jobs.state()[0],
                 "client": backend, "theme": themes.saved(),
                 "openapi": f"{routes.OPENAPI.path}: this port's routes, OpenAPI 3.1 (`bench openapi`)"},
        "gateway": benchview.gateway_url(request.port), "collections": sorted(collections.load()),
        "scheduler": jobs.table(), "own_client": settingsedit.own_client()})


def api_seat(request: Request) -> Reply:
    call = request.arg("call")
    found = gatewaycard.seat(call)
    if found is None:
        raise errors.NotFound(f"no gateway seat with call id '{call}'")
    return json_reply(200, found)


def api_endpoints(request: Request) -> Reply:
    return json_reply(200, endpointedit.view())


def api_connections(request: Request) -> Reply:
    return json_reply(200, endpointedit.connections_view())


def api_connect(request: Request) -> Reply:
    return json_reply(200, connect.view())


def connect_callback(request: Request) -> Reply:
    """CN-8: finish the sign-in, save it, answer a small page; any failure is said on the page (a bug's id too)."""
    status = 200
    try:
        result = connect.callback(request.path)
    except Exception as exc:
        refusal = errors.planned(exc)
        result, status = refusal.body(), 500 if isinstance(refusal, errors.Bug) else 200
    home = guard.public()[1] or f"http://localhost:{request.port}"
    return exchange.html_reply(status, connect.page(result, home + "/"), {"Referrer-Policy": "no-referrer"})


def api_candidates(request: Request) -> Reply:
    """OB-6..10: with no endpoint or nothing reachable, the refusal is still a 200 (the page says why)."""
    return json_reply(200, onboarding.candidates())


def api_queue(request: Request) -> Reply:
    return json_reply(200, onboarding.queue().state())


def api_onboard_log(request: Request) -> Reply:
    return json_reply(200, onboarding.log_view(request.arg("log")))


def api_leaderboard(request: Request) -> Reply:
    """At a glance's leaderboard (issue 20): `/bench/leaderboard`'s board for the signed-in admin, who sees
    every collection; `&format=csv` is the panel's download link."""
    collection, shape, fmt, source = gateway.board_query(request)
    answer = peers.board(leaderboard.named(collection), shape, source)
    return gateway.board_reply(answer, fmt, lambda board: {"ok": True, "errors": [], **board})


def api_discover(request: Request) -> Reply:
    """Discover's rows (DS-1, DS-2; our addition), from the cached feeds only: never a network call."""
    return json_reply(200, discover.page())


def api_discover_model(request: Request) -> Reply:
    """DS-3: one row's routes; 404 when Discover has no such row."""
    return json_reply(200, discover.model(request.arg("provider"), request.arg("model")))


def api_quotas(request: Request) -> Reply:
    """The Quotas page (QT-1..5) and the token cost per model."""
    return json_reply(200, quotaview.view())


def api_review(request: Request) -> Reply:
    """REV-2, REV-3: the panels owing verdicts, filtered, in the order asked."""
    filters = {name: request.arg(name).strip() for name in review.FILTERS}
    return json_reply(200, review.queue(filters, request.arg("order") or "oldest"))


def api_review_panel(request: Request) -> Reply:
    """REV-4: one panel in full, judged or not."""
    return json_reply(200, review.panel(request.arg("panel")))


def static(request: Request) -> Reply:
    """TH-8: only named files (and the Review page's vendored scripts); anything else (another name, a query, a
    path) is 404."""
    folder, _, name = request.path.partition("/")[2].partition("/")
    if folder != "ui" or name not in STATIC:
        raise errors.NotFound("no such file")
    return Reply(200, (UI / name).read_bytes(), STATIC[name], cache="max-age=86400")


def page(request: Request) -> Reply:
    """SHELL-1, RESP-5: one document; an unreadable endpoints.json gets a one-paragraph page instead."""
    try:
        endpoints.load()
    except errors.Unusable as exc:
        return exchange.html_reply(200, f"<!doctype html><p>{html.escape(str(exc))}. Fix it by hand; nothing was "
                                        "written over it.</p>")
    theme = themes.in_use(request.arg("theme"))
    bench = script_json({**benchview.bench_json(), "theme": theme, "auth": bool(guard.admin_token()),
                         "keys": guard.keys_required(), "owed": review.owed(),
                         "gateway": benchview.gateway_url(request.port)})
    parts = {"theme": theme, "favicon": favicon(theme), "tokens": themes.css(),
             "style": page_style(), "bench": bench, "script": page_script(),
             "charts": script_json(benchmarks.charts_data())}
    text = (UI / "index.html").read_text(encoding="utf-8")
    # one pass over the template: a `{{script}}` inside the data (a retire reason, say) stays text
    return exchange.html_reply(200, PLACEHOLDER.sub(lambda m: parts.get(m.group(1), m.group(0)), text))


def unknown_endpoint(request: Request) -> NoReturn:
    """RT-5: clients match `unknown endpoint`; the body is not read as JSON, so a bad one changes nothing."""
    raise errors.NotFound("unknown endpoint")


# -- POST routes ------------------------------------------------------------------


def verdict(body: dict[str, Any], who: str) -> dict[str, Any]:
    return gatewaycard.verdict(body)


def queue_add(body: dict[str, Any], who: str) -> dict[str, Any]:
    return onboarding.queue().add(body, who)


def queue_stop(body: dict[str, Any], who: str) -> dict[str, Any]:
    return onboarding.queue().stop()


def queue_clear(body: dict[str, Any], who: str) -> dict[str, Any]:
    return onboarding.queue().clear()


def connect_start(request: Request) -> Reply:
    """CN-2: the sign-in's redirect comes back to the port this dashboard listens on."""
    return json_reply(200, connect.start(request.body, changes.by(request.who), request.port))


@dataclasses.dataclass(frozen=True)
class Page(routes.Route):
    """A dashboard row: never a gateway route, the admin login as its credential, matched on the raw path (RT-6):
    a POST's exactly, a GET's with the query set aside (IMP-3), a path ending `/` as the head of every path
    under it (a folder of named files; `/` alone is every path)."""

    gateway: bool = False
    scope: str = routes.ADMIN
    listed: bool = False
    query: bool = False  # RT-6: answers only with a query string; without one the path is the page

    def answers(self, sent: str) -> dict[str, str] | None:
        path, mark, _ = sent.partition("?")
        if self.path.endswith("/"):
            hit = sent.startswith(self.path)
        elif self.method == "POST":
            hit = sent == self.path
        else:
            hit = path == self.path and (bool(mark) or not self.query)
        return {} if hit else None


V = schemas.view
described = schemas.described
ANY_ROWS = schemas.arr(schemas.OBJ)
WRITE = (400, 404)  # RESP-3: a refused write; what it names is not there
HTML = ("text/html",)
PAGE_TOO = "; without a query string the path is the page (RT-6)"


def about(summary: str, gives: schemas.Schema | None = V(), **more: Any) -> routes.Doc:
    """A dashboard row's `Doc` (OAS-1): its summary and reply, a JSON view unless said otherwise."""
    return routes.Doc(summary, gives=gives, **more)


def asked(summary: str, gives: schemas.Schema | None, args: tuple[routes.Arg, ...], **more: Any) -> routes.Doc:
    """The `Doc` of a row that answers only with a query string (RT-6): without one the path is the page."""
    media, refuses = more.pop("media", ()) + HTML, more.pop("refuses", ()) + (303,)  # the page's, signed out
    return routes.Doc(summary + PAGE_TOO, gives=gives, args=args, media=media, refuses=refuses, **more)


def change(summary: str, takes: schemas.Schema = schemas.OBJ) -> routes.Doc:
    """A write's `Doc` (RESP-3): a JSON object in, `{"ok": true, ...}` or its refusal out."""
    return routes.Doc(summary, takes, schemas.OK, refuses=WRITE)


NAMED = schemas.obj({"name": schemas.STR})

REVIEW_ARGS = (routes.Arg("collection", "keep only this collection's panels (`bench/<name>`)"),
               routes.Arg("shape", "keep only this explorer shape's panels"),
               routes.Arg("model", "keep only panels where this model sat"),
               routes.Arg("since", "keep only panels asked on or after this date (YYYY-MM-DD)"),
               routes.Arg("until", "keep only panels asked on or before this date (YYYY-MM-DD)"),
               routes.Arg("order", "`oldest` (the default) or `teaches`", values=review.ORDERS))

ROWS = (
    Page("GET", "/login", login_page, scope=routes.HOST, doc=about("The login page (a redirect to / when the login "
                                                                   "is off)", None, media=HTML, refuses=(303,))),
    Page("GET", connect.CALLBACK, connect_callback, scope=routes.HOST, query=True,  # OPEN-3: no login
         doc=asked("A provider sign-in's redirect back (CN-8): a small page saying how it went", None,
                   (routes.Arg("state", "the sign-in's id"), routes.Arg("code", "the grant")))),
    Page("GET", connect.CALLBACK + "/", connect_callback, scope=routes.HOST,
         doc=about("A provider sign-in's redirect back, its id in the path (CN-8)", None, media=HTML,
                   shown=connect.CALLBACK + "/<sign_in>")),
    Page("GET", "/api/stamp", api_stamp, doc=about("When the bench's files last changed (API-3: no `ok`)",
                                                   schemas.obj({"stamp": schemas.NUM}))),
    Page("GET", "/api/status", api_status, doc=about("The install at a glance (API-1)", V(
        version=schemas.STR, gateway=schemas.STR, models=schemas.INT, collections=schemas.INT,
        keys_required=schemas.BOOL, onboarding=schemas.OBJ), refuses=(400,))),
    Page("GET", "/api/models", api_models, doc=about("Every registered and retired model (API-2)",
                                                     V(models=ANY_ROWS), refuses=(400,))),
    Page("GET", "/api/gateway-keys", api_keys, doc=about("The gateway keys, never their secrets",
                                                         V(required=schemas.BOOL, keys=ANY_ROWS), refuses=(400,))),
    Page("GET", "/api/collections", api_collections, doc=about("The collections", V(collections=ANY_ROWS))),
    Page("GET", "/api/gateway-card", api_card, doc=about("The Gateway card: recent panels and their seats",
                                                         V(gateway=schemas.STR, panels=ANY_ROWS))),
    Page("GET", "/api/logs", api_logs, doc=about("The Logs page: calls, changes, jobs, onboarding", V(
        calls=ANY_ROWS, changes=ANY_ROWS, scheduler=described(schemas.STRS, "the scheduler log's last lines"),
        onboarding=described(schemas.STRS, "onboarding logs' names, for `/api/onboard?log=`")))),
    Page("GET", "/api/settings", api_settings, doc=about("What Settings and Info show (never a secret)", V(
        theme=schemas.STR, themes=ANY_ROWS, keys=schemas.OBJ, auth=schemas.BOOL, client=schemas.OBJ,
        info=schemas.OBJ, gateway=schemas.STR, collections=schemas.STRS))),
    Page("GET", "/api/gateway-seat", api_seat, query=True, doc=asked(
        "One seat of a panel, for the verdict dialog", V(call=schemas.STR, alias=schemas.STR, answer=schemas.STR),
        (routes.Arg("call", "a seat's call id"),), refuses=(404,))),
    Page("GET", "/api/endpoints", api_endpoints, doc=about("The endpoints", V(endpoints=ANY_ROWS))),
    Page("GET", "/api/connections", api_connections, doc=about("The connections and their limits",
                                                               V(connections=ANY_ROWS))),
    Page("GET", "/api/connect", api_connect, doc=about("The providers Connect can sign in to", V(providers=ANY_ROWS))),
    Page("GET", "/api/candidates", api_candidates, doc=about(
        "Models to onboard (OB-6: with nothing to offer, `ok` false and why, still a 200)", V(candidates=ANY_ROWS))),
    Page("GET", "/api/onboard-queue", api_queue, doc=about("The onboarding queue", V(
        running=schemas.BOOL, items=ANY_ROWS))),
    Page("GET", "/api/onboard", api_onboard_log, query=True, doc=asked(
        "One onboarding log's tail (OB-19)", V(done=schemas.BOOL, tail=schemas.STR),
        (routes.Arg("log", "an onboarding log's name"),))),
    Page("GET", "/api/leaderboard", api_leaderboard, query=True, doc=asked(
        "At a glance's leaderboard: every collection's, for the signed-in admin (JSON, or CSV)",
        V(collection=schemas.STR, models=ANY_ROWS), routes.BOARD_ARGS, refuses=(400,), media=("text/csv",))),
    Page("GET", "/api/discover", api_discover, doc=about("Discover's rows, from the cached feeds", V(rows=ANY_ROWS))),
    Page("GET", "/api/discover-model", api_discover_model, query=True, doc=asked(
        "One Discover row's routes (DS-3)", V(routes=ANY_ROWS),
        (routes.Arg("provider", "the row's provider"), routes.Arg("model", "the row's model")), refuses=(404,))),
    Page("GET", "/api/quotas", api_quotas, doc=about("The Quotas page and the token cost per model", V(
        sent=ANY_ROWS, cost=ANY_ROWS))),
    Page("GET", "/api/review", api_review, doc=about(
        "The Review page's queue: the panels owing verdicts, filtered, oldest first or teaching most (REV-2, REV-3)",
        V(order=schemas.STR, owed=schemas.INT, shown=schemas.INT, panels=ANY_ROWS, choices=schemas.OBJ),
        args=REVIEW_ARGS, refuses=(400,))),
    Page("GET", "/api/review-panel", api_review_panel, query=True, doc=asked(
        "One panel in full for the Review page, judged or not (REV-4)", V(
            panel=schemas.STR, at=schemas.STR, collection=schemas.STR, shape=schemas.STR, key=schemas.STR,
            system=schemas.STR, prompt=schemas.STR, seats=ANY_ROWS),
        (routes.Arg("panel", "a panel's id", required=True),), refuses=(404,))),
    Page("GET", "/ui/", static, scope=routes.PAGE, doc=about(
        "The page's stylesheet or script (TH-8)", None, media=tuple(kind.split(";")[0] for kind in STATIC.values()),
        refuses=(404,), shown="/ui/<file>")),
    Page("GET", "/fonts/", static, scope=routes.PAGE, doc=about(
        "No fonts are shipped (OFF-2): always 404", None, refuses=(404,), shown="/fonts/<file>")),
    Page("GET", "/api/", page, doc=about("", shown="")),  # an unknown API path answers the page too, once signed in
    Page("GET", "/", page, scope=routes.PAGE, doc=about("The dashboard (SHELL-1)", None, media=HTML, args=(
        routes.Arg("theme", "a theme to draw it in"),))),
    Page("POST", "/login", login, scope=routes.HOST, raw=True, doc=routes.Doc(
        "Sign in with the admin token (ADM-2): the session cookie", schemas.obj({"token": schemas.STR}), schemas.OK,
        refuses=(400, 401, 429))),
    Page("POST", "/logout", logout, scope=routes.HOST, raw=True, doc=routes.Doc(
        "Sign out: the cookie cleared, and every session before it ended", gives=schemas.OK)),
    Page("POST", "/api/model", operation(modeledit.change), doc=change("Edit a model")),
    Page("POST", "/api/remove", operation(modeledit.remove), doc=change("Retire a model")),
    Page("POST", "/api/restore", operation(modeledit.restore), doc=change("Restore a retired model")),
    Page("POST", "/api/retry", operation(modeledit.retry), doc=change("Probe a model again")),
    Page("POST", "/api/model-facts", operation(modelfacts.save_facts), doc=change("Save a model's facts")),
    Page("POST", "/api/model-options", operation(modelfacts.save_options), doc=change("Save a model's options")),
    Page("POST", "/api/collection", operation(collectionedit.save), doc=change("Save a collection")),
    Page("POST", "/api/collection/remove", operation(collectionedit.remove), doc=change("Remove a collection",
                                                                                       NAMED)),
    Page("POST", "/api/gateway-settings", operation(collectionedit.gateway_settings), doc=change(
        "Save the gateway's settings")),
    Page("POST", "/api/verdict", operation(verdict), doc=change("Judge a seat's answer from the Gateway card",
                                                                routes.VERDICT.doc.takes or schemas.OBJ)),
    Page("POST", "/api/gateway-key", operation(settingsedit.make_key), doc=change(
        "Make a gateway key (its secret is shown once)", schemas.obj({"name": schemas.STR},
                                                                    collections=schemas.STRS, rate=schemas.INT))),
    Page("POST", "/api/gateway-key/remove", operation(settingsedit.revoke_key), doc=change("Revoke a gateway key",
                                                                                          NAMED)),
    Page("POST", "/api/client", operation(settingsedit.choose_client), doc=change(
        "Choose the client", schemas.obj({"client": schemas.STR}))),
    Page("POST", "/api/theme", operation(settingsedit.choose_theme), doc=change(
        "Choose the theme", schemas.obj({"theme": schemas.STR}))),
    Page("POST", "/api/scheduler", operation(jobs.save), doc=change("Save the scheduler's jobs")),
    Page("POST", "/api/own-client-free", operation(settingsedit.save_own_client), doc=change(
        "Save the own client's free models")),
    Page("POST", "/api/endpoint", operation(endpointedit.save), doc=change("Save an endpoint")),
    Page("POST", "/api/endpoint/remove", operation(endpointedit.remove), doc=change("Remove an endpoint", NAMED)),
    Page("POST", "/api/endpoint/default", operation(endpointedit.make_default), doc=change(
        "Make an endpoint the default", NAMED)),
    Page("POST", "/api/connection-limits", operation(endpointedit.save_limits), doc=change(
        "Save a connection's limits")),
    Page("POST", "/api/dismiss", operation(onboarding.dismiss), doc=change("Dismiss an onboarding candidate")),
    Page("POST", "/api/onboard", operation(onboarding.onboard_now), doc=change("Onboard a model now")),
    Page("POST", "/api/onboard-queue", operation(queue_add), doc=change("Queue models to onboard")),
    Page("POST", "/api/onboard-queue/stop", operation(queue_stop), doc=change("Stop the onboarding queue")),
    Page("POST", "/api/onboard-queue/clear", operation(queue_clear), doc=change("Clear the onboarding queue")),
    Page("POST", "/api/connect/start", connect_start, doc=change("Start a provider sign-in (CN-2)")),
    Page("POST", "/api/connect/poll", operation(connect.poll), doc=change("Poll a provider sign-in")),
    Page("POST", "/api/connect/app", operation(connect.app), doc=change("Save a provider app of your own")),
    Page("POST", "/api/discover/add", operation(hubadd.add), doc=change("Add a Discover row's model to the bench")),
    Page("POST", "/", unknown_endpoint, raw=True, doc=routes.Doc(shown="")),  # RT-5: any other POST
    Page("GET", routes.OPENAPI.path, openapi.answer(lambda: DASHBOARD), doc=routes.OPENAPI.doc),
)

DASHBOARD: routing.Site = routing.Site(
    routes.extend(gateway.ROUTES, *ROWS), apart=True, cap=guard.DASHBOARD_CAP, refusal=lambda exc: exc.body(),
    json_type="application/json; charset=utf-8", json_cache="no-store",  # RESP-2, on gateway routes' replies too
    version=version_header(), cors=False, logs=lambda: bool(guard.admin_token()), diagnostics=False)  # LOG-4, LOG-5


def serve(host: str = "127.0.0.1", port: int = 0) -> gateway.Server:
    """A dashboard on a thread (tests, the benchmarks): returns the server; `server.shutdown()` stops it."""
    return gateway.serve(host, port, DASHBOARD, "dashboard")


def banner(address: str, port: int) -> str:
    """SRV-1 / START-5: never a secret."""
    shown = "localhost" if address == "127.0.0.1" else address
    return f"Benchwarmers on http://{shown}:{port}" + ("  (login on)" if guard.admin_token() else "") + \
        "  (ctrl-c to stop)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Benchwarmers dashboard (and the gateway on the same port)")
    parser.add_argument("--demo", action="store_true", help="serve a throwaway demo bench on the local upstream")
    parser.add_argument("--port", type=int, default=None, help="port (default BENCH_PORT or 8122)")
    args = parser.parse_args(argv)
    address, port, upstream = gateway.starting(args.port, "BENCH_PORT", args.demo)
    paths.data()  # SRV-1: the data folder's layout, made at start
    server = gateway.listen(address, port, DASHBOARD, "BENCH_PORT", upstream)
    gateway.stop_on_signals(server)
    refused = store.opened()  # a Postgres store connected and migrated before the first request
    if refused:
        sys.exit(refused)
    scheduler.start()  # §4: the recurring jobs run inside the dashboard; one loop per data folder (SCH-7)
    onboarding.queue()  # IMP-7: a batch the last server left queued or running carries on
    onboarding.follow()  # and one whose owner, another replica, is gone, even while no page asks
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
