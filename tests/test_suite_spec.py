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

from benchwarmers.core import fileio, keys, paths
from benchwarmers.models import learn
from benchwarmers.panel import offload
from benchwarmers.demo import demo
from benchwarmers.suite import run as suite_run
from benchwarmers.suite import tasks as suite_tasks

BUG = "SEEDED-BUG"
CONTEXT = "maximum context length is 8192 tokens"
FAULT = [{"regex": r"^\W*fault:\s*line\s*3\b", "label": "fault: line 3"}]
MODELS = {
    "finder": {"replies": {BUG: "FAULT: line 3\nThe comparison is flipped."}},
    "teller": {"echo_auth": 400},  # a provider error repeating the prompt: here, a stated context window
    "refuser": {"answer": "I can't help with that."},
    "short": {"answer": "NO FAULT"},  # 8 characters: a real answer to a task whose minimum is 8 (§13.3)
}


def make_task(name, **spec):
    folder = paths.file("suite", "tasks", name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder


def script(folder, name, *args):
    """A script as typed: `python -m benchwarmers.<folder>.<name>`."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([*paths.module_command(f"{folder}.{name.removesuffix('.py')}"), *args],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def scripted(home, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with demo.Upstream(models={k: dict(v) for k, v in MODELS.items()}) as up:
        demo.register(up)
        yield up


def test_su28_su33_su22_su29_errors_retried_learned_from_counted_and_the_run_shown(scripted, monkeypatch, capsys):
    """SU-28: only an `error` outcome is asked again, up to 3 times; a refusal never, nor a short answer the task
    allows (§13.3: the retry test uses the task's `min_answer_chars`). SU-33: the blocked text
    teaches the learning module (`suite`) and every call is counted as measurement in benchmark-calls.json.
    SU-22: an ad hoc model runs when named. The progress line (done/total, elapsed) and the summary table."""
    monkeypatch.setattr(suite_run, "RETRY_WAIT", 0)  # SU-28's 5 s x attempt, shrunk: the retries themselves are real
    paths.file("config", "model-roles.json").write_text(json.dumps({"ad_hoc": ["refuser"]}))
    make_task("one", title="the one", prompt=f"{BUG}: {CONTEXT}. Find the fault.", must_find=FAULT,
              score_in="first_line", min_answer_chars=8)
    status = suite_run.main(["--model", "finder", "--model", "teller", "--model", "refuser", "--model", "short",
                             "--gap", "0", "--timeout", "10"])
    out = capsys.readouterr().out
    assert status == 0
    asked = [r["model"] for r in scripted.requests if r["method"] == "POST"]
    assert asked == ["finder", "teller", "teller", "teller", "refuser", "short"]
    progress = [line for line in out.splitlines() if "done, " in line]
    assert [re.fullmatch(r"   \((\d)/4 done, 0m\d\ds\) asking (\w+)", line).groups() for line in progress] == \
        [("0", "finder"), ("1", "teller"), ("2", "refuser"), ("3", "short")]
    teller = next(line for line in out.splitlines() if line.split()[:2] == ["teller", "ERROR"])
    assert re.search(r"s x3  \(", teller)  # SU-29: ` xN` when asked more than once
    refuser = next(line for line in out.splitlines() if line.split()[:2] == ["refuser", "REFUSED"])
    assert " x" not in refuser
    table = out[out.index("\nmodel "):].splitlines()[1:6]
    assert [line.split() for line in table] == [
        ["model", "answered", "found", "invented", "non-answers"],
        ["finder", "1/1", "1/1", "0", "-"],
        ["teller", "0/1", "0/0", "0", "one", "error"],
        ["refuser", "0/1", "0/0", "0", "one", "refused"],
        ["short", "1/1", "0/1", "0", "-"]]
    window = learn.learned("teller")["context_window"]
    assert (window["value"], window["where"]) == (8192, "suite")
    counted = fileio.read_json(paths.file("metrics", "benchmark-calls.json"))
    assert counted == {"finder": 1, "teller": 3, "refuser": 1, "short": 1}
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


def offered(code, kind):
    from benchwarmers.suite import seed

    return sorted(e.new.strip() if e.new is not None else f"deleted {e.at + 1}"
                  for e in seed.candidates(code).get(kind, []))


def test_sd1_sd3_sd4_sd8_sd10_kinds_columns_exclusions_wording_and_fields():
    from benchwarmers.suite import seed

    assert seed.parse_kinds("", False) == ["compare", "boolop", "return-bool", "not"]  # SD-1: token kinds by default
    assert seed.parse_kinds("", True) == list(seed.KINDS)  # all ten with --hard, in the table's order
    # SD-3: ast columns are UTF-8 byte offsets; the edit lands on the right characters after non-ASCII text
    assert offered('def f(x):\n    s = "héllo wörld"; y = x[1:]\n    return y\n', "off-by-one") == \
        ['s = "héllo wörld"; y = x[2:]']
    # SD-4: what is never offered
    assert offered("def f(x):\n    return x + 0x1\n", "number") == []
    assert offered("def f(x):\n    return -1\n", "number") == ["return -2"]  # never `-0`
    assert offered("def f(a, b):\n    return max(a, b) + os.path.join(a, b)\n", "args") == \
        ["return max(a, b) + os.path.join(b, a)"]
    assert offered("def f(a, b):\n    return g(*a, b, a) + h(a,\n             b) + k(a, a)\n", "args") == []
    assert offered("def f(a):\n    log.info(a)\n    print(a)\n    time.sleep(1)\n    go(a); a += 1\n    return a\n",
                   "remove-call") == []
    assert offered("def f(a, n):\n    for i in range(n if a else 2):\n        pass\n    return a[:n or 1]\n",
                   "off-by-one") == []
    assert offered("def f(a):\n    return 'a < b' and a  # x < y\n", "compare") == []  # never in strings, comments
    # SD-8: one wording per run; hard mode names no kind; remove-call says how a gap is named
    easy = seed.wording(["compare", "boolop"], False)
    assert "one token changed" in easy and "a comparison operator, or and/or" in easy
    hard = seed.wording(list(seed.KINDS), True)
    assert "one line edited, or one line removed" in hard and "If there is a change, it is" not in hard
    assert "name the line just before or just after the gap" in hard
    # SD-10: both tasks' fields
    code = "def f(a):\n    if a > 1:\n        return a\n    return 0\n"
    edit = next(e for e in seed.candidates(code)["compare"])
    bug, control, change = seed.pair("pkg/m.py", "f", code, edit, "P\n", "fixtures", False,
                                     ("seeded-m-f-bug", "seeded-m-f-control"))
    for task in (bug, control):
        assert {k: task[k] for k in ("draft", "shape", "repo", "source", "score_in", "min_answer_chars")} == {
            "draft": True, "shape": "seeded", "repo": "fixtures", "source": "pkg/m.py::f", "score_in": "first_line",
            "min_answer_chars": 8}
    assert bug["kind"] == "compare" and bug["must_not_claim"] == ["no fault"] and change == "`if a > 1:` -> `if a >= 1:`"
    assert bug["must_find"] == [{"regex": r"^\W*fault:\s*line\s*(?:2)\b", "label": "fault: line 2"}]
    assert "line before: `def f(a):`" in bug["why"] and "removing draft" in bug["why"]
    assert control["must_find"] == [{"any_of": ["no fault"]}] and "changes line 2" in control["why"]
    assert control["must_not_claim"] == [{"regex": r"^\W*fault:\s*line", "label": "fault: line"}]


def test_su34_scripts_run_with_the_checkout_s_virtualenv_when_there_is_one(monkeypatch, tmp_path):
    """SU-34 (the scheduler's jobs, pace's children): CODE's `.venv` interpreter when present, else this one."""
    monkeypatch.setattr(paths, "CODE", tmp_path)  # a checkout of our own making: the real one has no .venv here
    assert paths.child_python() == sys.executable
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    assert paths.child_python() == str(venv / "python")


def test_improvement2_the_builtin_client_needs_no_llm_binary(scripted):
    """§13.2: with the built-in client a run needs no `llm` on PATH (a container without it)."""
    make_task("one", prompt=f"{BUG}: find the fault", must_find=FAULT, score_in="first_line", min_answer_chars=8)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PATH": "/nonexistent"}
    done = subprocess.run([*paths.module_command("suite.run"), "--model", "finder", "--gap", "0"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert suite_tasks.saved(suite_tasks.load()[0], "finder").startswith("FAULT: line 3")


def test_ar1_evidence_read_from_the_files_that_hold_it(home):
    """AR-1: perf rows followed through a rename, the last answer from a useful offload and a saved suite answer
    (a non-answer does not count), the restore date from the change log."""
    import datetime

    from benchwarmers.core import changes
    from benchwarmers.admin import retire

    today = datetime.date.today()
    paths.file("config", "alias-history.json").write_text(json.dumps({"old-name": "new-name"}))
    history = paths.file("perf", "history.csv")
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_text("timestamp,model,prompt,n,answered,failure,detail\n"
                       "2026-10-14T05:00:00+00:00,old-name,tiny,1,0,capacity,429\n"
                       "2026-10-13T05:00:00+00:00,new-name,tiny,1,1,,\n", encoding="utf-8")
    offload.add("helper", "review (bench/core, review)", useful=True)
    offload.add("unhelpful", "review (bench/core, review)", useful=False)
    folder = make_task("t", prompt="q")
    (folder / "output").mkdir()
    (folder / "output" / "suite-answer.md").write_text("A real answer, long enough to be one: the loop is fine.\n")
    (folder / "output" / "suite-error.md").write_text("Error: Error code: 500 - internal server error\n")
    changes.log("dashboard", "new-name", "restored", None, "restored")
    rows, last_answer, restored = retire.evidence()
    assert rows == [("new-name", datetime.date(2026, 10, 13), True, "", ""),
                    ("new-name", datetime.date(2026, 10, 14), False, "capacity", "429")]  # by date, renamed
    assert last_answer == {"helper": today, "suite-answer": today}
    assert restored == {"new-name": today}
