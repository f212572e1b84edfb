"""The confidently-wrong count (gateway.md §16.3 WRG-1..3, suite-cli-mcp.md SU-20) on crafted saved answers.

Tasks and answers are written where the suite keeps them (`suite/tasks/<id>/task.json`, `output/<alias>.md`),
offloads through `benchwarmers.panel.offload`, so the count reads what a run and a verdict leave behind.
"""

import json
import subprocess
import sys

from benchwarmers.core import fileio, paths
from benchwarmers.panel import offload, wrong

BUG_KEY = [{"regex": r"^\W*fault:\s*line\s*(?:10|11)\b", "label": "fault: line 10 or 11"}]
CONTROL_KEY = [{"any_of": ["no fault"]}]
SEEDED = {"shape": "seeded", "score_in": "first_line", "min_answer_chars": 8}
TASKS = {
    "seeded-x-bug": {**SEEDED, "must_find": BUG_KEY, "must_not_claim": ["no fault"]},
    "seeded-x-control": {**SEEDED, "must_find": CONTROL_KEY,
                         "must_not_claim": [{"regex": r"^\W*fault:\s*line", "label": "fault: line"}]},
    "rebench-y-bug": {**SEEDED, "shape": "rebench", "must_find": [{"regex": "^fault", "label": "fault: somewhere"}]},
    "claim-f": {"shape": "claim", "score_in": "first_line", "min_answer_chars": 10,
                "must_find": [{"any_of": ["verdict: false"]}], "must_not_claim": ["verdict: true"]},
    "claim-t": {"shape": "claim", "score_in": "first_line", "min_answer_chars": 10,
                "must_find": [{"any_of": ["verdict: true"]}], "must_not_claim": ["verdict: false"]},
    "hand-trap": {"must_find": ["stale entry"], "must_not_claim": ["thread-safe"], "min_answer_chars": 10},
    "hand-plain": {"must_find": ["stale entry"], "min_answer_chars": 10},
    "hand-draft": {"draft": True, "must_find": ["x"], "must_not_claim": ["thread-safe"]},
}


def write(answers):
    """Write TASKS and `{alias: {task: text}}` as saved answers."""
    for name, spec in TASKS.items():
        folder = paths.file("suite", "tasks", name)
        (folder / "output").mkdir(parents=True, exist_ok=True)
        (folder / "task.json").write_text(json.dumps(spec), encoding="utf-8")
    for alias, mine in answers.items():
        for name, text in mine.items():
            (paths.file("suite", "tasks", name, "output") / f"{alias}.md").write_text(text, encoding="utf-8")


def test_wrg1_named_line_reads_only_the_first_non_blank_line():
    assert wrong.named_line("\n\n  **FAULT: line 12** flipped\nFAULT: line 3") == 12
    assert wrong.named_line("fault:line 7") == 7
    assert wrong.named_line("NO FAULT\nFAULT: line 3") is None
    assert wrong.named_line("") is None


def test_wrg1_su20_task_kinds_and_the_line_key_from_the_label():
    assert {n: wrong.task_kind(t) for n, t in TASKS.items()} == {
        "seeded-x-bug": "bug", "seeded-x-control": "control", "rebench-y-bug": None, "claim-f": "false claim",
        "claim-t": None, "hand-trap": "trap", "hand-plain": None, "hand-draft": "trap"}
    assert wrong.key_lines(TASKS["seeded-x-bug"]) == {10, 11}
    assert wrong.key_lines(TASKS["rebench-y-bug"]) == set()  # no digits: skipped (WRG-2)


def test_wrg1_wrg2_wrg3_counts_over_crafted_saved_answers(home):
    write({
        "right": {"seeded-x-bug": "FAULT: line 11\nflipped", "seeded-x-control": "NO FAULT\nas written",
                  "claim-f": "VERDICT: FALSE\nno", "claim-t": "VERDICT: TRUE\nyes",
                  "hand-trap": "There is a stale entry.", "hand-plain": "A stale entry, and more."},
        "bold": {"seeded-x-bug": "FAULT: line 2\nthe loop", "seeded-x-control": "FAULT: line 3\nsuspicious",
                 "claim-f": "VERDICT: TRUE\nsure", "claim-t": "VERDICT: FALSE\nnope",
                 "hand-trap": "The cache is thread-safe, nothing else.", "rebench-y-bug": "FAULT: line 9\nhere",
                 "hand-draft": "It is thread-safe and fine, says the draft."},
        "shy": {"seeded-x-bug": "NO FAULT\nlooks fine", "seeded-x-control": "I can't help with that.",
                "claim-f": "<<TIMED OUT after 5s>>", "hand-trap": "It is not thread-safe; a stale entry too."},
    })
    found = wrong.counts()
    right, bold, shy = found["right"], found["bold"], found["shy"]
    # right: bug, control, claim-f, trap = 4 opportunities (claim-t and hand-plain are none), nothing wrong
    assert (right["answers"], right["wrong"]) == (4, 0)
    assert right["by"] == {"control": [0, 1], "wrong line": [0, 1], "false claim": [0, 1], "trap": [0, 1]}
    assert right["hunt"] == {"found": 1, "wrong line": 0, "missed": 0, "clean": 1, "false alarm": 0}
    # bold: every opportunity wrong; the rebench bug without a numbered key and the draft are skipped
    assert (bold["answers"], bold["wrong"]) == (4, 4)
    assert bold["by"] == {"control": [1, 1], "wrong line": [1, 1], "false claim": [1, 1], "trap": [1, 1]}
    assert bold["hunt"] == {"found": 0, "wrong line": 1, "missed": 0, "clean": 0, "false alarm": 1}
    # shy: a miss is an opportunity but not wrong; a refusal and a timeout are no opportunity; a negated trap holds
    assert (shy["answers"], shy["wrong"]) == (2, 0)
    assert shy["by"]["wrong line"] == [0, 1] and shy["by"]["trap"] == [0, 1] and shy["by"]["control"] == [0, 0]
    assert shy["hunt"]["missed"] == 1 and shy["hunt"]["clean"] == 0
    assert wrong.rate(bold) == 1.0 and wrong.rate({"answers": 0, "wrong": 0}) is None


def test_wrg3_reviews_from_judged_offloads_and_renamed_aliases(home):
    write({"old-name": {"seeded-x-control": "FAULT: line 1\nthere"}})
    fileio.write_atomic(paths.file("config", "alias-history.json"), '{"old-name": "new-name"}')
    offload.add("new-name", "review a", True, "ok", call="c1", real=["a real bug"])
    offload.add("new-name", "review b", False, "no", call="c2", false=["x is null", "y leaks"])
    offload.add("new-name", "review c", None, "", call="c3", false=["never judged"])
    offload.add("other", "review d", False, "", call="c4", false=["z"])
    found = wrong.counts()
    assert found["new-name"]["answers"] == 1 and found["new-name"]["wrong"] == 1  # the record follows the rename
    assert (found["new-name"]["reviews"], found["new-name"]["review_false"]) == (2, 2)
    assert (found["other"]["answers"], found["other"]["reviews"], found["other"]["review_false"]) == (0, 1, 1)
    assert "old-name" not in found


def test_wrg3_cli_prints_worst_rate_first(home):
    write({"good": {"seeded-x-control": "NO FAULT\nfine"}, "bad": {"seeded-x-control": "FAULT: line 2\nbad"}})
    offload.add("judged", "review", False, "", call="c9", false=["one"])
    done = subprocess.run([sys.executable, "-m", "benchwarmers.panel.wrong"], capture_output=True, text=True, cwd=paths.CODE,
                          timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0].split()[:2] == ["model", "wrong"]
    assert [line.split()[0] for line in lines[1:]] == ["bad", "good", "judged"]
    assert lines[1].split()[1:3] == ["1/1", "1/1"] and lines[3].split()[1:3] == ["no", "tasks"]
    assert lines[3].endswith("1 false in 1")


def test_wrg_nothing_saved_yet(home):
    assert wrong.counts() == {}
    done = subprocess.run([sys.executable, "-m", "benchwarmers.panel.wrong"], capture_output=True, text=True, cwd=paths.CODE,
                          timeout=60)
    assert done.stdout.strip() == "no answered suite tasks and no judged offloads yet"
