"""A thin HTTP client of a running Benchwarmers server: what the `bench` CLI and the MCP server's tools
send and how a failure is told apart (suite-cli-mcp.md §9.1, MCP-14).

Standard library only, and nothing here reads the data folder: the CLI and the stdio MCP server run on
machines (and in containers) where the server's data is somewhere else, so they know only a URL and
the caller's credentials. Each failure is its own exception carrying what its message needs; the CLI
(CLI-3, CLI-4) and the MCP server (MCP-14) word them differently, so the wording lives with them.

The default server: the dashboard's port (8122, or `BENCH_PORT`), which answers the gateway's routes
too. Decision (the spec is silent): when no URL was given and nothing listens there, the gateway's own
port (8123, or `BENCH_GATEWAY_PORT`) is tried once, so `bench gateway` followed by `bench ask` works
without setting `BENCHWARMERS_URL`. A URL given explicitly is never second-guessed.
"""

import dataclasses
import json
import socket
import urllib.error
import urllib.request

from .. import __version__
from ..core import settings

DEFAULT_TIMEOUT = float(settings.default("BENCHWARMERS_TIMEOUT"))
GATEWAY_PREFIXES = ("/v1/", "/bench/")  # paths that take a gateway key; every other takes the admin token


class Problem(Exception):
    """Something came between the caller and a usable reply."""


class Unreachable(Problem):
    """Nothing answers at `base` (connection refused, no route, a name that does not resolve), nor at the
    default's fallback `also` when one was tried."""

    def __init__(self, base, reason, also=""):
        super().__init__(f"{base}: {reason}")
        self.base, self.reason, self.also = base, reason, also


class NoAnswer(Problem):
    """The server took longer than `seconds` to reply."""

    def __init__(self, base, seconds):
        super().__init__(f"{base}: no answer in {seconds:g} s")
        self.base, self.seconds = base, seconds


class Refused(Problem):
    """An HTTP error status from the server at `base`; `payload` is the body's JSON when it was JSON, else None."""

    def __init__(self, base, method, path, status, reason, body):
        super().__init__(f"{method} {path} refused ({status})")
        self.base, self.method, self.path, self.status, self.reason, self.body = base, method, path, status, reason, body
        try:
            self.payload = json.loads(body)
        except ValueError:
            self.payload = None

    def error_message(self):
        """The JSON's `error.message` (or an Ollama-style `error` string), else None."""
        error = self.payload.get("error") if isinstance(self.payload, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        return error if isinstance(error, str) else None

    def text(self, limit):
        """The body as text, at most `limit` characters, or "" when empty."""
        return self.body.decode("utf-8", "replace").strip()[:limit]


class NotJSON(Problem):
    """A 2xx reply that is not JSON (`html` when it was a web page: an older server's catch-all)."""

    def __init__(self, base, path, content_type):
        super().__init__(f"{base}{path} answered {content_type or 'no content type'}")
        self.base, self.path, self.html = base, path, content_type.startswith("text/html")


def base_url(url):
    """§9: the server base with a trailing `/` and a trailing `/v1` removed."""
    url = url.strip().rstrip("/")
    return url[:-3].rstrip("/") if url.endswith("/v1") else url


def local_url(variable):
    """`http://127.0.0.1:<port>`, the port from `variable` when it holds one, else its default."""
    value = settings.env(variable).strip()
    return f"http://127.0.0.1:{int(value) if value.isdigit() else settings.default(variable)}"


def env_timeout():
    """`BENCHWARMERS_TIMEOUT` in seconds (a panel can take minutes), else DEFAULT_TIMEOUT."""
    try:
        value = float(settings.env("BENCHWARMERS_TIMEOUT").strip())
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


@dataclasses.dataclass(frozen=True)
class Server:
    """Where requests go and what they carry.

    `key` is the Bearer on gateway paths, `admin_token` on the others (CLI-1); `forwarded` are headers
    sent on every request instead (the MCP HTTP transport passes its caller's own credentials on, so the
    caller's scope and rate cap hold, MCP-20). `fallback` is tried once when nothing listens at `base`.
    """

    base: str
    timeout: float = DEFAULT_TIMEOUT
    key: str = ""
    admin_token: str = ""
    forwarded: tuple = ()
    fallback: str = ""

    @classmethod
    def from_env(cls, url=None):
        """§9's environment; `url` (a `--url`) wins over `BENCHWARMERS_URL`, which wins over the default."""
        given = url or settings.env("BENCHWARMERS_URL").strip()
        return cls(base=base_url(given or local_url("BENCH_PORT")), timeout=env_timeout(),
                   key=settings.env("BENCHWARMERS_KEY").strip(),
                   admin_token=settings.env("BENCHWARMERS_ADMIN_TOKEN").strip(),
                   fallback="" if given else local_url("BENCH_GATEWAY_PORT"))

    def headers(self, path, body):
        """CLI-1: JSON both ways, and the bearer the path takes, only when it is set."""
        headers = {"Accept": "application/json", "User-Agent": f"bench/{__version__}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.forwarded:
            headers.update(dict(self.forwarded))
            return headers
        token = self.key if path.startswith(GATEWAY_PREFIXES) else self.admin_token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers


def open_reply(server, method, path, body=None, accept=None):
    """The open HTTP reply to `method path` (2xx only), and the server it came from (the fallback when the
    base did not answer). Raises Unreachable, NoAnswer or Refused."""
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    headers = server.headers(path, body)
    if accept:
        headers["Accept"] = accept
    try:
        return _send(server.base, method, path, data, headers, server.timeout), server
    except Unreachable as exc:
        if not server.fallback or server.fallback == server.base:
            raise
        first = exc
    try:
        moved = dataclasses.replace(server, base=server.fallback, fallback="")
        return _send(moved.base, method, path, data, headers, server.timeout), moved
    except Unreachable:
        raise Unreachable(server.base, first.reason, also=server.fallback) from None


def _send(base, method, path, data, headers, timeout):
    request = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        with exc:
            raise Refused(base, method, path, exc.code, exc.reason, exc.read()) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise NoAnswer(base, timeout) from None
        reason = getattr(exc.reason, "strerror", None) or str(exc.reason)
        raise Unreachable(base, reason) from None
    except (TimeoutError, socket.timeout):
        raise NoAnswer(base, timeout) from None
    except (ConnectionError, OSError) as exc:
        raise Unreachable(base, exc.strerror or str(exc)) from None


def call(server, method, path, body=None):
    """`method path` with a JSON `body`; the reply's JSON. Raises a Problem."""
    reply, where = open_reply(server, method, path, body)
    with reply:
        content_type = reply.headers.get("Content-Type", "")
        try:
            raw = reply.read()
        except (TimeoutError, socket.timeout):
            raise NoAnswer(where.base, server.timeout) from None
    if "json" not in content_type:
        raise NotJSON(where.base, path, content_type)
    try:
        return json.loads(raw)
    except ValueError:
        raise NotJSON(where.base, path, content_type) from None
