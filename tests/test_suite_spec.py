"""Statements of suite-cli-mcp.md §2-§3 no other test pinned (the audit of issue 18): the runner's retries, learning
and counting (SU-22, SU-28, SU-29, SU-33), its progress line and summary table, `--next` counting only the tasks a
run asks (§13.7), a panel logged twice (MN-1), the deprecation report's sections (DP-4, DP-7) and a listing that
never shows a key (LS-1). Against the local upstream's scripted models, in process where a constant must shrink."""

import json
import os
import re
import subprocess
import sys

import pytest

from metrics import demo, fileio, keys, learn, offload, paths
from suite import run as suite_run
from suite import tasks as suite_tasks

BUG = "SEEDED-BUG"
CONTEXT = "maximum context length is 8192 tokens"
FAULT = [{"regex": r"^\W*fault:\s*line\s*3\b", "label": "fault: line 3"}]
MODELS = {
    "finder": {"replies": {BUG: "FAULT: line 3\nThe comparison is flipped."}},
    "teller": {"echo_auth": 400},  # a provider error repeating the prompt: here, a stated context window
    "refuser": {"answer": "I can't help with that."},
}


def make_task(name, **spec):
    folder = paths.file("suite", "tasks", name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder


def script(folder, name, *args):
    """A script as typed in the checkout (PYTHONPATH: this checkout's modules)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": str(paths.CODE)}
    return subprocess.run([sys.executable, str(paths.CODE / folder / name), *args], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.fixture
def scripted(home, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with demo.Upstream(models={k: dict(v) for k, v in MODELS.items()}) as up:
        demo.register(up)
        yield up


def test_su28_su33_su22_su29_errors_retried_learned_from_counted_and_the_run_shown(scripted, monkeypatch, capsys):
    """SU-28: only an `error` outcome is asked again, up to 3 times; a refusal never. SU-33: the blocked text
    teaches the learning module (`suite`) and every call is counted as measurement in benchmark-calls.json.
    SU-22: an ad hoc model runs when named. The progress line (done/total, elapsed) and the summary table."""
    monkeypatch.setattr(suite_run, "RETRY_WAIT", 0)  # SU-28's 5 s x attempt, shrunk: the retries themselves are real
    paths.file("config", "model-roles.json").write_text(json.dumps({"ad_hoc": ["refuser"]}))
    make_task("one", title="the one", prompt=f"{BUG}: {CONTEXT}. Find the fault.", must_find=FAULT,
              score_in="first_line", min_answer_chars=8)
    status = suite_run.main(["--model", "finder", "--model", "teller", "--model", "refuser", "--gap", "0",
                             "--timeout", "10"])
    out = capsys.readouterr().out
    assert status == 0
    asked = [r["model"] for r in scripted.requests if r["method"] == "POST"]
    assert asked == ["finder", "teller", "teller", "teller", "refuser"]
    progress = [line for line in out.splitlines() if "done, " in line]
    assert [re.fullmatch(r"   \((\d)/3 done, 0m\d\ds\) asking (\w+)", line).groups() for line in progress] == \
        [("0", "finder"), ("1", "teller"), ("2", "refuser")]
    teller = next(line for line in out.splitlines() if line.split()[:2] == ["teller", "ERROR"])
    assert re.search(r"s x3  \(", teller)  # SU-29: ` xN` when asked more than once
    refuser = next(line for line in out.splitlines() if line.split()[:2] == ["refuser", "REFUSED"])
    assert " x" not in refuser
    table = out[out.index("\nmodel "):].splitlines()[1:5]
    assert [line.split() for line in table] == [
        ["model", "answered", "found", "invented", "non-answers"],
        ["finder", "1/1", "1/1", "0", "-"],
        ["teller", "0/1", "0/0", "0", "one", "error"],
        ["refuser", "0/1", "0/0", "0", "one", "refused"]]
    window = learn.learned("teller")["context_window"]
    assert (window["value"], window["where"]) == (8192, "suite")
    counted = fileio.read_json(paths.file("metrics", "benchmark-calls.json"))
    assert counted == {"finder": 1, "teller": 3, "refuser": 1}
    task = suite_tasks.load()[0]
    assert suite_tasks.saved(task, "teller").startswith("Error: Error code: 400")  # SU-30: the failure is saved
    suite_run.main(["--model", "finder", "--gap", "0"])
    assert fileio.read_json(paths.file("metrics", "benchmark-calls.json"))["finder"] == 2


def test_improvement7_next_counts_only_the_tasks_a_run_would_ask(home):
    """§13.7: a draft does not make every model incomplete. `a` answered the one non-draft task lately, `b` long
    ago (and the draft): both are complete, so `--next` takes `b`, the longer unscored."""
    make_task("t0", prompt="q")
    make_task("d", prompt="q", draft=True)
    loaded = suite_tasks.load()
    by_id = {t["id"]: t for t in loaded}
    for alias, tasks, stamp in (("a", ["t0"], 2000), ("b", ["t0", "d"], 1000)):
        for name in tasks:
            suite_tasks.save(by_id[name], alias, "an answer long enough to count as one, surely.\n")
            os.utime(suite_tasks.output_path(by_id[name], alias), (stamp, stamp))
    assert suite_tasks.next_model(suite_tasks.select(loaded), ["a", "b"]) == "b"


def log_panel(panel, prompt):
    """One calls-log record as the gateway writes it (CLG-1), and its seat's unjudged offload line."""
    where = paths.file("runs", "gateway", "calls.jsonl")
    where.parent.mkdir(parents=True, exist_ok=True)
    seat = {"call": f"{panel}.member1", "seat": "member 1", "alias": "alpha", "status": "ok", "answer": "..",
            "error": "", "seconds": 1.0}
    with open(where, "a", encoding="utf-8") as f:
        f.write(json.dumps({"panel": panel, "at": "2026-01-01T12:00:00+00:00", "model": "bench/core",
                            "shape": "review", "prompt": prompt, "seats": [seat]}) + "\n")
    offload.add("alpha", "review (bench/core, review)", call=seat["call"], status="ok", seconds=1.0)


def test_mn1_a_later_record_of_the_same_panel_wins(home):
    panel = "p20260101-120000-00000000cafef00d"
    log_panel(panel, "Review.\n===== FILE: a.py =====\nold = 1\n")
    log_panel(panel, "Review.\n===== FILE: a.py =====\nnew = 2\n")
    offload.verdict(f"{panel}.member1", True, real=["a sets new to 2"])
    done = script("suite", "mine.py", panel)
    assert done.returncode == 0, done.stderr
    task = {t["id"]: t for t in suite_tasks.load()}[f"mined-{panel[1:]}-1"]
    assert (task["dir"] / "fixtures" / "a.py").read_text() == "new = 2\n"


def test_dp4_dp7_new_models_reported_as_info_quiet_hides_them(home):
    """DP-4's `new` list and DP-7's sections: on the first check nothing is new; a model the endpoint lists
    later is `New since the last check (info)`, and `--quiet` prints only problems (here: none, so nothing)."""
    with demo.Upstream(models={"alpha": {"answer": "a"}}) as up:
        demo.register(up)
        first = script("scripts", "check_deprecations.py")
        up.set_model("fresh", answer="b")
        quiet = script("scripts", "check_deprecations.py", "--quiet")
        up.set_model("fresher", answer="c")
        loud = script("scripts", "check_deprecations.py")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "New since" not in first.stdout and "1 served, 1 registered, 0 served-but-unregistered" in first.stdout
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert "New since the last check (info):\n  fresher\n" in loud.stdout
    assert "3 served, 1 registered, 2 served-but-unregistered\nno registered model has gone missing" in loud.stdout


def test_ls1_a_listing_never_prints_the_key(home):
    secret = "sk-listing-test-0123456789abcdef"
    with demo.Upstream(models={"alpha": {"answer": "a"}}, key=secret) as up:
        demo.register(up, key="demo")
        keys.set_key("demo", secret)
        listed = script("scripts", "list_served.py")
        up.key = "another-key"  # now the endpoint refuses: the error names the endpoint, never the key
        refused = script("scripts", "list_served.py")
    assert listed.returncode == 0 and "[registered] alpha" in listed.stdout
    assert refused.returncode == 1 and "could not reach" in refused.stderr
    assert secret not in listed.stdout + listed.stderr + refused.stdout + refused.stderr
