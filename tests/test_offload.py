"""The offload log (OFF-1..7), verdicts (VRD-1..3), alias renames (ALI-1) and the offload index.

The index is checked three ways: against a plain re-reading of the spec over the whole file
(`literal_*` below) on a random log fed in chunks, by counting the bytes it reads, and by the
memory it holds (issue 7: it keeps no lines, only reads one back when an answer needs it).
"""

import datetime
import json
import os
import random
import subprocess
import sys
import threading
import tracemalloc

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import aliases
from benchwarmers.panel import offload
from benchwarmers.store import store

CALL = "p20261017-140312-a1b2"


def log_lines():
    """The log's lines as stored, in either store."""
    if store.current().kind == "postgres":
        return [line.decode("ascii") for line in store.current().lines(store.OFFLOADS)]
    return offload.log_path().read_bytes().decode("ascii").splitlines()


def write_log(records):
    lines = [json.dumps(r).encode() for r in records]
    if store.current().kind == "postgres":
        store.current().replace(store.OFFLOADS, lines)
    else:
        offload.log_path().write_bytes(b"".join(line + b"\n" for line in lines))


def stored(entries):
    """The entries as their lines hold them."""
    return [entry.stored for entry in entries]


def rename(links):
    fileio.write_atomic(paths.file("config", "alias-history.json"), json.dumps(links))


def cli(*args):
    command = paths.module_command("panel.offload")
    return subprocess.run(command + list(args), cwd=paths.CODE, capture_output=True, text=True, encoding="utf-8")


# --- OFF-1, OFF-3, OFF-N1: writing lines ---


@pytest.mark.usefixtures("storage")
def test_off1_line_key_order_ascii_and_optional_fields():
    entry = offload.add("m1", "fix café parser (bench/core, code)", None, "member; ok in 3.2s",
                        f"{CALL}.member1", status="ok", seconds=3.2)
    bare = offload.add("m2", "plain", True, "helped")
    lines = log_lines()
    assert "\\u00e9" in lines[0] and "é" not in lines[0]
    first = json.loads(lines[0])
    assert list(first) == ["date", "model", "task", "useful", "note", "call", "status", "seconds"]
    assert first == entry.stored
    assert first["date"] == datetime.date.today().isoformat()
    assert list(json.loads(lines[1])) == ["date", "model", "task", "useful", "note"]
    assert json.loads(lines[1]) == bare.stored
    claims = offload.add("m3", "t", False, "n", "c", ["r1"], ["f1"], "ok", 1.0)
    assert list(claims.stored) == ["date", "model", "task", "useful", "note", "call", "real", "false", "status",
                                   "seconds"]
    assert "real" not in offload.add("m3", "t", None, "", "c2", [], []).stored


def test_off_n1_note_for():
    assert offload.note_for("member", "ok", 3.21) == "member; ok in 3.2s"
    assert offload.note_for("merger", "ok", 9) == "merger; ok in 9.0s"
    assert offload.note_for("explorer 2", "error", 0.44, "x" * 200) == "explorer 2; error in 0.4s: " + "x" * 120


@pytest.mark.usefixtures("storage")
def test_imp16_concurrent_adds_from_16_threads_all_recorded():
    start = threading.Barrier(16)

    def worker(t):
        start.wait()
        for i in range(25):
            offload.add(f"m{t}", f"task {i} " + "ü" * (i * 40), None, "member; ok in 1.0s", f"{CALL}.member{t}-{i}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len([json.loads(line) for line in log_lines()]) == 400
    assert len(offload.entries()) == 400
    assert offload.summary()["m7"]["offloads"] == 25


# --- OFF-2: reading ---


def test_off2_entries_oldest_first_call_replaced_in_place_torn_lines_skipped(capsys):
    path = offload.log_path()
    seat = {"date": "2026-10-17", "model": "a", "task": "t1", "useful": None, "note": "member; ok", "call": "c1"}
    other = {"date": "2026-10-17", "model": "b", "task": "t2", "useful": None, "note": "n", "call": "c2"}
    loose = {"date": "2026-10-18", "model": "c", "task": "t3", "useful": True, "note": "by hand"}
    judged = dict(seat, date="2026-10-19", useful=True, note="right")
    path.write_bytes(
        json.dumps(seat).encode() + b"\n{\"date\": \"2026-10-17\", \"mod\n\n   \n"
        + b"".join(json.dumps(r).encode() + b"\n" for r in (other, loose, loose, judged))
    )
    assert stored(offload.entries()) == [judged, other, loose, loose]
    assert "skipped a torn or corrupt line" in capsys.readouterr().err
    assert offload.by_call("c1").stored == judged
    assert offload.by_call("nope") is None


def test_off2_a_line_still_being_written_waits_for_its_newline():
    path = offload.log_path()
    line = json.dumps({"date": "2026-10-17", "model": "a", "task": "t", "useful": None, "note": "", "call": "c1"})
    fileio.append_bytes(path, line[:30].encode())
    assert offload.entries() == []
    fileio.append_bytes(path, (line[30:] + "\n").encode())
    assert [e.call for e in offload.entries()] == ["c1"]


# --- OFF-4, VRD-1, IMP-19: verdicts ---


@pytest.mark.usefixtures("storage")
def test_off4_verdict_messages_in_vrd1_order():
    offload.add("a", "t", None, "member; ok in 1.0s", "c1")
    with pytest.raises(ValueError) as bad:
        offload.verdict("nope", "yes")
    assert str(bad.value) == '"useful" must be true or false'
    for claims in ("one claim", [1], {"a": 1}):
        with pytest.raises(ValueError) as bad:
            offload.verdict("nope", True, real=claims)
        assert str(bad.value) == '"real" and "false" must be lists of one-sentence claims'
    with pytest.raises(KeyError) as unknown:
        offload.verdict("nope", True)
    assert unknown.value.args[0] == "no offload with call id 'nope'; the gateway prints them under each answer"
    with pytest.raises(KeyError) as missing:
        offload.verdict(None, True)
    assert missing.value.args[0] == "no offload with call id ''; the gateway prints them under each answer"
    assert len(log_lines()) == 1


@pytest.mark.usefixtures("storage")
def test_off4_verdict_copies_target_keeps_or_clears_and_same_verdict_writes_nothing():
    rename({"old": "new"})
    offload.add("old", "fix it (bench/core, code)", None, "member; ok in 2.0s", "c1", status="ok", seconds=2.0)
    first = offload.verdict("c1", True, "  right \n about   the lock ", ["  the lock is held ", "", "   "], None)
    assert first.model == "new" and first.task == "fix it (bench/core, code)"
    assert first.note == "right about the lock" and first.real == ("the lock is held",)
    assert (first.call, first.status, first.seconds) == ("c1", "ok", 2.0)
    assert "false" not in first.stored
    assert len(log_lines()) == 2
    assert offload.verdict("c1", True, "right about the lock", ["the lock is held"]) == first
    assert offload.verdict("c1", True) == first  # TST-3: blank keeps the earlier note and claims
    assert len(log_lines()) == 2
    flipped = offload.verdict("c1", False)
    assert flipped.useful is False
    assert (flipped.note, flipped.real) == ("right about the lock", ("the lock is held",))
    cleared = offload.verdict("c1", False, "", [], None, replace=True)  # TST-2: a blank form clears
    assert cleared.note == "" and "real" not in cleared.stored
    assert len(log_lines()) == 4
    assert len(offload.entries()) == 1 and offload.by_call("c1") == cleared


@pytest.mark.usefixtures("storage")
def test_issue29_item3_bounds_checked_after_tidying_before_the_log_is_read_and_the_receipt_cut():
    """Issue 29 item 3 at the module: the bounds count UTF-8 bytes of what would be written (whitespace collapsed),
    come before the unknown-call check, hold for the CLI too, and `receipt` cuts what a reply echoes."""
    offload.add("a", "the prompt's first words", None, "member; ok in 1.0s", "c1")
    assert offload.verdict("c1", True, "x" + " \n" * 5_000 + "y", ["y"] * 50).note == "x y"  # 3 bytes kept
    for note, real, false, why in (("é" * 2_049, None, None, '"note" is 4,098 bytes; the limit is 4,096'),
                                   ("", ["z" * 1_025], None, 'a claim in "real" is 1,025 bytes; the limit is 1,024'),
                                   ("", ["a"] * 25, ["b"] * 26, '"real" and "false" hold 51 claims; the limit is 50')):
        with pytest.raises(offload.TooLarge) as refused:
            offload.verdict("nope", True, note, real, false)
        assert (refused.value.status, refused.value.message) == (413, why)
    assert len(log_lines()) == 2
    too_long = cli("verdict", "c1", "--useful", "--note", "n" * 5_000)
    assert too_long.returncode == 1 and too_long.stderr.strip() == '"note" is 5,000 bytes; the limit is 4,096'
    shown = offload.receipt(offload.verdict("c1", False, "n" * 300, ["r" * 150], ["f" * 201]).stored)
    assert "task" not in shown and shown["note"] == "n" * 200 + "…"
    assert shown["real"] == ["r" * 150] and shown["false"] == ["f" * 200 + "…"]
    assert offload.by_call("c1").note == "n" * 300


@pytest.mark.usefixtures("storage")
def test_off4_two_racing_identical_verdicts_write_one_line():
    offload.add("a", "t", None, "member; ok in 1.0s", "c1")
    start = threading.Barrier(8)
    results = []

    def judge():
        start.wait()
        results.append(offload.verdict("c1", True, "checked"))

    threads = [threading.Thread(target=judge) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(log_lines()) == 2
    assert all(r == results[0] for r in results)


# --- OFF-5, OFF-7, ALI-1: summary, staleness, renames ---


@pytest.mark.usefixtures("storage")
def test_off5_summary_and_last_used():
    write_log([
        {"date": "2026-10-01", "model": "a", "task": "first", "useful": None, "note": "", "call": "c1"},
        {"date": "2026-10-03", "model": "a", "task": "tie one", "useful": True, "note": ""},
        {"date": "2026-10-03", "model": "a", "task": "tie two", "useful": None, "note": ""},
        {"date": "2026-10-02", "model": "b", "task": "b task", "useful": False, "note": ""},
        {"date": "2026-10-02", "model": "a", "task": "first", "useful": False, "note": "judged", "call": "c1"},
    ])
    assert offload.summary() == {
        "a": {"offloads": 3, "useful": 1, "judged": 2, "last_task": "tie two", "last_date": "2026-10-03"},
        "b": {"offloads": 1, "useful": 0, "judged": 1, "last_task": "b task", "last_date": "2026-10-02"},
    }
    assert offload.last_used() == {"a": "2026-10-03", "b": "2026-10-02"}


@pytest.mark.usefixtures("storage")
def test_empty_log_reads_as_nothing():
    assert (offload.entries(), offload.summary(), offload.last_used()) == ([], {}, {})
    assert (offload.record("core"), offload.shape_record("code"), offload.pending(["x"])) == ({}, {}, [])


def test_ali1_current_follows_links_and_refuses_loops():
    rename({"a": "b", "b": "c", "_comment": "ignored", "x": "y", "y": "x", "n": 3})
    assert aliases.current("a") == "c" and aliases.current("c") == "c" and aliases.current("zz") == "zz"
    assert aliases.history() == {"a": "b", "b": "c", "x": "y", "y": "x"}
    with pytest.raises(ValueError) as loop:
        aliases.current("x")
    assert str(loop.value) == "alias history loops at 'x'"
    rename({"a": "d"})
    assert aliases.current("a") == "d" and aliases.current("x") == "x"


@pytest.mark.usefixtures("storage")
def test_ali1_a_rename_applies_to_the_index_without_rebuilding():
    write_log([
        {"date": "2026-10-01", "model": "old", "task": "t (bench/core, code)", "useful": True, "call": "1"},
        {"date": "2026-10-05", "model": "new", "task": "u (bench/core, code)", "useful": False, "call": "2"},
    ])
    assert set(offload.summary()) == {"old", "new"}
    builds = offload.index().builds
    rename({"old": "new"})
    assert offload.summary() == {
        "new": {"offloads": 2, "useful": 1, "judged": 2, "last_task": "u (bench/core, code)", "last_date": "2026-10-05"}
    }
    assert offload.last_used() == {"new": "2026-10-05"}
    assert offload.record("bench/core") == {"new": {"useful": 1, "notUseful": 1, "judged": 2, "lastAt": "2026-10-05"}}
    assert offload.shape_record("code") == {"new": {"useful": 1, "judged": 2}}
    assert [e.model for e in offload.entries()] == ["new", "new"]
    assert offload.index().builds == builds


# --- VRD-2, MRG-3: record and shape record ---


@pytest.mark.usefixtures("storage")
def test_vrd2_record_counts_judged_per_collection_filters_by_note_and_accepts_bare_names():
    write_log([
        {"date": "2026-10-01", "model": "a", "task": "x (bench/core, code)", "useful": True, "note": "found the race"},
        {"date": "2026-10-04", "model": "a", "task": "y (bench/core, review)", "useful": False, "note": "missed it"},
        {"date": "2026-10-09", "model": "a", "task": "z (bench/core, code)", "useful": None, "note": "member; ok"},
        {"date": "2026-10-02", "model": "b", "task": "w (bench/core, code)", "useful": True, "note": "race again"},
        {"date": "2026-10-03", "model": "b", "task": "v (bench/other, code)", "useful": True, "note": "race"},
        {"date": "2026-10-03", "model": "c", "task": "first turn (bench/core:route)", "useful": True, "note": "race"},
    ])
    whole = {
        "a": {"useful": 1, "notUseful": 1, "judged": 2, "lastAt": "2026-10-04"},
        "b": {"useful": 1, "notUseful": 0, "judged": 1, "lastAt": "2026-10-02"},
    }
    assert offload.record("bench/core") == whole
    assert offload.record("core") == whole  # IMP-6
    assert offload.record("bench/core", "race") == {
        "a": {"useful": 1, "notUseful": 0, "judged": 1, "lastAt": "2026-10-01"},
        "b": {"useful": 1, "notUseful": 0, "judged": 1, "lastAt": "2026-10-02"},
    }
    assert offload.record("bench/nothing") == {} and offload.record("bench/core", "no such note") == {}
    assert offload.record("bench/core:route") == {}  # a route task has no `(<collection>,`


@pytest.mark.usefixtures("storage")
def test_mrg3_shape_record_counts_judged_tasks_ending_with_the_shape():
    write_log([
        {"date": "2026-10-01", "model": "a", "task": "x (bench/core, code)", "useful": True, "note": ""},
        {"date": "2026-10-01", "model": "a", "task": "x (bench/core, code)", "useful": None, "note": ""},
        {"date": "2026-10-01", "model": "b", "task": "x (bench/core, code)", "useful": False, "note": ""},
        {"date": "2026-10-01", "model": "b", "task": "x (bench/core, review)", "useful": True, "note": ""},
        {"date": "2026-10-01", "model": "c", "task": "x (bench/core, code) and more", "useful": True, "note": ""},
    ])
    assert offload.shape_record("code") == {"a": {"useful": 1, "judged": 1}, "b": {"useful": 0, "judged": 1}}
    assert offload.shape_record("review") == {"b": {"useful": 1, "judged": 1}}
    assert offload.shape_record("prose") == {}


# --- VRD-3, IMP-7: pending ---


@pytest.mark.usefixtures("storage")
def test_vrd3_pending_keeps_order_and_duplicates_skips_unknown_judged_and_errors():
    offload.add("a", "t", None, offload.note_for("member", "ok", 1.0), "ok1")
    offload.add("a", "t", None, offload.note_for("member", "empty", 1.0), "empty1")
    offload.add("b", "t", None, offload.note_for("explorer", "error", 0.4, "boom: again; error in 9s"), "err1")
    offload.add("b", "t", None, "member; ok in 1.0s: says '; error in ' later", "okcolon")
    offload.add("c", "t", None, "route conversation; first turn error in 2.1s", "r1.1", status="error")  # IMP-7
    offload.add("c", "t", None, "looks like; error in 1s", "st-ok", status="ok")
    offload.add("c", "t", None, "member; ok in 1.0s", "judged1")
    offload.verdict("judged1", True)
    asked = ["ok1", "unknown", "err1", "empty1", "ok1", "judged1", "r1.1", "okcolon", "st-ok"]
    assert offload.pending(asked) == ["ok1", "empty1", "ok1", "okcolon", "st-ok"]
    offload.verdict("ok1", False)
    assert offload.pending(asked) == ["empty1", "okcolon", "st-ok"]


# --- OFF-6: the CLI ---


@pytest.mark.usefixtures("storage")
def test_off6_cli_list_add_verdict():
    empty = cli("list")
    assert empty.returncode == 0 and "No offloads recorded yet" in empty.stdout and "real work" in empty.stdout
    added = cli("add", "alpha", "read the scheduler", "--useful", "--note", "good", "--real", "a claim")
    assert added.returncode == 0 and added.stdout.strip() == "recorded: alpha — read the scheduler"
    assert offload.entries()[0].real == ("a claim",) and offload.entries()[0].useful is True
    offload.add("beta", "y", None, "member; ok in 1.0s", "c1")
    offload.add("beta", "x" * 60, None, "member; ok in 1.0s", "c2")
    judged = cli("verdict", "c1", "--not-useful", "--note", "wrong line", "--false", "it said 12")
    assert judged.returncode == 0
    assert judged.stdout.strip() == "recorded: beta — y — useful=False"
    assert offload.by_call("c1").false == ("it said 12",)
    listed = cli("list").stdout.splitlines()
    assert listed[0].split() == ["model", "used", "helped", "last"]
    assert listed[1].split()[:3] == ["beta", "2", "0/1"] and listed[2].split()[:3] == ["alpha", "1", "1/1"]
    assert listed[1].endswith("x" * 44) and "x" * 45 not in listed[1]
    unknown = cli("verdict", "nope", "--useful")
    assert unknown.returncode == 1 and "no offload with call id 'nope'" in unknown.stderr
    assert cli("verdict", "c1").returncode == 2  # one of --useful / --not-useful is required
    assert cli("add", "gamma", "t").returncode == 0 and offload.summary()["gamma"]["judged"] == 0


# --- the index ---


def literal_entries(records):
    """OFF-2 read straight off the spec: one entry per call id at the first one's place."""
    out, where = [], {}
    for r in records:
        call = r.get("call")
        if call and call in where:
            out[where[call]] = r
        else:
            if call:
                where[call] = len(out)
            out.append(r)
    return [dict(e, model=aliases.current(e["model"])) for e in out], where


def literal_answers(records, calls):
    entries, where = literal_entries(records)
    summary, last_used = {}, {}
    for e in entries:
        s = summary.setdefault(e["model"], {"offloads": 0, "useful": 0, "judged": 0, "last_task": "", "last_date": ""})
        s["offloads"] += 1
        s["useful"] += e["useful"] is True
        s["judged"] += e["useful"] is not None
        if e["date"] >= s["last_date"]:
            s["last_date"], s["last_task"] = e["date"], e["task"]
        last_used[e["model"]] = max(last_used.get(e["model"], ""), e["date"])
    latest = {call: records[max(i for i, r in enumerate(records) if r.get("call") == call)] for call in where}
    pending = [c for c in calls if c in latest and latest[c]["useful"] is None and not (
        latest[c]["status"] == "error" if "status" in latest[c] else "; error in " in latest[c]["note"].split(":")[0])]
    return entries, summary, last_used, pending


def literal_collection(e):
    """The `collection` field, else the part before ", " of the task's last parenthesised group at its end."""
    if "collection" in e:
        return e["collection"]
    task = e["task"]
    inner = task[task.rfind("(") + 1:-1] if task.endswith(")") else ""
    return inner.split(", ")[0] if ", " in inner else None


def literal_record(entries, collection, note=""):
    out = {}
    for e in entries:
        if e["useful"] is not None and literal_collection(e) == collection and note in e["note"]:
            r = out.setdefault(e["model"], {"useful": 0, "notUseful": 0, "judged": 0, "lastAt": ""})
            r["useful" if e["useful"] else "notUseful"] += 1
            r["judged"] += 1
            r["lastAt"] = max(r["lastAt"], e["date"])
    return out


def literal_shape(entries, shape):
    out = {}
    for e in entries:
        named = e["shape"] == shape if "shape" in e else e["task"].endswith(f", {shape})")
        if e["useful"] is not None and named:
            r = out.setdefault(e["model"], {"useful": 0, "judged": 0})
            r["useful"] += e["useful"]
            r["judged"] += 1
    return out


def literal_claims(entries):
    out = {}
    for e in entries:
        if e["useful"] is not None:
            r = out.setdefault(e["model"], {"judged": 0, "real": 0, "false": 0})
            r["judged"] += 1
            for key in ("real", "false"):
                r[key] += len(e[key]) if isinstance(e.get(key), list) else 0
    return out


@pytest.mark.parametrize("block", [offload.BLOCK, 50])
def test_index_matches_a_literal_reading_of_the_spec_as_the_log_grows(monkeypatch, block):
    monkeypatch.setattr(offload, "BLOCK", block)  # 50 bytes: every line is built from two blocks or more
    rnd = random.Random(7)
    rename({"older": "old", "old": "a"})
    tasks = ["fix (bench/x, code)", "look (bench/x, review)", "route me (bench/x:route)", "odd (a, b) (bench/x, code)",
             "(bench/y, code)", "plain", "ends (bench/x, code) not", "comma (bench/x,y, code)",
             "a prompt naming (bench/y, code) (bench/x, code)"]
    notes = ["member; ok in 1.0s", "explorer; error in 0.3s: x", "hit it", "member; ok in 1.0s: a; error in b"]
    calls = [f"{CALL}.member{i}" for i in range(30)]
    collections = [("bench/x", ""), ("bench/x", "hit"), ("bench/y", ""), ("bench/x,y", ""), ("bench/x,y", "hit"),
                   ("bench/none", "")]
    shapes = ["code", "review", "b) (bench/x, code", "prose"]
    records = []
    for _ in range(12):
        for _ in range(rnd.randint(1, 60)):
            r = {"date": f"2026-10-{rnd.randint(1, 6):02d}", "model": rnd.choice(["a", "b", "old", "older", "c"]),
                 "task": rnd.choice(tasks), "useful": rnd.choice([None, None, True, False]), "note": rnd.choice(notes)}
            if rnd.random() < 0.8:
                r["call"] = rnd.choice(calls)
            if rnd.random() < 0.3:
                r["status"] = rnd.choice(["ok", "error", "empty"])
            if rnd.random() < 0.4:  # claims, counted only while the entry in force is judged; a non-list is none
                r[rnd.choice(["real", "false"])] = rnd.choice([["x"], ["x", "y", "z"], [], "not a list"])
            if rnd.random() < 0.3:  # lines since the fields came: they win over anything in the task
                r["collection"], r["shape"] = rnd.choice(["bench/x", "bench/y"]), rnd.choice(["code", "prose"])
            records.append(r)
            fileio.append_bytes(offload.log_path(), json.dumps(r).encode() + b"\n")
        fileio.append_bytes(offload.log_path(), b'{"not": "an offload"}\n[1, 2]\n')
        asked = calls + ["unknown"] + calls[:5]
        entries, summary, last_used, pending = literal_answers(records, asked)
        assert stored(offload.entries()) == entries
        assert offload.summary() == summary
        assert offload.last_used() == last_used
        assert offload.pending(asked) == pending
        assert offload.claims() == literal_claims(entries)
        for collection, note in collections:
            assert offload.record(collection, note) == literal_record(entries, collection, note)
        for shape in shapes:
            assert offload.shape_record(shape) == literal_shape(entries, shape)
    assert offload.index().builds == 1


def test_index_rebuilds_when_the_file_is_replaced_or_cut():
    offload.add("a", "t", None, "", "c1")
    offload.add("b", "t", None, "", "c2")
    assert set(offload.last_used()) == {"a", "b"}
    fileio.write_atomic(offload.log_path(), json.dumps({"date": "2026-01-01", "model": "z", "task": "t", "useful": None,
                                                        "note": "", "call": "c9"}) + "\n" + "\n" * 200)
    assert offload.last_used() == {"z": "2026-01-01"} and offload.by_call("c1") is None
    with open(offload.log_path(), "r+b") as f:
        f.truncate(0)
    assert offload.last_used() == {}
    offload.add("y", "t")
    assert list(offload.last_used()) == ["y"]
    os.unlink(offload.log_path())
    assert offload.entries() == []
    assert offload.index().builds == 3


LINE = ('{"date": "2026-%02d-%02d", "model": "m%d", "task": "task %d (bench/core, %s)", "useful": %s, '
        '"note": "member; ok in 1.0s", "call": "p20261017-140312-%04x.member%d"}\n')


def test_index_100k_lines_built_once_then_appends_only_even_from_another_process():
    """Routing cost does not grow with the log: after the build, reads cost no file reads at all."""
    shapes = ("code", "review", "design")
    verdicts = ("null", "null", "true", "false")
    blob = "".join(
        LINE % (1 + i % 12, 1 + i % 28, i % 40, i, shapes[i % 3], verdicts[i % 4], i % 0x10000, i % 3)
        for i in range(100_000)
    ).encode()
    offload.log_path().write_bytes(blob)
    index = offload.index()
    assert len(offload.last_used()) == 40
    assert (index.bytes_read, index.builds) == (len(blob), 1)

    asked = [f"p20261017-140312-{i:04x}.member{i % 3}" for i in range(0, 400, 7)]
    for _ in range(50):
        offload.last_used()
        offload.summary()
        offload.pending(asked)
        offload.shape_record("code")
        offload.record("core")
    assert (index.bytes_read, index.builds) == (len(blob), 1)

    done = subprocess.run([sys.executable, "-m", "benchwarmers.panel.offload", "add", "newcomer", "a new task (bench/core, code)",
                           "--useful"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    line = offload.log_path().read_bytes()[len(blob):]
    assert offload.last_used()["newcomer"] == datetime.date.today().isoformat()
    assert offload.shape_record("code")["newcomer"] == {"useful": 1, "judged": 1}
    assert (index.bytes_read, index.builds) == (len(blob) + len(line), 1)


def test_index_keeps_no_lines_only_a_few_numbers_per_entry():
    """Issue 7: a 100,000-line log cost the gateway 170 MB as dicts; now well under 300 bytes an entry."""
    rnd = random.Random(3)
    records = []
    for i in range(10_000):
        records.append({"date": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}", "model": f"vendor-model-{i % 40}",
                        "task": f"prompt {rnd.random()} (bench/core, code)", "useful": None,
                        "note": "member; ok in 1.0s", "call": f"p20261017-140312-{i:05x}.member1",
                        "status": "ok", "seconds": 1.0})
        if i % 5 == 0:
            records.append(dict(records[-1], useful=True, note=f"checked {rnd.random()}", real=["a claim"]))
    write_log(records)
    tracemalloc.start()
    try:
        offload.index().refresh()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 300 * 10_000
    assert offload.by_call("p20261017-140312-00005.member1").stored == records[7]  # read back whole, in force
    assert offload.record("core")["vendor-model-5"]["judged"] == 250


def test_index_notices_a_rewrite_in_place_when_it_reads_a_line_back():
    first = {"date": "2026-10-01", "model": "aa", "task": "t", "useful": None, "note": "", "call": "c1"}
    write_log([first, dict(first, call="c2")])
    assert offload.by_call("c1").model == "aa"
    builds = offload.index().builds
    with open(offload.log_path(), "r+b") as f:  # same inode, same size: only reading the line back tells
        f.write(json.dumps(dict(first, model="bb")).encode())
    assert offload.by_call("c1").model == "bb"
    assert offload.last_used() == {"bb": "2026-10-01", "aa": "2026-10-01"}
    assert offload.index().builds == builds + 1
