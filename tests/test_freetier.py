"""The free-tier guard (models.md §16 AL-5, ERR table, ERR-3/4) through the real built-in client: a model whose
`went paid` alert is open is refused unsent until allow_paid or BENCH_ALLOW_PAID=1 lets it through."""

import json
import os
import subprocess

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import alerts, connections, learn, scoring
from benchwarmers.calling import client, ledger
from benchwarmers.demo import demo

MESSAGE = "pricey is listed with a price now (models.dev): input 0.5, output 1.5 per million tokens"


@pytest.fixture(scope="module")
def up():
    with demo.Upstream({"pricey-v1": {"answer": "billed answer"}}) as server:
        yield server


@pytest.fixture
def bench(up, monkeypatch):
    monkeypatch.delenv("BENCH_ALLOW_PAID", raising=False)
    up.clear()
    demo.register(up, aliases={"pricey": "pricey-v1"})
    alerts.raise_alert("model:paid:pricey-v1", "went paid", MESSAGE, "Check the provider; retire or re-point it.",
                       alias="pricey")
    return up


def test_al5_the_guard_holds_a_model_that_went_paid(bench):
    res = client.chat("pricey", "hi", timeout=10)
    assert res["error"] == (
        "Error: client failed: not sent: the free-tier guard holds pricey, which is listed with a price now "
        f"({MESSAGE}), so a call may be billed: payment required is assumed. Allow it by adding 'pricey' to "
        "allow_paid in config/connections.json, or for one run with BENCH_ALLOW_PAID=1.")
    assert bench.requests == [] and res["attempts"] == 0
    (row,) = ledger.rows()
    assert (row["status"], row["connection"], row["attempts"]) == ("refused", "demo", 0)
    text = client.output(res, 10)
    assert scoring.failure_class(text) == "entitlement"  # ERR-3
    assert learn.parse(text) == {"rate_limited": False}  # ERR-4: nothing to learn, no cooldown
    assert not paths.file("runs", "inflight.json").exists()  # a held call takes no pacing ticket


def test_al5_allow_paid_and_the_one_run_switch_let_it_through(bench, monkeypatch):
    monkeypatch.setenv("BENCH_ALLOW_PAID", "1")
    assert client.chat("pricey", "hi", timeout=10)["text"] == "billed answer"
    monkeypatch.setenv("BENCH_ALLOW_PAID", "yes")  # exactly 1, nothing else
    assert "free-tier guard holds" in client.chat("pricey", "hi", timeout=10)["error"]
    fileio.write_atomic(connections.path(), json.dumps({"allow_paid": ["pricey"]}))
    assert client.chat("pricey", "hi", timeout=10)["error"] == ""
    assert len(bench.requests) == 2


def test_al5_only_a_went_paid_alert_holds_and_a_broken_file_holds_nothing(bench):
    alerts.raise_alert("model:paid:pricey-v1", "retiring", MESSAGE)
    assert client.chat("pricey", "hi", timeout=10)["error"] == ""
    fileio.write_atomic(alerts.path(), "{broken")
    assert client.chat("pricey", "hi", timeout=10)["error"] == ""
    alerts.path().unlink()
    alerts.raise_alert("model:paid:pricey-v1", "went paid", "x" * 300)
    held = client.chat("pricey", "hi", timeout=10)["error"]
    assert f"now ({'x' * 160}), so" in held  # the alert's message at most 160 characters


def test_improvement1_the_daily_served_check_keeps_the_guard(bench):
    """models.md improvement 1: `check_deprecations.py` sweeps `model:` alerts it no longer finds, but the guard's
    `model:paid:` one is the price watch's to clear: the model stays held the day after."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([*paths.module_command("scripts.check_deprecations")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert alerts.active()["model:paid:pricey-v1"]["kind"] == "went paid"
    assert "free-tier guard holds" in client.chat("pricey", "hi", timeout=10)["error"]
