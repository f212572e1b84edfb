"""The review suite (suite-cli-mcp.md §2): tasks, the runner, saved answers, starter tasks.

Whole tasks run against the local upstream's scripted models (metrics/demo/demo.py `replies`): one finds
the seeded bug, one invents, one refuses, one times out. Runs are real processes, as a user types them.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from benchwarmers.core import paths
from benchwarmers.models import history, scoring
from benchwarmers.demo import demo
from benchwarmers.suite import tasks as suite_tasks

BUG = "SEEDED-BUG"
CONTROL = "SEEDED-CONTROL"
SCRIPTED = {
    "finder": {"replies": {BUG: "FAULT: line 3\nThe comparison is flipped.", CONTROL: "NO FAULT\nAs written."},
               "latency": 0.01},
    "inventor": {"answer": "FAULT: line 2\nThe loop is wrong.", "latency": 0.01},
    "refuser": {"answer": "I can't help with that.", "latency": 0.01},
    "sleeper": {"fail": "slow", "delay": 30},
}
FAULT_KEY = [{"regex": r"^\W*fault:\s*line\s*(?:3|4)\b", "label": "fault: line 3 or 4"}]


def script(folder, name):
    """A runner as a user types it, `python -m benchwarmers.<folder>.<name>`: its argv."""
    return paths.module_command(f"{folder}.{name.removesuffix('.py')}")


def suite_run(*args, timeout=60):
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([*script("suite", "run.py"), *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=paths.CODE)


def make_task(name, **spec):
    folder = paths.file("suite", "tasks", name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder


def seeded_pair():
    make_task("seeded-demo-bug", title="seeded bug", prompt=f"{BUG}: find the fault", shape="seeded",
              score_in="first_line", min_answer_chars=8, must_find=FAULT_KEY, must_not_claim=["no fault"])
    make_task("seeded-demo-control", title="control", prompt=f"{CONTROL}: find the fault", shape="seeded",
              score_in="first_line", min_answer_chars=8, must_find=[{"any_of": ["no fault"]}],
              must_not_claim=[{"regex": r"^\W*fault:\s*line", "label": "fault: line"}])


@pytest.fixture
def scripted(home, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with demo.Upstream(models={k: dict(v) for k, v in SCRIPTED.items()}) as up:
        demo.register(up)
        yield up


def test_su30_su31_whole_tasks_scored_saved_and_reported(scripted):
    seeded_pair()
    done = suite_run("--model", "finder", "--model", "inventor", "--model", "refuser", "--model", "sleeper",
                     "--timeout", "1", "--gap", "0")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "## seeded-demo-bug — seeded bug" in out and "   1,0" not in out
    assert "(0/8 done, " in out and "(7/8 done, " in out  # SU-29 plus the progress line: done/total and elapsed
    tasks = {t["id"]: t for t in suite_tasks.load()}
    bug, control = tasks["seeded-demo-bug"], tasks["seeded-demo-control"]
    # SU-30: every result is saved, failures included
    assert suite_tasks.saved(bug, "finder").startswith("FAULT: line 3")
    assert suite_tasks.saved(bug, "refuser") == "I can't help with that.\n"
    assert suite_tasks.saved(control, "sleeper") == "<<TIMED OUT after 1s>>"
    assert scoring.score(bug, suite_tasks.saved(bug, "finder"))["found"] == 1
    inventing = scoring.score(control, suite_tasks.saved(control, "inventor"))
    assert inventing["found"] == 0 and inventing["invented"] == ["fault: line"]
    assert scoring.score(bug, suite_tasks.saved(bug, "inventor"))["found"] == 0  # the wrong line
    assert scoring.failure_class(suite_tasks.saved(bug, "refuser")) == "other"
    assert scoring.failure_class(suite_tasks.saved(bug, "sleeper")) == "timeout"
    # SU-29's lines
    assert any(line.split()[:2] == ["finder", "1/1"] for line in out.splitlines())
    assert any("inventor" in line and "INVENTED fault: line" in line for line in out.splitlines())
    assert any(line.split()[:2] == ["refuser", "REFUSED"] for line in out.splitlines())
    assert any(line.split()[:2] == ["sleeper", "TIMEOUT"] for line in out.splitlines())
    # the summary table, then the report (SU-31) appended
    summary = out[out.index("\nmodel "):]
    assert "finder" in summary and "2/2" in summary
    report = paths.file("runs", f"suite-{time.strftime('%Y-%m-%d')}.md")
    text = report.read_text(encoding="utf-8")
    assert f"written: {report}" in out
    assert "| seeded-demo-control | `inventor` | 0/1 | fault: line |" in text
    assert "| seeded-demo-bug | `sleeper` | timeout |" in text and "Non-answers" in text and "Missed:" in text
    # history reads the saved answers where the runner writes them; seeded shapes are kept out of recall
    assert history.suite_recall(str(paths.data())) == {}


def test_st_fresh_data_folder_next_against_the_demo_models(home, tmp_path, monkeypatch):
    """ST-3, IN-2: init copies the starter tasks; `suite/run.py --next` on the demo models gives a scored table."""
    folder = tmp_path / "fresh"
    made = subprocess.run([*script("scripts", "init.py"), str(folder)], capture_output=True,
                          text=True, env={**os.environ, "BENCHWARMERS_HOME": str(folder)})
    assert made.returncode == 0, made.stderr
    monkeypatch.setenv("BENCHWARMERS_HOME", str(folder))
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    paths.reload()
    shipped = sorted(p.name for p in suite_tasks.STARTER.iterdir())
    assert sorted(t["id"] for t in suite_tasks.load()) == shipped
    with demo.Upstream() as up:
        demo.register(up)
        done = suite_run("--next", "--timeout", "30", "--gap", "0")
    assert done.returncode == 0, done.stderr
    first = [m for m in demo.DEMO_MODELS][0]
    assert done.stdout.startswith(f"--next chose {first} (0/")
    table = done.stdout[done.stdout.index("\nmodel "):]
    assert first in table and "written: " in table
    assert all((folder / "suite" / "tasks" / t / "output" / f"{first}.md").exists() for t in shipped[:6])
    again = subprocess.run([*script("scripts", "init.py"), str(folder)], capture_output=True,
                           text=True, env={**os.environ, "BENCHWARMERS_HOME": str(folder)})
    assert "(0 starter file(s) copied" in again.stdout


def test_st1_starter_tasks_are_ours_balanced_and_keyed():
    """ST-1: claims about our own code with evidence in `why`, TRUE and FALSE balanced; every key reads."""
    specs = [json.loads((d / "task.json").read_text(encoding="utf-8")) for d in suite_tasks.STARTER.iterdir()]
    claims = [s for s in specs if s.get("shape") == "claim"]
    truths = [s["must_find"][0]["any_of"][0] for s in claims]
    assert abs(truths.count("verdict: true") - truths.count("verdict: false")) <= 1
    assert all(s.get("why") and not s.get("draft") for s in specs)
    assert not any(s.get("shape") == "rebench" for s in specs)  # ST-2: nothing dataset-derived ships
    for spec in specs:
        spec["dir"] = suite_tasks.STARTER / spec["id"]
        assert "===== FILE: " in suite_tasks.prompt(spec) or not spec.get("attach")


def test_su1_su2_su5_loading_selection_and_attachments(home, capsys):
    make_task("b-task", prompt="second", draft=True)
    make_task("a-task", id="alpha", prompt="first", attach=["src/x.py"], repo="mine")
    make_task("c-task", prompt="third", attach=["one/x.py", "two/x.py"], repo="fixtures")
    (paths.file("suite", "tasks", "c-task") / "fixtures").mkdir()
    (paths.file("suite", "tasks", "c-task") / "fixtures" / "x.py").write_text("x = 1\n")
    (paths.file("suite", "tasks", "broken")).mkdir()
    (paths.file("suite", "tasks", "broken") / "task.json").write_text("{nope")
    loaded = suite_tasks.load(warn=print)
    assert "skipped broken: task.json does not read" in capsys.readouterr().out
    assert [t["id"] for t in loaded] == ["alpha", "b-task", "c-task"]
    assert loaded[1]["title"] == "b-task"  # §13.12
    assert [t["id"] for t in suite_tasks.select(loaded)] == ["alpha", "c-task"]
    assert [t["id"] for t in suite_tasks.select(loaded, "b-task")] == ["b-task"]
    with pytest.raises(SystemExit, match="no task called 'zzz'"):
        suite_tasks.select(loaded, "zzz")
    with pytest.raises(suite_tasks.Unready, match="attachment not found: src/x.py .no repo 'mine'"):
        suite_tasks.prompt(loaded[0])
    with pytest.raises(suite_tasks.Unready, match="one/x.py and two/x.py both fall back"):
        suite_tasks.prompt(loaded[2])
    repo = paths.data() / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "x.py").write_bytes(b"print(1)\n\xff\n")
    paths.file("config", "repos.json").write_text(json.dumps({"mine": str(repo), "_note": "x", "bad": 3}))
    assert suite_tasks.repos() == {"mine": str(repo)}
    assert suite_tasks.prompt(loaded[0]) == "first\n\n===== FILE: src/x.py =====\nprint(1)\n\ufffd\n\n"


def test_su5_su27_dry_run_prints_prompts_and_skips_the_unready(home):
    make_task("ok", prompt="P" * 700)
    make_task("missing", prompt="q", attach=["gone.py"])
    done = suite_run("--dry-run")
    assert done.returncode == 0
    assert "=== ok (701 chars) ===\n" + "P" * 600 + "\n..." in done.stdout
    assert "skipped missing: attachment not found: gone.py" in done.stdout


def test_su24_su26_picking_tasks_and_models(scripted):
    for i in range(10):
        make_task(f"t{i}", prompt=f"task {i}")
    loaded = suite_tasks.load()
    for task in loaded[:4]:
        suite_tasks.save(task, "finder", "an answer long enough to count as one, surely.\n")
    assert [t["id"] for t in suite_tasks.pick_tasks(loaded, "finder")] == [f"t{i}" for i in range(4, 10)]
    assert [t["id"] for t in suite_tasks.pick_tasks(loaded, "inventor")][:1] == ["t0"]  # gaps are per model
    suite_tasks.save(loaded[4], "finder", "Error: Error code: 429 - Rate limit exceeded: free-models-per-day")
    suite_tasks.save(loaded[5], "finder", "<<TIMED OUT after 300s>>")
    picked = [t["id"] for t in suite_tasks.pick_tasks(loaded, "finder")]
    assert picked == ["t4", "t6", "t7", "t8", "t9"]
    for stamp, task in enumerate(loaded):
        suite_tasks.save(task, "refuser", "x")
        os.utime(suite_tasks.output_path(task, "refuser"), (1000 + (9 - stamp), 1000 + (9 - stamp)))
    assert [t["id"] for t in suite_tasks.pick_tasks(loaded, "refuser", 2)] == ["t9", "t8"]  # oldest first
    # SU-26: never-scored first, then incomplete before complete
    assert suite_tasks.next_model(loaded, ["finder", "sleeper"]) == "sleeper"
    assert suite_tasks.next_model(loaded, ["refuser", "finder"]) == "finder"
    assert suite_tasks.available_models() == ["finder", "inventor", "refuser", "sleeper"]


def test_su23_available_models_and_an_empty_data_folder(home, scripted):
    assert suite_tasks.available_models() == ["finder", "inventor", "refuser", "sleeper"]
    paths.file("config", "model-roles.json").write_text(json.dumps({"ad_hoc": ["refuser"]}))
    paths.file("perf", "history.csv").write_text("timestamp,model,prompt,answered\nx,inventor,tiny,0\n"
                                                 "x,finder,tiny,0\nx,finder,large,2\n")
    assert suite_tasks.available_models() == ["finder", "sleeper"]
    assert suite_tasks.available_models(include_ad_hoc=True) == ["finder", "refuser", "sleeper"]
    scripted.set_model("sleeper", fail="404")  # no longer listed
    assert suite_tasks.available_models() == ["finder"]


def test_su23_su26_nothing_registered(home):
    assert suite_tasks.available_models() == []
    make_task("t", prompt="q")
    done = suite_run("--next")
    assert done.returncode == 1 and "no paid model is registered" in done.stderr
    assert "no :free model is registered" in suite_run("--next-free").stderr
    assert "not registered: ghost" in suite_run("--model", "ghost").stderr


def test_su25_next_free_scores_one_free_model(home, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with demo.Upstream(models={"v/a:free": {"answer": "VERDICT: TRUE\nplainly so, from the code.", "latency": 0}},
                       ) as up:
        demo.register(up, aliases={"a-free": "v/a:free"})
        make_task("t", prompt="q", must_find=["verdict: true"])
        done = suite_run("--next-free", "--gap", "0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("--next-free chose a-free (0/1 tasks scored; 1 this run)")
    assert any(line.split()[:2] == ["a-free", "1/1"] for line in done.stdout.splitlines())


def test_su_ctrl_c_keeps_the_answers_saved_so_far(scripted):
    make_task("one", prompt=f"{BUG} here", must_find=FAULT_KEY, score_in="first_line", min_answer_chars=8)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    child = subprocess.Popen([*script("suite", "run.py"), "--model", "finder", "--model", "sleeper",
                              "--timeout", "60", "--gap", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=paths.CODE)
    seen = []
    for line in child.stdout:
        seen.append(line)
        if "asking sleeper" in line:
            break
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    rest, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "stopped: 1 answer(s) saved so far stay saved" in rest
    task = suite_tasks.load()[0]
    assert suite_tasks.saved(task, "finder").startswith("FAULT: line 3")
    assert suite_tasks.saved(task, "sleeper") is None
    assert "| one | `finder` | 1/1 |" in paths.file("runs", f"suite-{time.strftime('%Y-%m-%d')}.md").read_text()


def test_su28_su32_repeat_reports_the_spread(scripted):
    make_task("one", prompt=f"{BUG} here", must_find=FAULT_KEY, score_in="first_line", min_answer_chars=8)
    done = suite_run("--model", "finder", "--repeat", "2", "--gap", "0")
    assert done.returncode == 0, done.stderr
    assert any("finder" in line and "[1-1 over takes]" in line for line in done.stdout.splitlines())


def test_history_reads_the_runners_answers_for_routing(scripted):
    """SU-20/21 with metrics/models/history.py: a counted task's saved answer is the router's recall."""
    make_task("enum", prompt=f"{BUG} list", must_find=["fault: line 3", "flipped", "absent"])
    assert suite_run("--model", "finder", "--gap", "0").returncode == 0
    assert history.suite_recall(str(paths.data())) == {"finder": (2, 3, 1)}
