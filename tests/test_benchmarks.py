"""The Benchmarks page's data (dashboard.md §8.2 BM-1, BM-2) from a data folder filled by real runs.

The folder is filled once per module (tests/benchdata.py: suite/run.py and perf/run.py as a user types them
against the local upstream's scripted models, two panels judged through the real gateway) and copied into
each test's own data folder, so a test may change it.
"""

import json
import re
import urllib.request

from benchwarmers.dashboard import serve
from benchdata import filled, populated  # noqa: F401 (fixtures)
from benchwarmers.core import fileio, paths
from benchwarmers.admin import modeledit
from benchwarmers.dashboard import benchmarks
from benchwarmers.perf import run as perf_run


def by_model(rows):
    return {r["model"]: r for r in rows}


def test_bm1_charts_data_from_real_runs(filled):
    data = benchmarks.charts_data()
    # recall from the suite note over the nine tasks (ten findings); confidently wrong from the saved answers
    assert by_model(data["overview"]) == {
        "sage": {"model": "sage", "recall": 1.0, "wrong": 0.0, "found": "10/10", "wrongN": "0/8"},
        "fair": {"model": "fair", "recall": 0.7, "wrong": 0.125, "found": "7/10", "wrongN": "1/8"},
        "bold": {"model": "bold", "recall": 0.1, "wrong": 1.0, "found": "1/10", "wrongN": "8/8"}}
    assert data["families"] == ["hand-built", "claims", "seeded, function", "seeded, whole file", "real bugs"]
    assert data["kinds"] == ["control", "wrong line", "false claim", "trap"]
    heat = {(c["model"], c["task"]): c for c in data["heat"]}
    assert len(heat) == 36 and {c["family"] for c in data["heat"]} == set(data["families"])
    assert heat[("fair", "hand-cache-review")] == {"model": "fair", "task": "hand-cache-review", "family": "hand-built",
                                                   "label": "1/2", "rate": 0.5, "invented": False}
    refused = heat[("mute", "claim-cache-true")]
    assert refused["label"] == "refused" and refused["rate"] is None
    assert heat[("bold", "rebench-gamma-control")]["invented"] is True
    assert heat[("fair", "seeded-hard-beta-bug")]["family"] == "seeded, whole file"
    # the heat grid runs in family order
    order = [data["families"].index(c["family"]) for c in data["heat"]]
    assert order == sorted(order)
    assert sorted((r["model"], r["kind"], r["n"]) for r in data["wrong"]) == [
        ("bold", "control", "3/3"), ("bold", "false claim", "1/1"), ("bold", "trap", "1/1"),
        ("bold", "wrong line", "3/3"), ("fair", "control", "1/3")]
    assert data["wrongTotals"] == {"sage": {"rate": 0.0, "answers": 8}, "fair": {"rate": 0.125, "answers": 8},
                                   "bold": {"rate": 1.0, "answers": 8}}
    hunt = by_model(data["hunt"])
    assert hunt["fair"] == {"model": "fair", "found": 2, "wrong line": 0, "missed": 1, "clean": 2, "false alarm": 1,
                            "tasks": 6}
    assert hunt["bold"]["wrong line"] == 3 and hunt["bold"]["false alarm"] == 3 and "mute" not in hunt
    # two panels judged through the gateway (tests/benchdata.py VERDICTS)
    assert by_model(data["work"]) == {
        "sage": {"model": "sage", "offloads": 2, "judged": 2, "useful": 2, "real": 1, "false": 0},
        "fair": {"model": "fair", "offloads": 2, "judged": 2, "useful": 1, "real": 0, "false": 1},
        "bold": {"model": "bold", "offloads": 2, "judged": 2, "useful": 0, "real": 0, "false": 1}}
    assert sorted((r["model"], r["outcome"], r["count"]) for r in data["reliability"]) == [
        ("bold", "answered", 2), ("down", "capacity", 2), ("fair", "answered", 2), ("sage", "answered", 2)]
    speed = by_model(data["speed"])
    assert set(speed) == {"sage", "fair", "bold"}  # mute has no score, so no recall
    assert speed["bold"]["tasks"] == 9 and speed["bold"]["recall"] == 0.1 and speed["bold"]["seconds"] >= 0.5
    assert speed["sage"]["seconds"] < speed["bold"]["seconds"]
    tables = data["tables"]
    assert {(r["model"], r["prompt"]) for r in tables["perf"]} == {(m, p) for m in ("sage", "fair", "bold", "down")
                                                                   for p in ("tiny", "large")}
    down = [r for r in tables["perf"] if r["model"] == "down"][0]
    assert (down["answered"], down["error"] + down["refused"] + down["timeout"]) == (0, 2)
    assert by_model(tables["wrong"])["fair"]["reviews"] == 2 and by_model(tables["wrong"])["fair"]["review_false"] == 1
    assert [c for c in tables["heat"] if c["model"] == "bold" and c["task"] == "hand-cache-review"][0][
        "inventedText"] == "the cache is thread-safe"


def test_bm1_file2_charts_use_registered_models_and_tables_keep_the_retired(filled):
    assert modeledit.remove({"alias": "fair", "reason": "testing"}, "test")["ok"]
    data = benchmarks.charts_data()
    for key in ("overview", "heat", "wrong", "hunt", "work", "reliability", "speed"):
        assert "fair" not in {r["model"] for r in data[key]}, key
    assert "fair" not in data["wrongTotals"]
    for key in ("hunt", "work", "wrong", "heat", "perf"):
        assert "fair" in {r["model"] for r in data["tables"][key]}, key


def test_bm1_reliability_keeps_the_last_14_days(filled):
    old = {c: "" for c in perf_run.COLUMNS}
    old.update(timestamp="2020-01-01T10:00:00", model="sage", prompt="tiny", n="1", answered="0", error="1",
               failure="structural")
    recent = dict(old, timestamp=f"{benchmarks.datetime.date.today().isoformat()}T00:00:01", failure="")
    perf_run.append([old, recent])
    got = {(r["model"], r["outcome"]): r["count"] for r in benchmarks.charts_data()["reliability"]}
    assert ("sage", "structural") not in got and got[("sage", "error")] == 1 and got[("sage", "answered")] == 2
    latest = [r for r in benchmarks.charts_data()["tables"]["perf"] if r["model"] == "sage" and r["prompt"] == "tiny"]
    assert latest[0]["answered"] == 0 and latest[0]["error"] == 1  # the table shows the latest row


def test_bm2_suite_notes_rows_renames_and_later_files_win(home):
    notes = paths.file("runs")
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "suite-2026-01-01.md").write_text(
        "## Suite run\n\n| Task | Model | Found | Invented | Seconds |\n|---|---|---|---|---|\n"
        "| t-one | `old` | 1/2 | — | 3.5 |\n"
        "| t-two | `old` | timeout | - | 420.0 |\n"
        "| t three | `old` | 1/1 | | 1 |\n"       # a task id with a space: not a row
        "| t-four | old | 1/1 | | 1 |\n"          # a model not in backticks: not a row
        "| t-five | `old` |  | | 1 |\n"          # no found: not a row
        "| t-six | `old` | 1/1 | | slow |\n"      # seconds not a number: not a row
        "- t-one / `old`: missed x\n", encoding="utf-8")
    (notes / "suite-2026-02-01.md").write_text(
        "| t-one | `new` | 2/2 |  x is thread-safe , | 12.5 (x2) |\n", encoding="utf-8")
    (notes / "other.md").write_text("| t-nine | `old` | 1/1 | | 1 |\n", encoding="utf-8")
    fileio.write_atomic(paths.file("config", "alias-history.json"), '{"old": "new"}')
    assert benchmarks.suite_scores() == {
        ("t-one", "new"): {"found": "2/2", "invented": "x is thread-safe ,", "seconds": 12.5},
        ("t-two", "new"): {"found": "timeout", "invented": "", "seconds": 420.0}}
    assert benchmarks.recall(benchmarks.suite_scores()) == {"new": (2, 2, 1)}
    assert [benchmarks.family(t) for t in ("claim-a", "seeded-hard-b", "seeded-c", "rebench-d", "list-e")] == [
        "claims", "seeded, whole file", "seeded, function", "real bugs", "hand-built"]


def test_bm1_the_page_embeds_charts_data_once_and_escaped(filled):
    notes = paths.file("runs", "suite-2099-01-01.md")
    notes.write_text("| hand-cache-review | `sage` | 0/2 | </script><b>x</b> | 1.0 |\n", encoding="utf-8")
    srv = serve.serve("127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.server_address[1]}/", timeout=30) as reply:
            page = reply.read().decode("utf-8")
    finally:
        srv.shutdown()
        srv.server_close()
    found = re.findall(r'<script type="application/json" id="charts-data">(.*?)</script>', page, re.S)
    assert len(found) == 1 and "</b>" not in found[0] and "<\\/script>" in found[0]
    embedded = json.loads(found[0])
    assert embedded == json.loads(json.dumps(benchmarks.charts_data()))
    assert [c for c in embedded["heat"] if c["model"] == "sage" and c["task"] == "hand-cache-review"][0]["invented"]
