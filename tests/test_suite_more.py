"""The suite's other generators and runners (suite-cli-mcp.md §2.7, §2.8): mined claim tasks, paced runs (the
real-bug importer's tests are in test_rebench.py). Scripts run as a user types them, in a temp data folder,
against real files."""

import json
import os
import re
import subprocess

from benchwarmers.core import paths
from benchwarmers.models import scoring
from benchwarmers.panel import offload
from benchwarmers.suite import tasks as suite_tasks

PANEL = "p20260101-120000-00000000deadbeef"
CODE_A = "def add(a, b):\n    return a - b\n"
PROMPT = f"Review these.\n===== FILE: pkg/calc.py =====\n{CODE_A}\n===== git diff b.py\n+x = 1\n===== ====="


def script(name, *args, timeout=60):
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([*paths.module_command("suite." + name.removesuffix(".py")), *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def log_panel(panel, prompt, collection="bench/core"):
    """One calls-log record as the gateway writes it (CLG-1), and its seats' unjudged offload lines."""
    log = paths.file("runs", "gateway", "calls.jsonl")
    log.parent.mkdir(parents=True, exist_ok=True)
    seats = [{"call": f"{panel}.member{i}", "seat": f"member {i}", "alias": name, "status": "ok", "answer": "..",
              "error": "", "seconds": 1.0} for i, name in ((1, "alpha"), (2, "beta"))]
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"panel": panel, "at": "2026-01-01T12:00:00+00:00", "model": collection,
                            "shape": "review", "prompt": prompt, "seats": seats}) + "\n")
    for seat in seats:
        offload.add(seat["alias"], f"review ({collection}, review)", call=seat["call"], status="ok", seconds=1.0)


def test_mn3_sections_recovered_from_the_prompt():
    from benchwarmers.suite import mine

    assert mine.sections(PROMPT) == [("pkg-calc.py", CODE_A), ("git-diff-b.py", "+x = 1\n"), ("part3.txt", "\n")]
    assert [n for n, _ in mine.sections("===== a.py\n1\n===== a.py =====\n2\n")] == ["a.py", "a-2.py"]
    assert mine.sections("no headers here") == []


def test_mn_a_panel_mined_listed_and_scored(home):
    log_panel(PANEL, PROMPT)
    with open(paths.file("runs", "gateway", "calls.jsonl"), "a", encoding="utf-8") as f:
        f.write("not json\n")
    offload.verdict(f"{PANEL}.member1", True, real=["add subtracts its arguments"],
                    false=["add returns a string"])
    offload.verdict(f"{PANEL}.member2", False, real=["ADD subtracts its arguments"])  # a duplicate claim
    listed = script("mine.py")
    assert listed.returncode == 0, listed.stderr
    assert f"  {PANEL}: 2 claim(s)   python -m benchwarmers.suite.mine {PANEL}" in listed.stdout
    done = script("mine.py", PANEL)
    assert done.returncode == 0, done.stderr
    stem = PANEL[1:]
    assert f"mined-{stem}-1  TRUE " in done.stdout and f"mined-{stem}-2  FALSE" in done.stdout
    loaded = {t["id"]: t for t in suite_tasks.load()}
    true, false = loaded[f"mined-{stem}-1"], loaded[f"mined-{stem}-2"]
    assert true["draft"] and true["shape"] == "claim" and true["mined_from"] == f"{PANEL}.member1"
    assert true["must_find"] == [{"any_of": ["verdict: true"]}] and true["must_not_claim"] == ["verdict: false"]
    assert false["must_find"] == [{"any_of": ["verdict: false"]}] and false["must_not_claim"] == ["verdict: true"]
    assert "(model bench/core)" in true["why"] and "TRUE" in true["why"]
    assert (true["dir"] / "fixtures" / "pkg-calc.py").read_text() == CODE_A
    prompt = suite_tasks.prompt(true)  # repo "fixtures": the frozen copies are attached
    assert "===== FILE: snapshot/pkg-calc.py =====\n" + CODE_A in prompt
    assert "VERDICT: TRUE" in prompt and "alpha" not in prompt and "add subtracts its arguments" in prompt
    assert scoring.score(false, "VERDICT: FALSE\nit returns a - b")["found"] == 1
    assert scoring.score(false, "VERDICT: TRUE\nno")["invented"] == ["verdict: true"]
    assert "Nothing to mine" in script("mine.py").stdout  # MN-2: mined panels are not listed
    again = script("mine.py", PANEL)
    assert again.returncode == 1 and "is mined already" in again.stderr and "--force" in again.stderr
    assert script("mine.py", PANEL, "--force").returncode == 0


def test_mn5_mn8_refusals_and_the_size_note(home):
    unknown = script("mine.py", "pnope")
    assert unknown.returncode == 1 and "no panel 'pnope'" in unknown.stderr
    assert str(paths.file("runs", "gateway", "calls.jsonl")) in unknown.stderr
    log_panel("pbare", "just a question, no files")
    assert "nothing can be frozen" in script("mine.py", "pbare").stderr
    log_panel("pnoverdict", PROMPT)
    assert "no verdict with claims" in script("mine.py", "pnoverdict").stderr
    log_panel("pbig", "===== big.py\n" + "x = 1\n" * 8000)
    offload.verdict("pbig.member1", True, false=["x is 2"])
    big = script("mine.py", "pbig")
    assert big.returncode == 0 and "mined-big-1  FALSE" in big.stdout and "trim them" in big.stdout


CAPACITY = "Provider returned error: ResourceExhausted, try again in a while please."


def test_pc_a_paced_run_rests_the_rate_limited_model(home, monkeypatch):
    import time

    from benchwarmers.models import alerts
    from benchwarmers.demo import demo

    for name, key in (("seeded-hard-a", "BUG-A"), ("seeded-hard-b", "BUG-B"), ("seeded-other", "BUG-C")):
        folder = paths.file("suite", "tasks", name)
        folder.mkdir(parents=True)
        (folder / "task.json").write_text(json.dumps({
            "title": name, "prompt": f"{key}: find the fault", "shape": "seeded", "score_in": "first_line",
            "min_answer_chars": 8, "must_find": [{"regex": r"^\W*fault:\s*line\s*3\b", "label": "fault: line 3"}],
            "must_not_claim": ["no fault"]}))
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    models = {"finder": {"answer": "FAULT: line 3\nflipped"}, "busy": {"answer": CAPACITY},
              "doomed": {"answer": "NO FAULT\nfine"}, "adhoc": {"answer": "NO FAULT\nfine"}}
    with demo.Upstream(models=models) as up:
        demo.register(up)
        paths.file("config", "model-roles.json").write_text(json.dumps({"ad_hoc": ["adhoc"]}))
        alerts.raise_alert("model:doomed", "retiring", "doomed is going away", alias="doomed")
        task_a = next(t for t in suite_tasks.load() if t["id"] == "seeded-hard-a")
        suite_tasks.save(task_a, "finder", "FAULT: line 3\nalready answered")
        dry = script("pace.py", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert "queue 3 call(s), 2 model(s), gap 120s, about 0.1 h; roster: finder, busy" in dry.stdout
        assert "seeded-hard-a  busy" in dry.stdout and "seeded-other" not in dry.stdout
        assert not list(paths.file("runs").glob("pace-*.log"))
        env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
        child = subprocess.Popen([*paths.module_command("suite.pace"), "--gap", "0", "--rest", "1",
                                  "--timeout", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=env)
        deadline = time.monotonic() + 20
        logs = []
        while time.monotonic() < deadline and not any("rate-limited" in p.read_text() for p in logs):
            time.sleep(0.1)
            logs = list(paths.file("runs").glob("pace-*.log"))
        up.set_model("busy", answer="FAULT: line 3\nnow answering")  # the rest ends, the pair is asked again
        out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert "rate-limited seeded-hard-a busy: resting 1s, requeued" in out
    assert lines[-1].endswith("queue empty") and "done seeded-hard-b finder (answered)" in out
    assert lines == logs[0].read_text().splitlines()
    loaded = {t["id"]: t for t in suite_tasks.load()}
    for task in ("seeded-hard-a", "seeded-hard-b"):
        assert suite_tasks.saved(loaded[task], "busy").startswith("FAULT: line 3")
    assert suite_tasks.saved(loaded["seeded-hard-a"], "finder") == "FAULT: line 3\nalready answered"
    assert suite_tasks.saved(loaded["seeded-hard-b"], "doomed") is None
    assert suite_tasks.saved(loaded["seeded-other"], "finder") is None


def test_mn7_the_question_names_no_model_and_points_at_no_line():
    """MN-7: the claim is a hypothesis; the wording around it neither names a model nor says where to look."""
    from benchwarmers.suite import mine

    claim = "add subtracts its arguments"
    asked = mine.question(claim)
    assert f"Claim (a hypothesis to check, not a fact): {claim}" in asked
    assert not re.search(r"\d", asked.replace(claim, ""))  # no line number, nor any other digit, of our own
    assert "bench/" not in asked and "VERDICT: TRUE" in asked and "VERDICT: FALSE" in asked
    assert asked.isascii()
