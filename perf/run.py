"""The performance tier (suite-cli-mcp.md §7, PF-1..7): how the serving path answers, not how well the model does.

    python -m benchwarmers.perf.run [--model ALIAS]... [-n 5] [--timeout 180] [--tiny-only] [--client llm|builtin]

Each model gets a one-word prompt (`tiny`) and an ~18 KB one (`large`), `n` samples each (1 for a
`:free` model, whose daily budget is shared). Every run appends one row per model and prompt to
`DATA/perf/history.csv`: one reading is weather, the history is the climate the router reads.
The summary's `<a>a/<r>r/<e>e/<t>t` token is what onboarding's availability probe parses (OB-9).

Decisions where the contract is silent:
- Without `--model`, the models are the registered ones minus ad hoc; the held-back ones are listed, and
  with none to measure the run says so and how to onboard one, exit 0 (nothing failed).
- An unknown `--model` is refused (exit 1) before any call: a row for an alias no call could reach
  would be evidence against a model that does not exist.
- With the `llm` backend the calls are written to the usage ledger here (purpose `benchmark`), as the
  built-in client writes its own; tokens/s is left empty there (PF-3: built-in client only).
"""

import argparse
import csv
import datetime
import io
import os
import sys
import time

from ..core import console, fileio, paths
from ..models import learn, registry, scoring
from ..calling import client, ledger, llm_backend
from ..panel import roles

TINY = "Reply with exactly one word: ready"
LINES = 400
COLUMNS = ("timestamp", "model", "prompt", "n", "p50_s", "p95_s", "min_s", "max_s", "chars_per_s", "answered",
           "refused", "error", "timeout", "failure", "detail", "tokens_per_s")
KINDS = ("answered", "refused", "error", "timeout")
STEADY = 0.15
DETAIL_CHARS = 300


def large_prompt():
    """PF-1's large prompt: one instruction line, a blank line, 400 setting lines (about 18 KB)."""
    head = "Summarise the following configuration in at most three sentences. Do not quote it back."
    body = "\n".join(f"setting_{i} = value_{i}  # option {i} of many" for i in range(LINES))
    return f"{head}\n\n{body}"


PROMPTS = {"tiny": TINY, "large": large_prompt()}


def percentile(values, pct):
    """Nearest rank (PF-4): the sorted value at `round(pct × (len−1))`, clamped; 0.0 when empty.

    Python's `round` takes a half to the even neighbour (banker's rounding: p50 of 4 values is index 2, of 6 is
    index 2 too): kept so every reading compares with the history written before (suite-cli-mcp.md improvement 22)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(max(round(pct * (len(ordered) - 1)), 0), len(ordered) - 1)]


def history_path():
    return paths.file("perf", "history.csv")


def ask(alias, prompt, timeout):
    """One call through the chosen backend: the classifier's text, seconds, output tokens, first-token seconds."""
    started = time.monotonic()  # the reply's own `seconds` is rounded to 0.1 s: too coarse for a one-word answer
    if client.backend(alias) == "builtin":
        res = client.chat(alias, prompt, timeout=timeout, purpose="benchmark")
        tokens = (res.get("usage") or {}).get("completion_tokens")
        return client.output(res, timeout), time.monotonic() - started, tokens, res.get("first_token_s")
    res = llm_backend.ask(alias, prompt, timeout=timeout)
    seconds = time.monotonic() - started
    ledger.write(ledger.line(time.time() - seconds, alias, "", registry.endpoint_of(alias) or "",
                             registry.names().get(alias, ""),
                             "timeout" if res["timed_out"] else "error" if res["error"] else "ok",
                             res.get("attempts") or 1, res.get("usage") or {}, round(seconds, 1), "benchmark"))
    return client.output(res, timeout), seconds, None, None


def sample(alias, label, prompt, timeout, i, n):
    """One sample (PF-3): `(kind, seconds, text, tokens/s or None)`; a non-answer is taught to learn."""
    text, seconds, tokens, first = ask(alias, prompt, timeout)
    found = scoring.outcome(text, min_length=1)
    kind = "answered" if found is None else found[0]
    print(f"    {alias} {label} [{i}/{n}] {kind} {seconds:.1f}s", flush=True)
    rate = None
    if found is None and tokens and first is not None and seconds - first > 0:
        rate = tokens / (seconds - first)
    if found is not None:
        try:
            learn.record(alias, text, "perf")
        except Exception as exc:  # learning is a side effect: it never fails a measurement
            console.say(f"    (could not learn from the failure: {exc})")
    return kind, seconds, text, rate


def measure(alias, label, n, timeout):
    """PF-3..5: one history row for `alias` and the prompt `label`."""
    counts = dict.fromkeys(KINDS, 0)
    times, speeds, rates, failures = [], [], [], {}
    for i in range(1, n + 1):
        kind, seconds, text, rate = sample(alias, label, PROMPTS[label], timeout, i, n)
        counts[kind] += 1
        if kind == "answered":
            times.append(seconds)
            if label == "large" and seconds > 0:
                speeds.append(len(text) / seconds)
                if rate:
                    rates.append(rate)
            continue
        failures.setdefault(scoring.failure_class(text) or "other", " ".join(text.split())[:DETAIL_CHARS])
    worst = next((c for c in scoring.FAILURE_CLASSES if c in failures), "")
    return {"timestamp": datetime.datetime.now().isoformat(timespec="seconds"), "model": alias, "prompt": label,
            "n": n, "p50_s": f"{percentile(times, 0.5):.2f}", "p95_s": f"{percentile(times, 0.95):.2f}",
            "min_s": f"{min(times, default=0.0):.2f}", "max_s": f"{max(times, default=0.0):.2f}",
            "chars_per_s": f"{percentile(speeds, 0.5):.1f}", **counts, "failure": worst,
            "detail": failures.get(worst, ""), "tokens_per_s": f"{percentile(rates, 0.5):.1f}" if rates else ""}


def count(alias, calls):
    """PF-7: a row's calls are counted as measurement, not work (`metrics/benchmark-calls.json`, COST-2); a
    counter that cannot be written never fails the run."""
    try:
        ledger.count_benchmark(alias, calls)
    except Exception as exc:
        console.say(f"    (could not count the benchmark calls: {exc})")


def read_history():
    """`(header, rows)` of the history file; `([], [])` when there is none yet."""
    try:
        with open(history_path(), encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            return list(reader.fieldnames or []), list(reader)
    except FileNotFoundError:
        return [], []


def append(rows):
    """PF-6: append the rows; an older header is first rewritten to today's columns, rows mapped by name."""
    where = history_path()
    with fileio.lock(where):
        header, old = read_history()
        if header != list(COLUMNS):  # a new file gets its header; an older one is rewritten under today's
            fileio.write_atomic(where, _csv([{c: row.get(c) or "" for c in COLUMNS} for row in old]))
        with open(where, "a", encoding="utf-8", newline="", opener=fileio.opener) as f:
            csv.DictWriter(f, COLUMNS).writerows(rows)


def _csv(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def trend(row, earlier):
    """PF-7: `  (steady)` within ±15 %, else `  (+N% vs YYYY-MM-DD)`; "" with no usable earlier reading."""
    previous = [r for r in earlier if r.get("model") == row["model"] and r.get("prompt") == row["prompt"]]
    if not previous:
        return ""
    try:
        before, now = float(previous[-1].get("p50_s") or 0), float(row["p50_s"])
    except ValueError:
        return ""
    if before <= 0:
        return ""
    change = (now - before) / before
    if abs(change) <= STEADY:
        return "  (steady)"
    return f"  ({change:+.0%} vs {str(previous[-1].get('timestamp') or '')[:10]})"


def summary(rows, earlier):
    print(f"\n{'model':<28} {'prompt':<6} {'p50':>7} {'p95':>7} {'ch/s':>8}  counts")
    for row in rows:
        counts = "{answered}a/{refused}r/{error}e/{timeout}t".format(**row)
        print(f"{row['model']:<28} {row['prompt']:<6} {row['p50_s']:>7} {row['p95_s']:>7} {row['chars_per_s']:>8}"
              f"  {counts}{trend(row, earlier)}")


def chosen_models(asked):
    """`(models, held back)`: the named ones, else every registered model except ad hoc (§7 flags)."""
    registered = registry.registered_models()
    if asked:
        unknown = [m for m in asked if m not in registered]
        if unknown:
            sys.exit(f"not registered: {', '.join(unknown)}; registered: {', '.join(registered) or 'none'}"
                     " (onboard one with `python -m benchwarmers.scripts.onboard SERVED_NAME`)")
        return list(dict.fromkeys(asked)), []
    held = set(roles.ad_hoc())
    return [m for m in registered if m not in held], [m for m in registered if m in held]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.perf.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="ALIAS",
                        help="measure this model (repeatable; default every registered model except ad hoc)")
    parser.add_argument("-n", type=int, default=5, help="samples per prompt (default 5; 1 for :free models)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds per call (default 180)")
    parser.add_argument("--tiny-only", action="store_true", help="only the one-word prompt")
    parser.add_argument("--client", choices=("llm", "builtin"), help="the backend for this run (sets BENCH_CLIENT)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("-n: at least 1")
    if args.client:
        os.environ["BENCH_CLIENT"] = args.client
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    models, held = chosen_models(args.model)
    if held:
        print(f"held back (ad hoc; name them with --model): {', '.join(held)}")
    if not models:
        print("no models to measure: onboard one with `python -m benchwarmers.scripts.onboard SERVED_NAME`")
        return 0
    earlier = read_history()[1]
    labels = ["tiny"] if args.tiny_only else ["tiny", "large"]
    rows = []
    for alias in models:
        n = 1 if ":free" in registry.names().get(alias, "") else args.n
        for label in labels:
            rows.append(measure(alias, label, n, args.timeout))
            count(alias, n)
    append(rows)
    summary(rows, earlier)
    return 0


if __name__ == "__main__":
    sys.exit(main())
