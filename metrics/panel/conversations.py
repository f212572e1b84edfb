"""Route mode's conversations: which member a conversation is on, kept in the data folder (formats.md §11.4).

A conversation is known by its key (RT-7): the collection, the caller, the system text and the first
user message, so every turn an agent sends of one conversation finds the same record, whatever API it
spoke. The record says which member answers it (`alias`), the order to fail over in (`order`), the
models that have answered it (`models`: the call id `<conv>.<n>` is a model's place in that list) and
how many turns it has had.

Beyond the reference, which kept these in one process's memory (improvement 18): each record is kept
by the store, named by its key: a small JSON file under `runs/gateway/conversations/` (`store.keyed`),
or a row in Postgres (docs/replicas.md), so a restarted gateway, the dashboard's port, every `--workers`
process and every replica keep a conversation on its model. A record is read and changed under its own
lock. Records idle for STICKY_TTL are forgotten: a lookup ignores them, and a sweep at most once per
SWEEP_EVERY seconds deletes them.
"""

import datetime
import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Container, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ..core import keys, paths
from ..store import store
from ..wire import common

T = TypeVar("T")
Record = dict[str, Any]  # a conversation's record: `{conv, alias, order, models, turns, task, at}`
Answered = tuple[str, int, bool]  # (call id, turn number, whether the model is new to the conversation)

STICKY_TTL = 3600
SWEEP_EVERY = 60
TASK_CHARS = 90

_swept = {"at": 0.0}
_sweep_lock = threading.Lock()


def folder() -> Path:
    """Where the folder store keeps the records (`store.keyed`)."""
    return paths.file(*store.CONVERSATIONS)


def first_user_text(messages: Iterable[object]) -> str:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return common.text_of(message.get("content"))
    return ""


def key(collection: str, caller: str, messages: list[Any]) -> str:
    """RT-7: the first 24 hex of SHA-256 over the collection (no `bench/`), the caller, the system texts joined
    by a newline and the first user message's text. The API it came through is not part of it."""
    system = "\n".join(common.text_of(m.get("content")) for m in messages
                       if isinstance(m, dict) and m.get("role") in ("system", "developer"))
    joined = "\0".join((collection, caller, system, first_user_text(messages)))
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def new_id() -> str:
    """`r<YYYYmmdd-HHMMSS local>-<16 hex>` (RT-9): 64 random bits, as a panel's id carries, so a conversation's
    call ids (`<conv>.<n>`, which a verdict names) cannot be guessed (issue 29 item 9; they had 4 hex)."""
    return "r" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(8)


def _fresh(record: object, now: float) -> bool:
    return isinstance(record, dict) and isinstance(record.get("at"), (int, float)) and now - record["at"] <= STICKY_TTL


def _change(conv_key: str, change: Callable[[Record | None], tuple[T, Record | None]]) -> T:
    """Read, change and write one record under its lock, in the store (a record idle too long reads as
    none); returns what `change` returns. `change(record)` gives `(result, the record to store or None to
    leave it as it is)`."""
    def live(record: Record | None) -> tuple[T, Record | None]:
        return change(record if _fresh(record, time.time()) else None)

    return store.current().change(store.CONVERSATIONS, conv_key, live)


def find(conv_key: str) -> Record | None:
    """The live record of `conv_key`, or None when there is none or it has been idle too long."""
    record = store.current().find(store.CONVERSATIONS, conv_key)
    return record if _fresh(record, time.time()) else None


def claim(conv_key: str, eligible: Container[str], rank: Callable[[], list[str]], messages: list[Any]) -> Record:
    """The record this turn runs under (RT-9): the live one when its member may take this turn; else a new
    record, or the old one re-ranked (its id, models and turns kept), with `rank()`'s order. Two first
    turns arriving together share one record, the first written."""
    _sweep()
    found = find(conv_key)
    if found is not None and found.get("alias") in eligible:
        return found
    order = rank()  # outside the record's lock: ranking reads the offload log, in the store too

    def change(record: Record | None) -> tuple[Record, Record | None]:
        if record is not None and record.get("alias") in eligible:
            return record, None
        record = {**(record or _record(messages)), "alias": order[0], "order": order, "at": time.time()}
        return record, record

    return _change(conv_key, change)


def _record(messages: list[Any]) -> Record:
    # cleaned before the cut, as the panel's task is: no key or user:password URL is ever half-kept
    task = keys.clean(" ".join(first_user_text(messages).split()), TASK_CHARS)
    return {"conv": new_id(), "turns": 0, "models": [], "task": task}


def unstored(messages: list[Any], order: list[str]) -> Record:
    """A record for a turn whose conversation could not be stored (the data folder refused it)."""
    return {**_record(messages), "alias": order[0], "order": order, "at": time.time()}


def _answered(record: Record, alias: str) -> tuple[Answered, Record]:
    """`record` after `alias` answered a turn, and `(call id, turn number, whether the model is new to it)`."""
    models = list(record.get("models") or [])
    new = alias not in models
    if new:
        models.append(alias)
    record = {**record, "models": models, "alias": alias, "at": time.time(), "turns": int(record.get("turns") or 0) + 1}
    return (f"{record['conv']}.{models.index(alias) + 1}", record["turns"], new), record


def unstored_finish(claimed: Record, alias: str) -> Answered:
    """`finish()`'s answer when the record could not be written: worked out from the claim alone."""
    return _answered(claimed, alias)[0]


def finish(conv_key: str, claimed: Record, alias: str) -> Answered:
    """RT-16: a member answered a turn. Returns `(call id, turn number, whether the model is new to it)`.

    A record swept away while the turn ran (idle for an hour before it) is written back from the claim."""
    def change(record: Record | None) -> tuple[Answered, Record]:
        return _answered(record if record is not None and record.get("conv") == claimed["conv"] else claimed, alias)

    return _change(conv_key, change)


def _sweep() -> None:
    """Forget the records idle for more than STICKY_TTL, at most once per SWEEP_EVERY seconds per process."""
    now = time.time()
    with _sweep_lock:
        if now - _swept["at"] < SWEEP_EVERY:
            return
        _swept["at"] = now
    store.current().sweep(store.CONVERSATIONS, STICKY_TTL)
