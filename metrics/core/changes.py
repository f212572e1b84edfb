"""The change log, `<data>/config/changes.jsonl` (dashboard.md §6, LOG-1..4).

One line per write a person made: who, which model, which field, old and new. Every dashboard write
goes through `log()` so the line's shape is decided in one place. It is read and written through `fileio`,
so on a shared store (Postgres, docs/replicas.md) every replica appends to and shows the same log.

Decision (IMP-1): `by` is the caller the login check found: `admin` when login is on, and `ui` when it
is off (no one signed in, so the reference's word is kept), never a key or token.
"""

import datetime
import json
from pathlib import Path
from typing import Any

from . import fileio, paths


def path() -> Path:
    return paths.file("config", "changes.jsonl")


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def by(caller: str) -> str:
    """The `by` of a dashboard write: `admin` when signed in, `ui` for the open (no login) dashboard."""
    return "admin" if caller == "admin" else "ui"


def log(who: str, alias: str | None, field: str, old: object, new: object) -> dict[str, Any]:
    """Append one LOG-1 line (ASCII-escaped JSON, as the reference writes it)."""
    line = {"at": now_iso(), "by": who, "alias": alias or "", "field": field, "old": old, "new": new}
    fileio.append_bytes(path(), (json.dumps(line) + "\n").encode("ascii"))
    return line


def recent(limit: int = 200) -> list[dict[str, Any]]:
    """The newest `limit` change lines, newest first."""
    return fileio.tail(path(), limit)
