"""Where the data replicas must agree on is kept: the data folder's JSONL files, or one Postgres server.

A log is named by its place in the data folder (`("metrics", "offloads.jsonl")`): the folder store
appends to that file with `core.fileio`'s writers, unchanged, and the Postgres store keeps its lines
in one table under the same name, so `bench store export` and `import` map one onto the other.

`current()` is chosen once per process (docs/replicas.md): `BENCH_STORAGE` says `folder` or
`postgres`; unset, a `BENCH_DATABASE_URL` means Postgres and no URL the folder. Asking for it costs
a list lookup, so hot paths ask every time. `reset()` forgets the choice (a test that switches stores).
"""

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ContextManager, Protocol, TypeVar

from ..core import fileio, paths, settings, tails
from ..core.errors import StoreUnavailable
from . import keyed, rates
from .logs import (ALERTS, CALLS, CHANGES, CONFIG, CONVERSATIONS, DOCUMENTS, GATEWAY_KEYS, LOGS, OFFLOADS,
                   ONBOARD_LOGS, ONBOARD_QUEUE, ROUTES, USAGE, Log)

__all__ = ["ALERTS", "CALLS", "CHANGES", "CONFIG", "CONVERSATIONS", "DOCUMENTS", "GATEWAY_KEYS", "LOGS", "OFFLOADS",
           "ONBOARD_LOGS", "ONBOARD_QUEUE", "ROUTES", "USAGE", "Log", "Store", "Shared", "Folder", "current",
           "deferred", "health", "kind", "opened", "reset"]


T = TypeVar("T")
STORES = ("folder", "postgres")
NO_URL = "BENCH_STORAGE is postgres but BENCH_DATABASE_URL is not set"
NO_EXTRA = "a Postgres store needs the postgres extra: pip install 'benchwarmers[postgres]' ({})"
WONT_START = "storage: {}"
UNKNOWN = "BENCH_STORAGE must be folder or postgres; got {!r}"


class Store(Protocol):
    """What callers ask of either store. Lines are whole JSON lines, newest last."""

    kind: str

    def append(self, log: Log, data: bytes) -> int:
        """Append `data` (whole lines, each ending in a newline) to `log`, all or nothing."""

    def append_all(self, entries: Sequence[tuple[Log, bytes]]) -> None:
        """Append each entry's `data` (whole lines) to its log, all or nothing, in one round trip on Postgres (a
        panel seat's ledger and offload lines)."""

    def append_log(self, log: Log, record: Mapping[str, Any], max_bytes: int, keep: int) -> None:
        """Append `record` as one line, keeping the log's size bounded (0: unbounded): the folder store rotates
        the file past `max_bytes` and keeps `keep` copies; Postgres keeps the newest `(keep + 1) * max_bytes` bytes
        of lines, as many as the file and its copies hold at their fullest."""

    def tail(self, log: Log, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` records from the end of `log`, newest first."""

    def each(self, log: Log, wanted: bytes | None = None) -> Iterator[dict[str, Any]]:
        """The records of `log`, newest first; with `wanted`, only lines holding those bytes are parsed."""

    def mark(self, log: Log) -> object:
        """Equal to the last one seen while `log` has not changed (a reader's cache key); None when only reading
        it can tell."""

    def records(self, log: Log) -> list[dict[str, Any]]:
        """Every record of `log`, oldest first (torn or corrupt lines skipped)."""

    def charge(self, name: str, cap: int) -> int | None:
        """One request of `name` counted against `cap` a minute, across every process sharing the store;
        None when admitted, else the seconds to wait (the request is then not counted)."""

    def count_day(self, name: str, day: str, cap: int) -> bool:
        """Count one of `name`'s `cap` on `day` (a local date) across every process sharing the store; False,
        counting nothing, when they are spent."""

    def locked(self, name: str) -> ContextManager[None]:
        """Hold the lock `name` against every thread, process and replica sharing the store."""

    def read_text(self, place: Log) -> str | None:
        """The document at `place` (a small file of the data folder), or None when there is none."""

    def write_text(self, place: Log, text: str) -> None:
        """Replace the document at `place` whole."""

    def read_json(self, place: Log, comments: bool = True) -> dict[str, Any]:
        """The JSON object at `place` as `fileio.read_json` reads a file: `{}` when missing, top-level `_` keys
        dropped unless `comments=False`, cached until it changes (callers must not mutate it)."""

    def update_json(self, place: Log, change: Callable[[dict[str, Any]], T], **dump: Any) -> T:
        """A locked read-change-write of the JSON object at `place`, as `fileio.update`; returns what `change`
        returns."""

    def find(self, place: Log, key: str) -> dict[str, Any] | None:
        """The record kept under `key` in `place`, or None."""

    def change(self, place: Log, key: str, change: keyed.Change[T]) -> T:
        """Read, change and write one record under its own lock (replicas included): `change(record or None)`
        gives `(result, the record to store or None to leave it)`; returns the result."""

    def sweep(self, place: Log, idle: float) -> None:
        """Forget the records of `place` unchanged for more than `idle` seconds."""

    def health(self) -> dict[str, Any]:
        """What `GET /health` says of the store: {} for the folder (the data folder's own word is
        `data_folder`); on Postgres whether the server answers, quickly."""


class Shared(Store, Protocol):
    """What the Postgres store adds: lines by id, for the offload index, and whole logs, for moving a bench."""

    def since(self, log: Log, after: int) -> tuple[int, list[tuple[int, bytes]]]:
        """`(generation, [(id, line)...])`: lines after id `after`; a new generation means start over."""

    def mark(self, log: Log) -> tuple[int, int, int] | None:
        """Equal to the last one seen while `log` has not changed, `(epoch, changes, own appends kept)`; None when
        only asking the server can tell. When only the last part differs, `mine` may hold every new line."""

    def follow(self, log: Log) -> None:
        """Keep this process's own appends to `log` for `mine`."""

    def mine(self, log: Log, after: int) -> list[tuple[int, bytes]] | None:
        """`[(id, line)...]`: this process's appends to `log` following id `after` with no other line between,
        when they are all it kept; None when only asking the server can tell."""

    def line(self, log: Log, line_id: int) -> bytes | None:
        """The line with id `line_id`, or None when the log no longer holds it."""

    def lines(self, log: Log) -> Iterator[bytes]:
        """Each line of `log`, oldest first."""

    def replace(self, log: Log, lines: Iterable[bytes]) -> int:
        """Make `log` hold exactly `lines`, in order; returns how many."""

    def logs(self) -> list[Log]:
        """The logs that hold lines."""


class Folder:
    """The data folder's files: today's formats, written by `core.fileio` exactly as before."""

    kind = "folder"

    def append(self, log: Log, data: bytes) -> int:
        return fileio.append_bytes(paths.file(*log), data)

    def append_all(self, entries: Sequence[tuple[Log, bytes]]) -> None:
        fileio.append_all([(paths.file(*log), data) for log, data in entries])

    def mark(self, log: Log) -> tuple[int, int, int] | None:
        return fileio.stamp(paths.file(*log))

    def append_log(self, log: Log, record: Mapping[str, Any], max_bytes: int, keep: int) -> None:
        fileio.append_log(paths.file(*log), record, max_bytes, keep)

    def tail(self, log: Log, limit: int) -> list[dict[str, Any]]:
        return tails.records(paths.file(*log), limit)

    def each(self, log: Log, wanted: bytes | None = None) -> Iterator[dict[str, Any]]:
        return tails.each(paths.file(*log), wanted)

    def records(self, log: Log) -> list[dict[str, Any]]:
        return fileio.read_jsonl(paths.file(*log))

    def charge(self, name: str, cap: int) -> int | None:
        return rates.charge(name, cap)

    def count_day(self, name: str, day: str, cap: int) -> bool:
        return rates.count_day(name, day, cap)

    def locked(self, name: str) -> ContextManager[None]:
        return fileio.lock(paths.file("runs", name))

    def read_text(self, place: Log) -> str | None:
        try:
            return paths.file(*place).read_text(encoding="utf-8")
        except (OSError, ValueError):
            return None

    def write_text(self, place: Log, text: str) -> None:
        fileio.write_atomic(paths.file(*place), text)

    def read_json(self, place: Log, comments: bool = True) -> dict[str, Any]:
        return fileio.read_json(paths.file(*place), comments)

    def update_json(self, place: Log, change: Callable[[dict[str, Any]], T], **dump: Any) -> T:
        return fileio.update(paths.file(*place), change, **dump)

    def find(self, place: Log, key: str) -> dict[str, Any] | None:
        return keyed.find(place, key)

    def change(self, place: Log, key: str, change: keyed.Change[T]) -> T:
        return keyed.change(place, key, change)

    def sweep(self, place: Log, idle: float) -> None:
        keyed.sweep(place, idle)

    def health(self) -> dict[str, Any]:
        return {}


_chosen: list[Store] = []
_choosing = threading.Lock()


def kind() -> str:
    """`folder` or `postgres`, as the settings name it (no server is asked)."""
    named = settings.env("BENCH_STORAGE").strip().lower()
    if named and named not in STORES:
        raise StoreUnavailable(UNKNOWN.format(named))
    return named or ("postgres" if settings.env("BENCH_DATABASE_URL").strip() else "folder")


def current() -> Store:
    """This process's store, chosen (and for Postgres, connected and migrated) on first use."""
    if _chosen:
        return _chosen[0]
    with _choosing:
        if not _chosen:
            _chosen.append(_open())
    return _chosen[0]


def _open() -> Store:
    if kind() == "folder":
        return Folder()
    url = settings.env("BENCH_DATABASE_URL").strip()
    if not url:
        raise StoreUnavailable(NO_URL)
    try:
        from . import postgres  # psycopg is the optional `postgres` extra: only a Postgres bench imports it
    except ImportError as exc:
        raise StoreUnavailable(NO_EXTRA.format(exc)) from exc
    shared = postgres.Postgres(url)
    fileio.share(shared)  # the configuration's, the alerts' and the change log's readers and writers go through it
    return shared


def health() -> dict[str, Any]:
    """`/health`'s `store`: {} on the folder; on Postgres whether the server answers. A store that cannot be
    opened (chosen again after `reset()` while its server is away) is reported down, never raised."""
    try:
        return current().health()
    except StoreUnavailable as exc:
        from . import postgres  # only a Postgres store is opened again at run time, and so psycopg is there
        return {"kind": "postgres", "answers": False, "problem": postgres.reason(exc.__cause__ or exc)}


def opened() -> str:
    """Choose and open the store as a server starts (a Postgres one connected and migrated before the first
    request); "" when it is ready, else the one line the server exits with."""
    try:
        current()
    except StoreUnavailable as exc:
        return WONT_START.format(exc)
    return ""


def deferred() -> None:
    """Read files as files until `opened()`: a server that forks its workers opens its store after the fork, since
    a Postgres pool's threads do not cross it."""
    fileio.chosen_by(None)


def reset() -> None:
    """Forget the chosen store (closing a Postgres pool): the next `current()`, or the next file read, chooses
    again."""
    with _choosing:
        fileio.share(None)
        while _chosen:
            found = _chosen.pop()
            close = getattr(found, "close", None)
            if close is not None:
                close()
    fileio.chosen_by(current)


fileio.chosen_by(current)  # a process that reads a configuration file before it asks for its store chooses it then
