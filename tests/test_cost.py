"""Cost in tokens (models.md §17, COST-1/2; LED-2): a streamed call through the real gateway is counted with its
tokens in the ledger, and the cost table sums the ledger, llm's logs.db and the benchmark calls perf counts (PF-7)."""

import json
import sqlite3
import urllib.request

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.calling import cost, ledger
from benchwarmers.demo import demo
from benchwarmers.perf import run as perf

THOUGHT = "Weigh the options, then answer."


@pytest.fixture
def route_models():
    return {"thinker": {"answer": "Move the check before the write.", "reasoning": THOUGHT, "latency": 0.05}}


def test_led2_a_streamed_route_call_is_counted_with_its_tokens(gw, routed):
    demo.set_collection("core", ["thinker"])
    body = json.dumps({"model": "bench/core:route", "stream": True,
                       "messages": [{"role": "user", "content": "Where does the check go?"}]}).encode()
    request = urllib.request.Request(gw + "/v1/chat/completions", body, {"Content-Type": "application/json",
                                                                          "Authorization": "Bearer x"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        streamed = reply.read().decode()
    assert "data: [DONE]" in streamed
    (row,) = [r for r in ledger.rows() if r["alias"] == "thinker"]
    sent = routed.requests[-1]["body"]
    expected = demo.usage(sent["messages"], "Move the check before the write.", THOUGHT)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert (row["tokens_in"], row["tokens_out"], row["reasoning"]) == (
        expected["prompt_tokens"], expected["completion_tokens"], expected["completion_tokens_details"]["reasoning_tokens"])
    assert row["tokens_in"] > 0 and row["tokens_out"] > row["reasoning"] > 0 and row["purpose"] == "route"

    # COST-1/2: the same call in the cost table, with llm's log and the benchmark counter beside it
    db = sqlite3.connect(paths.llm_dir() / "logs.db")
    db.execute("create table turns (model text, input_tokens int, output_tokens int, token_details text, duration_ms int)")
    db.execute("insert into turns values ('old-thinker', 10, 5, ?, 700)",
               (json.dumps({"completion_tokens_details": {"reasoning_tokens": 40}}),))
    db.execute("insert into turns values ('other', 3, 4, null, 100)")
    db.commit()
    db.close()
    fileio.write_atomic(paths.file("config", "alias-history.json"), json.dumps({"old-thinker": "thinker"}))
    assert perf.main(["--model", "thinker", "-n", "2", "--tiny-only"]) == 0  # two benchmark calls (PF-7)
    table = cost.write()
    assert json.loads(cost.path().read_text()) == table
    thinker = table["thinker"]
    calls = [r for r in ledger.rows() if r["alias"] == "thinker"]
    assert thinker["calls"] == 1 + 2 + 1  # the route call, the perf calls and llm's logged one under its old name
    assert thinker["input"] == sum(r["tokens_in"] for r in calls) + 10
    assert thinker["output"] == sum(r["tokens_out"] for r in calls) + 5
    assert thinker["reasoning"] == sum(r["reasoning"] for r in calls) + 40
    assert thinker["with_reasoning_data"] == 4 and thinker["benchmark_calls"] == 2
    # improvement 8: ledger reasoning is inside the output; llm's 40 > its 5 output tokens, so it is counted apart
    total_out = thinker["output"] + 40
    assert thinker["reasoning_share"] == round(thinker["reasoning"] / total_out, 3)
    assert thinker["tokens_per_call"] == round((thinker["input"] + total_out) / 4)
    assert thinker["duration_ms"] == sum(round(r["seconds"] * 1000) for r in calls) + 700
    assert table["other"] == {"calls": 1, "input": 3, "output": 4, "reasoning": 0, "duration_ms": 100,
                              "with_reasoning_data": 0, "reasoning_share": None, "tokens_per_call": 7,
                              "benchmark_calls": 0, "dollars": None}


def test_issue31_dollars_at_the_catalogs_prices():
    """models.dev prices are US dollars per million tokens, reasoning billed as output; an unknown price is None."""
    assert cost.dollars(2_000_000, 500_000, {"input": 0.15, "output": 0.6}) == 0.6
    assert cost.dollars(1234, 0, {"input": 3, "output": 15}) == 0.003702
    assert cost.dollars(10, 10, {"input": 0, "output": 0}) == 0
    assert cost.dollars(10, 10, {"input": 1}) is None
    assert cost.dollars(10, 10, None) is None
    assert cost.dollars(10, 10, {"input": True, "output": 1}) is None


def test_cost1_nothing_to_count():
    assert cost.write() == {} and cost.main() == 0
