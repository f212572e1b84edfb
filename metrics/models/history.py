"""The bench's recorded evidence as the explorer router reads it: perf history and suite recall.

The perf runner writes `perf/history.csv` and the suite its tasks' saved answers; this module
only reads them, and reads little on the router's hot path:

- Perf history (RTR-1, RTR-3) is parsed again only when `perf/history.csv`'s (or
  alias-history.json's) stat changes. IMP-17: the latest row per (alias, prompt) wins.
- Suite recall (RTR-9): the tasks folder is walked (stat only) at most every
  `SUITE_RECHECK` seconds; only answers whose file or task changed are scored
  again. Why a time window rather than a walk per call: a walk stats every
  saved answer (thousands of files), and answers change when a suite run saves
  them, minutes apart. So a new answer counts within `SUITE_RECHECK` seconds.

It lives in `metrics`, with the scorer it uses (`models.scoring`), because the router needs it and
the suite is built on top of `metrics`: `suite/` imports `metrics`, never the other way round.
"""

import csv
import os
import threading
import time

from ..core import fileio, paths
from . import aliases, scoring

SUITE_RECHECK = 10.0
KEPT_OUT = frozenset({"claim", "seeded", "rebench"})  # a guess scores half on these (SU-20)

FILES = {"perf": ("perf", "history.csv"), "renames": ("config", "alias-history.json"), "tasks": ("suite", "tasks")}


# -- perf history (RTR-1, RTR-3, IMP-17) ------------------------------------------------------

_perf = {}  # data folder -> ((history stat, alias-history stat), {alias: {prompt: answered}}, failing, too_big)


def perf(folder):
    """`(stamps, latest, failing, too_big)`: the latest row per (alias, prompt) of perf/history.csv
    (IMP-17) as `{alias: {prompt: answered}}`, aliases renamed (ALI-1), and from it the aliases whose
    latest rows all failed and those whose latest `large` row failed. The same tuple comes back
    while the files are unchanged, so a caller may cache on its identity.

    Rows without a model or a whole-number `answered` are skipped.
    """
    where = paths.named_files(folder, FILES)
    key = (fileio.stamp(where["perf"]), fileio.stamp(where["renames"]))
    cached = _perf.get(folder)
    if cached is not None and cached[0] == key:
        return cached
    latest = {}
    if key[0] is not None:
        current = aliases.resolver()
        try:
            with open(where["perf"], encoding="utf-8", newline="") as f:
                for row in csv.DictReader(f):
                    model = (row.get("model") or "").strip()
                    try:
                        answered = int(str(row.get("answered") or "").strip())
                    except ValueError:
                        continue
                    if model:
                        latest.setdefault(aliases.follow(current, model), {})[(row.get("prompt") or "").strip()] = answered
        except OSError:
            latest = {}
    failing = frozenset(a for a, rows in latest.items() if not any(n > 0 for n in rows.values()))
    too_big = frozenset(a for a, rows in latest.items() if rows.get("large") == 0)
    cached = _perf[folder] = (key, latest, failing, too_big)
    return cached


# -- suite recall (RTR-9) ---------------------------------------------------------------------

_suite = {}  # data folder -> {"checked", "files": {path: (stamps, (found, of, answered) | None)}, "raw", "totals"}
_suite_lock = threading.Lock()


def _walk(tasks):
    """`[(task.json path, its stat, output path, alias, its stat)]`; stat calls only."""
    found = []
    try:
        folders = sorted((e for e in os.scandir(tasks) if e.is_dir()), key=lambda e: e.name)
    except OSError:
        return found
    for folder in folders:
        spec_path = os.path.join(folder.path, "task.json")
        spec_stat = fileio.stamp(spec_path)
        if spec_stat is None:
            continue
        try:
            outputs = sorted(os.scandir(os.path.join(folder.path, "output")), key=lambda e: e.name)
        except OSError:
            continue
        for out in outputs:
            if not out.name.endswith(".md"):
                continue
            try:
                if not out.is_file():
                    continue
                st = out.stat()
            except OSError:  # removed since the folder was listed
                continue
            found.append((spec_path, spec_stat, out.path, out.name[:-3], (st.st_mtime_ns, st.st_size, st.st_ino)))
    return found


def _score_file(spec_path, out_path):
    """(found, of, answered) for one saved answer, or None when its task does not count."""
    spec = fileio.read_json(spec_path)
    try:
        if spec.get("draft") or spec.get("shape") in KEPT_OUT:
            return None
        with open(out_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        result = scoring.score(spec, text)
    except Exception:  # an unreadable answer or a broken task scores nothing, never breaks routing
        return None
    return (result["found"], result["of"], result["kind"] == "answered")


def _rescan(state, tasks):
    """Walk the tasks; score only answers whose file or task changed since the last walk."""
    files = {}
    raw = {}
    for spec_path, spec_stat, out_path, alias, out_stat in _walk(tasks):
        stamps = (spec_stat, out_stat)
        known = state["files"].get(out_path)
        scored = known[1] if known and known[0] == stamps else _score_file(spec_path, out_path)
        files[out_path] = (stamps, scored)
        if scored and scored[2]:
            sums = raw.setdefault(alias, [0, 0, 0])
            sums[0] += scored[0]
            sums[1] += scored[1]
            sums[2] += 1
    state["files"] = files
    state["raw"] = raw


def suite_recall(folder):
    """`{alias: (found, of, tasks)}` over answered saved outputs of counted tasks, aliases renamed (RTR-9).

    Drafts and `claim`/`seeded`/`rebench` tasks are left out; every answer is scored by today's scorer.
    """
    where = paths.named_files(folder, FILES)
    with _suite_lock:  # concurrent panels wait for one walk rather than each scoring the same answers
        state = _suite.get(folder)
        if state is None:
            state = _suite[folder] = {"checked": None, "files": {}, "raw": {}, "renames": None, "totals": {}}
        now = time.monotonic()
        if state["checked"] is None or now - state["checked"] >= SUITE_RECHECK:
            _rescan(state, where["tasks"])
            state["checked"] = now
            state["renames"] = None
        renames = (fileio.stamp(where["renames"]),)
        if state["renames"] != renames:
            current = aliases.resolver()
            totals = {}
            for alias, (found, of, tasks) in state["raw"].items():
                sums = totals.setdefault(aliases.follow(current, alias), [0, 0, 0])
                sums[0] += found
                sums[1] += of
                sums[2] += tasks
            state["totals"] = {alias: tuple(sums) for alias, sums in totals.items()}
            state["renames"] = renames
        return state["totals"]
