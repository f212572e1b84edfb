"""Pacing (models.md §12, PACE-1..11) through the real built-in client against the demo upstream: threads and two
real processes sharing one data folder never send more than a limit allows; the refusals read as the spec says."""

import datetime
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import learn, scoring
from benchwarmers.calling import client, ledger, pacing
from benchwarmers.demo import demo
from benchwarmers.store import store

MODELS = {"slow": {"answer": "took a while", "latency": 1.0}, "quick": {"answer": "quick"}}
CHILD = """
import sys, threading
from benchwarmers.calling import client
threads = [threading.Thread(target=client.chat, args=(sys.argv[1], "hi"), kwargs={"timeout": 6}) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


@pytest.fixture(scope="module")
def up():
    with demo.Upstream(MODELS) as server:
        yield server


@pytest.fixture(scope="module")
def up2():
    """Another provider: its own host and port, so its own connection."""
    with demo.Upstream({"quick": {"answer": "quick"}}) as server:
        yield server


@pytest.fixture
def bench(up, up2):
    up.clear()
    demo.register(up)
    demo.register(up2, endpoint="other", aliases={"elsewhere": "quick"}, default=False)
    return up


def limits(**per_connection):
    fileio.write_atomic(paths.file("config", "connection-limits.json"), json.dumps(per_connection))


def lines():
    return list(ledger.rows())


def sent(up):
    return [r for r in up.requests if r["path"].endswith("/chat/completions")]


def past_call(alias, ago, connection="demo", **tokens):
    """A ledger line for a call `ago` seconds back, as the client writes it."""
    usage = {"prompt_tokens": tokens["tin"], "completion_tokens": tokens["tout"]} if tokens else {}
    ledger.write(ledger.line(time.time() - ago, alias, connection, connection, alias, "ok", 1, usage, 0.1, ""))


def test_pace4_six_threads_against_rpm_3_send_exactly_3(storage, bench):
    limits(demo={"rpm": 3})
    results = []
    threads = [threading.Thread(target=lambda: results.append(client.chat("slow", "hi", timeout=5)))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(sent(bench)) == 3
    refused = [r for r in results if r["error"].startswith("Error: client failed: rate limit (not sent")]
    assert len(refused) == 3 and all(r["attempts"] == 0 for r in refused)
    statuses = sorted(row["status"] for row in lines())
    assert statuses == ["ok"] * 3 + ["refused"] * 3
    assert all(row["connection"] == "demo" for row in lines())
    assert json.loads(store.current().read_text(pacing.INFLIGHT)) == {}  # every ticket released (LED-8)


def test_pace4_two_processes_share_rpm_4(storage, bench, home):
    """Two real processes of three concurrent calls each, one data folder: 4 sent of 6 ledger lines."""
    limits(demo={"rpm": 4})
    env = {**os.environ, "BENCHWARMERS_HOME": str(home), "BENCH_CLIENT": "builtin"}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, "slow"], env=env, cwd=str(paths.CODE))
                for _ in range(2)]
    assert [c.wait(timeout=60) for c in children] == [0, 0]
    assert len(sent(bench)) == 4
    rows = lines()
    assert len(rows) == 6 and sorted(r["status"] for r in rows) == ["ok"] * 4 + ["refused"] * 2
    assert sum(r["attempts"] for r in rows) == 4


def test_pace9_err3_err4_the_refusal_text(bench):
    limits(demo={"rpm": 1})
    past_call("quick", 30)
    res = client.chat("quick", "hi", timeout=10)
    match = re.fullmatch(r"Error: client failed: rate limit \(not sent; paced by the bench\): demo allows 1 requests per "
                         r"minute \(you, for demo \(config/connection-limits.json\)\) and 1 were used; try again in (\d+)s",
                         res["error"])
    assert match and 29 <= int(match.group(1)) <= 31
    text = client.output(res, 10)
    assert scoring.outcome(text)[0] == "error" and scoring.failure_class(text) == "capacity"
    assert "limits" not in learn.parse(text)  # learn must not file the pacing text as a learned limit
    assert lines()[-1]["status"] == "refused" and lines()[-1]["attempts"] == 0
    assert client.chat("elsewhere", "hi", timeout=10)["error"] == ""  # another connection is not paced


def test_pace7_a_short_wait_is_waited_on_the_calls_own_thread_then_sent_pace8(bench):
    fileio.write_atomic(paths.file("config", "model-overrides.json"), json.dumps({"quick": {"limits": {"rpm": 1}}}))
    past_call("quick", 59.5)
    before = lines()[-1]["t"]
    finish = client.begin("quick", "hi", timeout=20)  # a panel's way: every seat's request from one thread
    assert sent(bench) == [] and len(lines()) == 1  # the wait is the seat's own, not begin()'s: nothing sent yet
    res = finish()
    assert res["error"] == "" and len(sent(bench)) == 1
    assert lines()[-1]["t"] >= before + 60  # the ledger's t is the send time, after the wait


def test_pace5_pace9_tokens_per_minute(bench):
    limits(demo={"tpm": 150})
    past_call("quick", 10, tin=80, tout=20)
    res = client.chat("quick", "x" * 400, timeout=10)  # 400 // 4 + 1 = 101 tokens: 100 + 101 > 150
    assert re.search(r"demo allows 150 tokens per minute \(.*\) and 100 tokens were used; try again in \d+s$",
                     res["error"])
    assert client.chat("elsewhere", "x" * 400, timeout=10)["error"] == ""  # another connection


def test_pace5_a_prompt_bigger_than_the_window_waits_for_an_empty_window(bench):
    limits(demo={"tpm": 50})
    res = client.chat("quick", "y" * 1000, timeout=10)  # 251 tokens, cut to the window's 50: the window is empty
    assert res["error"] == ""


def test_pace10_a_monthly_cap(storage, bench):
    limits(demo={"rpmo": 3})
    for _ in range(3):
        past_call("quick", 5)
    res = client.chat("quick", "hi", timeout=10)
    assert "a calendar month" in res["error"] and "this month" in res["error"]
    assert "demo allows 3 requests a calendar month (UTC) (you, for demo (config/connection-limits.json)) and 3 were " \
           "used this month; try again in" in res["error"]
    assert client.chat("elsewhere", "hi", timeout=10)["error"] == ""


def test_pace1_a_learned_limit_paces_its_model_pace11(bench, capsys):
    learn.note_limits("quick", {"rpm": 1}, "gateway", "Limit 1 (requests per minute)")
    past_call("quick", 20)
    res = client.chat("quick", "hi", timeout=10)
    today = datetime.date.today().isoformat()
    assert f"quick allows 1 requests per minute (learned {today} from the provider) and 1 were used" in res["error"]
    pacing.main(["quick"])
    assert f"rpm   1/1 requests per minute  (learned {today} from the provider)" in capsys.readouterr().out
    pacing.main(["elsewhere"])
    assert capsys.readouterr().out.startswith("nothing paces elsewhere (connection other)")


def test_cl6_a_broken_limits_file_paces_nothing(bench):
    fileio.write_atomic(paths.file("config", "connection-limits.json"), "{not json")
    past_call("quick", 1)
    assert client.chat("quick", "hi", timeout=10)["error"] == ""
    assert not paths.file("runs", "inflight.json").exists()  # nothing paced, nothing written (PACE-7)


def test_pace5_estimates():
    assert pacing.estimate("abcd" * 10, "sys!") == 12
    parts = [{"role": "user", "content": [{"type": "text", "text": "a" * 40}, {"type": "image_url", "image_url": {}}]}]
    assert pacing.estimate(messages=parts) == 11
    assert pacing.estimate("", "", None, {"temperature": 0.5}) == 1 + len('{"temperature": 0.5}') // 4


def test_pace3_a_call_in_flight_counts_until_its_until(bench):
    """Another process's call in flight weighs one request; one past its `until` (a crashed caller) is ignored
    and dropped on the next write."""
    limits(demo={"rpm": 1})
    now = time.time()
    flying = {"alias": "quick", "connection": "demo", "t": now - 5, "tokens": 3, "pid": 999_999}
    inflight = paths.file("runs", "inflight.json")
    fileio.write_atomic(inflight, json.dumps({"live": {**flying, "until": now + 100}}))
    assert client.chat("quick", "hi", timeout=10)["error"].startswith(
        "Error: client failed: rate limit (not sent; paced by the bench): demo allows 1 requests per minute")
    fileio.write_atomic(inflight, json.dumps({"gone": {**flying, "until": now - 1}}))
    assert client.chat("quick", "hi", timeout=10)["error"] == ""
    assert json.loads(inflight.read_text()) == {}  # the stale entry went with the call's own release
