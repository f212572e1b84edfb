"""Seeded bugs (suite-cli-mcp.md §2.6): the changes offered (SD-12's facts), the pair written, and a whole run."""

import json
import os
import random
import subprocess
import textwrap

import pytest

from benchwarmers.core import paths
from benchwarmers.models import scoring
from benchwarmers.demo import demo
from benchwarmers.suite import seed
from benchwarmers.suite import tasks as suite_tasks

SAMPLE = textwrap.dedent('''\
    def total(items, limit):
        n = 0
        for i in range(len(items)):
            if items[i] is None:
                continue
            n += items[i]
            if n > limit:
                break
        head = items[1:]
        tail = items[:2]
        record(n, limit)
        print(n)
        return max(n, 0)


    if __name__ == "__main__":
        total([1, 2], 2)
    ''')


def changed(code, kind):
    return sorted(e.new.strip() if e.new is not None else f"deleted {e.at + 1}"
                  for e in seed.candidates(code).get(kind, []))


def test_sd12_the_changes_offered():
    assert "if n >= limit:" in changed(SAMPLE, "compare")
    assert not any("total([" in text for kind in seed.KINDS for text in changed(SAMPLE, kind))  # __main__ block
    assert "n = 1" in changed(SAMPLE, "number")
    assert "head = items[0:]" in changed(SAMPLE, "number")
    assert "head = items[2:]" in changed(SAMPLE, "off-by-one") and "tail = items[:1]" in changed(SAMPLE, "off-by-one")
    assert changed(SAMPLE, "args") == ["record(limit, n)"]
    assert {"for i in range(len(items) - 1):", "for i in range(1, len(items)):"} <= set(changed(SAMPLE, "off-by-one"))
    assert changed(SAMPLE, "break-continue") == ["break", "continue"]
    assert changed(SAMPLE, "remove-call") == ["deleted 11"]
    assert changed(SAMPLE, "augassign") == ["n -= items[i]"]
    alone = "def f(x):\n    if x:\n        go(x)\n    return x\n"
    assert changed(alone, "remove-call") == ["pass"]
    dead = "def f(x):\n    return x\n    x += 1\n"
    assert changed(dead, "augassign") == []
    method = "    def m(self, a, b):\n        self.go(a, b)\n        return round(a, 2)\n"
    assert [e.new for e in seed.candidates(method)["args"]] == ["        self.go(b, a)"]
    assert seed.candidates("def f(y):\n    return round(y, 2)\n").get("number") is None
    assert changed("def f(s):\n    return s[-2:] + s[:+1]\n", "off-by-one") == ["return s[-1:] + s[:+1]",
                                                                                "return s[-2:] + s[:0]"]
    assert changed('def f(a, b=1):\n    return g(a, k=2, s=f"{a < 1}") or not_(b)\n', "number") == []
    assert changed("def f(a):\n    return not a and a > 0\n", "boolop") == ["return not a or a > 0"]
    assert changed("def f(a):\n    if not a:\n        return True\n", "not") == ["if a:"]
    assert changed("def f(a):\n    if not a:\n        return True\n", "return-bool") == ["return False"]


def test_sd7_sd9_answer_lines_and_slugs():
    assert seed.answer_lines(seed.Edit("remove-call", 4, None), 9) == [4, 5]
    assert seed.answer_lines(seed.Edit("remove-call", 0, None), 9) == [1]
    assert seed.slug("pkg/My_Mod.py", "Do__It", True) == "hard-my-mod-do-it"
    assert seed.unique_ids("x", {"seeded-x-bug"}) == ("seeded-x-2-bug", "seeded-x-2-control")


FUNCTION = textwrap.dedent('''\
    def over(values, limit):
        """How many values are over the limit."""
        count = 0
        for value in values:
            if value is None:
                continue
            if value > limit:
                count = count + 1
        result = count
        unused = result
        found = unused
        return found
    ''')


def test_sd_a_whole_pair_written_run_and_scored(home, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "over.py").write_text(FUNCTION)
    (repo / "tests").mkdir()
    (repo / "tests" / "other.py").write_text(FUNCTION.replace("def over", "def other"))
    paths.file("config", "repos.json").write_text(json.dumps({"default": str(repo)}))
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([*paths.module_command("suite.seed"), "--seed", "1", "--kinds", "compare"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "pkg/over.py::over line 7 compare: `if value > limit:` -> `if value >= limit:`" in done.stdout
    assert "Review each bug task's `why`" in done.stdout
    loaded = {t["id"]: t for t in suite_tasks.load()}
    bug, control = loaded["seeded-over-over-bug"], loaded["seeded-over-over-control"]
    assert bug["draft"] and bug["must_find"][0]["label"] == "fault: line 7"
    assert " 7| " in bug["prompt"] and "a comparison operator" in bug["prompt"] and "one token changed" in bug["prompt"]
    assert scoring.score(bug, "FAULT: line 7\nflipped")["found"] == 1
    assert scoring.score(control, "FAULT: line 7\nflipped")["invented"] == ["fault: line"]
    again = subprocess.run([*paths.module_command("suite.seed"), "--kinds", "compare"],
                           capture_output=True, text=True, env=env)
    assert again.returncode == 1 and "no unused function has a change of these kinds" in again.stderr
    bad = subprocess.run([*paths.module_command("suite.seed"), "--kinds", "compare,nope"],
                         capture_output=True, text=True, env=env)
    assert "unknown kind(s): nope" in bad.stderr
    norepo = subprocess.run([*paths.module_command("suite.seed"), "--repo", "x"],
                            capture_output=True, text=True, env=env)
    assert "no repo 'x' in config/repos.json" in norepo.stderr
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    models = {"finder": {"replies": {"value >= limit": "FAULT: line 7\nflipped", "value > limit": "NO FAULT\nfine"}},
              "inventor": {"answer": "FAULT: line 3\nsure"}}
    with demo.Upstream(models=models) as up:
        demo.register(up)
        for task in (bug, control):
            run = subprocess.run([*paths.module_command("suite.run"), "--task", task["id"],
                                  "--model", "finder", "--model", "inventor", "--gap", "0"],
                                 capture_output=True, text=True, env=env)
            assert run.returncode == 0, run.stderr
    assert scoring.score(bug, suite_tasks.saved(bug, "finder"))["found"] == 1
    assert scoring.score(control, suite_tasks.saved(control, "finder"))["found"] == 1
    assert scoring.score(control, suite_tasks.saved(control, "inventor"))["invented"] == ["fault: line"]


@pytest.mark.parametrize("rel,skipped", [("tests/a.py", True), ("pkg/test_a.py", True), ("testimony.py", False),
                                         ("builders/a.py", False), ("a_test.py", True), ("vendor/x.py", True)])
def test_sd2_skipped_folders_by_whole_name(rel, skipped):
    assert seed.skipped_path(rel) is skipped


def test_sd6_a_rare_kind_is_drawn_as_often_as_a_common_one():
    """SD-6 draws the kind first, then a candidate of it: one `not` among five comparisons still wins about half
    the draws, where drawing among the six candidates would give it one in six."""
    code = textwrap.dedent('''\
        def window(a, b, c, d, e, flag):
            if a < b and c > d:
                return e >= a
            if not flag:
                return b <= c
            return d == e
        ''')
    offered = seed.candidates(code)
    assert len(offered["compare"]) >= 5 and len(offered["not"]) == 1
    drawn = [seed.choose_edit(code, ["compare", "not"], random.Random(n)).kind for n in range(200)]
    assert 70 <= drawn.count("not") <= 130, drawn.count("not")
    assert seed.choose_edit(code, ["augassign"], random.Random(0)) is None  # no candidate of the kinds asked
