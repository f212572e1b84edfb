"""The scheduler's settings as the dashboard shows and saves them (dashboard.md ST-8, ST-9; suite-cli-mcp.md §4).

`config/scheduler.json` holds `{"mode": "off"|"log-only"|"run", "jobs": {name: false}}`: only switched-off
jobs are written, so a job added later starts on. The job table here (names, times, what each does, the
command, §4) is the one place they are written down: `metrics/admin/scheduler.py` runs them from it.

Decision: `catalog` runs `scripts.refresh_catalog` (the public-feed refresh, CAT-6..11,
metrics/models/catalogrefresh.py), not §4's `metrics/models/catalog.py`, whose module here only reads the catalog: run,
it would exit 0 having refreshed nothing. A job whose program is not part of the install is logged as
skipped.
"""

import datetime

from ..core import changes, fileio, paths
from ..core.errors import Invalid

MODES = {"off": "Off", "log-only": "Log only", "run": "Run"}
# name: (weekday or None for daily, hours, what it does, what it runs: a module of the package and its arguments)
JOBS = {
    "availability": (None, (5,), "the 4-call probe of every model; failures start the retirement countdown",
                     "perf.run -n 1 --tiny-only --timeout 90 --client builtin"),
    "catalog": (None, (6,), "refreshes context windows, prices and limits from the public catalogs",
                "scripts.refresh_catalog"),
    "suite-free": (None, (6,), "the internal suite on one free model", "suite.run --next-free"),
    "deprecations": (None, (8,), "notices models going away, retires what is clearly gone, raises alerts",
                     "scripts.check_deprecations --quiet"),
    "perf": (0, (7,), "the full performance probe (Mondays)", "perf.run -n 3 --timeout 90 --client builtin"),
    "capabilities": (6, (7,), "probes tools and reasoning (Sundays)", "admin.probe_caps --gap 30"),
    "suite": (None, (3, 9, 15, 21), "the internal suite on the paid model that needs it most", "suite.run --next"),
}


def path():
    return paths.file("config", "scheduler.json")


def state():
    """`(mode, {job: on})` as saved; a missing or odd file is `off` with every job on."""
    data = fileio.read_json(path())
    mode = data.get("mode") if data.get("mode") in MODES else "off"
    off = data.get("jobs") if isinstance(data.get("jobs"), dict) else {}
    return mode, {job: off.get(job) is not False for job in JOBS}


def next_slot(job, now):
    """The next due time of `job` after `now` (naive local)."""
    weekday, hours, _, _ = JOBS[job]
    for days in range(8):
        day = now.date() + datetime.timedelta(days=days)
        if weekday is not None and day.weekday() != weekday:
            continue
        for hour in hours:
            slot = datetime.datetime.combine(day, datetime.time(hour))
            if slot > now:
                return slot
    raise ValueError(f"no slot for {job}")


def table(now=None):
    """The card's rows: name, on, counted up to, next (`Mon 05 Jan 07:00`), what it does, what it runs."""
    now = now or datetime.datetime.now()
    mode, on = state()
    last = fileio.read_json(paths.file("runs", "scheduler-state.json"))
    rows = [{"name": job, "on": on[job], "last": str(last.get(job) or "")[:16].replace("T", " "),
             "next": next_slot(job, now).strftime("%a %d %b %H:%M"), "what": what, "runs": runs}
            for job, (_, _, what, runs) in JOBS.items()]
    return {"mode": mode, "modes": MODES, "jobs": rows}


def save(body, who):
    """ST-9: `POST /api/scheduler {mode, jobs}`; only the jobs sent as false are written."""
    mode = body.get("mode")
    sent = body.get("jobs") if isinstance(body.get("jobs"), dict) else {}
    errors = [] if isinstance(mode, str) and mode in MODES else ["mode: one of off, log-only, run"]
    unknown = sorted(set(sent) - set(JOBS))
    if unknown:
        errors.append("no job called " + ", ".join(unknown))
    if errors:  # RESP-1: every error at once
        raise Invalid(*errors)
    old_mode, old_on = state()
    off = {job: False for job, value in sent.items() if value is False}
    old = {"mode": old_mode, "jobs": {j: False for j, v in old_on.items() if not v}}
    new = {"mode": mode, "jobs": off}
    if old != new:  # LOG-4: a change that changes nothing is not logged
        fileio.update(path(), lambda data: data.update(mode=mode, jobs=off))
        changes.log(who, "", "scheduler", old, new)
    return {"ok": True, "errors": []}
