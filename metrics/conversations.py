"""Route mode's conversations: which member a conversation is on, kept in the data folder (formats.md §11.4).

A conversation is known by its key (RT-7): the collection, the caller, the system text and the first
user message, so every turn an agent sends of one conversation finds the same record, whatever API it
spoke. The record says which member answers it (`alias`), the order to fail over in (`order`), the
models that have answered it (`models`: the call id `<conv>.<n>` is a model's place in that list) and
how many turns it has had.

Beyond the reference, which kept these in one process's memory (improvement 18): each record is a
small JSON file under `runs/gateway/conversations/`, named by its key, so a restarted gateway, the
dashboard's port and every `--workers` process keep a conversation on its model. One file per
conversation keeps a turn's cost independent of how many conversations are live; a record is read
without a lock (files are replaced whole) and changed under its own lock, so two first turns arriving
together share one record, the first written (RT-9). Records idle for STICKY_TTL are forgotten: a
lookup ignores them, and a sweep at most once per SWEEP_EVERY seconds deletes their files.
"""

import datetime
import hashlib
import json
import os
import secrets
import threading
import time

from metrics import fileio, paths
from metrics.formats import common

STICKY_TTL = 3600
SWEEP_EVERY = 60
TASK_CHARS = 90

_swept = {"at": 0.0}
_sweep_lock = threading.Lock()


def folder():
    return paths.file("runs", "gateway", "conversations")


def first_user_text(messages):
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return common.text_of(message.get("content"))
    return ""


def key(collection, caller, messages):
    """RT-7: the first 24 hex of SHA-256 over the collection (no `bench/`), the caller, the system texts joined
    by a newline and the first user message's text. The API it came through is not part of it."""
    system = "\n".join(common.text_of(m.get("content")) for m in messages
                       if isinstance(m, dict) and m.get("role") in ("system", "developer"))
    joined = "\0".join((collection, caller, system, first_user_text(messages)))
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def new_id():
    """`r<YYYYmmdd-HHMMSS local>-<4 hex>` (RT-9)."""
    return "r" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _path(conv_key):
    return folder() / f"{conv_key}.json"


def _fresh(record, now):
    return isinstance(record, dict) and isinstance(record.get("at"), (int, float)) and now - record["at"] <= STICKY_TTL


def find(conv_key):
    """The live record of `conv_key` (a copy), or None when there is none or it has been idle too long."""
    try:
        record = json.loads(_path(conv_key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if _fresh(record, time.time()) else None


def _change(conv_key, change):
    """Read, change and replace one record under its lock; returns what `change` returns."""
    path = _path(conv_key)
    with fileio.lock(path):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = None
        if not _fresh(record, time.time()):
            record = None
        result, record = change(record)
        fileio.write_atomic(path, json.dumps(record, ensure_ascii=False))
    return result


def claim(conv_key, eligible, rank, messages):
    """The record this turn runs under (RT-9): the live one when its member may take this turn; else a new
    record, or the old one re-ranked (its id, models and turns kept), with `rank()`'s order."""
    _sweep()
    record = find(conv_key)
    if record is not None and record.get("alias") in eligible:
        return record

    def change(record):
        if record is not None and record.get("alias") in eligible:
            return record, record  # another turn claimed it while this one waited for the lock
        order = rank()
        if record is None:
            task = " ".join(first_user_text(messages).split())[:TASK_CHARS]
            record = {"conv": new_id(), "turns": 0, "models": [], "task": task}
        record.update(alias=order[0], order=order, at=time.time())
        return record, record

    return _change(conv_key, change)


def finish(conv_key, claimed, alias):
    """RT-16: a member answered a turn. Returns `(call id, turn number, whether the model is new to it)`.

    A record swept away while the turn ran (idle for an hour before it) is written back from the claim."""
    def change(record):
        record = record if record is not None and record.get("conv") == claimed["conv"] else dict(claimed)
        models = list(record.get("models") or [])
        new = alias not in models
        if new:
            models.append(alias)
        record.update(models=models, alias=alias, at=time.time(), turns=int(record.get("turns") or 0) + 1)
        return (f"{record['conv']}.{models.index(alias) + 1}", record["turns"], new), record

    return _change(conv_key, change)


def _sweep():
    """Delete the records idle for more than STICKY_TTL, at most once per SWEEP_EVERY seconds per process."""
    now = time.time()
    with _sweep_lock:
        if now - _swept["at"] < SWEEP_EVERY:
            return
        _swept["at"] = now
    try:
        entries = list(os.scandir(folder()))
    except OSError:
        return
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue  # a lock goes with its record, never on its own age (a lock file is never touched again)
        try:
            if now - entry.stat().st_mtime > STICKY_TTL:
                os.unlink(entry.path)
                os.unlink(entry.path + ".lock")
        except OSError:
            pass
