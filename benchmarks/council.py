"""What a council costs (issue 32): one council panel's latency, calls and tokens against `:merged`.

The shipped demo upstream (`python -m benchwarmers.demo.demo --models FILE`, the demo's own models: personas of
different speeds, each ranking a council's answers its own way) and the gateway (`python gateway.py`) run as
separate processes on 127.0.0.1, as in benchmarks/gateway.py. The demo's collection (three members, two
explorers) is asked the same prompts as `bench/demo:merged`, `bench/demo:council` with `council.orders` 1, and
with 2 (the default), in turn, one request at a time, not streamed. Per mode: the reply's latency (p50, p90,
mean), the calls it made (seats, then merger or rankings and chairman) and its tokens (`usage`, the stages'
sum), and how often the reply was the mode asked for (a merger's or a chairman's, not a fallback).

    python -m benchmarks.council [--prompts 20] [--readme]

Results print as a table and go to benchmarks/results/council-<time>.json; `--readme` writes the table into
benchmarks/README.md's "Council replies" section.
"""

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import gateway as rig
from benchmarks.learning import write_block
from benchwarmers.core import fileio
from benchwarmers.demo import demo
from benchwarmers.models import endpoints, registry
from benchwarmers.panel import collections

HERE = Path(__file__).resolve().parent
MODES = (("merged", "bench/demo:merged"), ("council, 1 order", "bench/demo1:council"),
         ("council, 2 orders", "bench/demo:council"))
TOPICS = ("the retry loop", "the cache layer", "the parser", "the rate limiter", "the queue worker")
TIMEOUT = 120


def make_data(folder, base):
    """A data folder on the upstream: the demo's models, its collection, and a copy ranking in one order."""
    rig.use_folder(folder)
    fileio.update(endpoints.path(), lambda found: found.__setitem__(
        "demo", {"base": base, "key": "", "kind": "local", "default": True}))
    for alias in demo.DEMO_MODELS:
        registry.add_registration(alias, alias, "demo")
    fileio.update(collections.collections_path(), lambda found: found.update({
        "demo": dict(demo.DEMO_COLLECTION), "demo1": {**demo.DEMO_COLLECTION, "council": {"orders": 1}}}))
    registry.sync_to_llm()
    return folder / "data"


def ask(port, model, text):
    """One reply: `(seconds, bench, usage)`."""
    started = time.monotonic()
    status, reply = rig.request(port, "POST", "/v1/chat/completions", json.dumps(
        {"model": model, "messages": [{"role": "user", "content": text}]}).encode(), TIMEOUT)
    seconds = time.monotonic() - started
    if status != 200:
        raise RuntimeError(f"{model} answered {status}: {json.dumps(reply)[:300]}")
    return seconds, reply["bench"], reply["usage"]


def calls_of(bench):
    """Every call the reply made: the seats, the rankings, the chairman, the merger."""
    council = bench.get("council") or {}
    return (len(bench["seats"]) + len(council.get("rankings") or []) + (1 if council.get("chairman") else 0)
            + (1 if bench.get("merger") else 0))


def summary(mode, rows):
    seconds = sorted(r["seconds"] for r in rows)
    return {"replies": len(rows), "p50 s": round(statistics.median(seconds), 2),
            "p90 s": round(seconds[int(0.9 * (len(seconds) - 1))], 2),
            "mean s": round(statistics.fmean(seconds), 2), "calls": round(statistics.fmean(r["calls"] for r in rows), 1),
            "tokens": round(statistics.fmean(r["tokens"] for r in rows)),
            "reply as asked": f"{sum(r['reply'] == mode.split(',')[0] for r in rows)}/{len(rows)}"}


def table(found, prompts):
    keys = list(next(iter(found.values())))
    head = "| Mode | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys)
    rows = [f"| {mode} | " + " | ".join(str(v) for v in figures.values()) + " |" for mode, figures in found.items()]
    return (f"{prompts} prompts a mode on the demo upstream (the demo's collection: 3 members, 2 explorers), one "
            "at a time, not streamed.\n\n" + head + "\n" + "\n".join(rows) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.council", description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--readme", action="store_true", help="write the table into benchmarks/README.md")
    args = parser.parse_args(argv)
    rows = {mode: [] for mode, _ in MODES}
    with tempfile.TemporaryDirectory(prefix="bench-council-") as tmp:
        run = Path(tmp)
        spec = run / "models.json"
        spec.write_text(json.dumps(demo.DEMO_MODELS), encoding="utf-8")
        out = run / "upstream.out"
        upstream = rig.subprocess.Popen([sys.executable, "-m", "benchwarmers.demo.demo", "--port", "0", "--models",
                                         str(spec)], cwd=rig.CODE, stdout=out.open("w"),
                                        stderr=rig.subprocess.STDOUT, env=rig.clean_env())
        gateway = None
        try:
            base = rig.wait_for_line(out, r"(http://127\.0\.0\.1:\d+/v1)", upstream).group(1)
            gateway, port = rig.start_gateway(run, make_data(run, base), "council")
            for i in range(args.prompts):
                text = f"Prompt {i}: review the change to {TOPICS[i % len(TOPICS)]} for bugs."
                for mode, model in MODES:
                    seconds, bench, usage = ask(port, model, text)
                    rows[mode].append({"seconds": seconds, "calls": calls_of(bench), "tokens": usage["total_tokens"],
                                       "reply": bench.get("reply", "all")})
        finally:
            rig.stop(gateway)
            rig.stop(upstream)
    found = {mode: summary(mode, r) for mode, r in rows.items()}
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    (HERE / "results" / f"council-{stamp}.json").write_text(json.dumps({"summary": found, "rows": rows}),
                                                            encoding="utf-8")
    text = table(found, args.prompts)
    print(text)
    if args.readme:
        write_block(text, "council")
    return 0


if __name__ == "__main__":
    sys.exit(main())
