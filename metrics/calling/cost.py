"""Cost in tokens, per model: what the bench's calls took (COST-1, COST-2).

Two sources, and no call is in both: the usage ledger's `ok` and `empty` rows (the built-in client's
calls, streamed ones included: the client asks every stream for its usage) and llm's own
`LLMDIR/logs.db` (calls through the `llm` CLI, opened read-only). Names are folded through
`config/alias-history.json`, so a renamed model keeps its record. `benchmark_calls` are the calls
runners made to measure a model (`metrics/benchmark-calls.json`, counted by perf and the suite).
`write()` puts the table in `metrics/cost.json`; the dashboard's Quotas page shows it. `dollars` is what
those tokens cost at the catalog's prices (models.dev's US dollars per million input / output tokens,
reasoning billed as output), None where no price is known (issue 31).

Improvements over the reference (models.md, "Improvements worth making"):
- 7: `cost.json` is replaced whole (LOCK-3), never written in place.
- 8: reasoning tokens that a provider counts inside its output tokens (OpenAI's `completion_tokens`
  includes `reasoning_tokens`) are not counted twice. A row whose reasoning is no more than its output
  is taken to include it; one whose reasoning is larger cannot, and its reasoning is added apart.
  `reasoning_share` = reasoning / (output + reasoning counted apart); `tokens_per_call` uses the same total.

    python -m benchwarmers.calling.cost      writes metrics/cost.json and prints it per model
"""

import json
import sqlite3
import sys

from ..core import fileio, paths
from ..models import aliases, catalog
from . import ledger

COUNTED = ("ok", "empty")


def path():
    return paths.file("metrics", "cost.json")


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _price(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def dollars(input_tokens, output_tokens, price):
    """US dollars for the tokens at `price` (`{"input": $/M, "output": $/M}`, models.dev's `cost`), rounded to
    a millionth; None when either price is unknown."""
    per_in, per_out = (_price(price.get(k)) for k in ("input", "output")) if isinstance(price, dict) else (None, None)
    if per_in is None or per_out is None:
        return None
    return round((input_tokens * per_in + output_tokens * per_out) / 1_000_000, 6)


def ledger_calls():
    """`(alias, input, output, reasoning or None, duration_ms)` for each answered built-in call."""
    for row in ledger.rows():
        if row.get("status") not in COUNTED or not row.get("alias"):
            continue
        reasoning = _int(row["reasoning"]) if "reasoning" in row else None
        seconds = row.get("seconds") if isinstance(row.get("seconds"), (int, float)) else 0
        yield (row["alias"], _int(row.get("tokens_in")), _int(row.get("tokens_out")), reasoning,
               round(seconds * 1000))


def llm_calls():
    """The same from llm's log (`turns`), opened read-only; nothing when there is none."""
    db = paths.llm_dir() / "logs.db"
    if not db.exists():
        return
    try:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return
    try:
        rows = con.execute("select model, input_tokens, output_tokens, token_details, duration_ms from turns").fetchall()
    except sqlite3.Error:
        rows = []
    finally:
        con.close()
    for model, tin, tout, details, duration in rows:
        reasoning = None
        try:
            found = (json.loads(details or "{}").get("completion_tokens_details") or {}).get("reasoning_tokens")
            reasoning = _int(found) if found is not None else None
        except (ValueError, AttributeError):
            pass
        yield str(model or "?"), _int(tin), _int(tout), reasoning, _int(duration)


def table():
    """COST-2: `{model: {calls, input, output, reasoning, duration_ms, with_reasoning_data, reasoning_share,
    tokens_per_call, benchmark_calls, dollars}}`."""
    current = aliases.resolver()
    found, apart = {}, {}
    for alias, tin, tout, reasoning, ms in [*ledger_calls(), *llm_calls()]:
        name = aliases.follow(current, alias)
        each = found.setdefault(name, {"calls": 0, "input": 0, "output": 0, "reasoning": 0, "duration_ms": 0,
                                       "with_reasoning_data": 0})
        each["calls"] += 1
        each["input"] += tin
        each["output"] += tout
        each["duration_ms"] += ms
        if reasoning is not None:
            each["with_reasoning_data"] += 1
            each["reasoning"] += reasoning
            if reasoning > tout:
                apart[name] = apart.get(name, 0) + reasoning
    benchmark = fileio.read_json(ledger.benchmark_calls_path())
    known = catalog.table()  # the registered models' facts, prices among them
    for name, n in benchmark.items():
        if _int(n):
            found.setdefault(aliases.follow(current, name), {"calls": 0, "input": 0, "output": 0, "reasoning": 0,
                                                             "duration_ms": 0, "with_reasoning_data": 0})
    for name, each in found.items():
        extra = apart.get(name, 0)
        out = each["output"] + extra
        each["reasoning_share"] = round(each["reasoning"] / out, 3) if each["with_reasoning_data"] and out else None
        each["tokens_per_call"] = round((each["input"] + out) / each["calls"]) if each["calls"] else 0
        each["benchmark_calls"] = sum(_int(n) for old, n in benchmark.items() if aliases.follow(current, old) == name)
        each["dollars"] = dollars(each["input"], out, (known.get(name) or {}).get("cost"))
    return found


def write():
    """The table into `metrics/cost.json` (indent 2, sorted keys), replaced whole; returns it."""
    found = table()
    fileio.write_atomic(path(), json.dumps(found, indent=2, sort_keys=True) + "\n")
    return found


def main():
    found = write()
    if not found:
        print(f"no call to count yet ({path()})")
        return 0
    for name, each in sorted(found.items()):
        share = "—" if each["reasoning_share"] is None else f"{each['reasoning_share']:.0%}"
        print(f"{name}  {each['calls']:,} calls  in {each['input']:,}  out {each['output']:,}  reasoning "
              f"{each['reasoning']:,} ({share})  {each['tokens_per_call']:,}/call  benchmark {each['benchmark_calls']:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
