"""Safe file writes for many threads and several processes at once (LOCK-1..5).

- `lock(path)`: an exclusive OS lock on `<path>.lock`, which excludes threads too
  (each holder opens its own file description).
- `update(path, change)`: the locked read-change-write for JSON objects.
- `write_atomic(path, text)`: temp file + replace, so readers never see half a file.
- Every file these make is the owner's alone (`FILE_MODE`, 0600) from its first byte, temporaries and
  locks included, and so is every folder they make for one (`FOLDER_MODE`, 0700): secrets
  and prompts are written here, and a local user watching the folder must never catch one between
  create and chmod (PATH-7, LOCK-3, issue 29 items 1 and 4).
- `append_jsonl(path, record)`: one whole line per record, even with many writers; all
  or nothing (a failed write is cut back, a torn tail is ended first).
- `read_jsonl` / `parse_lines`: readers that skip a torn or corrupt line, say so
  once on stderr, and keep going.
- `read_json(path)`: `{}` for a missing, unreadable or non-object file; cached by the
  file's stat so hot paths never re-parse a file that has not changed.
- `json_problem(path)`: why `read_json` read `{}` (line and column for a syntax error),
  found by the same cached parse.
- `share(documents)`: while a shared store is open (Postgres, docs/replicas.md), the files it holds (the
  configuration the dashboard edits, the alerts, the change log) are read, written, appended to and locked
  through it instead, by these same functions, so every reader and writer of such a file follows without
  knowing which store it is on.
"""

import contextlib
import itertools
import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ContextManager, Protocol, TypeVar

from . import console, tails

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

T = TypeVar("T")
PathLike = str | os.PathLike[str]
Parsed = tuple[tuple[int, int, int], dict[str, Any], dict[str, Any], str]  # stamp, object, comment-free, problem


LOCK_TIMEOUT = 30
FILE_MODE = 0o600
FOLDER_MODE = 0o700
LOCK_POLL = 0.02
REPLACE_TRIES = 50


class Documents(Protocol):
    """A store shared by several processes that holds some of the data folder's files as documents."""

    def place(self, path: str) -> tuple[str, ...] | None:
        """`path`'s place when the store holds it (`("config", "collections.json")`), else None."""

    def mark(self, place: tuple[str, ...]) -> tuple[int, int, int] | None:
        """Equal to the last one while the document is unchanged, its first two parts what tells; None when only
        asking the store can tell."""

    def read_text(self, place: tuple[str, ...]) -> str | None:
        """The document, or None when the store has never held it."""

    def write_text(self, place: tuple[str, ...], text: str) -> None:
        """Replace the document whole."""

    def locked(self, name: str) -> ContextManager[None]:
        """Hold the lock `name` against every process sharing the store."""

    def append(self, log: tuple[str, ...], data: bytes) -> int:
        """Append whole lines to the log at `log`, all or nothing."""

    def tail(self, log: tuple[str, ...], limit: int) -> list[dict[str, Any]]:
        """Up to `limit` records from the end of the log, newest first."""

    def records(self, log: tuple[str, ...]) -> list[dict[str, Any]]:
        """Every record of the log, oldest first."""


_documents: list[Documents] = []  # the shared store while one is open (`share`)
_choosers: list[Callable[[], object]] = []  # what chooses the store, called before the first file is read
_asked = itertools.count()  # stamps that never repeat, while the shared store cannot say what changed


def share(documents: Documents | None) -> None:
    """Read and write the files `documents` holds through it from now on; None: the files again."""
    _documents[:] = [documents] if documents is not None else []


def chosen_by(choose: Callable[[], object] | None) -> None:
    """Call `choose` (the store's, which calls `share` when it opens a shared one) before the next file is read,
    so a process that never asked for its store, a script or a call's child, still reads the shared files;
    None: read files as files until the store is opened by name."""
    _choosers[:] = [choose] if choose is not None else []


def _shared(path: PathLike) -> tuple[Documents, tuple[str, ...]] | None:
    for choose in _choosers[:]:
        choose()  # idempotent and locked: two threads calling it at once open one store
        _choosers.clear()
    if not _documents:
        return None
    place = _documents[0].place(os.fspath(path))
    return (_documents[0], place) if place else None


def _stored(path: PathLike) -> str | None:
    """The shared store's document for `path`; None when the store does not hold it (or there is no store)."""
    shared = _shared(path)
    return shared[0].read_text(shared[1]) if shared is not None else None


def read_text(path: PathLike, errors: str = "strict") -> str:
    """The file's text; on a shared store, the document it holds (the file itself while it holds none: the
    shipped default, or the file as it was before the bench moved). FileNotFoundError when there is neither."""
    stored = _stored(path)
    if stored is not None:
        return stored
    with open(path, encoding="utf-8", errors=errors) as f:
        return f.read()


def exists(path: PathLike) -> bool:
    """Whether `read_text(path)` finds something."""
    return _stored(path) is not None or os.path.exists(path)


def _try_lock(fd: int) -> bool:
    try:
        if sys.platform == "win32":
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _unlock(fd: int) -> None:
    if sys.platform == "win32":
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def lock(path: PathLike, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold `<path>.lock` exclusively; `TimeoutError` after `timeout` seconds (LOCK-1), `WriteFailed` when the
    lock file cannot be made."""
    path = Path(path)
    shared = _shared(path)
    if shared is not None:
        with shared[0].locked("/".join(shared[1])):
            yield
        return
    lock_path = path.with_name(path.name + ".lock")
    try:
        make_folder(lock_path.parent)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as exc:  # the folder refuses even the lock file: the write it guards is refused
        raise WriteFailed(exc.errno, exc.strerror or str(exc), os.fspath(lock_path)) from exc
    try:
        deadline = time.monotonic() + timeout
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{path.name} stayed locked for {timeout:g}s")
            time.sleep(LOCK_POLL)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def opener(path: PathLike, flags: int) -> int:
    """`open(path, ..., opener=fileio.opener)`: a file it creates is `FILE_MODE` from its first byte (the
    logs, notes and copies written with plain `open`)."""
    return os.open(path, flags, FILE_MODE)


def make_folder(path: PathLike) -> None:
    """`path` and any missing parents, each made `FOLDER_MODE` (`parents=True` would make the parents with the
    default mode)."""
    path = Path(path)
    try:
        path.mkdir(mode=FOLDER_MODE, exist_ok=True)
    except FileNotFoundError:
        make_folder(path.parent)
        path.mkdir(mode=FOLDER_MODE, exist_ok=True)


def write_atomic(path: PathLike, text: str, mode: int = FILE_MODE) -> None:
    """Replace `path` with `text` whole (LOCK-3): readers see the old file or the new one.

    The temporary is created with `mode` (O_EXCL, so never an existing file of someone else's) and
    holds it from its first byte: a chmod after the write left the secrets of `keys.json` readable
    by anyone for as long as the write took (issue 29 item 1).
    """
    shared = _shared(path)
    if shared is not None:
        shared[0].write_text(shared[1], text)
        return
    path = Path(path)
    _looked.__dict__.get("seen", {}).pop(str(path), None)  # this thread's snapshot must see its own write
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
    try:
        make_folder(path.parent)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
        with open(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        _replace(temp, path)
    except OSError as exc:  # the old file is untouched; the error names the file and the system's reason
        raise refused(path, exc) from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    _failures.pop(str(path), None)


def _replace(temp: Path, path: Path) -> None:
    for attempt in range(REPLACE_TRIES):
        try:
            return os.replace(temp, path)
        except PermissionError:  # Windows: a reader has the file open
            if attempt == REPLACE_TRIES - 1:
                raise
            time.sleep(LOCK_POLL)


def dumps(data: object, indent: int | None = 2) -> str:
    """JSON as every writer here writes it: UTF-8 text, `indent` 2, trailing newline."""
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def _parse(path: PathLike, writing: bool = False) -> tuple[dict[str, Any], str]:
    """`(object, "")` from a JSON object file, else `({}, what is wrong)` as a phrase to follow the
    file's name. A missing file is no fault (its defaults apply). Deep nesting raises RecursionError
    in json, not ValueError: it must read as a fault too, or one hand-made file stops the server.
    `writing`: the system refusing the read (permissions, a folder in the file's place) is raised as
    the data folder's fault (`WriteFailed`), as the write would be."""
    text = _stored(path)  # a store that cannot answer raises: it must never read, and be cached, as `{}`
    try:
        if text is None:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except FileNotFoundError:
        return {}, ""
    except UnicodeDecodeError:
        return {}, "is not UTF-8 text"
    except OSError as exc:
        if writing:
            raise refused(path, exc) from exc
        return {}, f"cannot be read ({exc.strerror or type(exc).__name__})"
    if not text.strip():
        return {}, "is empty"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    except ValueError as exc:  # e.g. a number too long to convert
        return {}, f"is not valid JSON ({exc})"
    except RecursionError:
        return {}, "is nested too deeply to read as JSON"
    if not isinstance(data, dict):
        return {}, "is not a JSON object"
    return data, ""


class Unreadable(RuntimeError):
    """A JSON file a change would be written over cannot be read: writing would replace everything in it
    (RESP-6, RESP-7). Its message names the file and what is wrong with it."""


def update(path: PathLike, change: Callable[[dict[str, Any]], T], indent: int = 2, mode: int = FILE_MODE,
           **dump: Any) -> T:
    """Locked read-change-write of a JSON object (LOCK-2); returns what `change` returns.

    Writes only when the canonical JSON differs, so a no-op change touches nothing. A file that exists
    but cannot be read as a JSON object is never written over (`Unreadable`): the change would replace
    every entry in it with the one being made. An empty file holds nothing to lose and reads as `{}`.
    """
    path = Path(path)
    with lock(path):
        data, problem = _parse(path, writing=True)
        if problem and problem != "is empty":
            raise Unreadable(f"{path.parent.name}/{path.name} {problem}; fix it by hand first (this change would "
                             "replace everything in it)")
        before = json.dumps(data, sort_keys=True)
        result = change(data)
        if json.dumps(data, sort_keys=True) != before:
            text = json.dumps(data, indent=indent, ensure_ascii=dump.pop("ensure_ascii", False), **dump) + "\n"
            write_atomic(path, text, mode=mode)
    return result


_json_cache: dict[str, Parsed] = {}
_json_cache_lock = threading.Lock()


_looked = threading.local()  # `seen`: {path: stat result or OSError} while a snapshot is open on this thread


@contextlib.contextmanager
def snapshot() -> Iterator[None]:
    """Within it, each file is stat'ed once on this thread, however many modules ask about it.

    A panel's plan asks about the same few config files ~100 times (every seat's registration,
    endpoint, options...); each stat is a system call that hands the GIL to another thread.
    A file changed meanwhile is seen by the next snapshot; this thread's own writes at once.
    """
    if "seen" in _looked.__dict__:
        yield
        return
    _looked.seen = {}
    try:
        yield
    finally:
        del _looked.seen


def stat(path: PathLike) -> os.stat_result:
    """`os.stat(path)` (OSError raised as it was), asked once per path within a `snapshot()`."""
    seen = _looked.__dict__.get("seen")
    if seen is None:
        return os.stat(path)
    path = os.fspath(path)
    found = seen.get(path)
    if found is None:
        try:
            found = os.stat(path)
        except OSError as exc:
            found = exc
        seen[path] = found
    if isinstance(found, OSError):
        raise found
    return found


def stamp(path: PathLike) -> tuple[int, int, int] | None:
    """What says a file changed: `(mtime_ns, size, inode)`, None when it cannot be stat'ed."""
    try:
        return mark(path)
    except OSError:
        return None


def mark(path: PathLike) -> tuple[int, int, int]:
    """`stamp(path)`, raising the stat's OSError. A document of the shared store is marked by the store's count
    of its changes, seen without asking the server, and by its file's stamp (read while the store holds none)."""
    shared = _shared(path)
    if shared is not None:
        changes = shared[0].mark(shared[1])
        if changes is None:
            return (-1, next(_asked), 0)
        try:
            st = stat(path)
            own = hash((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            own = 0
        return (changes[0], changes[1], own)
    st = stat(path)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _parsed(path: str) -> Parsed | None:
    """`(stamp, object, comment-free object, problem)` for `path`, parsed once per change of the file;
    None when it cannot be stat'ed (missing)."""
    key = stamp(path)
    if key is None:
        return None
    cached = _json_cache.get(path)
    if cached is None or cached[0] != key:
        data, problem = _parse(path)
        # the comment-free view is made once per parse, not on every call
        cached = (key, data, {k: v for k, v in data.items() if not k.startswith("_")}, problem)
        with _json_cache_lock:
            _json_cache[path] = cached
    return cached


def read_json(path: PathLike, comments: bool = True) -> dict[str, Any]:
    """A JSON object from `path`: `{}` when missing, unreadable or not an object.

    Top-level keys starting with `_` are comments and dropped unless `comments=False`.
    The parse is cached by (mtime, size, inode): callers must not mutate the result.
    """
    cached = _parsed(str(path))
    if cached is None:
        return {}
    return cached[2] if comments else cached[1]


def json_problem(path: PathLike) -> str:
    """Why `read_json(path)` reads `{}` though the file exists, as a phrase to follow the file's
    name (`is not valid JSON (line 3, column 5: Expecting ',' delimiter)`); `""` when it reads or is
    missing. It comes from `read_json`'s cached parse: asking costs a stat, never a parse."""
    cached = _parsed(str(path))
    return cached[3] if cached else ""


def append_jsonl(path: PathLike, record: Mapping[str, Any]) -> int:
    """Append `record` as one JSON line (UTF-8, non-ASCII unescaped).

    The line goes out in a single O_APPEND write under an exclusive flock on the
    file itself, so concurrent writers (threads or processes) never interleave.
    A lone surrogate (say, in a model's answer) is written as its `\\udXXX` escape:
    every string is inside a JSON literal, so the line stays valid JSON and reads back the same.
    Returns the file's size after the append.
    """
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
    return append_bytes(path, line)


class WriteFailed(OSError):
    """A write to the data folder failed and was undone; `errno` and `strerror` are the system's."""


APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
_failures: dict[str, str] = {}  # path: why its last write failed, until one succeeds (`/health` reads them)
_ends: dict[str, tuple[int, int]] = {}  # path: (inode, size) after this process's last append, ended with a newline


def append_bytes(path: PathLike, data: bytes) -> int:
    """Append whole lines to `path` under an exclusive flock on the file itself (see `append_locked`);
    returns the file's size after it. A log the shared store holds (the change log) is appended to there
    (what it returns then grows with every append, as a size does)."""
    shared = _shared(path)
    if shared is not None:
        return shared[0].append(shared[1], data)
    fd = _appending(Path(path))
    try:
        return append_locked(fd, path, data)
    finally:
        os.close(fd)  # closing releases the flock


def append_all(entries: list[tuple[PathLike, bytes]]) -> None:
    """Append each entry's whole lines to its file, all or nothing: every file is locked first (in path order,
    so two callers never wait on each other in a cycle), each written as `append_bytes` writes, and those
    already written are cut back when a later one fails."""
    if len(entries) == 1:  # a panel seat's offload line on its own (its ledger line goes to the ledger's own file)
        append_bytes(*entries[0])
        return
    fds: dict[str, int] = {}
    try:
        for name in sorted({os.fspath(path) for path, _ in entries}):
            fds[name] = _appending(Path(name))
        written: list[tuple[str, int]] = []
        for path, data in entries:
            name = os.fspath(path)
            start = os.fstat(fds[name]).st_size
            try:
                append_locked(fds[name], path, data)
            except OSError:
                for done, size in reversed(written):
                    _undo(fds[done], size)
                    _ends.pop(done, None)  # its end is no longer this process's last line
                raise
            written.append((name, start))
    finally:
        for fd in fds.values():
            os.close(fd)


def _appending(path: Path) -> int:
    """`path` opened for appending (its folder made if need be) and flocked: every other writer locked out."""
    try:
        try:
            fd = os.open(path, APPEND_FLAGS, FILE_MODE)
        except FileNotFoundError:
            make_folder(path.parent)
            fd = os.open(path, APPEND_FLAGS, FILE_MODE)
    except OSError as exc:
        raise refused(path, exc) from exc
    if sys.platform != "win32":  # flock is POSIX's; on Windows the one O_APPEND write is all there is
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
    return fd


def append_locked(fd: int, path: PathLike, data: bytes) -> int:
    """Append `data` to `fd` (opened with `APPEND_FLAGS`, every other writer locked out), all or
    nothing (nothing-lost issue, item 1).

    A file whose last byte is not a newline (a crash's torn tail) gets one first, so the torn
    line never swallows this record; a write that fails part way is cut back to the size before
    it, so no half line is left for the next record to be glued onto. What fails is raised as
    `WriteFailed` naming the file and the system's reason. Returns the file's size after the append.
    """
    key = os.fspath(path)
    st = os.fstat(fd)
    start = st.st_size
    # this process's own last append ended the file with a newline: no need to look again
    if start and _ends.get(key) != (st.st_ino, start) and _byte_at(fd, start - 1) != b"\n":
        data = b"\n" + data
    try:
        _write_all(fd, data)
    except OSError as exc:
        _undo(fd, start)
        raise refused(path, exc) from exc
    _ends[key] = (st.st_ino, start + len(data))
    _failures.pop(key, None)
    return start + len(data)


def rotate(path: PathLike, max_bytes: int, keep: int) -> None:
    """Move `path` aside as `path.1`, older ones to `.2` … `.keep` (the oldest dropped), under its lock,
    if it has grown to `max_bytes`. At least one is kept: a writer that opened the file before it was
    moved finishes its line there, where with none kept it would write to a file no longer linked."""
    path = Path(path)
    keep = max(keep, 1)
    with lock(path):
        if not path.exists() or path.stat().st_size < max_bytes:
            return  # another process rotated it first
        for n in range(keep - 1, 0, -1):
            older = path.with_name(f"{path.name}.{n}")
            if older.exists():
                os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
        os.replace(path, path.with_name(f"{path.name}.1"))


def append_log(path: PathLike, record: Mapping[str, Any], max_bytes: int, keep: int) -> int:
    """`append_jsonl`, then `rotate` once the file has grown to `max_bytes` (0: never). A rotation that fails is
    only said: the line is written, and the log grows past its size until a rotation works."""
    size = append_jsonl(path, record)
    if max_bytes and size >= max_bytes:
        try:
            rotate(path, max_bytes, keep)
        except OSError as exc:
            console.say(f"warning: {path} was not rotated: {exc}")
    return size


def _byte_at(fd: int, offset: int) -> bytes:
    if hasattr(os, "pread"):
        return os.pread(fd, 1, offset)
    os.lseek(fd, offset, os.SEEK_SET)  # O_APPEND writes still go to the end
    return os.read(fd, 1)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _undo(fd: int, size: int) -> None:
    """Cut the file back to `size`: a failed append leaves nothing behind."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, size)


def refused(path: PathLike, exc: OSError) -> "WriteFailed":
    """The `WriteFailed` of a write to `path` the system refused; `/health` says so until one succeeds."""
    _failures[os.fspath(path)] = f"[Errno {exc.errno}] {exc.strerror or exc}"
    return WriteFailed(exc.errno, exc.strerror or str(exc), os.fspath(path))


def write_failure(folder: PathLike) -> str:
    """Why the last write to a file in `folder` failed (the first such file), or "" when each one's
    last write succeeded."""
    inside = os.path.join(os.fspath(folder), "")
    return next((why for path, why in _failures.items() if path.startswith(inside)), "")


_warned: set[str] = set()


def _warn_once(path: str, what: str) -> None:
    if path not in _warned:
        _warned.add(path)
        console.say(f"warning: {path}: skipped {what} (kept reading)")


def parse_lines(blob: bytes, path: PathLike = "<jsonl>") -> list[dict[str, Any]]:
    """Records from complete JSONL bytes; a corrupt or non-object line is skipped with one warning."""
    records = []
    for raw in blob.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):  # a deeply nested line is as corrupt as a torn one
            _warn_once(str(path), "a torn or corrupt line")
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            _warn_once(str(path), "a line that is not a JSON object")
    return records


def read_jsonl(path: PathLike) -> list[dict[str, Any]]:
    """Every record of a JSONL file (torn or corrupt lines skipped); `[]` when missing. A log the shared store
    holds is read from there."""
    shared = _shared(path)
    if shared is not None:
        return shared[0].records(shared[1])
    try:
        blob = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    return parse_lines(blob, path)


def tail(path: PathLike, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` records from the end of a JSONL file, newest first (`tails.records`); from the shared store
    for a log it holds."""
    shared = _shared(path)
    if shared is not None:
        return shared[0].tail(shared[1], limit)
    return tails.records(path, limit)
