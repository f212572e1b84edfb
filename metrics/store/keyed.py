"""Records kept one per key in a folder of the data folder: the folder store's keyed records (route mode's
conversations, `runs/gateway/conversations/<key>.json`).

One small JSON file per key keeps a change's cost independent of how many records are live; a record is read
and changed under its own lock. It is rewritten in place (write, then cut to length) rather than replaced by a
rename: a rename over an existing file makes ext4 flush it, 0.3-1.5 ms a change, while in place costs
microseconds. Every reader holds the lock too, so none sees a half-written record; a crash part way leaves a
record that does not parse, which reads as none.
"""

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..core import fileio, paths
from .logs import Log

T = TypeVar("T")
Record = dict[str, Any]
Change = Callable[[Record | None], tuple[T, Record | None]]


def _path(place: Log, key: str) -> Path:
    return paths.file(*place) / f"{key}.json"


def _read(fd: int) -> Record | None:
    try:
        record = json.loads(os.pread(fd, os.fstat(fd).st_size, 0) or b"null")
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def change(place: Log, key: str, change: Change[T]) -> T:
    """Read, change and write one record under its lock; `change(record)` gives `(result, the record to store
    or None to leave it as it is)`."""
    path = _path(place, key)
    with fileio.lock(path):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, fileio.FILE_MODE)
        try:
            result, record = change(_read(fd))
            if record is not None:
                data = json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass")
                os.pwrite(fd, data, 0)
                os.ftruncate(fd, len(data))
        except OSError as exc:
            raise fileio.refused(path, exc) from exc
        finally:
            os.close(fd)
    return result


def find(place: Log, key: str) -> Record | None:
    """The record of `key`, or None; a key never written makes no file."""
    if not _path(place, key).exists():
        return None
    return change(place, key, lambda record: (record, None))


def sweep(place: Log, idle: float) -> None:
    """Delete the records unchanged for more than `idle` seconds."""
    now = time.time()
    try:
        entries = list(os.scandir(paths.file(*place)))
    except OSError:
        return
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue  # a lock goes with its record, never on its own age (a lock file is never touched again)
        try:
            if now - entry.stat().st_mtime > idle:
                os.unlink(entry.path)
                os.unlink(entry.path + ".lock")
        except OSError:
            pass
