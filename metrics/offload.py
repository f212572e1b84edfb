"""The offload log (OFF-1..7, VRD-1..3): one line per piece of real work a model did, and the verdicts on it.

`<data>/metrics/offloads.jsonl` is append-only. Every panel seat adds an unjudged line the moment it
answers; a verdict adds a later line with the same call id, which supersedes the earlier one.

Routing reads this log on every panel (staleness, merger choice, record, pending), so it is kept
as an in-memory `Index` per log path instead of being re-read: built once, then fed only the
bytes appended since the last look (by this process or any other), and rebuilt when the file is
replaced or cut. Aggregates are kept per raw alias and mapped through renames at query time, so a
rename applies at once without a rebuild. A read costs one stat when nothing changed.

Additions to the reference, all compatible: lines may carry `status` and `seconds` (the seat's
outcome, so pending need not parse notes: IMP-7); verdicts tidy notes and claims (IMP-19) and
check their arguments; appends are serialised in-process (IMP-16); `record()` accepts `core`
as well as `bench/core` (IMP-6).

    python -m metrics.offload list
    python -m metrics.offload add MODEL TASK [--useful|--not-useful] [--note T] [--real C]... [--false C]...
    python -m metrics.offload verdict CALL (--useful|--not-useful) [--note T] [--real C]... [--false C]...

(`python metrics/offload.py ...`, which the gateway's footer prints, works too where the package is
installed, as `pip install -e .` does.)
"""

import argparse
import datetime
import json
import os
import sys
import threading

from metrics import aliases, fileio, paths

ERROR_EXCERPT = 120
UNKNOWN_CALL = "no offload with call id '{}'; the gateway prints them under each answer"
BAD_USEFUL = '"useful" must be true or false'
BAD_CLAIMS = '"real" and "false" must be lists of one-sentence claims'

_append_lock = threading.Lock()
_verdict_lock = threading.Lock()


def log_path():
    return paths.file("metrics", "offloads.jsonl")


def note_for(label, status, seconds, error=""):
    """The seat's note (OFF-N1): `member; ok in 3.2s`, `explorer 2; error in 0.4s: <error excerpt>`."""
    note = f"{label}; {status} in {seconds:.1f}s"
    if error:
        note += f": {error[:ERROR_EXCERPT]}"
    return note


def add(model, task, useful=None, note="", call=None, real=None, false=None, status=None, seconds=None):
    """Append one offload line (OFF-1, OFF-3) and return it.

    Key order is the contract's, then our `status` and `seconds` when given. The line is
    ASCII-escaped JSON written in one O_APPEND write, so readers never see half of it.
    """
    entry = {"date": datetime.date.today().isoformat(), "model": model, "task": task, "useful": useful, "note": note}
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
    data = (json.dumps(entry) + "\n").encode("ascii")
    # append_bytes' flock already keeps lines whole; this lock also covers systems without flock
    with _append_lock:
        fileio.append_bytes(log_path(), data)
    return entry


def _tidy(text):
    return " ".join(text.split())


def _claims(value):
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(claim, str) for claim in value):
        raise ValueError(BAD_CLAIMS)
    return [tidy for tidy in map(_tidy, value) if tidy]


def verdict(call, useful, note="", real=None, false=None, replace=False):
    """Judge the offload with call id `call` (OFF-4); returns the entry now in force.

    Notes and claims are whitespace-collapsed and blank claims dropped (IMP-19). Unless
    `replace`, a blank note or empty claim list keeps the earlier one; with it (the dashboard's
    form) blank clears. The same verdict again writes nothing and returns the target.
    Raises ValueError for a non-boolean `useful` or claims that are not lists of strings,
    KeyError for an unknown call, checked in VRD-1's order.
    """
    if not isinstance(useful, bool):
        raise ValueError(BAD_USEFUL)
    real, false = _claims(real), _claims(false)
    note = _tidy(note) if isinstance(note, str) else ""
    # Two identical verdicts racing in this process must write one line.
    with _verdict_lock:
        target = by_call(call) if isinstance(call, str) else None
        if target is None:
            raise KeyError(UNKNOWN_CALL.format(call if isinstance(call, str) else ""))
        if not replace:
            note = note or target.get("note", "")
            real = real or target.get("real", [])
            false = false or target.get("false", [])
        if (useful, note, real, false) == (
            target.get("useful"), target.get("note", ""), target.get("real", []), target.get("false", [])
        ):
            return target
        return add(target["model"], target.get("task", ""), useful, note, call, real, false,
                   target.get("status"), target.get("seconds"))


def _date(entry):
    date = entry.get("date")
    return date if isinstance(date, str) else ""


def _failed(entry):
    """A seat that errored: its `status` field when the line has one, else its note (VRD-3)."""
    status = entry.get("status")
    if isinstance(status, str):
        return status == "error"
    note = entry.get("note")
    return isinstance(note, str) and "; error in " in note.split(":", 1)[0]


def _collections_in(task):
    """Every X with `(X,` in the task and no comma in X: the collections VRD-2 can match it by."""
    found = set()
    start = task.find("(")
    while start != -1:
        comma = task.find(",", start + 1)
        if comma == -1:
            break
        found.add(task[start + 1:comma])
        start = task.find("(", start + 1)
    return found


def _shape_of(task):
    """The X of a task ending `, X)` (X without `, `), as the panel writes `(bench/<name>, <shape>)`."""
    if not task.endswith(")"):
        return None
    cut = task.rfind(", ")
    return None if cut == -1 else task[cut + 2:-1]


ALL = ("all",)


class _Tally:
    """One raw alias's share of a group of entries: counts, positions and latest (date, position)."""

    __slots__ = ("useful", "judged", "positions", "last", "stale")

    def __init__(self):
        self.useful = self.judged = 0
        self.positions = set()
        self.last = None
        self.stale = False  # the latest entry was replaced by an older one: find it again when asked

    def _count(self, entry, sign):
        useful = entry.get("useful")
        if useful is not None:
            self.judged += sign
            self.useful += sign if useful else 0

    def change(self, pos, old, new):
        """The entry at `pos` counted here was `old` and is now `new` (either may be None)."""
        if old is not None:
            self._count(old, -1)
            if new is None:
                self.positions.discard(pos)
        if new is not None:
            self._count(new, 1)
            self.positions.add(pos)
        last = self.last
        if last is not None and last[1] == pos:
            # A verdict usually replaces the latest entry with a later date: still the latest.
            if new is not None and _date(new) >= last[0]:
                self.last = (_date(new), pos)
            else:
                self.last = None
                self.stale = bool(self.positions)
        elif new is not None and not self.stale:
            mark = (_date(new), pos)
            if last is None or mark > last:
                self.last = mark

    def latest(self, slots):
        if self.stale:
            self.last = max((_date(slots[pos]), pos) for pos in self.positions)
            self.stale = False
        return self.last


class Index:
    """What routing needs from one offload log, kept up to date from its appended bytes.

    `slots` holds the entries in OFF-2 order (one per call id, at the first one's position, with
    the latest content; raw aliases). `groups` maps ALL, ("collection", X) and ("shape", X) to
    `{raw alias: _Tally}`; the last two count judged entries only. `bytes_read` counts the bytes
    of whole lines read from the file, `builds` the times the index started from an empty slate.
    A new inode or a shorter file means the log was replaced or cut; OFF-1's log is append-only,
    so an in-place rewrite that keeps both is not looked for.
    """

    def __init__(self, path):
        self.path = str(path)
        self.lock = threading.RLock()
        self.bytes_read = 0
        self.builds = 0
        self._reset()

    def _reset(self):
        self.ident = None
        self.offset = 0
        self.size = -1
        self.slots = []
        self.calls = {}
        self.groups = {}

    def refresh(self):
        """Take in what was appended since the last look; start over when the file was replaced or cut."""
        with self.lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                if self.ident is not None:
                    self._reset()
                return
            ident = (st.st_dev, st.st_ino)
            if ident != self.ident or st.st_size < self.offset:
                self._reset()
                self.ident = ident
                self.builds += 1
            elif st.st_size == self.size:
                return  # unchanged (a torn last line waits for its newline, not re-read on every call)
            self.size = st.st_size
            start = self.offset
            records, end = fileio.read_jsonl_from(self.path, start)
            if end < start:  # cut between the stat and the read: these records are from the top
                self._reset()
                self.ident, self.size, start = ident, st.st_size, 0
                self.builds += 1
            self.bytes_read += end - start
            self.offset = end
            for record in records:
                self._take(record)

    def _places(self, entry):
        raw = entry["model"]
        places = [(ALL, raw)]
        task = entry.get("task")
        if entry.get("useful") is not None and isinstance(task, str):
            places += [(("collection", key), raw) for key in _collections_in(task)]
            shape = _shape_of(task)
            if shape is not None:
                places.append((("shape", shape), raw))
        return places

    def _tally(self, group, raw):
        tallies = self.groups.setdefault(group, {})
        tally = tallies.get(raw)
        if tally is None:
            tally = tallies[raw] = _Tally()
        return tally

    def _take(self, record):
        if not isinstance(record.get("model"), str):
            return  # not an offload line: nothing to attribute it to
        # Every line repeats the same keys, dates and aliases: share them (halves the index's memory).
        record = {sys.intern(key): value for key, value in record.items()}
        record["model"] = sys.intern(record["model"])
        if isinstance(record.get("date"), str):
            record["date"] = sys.intern(record["date"])
        call = record.get("call")
        if not (call and isinstance(call, str)):
            call = None
        pos = self.calls.get(call) if call else None
        if pos is None:
            pos = len(self.slots)
            self.slots.append(record)
            if call:
                self.calls[call] = pos
            for group, raw in self._places(record):
                self._tally(group, raw).change(pos, None, record)
            return
        old = self.slots[pos]
        self.slots[pos] = record
        before, after = set(self._places(old)), set(self._places(record))
        for group, raw in before | after:
            self._tally(group, raw).change(
                pos, old if (group, raw) in before else None, record if (group, raw) in after else None
            )

    def _mapped(self, entry, resolve):
        """A copy for a caller (claim lists too, so no caller can change the index), under today's alias."""
        copy = dict(entry, model=resolve(entry["model"]))
        for key in ("real", "false"):
            if isinstance(copy.get(key), list):
                copy[key] = list(copy[key])
        return copy

    def entries(self):
        resolve = aliases.resolver()
        with self.lock:
            self.refresh()
            return [self._mapped(entry, resolve) for entry in self.slots]

    def by_call(self, call):
        resolve = aliases.resolver()
        with self.lock:
            self.refresh()
            pos = self.calls.get(call) if isinstance(call, str) else None
            return None if pos is None else self._mapped(self.slots[pos], resolve)

    def _merged(self, group, resolve):
        """`{current alias: [offloads, useful, judged, (latest date, position)]}` for a group."""
        merged = {}
        for raw, tally in self.groups.get(group, {}).items():
            if not tally.positions:
                continue
            name = resolve(raw)
            last = tally.latest(self.slots)
            row = merged.get(name)
            if row is None:
                merged[name] = [len(tally.positions), tally.useful, tally.judged, last]
            else:
                row[0] += len(tally.positions)
                row[1] += tally.useful
                row[2] += tally.judged
                row[3] = max(row[3], last)
        return merged

    def _scan(self, positions, resolve, within="", ending="", note_part=""):
        """Judged entries at `positions` whose task holds `within` and ends with `ending` and whose
        note holds `note_part`, merged like `_merged`: for what no group answers by itself."""
        merged = {}
        for pos in positions:
            entry = self.slots[pos]
            useful = entry.get("useful")
            task, note = str(entry.get("task", "")), str(entry.get("note", ""))
            if useful is None or within not in task or not task.endswith(ending) or note_part not in note:
                continue
            row = merged.setdefault(resolve(entry["model"]), [0, 0, 0, ("", -1)])
            row[0] += 1
            row[1] += 1 if useful else 0
            row[2] += 1
            row[3] = max(row[3], (_date(entry), pos))
        return merged

    def summary(self):
        resolve = aliases.resolver()
        with self.lock:
            self.refresh()
            return {
                name: {"offloads": offloads, "useful": useful, "judged": judged,
                       "last_task": self.slots[last[1]].get("task", ""), "last_date": last[0]}
                for name, (offloads, useful, judged, last) in self._merged(ALL, resolve).items()
            }

    def last_used(self):
        resolve = aliases.resolver()
        with self.lock:
            self.refresh()
            return {name: row[3][0] for name, row in self._merged(ALL, resolve).items()}

    def shape_record(self, shape):
        resolve = aliases.resolver()
        with self.lock:
            self.refresh()
            if ", " in shape:  # no shape name holds one, so no group: match it literally
                merged = self._scan(range(len(self.slots)), resolve, ending=f", {shape})")
            else:
                merged = self._merged(("shape", shape), resolve)
            return {name: {"useful": row[1], "judged": row[2]} for name, row in merged.items()}

    def record(self, collection, task=""):
        resolve = aliases.resolver()
        with self.lock:
            self.refresh()
            group = ("collection", collection)
            if "," in collection:  # no collection name holds one, so no group: match it literally
                merged = self._scan(range(len(self.slots)), resolve, within=f"({collection},", note_part=task)
            elif task:  # a note filter: only this collection's judged entries are read
                positions = sorted(pos for tally in self.groups.get(group, {}).values() for pos in tally.positions)
                merged = self._scan(positions, resolve, note_part=task)
            else:
                merged = self._merged(group, resolve)
            return {
                name: {"useful": useful, "notUseful": judged - useful, "judged": judged, "lastAt": last[0]}
                for name, (_, useful, judged, last) in merged.items()
            }

    def pending(self, calls):
        with self.lock:
            self.refresh()
            out = []
            for call in calls:
                pos = self.calls.get(call) if isinstance(call, str) else None
                if pos is None:
                    continue
                entry = self.slots[pos]
                if entry.get("useful") is None and not _failed(entry):
                    out.append(call)
            return out


_indexes = {}
_indexes_lock = threading.Lock()


def index(path=None):
    """The live `Index` of the log at `path` (default: this data folder's), one per path per process."""
    key = str(path or log_path())
    found = _indexes.get(key)
    if found is None:
        with _indexes_lock:
            found = _indexes.setdefault(key, Index(key))
    return found


def entries():
    """Every offload, oldest first, one per call id (OFF-2); models under their current alias."""
    return index().entries()


def by_call(call):
    """The latest entry with call id `call`, or None."""
    return index().by_call(call)


def summary():
    """`{alias: {offloads, useful, judged, last_task, last_date}}` (OFF-5)."""
    return index().summary()


def last_used():
    """`{alias: latest offload date}`, judged or not: the router's staleness (OFF-7, RTR-2)."""
    return index().last_used()


def shape_record(shape):
    """`{alias: {useful, judged}}` over judged entries whose task ends `, <shape>)` (the merger's record)."""
    return index().shape_record(shape)


def record(collection, task=""):
    """VRD-2's `aliases`: judged entries whose task holds `(<collection>,` and whose note holds `task`.

    `core` reads as `bench/core` (IMP-6); an unknown collection gives `{}`.
    """
    if collection and not collection.startswith("bench/"):
        collection = f"bench/{collection}"
    return index().record(collection, task)


def pending(calls):
    """VRD-3: the given ids (order and duplicates kept) the log knows, unjudged, and not errored seats."""
    return index().pending(calls)


NONE_RECORDED = (
    "No offloads recorded yet. Only real work counts: a seat the gateway asked,\n"
    "or `python -m metrics.offload add MODEL TASK` after a model's answer did real work for you."
)


def table(rows):
    """OFF-6's `list`: `model used helped last`, most offloads first; helped `u/j` or `—`; task cut to 44."""
    if not rows:
        return NONE_RECORDED
    ordered = sorted(rows.items(), key=lambda item: (-item[1]["offloads"], item[0]))
    lines = [("model", "used", "helped", "last")]
    for name, row in ordered:
        helped = f"{row['useful']}/{row['judged']}" if row["judged"] else "—"
        lines.append((name, str(row["offloads"]), helped, f"{row['last_date']}  {row['last_task'][:44]}"))
    width = [max(len(line[i]) for line in lines) for i in range(3)]
    return "\n".join(
        f"{name:<{width[0]}}  {used:>{width[1]}}  {helped:>{width[2]}}  {last}" for name, used, helped, last in lines
    )


def _verdict_options(parser, required):
    pick = parser.add_mutually_exclusive_group(required=required)
    pick.add_argument("--useful", dest="useful", action="store_const", const=True, help="it helped")
    pick.add_argument("--not-useful", dest="useful", action="store_const", const=False, help="it did not help")
    parser.add_argument("--note", default="", help="what it got right or wrong, checked against the code")
    parser.add_argument("--real", action="append", default=[], metavar="CLAIM", help="a finding it got right")
    parser.add_argument("--false", dest="false_claims", action="append", default=[], metavar="CLAIM",
                        help="a claim it made that is untrue")


def main(argv=None):
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    parser = argparse.ArgumentParser(prog="python -m metrics.offload",
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
        print(f"recorded: {entry['model']} — {entry['task']}")
    else:
        try:
            entry = verdict(args.call, args.useful, args.note, args.real, args.false_claims)
        except KeyError as exc:
            print(exc.args[0], file=sys.stderr)
            return 1
        print(f"recorded: {entry['model']} — {entry['task']} — useful={entry['useful']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
