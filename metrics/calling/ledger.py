"""The usage ledger: one line per built-in client call (LED-1..9).

`DATA/metrics/usage/<YYYY-MM>.jsonl`, the month of the call's send time in UTC; on Postgres (docs/replicas.md)
a log of the same name, shared by every replica.
Pacing counts requests and tokens from it, cost reads tokens from it, and the
dashboard charts it. A line says who called which model through which
connection, how it went and what it cost in tokens: never the prompt, the
answer, reasoning text, images, headers or a key (LED-7).

    python -m benchwarmers.calling.ledger      requests and tokens per connection: last hour, last day, this month
"""

import calendar
import datetime
import glob
import json
import os
import sys
import threading
import time
from pathlib import Path

from ..core import console, fileio, paths
from ..store import store

try:
    import fcntl
except ImportError:  # Windows: every line takes fileio.lock's way
    fcntl = None

CALLER_FOLDERS = ("perf", "suite", "scripts")
DOORS = ("gateway", "serve")  # the servers keep the names their doors at the checkout's top give them
KEPT_OPEN = 4  # the lock file and a few month files; more (another data folder, say) and all are closed


def folder():
    return paths.file(*store.USAGE)


def month_log(t):
    """The month's log as the store names it: its place in the data folder."""
    return (*store.USAGE, time.strftime("%Y-%m", time.gmtime(t)) + ".jsonl")


def month_file(t):
    return paths.file(*month_log(t))


def month_start(t):
    """Epoch seconds of the first moment of t's UTC calendar month."""
    tm = time.gmtime(t)
    return calendar.timegm((tm.tm_year, tm.tm_mon, 1, 0, 0, 0))


def next_month(t):
    """Epoch seconds of the first moment of the UTC month after t's."""
    tm = time.gmtime(t)
    year, month = (tm.tm_year + 1, 1) if tm.tm_mon == 12 else (tm.tm_year, tm.tm_mon + 1)
    return calendar.timegm((year, month, 1, 0, 0, 0))


_caller = None


def caller():
    """The running script (LED-4): `<folder>/<stem>` for perf, suite and scripts, `metrics/<stem>` for any other
    module of the package (whichever subpackage now holds it), else the stem (`gateway`, `serve`)."""
    global _caller
    if _caller is None:
        script = Path(sys.argv[0] if sys.argv and sys.argv[0] else "python").resolve()
        parent = script.parent.name
        if parent in CALLER_FOLDERS:
            _caller = f"{parent}/{script.stem}"
        elif script.is_relative_to(paths.PACKAGE) and script.stem not in DOORS:
            _caller = f"metrics/{script.stem}"
        else:
            _caller = script.stem
    return _caller


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def tokens(usage):
    """`{tokens_in, tokens_out, reasoning}` as reported (LED-2); figures a provider did not give are left out."""
    usage = usage if isinstance(usage, dict) else {}
    found = {}
    for name, fields in (("tokens_in", ("prompt_tokens", "input_tokens")),
                         ("tokens_out", ("completion_tokens", "output_tokens"))):
        for field in fields:
            if _int(usage.get(field)) is not None:
                found[name] = usage[field]
                break
    for details in ("completion_tokens_details", "output_tokens_details"):
        value = usage.get(details)
        if isinstance(value, dict) and _int(value.get("reasoning_tokens")) is not None:
            found["reasoning"] = value["reasoning_tokens"]
            break
    return found


def local_iso(t):
    return datetime.datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")


def line(t, alias, connection, endpoint, served, status, attempts, usage, seconds, purpose,
         swap=False, budget_retry=None, notice=""):
    """One ledger record with its keys in LED-1 order."""
    record = {"t": round(t, 3), "at": local_iso(t), "alias": alias, "connection": connection,
              "endpoint": endpoint, "served": served, "status": status, "attempts": attempts}
    record.update(tokens(usage))
    record.update(seconds=seconds, caller=caller(), purpose=purpose)
    if swap:
        record["swap"] = True
    if budget_retry:
        record["budget_retry"] = budget_retry
    if notice:
        record["notice"] = notice  # models.md improvement 15: a notice is visible without changing the result
    return record


class _Kept:
    """The lock file and month files this process keeps open between lines.

    Opening both, a mkdir and two flocks for every seat of every panel showed in the
    gateway's profile; with the descriptors kept, a line is a flock, one O_APPEND write
    and an unlock. A flock is shared by every user of one descriptor, so threads take
    turns on `guard` first; a forked child opens its own.
    """

    def __init__(self):
        self.guard = threading.Lock()
        self.fds = {}

    def append(self, path, data):
        path = os.fspath(path)  # plain strings: hashing a Path for the lookup costs more than the write
        deadline = time.monotonic() + fileio.LOCK_TIMEOUT
        if not self.guard.acquire(timeout=fileio.LOCK_TIMEOUT):
            raise TimeoutError(f"usage.lock stayed locked for {fileio.LOCK_TIMEOUT:g}s")
        try:
            if len(self.fds) >= KEPT_OPEN:
                self.close()
            lock = self._fd(os.path.join(os.path.dirname(path), "usage.lock"))
            out = self._fd(path)
            self._hold(lock, deadline)
            try:
                fileio.append_locked(out, path, data)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        except BaseException:
            self.close()  # whatever broke is not kept for the next line
            raise
        finally:
            self.guard.release()

    def _fd(self, path):
        fd = self.fds.get(path)
        if fd is not None:
            if os.fstat(fd).st_nlink:
                return fd
            os.close(fd)  # the file was deleted: a line written there would be lost
        try:
            fd = os.open(path, fileio.APPEND_FLAGS, fileio.FILE_MODE)
        except FileNotFoundError:
            fileio.make_folder(os.path.dirname(path))
            fd = os.open(path, fileio.APPEND_FLAGS, fileio.FILE_MODE)
        self.fds[path] = fd
        return fd

    @staticmethod
    def _hold(fd, deadline):
        """flock `fd`, trying every LOCK_POLL seconds until `deadline`, as fileio.lock does (LOCK-1)."""
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"usage.lock stayed locked for {fileio.LOCK_TIMEOUT:g}s") from None
                time.sleep(fileio.LOCK_POLL)

    def close(self):
        fds, self.fds = self.fds, {}
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def forked(self):
        self.guard = threading.Lock()
        self.close()


_kept = _Kept()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_kept.forked)


_holding = threading.local()  # `.kept`: the `Held` of a thread inside a `Held` block


def write(record, after=()):
    """Append one record under `metrics/usage/usage.lock` (LED-5), then call each of `after` (LED-8: what waits
    for the line to exist); False (with a stderr note) when it failed. On a thread inside a `Held` block the line
    and `after` wait for that thread's `Held.write`."""
    data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    line = (month_log(record["t"]), data)
    kept = getattr(_holding, "kept", None)
    if kept is not None:
        kept.lines.append(line)
        kept.after.extend(after)
        return True
    return _commit([line], list(after))


class Held:
    """`with ledger.Held() as held:` keeps this thread's ledger lines back until `held.write`, which writes them
    with its caller's own lines (a panel seat's offload line) in one round trip on Postgres; what is still held
    at the end of the block is written then. A plain class, not a generator: a panel enters one per seat."""

    def __init__(self):
        self.lines = []
        self.after = []
        self.outer = None

    def __enter__(self):
        self.outer = getattr(_holding, "kept", None)
        _holding.kept = self
        return self

    def __exit__(self, *raised):
        _holding.kept = self.outer
        self.write([])

    def write(self, along):
        """Write the lines held and `along` (`[(log, bytes)...]` of other logs): all or nothing, one round trip on
        Postgres; on the folder, as two appends, the ledger's first. Raises what kept `along` from being written."""
        lines, after = self.lines, self.after
        if lines or along:
            self.lines, self.after = [], []
            _commit(lines, after, along)


def _commit(lines, after, along=()):
    """Write the ledger `lines` and `along`, then call `after` once the ledger lines exist; whether they were
    written. A ledger line not written is a stderr note (a call never fails for its ledger); `along` not written
    raises."""
    chosen = store.current()
    if chosen.kind == "folder":
        written = _on_folder(lines)
    else:  # replicas share one ledger, so a provider's limits hold across them
        written = _shared(chosen, lines, along)
        along = ()
    if written:
        for release in after:
            try:
                release()
            except Exception:
                pass
    if along:
        chosen.append_all(along)
    return written


def _shared(chosen, lines, along):
    """The ledger `lines` and `along` in one `append_all`, all or nothing."""
    try:
        chosen.append_all([*lines, *along])
    except Exception as exc:
        if lines:
            _missed(exc)
        if along:
            raise
        return False
    return True


def _on_folder(lines):
    try:
        for log, data in lines:
            if fcntl:
                _kept.append(paths.file(*log), data)
            else:
                with fileio.lock(folder() / "usage"):
                    fileio.append_bytes(paths.file(*log), data)
    except Exception as exc:
        return _missed(exc)
    return True


def _missed(exc):
    console.say(f"note: the usage ledger was not written: {exc}")
    return False


def benchmark_calls_path():
    return paths.file("metrics", "benchmark-calls.json")


def count_benchmark(alias, calls=1):
    """COST-2, SU-33: `calls` a runner made to `alias` to measure it (not to work), added to
    `metrics/benchmark-calls.json` (`{alias: n}`, sorted) under its lock (models.md improvement 7)."""
    def add(data):
        known = data.get(alias)
        data[alias] = (known if isinstance(known, int) and not isinstance(known, bool) else 0) + calls

    fileio.update(benchmark_calls_path(), add, sort_keys=True)


def _months(since, until):
    start, end = month_start(since), until if until is not None else time.time()
    while start <= end:
        yield month_log(start)
        start = next_month(start)


def _every_month(chosen):
    if chosen.kind != "folder":
        return sorted(log for log in chosen.logs() if log[:2] == store.USAGE)
    return [(*store.USAGE, os.path.basename(name)) for name in sorted(glob.glob(str(folder() / "*.jsonl")))]


def rows(since=0, until=None):
    """Ledger rows with since ≤ t (< until), oldest month first (LED-6), from the store. Unreadable lines are
    skipped."""
    chosen = store.current()
    for log in _every_month(chosen) if since <= 0 else _months(since, until):
        for row in chosen.records(log):
            t = row.get("t")
            if not isinstance(t, (int, float)) or isinstance(t, bool):
                continue
            if t >= since and (until is None or t < until):
                yield row


def totals(since, until=None):
    """`{connection: [requests, tokens]}` since a moment: requests as sent (attempts), tokens in + out."""
    found = {}
    for row in rows(since, until):
        each = found.setdefault(row.get("connection") or "?", [0, 0])
        each[0] += _int(row.get("attempts")) or 0
        each[1] += (_int(row.get("tokens_in")) or 0) + (_int(row.get("tokens_out")) or 0)
    return found


def summary(now=None):
    """The LED-9 table as text."""
    now = time.time() if now is None else now
    month = totals(month_start(now))
    if not month:
        return f"no calls in the ledger this month ({folder()})"
    hour, day = totals(now - 3600), totals(now - 86_400)
    width = max(len("connection"), *(len(c) for c in month))
    lines = [f"{'connection':<{width}}  {'last hour':>20}  {'last day':>20}  {'this month (UTC)':>20}"]
    for connection in sorted(month):
        cells = []
        for span in (hour, day, month):
            requests, used = span.get(connection, (0, 0))
            cells.append(f"{requests:,} req, {used:,} tok")
        lines.append(f"{connection:<{width}}  " + "  ".join(f"{c:>20}" for c in cells))
    return "\n".join(lines)


def main():
    print(summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
