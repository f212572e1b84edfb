"""The capability probe, `metrics/admin/probe_caps.py` (models.md §19, PROBE-1..3, LRN-9), against the local upstream:
scripted models that call a tool, reason, answer under another name, or refuse with a 429. Run as a user types
it, in process for the roster's corners, and as the scheduler's weekly `capabilities` job (suite-cli-mcp.md §4)."""

import datetime
import json
import os
import subprocess

import pytest

from benchwarmers.core import fileio, keys, paths
from benchwarmers.models import catalog, learn, registry
from benchwarmers.demo import demo
from benchwarmers.admin import probe_caps, scheduler

KEY = "sk-probe-test-0123456789"
GET_TIME = [[{"name": "get_time", "arguments": {"city": "Paris"}}]]
MODELS = {
    "caller": {"tool_calls": GET_TIME, "answer": "63", "tools": False},  # its listing says no tools; it calls one
    "thinker": {"reasoning": "Nine sevens: 63.", "answer": "63"},
    "musing": {"answer": "<think>nine times seven</think>63"},
    "swapper": {"answer": "63", "serves_as": "other-vendor/another-model"},
    "busy": {"fail": "429"},
    "plain": {"answer": "63"},
}


@pytest.fixture
def up(home):
    with demo.Upstream(models={name: dict(spec) for name, spec in MODELS.items()}, key=KEY) as server:
        demo.register(server, key="demo")
        keys.set_key("demo", KEY)
        yield server


def probe_cli(*args):
    """`python -m benchwarmers.admin.probe_caps ...` as typed."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([*paths.module_command("admin.probe_caps"), *args], capture_output=True,
                          text=True, env=env, cwd=paths.CODE, timeout=60)


def lines_of(out):
    return {line.split()[0]: " ".join(line.split()[1:]) for line in out.splitlines() if line.strip()}


def chat_posts(up):
    return [r for r in up.requests if r["method"] == "POST" and r["path"] == "/v1/chat/completions"]


def test_probe1_probe2_probe3_each_model_read_and_only_positives_kept(up):
    done = probe_cli("--gap", "0")
    assert done.returncode == 0, done.stderr
    said = lines_of(done.stdout)
    assert said["caller"] == "tools: yes reasoning: not seen"
    assert said["thinker"] == "tools: not seen reasoning: seen"
    assert said["musing"] == "tools: not seen reasoning: seen"  # `<think>` in the content counts
    assert said["swapper"] == "tools: not seen reasoning: not seen served as other-vendor/another-model"
    assert said["busy"] == "tools: HTTP 429 (unknown) reasoning: skipped (cooling down)"
    assert said["plain"] == "tools: not seen reasoning: not seen"
    learned = fileio.read_json(paths.file("config", "model-learned.json"))
    assert learned["caller"]["capabilities"]["tools"]["value"] is True
    assert learned["caller"]["capabilities"]["tools"]["evidence"].startswith("called get_time(")
    assert set(learned["caller"]["capabilities"]) == {"tools"}
    assert set(learned["thinker"]["capabilities"]) == {"reasoning"}
    assert learned["thinker"]["capabilities"]["reasoning"]["evidence"] == "Nine sevens: 63."
    assert learned["swapper"]["served_as"]["requested"] == "swapper"
    assert learned["swapper"]["served_as"]["served"] == "other-vendor/another-model"
    # LRN-9: what was not seen, or failed, is never written down as "cannot"
    assert "plain" not in learned and "capabilities" not in learned.get("busy", {})
    assert "capabilities" not in learned["swapper"]
    cooling = learn.cooldowns()["busy"]  # PROBE-3: the 429 went to learn.record as `capability probe`
    assert cooling["where"] == "capability probe" and cooling["why"].startswith("429 ")
    # PROBE-2: straight to the endpoint's chat completions, not streamed, the key as a Bearer header
    posts = chat_posts(up)
    assert len(posts) == 2 * 5 + 1  # busy's second question is not asked
    for post in posts:
        assert post["headers"]["authorization"] == f"Bearer {KEY}" and "stream" not in post["body"]
    tools_asks = [p["body"] for p in posts if "tools" in p["body"]]
    assert {b["max_tokens"] for b in tools_asks} == {1024} and {b["tool_choice"] for b in tools_asks} == {"auto"}
    assert [t["function"]["name"] for t in tools_asks[0]["tools"]] == ["get_time"]
    thinking = [p["body"] for p in posts if "tools" not in p["body"]]
    assert {b["max_tokens"] for b in thinking} == {2048}
    assert thinking[0]["messages"] == [{"role": "user", "content": "What is 9*7? Reply with the number."}]
    assert KEY not in done.stdout + done.stderr + paths.file("config", "model-learned.json").read_text()


def test_probe_cat1_a_tool_call_seen_reaches_the_catalog(up):
    catalog.warm(refresh=True)
    assert catalog.info("caller")["tools"] is False  # its listing says it cannot
    probe_cli("--gap", "0", "--model", "caller")
    catalog.warm(refresh=True)
    found = catalog.info("caller")
    assert found["tools"] is True and found["sources"]["tools"] == f"probe {datetime.date.today().isoformat()}"


def test_probe1_dry_run_calls_nothing_and_writes_nothing(up):
    done = probe_cli("--dry-run")
    assert done.returncode == 0, done.stderr
    said = lines_of(done.stdout)
    assert said["caller"] == f"would ask caller at {up.base_url}/chat/completions: tools, reasoning"
    assert set(said) == set(MODELS)
    assert up.requests == [] and not paths.file("config", "model-learned.json").exists()
    assert not paths.file("runs", "cooldowns.json").exists()


def run_main(capsys, *argv):
    waits = []
    assert probe_caps.main(list(argv), wait=waits.append) == 0
    return lines_of(capsys.readouterr().out), waits


def test_probe1_ad_hoc_and_cooling_skipped_unless_named(up, capsys):
    paths.file("config", "model-roles.json").write_text(json.dumps({"ad_hoc": ["caller"]}))
    learn.cool("thinker", 600, "429 Rate limit exceeded", "gateway")
    fileio.update(paths.file("config", "endpoints.json"),
                  lambda d: d.__setitem__("claude", {"base": up.url("anthropic"), "api": "anthropic", "key": "demo"}))
    registry.add_registration("native", "plain", "claude")
    fileio.update(paths.file("config", "endpoints.json"),
                  lambda d: d.__setitem__("locked", {"base": up.base_url, "key": "unset"}))
    registry.add_registration("keyless", "plain", "locked")
    for alias in ("musing", "swapper", "busy", "plain"):
        registry.remove_registration(alias)
    said, waits = run_main(capsys, "--gap", "5")
    assert said["caller"] == "skipped: ad hoc (name it with --model to probe it)"
    assert said["thinker"].startswith("skipped: cooling down until ")
    # improvement 5: a native endpoint is not asked chat completions; a missing key sends nothing
    assert said["native"] == "skipped: claude speaks the anthropic API; the probe asks chat completions only"
    assert said["keyless"] == "skipped: no key named 'unset' is set (llm keys set unset)"
    assert said["nothing"] == "to probe" and chat_posts(up) == [] and waits == []
    said, waits = run_main(capsys, "--model", "caller", "--model", "thinker", "--gap", "5")
    assert said == {"caller": "tools: yes reasoning: not seen", "thinker": "tools: not seen reasoning: seen"}
    assert waits == [5, 5, 5]  # PROBE-1: `gap` between a model's two calls and between models
    assert len(chat_posts(up)) == 4


def test_probe1_a_model_not_registered_is_refused(up):
    done = probe_cli("--model", "nobody")
    assert done.returncode == 1 and "not probed: nobody is not registered on a known endpoint" in done.stderr
    assert up.requests == []
    bad = probe_cli("--gap", "-1")
    assert bad.returncode == 2 and "--gap: 0 or more seconds" in bad.stderr


def test_sch4_the_weekly_capabilities_job_runs_the_probe(up, monkeypatch):
    """SCH-4 with §4's `capabilities` job: `metrics/admin/probe_caps.py --gap 30` runs as the scheduler's child and
    reaches the upstream. Only the 429 model is registered: its second question is skipped, so no gap is waited."""
    for alias in set(MODELS) - {"busy"}:
        registry.remove_registration(alias)
    assert scheduler.command("capabilities") == ["-m", "benchwarmers.admin.probe_caps", "--gap", "30"]
    scheduler.Scheduler().run_job("capabilities", "07:00")
    log = paths.file("runs", "scheduler.log").read_text(encoding="utf-8")
    assert "ran capabilities (due 07:00): exit 0 in " in log
    assert [r["model"] for r in chat_posts(up)] == ["busy"]
    assert learn.cooldowns()["busy"]["where"] == "capability probe"


def test_probe3_an_unreadable_reply_or_a_closed_port_is_unknown_and_not_recorded(up, capsys):
    """A reply that is no chat completion (a 200 carrying an error) and an endpoint that refuses connections say
    nothing of the model: `unknown (<why>)`, nothing learned, no rest."""
    import socket

    up.set_model("plain", fail="error200")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    fileio.update(paths.file("config", "endpoints.json"),
                  lambda d: d.__setitem__("gone", {"base": f"http://127.0.0.1:{closed}/v1", "key": "demo"}))
    registry.add_registration("away", "plain", "gone")
    said, _ = run_main(capsys, "--model", "plain", "--model", "away", "--gap", "0")
    assert said == {"plain": "tools: unknown (ValueError) reasoning: unknown (ValueError)",
                    "away": "tools: unknown (ConnectionRefusedError) reasoning: unknown (ConnectionRefusedError)"}
    assert learn.learned("plain") == {} and learn.learned("away") == {} and learn.cooldowns() == {}
