"""The long-context tier (suite-cli-mcp.md §8 RQ-1..3, §12 OFF-3, §13.21): suite/longcontext.py.

The `repoqa` package is not installed here (and is no dependency): without it the command says so and
exits 1. The run itself is tested with a tiny synthetic dataset, contexts and scorer injected in its
place, asked through the suite's own ask path against the local upstream's scripted models.
"""

import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.demo import demo
from benchwarmers.suite import longcontext

ROOT = Path(__file__).resolve().parent.parent
ALPHA = {"ops.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
         "more.py": "def mul(a, b):\n    product = a * b\n    return product\n"}
BETA = {"text.py": ("def shout(s):\n    return s.upper() + '!'\n\n\ndef whisper(s):\n    return s.lower() + '...'\n\n\n"
                    "def wrap(s, width):\n    return [s[i:i + width] for i in range(0, len(s), width)]\n")}


def needles(files, described):
    """RepoQA-shaped needles: name, path, the function's text span, a description."""
    out = []
    for name, description in described:
        for path, text in files.items():
            match = re.search(rf"^def {name}\(.*?(?=\n\n\n|\Z)", text, re.S | re.M)
            if match:
                out.append({"name": name, "path": path, "start_byte": match.start(), "end_byte": match.end(),
                            "description": description})
    return out


DATASET = {
    "python": [
        {"repo": "alpha/tools", "content": ALPHA, "dependency": {"ops.py": [], "more.py": ["ops.py"]},
         "needles": needles(ALPHA, [("add", "DESC-ADD sums two numbers"), ("sub", "DESC-SUB takes one from another"),
                                    ("mul", "DESC-MUL multiplies two numbers")])},
        {"repo": "beta/strings", "content": BETA, "dependency": {"text.py": []},
         "needles": needles(BETA, [("shout", "DESC-SHOUT upper-cases"), ("whisper", "DESC-WHISPER lower-cases"),
                                   ("wrap", "DESC-WRAP splits into chunks")])},
        {"repo": "gamma/unused", "content": ALPHA, "dependency": {}, "needles": needles(ALPHA, [("add", "DESC-X")])},
    ],
    "java": [{"repo": "delta/j", "content": {}, "dependency": {}, "needles": []}],
}


def block(code):
    return f"Here it is:\n```python\n{code}\n```\n"


def code_of(repo, needle):
    return repo["content"][needle["path"]][needle["start_byte"]:needle["end_byte"]]


ALPHA_NEEDLES = {n["name"]: code_of(DATASET["python"][0], n) for n in DATASET["python"][0]["needles"]}
BETA_NEEDLES = {n["name"]: code_of(DATASET["python"][1], n) for n in DATASET["python"][1]["needles"]}
MODELS = {"finder": {"replies": {"DESC-ADD": block(ALPHA_NEEDLES["add"]), "DESC-SUB": block(ALPHA_NEEDLES["sub"]),
                                 "DESC-MUL": block(ALPHA_NEEDLES["add"]),  # the wrong function
                                 "DESC-SHOUT": block(BETA_NEEDLES["shout"]),
                                 "DESC-WHISPER": "I can't help with that.",  # a non-answer, not a wrong one
                                 "DESC-WRAP": block(BETA_NEEDLES["wrap"])}, "latency": 0.01}}


class Synthetic:
    """Dataset, contexts and scorer of RepoQA's shape, small enough to read (OFF-3). The context is every
    file under a `# Path:` header (tokens = words); the scorer picks the needle whose text is most like the
    answer's code block. It records the answers saved before each context is made, and each depth."""

    instruction = "Based on the description and the code, reproduce the described function in a markdown block:"

    def __init__(self, model, size):
        self.path = longcontext.answers_path(model, size)
        self.saved_before, self.ratios = [], []

    def dataset(self):
        return DATASET

    def context(self, repo, needle, ratio, size, language):
        self.saved_before.append(len(fileio.read_jsonl(self.path)))
        self.ratios.append(ratio)
        text = "".join(f"# Path: {path}\n{body}\n" for path, body in repo["content"].items())
        start = len(text[:text.index(code_of(repo, needle))].split())
        return {"code_context": text, "needle_token_start": start,
                "needle_token_end": start + len(code_of(repo, needle).split()),
                "code_context_ntokens": len(text.split())}

    def judge(self, answer, name, repo, language):
        found = re.search(r"```\w*\n(.*?)```", answer, re.S)
        code = found.group(1).strip() if found else answer
        scores = {n["name"]: difflib.SequenceMatcher(None, code, code_of(repo, n)).ratio() for n in repo["needles"]}
        best = max(scores, key=scores.get)
        return best, scores[best]


def chats(up):
    """The model calls the upstream saw (listings for availability are not calls)."""
    return [r for r in up.requests if r["method"] == "POST"]


@pytest.fixture
def upstream(home, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with demo.Upstream(models={k: dict(v) for k, v in MODELS.items()}) as up:
        demo.register(up)
        fileio.update(paths.file("config", "model-roles.json"), lambda data: data.__setitem__("ad_hoc", ["finder"]))
        yield up


def test_rq1_rq2_a_run_asks_through_the_suite_saves_as_it_goes_and_notes(upstream, capsys):
    source = Synthetic("finder", 64)
    assert longcontext.main(["--model", "finder", "--context", "64", "--timeout", "30"], source=source) == 0
    out = capsys.readouterr().out
    # RQ-1: the first 2 repos of python, all their needles, at depth (i+0.5)/n, front to back; ad hoc allowed
    assert source.ratios == [1 / 6, 0.5, 5 / 6] * 2
    # RQ-2: each answer saved before the next context is made (as they arrive), under DATA
    assert source.saved_before == [0, 1, 2, 3, 4, 5]
    path = longcontext.answers_path("finder", 64)
    assert path == paths.data() / "runs" / "repoqa" / "ntoken_64" / "finder.jsonl"
    lines = fileio.read_jsonl(path)
    assert [r["id"] for r in lines] == [f"python::alpha/tools::{n}" for n in ("add", "sub", "mul")] + \
        [f"python::beta/strings::{n}" for n in ("shout", "whisper", "wrap")]
    whisper = lines[4]
    assert whisper["kind"] == "refused" and [t.strip() for t in whisper["output"]] == ["I can't help with that."]
    assert whisper["blocked"] == "refused: i can't help with that" and whisper["attempts"] == 1
    assert "code_context" not in whisper and whisper["needle_token_end"] > whisper["needle_token_start"]
    asked = [json.dumps(r["body"]) for r in chats(upstream) if "DESC-ADD" in json.dumps(r["body"])]
    assert asked and source.instruction in asked[0] and "Function Description:DESC-ADD sums two numbers" in asked[0]
    # the table: a non-answer is not scored, a wrong function is
    assert re.search(r"python\s+6\s+5\s+4\s+80\.0%", out) and re.search(r"all\s+6\s+5\s+4\s+80\.0%", out)
    note = paths.file("runs", f"repoqa-{time.strftime('%Y-%m-%d')}.md")
    assert f"written: {note}" in out
    text = note.read_text(encoding="utf-8")
    assert "## RepoQA `finder`, " in text and "(64-token context)" in text
    assert "6 task(s): 1 language(s), 2 repo(s); 5 answered, 1 non-answer(s)." in text
    assert "| python | 6 | 5 | 4 | 80.0% |" in text and "| all | 6 | 5 | 4 | 80.0% |" in text
    assert "- python::beta/strings::whisper: refused: i can't help with that" in text
    assert "Read the score downward" in text and "public" in text


def test_rq1_resuming_asks_only_what_is_not_answered_and_score_only_calls_nothing(upstream, capsys):
    args = ["--model", "finder", "--context", "64", "--timeout", "30"]
    longcontext.main(args, source=Synthetic("finder", 64))
    calls = len(chats(upstream))
    again = Synthetic("finder", 64)
    longcontext.main(args, source=again)
    assert len(chats(upstream)) == calls + 1 and again.ratios == [0.5]  # only the refused one
    assert len(fileio.read_jsonl(longcontext.answers_path("finder", 64))) == 7
    capsys.readouterr()
    calls = len(chats(upstream))
    rescored = Synthetic("finder", 64)
    assert longcontext.main(args + ["--score-only"], source=rescored) == 0
    assert len(chats(upstream)) == calls and rescored.ratios == []
    text = paths.file("runs", f"repoqa-{time.strftime('%Y-%m-%d')}.md").read_text(encoding="utf-8")
    assert text.count("## RepoQA `finder`") == 3 and "(64-token context, re-scored)" in text
    assert "| python | 6 | 5 | 4 | 80.0% |" in text.split("re-scored")[1]  # the latest line per task is scored


def test_rq1_refusals_before_any_call(upstream):
    with pytest.raises(SystemExit, match="nobody is not available"):
        longcontext.main(["--model", "nobody"], source=Synthetic("nobody", 16384))
    with pytest.raises(SystemExit, match="no saved answers for finder at 16384 tokens"):
        longcontext.main(["--model", "finder", "--score-only"], source=Synthetic("finder", 16384))
    assert chats(upstream) == []
    for args, message in ((["--repos", "11"], "--repos: 1 to 10"), (["--languages", "go"], "unknown go"),
                          (["--context", "0"], "at least 1 token")):
        with pytest.raises(SystemExit) as ended:
            longcontext.parse(["--model", "finder", *args])
        assert ended.value.code == 2
    assert longcontext.parse(["--model", "m", "--languages", "python,java", "rust"]).languages == ["python", "java",
                                                                                                   "rust"]


def test_rq3_without_the_package_a_clear_message_and_exit_1(home):
    if importlib.util.find_spec("repoqa") is not None:
        pytest.skip("the optional repoqa package is installed here")
    assert "repoqa" not in sys.modules  # importing the tier imported nothing of it
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([*paths.module_command("suite.longcontext"), "--model", "finder"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert "needs the optional `repoqa` package (pip install repoqa" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_rq3_a_package_that_is_there_but_broken_is_said_not_a_traceback(home, tmp_path, monkeypatch):
    broken = tmp_path / "site" / "repoqa"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise RuntimeError('its tokenizer library is missing')\n")
    (broken / "data.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(SystemExit) as ended:
        longcontext.main(["--model", "finder"])
    assert str(ended.value) == ("the `repoqa` package is installed but does not import "
                                "(RuntimeError: its tokenizer library is missing)")
    assert "repoqa" not in sys.modules
