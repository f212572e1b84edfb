"""The in-process scheduler (suite-cli-mcp.md §4, SCH-1..9): the bench's recurring jobs, run by the dashboard.

    python -m benchwarmers.admin.scheduler            mode and one line per job: on/off, name, next due, command
    python -m benchwarmers.admin.scheduler --run      run the loop in the foreground (Ctrl-C stops it)

`serve.py` starts `start()` once; the loop ticks every `TICK_S` seconds. Each tick reads
`config/scheduler.json` (the dashboard's Settings save it, metrics/admin/jobs.py), so a mode change
applies on the next tick without a restart. The jobs, their times and commands are
`admin.jobs.JOBS`, the one table the dashboard shows too.

- `off`: nothing runs and nothing is recorded (a fresh install spends no calls).
- `log-only`: at each due time, a `would run` line in `runs/scheduler.log`.
- `run`: each job as a child process (cwd CODE, SU-34's interpreter, 2 h cap), at most one at a time.
Missed slots (the machine was off) become one catch-up run, looking back at most 7 days.

Decisions beyond the reference (§13.20):
- Times are aware local times: a slot is a wall-clock time on a date, given that date's UTC offset,
  so a DST change neither skips nor doubles a slot. The state file keeps ISO times with their
  offset; a naive time written by an older version is read as local.
- `tick()` is pure: `now`, the state, the mode, the switches and the running jobs go in; log lines
  and job starts go out through the callbacks it is given (OFF-8), so tests need no clock.
- The very first tick records the time and runs nothing (SCH-8): a bench switched to `run` does
  not fire every job at once for slots that passed before it was ever on. After that, a gap
  (the dashboard was stopped) is caught up once per job.
- `log-only` advances the state like `run` (SCH-6: the state holds every enabled job after either);
  switching to `run` therefore starts with the next due time, not with what log-only announced.
"""

import argparse
import datetime
import importlib.util
import os
import subprocess
import sys
import threading
import time

from ..core import fileio, paths
from . import jobs

TICK_S = 30
RUN_LIMIT_S = 7200
CATCH_UP_DAYS = 7
LATE_S = 300
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def slots(job):
    """`[(weekday or None, "HH:MM")]` of a job; weekday 0 is Monday."""
    weekday, hours = jobs.JOBS[job][:2]
    return [(weekday, f"{hour:02d}:00") for hour in hours]


def command(job):
    """The job's argv after the interpreter: `-m benchwarmers.<module> args` (paths.module_command)."""
    return paths.module_command(*jobs.JOBS[job][3].split())[1:]


def local(day, hhmm):
    """The aware local time of `hhmm` on `day`, with that date's own UTC offset."""
    hour, minute = map(int, hhmm.split(":"))
    return datetime.datetime.combine(day, datetime.time(hour, minute)).astimezone()


def due_between(job_slots, start, end):
    """SCH-2: every slot time in (start, end], oldest first."""
    found = []
    day = start.date() - datetime.timedelta(days=1)
    while day <= end.date():
        for weekday, hhmm in job_slots:
            if weekday is None or day.weekday() == weekday:
                at = local(day, hhmm)
                if start < at <= end:
                    found.append(at)
        day += datetime.timedelta(days=1)
    return sorted(found)


def next_due(job_slots, after):
    """SCH-2: the first slot in (after, after + 8 days]."""
    found = due_between(job_slots, after, after + datetime.timedelta(days=8))
    return found[0] if found else None


def parse_time(text):
    """A state entry as an aware time; naive (an older file) is local; None when unreadable."""
    try:
        at = datetime.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return at.astimezone() if at.tzinfo is None else at


def hhmm(at):
    return at.strftime("%H:%M")


def tick(now, state, mode, enabled, running, start_job, log):
    """SCH-3 for one tick: `state` ({job: ISO time}) is updated in place; lines go to `log(text)`,
    runs to `start_job(job, due)`. `running` is the set of jobs still going."""
    if mode == "off":
        return
    now = now.replace(microsecond=0)
    for job in jobs.JOBS:
        if not enabled.get(job, True):
            continue
        last = parse_time(state.get(job)) or now
        due = due_between(job_slots=slots(job), start=max(last, now - datetime.timedelta(days=CATCH_UP_DAYS)),
                          end=now)
        if not due:
            state.setdefault(job, now.isoformat())
            continue
        latest = due[-1]
        state[job] = latest.isoformat()
        late = " (catching up a run missed while stopped)" if (now - latest).total_seconds() > LATE_S else ""
        if mode == "log-only":
            log(f"would run {job} (due {DAYS[latest.weekday()]} {hhmm(latest)}){late}: {jobs.JOBS[job][3]}")
        elif job in running:
            log(f"skipped {job} (due {hhmm(latest)}): the previous run is still going")
        else:
            log(f"starting {job} (due {hhmm(latest)}){late}")
            start_job(job, hhmm(latest))


class Scheduler:
    """The loop: one per data folder (SCH-7), its log and state under `runs/`."""

    def __init__(self, tick_s=TICK_S, clock=None):
        self.tick_s = tick_s
        self.clock = clock or (lambda: datetime.datetime.now().astimezone())
        self.stopping = threading.Event()
        self.running = {}
        self.guard = threading.Lock()
        self.lock_fd = None

    def log(self, text):
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        fileio.append_bytes(paths.file("runs", "scheduler.log"), f"{stamp}  {text}\n".encode("utf-8"))

    def take_lock(self):
        """SCH-7: an exclusive, non-blocking OS lock on runs/scheduler.lock (not the state file's lock)."""
        where = paths.file("runs", "scheduler.lock")
        fd = os.open(where, os.O_RDWR | os.O_CREAT, fileio.FILE_MODE)
        if fileio._try_lock(fd):
            self.lock_fd = fd
            return True
        os.close(fd)
        return False

    def release(self):
        if self.lock_fd is not None:
            fileio._unlock(self.lock_fd)
            os.close(self.lock_fd)
            self.lock_fd = None

    def run_job(self, job, due):
        """SCH-4: the job as a child, cwd CODE, output captured, 2 h cap. A job whose module this install lacks
        is logged as skipped, never run to a failed exit."""
        started = time.monotonic()
        module = command(job)[1]
        if importlib.util.find_spec(module) is None:
            self.log(f"skipped {job} (due {due}): {module} is not part of this install")
            with self.guard:
                self.running.pop(job, None)
            return
        try:
            done = subprocess.run([paths.child_python(), *command(job)], cwd=paths.CODE, capture_output=True,
                                  timeout=RUN_LIMIT_S, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
            self.log(f"ran {job} (due {due}): exit {done.returncode} in {time.monotonic() - started:.0f}s")
        except subprocess.TimeoutExpired:
            self.log(f"ran {job} (due {due}): stopped at the 2 h limit")
        except OSError as exc:
            self.log(f"ran {job} (due {due}): could not start ({exc})")
        finally:
            with self.guard:
                self.running.pop(job, None)

    def start_job(self, job, due):
        thread = threading.Thread(target=self.run_job, args=(job, due), name=f"job-{job}", daemon=True)
        with self.guard:
            self.running[job] = thread
        thread.start()

    def once(self):
        """One tick against the saved mode, switches and state (state written under its own lock, SCH-6)."""
        mode, enabled = jobs.state()
        if mode == "off":
            return
        with self.guard:
            running = set(self.running)
        now = self.clock()
        fileio.update(paths.file("runs", "scheduler-state.json"),
                      lambda state: tick(now, state, mode, enabled, running, self.start_job, self.log))

    def loop(self):
        """Tick until stopped; returns at once (silently) when another process holds the lock."""
        if not self.take_lock():
            return False
        try:
            mode, enabled = jobs.state()
            self.log(f"scheduler started, mode {mode}, jobs {', '.join(j for j, on in enabled.items() if on)}")
            while not self.stopping.is_set():
                try:
                    self.once()
                except Exception as exc:  # SCH-5: a failing tick is logged; the loop goes on
                    self.log(f"tick failed: {type(exc).__name__}: {exc}")
                self.stopping.wait(self.tick_s)
        finally:
            self.release()
        return True

    def stop(self):
        self.stopping.set()


def start(tick_s=TICK_S):
    """Start the loop on a daemon thread (serve.py calls this once); the Scheduler, to stop it."""
    scheduler = Scheduler(tick_s)
    threading.Thread(target=scheduler.loop, name="scheduler", daemon=True).start()
    return scheduler


def describe(now=None):
    """SCH-9: the mode line and one line per job."""
    now = now or datetime.datetime.now().astimezone()
    mode, enabled = jobs.state()
    lines = [f"mode: {mode}  (config/scheduler.json)"]
    for job in jobs.JOBS:
        due = next_due(slots(job), now)
        lines.append(f"  {'on ' if enabled[job] else 'off'}  {job:<13} {due.strftime('%a %d %b %H:%M')}  "
                     f"{jobs.JOBS[job][3]}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.admin.scheduler", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="run the loop in the foreground (Ctrl-C stops it)")
    parser.add_argument("--tick", type=float, default=TICK_S, help="seconds between ticks (default 30)")
    args = parser.parse_args(argv)
    if not args.run:
        print(describe())
        return 0
    scheduler = Scheduler(args.tick)
    try:
        scheduler.loop()
    except KeyboardInterrupt:
        scheduler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
