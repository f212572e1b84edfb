"""Alerts made to really happen (models.md §16 AL-1..3; suite-cli-mcp.md §3.4 DP-6, §3.5 AR-6): every kind
`scripts/check_deprecations.py` and `scripts/auto_retire.py` raise, run as a user types them against the local
upstream, then swept once the trouble is gone; transient trouble raising none; concurrent writers losing none.
AL-1's basics and AL-6's listing are in tests/test_scripts.py; AL-4 and AL-5 belong to the catalog refresh and
the client."""

import datetime
import json
import os
import subprocess
import threading

from benchwarmers.core import fileio, paths
from benchwarmers.models import alerts, registry
from benchwarmers.demo import demo

TODAY = datetime.date.today()


def script(name, *args):
    """A maintenance script as typed: `python -m benchwarmers.scripts.NAME`."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([*paths.module_command("scripts." + name.removesuffix(".py")), *args], capture_output=True,
                          text=True, env=env, timeout=60)


def perf(*rows):
    """Perf rows `(alias, days ago, answered, failure, detail)` as `perf/run.py` appends them."""
    where = paths.file("perf", "history.csv")
    where.parent.mkdir(parents=True, exist_ok=True)
    lines = [] if where.exists() else ["timestamp,model,prompt,n,answered,failure,detail"]
    lines += [f"{TODAY - datetime.timedelta(days=ago)}T05:00:00+00:00,{alias},tiny,1,{int(ok)},{failure},{detail}"
              for alias, ago, ok, failure, detail in rows]
    with open(where, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def suite_answer(alias):
    """A real answer saved by the suite today (AR-1's evidence of a model answering after its perf row)."""
    where = paths.file("suite", "tasks", "t1", "output", f"{alias}.md")
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text("FAULT: line 3\nThe comparison is flipped, so the loop stops one item early.\n")


def active():
    return alerts.active()


def posts(up):
    return [r for r in up.requests if r["method"] == "POST"]


def test_dp6_structural_paywalled_entitlement_unclassified_raised_then_swept(home):
    """Each model failed this morning's perf probe and then answered the suite: nothing counts down (AR-2's floor
    is today), so each gets its per-kind alert (DP-5, DP-6) with its kind (AL-2) and key (AL-3)."""
    models = {name: {"answer": "ready"} for name in ("s", "p", "e", "o")}
    with demo.Upstream(models=models) as up:
        demo.register(up)
        perf(("s", 0, False, "structural", "Model not found"), ("p", 0, False, "paywalled", "use this slug instead"),
             ("e", 0, False, "entitlement", "not authorized"), ("o", 0, False, "other", "strange"))
        for alias in models:
            suite_answer(alias)
        done = script("check_deprecations.py")
        raised = active()
        alerts.raise_alert("model:paid:s", "went paid", "s is listed with a price now", alias="s")
        perf(*[(alias, 0, True, "", "") for alias in models])  # tomorrow's probe, in effect: all answer
        again = script("check_deprecations.py")
    assert done.returncode == 1, done.stdout + done.stderr  # DP-8: structural and paywalled are problems
    assert "Listed but failing structurally (no model behind the name):\n  s (s)" in done.stdout
    assert "Served but not permitted for this account (info):\n  e (e)" in done.stdout
    assert "Unrecognised failure (info):\n  o (o)" in done.stdout
    assert {key: (a["kind"], a["alias"]) for key, a in raised.items()} == {
        "model:structural:s": ("retired", "s"), "model:paywalled:p": ("retired", "p"),
        "model:entitlement:e": ("plan", "e"), "model:unclassified:o": ("registration", "o")}
    assert raised["model:entitlement:e"]["action"].startswith("keep it and watch")
    assert "metrics/models/scoring.py" in raised["model:unclassified:o"]["action"]
    assert all(a["first_seen"] == a["last_seen"] == TODAY.isoformat() for a in raised.values())
    assert posts(up) == []  # nothing was confirmed: nothing counts down
    assert again.returncode == 0, again.stdout + again.stderr
    assert list(active()) == ["model:paid:s"]  # DP-6 sweeps every model: alert not raised this run, except the
    # went-paid guard, which only the catalog refresh lifts (models.md improvement 1)


def test_ar6_dp6_a_connection_all_down_is_held_with_one_alert(home):
    """AR-4 through the script: both models on `groq` fail with entitlement today, so neither is confirmed nor
    retired; one `connection:held:` alert names them (AR-6), each keeps its `plan` alert (DP-6). When one answers
    again the hold is swept and the other is confirmed with one call."""
    with demo.Upstream(models={"a": {"answer": "ready"}, "b": {"answer": "ready"}}) as up:
        demo.register(up)
        paths.file("config", "provider-tags.json").write_text(json.dumps({"a": "groq", "b": "groq/meta"}))
        perf(("a", 0, False, "entitlement", "not authorized"), ("b", 0, False, "entitlement", "not authorized"))
        done = script("check_deprecations.py")
        raised = active()
        assert posts(up) == []
        perf(("a", 0, True, "", ""))
        again = script("check_deprecations.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  HELD on groq: every model on it is down at once" in done.stdout and "not retiring a, b" in done.stdout
    held = raised["connection:held:groq"]
    assert held["kind"] == "connection" and held["aliases"] == ["a", "b"] and "every model on groq" in held["message"]
    assert raised["model:entitlement:a"]["kind"] == raised["model:entitlement:b"]["kind"] == "plan"
    assert sorted(raised) == ["connection:held:groq", "model:entitlement:a", "model:entitlement:b"]
    assert [r["model"] for r in posts(up)] == ["b"]  # the confirmation call; b answered it
    assert "  b retires in 1d unless it answers — failed the 5am probe, answered the confirmation call" in again.stdout
    assert sorted(active()) == ["model:pending:b"]  # held swept (AR-6); b counting down has no plan alert (DP-6)


def test_dp6_gone_on_an_open_webui_hub_says_so(home):
    """A model the hub stopped serving 3 days ago whose retirement cannot be done (two registry blocks for one
    alias, a hand edit): it is not counting down, so it gets `model:gone:` (kind retired) whose action points at
    Open WebUI (DP-6)."""
    with demo.Upstream(models={"keep": {"answer": "ready"}, "old": {"fail": "404"}}) as up:
        fileio.write_atomic(paths.file("config", "endpoints.json"), json.dumps(
            {"hub": {"base": f"http://127.0.0.1:{up.port}/api", "kind": "hub", "hub": "openwebui", "default": True}}))
        registry.add_registration("keep", "keep", "hub")
        registry.add_registration("twice", "old", "hub")
        yaml = paths.file("config", "extra-openai-models.yaml")
        text = yaml.read_text(encoding="utf-8")
        yaml.write_text(text + text[text.index("\n- model_id: twice"):], encoding="utf-8")
        four_days_ago, three_days_ago = ((TODAY - datetime.timedelta(days=n)).isoformat() for n in (4, 3))
        fileio.write_atomic(paths.file("config", "served-snapshot.json"), json.dumps(  # as the earlier checks left it
            {"updated": three_days_ago, "last_seen": {"keep": three_days_ago, "old": four_days_ago},
             "first_missing": {"old": three_days_ago}}))
        done = script("check_deprecations.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "  could not retire twice: expected one registry block for 'twice', found 2" in done.stdout
    gone = active()["model:gone:old"]
    assert gone["kind"] == "retired" and gone["alias"] == "twice"
    assert gone["message"] == "twice is registered but Open WebUI no longer serves old"
    assert gone["action"].endswith("(in Open WebUI: check the connection still lists it)")
    assert list(active()) == ["model:gone:old"]


def test_al2_one_rate_limit_or_timeout_is_no_alert_two_days_are(home):
    """AL-2: transient trouble (one 429, a timeout) is never an alert: the countdown is said, no `retiring`
    alert keeps the model from explorer seats. A second day of it is evidence, and raises one (AR-6)."""
    with demo.Upstream(models={"busy": {"answer": "ready"}, "slow": {"answer": "ready"}}) as up:
        demo.register(up)
        perf(("busy", 0, False, "capacity", "Error code: 429 - Rate limit exceeded"), ("slow", 0, False, "timeout", ""))
        done = script("check_deprecations.py")
        assert active() == {}
        retired_alone = script("auto_retire.py")
        assert active() == {}
        perf(("busy", 1, False, "capacity", "Error code: 429 - Rate limit exceeded"))  # it was refused yesterday too
        again = script("check_deprecations.py")
        assert posts(up) == []
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  busy retires in 7d unless it answers — capacity: Error code: 429 - Rate limit exceeded" in done.stdout
    assert "  slow retires in 7d unless it answers — timeout" in done.stdout
    assert "busy retires in 7d" in retired_alone.stdout
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(active()) == ["model:pending:busy"] and active()["model:pending:busy"]["kind"] == "retiring"


def test_al1_concurrent_writers_lose_no_alert(home):
    """AL-1: every write is one locked read-change-write: four threads raising 15 alerts each keep all 60, and a
    sweep racing the raises removes only its own prefix."""
    def raise_many(n):
        for i in range(15):
            alerts.raise_alert(f"model:pending:m{n}-{i}", "retiring", f"m{n}-{i} retires", alias=f"m{n}-{i}")

    alerts.raise_alert("connection:held:c", "connection", "c is down", aliases=["x"])
    threads = [threading.Thread(target=raise_many, args=(n,)) for n in range(4)]
    threads.append(threading.Thread(target=alerts.sweep, args=("connection:", set())))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    found = active()
    assert len(found) == 60 and all(key.startswith("model:pending:") for key in found)
    assert json.loads(alerts.path().read_text(encoding="utf-8")) == found  # sorted keys, one whole object
