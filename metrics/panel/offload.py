"""The offload log (OFF-1..7, VRD-1..3): one line per piece of real work a model did, and the verdicts on it.

`<data>/metrics/offloads.jsonl` is append-only. Every panel seat adds an unjudged line the moment it
answers; a verdict adds a later line with the same call id, which supersedes the earlier one.

Routing reads this log on every panel (staleness, merger choice, record, pending), so it is kept
as an in-memory `Index` per log path instead of being re-read: built once, then fed only the
bytes appended since the last look (by this process or any other), and rebuilt when the file is
replaced or cut (on Postgres, docs/replicas.md, a `StoredIndex` fed the lines after the last id). Aggregates are kept per raw alias and mapped through renames at query time, so a
rename applies at once without a rebuild. A read costs one stat when nothing changed.

The index holds aggregates and a few numbers per entry, never the lines (a 100,000-line log would
cost the gateway 170 MB as dicts, about 20 MB this way: issue 7): what needs a whole entry (a
verdict's target, `entries()`, a note filter) reads its line back from the file by offset.

Additions to the reference, all compatible: lines may carry `status` and `seconds` (the seat's
outcome, so pending need not parse notes: IMP-7); verdicts tidy notes and claims (IMP-19) and
check their arguments; appends are serialised in-process (IMP-16); `record()` accepts `core`
as well as `bench/core` (IMP-6).

The log is the record and is never rotated, so nothing a caller sends may grow it without bound
(issue 29 item 3): a verdict's note holds at most `NOTE_BYTES`, each claim `CLAIM_BYTES` and a
verdict `MAX_CLAIMS` claims, measured in UTF-8 once whitespace is collapsed (413 beyond); a gateway
key adds at most `verdicts_per_key_day` lines a day (config/gateway.json; 429 until midnight), counted
by the store (`runs/gateway/verdicts.json`, or Postgres) across ports, processes and replicas; and a
verdict's reply (`receipt`) cuts what it echoes. Callers without a key (`local`), the dashboard and this
CLI are not counted: they can write the data folder anyway.

    python -m benchwarmers.panel.offload list
    python -m benchwarmers.panel.offload add MODEL TASK [--useful|--not-useful] [--note T] [--real C]... [--false C]...
    python -m benchwarmers.panel.offload verdict CALL (--useful|--not-useful) [--note T] [--real C]... [--false C]...

The gateway's footer prints the `verdict` line, so it works from an install and from a checkout alike.
"""

import argparse
import array
import dataclasses
import datetime
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

from ..core import console, fileio, paths, records
from ..core.errors import DailyCap, Invalid, TooLarge, UnknownCall
from ..models import aliases
from ..store import store
from . import collections

T = TypeVar("T")

ERROR_EXCERPT = 120
NOTE_BYTES = 4096
CLAIM_BYTES = 1024  # a one-sentence claim; the dashboard's form keeps 400 characters
MAX_CLAIMS = 50  # `real` and `false` together
ECHO_CHARS = 200  # of a note or claim, in a verdict's reply
LOCAL = "local"  # the caller when keys are not required: no key, so no daily count (as for panels in flight)
UNKNOWN_CALL = "no offload with call id '{}'; the gateway prints them under each answer"
BAD_USEFUL = '"useful" must be true or false'
BAD_CLAIMS = '"real" and "false" must be lists of one-sentence claims'
DAILY_CAP = ("the gateway key {} has added {:,} verdicts today (verdicts_per_key_day in config/gateway.json); "
             "try again tomorrow")

_append_lock = threading.Lock()
_verdict_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of metrics/offloads.jsonl (OFF-1, OFF-3), its keys in this order: `{date, model, task,
    useful: true | false | null, note, call?, real?: [claim...], false?: [claim...], status?, seconds?,
    collection?, shape?, ranked?: [call...]}`. A line with `ranked` is a council's peer ranking (CNC-7): its
    model ranked those calls, best first (`[]` when its ranking could not be read); it may be judged, is
    never owed a verdict, and counts towards no model's record. A later line with the same `call` supersedes the earlier one (OFF-2); a line
    whose `model` is no string is no offload.

    A text field of the wrong type reads as ""; `useful` as None (unjudged) unless true or false; `real` and
    `false` keep their strings. `collection` and `shape` are what the line counts towards: its own fields,
    else, for lines older than those, the `(<collection>, <shape>)` suffix the panel appended to its task
    (never a collection named inside the prompt, security review 6); None when neither says. `stored` is
    the line as written (`model` under today's alias when read back): the verdict copies from it."""

    date: str
    model: str
    task: str
    useful: bool | None
    note: str
    call: str
    real: tuple[str, ...]
    false: tuple[str, ...]
    status: str
    seconds: float | None
    collection: str | None
    shape: str | None
    stored: Mapping[str, Any]
    ranked: tuple[str, ...] | None = None


def line(record: Mapping[str, Any]) -> Line:
    """The `Line` a record of the log (a JSON object whose `model` is a string) stands for."""
    useful, seconds = record.get("useful"), record.get("seconds")
    number = isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
    return Line(records.string(record.get("date")), record["model"], records.string(record.get("task")),
                useful if isinstance(useful, bool) else None, records.string(record.get("note")),
                records.string(record.get("call")), records.strings(record.get("real")),
                records.strings(record.get("false")), records.string(record.get("status")),
                seconds if number else None, _collection_of(record), _shape_of(record), record,
                records.strings(record["ranked"]) if _ranking(record) else None)


def _ranking(record: Mapping[str, Any]) -> bool:
    """A council's peer ranking (CNC-7), not a seat's answer."""
    return isinstance(record.get("ranked"), list)


def log_path() -> Path:
    return paths.file(*store.OFFLOADS)


def note_for(label: str, status: str, seconds: float, error: str = "") -> str:
    """The seat's note (OFF-N1): `member; ok in 3.2s`, `explorer 2; error in 0.4s: <error excerpt>`."""
    note = f"{label}; {status} in {seconds:.1f}s"
    if error:
        note += f": {error[:ERROR_EXCERPT]}"
    return note


def add(model: str, task: str, useful: bool | None = None, note: str = "", call: str | None = None,
        real: Iterable[str] | None = None, false: Iterable[str] | None = None, status: str | None = None,
        seconds: float | None = None, collection: str | None = None, shape: str | None = None,
        ranked: Iterable[str] | None = None,
        write: Callable[[list[tuple[store.Log, bytes]]], None] | None = None) -> Line:
    """Append one offload line (OFF-1, OFF-3) and return it; `ranked` makes it a peer ranking (CNC-7). `write`
    appends it in the store's place (a panel seat's `ledger.Held.write`, which adds the seat's ledger line).

    Key order is the contract's, then our `status`, `seconds`, `collection` and `shape` when given
    (a panel seat's collection and shape as fields, so no reader has to find them in the task's
    free text, which holds the caller's prompt). The line is ASCII-escaped JSON written in one
    O_APPEND write, all or nothing, so readers never see half of it.
    """
    entry: dict[str, Any] = {"date": datetime.date.today().isoformat(), "model": model, "task": task,
                             "useful": useful, "note": note}
    if call:
        entry["call"] = call
    if real:
        entry["real"] = list(real)
    if false:
        entry["false"] = list(false)
    if status is not None:
        entry["status"] = status
    if seconds is not None:
        entry["seconds"] = seconds
    if collection:
        entry["collection"] = collection
    if shape:
        entry["shape"] = shape
    if ranked is not None:
        entry["ranked"] = list(ranked)
    data = (json.dumps(entry) + "\n").encode("ascii")
    chosen = store.current()
    if write is not None and chosen.kind != "folder":
        # Postgres's `append_all` calls already take turns in this process (`postgres.Together`, IMP-16), and
        # seats waiting there share a round trip: waiting here first, one by one, they could not
        write([(store.OFFLOADS, data)])
        return line(entry)
    with _append_lock:  # the store's own lock keeps lines whole; this one also covers systems without flock
        if write is None:
            chosen.append(store.OFFLOADS, data)
        else:
            write([(store.OFFLOADS, data)])
    return line(entry)


def _tidy(text: str) -> str:
    return " ".join(text.split())


def _claims(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(claim, str) for claim in value):
        raise Invalid(BAD_CLAIMS)
    return [tidy for tidy in map(_tidy, value) if tidy]


def _bounded(note: str, real: list[str], false: list[str]) -> None:
    """Issue 29 item 3: raise `TooLarge` for a note or claim past its bound, or too many claims."""
    size = len(note.encode("utf-8", "surrogatepass"))
    if size > NOTE_BYTES:
        raise TooLarge(f'"note" is {size:,} bytes; the limit is {NOTE_BYTES:,}')
    if len(real) + len(false) > MAX_CLAIMS:
        raise TooLarge(f'"real" and "false" hold {len(real) + len(false):,} claims; the limit is {MAX_CLAIMS}')
    for field, claims in (("real", real), ("false", false)):
        for claim in claims:
            size = len(claim.encode("utf-8", "surrogatepass"))
            if size > CLAIM_BYTES:
                raise TooLarge(f'a claim in "{field}" is {size:,} bytes; the limit is {CLAIM_BYTES:,}')


def _count_today(by: str) -> None:
    """Count one verdict line of gateway key `by` against `verdicts_per_key_day`, across processes and replicas
    (the store); raise `DailyCap` when today's are spent. A day is the local date, as the log's lines carry it."""
    cap = collections.settings().verdicts_per_key_day
    if cap and not store.current().count_day(by, datetime.date.today().isoformat(), cap):
        refusal = DailyCap(DAILY_CAP.format(by, cap))
        refusal.retry_after = _seconds_to_midnight()
        raise refusal


def _seconds_to_midnight() -> int:
    now = datetime.datetime.now()
    midnight = datetime.datetime.combine(now.date() + datetime.timedelta(days=1), datetime.time())
    return max(1, int((midnight - now).total_seconds()) + 1)


def verdict(call: object, useful: object, note: object = "", real: object = None, false: object = None,
            replace: bool = False, by: str | None = None) -> Line:
    """Judge the offload with call id `call` (OFF-4); returns the entry now in force.

    Notes and claims are whitespace-collapsed and blank claims dropped (IMP-19). Unless
    `replace`, a blank note or empty claim list keeps the earlier one; with it (the dashboard's
    form) blank clears. The same verdict again writes nothing and returns the target.
    `by` names the gateway key judging: each line it adds counts against its day's cap.
    Raises `Invalid` (a ValueError) for a non-boolean `useful` or claims that are not lists of strings,
    `TooLarge` past a bound, `UnknownCall` (a KeyError) for an unknown call, `DailyCap` when `by`'s verdicts
    for today are spent, checked in that order (VRD-1's, then the bounds before the log is read).
    """
    if not isinstance(useful, bool):
        raise Invalid(BAD_USEFUL)
    real_claims, false_claims = _claims(real), _claims(false)
    said = _tidy(note) if isinstance(note, str) else ""
    _bounded(said, real_claims, false_claims)
    # Two identical verdicts racing in this process must write one line.
    with _verdict_lock:
        target = by_call(call) if isinstance(call, str) else None
        if target is None or not isinstance(call, str):
            raise UnknownCall(UNKNOWN_CALL.format(call if isinstance(call, str) else ""))
        if not replace:
            said = said or target.note
            real_claims = real_claims or list(target.real)
            false_claims = false_claims or list(target.false)
        if (useful, said, real_claims, false_claims) == (target.useful, target.note, list(target.real),
                                                           list(target.false)):
            return target
        if by and by != LOCAL:
            _count_today(by)
        kept = target.stored  # the seat's own fields as written, never those a reader infers from its task
        return add(target.model, target.task, useful, said, call, real_claims, false_claims, kept.get("status"),
                   kept.get("seconds"), kept.get("collection"), kept.get("shape"), target.ranked)


def _cut(text: str) -> str:
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "…"


def receipt(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict's reply (VRD-1's `recorded`): the entry without its task, which starts with the prompt (security
    review 4), its note and each claim cut to `ECHO_CHARS` (issue 29 item 3: the caller has them already)."""
    shown = {k: v for k, v in entry.items() if k != "task"}
    if isinstance(shown.get("note"), str):
        shown["note"] = _cut(shown["note"])
    for field in ("real", "false"):
        if isinstance(shown.get(field), list):
            shown[field] = [_cut(c) if isinstance(c, str) else c for c in shown[field]]
    return shown


def _date(entry: Mapping[str, Any]) -> str:
    date = entry.get("date")
    return date if isinstance(date, str) else ""


def _failed(entry: Mapping[str, Any]) -> bool:
    """A seat that errored: its `status` field when the line has one, else its note (VRD-3)."""
    status = entry.get("status")
    if isinstance(status, str):
        return status == "error"
    note = entry.get("note")
    return isinstance(note, str) and "; error in " in note.split(":", 1)[0]


def _suffix(task: str) -> tuple[str, str] | None:
    """The `(<collection>, <shape>)` group the panel appends to a task, as `(collection, shape)`, or None.

    Only the last group counts: the task starts with the caller's prompt, which may hold
    anything, so a collection named inside it must never count (security review 6).
    """
    if not task.endswith(")"):
        return None
    inner = task[task.rfind("(") + 1:-1]
    collection, comma, shape = inner.partition(", ")
    return (collection, shape) if comma and collection else None


def _collection_of(entry: Mapping[str, Any]) -> str | None:
    """The collection a record of the log counts towards: its `collection` field, else the task's suffix."""
    collection = entry.get("collection")
    if isinstance(collection, str):
        return collection
    task = entry.get("task")
    found = _suffix(task) if isinstance(task, str) else None
    return found[0] if found else None


def _shape_of(entry: Mapping[str, Any]) -> str | None:
    """A record's `shape` field, else the X of a task ending `, X)` (X without `, `), as panels wrote it."""
    shape = entry.get("shape")
    if isinstance(shape, str):
        return shape
    task = entry.get("task")
    if not isinstance(task, str) or not task.endswith(")"):
        return None
    cut = task.rfind(", ")
    return None if cut == -1 else task[cut + 2:-1]


Group = tuple[str, ...]  # ALL, ("collection", X) or ("shape", X)
Counted = tuple[str, int, Any, int, int]  # an entry as a tally counts it: date, flags, task, real and false claims
Merged = list[Any]  # [offloads, useful, judged, (latest date, position), its task]

ALL: Group = ("all",)
JUDGED, USEFUL, FAILED, RANKING = 1, 2, 4, 8  # an entry's flags: it has a verdict, the verdict is useful, the
# seat errored, it is a peer ranking (in no tally, never pending: CNC-7)
BLOCK = 1 << 20  # bytes read at a time while building: the parsed lines are never all held at once


class _Moved(Exception):
    """The log no longer holds the line the index points at: it was replaced or rewritten."""


def _intern(table: list[T], ids: dict[T, int], value: T) -> int:
    """`value`'s number in `table`, adding it the first time: every line repeats the same aliases and dates."""
    found = ids.get(value)
    if found is None:
        found = ids[value] = len(table)
        table.append(value)
    return found


def _claim_count(value: object) -> int:
    """How many claims a line's `real` or `false` holds (anything but a list holds none)."""
    return len(value) if isinstance(value, list) else 0


class _Tally:
    """One raw alias's share of a group of entries: counts, the claims its judged entries verified as real and
    as false, and the latest (date, position), with its task."""

    __slots__ = ("count", "useful", "judged", "real", "false", "last", "task", "stale")

    def __init__(self) -> None:
        self.count = self.useful = self.judged = self.real = self.false = 0
        self.last: tuple[str, int] | None = None
        self.task: Any = ""
        self.stale = False  # the latest entry was replaced by an older one: find it again when asked

    def _count(self, entry: Counted, sign: int) -> None:
        _, flags, _, real, false = entry
        self.count += sign
        if flags & JUDGED:
            self.judged += sign
            self.useful += sign if flags & USEFUL else 0
            self.real += sign * real
            self.false += sign * false

    def change(self, pos: int, old: Counted | None, new: Counted | None) -> None:
        """The entry at `pos` counted here was `old` and is now `new`: None or (date, flags, task, real claims,
        false claims)."""
        if old is not None:
            self._count(old, -1)
        if new is not None:
            self._count(new, 1)
        last = self.last
        if last is not None and last[1] == pos:
            # A verdict usually replaces the latest entry with a later date: still the latest.
            if new is not None and new[0] >= last[0]:
                self.last, self.task = (new[0], pos), new[2]
            else:
                self.last = None
                self.stale = self.count > 0
        elif new is not None and not self.stale:
            mark = (new[0], pos)
            if last is None or mark > last:
                self.last, self.task = mark, new[2]


class Index:
    """What routing needs from one offload log, kept up to date from its appended bytes.

    Entries are numbered in OFF-2 order (one per call id, at the first one's position, with the
    latest content). The index keeps no lines: per position, arrays hold where the line now in
    force starts and how long it is, its raw alias and date (numbers into `names` and `days`), its
    flags and, when judged, the collections and shape its task names (`kinds`, a number into `kind_keys`)
    and how many claims its verdict verified as real and as false (`reals`, `falses`).
    `groups` maps ALL, ("collection", X) and ("shape", X) to `{raw alias: _Tally}`; the last two
    count judged entries only, and `judged_in` holds each collection's judged positions. Answers
    that need a whole entry (`entries`, `by_call`, a note filter) read its line back by offset.
    `bytes_read` counts the bytes of whole lines read to build and feed the index, `builds` the
    times it started from an empty slate. A new inode or a shorter file means the log was replaced
    or cut; OFF-1's log is append-only, so an in-place rewrite is noticed only when a line read
    back is not the one indexed, and then the index is built again.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.lock = threading.RLock()
        self.bytes_read = 0
        self.builds = 0
        self._file: BinaryIO | None = None
        self._reset()

    def _reset(self) -> None:
        self.ident: tuple[int, int] | None = None
        self.offset = 0
        self.size = -1
        self.calls: dict[str, int] = {}
        self.starts, self.lengths = array.array("q"), array.array("I")
        self.reals, self.falses = array.array("I"), array.array("I")
        self.models, self.dates, self.kinds, self.flags = (array.array("I"), array.array("I"), array.array("I"),
                                                           array.array("B"))
        self.names: list[str] = []
        self.name_ids: dict[str, int] = {}
        self.days: list[str] = []
        self.day_ids: dict[str, int] = {}
        self.kind_keys: list[tuple[tuple[str, ...], str | None]] = [((), None)]
        self.kind_ids: dict[tuple[tuple[str, ...], str | None], int] = {((), None): 0}
        self.groups: dict[Group, dict[str, _Tally]] = {}
        self.judged_in: dict[str, set[int]] = {}
        self.ranked_in: dict[str, set[int]] = {}  # each collection's peer rankings, judged or not

    def refresh(self) -> None:
        """Take in what was appended since the last look; start over when the file was replaced or cut."""
        with self.lock:
            try:
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) == self.ident and st.st_size == self.size:
                    return  # unchanged (a torn last line waits for its newline, not re-read on every call)
                f = open(self.path, "rb")
            except FileNotFoundError:
                if self.ident is not None:
                    self._reset()
                return
            with f:
                st = os.fstat(f.fileno())  # the file being read, even if the path was replaced since
                ident = (st.st_dev, st.st_ino)
                if ident != self.ident or st.st_size < self.offset:
                    self._reset()
                    self.ident = ident
                    self.builds += 1
                self.size = st.st_size
                self._read(f)

    def _read(self, f: BinaryIO) -> None:
        """Index the whole lines between `offset` and `size`, a block at a time."""
        f.seek(self.offset)
        left = self.size - self.offset
        carry = b""
        while left > 0:
            block = f.read(min(BLOCK, left))
            if not block:
                break
            left -= len(block)
            blob = carry + block
            end = blob.rfind(b"\n") + 1
            start = self.offset
            for piece in blob[:end].split(b"\n")[:-1]:
                for record in fileio.parse_lines(piece, self.path):
                    self._take(record, start, len(piece))
                start += len(piece) + 1
            carry = blob[end:]
            self.offset += end
            self.bytes_read += end

    def _kind(self, record: Mapping[str, Any]) -> int:
        """The number of the (collections, shape) a judged entry counts towards."""
        collection = _collection_of(record)
        return _intern(self.kind_keys, self.kind_ids, ((collection,) if collection else (), _shape_of(record)))

    def _places(self, raw: str, flags: int, kind: int) -> list[tuple[Group, str]]:
        if flags & RANKING:
            return []
        places: list[tuple[Group, str]] = [(ALL, raw)]
        if flags & JUDGED:
            collections, shape = self.kind_keys[kind]
            places += [(("collection", key), raw) for key in collections]
            if shape is not None:
                places.append((("shape", shape), raw))
        return places

    def _tally(self, group: Group, raw: str) -> _Tally:
        tallies = self.groups.setdefault(group, {})
        tally = tallies.get(raw)
        if tally is None:
            tally = tallies[raw] = _Tally()
        return tally

    def _take(self, record: Mapping[str, Any], start: int, length: int) -> None:
        raw = record.get("model")
        if not isinstance(raw, str):
            return  # not an offload line: nothing to attribute it to
        useful = record.get("useful")
        flags = (0 if useful is None else JUDGED | (USEFUL if useful else 0)) | (FAILED if _failed(record) else 0) \
            | (RANKING if _ranking(record) else 0)
        kind = self._kind(record) if flags & JUDGED else 0
        date = _date(record)
        model, day = _intern(self.names, self.name_ids, raw), _intern(self.days, self.day_ids, date)
        real, false = (_claim_count(record.get("real")), _claim_count(record.get("false"))) if flags & JUDGED else (0, 0)
        new: Counted = (date, flags, record.get("task", ""), real, false)
        found = record.get("call")
        call = found if found and isinstance(found, str) else None
        pos = self.calls.get(call) if call else None
        old: Counted | None
        before: list[tuple[Group, str]]
        if pos is None:
            pos, old, before = len(self.starts), None, []
            if call:
                self.calls[call] = pos
            self.starts.append(start)
            self.lengths.append(length)
            self.models.append(model)
            self.dates.append(day)
            self.kinds.append(kind)
            self.flags.append(flags)
            self.reals.append(real)
            self.falses.append(false)
        else:
            old = (self.days[self.dates[pos]], self.flags[pos], None, self.reals[pos], self.falses[pos])
            before = self._places(self.names[self.models[pos]], self.flags[pos], self.kinds[pos])
            self.starts[pos], self.lengths[pos] = start, length
            self.models[pos], self.dates[pos], self.kinds[pos], self.flags[pos] = model, day, kind, flags
            self.reals[pos], self.falses[pos] = real, false
        after = self._places(raw, flags, kind)
        for place in set(before) | set(after):
            self._tally(*place).change(pos, old if place in before else None, new if place in after else None)
        for group, _ in before:
            if group[0] == "collection":
                self.judged_in[group[1]].discard(pos)
        for group, _ in after:
            if group[0] == "collection":
                self.judged_in.setdefault(group[1], set()).add(pos)
        collection = _collection_of(record)
        if flags & RANKING and collection:
            self.ranked_in.setdefault(collection, set()).add(pos)

    def _answer(self, compute: Callable[[], T]) -> T:
        """`compute()` on the index brought up to date, under its lock; built again and retried if a
        line read back (`_entry`) shows the log was replaced or rewritten since."""
        with self.lock:
            while True:
                self.refresh()
                try:
                    return compute()
                except _Moved:
                    self._reset()  # the next refresh builds from the file as it now is
                finally:
                    if self._file is not None:
                        self._file.close()
                        self._file = None

    def _entry(self, pos: int) -> dict[str, Any]:
        """The entry now in force at `pos`, read back from its line (inside `_answer` only)."""
        if self._file is None:
            try:
                f = open(self.path, "rb", buffering=0)
            except FileNotFoundError:
                raise _Moved from None
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) != self.ident or st.st_size < self.offset:
                f.close()
                raise _Moved
            self._file = f
        self._file.seek(self.starts[pos])
        try:
            entry = json.loads(self._file.read(self.lengths[pos]))
        except ValueError:
            raise _Moved from None
        if not isinstance(entry, dict) or entry.get("model") != self.names[self.models[pos]]:
            raise _Moved
        return entry

    def _members(self, group: Group, raw: str) -> list[int]:
        """The positions `group` counts for raw alias `raw`, found by a scan: for a tally gone stale."""
        model = self.name_ids[raw]
        candidates: Iterable[int]
        if group is ALL:
            candidates = range(len(self.starts))
        elif group[0] == "collection":
            candidates = self.judged_in.get(group[1], ())
        else:
            candidates = (pos for pos in range(len(self.starts))
                          if self.flags[pos] & JUDGED and self.kind_keys[self.kinds[pos]][1] == group[1])
        return [pos for pos in candidates if self.models[pos] == model]

    def _latest(self, group: Group, raw: str, tally: _Tally) -> tuple[str, int] | None:
        if tally.stale:
            last = max((self.days[self.dates[pos]], pos) for pos in self._members(group, raw))
            tally.task = self._entry(last[1]).get("task", "") if group is ALL else ""
            tally.last, tally.stale = last, False
        return tally.last

    def _merged(self, group: Group, resolve: Callable[[str], str]) -> dict[str, Merged]:
        """`{current alias: [offloads, useful, judged, (latest date, position), its task]}` for a group."""
        merged: dict[str, Merged] = {}
        for raw, tally in self.groups.get(group, {}).items():
            if not tally.count:
                continue
            name = resolve(raw)
            last = self._latest(group, raw, tally)
            row = merged.get(name)
            if row is None:
                merged[name] = [tally.count, tally.useful, tally.judged, last, tally.task]
            else:
                row[0] += tally.count
                row[1] += tally.useful
                row[2] += tally.judged
                if last > row[3]:
                    row[3], row[4] = last, tally.task
        return merged

    def _scan(self, positions: Iterable[int], resolve: Callable[[str], str],
              wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Merged]:
        """Judged entries at `positions`, read back, that `wanted(entry)` accepts, merged like `_merged`:
        for what no group answers by itself."""
        merged: dict[str, Merged] = {}
        for pos in sorted(positions):
            entry = self._entry(pos)
            useful = entry.get("useful")
            if useful is None or not wanted(entry):
                continue
            row = merged.setdefault(resolve(entry["model"]), [0, 0, 0, ("", -1), ""])
            row[0] += 1
            row[1] += 1 if useful else 0
            row[2] += 1
            row[3] = max(row[3], (_date(entry), pos))
        return merged

    def _mapped(self, entry: dict[str, Any], resolve: Callable[[str], str]) -> Line:
        """A line read back, under today's alias (each caller gets its own, so none can change another's)."""
        entry["model"] = resolve(entry["model"])
        return line(entry)

    def entries(self) -> list[Line]:
        resolve = aliases.resolver()
        return self._answer(lambda: [self._mapped(self._entry(pos), resolve) for pos in range(len(self.starts))])

    def by_call(self, call: object) -> Line | None:
        resolve = aliases.resolver()

        def compute() -> Line | None:
            pos = self.calls.get(call) if isinstance(call, str) else None
            return None if pos is None else self._mapped(self._entry(pos), resolve)
        return self._answer(compute)

    def summary(self) -> dict[str, dict[str, Any]]:
        resolve = aliases.resolver()
        return self._answer(lambda: {
            name: {"offloads": offloads, "useful": useful, "judged": judged, "last_task": task, "last_date": last[0]}
            for name, (offloads, useful, judged, last, task) in self._merged(ALL, resolve).items()
        })

    def claims(self) -> dict[str, dict[str, int]]:
        resolve = aliases.resolver()

        def compute() -> dict[str, dict[str, int]]:
            found: dict[str, dict[str, int]] = {}
            for raw, tally in self.groups.get(ALL, {}).items():
                if tally.judged:
                    row = found.setdefault(resolve(raw), {"judged": 0, "real": 0, "false": 0})
                    row["judged"] += tally.judged
                    row["real"] += tally.real
                    row["false"] += tally.false
            return found
        return self._answer(compute)

    def last_used(self) -> dict[str, str]:
        resolve = aliases.resolver()
        return self._answer(lambda: {name: row[3][0] for name, row in self._merged(ALL, resolve).items()})

    def shape_record(self, shape: str) -> dict[str, dict[str, int]]:
        resolve = aliases.resolver()

        def compute() -> dict[str, dict[str, int]]:
            if ", " in shape:  # no shape name holds one, so no group: those ending with its last part are read
                ending, part = f", {shape})", shape.rsplit(", ", 1)[1]
                positions = [pos for pos in range(len(self.starts))
                             if self.flags[pos] & JUDGED and self.kind_keys[self.kinds[pos]][1] == part]
                merged = self._scan(positions, resolve, lambda entry: "shape" not in entry
                                    and str(entry.get("task", "")).endswith(ending))
            else:
                merged = self._merged(("shape", shape), resolve)
            return {name: {"useful": row[1], "judged": row[2]} for name, row in merged.items()}
        return self._answer(compute)

    def record(self, collection: str, task: str = "") -> dict[str, dict[str, Any]]:
        resolve = aliases.resolver()

        def compute() -> dict[str, dict[str, Any]]:
            if task:  # a note filter: only this collection's judged entries are read
                merged = self._scan(self.judged_in.get(collection, ()), resolve,
                                    lambda entry: task in str(entry.get("note", "")))
            else:
                merged = self._merged(("collection", collection), resolve)
            return {
                name: {"useful": useful, "notUseful": judged - useful, "judged": judged, "lastAt": last[0]}
                for name, (_, useful, judged, last, _) in merged.items()
            }
        return self._answer(compute)

    def judged(self, collection: str) -> list[Line]:
        """The judged entries of `collection`, oldest first (OFF-2's, under today's aliases), read back by offset."""
        resolve = aliases.resolver()
        return self._answer(lambda: [self._mapped(self._entry(pos), resolve)
                                     for pos in sorted(self.judged_in.get(collection, ()))])

    def rankings(self, collection: str) -> list[Line]:
        """The peer rankings of `collection` (CNC-7), judged or not, oldest first, under today's aliases."""
        resolve = aliases.resolver()
        return self._answer(lambda: [self._mapped(self._entry(pos), resolve)
                                     for pos in sorted(self.ranked_in.get(collection, ()))])

    def pending(self, calls: Iterable[object]) -> list[str]:
        def compute() -> list[str]:
            out = []
            for call in calls:
                pos = self.calls.get(call) if isinstance(call, str) else None
                if isinstance(call, str) and pos is not None and not self.flags[pos] & (JUDGED | FAILED | RANKING):
                    out.append(call)
            return out
        return self._answer(compute)


class StoredIndex(Index):
    """The `Index` of the offload log kept in the Postgres store (docs/replicas.md): fed the lines after the
    last id it took, each line's id standing where the file's offset stands. A new generation of the log
    (`bench store import`) means it was replaced: the index starts over. A read asks the server only when the
    log changed since the last (`mark`: the store's notifications); another replica's line is seen once its
    notification arrives, at most a round trip after its commit."""

    def __init__(self, shared: store.Shared) -> None:
        super().__init__("postgres:" + "/".join(store.OFFLOADS))
        self.shared = shared
        shared.follow(store.OFFLOADS)

    def _reset(self) -> None:
        super()._reset()
        self.mark: tuple[int, int, int] | None = None  # the store's mark at the last look (None: look again)

    def refresh(self) -> None:
        with self.lock:
            mark = self.shared.mark(store.OFFLOADS)  # taken before asking: a change meanwhile is asked for next time
            if mark is not None and mark == self.mark:
                return  # no line appended since the last look, by this replica or (notified) any other
            if mark is not None and self.mark is not None and mark[:2] == self.mark[:2]:
                own = self.shared.mine(store.OFFLOADS, self.offset)  # only this replica appended meanwhile
                if own is not None:
                    self._feed(own)
                    self.mark = mark
                    return
            generation, rows = self.shared.since(store.OFFLOADS, self.offset)
            if self.ident != (generation, 0):
                if self.ident is not None:
                    self._reset()
                    generation, rows = self.shared.since(store.OFFLOADS, 0)
                self.ident = (generation, 0)  # the generation, where the file's (device, inode) stands
                self.builds += 1
            self._feed(rows)
            self.mark = mark

    def _feed(self, rows: list[tuple[int, bytes]]) -> None:
        for line_id, body in rows:
            for record in fileio.parse_lines(body, self.path):
                self._take(record, line_id, len(body))
            self.offset = line_id
            self.bytes_read += len(body)

    def _entry(self, pos: int) -> dict[str, Any]:
        body = self.shared.line(store.OFFLOADS, self.starts[pos])
        try:
            entry = json.loads(body) if body is not None else None
        except ValueError:
            raise _Moved from None
        if not isinstance(entry, dict) or entry.get("model") != self.names[self.models[pos]]:
            raise _Moved
        return entry


_indexes: dict[str, Index] = {}
_indexes_lock = threading.Lock()
_stored: list[StoredIndex] = []


def _shared_index(shared: store.Shared) -> StoredIndex:
    """The `StoredIndex` of this process's Postgres store, made again when the store was chosen again."""
    with _indexes_lock:
        if not _stored or _stored[0].shared is not shared:
            _stored[:] = [StoredIndex(shared)]
        return _stored[0]


def index(path: str | Path | None = None) -> Index:
    """The live `Index` of the log at `path` (default: this bench's, in its store), one per path per process."""
    if path is None:
        chosen = store.current()
        if chosen.kind == "postgres":
            found_stored = _stored[0] if _stored else None
            if found_stored is not None and found_stored.shared is chosen:
                return found_stored
            return _shared_index(cast(store.Shared, chosen))
    key = str(path or log_path())
    found = _indexes.get(key)
    if found is None:
        with _indexes_lock:
            found = _indexes.setdefault(key, Index(key))
    return found


def entries() -> list[Line]:
    """Every offload, oldest first, one per call id (OFF-2); models under their current alias."""
    return index().entries()


def lines(path: str | Path | None = None) -> list[Line]:
    """Every offload line in the order written, verdicts as lines of their own (not merged as OFF-2's
    entries are), aliases as written: for a replay that must know when each verdict was given (issue 20).
    The log is append-only and never rotated (OFF-1), so this one file is the whole history."""
    found = fileio.read_jsonl(path) if path else store.current().records(store.OFFLOADS)
    return [line(record) for record in found if isinstance(record.get("model"), str)]


def by_call(call: object) -> Line | None:
    """The latest entry with call id `call`, or None."""
    return index().by_call(call)


def summary() -> dict[str, dict[str, Any]]:
    """`{alias: {offloads, useful, judged, last_task, last_date}}` (OFF-5)."""
    return index().summary()


def claims() -> dict[str, dict[str, int]]:
    """`{alias: {judged, real, false}}`: each model's judged entries and the claims their verdicts verified as
    real and as false (OFF-4), from the index's tallies: nothing is read back, whatever the log's size."""
    return index().claims()


def last_used() -> dict[str, str]:
    """`{alias: latest offload date}`, judged or not: the router's staleness (OFF-7, RTR-2)."""
    return index().last_used()


def shape_record(shape: str) -> dict[str, dict[str, int]]:
    """`{alias: {useful, judged}}` over judged entries whose task ends `, <shape>)` (the merger's record)."""
    return index().shape_record(shape)


def record(collection: str, task: str = "") -> dict[str, dict[str, Any]]:
    """VRD-2's `aliases`: judged entries of `collection` whose note holds `task`.

    An entry's collection is its `collection` field, or for lines older than that field the
    `(<collection>, <shape>)` suffix the panel appends to its task; never a collection named
    inside the prompt (security review 6: a deliberate tightening of VRD-2's "task contains").
    `core` reads as `bench/core` (IMP-6); an unknown collection gives `{}`.
    """
    if collection and not collection.startswith("bench/"):
        collection = f"bench/{collection}"
    return index().record(collection, task)


def judged(collection: str) -> list[Line]:
    """Every judged entry of `collection` (`bench/<name>`), oldest first, one per call id: what the leaderboard
    fits (issue 20), read through the index so the rest of the log is never parsed."""
    return index().judged(collection)


def rankings(collection: str) -> list[Line]:
    """Every peer ranking of `collection` (`bench/<name>`), oldest first, one per call id (CNC-7): what the
    leaderboard's `peers` source fits."""
    return index().rankings(collection)


def pending(calls: Iterable[object]) -> list[str]:
    """VRD-3: the given ids (order and duplicates kept) the log knows, unjudged, and neither errored seats nor
    peer rankings (CNC-7: a ranking may be judged but is never owed a verdict)."""
    return index().pending(calls)


NONE_RECORDED = (
    "No offloads recorded yet. Only real work counts: a seat the gateway asked,\n"
    "or `python -m benchwarmers.panel.offload add MODEL TASK` after a model's answer did real work for you."
)


def table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    """OFF-6's `list`: `model used helped last`, most offloads first; helped `u/j` or `—`; task cut to 44."""
    if not rows:
        return NONE_RECORDED
    ordered = sorted(rows.items(), key=lambda item: (-item[1]["offloads"], item[0]))
    shown = [("model", "used", "helped", "last")]
    for name, row in ordered:
        helped = f"{row['useful']}/{row['judged']}" if row["judged"] else "—"
        shown.append((name, str(row["offloads"]), helped, f"{row['last_date']}  {row['last_task'][:44]}"))
    width = [max(len(cells[i]) for cells in shown) for i in range(3)]
    return "\n".join(
        f"{name:<{width[0]}}  {used:>{width[1]}}  {helped:>{width[2]}}  {last}" for name, used, helped, last in shown
    )


def _verdict_options(parser: argparse.ArgumentParser, required: bool) -> None:
    pick = parser.add_mutually_exclusive_group(required=required)
    pick.add_argument("--useful", dest="useful", action="store_const", const=True, help="it helped")
    pick.add_argument("--not-useful", dest="useful", action="store_const", const=False, help="it did not help")
    parser.add_argument("--note", default="", help="what it got right or wrong, checked against the code")
    parser.add_argument("--real", action="append", default=[], metavar="CLAIM", help="a finding it got right")
    parser.add_argument("--false", dest="false_claims", action="append", default=[], metavar="CLAIM",
                        help="a claim it made that is untrue")


def main(argv: list[str] | None = None) -> int:
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.panel.offload",
                                     description="Real work models did for you, and your verdicts on it.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="each model's offloads, verdicts and last task")
    adding = commands.add_parser("add", help="record a piece of real work a model did")
    adding.add_argument("model")
    adding.add_argument("task")
    _verdict_options(adding, required=False)
    judging = commands.add_parser("verdict", help="judge an answer by the call id printed under it")
    judging.add_argument("call")
    _verdict_options(judging, required=True)
    args = parser.parse_args(argv)

    if args.command == "list":
        print(table(summary()))
    elif args.command == "add":
        entry = add(args.model, args.task, args.useful, args.note, real=args.real, false=args.false_claims)
        print(f"recorded: {entry.model} — {entry.task}")
    else:
        try:
            entry = verdict(args.call, args.useful, args.note, args.real, args.false_claims)
        except (KeyError, TooLarge) as exc:
            console.say(exc.args[0])
            return 1
        print(f"recorded: {entry.model} — {entry.task} — useful={entry.useful}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
