"""Who may talk to the servers, and what they may send (security.md).

Shared by the gateway (8123) and the dashboard (8122) so both ports apply the
same checks: the startup check (START-*), the Host allow-list against DNS
rebinding (HOST-*), the write checks on every POST (WRITE-*), who is calling
(§7: gateway keys through `server.gatekeys`, the admin token and its login
cookie), CORS for allowed origins on gateway routes (CORS-*; `wire.routes`
says which routes those are), the access log (LOG-*). Settings are read from
the environment on every request, so a test or an operator can change them
between requests.

Decisions where the spec leaves room, or where an improvement changes it:
- The admin token is stripped (improvement 17): a trailing newline from a `.env`
  file is not part of it. A token with fewer than 8 different characters is
  accepted with a warning at start.
- A specific bind address (not `0.0.0.0` or `::`) is an allowed Host for its own
  port (improvement 18; START-6 said otherwise): a literal address cannot be
  rebound by a DNS name, and an operator who bound it means to be reached there.
- Default ports are normalised (improvement 16): `https://h:443` and `https://h`
  are one origin; a public URL makes `h`, `h:443` (or `h:80`) acceptable Hosts.
- Content-Type is judged by media type: `application/json` or `application/*+json`,
  parameters allowed (improvement 13). Content-Length must be ASCII digits with
  no whitespace, and given once (improvement 14); a POST with `Transfer-Encoding`
  gets 411, or 400 when it also carries `Content-Length`.
- Failed admin logins and wrong admin bearers are counted per client, grouped as the
  connection cap groups them (`client_group`: an IPv4 address, an IPv6 client by its
  /64): 10 in a minute and that client waits (429 + Retry-After) before its next try,
  right or wrong (improvement 4). IPv4 addresses stay one client each (127.0.0.7 and
  127.0.0.8 are two), so a ceiling on failures from everyone together
  (`BENCH_FAILED_LOGINS_PER_MINUTE`, 60) stops a guesser spread over many addresses;
  past it every login waits, while signed-in sessions go on (issue 29 item 7).
  Unknown gateway keys are not counted: a key is 256 random bits, and a 429 would
  hide "unknown or revoked" from a misconfigured client that only needs a new key.
- Sessions (issue 29 items 5, 6): the cookie is still a signature, never a stored
  session, but it signs the data folder's session epoch (`runs/admin-sessions.json`,
  0600) and the port it was issued on, under the cookie name `bw_session_<port>`.
  A signed-in `POST /logout` mints a new epoch, which ends every session issued before
  it on every port and survives a restart; sessions not ended survive a restart too.
  The epoch file keeps a mark of the token it was minted under, so a changed token
  mints a new one the first time it is used: going back to an old token revives none
  of its sessions. A session lasts `BENCH_SESSION_HOURS` (8), judged on every request,
  so shortening it ends longer sessions at once. Logout without a session only clears
  the caller's cookie: a stranger cannot sign the admin out.
- The access log line is LOG-1's by default; `BENCH_LOG_ADDRESS=1` adds the client
  address at its end (improvement 20, an opt-in so tools reading LOG-1's five fields
  keep working); `BENCH_TRUST_FORWARDED=1` takes it from the last `X-Forwarded-For`
  item, for a server behind one proxy. The same address keys the login backoff.
"""

import collections
import datetime
import hashlib
import hmac
import ipaddress
import json
import math
import re
import secrets
import threading
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from email.message import Message
from http.cookies import CookieError, SimpleCookie

from ..core import console, fileio, paths, settings
from ..wire import routes
from . import gatekeys

Headers = Mapping[str, str] | Message  # a request's headers (a plain mapping in tests)
Answer = tuple[int, str] | tuple[int, str, dict[str, str]]  # a refusal: its status, message and headers, if any

GATEWAY_CAP = 20_000_000
DASHBOARD_CAP = 1_000_000
MIN_TOKEN = 16
TOKEN_VARIETY = 8
IMAGE_HINT = (" Send images as http(s) URLs, or smaller ones: models scale a photo down to about 1,500–2,000 px "
              "on its long side anyway.")
EXPOSED = "X-Bench-Panel, X-Bench-Seats, X-Bench-Conversation, X-Bench-Model, X-Bench-Call"
# Only space and tab may surround the commas: a folded header would otherwise carry CR LF into the reply.
HEADER_LIST = re.compile(r"[A-Za-z0-9-]{1,64}([ \t]*,[ \t]*[A-Za-z0-9-]{1,64}){0,31}")
ORIGIN_ITEM = re.compile(r"[a-z][a-z0-9+.-]*://[^/?#@\s]+")
# LOG-5: a query parameter's name and value; the name is judged percent-decoded, as the parser reads it.
QUERY_NAME = re.compile(r"[?&]([^=&?\s]*)=")
QUERY_VALUE = re.compile(r"[^&\s]*")
SECRET_PARAMS = {"key", "api_key", "access_token"}
# LOG-6: a gateway key anywhere in a logged line (a path too), any of its characters percent-encoded.
GATEWAY_KEY = re.compile(r"(?:b|%62)(?:w|%77)(?:k|%6b)(?:_|%5f)[\w%-]*", re.IGNORECASE)
DEFAULT_PORTS = {"http": ":80", "https": ":443"}
FALSE = ("", "0", "false", "no", "off")
TRUE = ("1", "true", "yes", "on")

COOKIE = "bw_session"  # named per port: `bw_session_8122`
MAX_SESSION_HOURS = 168  # a week, the lifetime before issue 29
LOGIN_LIMIT = 10  # wrong admin tokens a minute from one client
LOGIN_WINDOW = 60
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="benchwarmers"'}
NEEDS_KEY = ("this route needs a gateway key (Authorization: Bearer <key>, or x-api-key); "
             "make one on the dashboard's Settings page")
SEND_BEARER = "send the gateway key as 'Authorization: Bearer <key>'"
UNKNOWN_KEY = "unknown or revoked gateway key"
OTHER_KEY = " (gateway keys start bwk_; this is some other key)"
NOT_ADMIN_BEARER = "that bearer is not the admin token (a gateway key opens /v1 only)"
SIGN_IN = "sign in first: /login, or send the admin token as Authorization: Bearer"
SEND_TOKEN = 'send {"token": "..."}'
NOT_TOKEN = "that is not the admin token"


# -- settings (read on every call) ------------------------------------------

def bind_address() -> str:
    return settings.env("BENCH_BIND").strip()


def port_setting(name: str) -> int:
    """BENCH_PORT / BENCH_GATEWAY_PORT: `int()`, unset → the table's default; ValueError names the variable."""
    raw = settings.env(name).strip()
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a port number, not {raw!r}") from None


def is_loopback(address: str) -> bool:
    """START-3: `localhost`, 127.0.0.0/8 or ::1."""
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def admin_token() -> str:
    """BENCHWARMERS_ADMIN_TOKEN, stripped (improvement 17); `""` means login off."""
    return settings.env("BENCHWARMERS_ADMIN_TOKEN").strip()


def keys_required() -> bool:
    """§7: a token is set, or BENCHWARMERS_REQUIRE_KEYS is anything but a clear no (a typo fails closed)."""
    return bool(admin_token()) or settings.env("BENCHWARMERS_REQUIRE_KEYS").strip().lower() not in FALSE


def trust_forwarded() -> bool:
    return settings.env("BENCH_TRUST_FORWARDED").strip().lower() in TRUE


def _env_list(name: str) -> list[str]:
    return [item.strip().lower() for item in settings.env(name).split(",") if item.strip()]


def _without_default_port(scheme: str, netloc: str) -> str:
    port = DEFAULT_PORTS.get(scheme)
    return netloc[:-len(port)] if port and netloc.endswith(port) else netloc


def normal_origin(origin: str) -> str:
    """An origin lower-cased, without a trailing `/` or its scheme's default port."""
    origin = origin.strip().lower().rstrip("/")
    scheme, sep, netloc = origin.partition("://")
    return f"{scheme}://{_without_default_port(scheme, netloc)}" if sep else origin


def public() -> tuple[str, str]:
    """`(host, origin)` of BENCHWARMERS_PUBLIC_URL, both `""` when unset or invalid; default port dropped."""
    raw = settings.env("BENCHWARMERS_PUBLIC_URL").strip().rstrip("/")
    if not raw:
        return "", ""
    parts = urllib.parse.urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return "", ""
    netloc = _without_default_port(parts.scheme, parts.netloc.lower())
    return netloc, f"{parts.scheme}://{netloc}"


def _bind_host(port: int) -> str:
    """The bind address as a Host value when it names one interface (improvement 18), else `""`."""
    address = bind_address().strip("[]").lower()
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"{address}:{port}"
    if ip.is_unspecified:
        return ""
    return f"[{address}]:{port}" if ip.version == 6 else f"{address}:{port}"


def startup_problem(address: str) -> str:
    """The START-2 refusal for this configuration, or `""` when it is safe to bind."""
    token = admin_token()
    if token and len(token) < MIN_TOKEN:
        return (f"BENCHWARMERS_ADMIN_TOKEN is {len(token)} characters; the minimum is {MIN_TOKEN}. Make one with: "
                "python -c \"import secrets; print(secrets.token_urlsafe(24))\"")
    raw = settings.env("BENCHWARMERS_PUBLIC_URL").strip()
    if raw and not public()[0]:
        return f"BENCHWARMERS_PUBLIC_URL must be http(s)://host[:port], not {raw!r}"
    if not token and not is_loopback(address):
        return (f"refusing to listen on {address}: beyond this machine a login is needed. Set "
                "BENCHWARMERS_ADMIN_TOKEN (16+ characters), or bind to this machine only with BENCH_BIND=127.0.0.1.")
    for name in ("BENCH_PORT", "BENCH_GATEWAY_PORT"):
        try:
            port_setting(name)
        except ValueError as exc:
            return str(exc)
    return ""


def startup_warnings() -> list[str]:
    """What a server says on stderr at start without refusing (improvements 16, 17), and a data folder other
    users can read (PATH-7)."""
    warnings = []
    exposed = paths.exposure()
    if exposed:
        warnings.append(exposed)
    token = admin_token()
    if token and len(set(token)) < TOKEN_VARIETY:
        warnings.append(f"BENCHWARMERS_ADMIN_TOKEN has only {len(set(token))} different characters and is easy to "
                        "guess; make one with: python -c \"import secrets; print(secrets.token_urlsafe(24))\"")
    if token != settings.env("BENCHWARMERS_ADMIN_TOKEN"):
        warnings.append("BENCHWARMERS_ADMIN_TOKEN has spaces or a newline around it; they are not part of the token")
    for item in _env_list("BENCH_ALLOWED_ORIGINS"):
        if not ORIGIN_ITEM.fullmatch(item.rstrip("/")):
            warnings.append(f"BENCH_ALLOWED_ORIGINS item {item!r} is not scheme://host[:port]; no browser sends it")
    if _session_hours() is None:
        warnings.append(f"BENCH_SESSION_HOURS={settings.env('BENCH_SESSION_HOURS')!r} is not a number of hours above "
                        f"0 and at most {MAX_SESSION_HOURS}; using {settings.default('BENCH_SESSION_HOURS')}")
    if _login_ceiling() is None:
        warnings.append(f"BENCH_FAILED_LOGINS_PER_MINUTE={settings.env('BENCH_FAILED_LOGINS_PER_MINUTE')!r} is not a "
                        f"whole number of at least 1; using {settings.default('BENCH_FAILED_LOGINS_PER_MINUTE')}")
    return warnings


# -- every request ------------------------------------------------------------

def is_gemini_route(path: str) -> bool:
    """CRED-2 (3): the routes where `?key=` is a credential: those that speak Gemini's format."""
    return routes.format_of(path) == "gemini"


def allowed_hosts(port: int) -> set[str]:
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", *_env_list("BENCH_ALLOWED_HOSTS")}
    bound = _bind_host(port)
    if bound:
        hosts.add(bound)
    host, origin = public()
    if host:
        hosts.add(host)
        if ":" not in host.rsplit("]", 1)[-1]:
            hosts.add(host + DEFAULT_PORTS[origin.split(":", 1)[0]])
    return hosts


def allowed_origins(port: int) -> set[str]:
    origins = {f"http://{h}" for h in allowed_hosts(port)}
    origins |= {normal_origin(o) for o in _env_list("BENCH_ALLOWED_ORIGINS")}
    origin = public()[1]
    if origin:
        origins.add(origin)
    return origins


def host_problem(headers: Headers, port: int) -> str:
    """HOST-1..4: `""` when the Host header names this server, else the 403 message."""
    value = (headers.get("Host") or "").strip().lower()
    if value in allowed_hosts(port):
        return ""
    shown = repr(value) if value else "'(none)'"
    return f"unknown Host {shown}; set BENCHWARMERS_PUBLIC_URL or BENCH_ALLOWED_HOSTS to add one"


def origin_allowed(headers: Headers, port: int) -> bool:
    origin = (headers.get("Origin") or "").strip()
    return bool(origin) and normal_origin(origin) in allowed_origins(port)


def is_json(content_type: str | None) -> bool:
    """Improvement 13: the media type is `application/json` or `application/<x>+json`; parameters may follow."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def write_problem(headers: Headers, port: int, gateway: bool, cap: int) -> Answer | None:
    """WRITE-1..6 for a POST: `(status, message)` of the first failing check, or None. Never reads the body."""
    problem = host_problem(headers, port)
    if problem:
        return 403, problem
    if (headers.get("Sec-Fetch-Site") or "").lower() == "cross-site":
        if not (gateway and origin_allowed(headers, port)):
            return 403, "cross-site requests are refused"
    origin = (headers.get("Origin") or "").strip().lower()
    if origin and normal_origin(origin) not in allowed_origins(port):
        return 403, f"Origin '{origin}' is not allowed; set BENCH_ALLOWED_ORIGINS to add one"
    if not is_json(headers.get("Content-Type")):
        return 415, "send Content-Type: application/json"
    if headers.get("Transfer-Encoding") is not None:
        if headers.get("Content-Length") is not None:
            return 400, "send Content-Length or Transfer-Encoding, not both"
        return 411, "send the body with a Content-Length; chunked bodies are not supported"
    length = content_length(headers)
    if isinstance(length, tuple):
        return length
    if length > cap:
        message = f"body is {length:,} bytes; the limit is {cap:,}"
        return 413, message + (IMAGE_HINT if gateway else "")
    return None


def content_length(headers: Headers) -> int | tuple[int, str]:
    """The body length (WRITE-5, improvement 14), or `(400, message)` when it is not a usable number."""
    get_all = getattr(headers, "get_all", None)
    values = (get_all("Content-Length") if get_all else None) or [headers.get("Content-Length") or ""]
    if len(set(values)) > 1:
        return 400, "Content-Length is given more than once"
    raw = values[0]
    if not raw.strip():
        return 0
    if re.fullmatch("[0-9]+", raw):
        return int(raw)
    if re.fullmatch("-[0-9]+", raw):
        return 400, "Content-Length is negative"
    return 400, "Content-Length is not a number"


def cors_headers(headers: Headers, port: int) -> dict[str, str]:
    """CORS-3 headers for a reply to an allowed Origin; none otherwise."""
    if not origin_allowed(headers, port):
        return {}
    return {"Access-Control-Allow-Origin": (headers.get("Origin") or "").strip(),
            "Access-Control-Expose-Headers": EXPOSED, "Vary": "Origin"}


def preflight_headers(headers: Headers) -> dict[str, str]:
    """CORS-4/5: what a 204 preflight answers with (the CORS-3 headers are added by the caller)."""
    allow = "Authorization, Content-Type"
    asked = (headers.get("Access-Control-Request-Headers") or "").strip()
    if asked and HEADER_LIST.fullmatch(asked):
        allow += ", " + asked
    return {"Access-Control-Allow-Methods": "GET, POST, OPTIONS", "Access-Control-Allow-Headers": allow,
            "Access-Control-Max-Age": "600"}


# -- who is calling -----------------------------------------------------------

def credential(headers: Headers, path: str) -> str | None:
    """CRED-2: the one credential judged, as an `Authorization` value, or None when none is present."""
    value = headers.get("Authorization")
    if value is not None:
        return value
    for name in ("x-api-key", "x-goog-api-key"):
        value = headers.get(name)
        if value is not None:
            return "Bearer " + value
    if is_gemini_route(path):
        for name, value in urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query, keep_blank_values=True):
            if name == "key":
                return "Bearer " + value if value.strip() else None
    return None


def identify(headers: Headers, path: str) -> tuple[str | None, Answer | None]:
    """A gateway caller (§7, CRED-*): `(name, None)`, or `(None, (401, message, headers))`.

    With keys not required everyone is `local` and every credential is ignored (CRED-1).
    """
    if not keys_required():
        return "local", None
    value = credential(headers, path)
    if value is None:
        return None, (401, NEEDS_KEY, dict(CHALLENGE))
    scheme, _, rest = value.strip().partition(" ")
    rest = rest.strip()
    if scheme.lower() != "bearer" or not rest:
        return None, (401, SEND_BEARER, dict(CHALLENGE))
    name = gatekeys.lookup(rest)
    if name is None:
        message = UNKNOWN_KEY + ("" if rest.startswith(gatekeys.PREFIX) else OTHER_KEY)
        return None, (401, message, dict(CHALLENGE))
    gatekeys.touch(name)
    return name, None


def admin_matches(value: object) -> bool:
    """ADM-1: SHA-256 of both sides compared in constant time; an unset token matches nothing."""
    token = admin_token()
    if not token or not isinstance(value, str):
        return False
    given = hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()
    return hmac.compare_digest(given, hashlib.sha256(token.encode("utf-8")).digest())


def session_seconds() -> int:
    """`BENCH_SESSION_HOURS` in seconds, read on every request: a bad value is the table's default."""
    hours = _session_hours()
    return round(3600 * (hours if hours is not None else float(settings.default("BENCH_SESSION_HOURS"))))


def _session_hours() -> float | None:
    """`BENCH_SESSION_HOURS` as a number of hours above 0 and at most a week, or None when it is not one."""
    try:
        hours = float(settings.env("BENCH_SESSION_HOURS").strip())
    except ValueError:
        return None
    return hours if math.isfinite(hours) and 0 < hours <= MAX_SESSION_HOURS else None


def cookie_name(port: int) -> str:
    """Issue 29 item 6: a browser sends a host's cookies to every port of it, so each port has its own name
    (two dashboards on one host keep their sessions apart) and signs its port in (a copy renamed is refused)."""
    return f"{COOKIE}_{port}"


def sessions_path() -> Path:
    return paths.file("runs", "admin-sessions.json")


def _token_mark(token: str, epoch: str) -> str:
    """Which token minted `epoch`: an HMAC under the token, as guessable offline as any cookie, and no more."""
    return hmac.new(token.encode("utf-8"), f"epoch|{epoch}".encode("ascii"), hashlib.sha256).hexdigest()


def _minted_under(data: dict[str, Any], token: str) -> bool:
    epoch, mark = data.get("epoch"), data.get("token_mark")
    if not (isinstance(epoch, str) and epoch.isascii() and epoch and isinstance(mark, str)):
        return False
    return hmac.compare_digest(mark.encode("utf-8", "surrogatepass"), _token_mark(token, epoch).encode("ascii"))


def _epoch(token: str, make: bool) -> str:
    """The session epoch every cookie signs: the stored one when `token` minted it; a new one when another token
    did (the token changed since: its sessions stay ended, even if it comes back); `""` when none is stored
    and `make` is false, so checking a cookie never writes a file the first time."""
    data = fileio.read_json(sessions_path(), comments=False)
    if _minted_under(data, token):
        return data["epoch"]
    if not data.get("epoch") and not make:
        return ""
    return _mint(token, seen=data.get("epoch"))


def end_sessions() -> str:
    """Issue 29 item 5: a new epoch under today's token, ending every session issued before it, on every port and
    across restarts. OSError when the data folder refuses it."""
    return _mint(admin_token(), force=True)


def _mint(token: str, seen: object = None, force: bool = False) -> str:
    """A new session epoch under `token`, written 0600; unless `force`, one that another thread or process minted
    under `token` since `seen` was read is kept instead (they raced to the same turn)."""
    path = sessions_path()
    with fileio.lock(path):
        data = fileio.read_json(path, comments=False)
        if not force and data.get("epoch") != seen and _minted_under(data, token):
            return data["epoch"]
        epoch = secrets.token_hex(16)
        fileio.write_atomic(path, json.dumps({"epoch": epoch, "token_mark": _token_mark(token, epoch)}) + "\n",
                            mode=0o600)
        return epoch


def _signature(expiry: int, token: str, epoch: str, port: int) -> str:
    return hmac.new(token.encode("utf-8"), f"session|{epoch}|{port}|{expiry}".encode("ascii"),
                    hashlib.sha256).hexdigest()


def session_cookie(port: int, now: float | None = None) -> str:
    """ADM-3: the `Set-Cookie` value opening the dashboard on `port` for `session_seconds()`; it never holds the
    token. OSError when the data folder refuses the first epoch."""
    token = admin_token()
    lifetime = session_seconds()
    expiry = int(now if now is not None else time.time()) + lifetime
    signature = _signature(expiry, token, _epoch(token, make=True), port)
    value = f"{cookie_name(port)}={expiry}.{signature}; Path=/; Max-Age={lifetime}"
    return value + "; HttpOnly; SameSite=Strict" + _secure()


def logout_cookie(port: int) -> str:
    """Improvement 8: the `Set-Cookie` value of `POST /logout`, which clears the session in the browser."""
    return f"{cookie_name(port)}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + _secure()


def _secure() -> str:
    return "; Secure" if public()[1].startswith("https://") else ""


def session_valid(cookie_header: str | None, port: int, now: float | None = None) -> bool:
    """ADM-4: the `Cookie` header carries this port's cookie, not expired, no longer-lived than a session is now,
    signed with today's token over the current epoch and this port."""
    token = admin_token()
    if not token or not cookie_header:
        return False
    jar = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return False
    name = cookie_name(port)
    if name not in jar:
        return False
    expiry, _, signature = jar[name].value.partition(".")
    if not (expiry.isascii() and expiry.isdigit()):
        return False
    now = now if now is not None else time.time()
    if not now <= int(expiry) <= now + session_seconds():
        return False
    try:
        epoch = _epoch(token, make=False)
    except OSError:  # a changed token's new epoch could not be written: no session counts meanwhile
        return False
    expected = _signature(int(expiry), token, epoch, port).encode("ascii")
    return bool(epoch) and hmac.compare_digest(signature.encode("utf-8", "surrogatepass"), expected)


def client_group(address: str) -> str:
    """Whom the connection cap and the login backoff count a client as: an IPv4 address by itself, an IPv6 one by
    its /64 (one host may hold a whole /64), an IPv4-mapped IPv6 address as its IPv4 one; anything else (a
    forwarded name that is no address) as given, cut to 64 characters."""
    try:
        found = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address[:64]
    if found.version == 4:
        return str(found)
    if found.ipv4_mapped:
        return str(found.ipv4_mapped)
    return str(ipaddress.ip_network(f"{found}/64", strict=False))


def _login_ceiling() -> int | None:
    """`BENCH_FAILED_LOGINS_PER_MINUTE` as a whole number of at least 1, or None when it is not one."""
    value = settings.env("BENCH_FAILED_LOGINS_PER_MINUTE").strip()
    return int(value) if value.isascii() and value.isdigit() and int(value) >= 1 else None


def login_ceiling() -> int:
    """Failed admin logins a minute from all clients together, read on every attempt."""
    found = _login_ceiling()
    return found if found is not None else int(settings.default("BENCH_FAILED_LOGINS_PER_MINUTE"))


class Backoff:
    """Improvement 4: `limit` failures from one client (`client_group`) within `window` seconds make it wait;
    issue 29 item 7: `login_ceiling()` failures from all clients within the window make everyone wait."""

    def __init__(self, limit: int = LOGIN_LIMIT, window: int = LOGIN_WINDOW) -> None:
        self.limit, self.window = limit, window
        self.failures: dict[str, list[float]] = {}  # client group -> times of its failures in the window, oldest first
        self.everyone: collections.deque[float] = collections.deque()  # times of every failure in the window, oldest first
        self.lock = threading.Lock()

    def _forget(self, now: float) -> None:
        """Drop failures older than the window; a guesser's made-up forwarded names go with them."""
        while self.everyone and self.everyone[0] <= now - self.window:
            self.everyone.popleft()
        for group in list(self.failures):
            kept = [t for t in self.failures[group] if t > now - self.window]
            if kept:
                self.failures[group] = kept
            else:
                del self.failures[group]

    def wait(self, address: str) -> tuple[int, str]:
        """`(seconds, held_by)`: how long before the next attempt from `address`, 0 when it may try now, and
        whether its own failures (`"client"`) or everyone's (`"all"`) hold it up."""
        now = time.monotonic()
        ceiling = login_ceiling()
        with self.lock:
            self._forget(now)
            own = self.failures.get(client_group(address), [])
            waits = [(0, "")]
            if len(self.everyone) >= ceiling:
                waits.append((int(self.everyone[-ceiling] + self.window - now) + 1, "all"))
            if len(own) >= self.limit:
                waits.append((int(own[-self.limit] + self.window - now) + 1, "client"))
            return max(waits)

    def failed(self, address: str) -> None:
        now = time.monotonic()
        with self.lock:
            self.failures.setdefault(client_group(address), []).append(now)
            self.everyone.append(now)

    def clear(self, address: str) -> None:
        """A right token forgets its client's failures; everyone's stay counted."""
        with self.lock:
            self.failures.pop(client_group(address), None)


LOGINS = Backoff()
TOO_MANY = {"client": "too many wrong admin tokens from this address; try again in {}s",
            "all": "too many wrong admin tokens from all addresses in the last minute; logins wait {}s"}


def _too_many(wait: int, held_by: str) -> tuple[int, str, dict[str, str]]:
    return 429, TOO_MANY[held_by].format(wait), {"Retry-After": str(wait)}


def dashboard_caller(headers: Headers, address: str, port: int) -> tuple[str | None, Answer | None]:
    """ADM-6: who may use a dashboard route on `port`: `(who, None)` or `(None, (status, message[, headers]))`.

    A bearer, when sent, decides alone (no fallback to the cookie); a gateway key is never the token.
    """
    if not admin_token():
        return "local", None
    value = headers.get("Authorization")
    if value is not None:
        scheme, _, rest = value.strip().partition(" ")
        if scheme.lower() == "bearer" and rest.strip():
            wait, held_by = LOGINS.wait(address)
            if wait:
                return None, _too_many(wait, held_by)
            if admin_matches(rest.strip()):
                return "admin", None
            LOGINS.failed(address)
            return None, (401, NOT_ADMIN_BEARER)
    if session_valid(headers.get("Cookie"), port):
        return "admin", None
    return None, (401, SIGN_IN)


def login(body: object, address: str, port: int) -> tuple[int, str, dict[str, str]]:
    """ADM-2 after the write checks, `body` parsed (None when it was not JSON).

    Returns `(status, message, headers)`: 200 with the session cookie, 400, 401 or 429; 503 or 507 when the
    data folder refuses the first session epoch.
    """
    if not isinstance(body, dict):
        return 400, SEND_TOKEN, {}
    wait, held_by = LOGINS.wait(address)
    if wait:
        return _too_many(wait, held_by)
    if not admin_matches(body.get("token")):
        LOGINS.failed(address)
        return 401, NOT_TOKEN, {}
    LOGINS.clear(address)
    try:
        return 200, "", {"Set-Cookie": session_cookie(port)}
    except OSError as exc:
        return (*paths.unwritable(exc), {})


def logout(headers: Headers, address: str, port: int) -> tuple[int, str, dict[str, str]]:
    """`POST /logout` after the write checks (improvement 8, issue 29 item 5): `(status, message, headers)`.

    The cookie is cleared in the browser whoever asks; a signed-in caller (cookie or bearer) also ends every
    session issued before, on every port, with a new epoch, or hears 503/507 when the data folder refuses it
    (the sessions go on, and the caller must know). A stranger's logout ends no one else's session.
    """
    if admin_token() and dashboard_caller(headers, address, port)[0] == "admin":
        try:
            end_sessions()
        except OSError as exc:
            return (*paths.unwritable(exc), {})
    return 200, "", {"Set-Cookie": logout_cookie(port)}


# -- the access log ---------------------------------------------------------------

def client_address(headers: Headers, peer: str) -> str:
    """The caller's address: the socket's, or with BENCH_TRUST_FORWARDED the last X-Forwarded-For item."""
    if trust_forwarded():
        forwarded = (headers.get("X-Forwarded-For") or "").split(",")[-1].strip()
        if forwarded:
            return forwarded
    return peer


def log_address() -> bool:
    """`BENCH_LOG_ADDRESS=1`: the access log ends each line with the client's address."""
    return settings.env("BENCH_LOG_ADDRESS").strip().lower() in TRUE


def access_line(method: str, path: str, status: int | str, who: str, address: str = "") -> str:
    """LOG-1..3, plus the client address when given: never a query string, never a control character (LOG-7:
    the method too, which anyone may send before a credential is read)."""
    # masked before the cut, which could split a key
    route = ascii(GATEWAY_KEY.sub("bwk_...", routes.logged(path))[:200])[1:-1]
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    line = f"{stamp} {console.escaped(method or '-')} {route or '-'} {status} {who or '-'}"
    if address:
        line += " " + ascii(address[:64])[1:-1].replace(" ", "")
    return line


def mask_secrets(text: str) -> str:
    """LOG-5: the value of any key=, api_key= or access_token= query parameter becomes `...`, the name
    read percent-decoded and in any case, as the credential parser reads it (`?%6bey=` is `?key=`);
    LOG-6: so does any gateway key, wherever it stands (a path, say)."""
    kept, done = [], 0
    for match in QUERY_NAME.finditer(text):
        if match.start() < done or urllib.parse.unquote_plus(match.group(1)).lower() not in SECRET_PARAMS:
            continue  # inside a value already masked, or no credential
        kept += [text[done:match.end()], "..."]
        value = QUERY_VALUE.match(text, match.end())
        assert value is not None  # a `*` pattern matches, if only the empty string
        done = value.end()
    kept.append(text[done:])
    return GATEWAY_KEY.sub("bwk_...", "".join(kept))


def log(line: str) -> None:
    console.say(line)
