"""A populated data folder for the Benchmarks page's tests (issue 19), made the way a bench fills up: real runs.

`populate(up, gateway_base)` points the current data folder at the local upstream `up` (scripted with MODELS), writes a
small suite of TASKS (one per family, bug/control pairs), then runs `suite/run.py` and `perf/run.py` as a
user types them, asks a collection through the real gateway and judges its seats with `POST /bench/verdict`.
Nothing is hand-written into the evidence files: the suite notes, saved answers, perf history and offload
log are what the runners and the gateway wrote.

What each scripted model does (so a test can predict every figure):
- `sage` answers every task right (finds both bugs of the hand-built task, the right FAULT lines, NO FAULT on
  controls, the right verdicts);
- `fair` finds one of the hand-built findings, the function-level bug, misses the whole-file bug (NO FAULT),
  raises a false alarm on the real-bug control, and gets both claims right;
- `bold` answers `FAULT: line 2` to every code task (wrong line on bugs, false alarm on controls),
  `VERDICT: TRUE` to every claim and asserts the hand-built task's trap;
- `mute` refuses everything (non-answers: no opportunity, a non-score in the heat grid);
- `down` (perf only) is rate limited: its probes fail for capacity.
"""

import json
import os
import shutil
import subprocess
import urllib.request

import pytest

from conftest import running_gateway
from benchwarmers.core import fileio, paths
from benchwarmers.demo import demo

HAND, CLAIM_F, CLAIM_T = "TASK-HAND", "TASK-CLAIM-FALSE", "TASK-CLAIM-TRUE"
PAIRS = {"seeded-alpha": ("TASK-SA-BUG", "TASK-SA-CONTROL", "fault: line 4"),
         "seeded-hard-beta": ("TASK-SB-BUG", "TASK-SB-CONTROL", "fault: line 10 or 11"),
         "rebench-gamma": ("TASK-RG-BUG", "TASK-RG-CONTROL", "fault: line 7")}
TRAP = "the cache is thread-safe"


def _bug_key(label):
    lines = "|".join(d for d in label.split() if d.isdigit())
    return [{"regex": rf"^\W*fault:\s*line\s*(?:{lines})\b", "label": label}]


def _tasks():
    tasks = {
        "hand-cache-review": {"prompt": f"{HAND}: review the cache", "min_answer_chars": 20,
                              "must_find": [{"any_of": ["stale entry"], "label": "stale entry"},
                                            {"any_of": ["unbounded growth"], "label": "unbounded growth"}],
                              "must_not_claim": [TRAP]},
        "claim-cache-false": {"prompt": f"{CLAIM_F}: hypothesis", "shape": "claim", "score_in": "first_line",
                              "min_answer_chars": 10, "must_find": [{"any_of": ["verdict: false"]}],
                              "must_not_claim": ["verdict: true"]},
        "claim-cache-true": {"prompt": f"{CLAIM_T}: hypothesis", "shape": "claim", "score_in": "first_line",
                             "min_answer_chars": 10, "must_find": [{"any_of": ["verdict: true"]}],
                             "must_not_claim": ["verdict: false"]},
    }
    for name, (bug, control, label) in PAIRS.items():
        shape = "rebench" if name.startswith("rebench-") else "seeded"
        common = {"shape": shape, "score_in": "first_line", "min_answer_chars": 8}
        tasks[f"{name}-bug"] = {**common, "prompt": f"{bug}: find the fault", "must_find": _bug_key(label),
                                "must_not_claim": ["no fault"]}
        tasks[f"{name}-control"] = {**common, "prompt": f"{control}: find the fault",
                                    "must_find": [{"any_of": ["no fault"]}],
                                    "must_not_claim": [{"regex": r"^\W*fault:\s*line", "label": "fault: line"}]}
    return tasks


SAGE = {HAND: "There is a stale entry after update and unbounded growth of the dict.",
        CLAIM_F: "VERDICT: FALSE\nThe code says otherwise.", CLAIM_T: "VERDICT: TRUE\nAs the code says.",
        "TASK-SA-BUG": "FAULT: line 4\nflipped", "TASK-SB-BUG": "FAULT: line 11\nflipped",
        "TASK-RG-BUG": "FAULT: line 7\nflipped", "TASK-SA-CONTROL": "NO FAULT\nfine",
        "TASK-SB-CONTROL": "NO FAULT\nfine", "TASK-RG-CONTROL": "NO FAULT\nfine"}
FAIR = {HAND: "I see a stale entry after update; otherwise it is fine.",
        CLAIM_F: "VERDICT: FALSE\nNo.", CLAIM_T: "VERDICT: TRUE\nYes.",
        "TASK-SA-BUG": "FAULT: line 4\nflipped", "TASK-SB-BUG": "NO FAULT\nlooks right",
        "TASK-RG-BUG": "FAULT: line 7\nflipped", "TASK-SA-CONTROL": "NO FAULT\nfine",
        "TASK-SB-CONTROL": "NO FAULT\nfine", "TASK-RG-CONTROL": "FAULT: line 3\nsuspicious"}
BOLD = {HAND: f"Good news: {TRAP}, so nothing to fix here at all.", CLAIM_F: "VERDICT: TRUE\nSure.",
        CLAIM_T: "VERDICT: TRUE\nSure."}
MODELS = {
    "sage": {"replies": dict(SAGE), "latency": 0.05},
    "fair": {"replies": dict(FAIR), "latency": 0.2},
    "bold": {"replies": dict(BOLD), "answer": "FAULT: line 2\nThe loop is wrong.", "latency": 0.5},
    "mute": {"answer": "I can't help with that.", "latency": 0.01},
    "down": {"fail": "429", "retry_after": 0},
}
SUITE_MODELS = ("sage", "fair", "bold", "mute")
# one panel of bench/crew per entry, asked through the gateway: {alias: (useful, real claims, false claims)}
VERDICTS = [
    {"sage": (True, ["the cache misses on update"], []), "fair": (True, [], []),
     "bold": (False, [], ["x is a thread"])},
    {"sage": (True, [], []), "fair": (False, [], ["the lock is reentrant"]), "bold": (False, [], [])},
]


def write_tasks():
    for name, spec in _tasks().items():
        folder = paths.file("suite", "tasks", name)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "task.json").write_text(json.dumps({"title": name, **spec}), encoding="utf-8")


def run(script, *args):
    """A runner as a user types it; its output when it fails."""
    done = subprocess.run([*paths.module_command(script.removesuffix(".py").replace("/", ".")), *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"}, cwd=paths.CODE, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def post(base, path, body):
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def judge_panels(base):
    """Ask `bench/crew` once per VERDICTS entry through the gateway at `base`, then judge each seat."""
    demo.set_collection("crew", ["sage", "fair", "bold"], description="three reviewers")
    for verdicts in VERDICTS:
        post(base, "/v1/chat/completions", {"model": "bench/crew",
                                            "messages": [{"role": "user", "content": "Review: cache.get(k)"}]})
        panel = fileio.read_jsonl(paths.file("runs", "gateway", "calls.jsonl"))[-1]
        for seat in panel["seats"]:
            useful, real, false = verdicts[seat["alias"]]
            post(base, "/bench/verdict", {"call": seat["call"], "useful": useful, "real": real, "false": false})


def populate(up, gateway_base):
    """Fill the current data folder: tasks, a suite run, a perf run, two judged panels."""
    demo.register(up)
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 0}\n')
    write_tasks()
    run("suite/run.py", *[a for m in SUITE_MODELS for a in ("--model", m)], "--gap", "0", "--timeout", "20")
    run("perf/run.py", *[a for m in ("sage", "fair", "bold", "down") for a in ("--model", m)], "-n", "2",
        "--timeout", "10")
    judge_panels(gateway_base)


@pytest.fixture(scope="session")
def populated(tmp_path_factory):
    """`(folder, upstream)`: a data folder filled by real runs once per session (two modules read it); the
    upstream stays up meanwhile."""
    folder = tmp_path_factory.mktemp("populated") / "data"
    llm = tmp_path_factory.mktemp("populated-llm")
    with pytest.MonkeyPatch.context() as mp, demo.Upstream(models={k: dict(v) for k, v in MODELS.items()}) as up:
        mp.setenv("BENCHWARMERS_HOME", str(folder))
        mp.setenv("LLM_USER_PATH", str(llm))
        mp.setenv("BENCH_CLIENT", "builtin")
        paths.reload()
        with running_gateway() as srv:
            populate(up, f"http://127.0.0.1:{srv.server_address[1]}")
        paths.reload()
        yield folder, up
    paths.reload()


@pytest.fixture
def filled(home, populated, monkeypatch):
    """This test's data folder, a copy of the populated one; the upstream its endpoint points at."""
    shutil.copytree(populated[0], home, dirs_exist_ok=True)
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    paths.reload()
    return populated[1]
