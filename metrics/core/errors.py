"""The errors a request is refused with, each beside the answer it becomes (gateway.md §14, ERR-1, ERR-2).

Every class here names its HTTP `status` (and `retry_after`, the seconds of a `Retry-After` header,
where a client should wait). Its arguments are its messages, one sentence each: the gateway answers
with the first in the route's format (ERR-1), the dashboard lists them all (`body()`: `{"ok": false,
"errors": [...]}`, RESP-1, validators report every fault at once). Its keywords are the extra fields a
dashboard reply carries beside them (a model edit's `changed` and `sync`, a sign-in's `state`).

`planned(exc)` is the one place any exception becomes a refusal. A class here answers with its own
status; of the rest only two are planned, both from `core.fileio`, which sits below this module: the
data folder refusing a write, and a file a change would be written over that cannot be read. Anything
else is a bug, never the caller's fault: a 500 whose message carries a short id, the id its traceback
is logged under on stderr. Built-in exceptions mean nothing here: a `KeyError` or a `ValueError` a
handler did not plan is a bug like any other.

| Error | Status | Raised by |
|---|---|---|
| `Invalid` (a ValueError) | 400 | the request asks what cannot be done: no prompt, a bad image, an unknown shape, no seat that can see; a verdict's fields; a dashboard form's fields or rules (RESP-3) |
| `BadBody` (an Invalid) | 400 | the body is no JSON object (GW-3 step 4; the dashboard's `bad request: ...`, RESP-3) |
| `Unsupported` (a ValueError) | 400 | a format that cannot put the request to a panel (GW-4) |
| `Unusable` (a RuntimeError) | 400 | endpoints.json or keys.json cannot be read, or no endpoint is configured (the dashboard's RESP-3, API-4) |
| `fileio.Unreadable` | 400 | a file a change would be written over cannot be read (RESP-6) |
| `NotFound` (a LookupError) | 404 | what the request names is not there: a seat, a Discover row, a file, a route |
| `UnknownCollection` (a NotFound) | 404 | the panel: the collection is not (or no longer) there (IMP-14) |
| `UnknownCall` (a NotFound, a KeyError) | 404 | a verdict on a call id the offload log does not hold (VRD-1) |
| `PromptTooLarge` (a ValueError) | 413 | the panel: the prompt does not fit a member's context window |
| `TooLarge` (an Invalid) | 413 | a verdict's note or claim past its bound, or too many claims (issue 29) |
| `DailyCap` | 429 + Retry-After | a gateway key's verdicts for today are spent (issue 29) |
| `Refused` | the check's | a check made before the route runs, or a key's scope and rate cap (GUARD, DSP-2, DSP-3) |
| `TurnFailed` | 429, 502 or the upstream's | route mode: every member failed, or one failed part way (RT-16, RT-17) |
| `Broken` (a LookupError) | 503 | collections.json, or the collection named, is broken |
| `NoSeat` (a LookupError) | 503 | the panel: no member sits and no explorer could be seated |
| `NoMembers` (a LookupError) | 503 | route mode: the collection lists no member (RT-2) |
| `Busy` | 503 + Retry-After | the panel: too many panels in flight |
| `fileio.WriteFailed` | 507 or 503 | a write the data folder refused (`paths.unwritable`) |
| `StoreUnavailable` (an OSError) | 503 + Retry-After | the Postgres store several replicas share cannot be reached (docs/replicas.md); at start, the replica does not start |
| `Bug` | 500 | anything else: `<what> failed (<Type>: <message>); error id <8 hex>` |
| `Unshown` | 200 | a dashboard view that has nothing to show says why, and the page draws it (OB-6, OB-19) |

What a seat meets upstream (the client's `Stop` and `HTTPError`, the transport's timeouts) is never a
refusal: it ends that seat as `error`.
"""

import secrets
import traceback
from collections.abc import Mapping
from typing import Any

from . import console, fileio, paths


# What each status a route answers with means here (issue 33, OAS-1: the OpenAPI document's response
# descriptions), read off the table above and the checks a request meets before its route (`server.routing`).
MEANINGS = {
    200: "the answer",
    202: "taken; nothing to answer",
    303: "signed out: the page is at /login (AUTH-4)",
    400: "the request cannot be done as asked: its body, a field, a rule it breaks (Invalid, BadBody, Unsupported, "
         "Unusable, Unreadable), or a Content-Length that is no number (WRITE-5)",
    401: "no usable credential: a gateway key (GW-2), or the admin login (AUTH-4)",
    403: "refused by a check: the Host (HOST-1..4), a cross-site write or an Origin (WRITE-2, WRITE-3), or a key's "
         "scope (DSP-2)",
    404: "what the request names is not there: a collection, a call id, a seat, a row, a file (NotFound)",
    405: "the path takes another method",
    411: "a chunked body: send a Content-Length (WRITE-5)",
    413: "too large: the body past the port's cap (WRITE-6), a prompt past a member's context window, or a "
         "verdict's note or claims past their bounds (PromptTooLarge, TooLarge)",
    415: "send Content-Type: application/json (WRITE-4)",
    429: "wait (Retry-After): a key's rate cap or daily verdicts (DSP-3, DailyCap), wrong admin tokens, or every "
         "member rate-limited (TurnFailed)",
    500: "a bug: the message names the error id its traceback is logged under (Bug)",
    502: "route mode: the member failed (TurnFailed)",
    503: "not now: too many panels (Busy, Retry-After), a broken collections.json or collection, no seat or no "
         "member (Broken, NoSeat, NoMembers), or the data folder refusing a write",
    507: "the data folder is full (WriteFailed)",
}


class Refusal(Exception):
    """A request answered with `status` and the messages given, plus `Retry-After` when `retry_after` is set
    and any `headers` the raiser adds; keywords are the extra fields of a dashboard reply."""

    status = 500
    retry_after = 0

    def __init__(self, *messages: str, **details: object) -> None:
        super().__init__(*messages)
        self.messages = list(messages)
        self.details = details
        self.headers: dict[str, str] = {}

    @property
    def message(self) -> str:
        return self.messages[0] if self.messages else ""

    def reply_headers(self) -> dict[str, str]:
        """`Retry-After` when a client should wait, and the headers the raiser added."""
        wait = {"Retry-After": str(self.retry_after)} if self.retry_after else {}
        return {**wait, **self.headers}

    def body(self) -> dict[str, Any]:
        """The dashboard's reply (ERR-2, RESP-1): every message, and the extra fields the raiser gave."""
        return {"ok": False, "errors": list(self.messages), **self.details}


class Invalid(Refusal, ValueError):
    """The request asks what cannot be done as asked: its fields, or a rule it breaks."""

    status = 400


class BadBody(Invalid):
    """The body is no JSON object: `message` is the gateway's sentence, `detail` the parser's own words,
    which the dashboard says after `bad request: ` (RESP-3)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message, changed=[], sync="")
        self.detail = detail or message

    def body(self) -> dict[str, Any]:
        return {**super().body(), "errors": [f"bad request: {self.detail}"]}


class Unsupported(Refusal, ValueError):
    """A request this format cannot put to a panel (GW-4)."""

    status = 400


class Unusable(Refusal, RuntimeError):
    """A configuration file the request needs cannot be read, or names nothing to use (no endpoint yet).
    Nothing is written over it; the dashboard says it as a 400 (RESP-3, API-4)."""

    status = 400


class NotFound(Refusal, LookupError):
    """What the request names is not there."""

    status = 404


class UnknownCollection(NotFound):
    """The collection is not (or no longer) in collections.json."""


class UnknownCall(NotFound, KeyError):
    """A call id the offload log does not hold (a KeyError to its readers, as the log is keyed by it)."""


class PromptTooLarge(Refusal, ValueError):
    """The prompt does not fit a member's context window."""

    status = 413


class TooLarge(Invalid):
    """A verdict's note or claim past its bound, or too many claims: what a caller sends may not make the
    offload log grow without bound."""

    status = 413


class DailyCap(Refusal):
    """A gateway key's verdicts for today are spent; the raiser sets `retry_after` to the seconds left until
    midnight."""

    status = 429


class Refused(Refusal):
    """A check's refusal, made before the route runs or by a key's scope and rate cap: the check decides the
    status (`guard` and `gatekeys` answer `(status, message[, headers])`)."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers.update(headers or {})


class TurnFailed(Refusal):
    """RT-16/RT-17: the turn has no answer: every member tried failed (429 when all were rate-limited,
    else 502), or the member failed after it had begun to answer (its upstream status, else 502)."""

    def __init__(self, message: str, status: int, retry_after: int = 0, alias: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.alias = alias
        if alias:
            self.headers["X-Bench-Model"] = alias


class Broken(Refusal, LookupError):
    """The configuration a request needs is broken: collections.json cannot be read, or the
    collection named is no object or has a field of the wrong type. Its message names the file and
    the fault; a 404 "none yet" would send the caller after the wrong mistake."""

    status = 503


class NoSeat(Refusal, LookupError):
    """No member of the collection sits and no explorer could be seated."""

    status = 503


class NoMembers(Refusal, LookupError):
    """RT-2: the collection lists no member to route to."""

    status = 503


class Busy(Refusal):
    """Too many panels in flight in this process, or for this key."""

    status = 503
    retry_after = 2


class StoreUnavailable(Refusal, OSError):
    """The shared store cannot be used: no server, a lost connection, a refused login, a schema newer than this
    bench's. An OSError, as `fileio.WriteFailed` is, so what keeps an answer when the data folder refuses a write
    (route mode's conversation, its log line) keeps it when the store is away too."""

    status = 503
    retry_after = 5


class Unshown(Refusal):
    """A dashboard view with nothing to show: it says why, and is still a 200 so the page draws the reason."""

    status = 200


class Bug(Refusal):
    """An exception nobody planned for: a 500 naming the id its traceback is logged under on stderr."""

    status = 500

    def __init__(self, exc: BaseException, what: str = "the server") -> None:
        self.id = secrets.token_hex(4)
        super().__init__(f"{what} failed ({type(exc).__name__}: {exc}); error id {self.id}")
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        console.say(f"error {self.id}: {what} failed", *trace.splitlines())  # LOG-7: it may quote an upstream


def planned(exc: BaseException, what: str = "the server") -> Refusal:
    """The refusal `exc` is, or stands for: a class here as it is, the data folder refusing a write as its
    507 or 503, a file a change would overwrite that cannot be read as a 400; any other exception a `Bug`
    (logged now, with `what` saying what failed)."""
    if isinstance(exc, Refusal):
        return exc
    if isinstance(exc, fileio.WriteFailed):
        return Refused(*paths.unwritable(exc))
    if isinstance(exc, fileio.Unreadable):
        return Refused(400, str(exc))
    return Bug(exc, what)

