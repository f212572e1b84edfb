"""Nothing lost under real faults (the nothing-lost issue, items 1-4, 7 and 8).

Every fault here really happens: a file-size limit set on the real gateway process (`EFBIG`),
a full or read-only tmpfs (when the tests run as root), a torn log written before the gateway
starts, real signals sent to a real `python gateway.py`. The upstream is the project's own
(`benchwarmers.demo.demo.Upstream`) on 127.0.0.1.
"""

import concurrent.futures
import contextlib
import http.client
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.panel import panel
from benchwarmers.demo import demo
from benchwarmers.demo.demo import Upstream
from benchwarmers.store import store

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
MODELS = {"quick": {"answer": "Quick: the loop skips the first item.", "latency": 0.01, "context_window": 32000},
          "steady": {"answer": "Steady: off by one at index zero.", "latency": 0.02, "context_window": 32000},
          "snail": {"answer": "Snail: I would have agreed.", "latency": 120, "context_window": 32000}}


@pytest.fixture
def up():
    with Upstream(models={name: dict(spec) for name, spec in MODELS.items()}) as upstream:
        yield upstream


@pytest.fixture
def folder(home, up, monkeypatch):
    """A data folder whose `core` collection is the quick and steady models, no explorers."""
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    demo.register(up)
    demo.set_collection("core", ["quick", "steady"])
    settings()
    return home


def settings(**extra):
    fileio.write_atomic(paths.file("config", "gateway.json"),
                        json.dumps({"max_calls": 5, "max_explorers": 0, **extra}) + "\n")


def log_path():
    return paths.file("metrics", "offloads.jsonl")


def log_lines():
    return log_path().read_bytes().split(b"\n")


class Gateway:
    """A real `python gateway.py --port 0` on the test's data folder."""

    def __init__(self, *args, preexec=None):
        self.process = subprocess.Popen([sys.executable, "gateway.py", "--port", "0", *args], cwd=paths.CODE,
                                        env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, preexec_fn=preexec)
        banner = self.process.stdout.readline()
        assert banner.startswith("bench gateway on http://127.0.0.1:"), banner + self.process.stderr.read()
        self.port = int(banner.split("127.0.0.1:")[1].split("/")[0])

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()

    def ask(self, model="bench/core"):
        return self.request("POST", "/v1/chat/completions",
                            {"model": model, "messages": [{"role": "user", "content": PROMPT}]})

    def stop(self, signum=signal.SIGTERM):
        self.process.send_signal(signum)
        self.process.wait(60)
        return self.process.returncode

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process.stdout.close()
        self.process.stderr.close()


@contextlib.contextmanager
def running(*args, preexec=None):
    gateway = Gateway(*args, preexec=preexec)
    try:
        yield gateway
    finally:
        gateway.close()


def file_size_limit(limit):
    """A preexec: writes past `limit` bytes fail with EFBIG (SIGXFSZ ignored, as a server would)."""
    def limit_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    return limit_files


def seat_line(call, collection="bench/core"):
    return json.dumps({"date": "2026-12-01", "model": "quick", "task": "earlier work (bench/core, general)",
                       "useful": None, "note": "member; ok in 1.0s", "call": call, "status": "ok", "seconds": 1.0,
                       "collection": collection, "shape": "general"}).encode()


def test_item1_a_failed_append_is_undone_and_the_next_one_lands_whole(folder):
    """A write that fails part way (a file-size limit, EFBIG) leaves no half line: the seats' answers
    still come back, marked not logged; once space is back the next records are whole lines."""
    filler = seat_line("p20261201-000000-0000000000000000.member1") + b"\n"
    log_path().write_bytes(filler * 20)
    limit = len(filler) * 20 + 40  # room for the start of a seat line, not all of it
    with running(preexec=file_size_limit(limit)) as gateway:
        status, reply = gateway.ask()
        assert status == 200
        seats = reply["bench"]["seats"]
        assert [s["status"] for s in seats] == ["ok", "ok"]
        assert all(s["logged"] is False and "File too large" in s["log_error"] for s in seats)
        assert "could not be written" in reply["bench"]["log"]
        assert log_path().stat().st_size == len(filler) * 20  # cut back: not a byte of the failed lines
        status, health = gateway.request("GET", "/health")
        assert status == 200 and health["data_folder"]["writable"] is False
        assert "File too large" in health["data_folder"]["problem"]

        resource.prlimit(gateway.process.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)  # space is back
        status, reply = gateway.ask()
        assert status == 200 and all("logged" not in s for s in reply["bench"]["seats"])
        call = reply["bench"]["seats"][0]["call"]
        assert gateway.request("POST", "/bench/verdict", {"call": call, "useful": True})[0] == 200
        assert gateway.request("GET", "/health")[1] == {"ok": True}
    lines = [line for line in log_lines() if line]
    assert len(lines) == 20 + 2 + 1 and all(json.loads(line) for line in lines)


def test_item2_a_torn_tail_and_a_garbage_line_lose_no_verdict(folder):
    """A log whose last line was torn by a crash, with a garbage line in the middle: every verdict
    recorded after start is kept across a restart, none is left pending."""
    earlier = [f"p20261201-000000-{i:016x}.member1" for i in range(2)]
    log_path().write_bytes(seat_line(earlier[0]) + b"\n" + b"\x00garbage{{\n" + seat_line(earlier[1]) + b"\n"
                           + b'{"date": "2026-12-01", "model": "qu')
    with running() as gateway:
        status, reply = gateway.ask()
        calls = earlier + [s["call"] for s in reply["bench"]["seats"]]
        for call in calls:
            status, judged = gateway.request("POST", "/bench/verdict", {"call": call, "useful": True})
            assert status == 200 and judged["ok"] is True
        assert gateway.stop() == 0
    with running() as gateway:
        status, record = gateway.request("GET", "/bench/record?collection=bench/core")
        assert record["aliases"]["quick"]["judged"] == 3 and record["aliases"]["steady"]["judged"] == 1
        assert gateway.request("POST", "/bench/pending", {"calls": calls})[1] == {"pending": []}
    assert log_lines()[3] == b'{"date": "2026-12-01", "model": "qu'  # the torn line was ended, nothing glued to it


def mount(*args):
    """`mount ARGS`, or skip: making a file system fail for real needs root and a kernel that lets it mount."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root; the file-size limit test covers the same code without it")
    if subprocess.run(["mount", *args], capture_output=True).returncode != 0:
        pytest.skip(f"this machine does not let root run mount {' '.join(args)}")


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """A 1 MB tmpfs as the data folder."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk))
    monkeypatch.setenv("BENCHWARMERS_HOME", str(disk / "data"))
    paths.reload()
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)])
        paths.reload()


def fill(disk):
    """Fill the file system to its last byte, the log's last page too (tmpfs hands out whole pages)."""
    size = log_path().stat().st_size
    pad = -(size + len('{"pad": ""}\n')) % 4096
    with open(log_path(), "ab") as log:
        log.write(b'{"pad": "' + b" " * pad + b'"}\n')  # not an offload line: readers pass over it
    fd = os.open(disk / "ballast", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)


def refused_and_health(gateway, call, status, cause):
    """While the fault holds: the verdict's JSON refusal, a panel answering every seat, `/health`."""
    got, refused = gateway.request("POST", "/bench/verdict", {"call": call, "useful": True})
    assert got == status and refused["error"]["code"] == status
    assert refused["error"]["message"].startswith(f"the data folder {paths.located()[0]} could not be written")
    assert refused["error"]["message"].endswith(cause)
    got, reply = gateway.ask()
    assert got == 200 and [s["status"] for s in reply["bench"]["seats"]] == ["ok", "ok"]
    assert all(s["logged"] is False for s in reply["bench"]["seats"])
    health = gateway.request("GET", "/health")[1]
    assert health["data_folder"]["writable"] is False and cause in health["data_folder"]["problem"]


def test_item3_a_full_disk_is_answered_507_never_a_dropped_connection(small_disk, up, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    demo.register(up)
    demo.set_collection("core", ["quick", "steady"])
    settings()
    with running() as gateway:
        call = gateway.ask()[1]["bench"]["seats"][0]["call"]
        fill(small_disk)
        refused_and_health(gateway, call, 507, "[Errno 28] No space left on device")
        os.unlink(small_disk / "ballast")
        assert gateway.request("POST", "/bench/verdict", {"call": call, "useful": True})[0] == 200
        assert gateway.request("GET", "/health")[1] == {"ok": True}


def test_item3_a_read_only_log_folder_is_answered_503(folder, tmp_path):
    """The data folder's `metrics/` bind-mounted read-only over itself (EROFS), then writable again."""
    call = "p20261201-000000-00000000000000aa.member1"
    log_path().write_bytes(seat_line(call) + b"\n")
    logs = str(log_path().parent)
    mount("--bind", logs, logs)
    try:
        mount("-o", "remount,bind,ro", logs)
        with running() as gateway:
            refused_and_health(gateway, call, 503, "[Errno 30] Read-only file system")
            subprocess.run(["mount", "-o", "remount,bind,rw", logs], check=True)
            assert gateway.request("POST", "/bench/verdict", {"call": call, "useful": True})[0] == 200
            assert gateway.request("GET", "/health")[1] == {"ok": True}
    finally:
        subprocess.run(["umount", "-l", logs])


class Stream:
    """One streamed panel read on its own thread; `seated` is set once a fast seat's section arrived."""

    def __init__(self, port, path="/v1/chat/completions", extra=None):
        self.port, self.path, self.extra = port, path, extra or {}
        self.text = ""
        self.seated = threading.Event()
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        body = {"model": "bench/core", "stream": True, "messages": [{"role": "user", "content": PROMPT}],
                **self.extra}
        conn.request("POST", self.path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        while True:
            line = resp.fp.readline()
            if not line:
                break
            self.text += line.decode()
            if "Quick: the loop" in self.text:
                self.seated.set()
        conn.close()

    def events(self):
        return [json.loads(line[6:]) for line in self.text.splitlines()
                if line.startswith("data: {")]


@pytest.mark.parametrize("signum, workers", [(signal.SIGTERM, 1), (signal.SIGINT, 1), (signal.SIGTERM, 2)])
def test_item7_a_signal_lets_panels_end_and_loses_no_seat(folder, storage, signum, workers):
    """8 streamed panels in flight, each with a seat that would take minutes: SIGTERM or SIGINT stops
    taking connections, gives them the grace, then ends the slow seats as "gateway stopped" with their
    real seconds; every stream gets its sections and its proper end, every seat and panel is logged,
    and the process exits 0 (with `--workers 2`, each process drains its own)."""
    demo.set_collection("core", ["quick", "snail"])
    settings(stop_grace=1)
    with running("--workers", str(workers)) as gateway:
        streams = [Stream(gateway.port) for _ in range(8)]
        for stream in streams:
            assert stream.seated.wait(60)
        assert gateway.stop(signum) == 0
        for stream in streams:
            stream.thread.join(30)
            assert not stream.thread.is_alive()
            assert stream.text.rstrip().endswith("data: [DONE]")
            assert "_error: gateway stopped_" in stream.text
            last = stream.events()[-1]
            assert [s["status"] for s in last["bench"]["seats"]] == ["ok", "error"]
    seats = store.current().records(store.OFFLOADS)
    assert len(seats) == 16 and len({s["call"] for s in seats}) == 16
    stopped = [s for s in seats if s["model"] == "snail"]
    assert all(s["status"] == "error" and s["note"].endswith("gateway stopped") for s in stopped)
    assert all(s["seconds"] < 30 for s in stopped)  # the real time it was asked, not the 420 s limit
    assert len(store.current().records(store.CALLS)) == 8


def test_item7_streams_of_other_formats_end_in_their_own_shape(folder):
    """Item 7: a stream in Anthropic's and in Ollama's format, stopped mid-panel, gets its stopped seat's
    section and its own proper end (`message_stop`; a `done` line), and the process exits 0."""
    demo.set_collection("core", ["quick", "snail"])
    settings(stop_grace=1)
    with running() as gateway:
        anthropic = Stream(gateway.port, "/v1/messages", {"max_tokens": 64})
        ollama = Stream(gateway.port, "/api/chat")
        assert anthropic.seated.wait(60) and ollama.seated.wait(60)
        assert gateway.stop() == 0
        for stream in (anthropic, ollama):
            stream.thread.join(30)
            assert "gateway stopped" in stream.text
    assert anthropic.text.rstrip().splitlines()[-2:] == ["event: message_stop", 'data: {"type": "message_stop"}']
    last = json.loads(ollama.text.strip().splitlines()[-1])
    assert last["done"] is True and [s["status"] for s in last["bench"]["seats"]] == ["ok", "error"]


def test_item7_the_demo_folder_is_thrown_away_on_sigterm(tmp_path):
    env = {**os.environ, "BENCHWARMERS_HOME": str(tmp_path / "ignored")}
    process = subprocess.Popen([sys.executable, "gateway.py", "--demo", "--port", "0"], cwd=paths.CODE, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = [process.stdout.readline() for _ in range(3)]
        folder = next(line for line in lines if line.startswith("Data folder")).split(": ", 1)[1].strip()
        assert os.path.isdir(folder)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        assert not os.path.exists(folder)
    finally:
        if process.poll() is None:
            process.kill()
        process.stdout.close()


def test_item8_panel_ids_from_two_processes_at_full_rate_never_collide(folder, storage):
    """Two gateways on one data folder, asked as fast as they answer: every panel id is distinct and has
    the documented shape (`pYYYYMMDD-HHMMSS-` + 16 hex: 64 random bits)."""
    with running() as first, running() as second:
        def hammer(gateway):
            return [gateway.ask()[1]["bench"]["panel"] for _ in range(40)]
        results = {}
        threads = [threading.Thread(target=lambda g=g: results.__setitem__(g.port, hammer(g))) for g in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    ids = [panel_id for found in results.values() for panel_id in found]
    assert len(ids) == 80 and len(set(ids)) == 80
    assert all(len(i) == len("p20261203-101010-") + 16 and int(i[17:], 16) >= 0 for i in ids)
    logged = {s["call"].rsplit(".", 1)[0] for s in store.current().records(store.OFFLOADS)}
    assert logged == set(ids)
    assert panel.panel_id() != panel.panel_id()


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def abandon(port, prompt):
    """Send a streamed panel request, read its status line, hang up: `status`."""
    body = json.dumps({"model": "bench/core", "stream": True, "messages": [{"role": "user", "content": prompt}]})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_review2_abandoned_streams_are_capped_logged_and_their_memory_returned(folder, up):
    """Security review 2: a burst of streamed requests with 1 MB prompts, each abandoned right after its
    200, to a slow collection: past `max_panels` they get 503 + Retry-After, every panel taken is still
    logged seat by seat, and the gateway's memory comes back near where it started."""
    up.models["quick"].update(latency=4, context_window=2_000_000)
    demo.set_collection("core", ["quick"])
    settings(max_panels=12)
    prompt = "http://a" + ")" * 1_000_000
    with running() as gateway:
        assert gateway.ask()[0] == 200
        baseline = rss_mb(gateway.process.pid)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: abandon(gateway.port, prompt), range(40)))
        assert statuses.count(200) == 12 and statuses.count(503) == 28, statuses
        busy = gateway.request("POST", "/v1/chat/completions",
                               {"model": "bench/core", "messages": [{"role": "user", "content": "hi"}]})
        assert busy[0] == 503 and "max_panels" in busy[1]["error"]["message"], busy
        calls = paths.file("runs", "gateway", "calls.jsonl")
        deadline = time.monotonic() + 60
        while len(fileio.read_jsonl(calls)) < 13 and time.monotonic() < deadline:
            time.sleep(0.2)
        seats = fileio.read_jsonl(log_path())
        assert len(seats) == 13 and all(s["status"] == "ok" for s in seats)
        deadline = time.monotonic() + 10  # the last panel leaves the count just after its calls line
        while gateway.ask()[0] == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(fileio.read_jsonl(calls)) == 14  # the cap was free again
        assert rss_mb(gateway.process.pid) < baseline + 40, (baseline, rss_mb(gateway.process.pid))
