"""Paced background runs (suite-cli-mcp.md §2.8, PC-1..4): work through a slice of the suite slowly.

    python -m benchwarmers.suite.pace [--prefix seeded-hard-] [--gap 120] [--rest 1800] [--timeout 420] [--dry-run]

Asks every available model every non-draft task whose directory starts with `--prefix`, one call at
a time with `--gap` seconds between calls, so free tiers and shared keys are not flooded. Each call
is `suite/run.py --task T --model M` as a child, so the answer is saved where every run saves it.
A model whose answer is a capacity failure (rate limit, quota, overload) rests `--rest` seconds and
its pair goes to the back of the queue. Stop it at any time (Ctrl-C); run it again and the pairs
already answered are skipped.

Decisions beyond the reference (§13.8) and where the contract is silent:
- A rest is decided by `failure_class(saved answer) == "capacity"` (a 429 phrased "too many requests"
  rests too), with the task's `min_answer_chars`.
- A child that exits non-zero (crashed, or refused its arguments) is logged as `failed`, not done, and
  its pair is not asked again in this run (it stays unanswered, so the next run offers it again).
- Pairs are skipped when the saved answer scores as `answered` today (PC-2; a saved timeout or
  refusal is asked again: this runner exists to fill the slice).
- Roster: `available_models()` (registered, served now, not failing every perf reading) minus aliases
  named by a `retiring` alert (`alias` or `aliases`) minus ad hoc models; none → says so, exit 0.
- The log's date is the day each line is written (a run across midnight continues in the next day's
  file). Ctrl-C logs `stopped (<n> left)` and exits 130; the pair being asked counts as left (its child is
  stopped before it saves anything), every answer saved before stays.
"""

import argparse
import datetime
import os
import signal
import subprocess
import sys
import time

from ..core import fileio, paths
from ..models import alerts, scoring
from . import tasks as suite_tasks

ETA_PER_CALL = 60  # PC-3: the ETA counts each call as a minute on top of the gap
STOP_WAIT = 10  # seconds a stopped child may take to end before it is killed


def log(message, dry=False):
    """PC-3: `HH:MM:SS <message>` to `runs/pace-<date>.log` (not in a dry run), and printed."""
    now = datetime.datetime.now()
    line = f"{now:%H:%M:%S} {message}"
    print(line, flush=True)
    if not dry:
        with open(paths.file("runs", f"pace-{now:%Y-%m-%d}.log"), "a", encoding="utf-8",
                  opener=fileio.opener) as f:
            f.write(line + "\n")


def retiring():
    """Aliases a `retiring` alert names."""
    out = set()
    for alert in alerts.active().values():
        if alert.get("kind") == "retiring":
            out.update(a for a in [alert.get("alias"), *(alert.get("aliases") or [])] if isinstance(a, str))
    return out


def roster():
    """PC-1."""
    held = retiring() | set(suite_tasks.ad_hoc_models())
    return [m for m in suite_tasks.available_models() if m not in held]


def queue(prefix, models):
    """PC-2: (task, model), task by task across the models, without the pairs already answered."""
    chosen = [t for t in suite_tasks.load(warn=print) if not t.get("draft") and t["dir"].name.startswith(prefix)]
    return [(t, m) for t in chosen for m in models if not suite_tasks.answered(t, m)]


def ask(task, alias, timeout):
    """One child run; its exit code. Stopped (Ctrl-C), the child is stopped as Ctrl-C stops it and waited for,
    so no run is left asking a model behind a runner that has gone."""
    command = paths.module_command("suite.run", "--task", task["id"], "--model", alias, "--timeout", timeout, "--gap", 0,
                                  python=paths.child_python())
    child = subprocess.Popen(command, cwd=paths.CODE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return child.wait()
    except KeyboardInterrupt:
        if os.name == "posix":
            child.send_signal(signal.SIGINT)
        else:
            child.terminate()
        try:
            child.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        raise


def rate_limited(task, alias):
    text = suite_tasks.saved(task, alias)
    return text is not None and scoring.failure_class(text, task.get("min_answer_chars", scoring.DEFAULT_MIN)) == "capacity"


def work(pending, args):
    """PC-4: the loop, until the queue is empty."""
    resting = {}  # alias -> clock time its rest ends
    first = True
    while pending:
        now = time.monotonic()
        ready = [i for i, (_, m) in enumerate(pending) if resting.get(m, 0) <= now]
        if not ready:
            wake = min(resting[m] for _, m in pending)
            time.sleep(max(1.0, wake - now))
            continue
        if not first and args.gap > 0:
            time.sleep(args.gap)
        first = False
        task, alias = pending.pop(ready[0])
        try:
            code = ask(task, alias, args.timeout)
        except KeyboardInterrupt:  # the pair being asked is still unanswered: it counts as left
            pending.insert(0, (task, alias))
            raise
        if code != 0:
            log(f"failed {task['id']} {alias} (suite/run.py exited {code}); {len(pending)} left")
        elif rate_limited(task, alias):
            suite_tasks.output_path(task, alias).unlink(missing_ok=True)
            resting[alias] = time.monotonic() + args.rest
            pending.append((task, alias))
            log(f"rate-limited {task['id']} {alias}: resting {args.rest:g}s, requeued; {len(pending)} left")
        else:
            kind = scoring.score(task, suite_tasks.saved(task, alias) or "")["kind"]
            log(f"done {task['id']} {alias} ({kind}); {len(pending)} left")
    log("queue empty")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.suite.pace", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", default="seeded-hard-", help="task directories starting with this (seeded-hard-)")
    parser.add_argument("--gap", type=float, default=120, help="seconds between calls (120)")
    parser.add_argument("--rest", type=float, default=1800, help="seconds a rate-limited model rests (1800)")
    parser.add_argument("--timeout", type=float, default=420, help="seconds per call (420)")
    parser.add_argument("--dry-run", action="store_true", help="print the queue, ask nothing, write no log")
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    models = roster()
    if not models:
        print("no model is available (onboard one with `python -m benchwarmers.scripts.onboard SERVED_NAME`)")
        return 0
    pending = queue(args.prefix, models)
    eta = len(pending) * (args.gap + ETA_PER_CALL) / 3600
    log(f"queue {len(pending)} call(s), {len(models)} model(s), gap {args.gap:g}s, about {eta:.1f} h; "
        f"roster: {', '.join(models)}", dry=args.dry_run)
    if args.dry_run:
        for task, alias in pending:
            print(f"  {task['id']}  {alias}")
        return 0
    try:
        work(pending, args)
    except KeyboardInterrupt:
        log(f"stopped ({len(pending)} left)")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
