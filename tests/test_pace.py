"""`suite/pace.py` under real faults (suite-cli-mcp.md §2.8 PC-3, PC-4, §13.8): a child run that crashes is logged as
failed and the loop goes on; a real SIGINT to the real process stops it cleanly, keeping every answer saved so far.
Its queue, rests and roster are in tests/test_suite_more.py."""

import json
import os
import signal
import subprocess

from benchwarmers.core import paths
from benchwarmers.demo import demo
from benchwarmers.suite import tasks as suite_tasks
from conftest import wait_for

FAULT = [{"regex": r"^\W*fault:\s*line\s*3\b", "label": "fault: line 3"}]


def make_tasks(*names):
    for name in names:
        folder = paths.file("suite", "tasks", name)
        folder.mkdir(parents=True)
        (folder / "task.json").write_text(json.dumps({
            "title": name, "prompt": f"{name.upper()}: find the fault", "shape": "seeded", "score_in": "first_line",
            "min_answer_chars": 8, "must_find": FAULT, "must_not_claim": ["no fault"]}))


def pace(*args):
    """`python -m benchwarmers.suite.pace ...` as typed."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "BENCH_CLIENT": "builtin"}
    return subprocess.Popen([*paths.module_command("suite.pace"), "--gap", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=paths.CODE)


def log_lines():
    found = list(paths.file("runs").glob("pace-*.log"))
    return found[0].read_text(encoding="utf-8").splitlines() if found else []


def children(pid):
    try:
        return [int(p) for p in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []


def test_pc4_a_crashed_child_is_logged_failed_and_the_loop_goes_on(home):
    """§13.8: a child that exits non-zero is `failed`, not done. The fault is real: a file stands where the task's
    `output/` folder must be, so `suite/run.py` cannot save its answer and dies."""
    make_tasks("seeded-hard-a", "seeded-hard-b")
    paths.file("suite", "tasks", "seeded-hard-a", "output").write_text("not a folder")
    with demo.Upstream(models={"finder": {"answer": "FAULT: line 3\nflipped"}}) as up:
        demo.register(up)
        child = pace()
        out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert lines[1].endswith("failed seeded-hard-a finder (suite/run.py exited 1); 1 left")
    assert lines[2].endswith("done seeded-hard-b finder (answered); 0 left")
    assert lines[-1].endswith("queue empty") and lines == log_lines()  # PC-3: printed and logged alike
    loaded = {t["id"]: t for t in suite_tasks.load()}
    assert suite_tasks.saved(loaded["seeded-hard-b"], "finder").startswith("FAULT: line 3")
    assert suite_tasks.saved(loaded["seeded-hard-a"], "finder") is None  # nothing pretends it was answered


def test_pc4_ctrl_c_stops_cleanly_keeping_every_answer_saved(home):
    """A real SIGINT to the real `python -m benchwarmers.suite.pace` while a slow model is being asked: the run stops at once
    (exit 130), the child asking is stopped with it, the log's last line says it stopped and what is left, and
    the answer saved before stays. Run again, it offers only what is left."""
    make_tasks("seeded-hard-a", "seeded-hard-b")
    models = {"finder": {"answer": "FAULT: line 3\nflipped"}, "sleeper": {"fail": "slow", "delay": 30}}
    with demo.Upstream(models=models) as up:
        demo.register(up)
        child = pace("--timeout", "60")
        assert wait_for(lambda: any(r["model"] == "sleeper" for r in up.requests)), child.stderr
        asking = children(child.pid)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
        dry = subprocess.run([*paths.module_command("suite.pace"), "--dry-run"], capture_output=True,
                             text=True, env={**os.environ}, cwd=paths.CODE)
    assert child.returncode == 130, err
    assert "Traceback" not in err
    assert "done seeded-hard-a finder (answered); 3 left" in out
    assert out.splitlines()[-1].endswith("stopped (3 left)") and log_lines()[-1].endswith("stopped (3 left)")
    assert asking and not any(os.path.exists(f"/proc/{pid}") for pid in asking)  # no child left asking
    loaded = {t["id"]: t for t in suite_tasks.load()}
    assert suite_tasks.saved(loaded["seeded-hard-a"], "finder").startswith("FAULT: line 3")
    assert suite_tasks.saved(loaded["seeded-hard-a"], "sleeper") is None
    assert "queue 3 call(s), 2 model(s)" in dry.stdout  # PC-4: restartable, the answered pair skipped
