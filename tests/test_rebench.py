"""Real-bug tasks (suite-cli-mcp.md §2.9 RB-1..11, §12 OFF-2, §13.13): suite/rebench.py against a fake
datasets-server and raw-file host on 127.0.0.1, serving a small dataset built here.

The rows cover every RB-4/RB-5 skip reason, a replaced line, an add-only fix, a long file (RB-6's
window), paging with a short last page, a 500 answered twice before the rows, and the cache. One
produced pair is run through suite/run.py against the local upstream's scripted models and scored.
"""

import http.server
import json
import os
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from benchwarmers.core import paths
from benchwarmers.models import scoring
from benchwarmers.demo import demo
from benchwarmers.suite import rebench, seed
from benchwarmers.suite import tasks as suite_tasks

ROOT = Path(__file__).resolve().parent.parent
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BASE = (
    "def over(values, limit):\n"
    '    """How many values are at or over the limit."""\n'
    "    count = 0\n"
    "    for value in values:\n"
    "        if value > limit:\n"
    "            count += 1\n"
    "    return count\n"
)
LONG = "".join(f"setting_{i} = {i}\n" for i in range(1, 1001)).replace("setting_900 = 900", "setting_900 = 9000")


def patch(path, start, body, extra=""):
    """A one-file, one-hunk git patch; `body` lines start with ' ', '-' or '+'."""
    old = sum(1 for line in body if not line.startswith("+"))
    new = sum(1 for line in body if not line.startswith("-"))
    return (f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{start},{old} +{start},{new} @@ def over(values, limit):\n" + "\n".join(body) + "\n" + extra)


REPLACE = patch("src/widget/limits.py", 3, ["     count = 0", "     for value in values:",
                                             "-        if value > limit:", "+        if value >= limit:",
                                             "             count += 1", "     return count"])
ADD_ONLY = patch("src/widget/skip.py", 3, ["     count = 0", "     for value in values:",
                                           "+        if value is None:", "+            continue",
                                           "         if value > limit:", "             count += 1"])
LONG_FIX = patch("src/widget/table.py", 897, [" setting_897 = 897", " setting_898 = 898", " setting_899 = 899",
                                              "-setting_900 = 9000", "+setting_900 = 900", " setting_901 = 901",
                                              " setting_902 = 902", " setting_903 = 903"])
HASH_IN_STRING = patch("src/widget/marks.py", 1, ['-MARK = "a#b"', '+MARK = "a#c"'])
SKIPS = {
    "changes more than one file": REPLACE + REPLACE.replace("limits.py", "other.py"),
    "adds or deletes a file": REPLACE.replace("--- a/src/widget/limits.py", "--- /dev/null"),
    "not a Python source file": REPLACE.replace("src/widget/limits.py", "tests/test_limits.py"),
    "no hunk": "diff --git a/src/w.py b/src/w.py\nold mode 100644\nnew mode 100755\n--- a/src/w.py\n+++ b/src/w.py\n",
    "more than one hunk": REPLACE + "@@ -20,1 +20,1 @@\n-a = 1\n+a = 2\n",
    "changes are not one contiguous block": patch("src/w.py", 1, ["-a = 1", " b = 2", "+c = 3"]),
    "too large": patch("src/w.py", 1, [f"-a{i} = {i}" for i in range(6)] + ["+a = 0"]),
    "only comments or whitespace": patch("src/w.py", 1, ["-x=1  # one", "+x = 1  # the first", "+", "+# note"]),
}


def row(n, patch_text, repo="acme/Widget.Tools", **extra):
    return {"instance_id": f"{repo.replace('/', '__')}-{n}", "repo": repo, "base_commit": COMMIT,
            "created_at": "2025-09-17T10:00:00", "license": "MIT", "patch": patch_text,
            "problem_statement": "Values equal to the limit are not counted.\n\n  They should be, says the doc.",
            "language": "python", **extra}


def dataset():
    """55 rows (a page of 50, then a short one) and the raw files the passing ones need."""
    rows = [row(101, REPLACE), row(102, ADD_ONLY), row(103, LONG_FIX), row(104, HASH_IN_STRING),
            row(105, REPLACE.replace("limits.py", "drifted.py")),  # RB-5: the file says something else
            row(106, REPLACE.replace("limits.py", "missing.py")),  # RB-5: the file cannot be fetched
            row(107, REPLACE, base_commit=None),  # incomplete
            row(108, REPLACE, truncated=True),  # the server cut the patch short
            row(109, REPLACE.replace("limits.py", "rejected.py")),  # in the rejected list
            row(110, REPLACE.replace("limits.py", "used.py"))]  # already a task
    rows += [row(200 + i, text) for i, text in enumerate(SKIPS.values())]
    rows += [row(300 + i, SKIPS["changes more than one file"]) for i in range(55 - len(rows))]
    files = {f"acme/Widget.Tools/{COMMIT}/src/widget/{name}": text
             for name, text in (("limits.py", BASE), ("skip.py", BASE), ("table.py", LONG), ("used.py", BASE),
                                ("marks.py", 'MARK = "a#b"\n'), ("rejected.py", BASE),
                                ("drifted.py", BASE.replace("if value > limit", "if value < limit")))}
    return rows, files


class Hub(http.server.BaseHTTPRequestHandler):
    """The datasets-server's `/filter` (its recorded shape, pages of `length` from `offset`) and the raw host."""

    def log_message(self, *args):
        pass

    def send(self, status, body, kind="application/json"):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        state = self.server.state
        url = urllib.parse.urlsplit(self.path)
        state["agents"].add(self.headers.get("User-Agent"))
        if url.path == "/filter":
            query = dict(urllib.parse.parse_qsl(url.query))
            state["filter"].append(query)
            if state["fail"]:
                status = state["fail"].pop(0)
                return self.send(status, json.dumps({"error": "The server is busier than usual."}))
            offset, length = int(query["offset"]), int(query["length"])
            items = []
            for i, r in enumerate(state["rows"][offset:offset + length], offset):
                cut = ["patch"] if r.get("truncated") else []
                items.append({"row_idx": i, "row": {k: v for k, v in r.items() if k != "truncated"},
                              "truncated_cells": cut})
            return self.send(200, json.dumps({"features": [], "rows": items, "num_rows_total": len(state["rows"]),
                                              "num_rows_per_page": length, "partial": False}))
        state["raw"].append(url.path)
        text = state["files"].get(urllib.parse.unquote(url.path).lstrip("/"))
        if text is None:
            return self.send(404, "404: Not Found", "text/plain")
        return self.send(200, text, "text/plain; charset=utf-8")


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def hub(server, monkeypatch):
    rows, files = dataset()
    server.state = {"rows": rows, "files": files, "fail": [], "filter": [], "raw": [], "agents": set()}
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("BENCH_REBENCH_API", base)
    monkeypatch.setenv("BENCH_REBENCH_RAW", base + "/")
    return server.state


def used_and_rejected():
    """A task already made from row 110, and row 109 in the data folder's rejected list (RB-9)."""
    folder = paths.file("suite", "tasks", "rebench-widget-tools-110-bug")
    folder.mkdir(parents=True)
    (folder / "task.json").write_text(json.dumps({"source": "acme__Widget.Tools-110", "prompt": "x", "draft": True}))
    paths.file("config", "rebench-rejected.json").write_text(
        json.dumps({"_note": "reviewed", "acme__Widget.Tools-109": "a rename, not a bug"}))


def rebench_script(*args):
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([*paths.module_command("suite.rebench"), *args], capture_output=True, text=True,
                          env=env, timeout=60)


def data_files():
    return sorted(str(p.relative_to(paths.data())) for p in paths.data().rglob("*") if p.is_file())


# -- pure parts (no network) ------------------------------------------------------------------------

def test_rb6_window_examples():
    assert rebench.window(120, 50, 50) == (1, 120)
    assert rebench.window(1000, 900, 901) == (601, 1000)
    assert rebench.window(1000, 10, 10) == (1, 400)
    assert rebench.window(1000, 500, 500) == (300, 699)
    assert seed.numbered(["b", "c"], 2) == "2| b\n3| c"
    assert seed.numbered(["x"] * 3, 98).splitlines() == [" 98| x", " 99| x", "100| x"]


@pytest.mark.parametrize("reason,text", list(SKIPS.items()))
def test_rb4_each_skip_reason(reason, text):
    with pytest.raises(rebench.Skip) as caught:
        rebench.fix_of(text)
    assert rebench.reason_key(str(caught.value)) == reason
    if reason == "too large":
        assert str(caught.value) == "too large (6 removed, 1 added)"


def test_rb4_rb5_kept_fixes_keys_and_the_comment_stripper():
    fix = rebench.fix_of(REPLACE.replace("\n", "\r\n") + "\\ No newline at end of file\n")
    assert (fix.path, fix.removed, fix.added) == ("src/widget/limits.py", ["        if value > limit:"],
                                                  ["        if value >= limit:"])
    before, after, keys = rebench.apply(fix, BASE)
    assert keys == [5] and after[4] == "        if value >= limit:" and len(after) == len(before) == 7
    # add-only: the two lines around the insertion point; after = base with the two lines in
    before, after, keys = rebench.apply(rebench.fix_of(ADD_ONLY), BASE)
    assert keys == [4, 5] and after[4:6] == ["        if value is None:", "            continue"]
    # a `#` inside a string is code (§13.13); whitespace and comments are not
    assert rebench.fix_of(HASH_IN_STRING).added == ['MARK = "a#c"']
    assert rebench.code_of('    x = "a # b"  # c') == '    x="a # b"'
    assert rebench.code_of("   # only a comment") == ""
    assert rebench.code_of("if a:  \t") == "ifa:"  # intra-line whitespace goes (RB-4)
    # an empty hunk line is blank context; RB-5 compares with trailing whitespace stripped
    blank = patch("src/w.py", 1, ["-a = 1", "+a = 2", ""])
    assert rebench.apply(rebench.fix_of(blank), "a = 1   \n\nb\n")[2] == [1]
    with pytest.raises(rebench.Skip, match="does not match the file at its base commit"):
        rebench.apply(rebench.fix_of(REPLACE), BASE.replace("count = 0", "total = 0"))
    with pytest.raises(rebench.Skip, match="does not match"):
        rebench.apply(rebench.fix_of(patch("src/w.py", 40, ["-a = 1", "+a = 2"])), BASE)


# -- the importer against the fake servers ------------------------------------------------------------

def test_rb1_rb2_rb7_rb8_rb9_a_whole_run_as_a_user_types_it(hub):
    used_and_rejected()
    done = rebench_script("--count", "10")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    # RB-1: the query, two pages (50 then a short one), the product's User-Agent (RB-3)
    first = hub["filter"][0]
    assert first == {"dataset": "nebius/SWE-rebench-V2", "config": "default", "split": "train",
                     "where": "\"language\"='python' AND \"created_at\">='2025-06-01'",
                     "orderby": '"created_at" DESC', "offset": "0", "length": "50"}
    assert [q["offset"] for q in hub["filter"]] == ["0", "50"]
    assert hub["agents"] == {rebench.USER_AGENT} and rebench.USER_AGENT.startswith("Benchwarmers/")
    # RB-9: a line per pair, then the summary, most frequent reason first, details dropped
    assert out[0] == ("acme__Widget.Tools-101 src/widget/limits.py line 5 (1 removed, 1 added)  ->  "
                      "rebench-widget-tools-101-bug, rebench-widget-tools-101-control")
    assert out[1].startswith("acme__Widget.Tools-102 src/widget/skip.py line 4 or 5 (0 removed, 2 added)")
    assert out[2].startswith("acme__Widget.Tools-103 src/widget/table.py line 900 (1 removed, 1 added)")
    assert out[3].startswith("acme__Widget.Tools-104 src/widget/marks.py line 1 ")
    reasons = ["changes more than one file", "adds or deletes a file", "not a Python source file", "no hunk",
               "more than one hunk", "changes are not one contiguous block", "too large",
               "only comments or whitespace", "the diff does not match the file at its base commit",
               "could not fetch the file", "incomplete row", "the patch was cut short by the dataset server",
               "rejected", "already a task"]
    summary = out[4]
    assert summary.startswith("4 pair(s) from 55 row(s) read; skipped: 38 changes more than one file, ")
    assert sorted(part.split(" ", 1)[1] for part in summary.split("skipped: ")[1].split(", ")) == sorted(reasons)
    assert "Review each pair" in out[5]
    # RB-2: the cache, complete (the short page ended the dataset)
    cache = json.loads(paths.file("runs", "cache", "rebench-2025-06-01.json").read_text(encoding="utf-8"))
    assert cache["complete"] is True and len(cache["rows"]) == 55
    assert set(cache["rows"][0]) == set(rebench.FIELDS) and cache["rows"][7]["truncated"] == ["patch"]
    # RB-7: the bug task's and the control's fields
    loaded = {t["id"]: t for t in suite_tasks.load()}
    bug, control = loaded["rebench-widget-tools-101-bug"], loaded["rebench-widget-tools-101-control"]
    for task in (bug, control):
        assert {k: task[k] for k in ("draft", "shape", "source", "upstream", "source_url", "created", "license",
                                     "score_in", "min_answer_chars")} == {
            "draft": True, "shape": "rebench", "source": "acme__Widget.Tools-101", "upstream": "acme/Widget.Tools",
            "source_url": "https://github.com/acme/Widget.Tools/pull/101", "created": "2025-09-17T10:00:00",
            "license": "MIT", "score_in": "first_line", "min_answer_chars": 8}
    assert bug["must_find"] == seed.fault_keys([5])["must_find"] == [
        {"regex": r"^\W*fault:\s*line\s*(?:5)\b", "label": "fault: line 5"}]
    assert bug["must_not_claim"] == ["no fault"]
    assert control["must_find"] == [{"any_of": ["no fault"]}]
    assert control["must_not_claim"] == [{"regex": r"^\W*fault:\s*line", "label": "fault: line"}]
    why = bug["why"]
    for part in ("acme/Widget.Tools#101", "2025-09-17", "https://github.com/acme/Widget.Tools/pull/101",
                 "src/widget/limits.py", COMMIT[:10] + ";", "line 5", "`if value > limit:`", "`if value >= limit:`",
                 "Values equal to the limit are not counted. They should be, says the doc.", "Review before removing"):
        assert part in why
    assert COMMIT[:11] not in why and "rebench-widget-tools-101-bug" in control["why"]
    # RB-8: one wording, the file numbered as in the file, never the kind of bug nor the problem
    head = bug["prompt"].split("\n\n1| ")[0]
    assert head == control["prompt"].split("\n\n1| ")[0]
    for part in ("from a public project", "either has a bug that a later commit fixed, or it is the fixed version",
                 "numbered as in the file", "`FAULT: line <n>`", "just before or just after where it belongs",
                 "`NO FAULT`", "at most three sentences", "Plain ASCII"):
        assert part in head
    assert "excerpt" not in head and "limit are not counted" not in bug["prompt"]
    assert "comparison" not in bug["prompt"].lower() and "off-by-one" not in bug["prompt"].lower()
    assert bug["prompt"].endswith("5|         if value > limit:\n6|             count += 1\n7|     return count")
    assert "5|         if value >= limit:" in control["prompt"]
    # RB-5: an add-only fix keys the two lines around the insertion; the control holds the added lines
    added, added_control = loaded["rebench-widget-tools-102-bug"], loaded["rebench-widget-tools-102-control"]
    assert added["must_find"][0]["label"] == "fault: line 4 or 5"
    assert "5|         if value is None:\n6|             continue" in added_control["prompt"]
    # RB-6: the long file's 400-line window, numbered as in the file, width of the last number
    long_bug = loaded["rebench-widget-tools-103-bug"]["prompt"]
    assert "This is an excerpt: lines 601-1000." in long_bug
    assert "\n\n 601| setting_601 = 601\n" in long_bug and long_bug.endswith("1000| setting_1000 = 1000")
    assert " 600| " not in long_bug and " 900| setting_900 = 9000" in long_bug
    assert " 900| setting_900 = 900\n" in loaded["rebench-widget-tools-103-control"]["prompt"]


def test_rb2_rb9_the_cache_is_reused_without_the_network_and_made_pairs_are_not_offered_again(hub):
    first = rebench.main(["--count", "2"])
    assert first == 0 and [q["offset"] for q in hub["filter"]] == ["0", "50"]
    hub["filter"].clear()
    hub["raw"].clear()
    rebench.main(["--count", "1"])
    assert hub["filter"] == []  # RB-2: the day-old cache answered, the server saw nothing
    made = {t["source"] for t in suite_tasks.load()}
    assert made == {"acme__Widget.Tools-101", "acme__Widget.Tools-102", "acme__Widget.Tools-103"}
    # §13.13: --scan limits what is scanned however many rows the cache holds; an old cache is fetched anew
    old = time.time() - rebench.CACHE_SECONDS - 5
    os.utime(rebench.cache_path("2025-06-01"), (old, old))
    assert rebench.cached("2025-06-01", 10) is None
    rebench.main(["--scan", "3"])
    assert [q["offset"] for q in hub["filter"]] == ["0"]  # 3 rows wanted: one page


def test_rb2_cache_rules(hub):
    where = rebench.cache_path("2025-06-01")
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps({"complete": False, "rows": [{"instance_id": "a"}] * 10}))
    assert rebench.cached("2025-06-01", 10) == [{"instance_id": "a"}] * 10  # enough rows
    assert rebench.cached("2025-06-01", 11) is None  # too few, and more exist
    where.write_text(json.dumps({"complete": True, "rows": [{"instance_id": "a"}] * 10}))
    assert len(rebench.cached("2025-06-01", 400)) == 10  # complete: all there is
    where.write_text("not json")
    assert rebench.cached("2025-06-01", 1) is None


def test_rb3_a_500_is_tried_again_then_the_rows_come(hub, monkeypatch, capsys):
    monkeypatch.setattr(rebench, "RETRY_WAIT", 0.001)
    hub["fail"] = [500, 500]
    assert rebench.main(["--count", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("the dataset server is busy (HTTP 500)") == 1
    assert [q["offset"] for q in hub["filter"]] == ["0", "0", "0", "50"]
    assert "1 pair(s) from 1 row(s) read" in out


def test_rb3_other_errors_and_a_server_busy_for_good_end_the_run_with_a_message(hub, monkeypatch):
    monkeypatch.setattr(rebench, "RETRY_WAIT", 0.001)
    hub["fail"] = [404]
    with pytest.raises(SystemExit) as ended:
        rebench.main([])
    assert "could not read nebius/SWE-rebench-V2 from http://127.0.0.1:" in str(ended.value)
    assert "HTTP Error 404" in str(ended.value) and len(hub["filter"]) == 1  # never retried
    hub["filter"].clear()
    hub["fail"] = [500] * rebench.ATTEMPTS
    with pytest.raises(SystemExit, match="HTTP Error 500"):
        rebench.main([])
    assert len(hub["filter"]) == rebench.ATTEMPTS
    assert [f for f in data_files() if not f.startswith("config/")] == []  # no cache, no task


def test_rb9_a_dry_run_fetches_and_checks_and_writes_nothing(hub):
    before = data_files()
    done = rebench_script("--dry-run", "--count", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[dry run] acme__Widget.Tools-101 ") and lines[1].startswith("[dry run] ")
    assert lines[2].startswith("2 pair(s) from 2 row(s) read; skipped: none")
    assert "Review" not in done.stdout
    assert hub["raw"] and data_files() == before  # no task, no cache


def test_st2_rb10_rejecting_a_pair_and_the_shipped_list(hub, capsys):
    # ST-2: the list CODE ships is absent or empty; nothing dataset-derived is in the checkout
    shipped = rebench.SHIPPED_REJECTED
    assert not shipped.exists() or json.loads(shipped.read_text(encoding="utf-8")) == {}
    assert not list((ROOT / "suite" / "starter").glob("rebench-*"))
    rebench.main(["--count", "1"])
    done = rebench_script("--reject", "rebench-widget-tools-101-control", "--reason", "a rename, not a bug")
    assert done.returncode == 0, done.stderr
    assert "rejected acme__Widget.Tools-101 (a rename, not a bug)" in done.stdout
    assert not [t for t in suite_tasks.load() if t["id"].startswith("rebench-widget-tools-101")]
    saved = json.loads(paths.file("config", "rebench-rejected.json").read_text(encoding="utf-8"))
    assert saved == {"acme__Widget.Tools-101": "a rename, not a bug"}
    assert rebench.rejected() == saved
    rebench.main(["--count", "1", "--scan", "1"])
    assert "0 pair(s) from 1 row(s) read; skipped: 1 rejected" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no rebench task called 'seeded-x-bug'"):
        rebench.main(["--reject", "seeded-x-bug", "--reason", "r"])


def test_rb_flags_are_checked_before_anything_is_asked(hub, capsys):
    for args, message in ((["--since", "2025-13-01"], "is not a date"),
                          (["--since", "2025-06-01' OR 1=1"], "is not a YYYY-MM-DD date"),
                          (["--count", "0"], "at least 1"), (["--reject", "x"], "go together")):
        with pytest.raises(SystemExit) as ended:
            rebench.main(args)
        assert ended.value.code == 2 and message in capsys.readouterr().err
    assert hub["filter"] == []
    paths.file("config", "rebench-rejected.json").write_text("{broken")
    warned = []
    assert rebench.rejected(warn=warned.append) == {}
    assert "rebench-rejected.json is not valid JSON" in warned[0]


def test_rb7_a_produced_pair_run_through_the_suite_and_scored(hub, monkeypatch):
    rebench.main(["--count", "1"])
    loaded = {t["id"]: t for t in suite_tasks.load()}
    bug, control = loaded["rebench-widget-tools-101-bug"], loaded["rebench-widget-tools-101-control"]
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    models = {"finder": {"replies": {"value >= limit": "NO FAULT\nThe fixed version.",
                                     "value > limit": "FAULT: line 5\nEqual values are missed."}},
              "inventor": {"answer": "FAULT: line 2\nThe docstring lies."}}
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    with demo.Upstream(models=models) as up:
        demo.register(up)
        for task in (bug, control):
            run = subprocess.run([*paths.module_command("suite.run"), "--task", task["id"],
                                  "--model", "finder", "--model", "inventor", "--gap", "0"],
                                 capture_output=True, text=True, env=env, timeout=60)
            assert run.returncode == 0, run.stderr
    assert scoring.score(bug, suite_tasks.saved(bug, "finder"))["found"] == 1
    assert scoring.score(control, suite_tasks.saved(control, "finder"))["found"] == 1
    assert scoring.score(bug, suite_tasks.saved(bug, "inventor"))["found"] == 0  # the wrong line
    assert scoring.score(control, suite_tasks.saved(control, "inventor"))["invented"] == ["fault: line"]
