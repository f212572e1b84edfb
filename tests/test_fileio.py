"""Safe writes (LOCK-1..5): locked updates, atomic replace, whole JSONL lines under races."""

import errno
import json
import multiprocessing
import os
import subprocess
import sys
import threading

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.calling import ledger

THREADS = 32
PROCESSES = 4
LINES_PER_THREAD = 25


def _append_many(path, proc):
    def worker(t):
        for i in range(LINES_PER_THREAD):
            # a long, varied payload makes torn writes likely if appends were not whole
            fileio.append_jsonl(path, {"p": proc, "t": t, "i": i, "pad": "é" * (50 + (i * 97) % 4000)})

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def _proc_main(path, proc, start):
    start.wait()
    _append_many(path, proc)


def test_lock_jsonl_race_32_threads_in_4_processes_loses_and_tears_nothing(tmp_path):
    path = tmp_path / "log.jsonl"
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_proc_main, args=(str(path), p, start)) for p in range(PROCESSES)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    raw = path.read_bytes().split(b"\n")
    assert raw[-1] == b""
    records = [json.loads(line) for line in raw[:-1]]  # every line parses: none torn
    assert len(records) == THREADS * PROCESSES * LINES_PER_THREAD
    seen = {(r["p"], r["t"], r["i"]) for r in records}
    assert len(seen) == len(records)


def _increment_in_process(path, n):
    for _ in range(n):
        fileio.update(path, lambda d: d.__setitem__("n", d.get("n", 0) + 1))


def test_lock5_anchor_threads_and_processes(tmp_path):
    threaded = tmp_path / "threads.json"
    threads = [threading.Thread(target=_increment_in_process, args=(threaded, 50)) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert json.loads(threaded.read_text())["n"] == 200

    procs_file = tmp_path / "procs.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_increment_in_process, args=(str(procs_file), 50)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert json.loads(procs_file.read_text())["n"] == 150
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".part")]


def test_lock1_timeout_message(tmp_path):
    path = tmp_path / "busy.json"
    with fileio.lock(path):
        with pytest.raises(TimeoutError, match="busy.json stayed locked for 0.1s"):
            with fileio.lock(path, timeout=0.1):
                pass


def test_lock2_update_writes_only_on_change(tmp_path):
    path = tmp_path / "a.json"
    assert fileio.update(path, lambda d: d.setdefault("x", 1)) == 1
    before = os.stat(path).st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))
    fileio.update(path, lambda d: None)
    assert os.stat(path).st_mtime_ns == before - 10**9
    assert path.read_text() == '{\n  "x": 1\n}\n'
    path.write_text("")
    fileio.update(path, lambda d: d.update(y=2))  # an empty file holds nothing to lose
    assert json.loads(path.read_text()) == {"y": 2}


@pytest.mark.parametrize("text", ["[1, 2]", '{"kept": 1', "\xff\xfe"])
def test_resp6_update_never_writes_over_a_file_it_cannot_read(tmp_path, text):
    """RESP-6 applied to every writer (LOCK-2 tightened): an unreadable file is refused, never replaced."""
    path = tmp_path / "config" / "retired.json"
    path.parent.mkdir()
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(fileio.Unreadable, match=r"config/retired.json .*; fix it by hand first"):
        fileio.update(path, lambda d: d.update(y=2))
    assert path.read_bytes() == text.encode("latin-1")


def test_lock3_atomic_replace_leaves_no_temp(tmp_path):
    path = tmp_path / "atomic" / "f.txt"
    fileio.write_atomic(path, "one")
    fileio.write_atomic(path, "two")
    assert path.read_text() == "two"
    assert os.listdir(path.parent) == ["f.txt"]


def test_readers_skip_torn_lines_and_warn_once(tmp_path, capsys):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2, "tor\n[1]\n{"a": 3}\n{"bad\n')
    assert fileio.read_jsonl(path) == [{"a": 1}, {"a": 3}]
    assert capsys.readouterr().err.count("skipped a torn or corrupt line") == 1


def test_read_json_comments_and_stat_cache(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"_why": "x", "a": 1}')
    assert fileio.read_json(path) == {"a": 1}
    assert fileio.read_json(path, comments=False) == {"_why": "x", "a": 1}
    path.write_text('{"a": 22}')
    assert fileio.read_json(path) == {"a": 22}
    path.write_text("nope")
    assert fileio.read_json(path) == {}
    assert fileio.read_json(tmp_path / "none.json") == {}


def test_read_json_hands_back_one_parse_until_the_file_changes(tmp_path):
    """Hot paths call read_json per alias: an unchanged file costs a stat, never a parse or a copy (issue 7)."""
    path = tmp_path / "c.json"
    fileio.write_atomic(path, '{"_why": "x", "a": 1}')
    plain, raw = fileio.read_json(path), fileio.read_json(path, comments=False)
    assert fileio.read_json(path) is plain and fileio.read_json(path, comments=False) is raw
    assert plain == {"a": 1} and raw == {"_why": "x", "a": 1}
    fileio.write_atomic(path, '{"_why": "y", "a": 2, "b": 3}')
    assert fileio.read_json(path) == {"a": 2, "b": 3} and fileio.read_json(path, comments=False)["_why"] == "y"


def test_lock3_a_failed_write_leaves_no_temp_and_the_old_file(tmp_path):
    path = tmp_path / "w" / "f.json"
    fileio.write_atomic(path, "old")
    with pytest.raises(TypeError):
        fileio.write_atomic(path, b"not text")
    assert path.read_text() == "old" and os.listdir(path.parent) == ["f.json"]


def test_lock1_threads_of_one_process_exclude_each_other(tmp_path):
    path = tmp_path / "shared.json"
    inside, overlaps = [], []

    def hold():
        with fileio.lock(path):
            if inside:
                overlaps.append(1)
            inside.append(1)
            threading.Event().wait(0.005)
            inside.pop()

    threads = [threading.Thread(target=hold) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert overlaps == [] and (tmp_path / "shared.json.lock").exists()


def test_update_mode_and_dumps(tmp_path):
    path = tmp_path / "secret.json"
    fileio.update(path, lambda d: d.update(k="é"), mode=0o600)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert path.read_text(encoding="utf-8") == '{\n  "k": "é"\n}\n' == fileio.dumps({"k": "é"})


APPENDER = """
import json, resource, signal, sys
from benchwarmers.core import fileio
from benchwarmers.calling import ledger
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
failed = []
try:
    fileio.append_jsonl(sys.argv[2], {"x": "y" * 200})
except OSError as exc:
    failed.append(exc.errno)
written = ledger.write({"t": 1796000000.0, "alias": "a", "status": "ok", "note": "z" * 200})
print(json.dumps({"failed": failed, "ledger_written": written}))
"""


def test_a_failed_append_is_cut_back_in_every_log_and_a_torn_tail_is_ended(tmp_path):
    """Nothing-lost item 1 at the file level: a real EFBIG (a file-size limit in a real process) part way
    through an append leaves each file as it was, for `append_jsonl` and the usage ledger alike; the next
    append after a torn tail ends that line first, so both records read back."""
    log = tmp_path / "log.jsonl"
    month = ledger.month_file(1796000000.0)
    log.write_bytes(b'{"a": 1}\n' * 10)
    month.parent.mkdir(parents=True, exist_ok=True)
    month.write_bytes(b'{"t": 1}\n' * 10)
    limit = len(b'{"a": 1}\n') * 10 + 20  # both files hold 90 bytes: room for 20 more, not a whole line
    done = subprocess.run([sys.executable, "-c", APPENDER, str(limit), str(log)], cwd=paths.CODE,
                          capture_output=True, text=True, env=dict(os.environ))
    assert json.loads(done.stdout) == {"failed": [errno.EFBIG], "ledger_written": False}, done.stderr
    assert log.read_bytes() == b'{"a": 1}\n' * 10 and month.read_bytes() == b'{"t": 1}\n' * 10
    log.write_bytes(b'{"a": 1}\n{"torn": ')
    fileio.append_jsonl(log, {"b": 2})
    assert log.read_bytes() == b'{"a": 1}\n{"torn": \n{"b": 2}\n'
    assert fileio.read_jsonl(log) == [{"a": 1}, {"b": 2}]
