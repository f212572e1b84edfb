"""The suite's other generators and runners (suite-cli-mcp.md §2.7–2.9): mined claim tasks, paced runs,
the real-bug importer. Scripts run as a user types them, in a temp data folder, against real files."""

import json
import os
import subprocess
import sys

from metrics import offload, paths, scoring
from suite import tasks as suite_tasks

PANEL = "p20260101-120000-00000000deadbeef"
CODE_A = "def add(a, b):\n    return a - b\n"
PROMPT = f"Review these.\n===== FILE: pkg/calc.py =====\n{CODE_A}\n===== git diff b.py\n+x = 1\n===== ====="


def script(name, *args, timeout=60):
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, str(paths.CODE / "suite" / name), *args], capture_output=True,
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
    from suite import mine

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
    assert f"  {PANEL}: 2 claim(s)   python suite/mine.py {PANEL}" in listed.stdout
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
