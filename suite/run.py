"""Run the review suite (suite-cli-mcp.md §2.5, SU-22..34): ask models the tasks, save and score the answers.

    python -m benchwarmers.suite.run [--task ID] [--model ALIAS]... [--timeout 420] [--repeat 1]
                        [--next | --next-free] [--dry-run] [--gap 2]

Every answer is saved as it arrives to `DATA/suite/tasks/<task>/output/<alias>.md` (failures
included), so Ctrl-C keeps everything asked so far; the scores are not stored (SU-21): the
summary table and the report `DATA/runs/suite-<date>.md` are re-scorings of the saved text.

Decisions where the contract is silent:
- A progress line before each call, `   (<done>/<total> done, <elapsed>) asking <alias>`, says where
  a long run is (no square brackets: onboarding's log is tailed for `[n/5]` step markers); the summary table at the end has one row per model (answered, found/of,
  inventions, non-answers), then `written: <report>`.
- Ctrl-C stops at once: the answers saved so far stay, the report gets the rows done so far,
  the run says how many were saved, exit 130.
- `--gap` (default 2 s, SU-28's courtesy pause) is a flag so a test or a local model need not wait;
  the pause comes after a model, before the next model is asked, and between repeats; one model
  answering its tasks in a row (onboarding, `--next`) is not paused, nor is the last call.
- An unknown `--model` is refused before any call (exit 1), as perf/run.py does.
- Improvement 2: the `llm` binary is resolved only for models whose backend is `llm`.
- Improvement 3: the retry test uses the task's `min_answer_chars`, so a correct short answer is
  not asked again.
"""

import argparse
import datetime
import sys
import time

from ..core import console, fileio, paths
from ..models import learn, registry, scoring
from ..calling import client, ledger, llm_backend
from . import tasks as suite_tasks

ATTEMPTS = 3
RETRY_WAIT = 5
GAP = 2.0
PREVIEW = 600


def ask_once(alias, prompt, timeout):
    """One call through the alias's backend: the text `outcome()` classifies (SU-8)."""
    if client.backend(alias) == "builtin":
        return client.output(client.chat(alias, prompt, timeout=timeout, purpose="benchmark"), timeout)
    started = time.time()
    text = llm_backend.run_cli(alias, prompt, timeout)
    kind = scoring.outcome(text, 1)
    ledger.write(ledger.line(started, alias, "", registry.endpoint_of(alias) or "", registry.names().get(alias, ""),
                             "ok" if kind is None else kind[0], 1, {}, round(time.time() - started, 1), "benchmark"))
    return text


def ask(alias, prompt, timeout, min_length, sleep=time.sleep):
    """SU-28: up to 3 attempts, retrying only an `error` outcome; `(text, seconds, attempts)`."""
    started = time.monotonic()
    for attempt in range(1, ATTEMPTS + 1):
        text = ask_once(alias, prompt, timeout)
        found = scoring.outcome(text, min_length)
        if found is None or found[0] != "error" or attempt == ATTEMPTS:
            return text, time.monotonic() - started, attempt
        sleep(RETRY_WAIT * attempt)
    raise AssertionError("unreachable")


def count(alias, calls):
    """SU-33: the calls counted as measurement, not work, per model (COST-2); never fatal."""
    try:
        ledger.count_benchmark(alias, calls)
    except Exception as exc:
        console.say(f"   (could not count the benchmark calls: {exc})")


def learn_from(alias, text):
    """SU-33: a blocked answer teaches the learning module (never fatal)."""
    try:
        learn.record(alias, text, "suite")
    except Exception as exc:
        console.say(f"   (could not learn from the failure: {exc})")


def elapsed(seconds):
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


class Run:
    """One run's rows, its progress and its console lines (SU-29, SU-32)."""

    def __init__(self, total, timeout, repeat, gap):
        self.total, self.timeout, self.repeat, self.gap = total, timeout, repeat, gap
        self.done = 0
        self.rows = []
        self.started = time.monotonic()
        self.last = None  # the model asked last

    def pause(self, alias, repeat):
        """SU-28's courtesy gap: after a model, before another one is asked, and between repeats."""
        if self.last is not None and (self.last != alias or repeat) and self.gap > 0:
            time.sleep(self.gap)
        self.last = alias

    def take(self, task, alias, prompt, repeat):
        self.pause(alias, repeat)
        print(f"   ({self.done}/{self.total} done, {elapsed(time.monotonic() - self.started)}) asking {alias}",
              flush=True)
        min_length = task.get("min_answer_chars", scoring.DEFAULT_MIN)
        text, seconds, attempts = ask(alias, prompt, self.timeout, min_length)
        count(alias, attempts)
        return text, seconds, attempts, scoring.score(task, text)

    def one(self, task, alias, prompt):
        """Ask `alias` the task `repeat` times; the first take is saved (SU-30); one row (SU-32)."""
        takes = []
        for i in range(self.repeat):
            text, seconds, attempts, result = self.take(task, alias, prompt, i > 0)
            if i == 0:
                suite_tasks.save(task, alias, text)
                if result["kind"] != "answered":
                    learn_from(alias, text)
            takes.append((seconds, attempts, result))
        seconds, attempts, result = takes[0]
        row = {"task": task["id"], "model": alias, "seconds": round(seconds, 1), "attempts": attempts, **result}
        if self.repeat > 1:
            founds = [r["found"] for _, _, r in takes if r["kind"] == "answered"]
            row.update(takes=len(takes), found_min=min(founds, default=0), found_max=max(founds, default=0),
                       spread=max(founds) - min(founds) if len(founds) >= 2 else 0)
        self.rows.append(row)
        self.done += 1
        print(line(row), flush=True)


def line(row):
    """SU-29's per-model line."""
    tries = f" x{row['attempts']}" if row["attempts"] > 1 else ""
    if "takes" in row:
        tries += f"  [{row['found_min']}-{row['found_max']} over takes]"
    if row["kind"] != "answered":
        detail = row["blocked"].split(": ", 1)[-1]
        return f"   {row['model']:<24} {row['kind'].upper():<8} {row['seconds']:6.1f}s{tries}  ({detail})"
    invented = f"  INVENTED {', '.join(row['invented'])}" if row["invented"] else ""
    return f"   {row['model']:<24} {row['found']}/{row['of']}  {row['seconds']:6.1f}s{tries}{invented}"


def report(rows, today=None):
    """SU-31: append this run to `runs/suite-<date>.md`; the path."""
    today = today or datetime.date.today().isoformat()
    where = paths.file("runs", f"suite-{today}.md")
    out = [f"## Suite run {today}", "", "| Task | Model | Found | Invented | Seconds |", "|---|---|---|---|---|"]
    for r in rows:
        found = f"{r['found']}/{r['of']}" if r["kind"] == "answered" else r["kind"]
        seconds = f"{r['seconds']}" + (f" (x{r['attempts']})" if r["attempts"] > 1 else "")
        out.append(f"| {r['task']} | `{r['model']}` | {found} | {', '.join(r['invented']) or '—'} | {seconds} |")
    blocked = [r for r in rows if r["kind"] != "answered"]
    if blocked:
        out += ["", "Non-answers (errors were already retried; a timeout is not clean evidence):"]
        out += [f"- {r['task']} / `{r['model']}`: {r['blocked']}" for r in blocked]
    missed = [r for r in rows if r["kind"] == "answered" and r["missed"]]
    if missed:
        out += ["", "Missed:"]
        out += [f"- {r['task']} / `{r['model']}`: {', '.join(r['missed'])}" for r in missed]
    with open(where, "a", encoding="utf-8", opener=fileio.opener) as f:
        f.write("\n".join(out) + "\n\n")
    return where


def summary(rows):
    """The table printed at the end: one row per model."""
    print(f"\n{'model':<24} {'answered':>8} {'found':>7} {'invented':>8}  non-answers")
    for alias in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == alias]
        ok = [r for r in mine if r["kind"] == "answered"]
        found = f"{sum(r['found'] for r in ok)}/{sum(r['of'] for r in ok)}"
        blocked = ", ".join(f"{r['task']} {r['kind']}" for r in mine if r["kind"] != "answered") or "-"
        print(f"{alias:<24} {len(ok):>3}/{len(mine):<4} {found:>7} {sum(len(r['invented']) for r in ok):>8}  {blocked}")


def choose(args, loaded):
    """`(tasks, models)` this run asks (SU-2, SU-22..26)."""
    chosen = suite_tasks.select(loaded, args.task)
    if args.next or args.next_free:
        free = args.next_free
        registered = [m for m in suite_tasks.registered_models() if m not in suite_tasks.ad_hoc_models()]
        pool = [m for m in registered if suite_tasks.is_free(m)] if free else \
            [m for m in suite_tasks.available_models() if not suite_tasks.is_free(m)]
        pick = suite_tasks.next_free(chosen, pool) if free else suite_tasks.next_model(chosen, pool)
        if pick is None:
            sys.exit("no :free model is registered" if free else
                     "no paid model is registered (or none is served now): onboard one with "
                     "`python -m benchwarmers.scripts.onboard SERVED_NAME`")
        picked = suite_tasks.pick_tasks(chosen, pick)
        have = sum(1 for t in chosen if suite_tasks.saved_mtime(t, pick) is not None)
        flag = "--next-free" if free else "--next"
        print(f"{flag} chose {pick} ({have}/{len(chosen)} tasks scored; {len(picked)} this run)")
        return picked, [pick]
    if args.model:
        known = set(suite_tasks.registered_models())
        unknown = [m for m in args.model if m not in known]
        if unknown:
            sys.exit(f"not registered: {', '.join(unknown)}; registered: {', '.join(sorted(known)) or 'none'}")
        return chosen, list(dict.fromkeys(args.model))
    return chosen, [m for m in suite_tasks.available_models() if not suite_tasks.is_free(m)]


def ready(chosen):
    """`[(task, prompt)]` for the tasks that can be asked; the others are skipped with a reason (SU-5)."""
    out = []
    for task in chosen:
        try:
            out.append((task, suite_tasks.prompt(task)))
        except suite_tasks.Unready as exc:
            print(f"skipped {task['id']}: {exc}")
    return out


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.suite.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", metavar="ID", help="one task (drafts allowed)")
    parser.add_argument("--model", action="append", default=[], metavar="ALIAS", help="repeatable")
    parser.add_argument("--timeout", type=float, default=420, help="seconds per call (default 420)")
    parser.add_argument("--repeat", type=int, default=1, help="ask each model N times; report the spread")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--next-free", action="store_true", help="score ONE :free model")
    which.add_argument("--next", action="store_true", help="score ONE paid model")
    parser.add_argument("--dry-run", action="store_true", help="print the prompts, call nothing")
    parser.add_argument("--gap", type=float, default=GAP, help="seconds between models (default 2)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    if args.model and (args.next or args.next_free):
        parser.error("--model chooses the models itself; leave out --next/--next-free")
    return args


def main(argv=None):
    args = parse(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    loaded = suite_tasks.load(warn=print)
    if args.dry_run:
        for task, text in ready(suite_tasks.select(loaded, args.task)):
            print(f"=== {task['id']} ({len(text):,} chars) ===\n{text[:PREVIEW]}\n...")
        return 0
    chosen, models = choose(args, loaded)
    asked = ready(chosen)
    if not models or not asked:
        print("nothing to ask: " + ("no model is available (onboard one with `python -m benchwarmers.scripts.onboard "
                                    "SERVED_NAME`)" if not models else "no task is ready"))
        return 0
    run = Run(len(asked) * len(models), args.timeout, args.repeat, args.gap)
    status = 0
    try:
        for task, text in asked:
            findings = len(task.get("must_find") or [])
            print(f"\n## {task['id']} — {task['title']}\n   {len(text):,} chars, {findings} findings", flush=True)
            for alias in models:
                run.one(task, alias, text)
    except KeyboardInterrupt:
        print(f"\nstopped: {run.done} answer(s) saved so far stay saved", flush=True)
        status = 130
    if run.rows:
        summary(run.rows)
        print(f"written: {report(run.rows)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
