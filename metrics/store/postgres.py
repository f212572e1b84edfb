"""The Postgres store (docs/replicas.md): every replica of a bench writes its logs into one database.

A pool of psycopg 3 connections, opened as the server starts; the schema is migrated at open
(`migrations`). A line is kept as the bytes the folder store would write (without the newline), so a log
moved to Postgres and back is the same file. Ids are the table's identity: unique across replicas and, since
`bench_append` serialises each log's appends, committed in the order they were drawn. A listener thread
follows `bench_append`'s notifications, so readers ask the server only when a log changed (`mark`); the lines
this replica appends to a followed log (the offload log) are kept for its reader with the id of the line before
each, so a reader already at that id takes them in without asking the server (`mine`).
"""

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ..core import fileio, paths, settings
from ..core.errors import StoreUnavailable
from . import keyed, migrations, rates
from .logs import SHARED_FILES, Log

T = TypeVar("T")
POOL_SIZE = 16  # connections one replica keeps at most: a panel's seats append from their own threads
PLACES_KEPT = 4096  # paths whose `place` is remembered (the data folder's files a process reads)
LISTEN_POLL = 1.0  # seconds the listener waits for a notification before it looks whether the store was closed
OPEN_TIMEOUT = 10.0  # seconds a replica waits for its first connection before start fails, saying why
PROBE_TIMEOUT = 2.0  # seconds /health waits for the server's answer before it reports the store down
PROBE_KEPT = 1.0  # seconds "no answer" is reused: an open route never makes a replica reconnect more often
RECONNECT_WINDOW = 10.0  # seconds the pool retries a lost connection (1 s, 2 s, 4 s apart) before the next request
# starts again at once: a server back after a long outage is found within seconds, not after the pool's backoff
# how long a server process counts as this replica's after it last lent this replica a connection: its own notifications
# arrive within milliseconds of that, and a pid the server gives again to another replica's connection (a pool
# replaces its connections, a server restarts) comes back only after the system's pids wrap, far later than this
OWN_FOR = 60.0
KEPT_LINES = 1024  # own lines of a followed log kept for its reader (`mine`) at most: past it they are dropped and read
TRIM_EVERY = 8  # a log appended with `append_log` is trimmed each time this process adds max_bytes / 8 to it
# Drop a log's oldest lines past its newest `most` bytes (a line counted with its newline, as in the file): the
# window runs newest first, and the newest line that no longer fits goes with every older one.
TRIM = """DELETE FROM bench_lines WHERE log = %(log)s AND id <= (
    SELECT id FROM (SELECT id, sum(octet_length(body) + 1) OVER (ORDER BY id DESC) AS newer
                    FROM bench_lines WHERE log = %(log)s) AS sized
    WHERE newer > %(most)s ORDER BY id DESC LIMIT 1)"""
LOST = "the Postgres store cannot be reached: {}"
WAITED = "no connection within {:g}s (BENCH_STORE_WAIT)"
HELD = "the Postgres store's lock {} stayed held for {:g}s (BENCH_STORE_LOCK_WAIT)"
HELD_SOMEWHERE = "a lock of the Postgres store stayed held for {:g}s (BENCH_STORE_LOCK_WAIT)"
SILENT = "no answer within {:g}s"
UNREACHABLE = "the Postgres server of BENCH_DATABASE_URL ({}) cannot be used: {}"


def seconds(variable: str) -> float:
    """A wait setting's seconds; its default when it is not a positive number."""
    try:
        value = float(settings.env(variable))
    except ValueError:
        value = 0.0
    return value if value > 0 else float(settings.default(variable))


def name(log: Log) -> str:
    """A log's name in the database: its path inside the data folder."""
    return "/".join(log)


def _shown(url: str) -> str:
    """The server's address without its password."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


def reason(exc: BaseException) -> str:
    """libpq's reason without the server's address: `/health` is open to anyone. Its first line, from the last
    `failed: ` on (`connection to server at "db" (10.0.0.5), port 5432 failed: Connection refused`)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return first.rpartition("failed: ")[2].strip() or type(exc).__name__


class Probe:
    """Whether the server answers, for `/health`: a `SELECT 1` on a connection of its own (a busy pool never makes
    the server look down), run on a thread of its own so a server that hangs costs a caller at most
    PROBE_TIMEOUT. One probe runs at a time: callers meanwhile share its answer. A server that answered is asked
    again by the next caller (one `SELECT 1`), so what /health reads next is not read from a server just gone;
    one that did not is reported down for PROBE_KEPT seconds before the next attempt to reconnect."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: psycopg.Connection[Any] | None = None
        self.guard = threading.Lock()
        self.done = threading.Event()
        self.done.set()
        self.problem = ""  # the last probe's: "" when the server answered, else why not
        self.at = 0.0  # monotonic time of the last answer

    def __call__(self) -> str:
        """"" when the server answers, else why not."""
        with self.guard:
            if self.done.is_set() and (not self.problem or time.monotonic() - self.at >= PROBE_KEPT):
                self.done.clear()
                threading.Thread(target=self._probe, name="store-probe", daemon=True).start()
            done = self.done
        if not done.wait(PROBE_TIMEOUT):
            return SILENT.format(PROBE_TIMEOUT)
        return self.problem

    def _probe(self) -> None:
        try:
            if self.conn is None or self.conn.closed:
                self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=int(PROBE_TIMEOUT))
            self.conn.execute("SELECT 1")
            problem = ""
        except psycopg.Error as exc:
            problem = reason(exc)
            self.close()
        self.problem, self.at = problem, time.monotonic()
        self.done.set()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _lines(data: bytes) -> list[bytes]:
    return [piece for piece in data.split(b"\n") if piece.strip()]


def _record(body: bytes) -> dict[str, Any] | None:
    try:
        found = json.loads(bytes(body))
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _parsed(bodies: Iterable[bytes], log: Log) -> list[dict[str, Any]]:
    return fileio.parse_lines(b"\n".join(bodies), name(log))


class Waiting:
    """One caller's lines waiting for `Together`'s next round trip."""

    def __init__(self, logs: list[str], lines: list[bytes]) -> None:
        self.logs, self.lines = logs, lines
        self.done = False
        self.error: BaseException | None = None


class Together:
    """Group commit (issue 35): whichever caller gets the turn writes every caller's lines pending at that moment in
    one transaction and one round trip; those whose lines it took wait for it to end and return. Seats answering
    at once would queue on their logs' lock on the server anyway, one round trip each. A batch the server refuses
    is written again caller by caller, so one caller's bad line never fails another's; a server lost fails all."""

    def __init__(self, write: Callable[[list[str], list[bytes]], object]) -> None:
        self.write = write
        self.turn = threading.Lock()
        self.guard = threading.Lock()
        self.waiting: list[Waiting] = []

    def __call__(self, logs: list[str], lines: list[bytes]) -> None:
        mine = Waiting(logs, lines)
        with self.guard:
            self.waiting.append(mine)
        with self.turn:
            if not mine.done:
                with self.guard:
                    taken, self.waiting = self.waiting, []
                self._write(taken)
        if mine.error is not None:
            raise mine.error

    def _write(self, taken: list[Waiting]) -> None:
        try:
            self.write([log for each in taken for log in each.logs], [line for each in taken for line in each.lines])
        except StoreUnavailable as exc:
            for each in taken:
                each.error = exc
        except Exception as exc:
            if len(taken) == 1:
                taken[0].error = exc
            else:
                self._alone(taken)
        except BaseException as exc:
            for each in taken:
                each.error = exc
            raise
        finally:
            for each in taken:
                each.done = True

    def _alone(self, taken: list[Waiting]) -> None:
        for each in taken:
            try:
                self.write(each.logs, each.lines)
            except Exception as exc:
                each.error = exc


class Postgres:
    """The store on one Postgres server, shared by every replica that names it."""

    kind = "postgres"

    def __init__(self, url: str) -> None:
        self.wait = seconds("BENCH_STORE_WAIT")
        self.lock_wait = seconds("BENCH_STORE_LOCK_WAIT")
        # every connection waits for a lock on the server (an advisory lock, a log's append, a document's write) at
        # most lock_wait: a holder that hangs costs the others a 503, not their requests
        self.pool = ConnectionPool(url, min_size=1, max_size=POOL_SIZE, timeout=self.wait,
                                   reconnect_timeout=RECONNECT_WINDOW, configure=self._configure,
                                   kwargs={"autocommit": True, "connect_timeout": int(OPEN_TIMEOUT)},
                                   open=False, name="bench")
        try:
            # one plain connection first: a server that refuses fails start at once, not after the pool's retries
            with psycopg.connect(url, autocommit=True, connect_timeout=int(OPEN_TIMEOUT)) as conn:
                self.version = migrations.apply(conn)
            self.pool.open(wait=True, timeout=OPEN_TIMEOUT)
        except (psycopg.Error, PoolTimeout, RuntimeError) as exc:
            self.pool.close()
            raise StoreUnavailable(UNREACHABLE.format(_shown(url), exc)) from exc
        self.changes: dict[str, int] = {}  # log name: notifications seen, and this process's own changes not kept
        self.written: dict[str, int] = {}  # followed log's name: this process's appends kept in `kept`
        self.kept: dict[str, dict[int, tuple[int, bytes]]] = {}  # followed log's name: {id before: (id, line)}
        self.followed: list[str] = []  # the names in `kept`, as every append sends them (replaced, never changed)
        self.documents: dict[str, tuple[Any, dict[str, Any], dict[str, Any]]] = {}  # read_json's, by mark
        self.places: dict[str, Log | None] = {}  # `place`'s answers, by path
        self.appended: dict[str, int] = {}  # `append_log`'s bytes a log since this process last trimmed it
        self.locks: dict[str, threading.Lock] = {}  # `locked`'s in-process queue, one a name
        self.guard = threading.Lock()
        self.own: dict[int, float] = {}  # the server processes of this replica's pool, with when each last lent one
        self.epoch = 0  # bumped whenever the listener (re)connects or drops: every reader asks again
        self.listening = False
        self.closed = threading.Event()
        self.probe = Probe(url)
        self.together = Together(self._append_many)
        threading.Thread(target=self._listen, args=(url,), name="store-listen", daemon=True).start()

    def _listen(self, url: str) -> None:
        """Follow `bench_append`'s notifications on a connection of its own, so a reader asks the server only
        when a log changed; while it is not connected, readers ask every time."""
        while not self.closed.is_set():
            try:
                with psycopg.connect(url, autocommit=True, connect_timeout=int(OPEN_TIMEOUT)) as conn:
                    conn.execute("LISTEN bench_lines")
                    self.epoch += 1
                    self.listening = True
                    while not self.closed.is_set():
                        for note in conn.notifies(timeout=LISTEN_POLL):
                            if not self._own(note.pid):  # this replica's own appends counted as they returned
                                self.changes[note.payload] = self.changes.get(note.payload, 0) + 1
            except psycopg.Error:
                pass
            self.listening = False
            self.epoch += 1
            self.closed.wait(LISTEN_POLL)

    def _own(self, pid: int) -> bool:
        """Whether a notification from server process `pid` is this replica's own: lent it within OWN_FOR. Older
        entries are forgotten, so a pid another replica's connection is given later is never taken for ours."""
        now = time.monotonic()
        if len(self.own) > 4 * POOL_SIZE:
            for old in [old for old, lent in list(self.own.items()) if now - lent > OWN_FOR]:
                self.own.pop(old, None)
        lent = self.own.get(pid)
        return lent is not None and now - lent < OWN_FOR

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(self.lock_wait * 1000)}ms",))

    def place(self, path: str) -> Log | None:
        """`path`'s place when it is one of the data folder's files this store holds (`fileio.share`);
        asked on every read of any file, so answered from a dict after the first time."""
        if path in self.places:
            return self.places[path]
        if len(self.places) >= PLACES_KEPT:
            self.places.clear()
        home = str(paths.data())
        found = tuple(path[len(home):].lstrip("/\\").replace("\\", "/").split("/"))
        self.places[path] = found if path.startswith(home) and found in SHARED_FILES else None
        return self.places[path]

    def mark(self, log: Log) -> tuple[int, int, int] | None:
        """What a reader compares to know `log` is unchanged since it last asked, `(epoch, changes, own appends
        kept)`; None: ask the server. When only the last differs, `mine` may have every new line."""
        if not self.listening:
            return None
        return (self.epoch, self.changes.get(name(log), 0), self.written.get(name(log), 0))

    def follow(self, log: Log) -> None:
        """Keep this process's own appends to `log` for its reader (`mine`)."""
        with self.guard:
            self.kept.setdefault(name(log), {})
            self.followed = list(self.kept)

    def mine(self, log: Log, after: int) -> list[tuple[int, bytes]] | None:
        """The lines this process appended to `log` (`follow`) that follow id `after` one by one, each with its
        id, when they are all of its own appends not yet taken; None when one does not follow on (another
        replica's line lies between, or was committed in between): then only the server can tell."""
        with self.guard:
            kept = self.kept.get(name(log), {})
            for before in [before for before, (line_id, _) in kept.items() if line_id <= after]:
                del kept[before]  # read from the server meanwhile
            taken = []
            while after in kept:
                after, line = kept.pop(after)
                taken.append((after, line))
            return None if kept else taken  # those taken are committed: the server read that follows finds them

    def _keep(self, logs: list[str], lines: list[bytes], ids: list[int], previous: list[int | None]) -> None:
        """Keep the lines just committed to followed logs for `mine`, counting them in the logs' marks."""
        with self.guard:
            for log, line, line_id, before in zip(logs, lines, ids, previous):
                kept = self.kept.get(log)
                if kept is None or before is None:  # not followed
                    continue
                if len(kept) >= KEPT_LINES:  # nobody took them: the reader reads the server instead
                    kept.clear()
                    self.changes[log] = self.changes.get(log, 0) + 1
                kept[before] = (line_id, line)
                self.written[log] = self.written.get(log, 0) + 1

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool, waited for at most `wait` seconds; the server lost on the way, or a lock it
        held past `lock_wait`, is this store's `StoreUnavailable` (an OSError): a 503 that says which (HEALTH-2)."""
        try:
            with self.pool.connection() as conn:
                self.own[conn.info.backend_pid] = time.monotonic()
                yield conn
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreUnavailable(HELD_SOMEWHERE.format(self.lock_wait)) from exc
        except PoolTimeout as exc:
            raise StoreUnavailable(LOST.format(WAITED.format(self.wait))) from exc
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(LOST.format(exc)) from exc

    def close(self) -> None:
        self.closed.set()
        self.pool.close()
        self.probe.close()

    def health(self) -> dict[str, Any]:
        """`/health`'s word on the store: whether the server answers, and if not the reason (never its address)."""
        problem = self.probe()
        return {"kind": self.kind, "answers": not problem, **({"problem": problem} if problem else {})}

    def append(self, log: Log, data: bytes) -> int:
        lines = _lines(data)
        ids = self._append_many([name(log)] * len(lines), lines) if lines else []
        self._appended(log)
        return ids[-1] if ids else 0

    def append_all(self, entries: Sequence[tuple[Log, bytes]]) -> None:
        """Every entry's lines in one transaction (`bench_append_many`, ordered and notified as `bench_append`'s):
        a panel seat's ledger and offload lines cost one round trip, not two, and seats answering at once share one
        (`Together`)."""
        logs, lines = [], []
        for log, data in entries:
            for line in _lines(data):
                logs.append(name(log))
                lines.append(line)
        if not lines:
            return
        self.together(logs, lines)
        for log in dict.fromkeys(log for log, _ in entries):
            self._appended(log)

    def _append_many(self, logs: list[str], lines: list[bytes]) -> list[int]:
        """The lines in one transaction (`bench_append_listed`); their ids. Those of followed logs are kept."""
        with self._connection() as conn:
            # sent binary: the lines go as they are, not escaped as text (~25 µs less a call)
            row = conn.execute("SELECT ids, previous FROM bench_append_listed(%b, %b, %b)",
                               (logs, lines, self.followed)).fetchone()
        ids, previous = (row[0], row[1]) if row else ([], [])
        self._keep(logs, lines, ids, previous)
        return list(ids)

    def append_log(self, log: Log, record: Mapping[str, Any], max_bytes: int, keep: int) -> None:
        """One line, as `fileio.append_jsonl` encodes it. A plain insert, half `bench_append`'s cost: such a log
        is read from its end, never followed by id, so its lines need no commit order and no notification. The
        log keeps the newest lines the folder's file and its `keep` rotated copies hold at their fullest
        (`(keep + 1) * max_bytes` bytes; 0: everything), trimmed now and then, not at every append (`_due`)."""
        line = json.dumps(record, ensure_ascii=False).encode("utf-8", "backslashreplace")
        with self._connection() as conn:
            conn.execute("INSERT INTO bench_lines (log, body) VALUES (%s, %s)", (name(log), line))
            if max_bytes and self._due(log, len(line) + 1, max_bytes):
                conn.execute(TRIM, {"log": name(log), "most": (max(keep, 1) + 1) * max_bytes})

    def _due(self, log: Log, size: int, max_bytes: int) -> bool:
        """Whether to trim `log` after appending `size` bytes to it: at this process's first append, then each
        time it has appended another `max_bytes / TRIM_EVERY`. Trimming reads the whole log, so it is rare: the
        log may pass its bound by what the replicas append between two trims."""
        step = max(max_bytes // TRIM_EVERY, 1)
        with self.guard:
            since = self.appended.get(name(log), step) + size
            self.appended[name(log)] = 0 if since >= step else since
        return since >= step

    def tail(self, log: Log, limit: int) -> list[dict[str, Any]]:
        with self._connection() as conn:
            rows = conn.execute("SELECT body FROM bench_lines WHERE log = %s ORDER BY id DESC LIMIT %s",
                                (name(log), limit)).fetchall()
        return _parsed((row[0] for row in rows), log)

    def each(self, log: Log, wanted: bytes | None = None) -> Iterator[dict[str, Any]]:
        query = "SELECT body FROM bench_lines WHERE log = %s AND position(%s IN body) > 0 ORDER BY id DESC"
        with self._connection() as conn:
            for row in conn.cursor().stream(query, (name(log), wanted or b"")):
                yield from _parsed((bytes(row[0]),), log)

    def records(self, log: Log) -> list[dict[str, Any]]:
        return _parsed(self.lines(log), log)

    def lines(self, log: Log) -> Iterator[bytes]:
        """Each line of `log` as bytes, oldest first, streamed from the server."""
        with self._connection() as conn:
            for row in conn.cursor().stream("SELECT body FROM bench_lines WHERE log = %s ORDER BY id", (name(log),)):
                yield bytes(row[0])

    def charge(self, name: str, cap: int) -> int | None:
        """The window on the server's clock, so replicas whose clocks differ still share one minute."""
        with self._connection() as conn:
            row = conn.execute("SELECT bench_charge(%s, %s, %s)", (name, cap, rates.WINDOW)).fetchone()
        return None if not row or row[0] is None else int(row[0])

    def count_day(self, name: str, day: str, cap: int) -> bool:
        with self._connection() as conn:
            row = conn.execute("INSERT INTO bench_days (name, day, count) VALUES (%s, %s, 1) ON CONFLICT (name, day) "
                               "DO UPDATE SET count = bench_days.count + 1 WHERE bench_days.count < %s RETURNING count",
                               (name, day, cap)).fetchone()
        return row is not None

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """A session advisory lock on a connection of its own. This replica's threads queue on a lock of its
        own first, so at most one connection a name waits on the server while the holder reads with others.
        Both waits together last at most `lock_wait`; then the lock is refused, naming it."""
        deadline = time.monotonic() + self.lock_wait
        local = self._local_lock(name)
        if not local.acquire(timeout=self.lock_wait):
            raise StoreUnavailable(HELD.format(name, self.lock_wait))
        try:
            with self._connection() as conn:
                self._take(conn, name, deadline)
                try:
                    yield
                finally:
                    conn.execute("SELECT pg_advisory_unlock(hashtext('bench_locks'), hashtext(%s))", (name,))
        finally:
            local.release()

    def _take(self, conn: psycopg.Connection[Any], name: str, deadline: float) -> None:
        """The advisory lock `name`: at once when it is free (one round trip, as a paced call's admission takes
        it), else waited for until `deadline` (the server's lock_timeout, for that one statement)."""
        free = conn.execute("SELECT pg_try_advisory_lock(hashtext('bench_locks'), hashtext(%s))", (name,)).fetchone()
        if free and free[0]:
            return
        left = max(int((deadline - time.monotonic()) * 1000), 1)
        try:
            with conn.transaction():  # SET LOCAL ends with it; the session lock it takes does not
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{left}ms",))
                conn.execute("SELECT pg_advisory_lock(hashtext('bench_locks'), hashtext(%s))", (name,))
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreUnavailable(HELD.format(name, self.lock_wait)) from exc

    def _local_lock(self, name: str) -> threading.Lock:
        with self.guard:
            return self.locks.setdefault(name, threading.Lock())

    def read_text(self, place: Log) -> str | None:
        with self._connection() as conn:
            row = conn.execute("SELECT body FROM bench_records WHERE place = %s AND key = ''",
                               (name(place),)).fetchone()
        return bytes(row[0]).decode("utf-8") if row else None

    def write_text(self, place: Log, text: str) -> None:
        with self._connection() as conn:
            self._put(conn, place, text.encode("utf-8"))
        self._changed(place)

    @staticmethod
    def _put(conn: psycopg.Connection[Any], place: Log, body: bytes) -> None:
        """Store a document and say so at commit: other replicas' cached copies (`read_json`) are read again."""
        conn.execute("INSERT INTO bench_records (place, key, body) VALUES (%s, '', %s) ON CONFLICT (place, key) "
                     "DO UPDATE SET body = EXCLUDED.body, at = now()", (name(place), body))
        conn.execute("SELECT pg_notify('bench_lines', %s)", (name(place),))

    def _changed(self, log: Log) -> None:
        """This replica's own change, committed: its readers see it at once, before any notification."""
        self.changes[name(log)] = self.changes.get(name(log), 0) + 1

    def _appended(self, log: Log) -> None:
        """`_changed`, but for an append to a followed log: that is counted where its lines are kept (`_keep`)."""
        if name(log) not in self.kept:
            self._changed(log)

    def read_json(self, place: Log, comments: bool = True) -> dict[str, Any]:
        mark = self.mark(place)  # taken before reading: a change meanwhile is read next time
        cached = self.documents.get(name(place))
        if cached is None or mark is None or cached[0] != mark:
            text = self.read_text(place)
            data = (_record(text.encode("utf-8")) if text is not None else None) or {}
            cached = (mark, data, {k: v for k, v in data.items() if not k.startswith("_")})
            self.documents[name(place)] = cached
        return cached[2] if comments else cached[1]

    def update_json(self, place: Log, change: Callable[[dict[str, Any]], T], **dump: Any) -> T:
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('bench_records'), hashtext(%s))", (name(place),))
            row = conn.execute("SELECT body FROM bench_records WHERE place = %s AND key = ''",
                               (name(place),)).fetchone()
            data = (_record(row[0]) if row else None) or {}
            before = json.dumps(data, sort_keys=True)
            result = change(data)
            changed = json.dumps(data, sort_keys=True) != before
            if changed:
                self._put(conn, place, json.dumps(data, ensure_ascii=False).encode("utf-8"))
        if changed:
            self._changed(place)
        return result

    def find(self, place: Log, key: str) -> dict[str, Any] | None:
        with self._connection() as conn:
            row = conn.execute("SELECT body FROM bench_records WHERE place = %s AND key = %s",
                               (name(place), key)).fetchone()
        return _record(row[0]) if row else None

    def change(self, place: Log, key: str, change: keyed.Change[T]) -> T:
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s), hashtext(%s))", (name(place), key))
            row = conn.execute("SELECT body FROM bench_records WHERE place = %s AND key = %s",
                               (name(place), key)).fetchone()
            result, record = change(_record(row[0]) if row else None)
            if record is not None:
                body = json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass")
                conn.execute("INSERT INTO bench_records (place, key, body) VALUES (%s, %s, %s) ON CONFLICT "
                             "(place, key) DO UPDATE SET body = EXCLUDED.body, at = now()", (name(place), key, body))
        return result

    def sweep(self, place: Log, idle: float) -> None:
        with self._connection() as conn:
            conn.execute("DELETE FROM bench_records WHERE place = %s AND at < now() - make_interval(secs => %s)",
                         (name(place), idle))

    def since(self, log: Log, after: int) -> tuple[int, list[tuple[int, bytes]]]:
        """`(generation, [(id, line)...])`: the log's generation and its lines after id `after`, in one trip."""
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT 0, coalesce((SELECT generation FROM bench_logs WHERE log = %s), 0), NULL "
                "UNION ALL (SELECT 1, id, body FROM bench_lines WHERE log = %s AND id > %s) ORDER BY 1, 2",
                (name(log), name(log), after)).fetchall()
        return int(rows[0][1]), [(int(row[1]), bytes(row[2])) for row in rows[1:]]

    def line(self, log: Log, line_id: int) -> bytes | None:
        with self._connection() as conn:
            row = conn.execute("SELECT body FROM bench_lines WHERE id = %s AND log = %s",
                               (line_id, name(log))).fetchone()
        return bytes(row[0]) if row else None

    def replace(self, log: Log, lines: Iterable[bytes]) -> int:
        """Make `log` hold exactly `lines`, in order (`bench store import`); returns how many. Readers start over."""
        count = 0
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('bench_lines'), hashtext(%s))", (name(log),))
            conn.execute("DELETE FROM bench_lines WHERE log = %s", (name(log),))
            conn.execute("INSERT INTO bench_logs (log, generation) VALUES (%s, 1) ON CONFLICT (log) "
                         "DO UPDATE SET generation = bench_logs.generation + 1", (name(log),))
            with conn.cursor().copy("COPY bench_lines (log, body) FROM STDIN") as copy:
                for line in lines:
                    copy.write_row((name(log), line))
                    count += 1
            conn.execute("SELECT pg_notify('bench_lines', %s)", (name(log),))
        self._changed(log)
        return count

    def logs(self) -> list[Log]:
        with self._connection() as conn:
            found = conn.execute("SELECT DISTINCT log FROM bench_lines ORDER BY 1").fetchall()
        return [tuple(row[0].split("/")) for row in found]

