"""Who may talk to the servers, and what they may send (security.md).

Shared by the gateway (8123) and the dashboard (8122) so both ports apply the
same checks: route classification (ROUTE-1), the startup check (START-*), the
Host allow-list against DNS rebinding (HOST-*), the write checks on every POST
(WRITE-*), CORS for allowed origins on gateway routes (CORS-*), the access log
(LOG-*). Settings are read from the environment on every request, as the
reference does, so a test or an operator can change them between requests.

Gateway keys, scopes and rate caps come with the security issue; until then
every accepted caller is `local`.
"""

import datetime
import ipaddress
import os
import re
import sys
import urllib.parse

GATEWAY_CAP = 20_000_000
DASHBOARD_CAP = 1_000_000
OLLAMA_ROUTES = {"/api/chat", "/api/generate", "/api/tags", "/api/version", "/api/show"}
IMAGE_HINT = (" Send images as http(s) URLs, or smaller ones: models scale a photo down to about 1,500–2,000 px "
              "on its long side anyway.")
EXPOSED = "X-Bench-Panel, X-Bench-Seats, X-Bench-Conversation, X-Bench-Model"
HEADER_LIST = re.compile(r"^[A-Za-z0-9-]{1,64}(\s*,\s*[A-Za-z0-9-]{1,64}){0,31}$")
SECRET_QUERY = re.compile(r"([?&](?:key|api_key|access_token)=)[^&\s]*", re.IGNORECASE)


def bind_address():
    return os.environ.get("BENCH_BIND", "").strip() or "127.0.0.1"


def is_loopback(address):
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def admin_token():
    return os.environ.get("BENCHWARMERS_ADMIN_TOKEN", "")


def _env_list(name):
    return [item.strip().lower() for item in os.environ.get(name, "").split(",") if item.strip()]


def public():
    """`(host, origin)` of BENCHWARMERS_PUBLIC_URL, both `""` when unset or invalid."""
    raw = os.environ.get("BENCHWARMERS_PUBLIC_URL", "").strip().rstrip("/")
    if not raw:
        return "", ""
    parts = urllib.parse.urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return "", ""
    netloc = parts.netloc.lower()
    return netloc, f"{parts.scheme}://{netloc}"


def startup_problem(address):
    """The START-2 refusal for this configuration, or `""` when it is safe to bind."""
    token = admin_token()
    if token and len(token) < 16:
        return (f"BENCHWARMERS_ADMIN_TOKEN is {len(token)} characters; the minimum is 16. Make one with: "
                "python -c \"import secrets; print(secrets.token_urlsafe(24))\"")
    raw = os.environ.get("BENCHWARMERS_PUBLIC_URL", "").strip()
    if raw and not public()[0]:
        return f"BENCHWARMERS_PUBLIC_URL must be http(s)://host[:port], not {raw!r}"
    if not token and not is_loopback(address):
        return (f"refusing to listen on {address}: beyond this machine a login is needed. Set "
                "BENCHWARMERS_ADMIN_TOKEN (16+ characters), or bind to this machine only with BENCH_BIND=127.0.0.1.")
    return ""


def is_gateway_route(path):
    """ROUTE-1: which paths get the gateway's behaviour on either port."""
    path = path.split("?", 1)[0]
    if path.startswith(("/v1/", "/v1beta/", "/bench/")):
        return True
    if path.rstrip("/") in OLLAMA_ROUTES:
        return True
    collapsed = re.sub("/+", "/", path).rstrip("/")
    return collapsed in ("/mcp", "/v1/mcp")


def allowed_hosts(port):
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", *_env_list("BENCH_ALLOWED_HOSTS")}
    host = public()[0]
    if host:
        hosts.add(host)
    return hosts


def allowed_origins(port):
    origins = {f"http://{h}" for h in allowed_hosts(port)} | set(_env_list("BENCH_ALLOWED_ORIGINS"))
    origin = public()[1]
    if origin:
        origins.add(origin)
    return origins


def host_problem(headers, port):
    """HOST-1..4: `""` when the Host header names this server, else the 403 message."""
    value = (headers.get("Host") or "").strip().lower()
    if value in allowed_hosts(port):
        return ""
    shown = repr(value) if value else "'(none)'"
    return f"unknown Host {shown}; set BENCHWARMERS_PUBLIC_URL or BENCH_ALLOWED_HOSTS to add one"


def origin_allowed(headers, port):
    origin = (headers.get("Origin") or "").strip()
    return bool(origin) and origin.lower() in allowed_origins(port)


def write_problem(headers, port, gateway, cap):
    """WRITE-1..6 for a POST: `(status, message)` of the first failing check, or None. Never reads the body."""
    problem = host_problem(headers, port)
    if problem:
        return 403, problem
    if (headers.get("Sec-Fetch-Site") or "").lower() == "cross-site":
        if not (gateway and origin_allowed(headers, port)):
            return 403, "cross-site requests are refused"
    origin = (headers.get("Origin") or "").strip().lower()
    if origin and origin not in allowed_origins(port):
        return 403, f"Origin '{origin}' is not allowed; set BENCH_ALLOWED_ORIGINS to add one"
    if not (headers.get("Content-Type") or "").lower().startswith("application/json"):
        return 415, "send Content-Type: application/json"
    length = content_length(headers)
    if isinstance(length, tuple):
        return length
    if length > cap:
        message = f"body is {length:,} bytes; the limit is {cap:,}"
        return 413, message + (IMAGE_HINT if gateway else "")
    return None


def content_length(headers):
    """The body length (WRITE-5), or `(400, message)` when it is not a usable number."""
    raw = (headers.get("Content-Length") or "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        return 400, "Content-Length is not a number"
    if value < 0:
        return 400, "Content-Length is negative"
    return value


def cors_headers(headers, port):
    """CORS-3 headers for a reply to an allowed Origin; none otherwise."""
    if not origin_allowed(headers, port):
        return {}
    return {"Access-Control-Allow-Origin": headers.get("Origin").strip(),
            "Access-Control-Expose-Headers": EXPOSED, "Vary": "Origin"}


def preflight_headers(headers):
    """CORS-4/5: what a 204 preflight answers with (the CORS-3 headers are added by the caller)."""
    allow = "Authorization, Content-Type"
    asked = (headers.get("Access-Control-Request-Headers") or "").strip()
    if asked and HEADER_LIST.match(asked):
        allow += ", " + asked
    return {"Access-Control-Allow-Methods": "GET, POST, OPTIONS", "Access-Control-Allow-Headers": allow,
            "Access-Control-Max-Age": "600"}


def identify(headers, path):
    """The caller's name, or `(status, message[, headers])` refusing it.

    Keys are not required yet: every caller that passed the Host and write checks is `local`.
    """
    return "local", None


def access_line(method, path, status, who):
    """LOG-1..3: one line per response; never a query string, never a control character."""
    route = path.split("?", 1)[0]
    if route.startswith("/connect/callback/"):
        route = "/connect/callback/..."
    route = ascii(route[:200])[1:-1]
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    return f"{stamp} {method or '-'} {route} {status} {who or '-'}"


def mask_secrets(text):
    """LOG-5: the value of any key=, api_key= or access_token= query parameter becomes `...`."""
    return SECRET_QUERY.sub(r"\1...", text)


def log(line):
    sys.stderr.write(line + "\n")
