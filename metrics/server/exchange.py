"""What passes between a route's handler and the connection: the `Request` it reads and the `Reply` it
returns (starlette's `Request` and `Response`, in the standard library).

A handler is a plain function. It takes the `Request` (the method, the path as sent, its route's row and
what the row's `<name>`s read, the query, the headers, the body read once and parsed, who is calling) and
returns a `Reply`, or raises a refusal (`core.errors`), which the server answers in the route's shape.
The server (`server.routing.Handler`) reads the body and writes every reply, with the headers its port
adds (CORS, RESP-2); a handler never touches the socket, save through the `write` a streamed reply is
handed while the server holds the connection open.
"""

import dataclasses
import json
import urllib.parse
from collections.abc import Callable, Mapping
from email.message import Message
from typing import Any

from ..core import errors
from ..wire import routes

JSON = "application/json"
# a client that went away mid-reply: the writing stops, whatever the handler was doing goes on
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)

Write = Callable[[bytes], object]


@dataclasses.dataclass
class Request:
    """One request, read and checked: a handler's whole view of it."""

    method: str
    path: str  # as sent, query and all (RT-6 matches some dashboard routes on it)
    route: routes.Route
    params: dict[str, str]  # what the row's `<name>`s read, percent-decoded
    headers: Message
    who: str  # a gateway key's name, `local`, `admin`, or `-` while no one is identified
    port: int  # the port the server listens on
    host: str  # the address it listens on (MCP-20 calls this very server back)
    address: str  # the client's, as the access log and the login backoff know it
    body: Any = None  # the JSON object of a POST, its bytes on a `raw` row, None for a GET

    @property
    def query(self) -> dict[str, list[str]]:
        """The query string's parameters, each with its values in order (blank values left out)."""
        return urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)

    def arg(self, name: str) -> str:
        """The first value of the query parameter `name`, "" when it has none."""
        return (self.query.get(name) or [""])[0]


@dataclasses.dataclass(frozen=True)
class Reply:
    """A status and what follows it. `json`: the body is a JSON document, which the port types and caches its
    own way (RESP-2); `stream` writes a body of unknown length while the server holds the connection (no
    Content-Length: the close ends it, FMT-1); `who` is the caller the reply names when the handler identified
    one (a login)."""

    status: int
    body: bytes = b""
    content_type: str = ""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    cache: str = ""  # Cache-Control
    stream: Callable[[Write], object] | None = None
    who: str | None = None
    json: bool = False


def json_reply(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Reply:
    """JSON, ASCII-escaped (RESP-2); the port adds its own headers to it."""
    return Reply(status, json.dumps(payload).encode("ascii"), JSON, headers or {}, json=True)


def text_reply(status: int, text: str, content_type: str, headers: Mapping[str, str] | None = None) -> Reply:
    """A reply that is no JSON (a CSV download, a page), never cached."""
    return Reply(status, text.encode("utf-8"), content_type, headers or {}, cache="no-store")


def html_reply(status: int, text: str, headers: Mapping[str, str] | None = None) -> Reply:
    """A page (RESP-5)."""
    return text_reply(status, text, "text/html; charset=utf-8", headers)


def stream_reply(content_type: str, write: Callable[[Write], object],
                 headers: Mapping[str, str] | None = None) -> Reply:
    """A 200 streamed by `write(send)`: each `send(bytes)` goes out at once (STR-1, MCP-19)."""
    return Reply(200, content_type=content_type, headers=headers or {}, cache="no-cache", stream=write)


def empty_reply(status: int, headers: Mapping[str, str] | None = None) -> Reply:
    """No body: a notification's 202 (MCP-4), a redirect's 303."""
    return Reply(status, headers=headers or {})


def json_body(raw: bytes) -> dict[str, Any]:
    """The one body reader's parse (GW-3 step 4, RESP-4, IMP-2): `{}` for an empty body, else the JSON object
    it holds; `BadBody` when it is no JSON, or JSON but not an object."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise errors.BadBody("body is not JSON", str(exc)[:200]) from None
    if not isinstance(body, dict):
        raise errors.BadBody("body must be a JSON object")
    return body
