"""The errors a request is refused with, each beside the answer it becomes (gateway.md §14, ERR-1).

Every class here names its HTTP `status` (and `retry_after`, the seconds of a `Retry-After` header,
where a client should wait), and its first argument is the message. `refusal(exc)` reads the answer
off the exception instead of testing classes in an order that matters. Built-in exceptions a panel
raises are answered the same way, by the nearest of their classes that `BUILT_IN` names:

| Error | Status | Raised by |
|---|---|---|
| `Unsupported` (a ValueError) | 400 | a format that cannot put the request to a panel (GW-4) |
| any other `ValueError` | 400 | the panel: a bad image, no prompt, no seat can see, an unknown shape |
| `PromptTooLarge` (a ValueError) | 413 | the panel: the prompt does not fit a member's context window |
| `UnknownCollection` (a LookupError) | 404 | the panel: the collection is not (or no longer) there (IMP-14) |
| `Broken` (a LookupError) | 503 | collections: collections.json, or the collection named, is broken |
| any other `LookupError` | 503 | the panel: no seat (a KeyError among them) |
| `Busy` | 503 + Retry-After | the panel: too many panels in flight |
| an `OSError` with an errno (`fileio.WriteFailed`) | 507 or 503 | a refused write (`paths.unwritable`) |
| anything else | 500 | `the panel failed (<Type>: <message>)` |

`fileio.WriteFailed` stays in fileio: fileio is below this module (which reads the data folder's
path through `paths`), and its answer is every OSError's. What a seat meets upstream (the client's
`Stop` and `HTTPError`, the transport's timeouts) is never a refusal: it ends that seat as `error`.
"""

from collections.abc import Callable
from typing import Any

from . import fileio, paths

Answer = tuple[int, str] | tuple[int, str, dict[str, str]]  # status, message[, headers]


class Refusal(Exception):
    """An error the gateway answers with `status` and its message, plus `Retry-After` when `retry_after` is set."""

    status = 500
    retry_after = 0

    def answer(self) -> Answer:
        """`(status, message)`, or `(status, message, headers)` when the answer carries a header."""
        message = self.args[0] if self.args else str(self)
        if self.retry_after:
            return self.status, message, {"Retry-After": str(self.retry_after)}
        return self.status, message


class Unsupported(Refusal, ValueError):
    """A request this format cannot put to a panel (GW-4)."""

    status = 400


class PromptTooLarge(Refusal, ValueError):
    """The prompt does not fit a member's context window."""

    status = 413


class UnknownCollection(Refusal, LookupError):
    """The collection is not (or no longer) in collections.json."""

    status = 404


class Broken(Refusal, LookupError):
    """The configuration a request needs is broken: collections.json cannot be read, or the
    collection named is no object or has a field of the wrong type. Its message names the file and
    the fault; a 404 "none yet" would send the caller after the wrong mistake."""

    status = 503


class Busy(Refusal):
    """Too many panels in flight in this process, or for this key."""

    status = 503
    retry_after = 2


BUILT_IN: dict[type[BaseException], Callable[[Any], tuple[int, str]]] = {
    fileio.WriteFailed: paths.unwritable,  # only a write the data folder refused; any other OSError is a 500
    ValueError: lambda exc: (400, str(exc)),
    LookupError: lambda exc: (503, exc.args[0] if exc.args else str(exc)),  # a KeyError's str() adds quotes
}


def refusal(exc: BaseException) -> Answer:
    """`(status, message)`, or `(status, message, headers)`, for any exception a request meets."""
    if isinstance(exc, Refusal):
        return exc.answer()
    for kind in type(exc).__mro__:
        answer = BUILT_IN[kind](exc) if kind in BUILT_IN else None
        if answer:
            return answer
    return 500, f"the panel failed ({type(exc).__name__}: {exc})"
