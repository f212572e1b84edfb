"""The one reader thread for bodies nobody listens to (metrics/net/gather.py), against real sockets.

Quiet calls (no `on_delta`, `on_chunk` or first-token window) are read by `transport.READER`; the same
call with a listener is read on its own thread. Both must give the same reply, the same timings on
the wire and the same endings: deadline, STOP, [DONE] without an end, too large, broken off.
"""

import json
import socket
import threading
import time

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.net import gather, transport
from benchwarmers.models import registry
from benchwarmers.calling import client
from benchwarmers.demo.demo import Upstream

WORDS = " ".join(f"w{i}" for i in range(120))
MODELS = {"paced": {"answer": WORDS, "latency": 0.6}, "quick": {"answer": "short and sweet"},
          "drop": {"fail": "drop", "answer": "one two three four five six"}}


@pytest.fixture(scope="module")
def up():
    with Upstream(MODELS) as server:
        yield server


def register(base, aliases):
    fileio.write_atomic(paths.file("config", "endpoints.json"), fileio.dumps({"e": {"base": base, "default": True}}))
    for alias in aliases:
        registry.add_registration(alias, alias, "e")


@pytest.fixture
def bench(up):
    register(up.base_url, MODELS)
    return up


class Raw:
    """A server that answers every request on a connection with `reply(conn)`, raw bytes and pauses."""

    def __init__(self, reply):
        self.reply = reply
        self.done = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), b"0"))
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += conn.recv(65536)
            try:
                self.reply(conn)
            except OSError:
                pass

    def close(self):
        self.done.set()
        self.listener.close()


@pytest.fixture
def raw():
    made = []

    def make(reply):
        server = Raw(reply)
        made.append(server)
        register(server.base_url, ["m"])
        return server

    yield make
    for server in made:
        server.close()


def event(text="", finish=None):
    delta = {"content": text} if text else {}
    return b"data: " + json.dumps({"model": "m", "choices": [{"index": 0, "delta": delta,
                                                                "finish_reason": finish}]}).encode() + b"\n\n"


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")


def test_a_quiet_call_is_gathered_and_answers_as_a_listened_one(bench):
    heard = []
    live = client.chat("paced", "hi", on_delta=lambda kind, piece: heard.append(piece))
    before = len(SEEN)
    quiet = client.chat("paced", "hi")
    assert len(SEEN) == before + 1  # the reader took this one
    assert quiet["text"] == live["text"] == "".join(heard) == bench.answer_for("paced", "hi")
    assert (quiet["error"], quiet["status"], quiet["finish"], quiet["usage"]) == ("", 200, "stop", live["usage"])
    # the first token's time is when it arrived, not when the whole body had
    assert quiet["first_token_s"] < 0.3 < quiet["seconds"] + 0.05


SEEN = []  # every body handed to the reader in this module


@pytest.fixture(autouse=True)
def count_gathered(monkeypatch):
    add = transport.READER.add

    def counted(body):
        SEEN.append(body)
        add(body)

    monkeypatch.setattr(transport.READER, "add", counted)


def test_many_quiet_calls_at_once_each_get_their_own_body(bench):
    results = [None] * 40
    prompts = [f"question {i}" for i in range(40)]

    def ask(i):
        results[i] = client.chat("quick" if i % 2 else "paced", prompts[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, res in enumerate(results):
        assert res["error"] == "" and res["text"] == bench.answer_for("quick" if i % 2 else "paced", prompts[i])
    assert not transport.READER.bodies  # every body was handed back


def test_a_gathered_connection_is_kept_alive(bench):
    transport.POOL.clear()
    client.chat("paced", "one")
    client.chat("paced", "two")
    sockets = {body.fd for body in SEEN[-2:]}
    assert len(sockets) == 1  # the second call reused the first one's connection


def test_a_stream_that_breaks_off_is_an_error_not_an_answer(bench):
    res = client.chat("drop", "hi")
    assert res["error"].startswith("Error: client failed: the stream broke off before it finished")
    assert res["text"] == ""


def test_done_without_the_end_of_the_body_gets_drain_seconds(raw):
    def reply(conn):
        conn.sendall(SSE_HEAD + chunk(event("all here", "stop")) + chunk(b"data: [DONE]\n\n"))
        server.done.wait(30)  # never sends the last chunk

    server = raw(reply)
    started = time.monotonic()
    res = client.chat("m", "hi", timeout=30)
    elapsed = time.monotonic() - started
    assert (res["text"], res["error"], res["timed_out"]) == ("all here", "", False)
    assert transport.DRAIN <= elapsed < transport.DRAIN + gather.SCAN + 0.5
    assert transport.POOL.take(("http", "127.0.0.1", int(server.base_url.split(":")[2].split("/")[0]))) is None


def test_a_close_after_done_without_the_last_chunk_keeps_the_answer(raw):
    def reply(conn):
        conn.sendall(SSE_HEAD + chunk(event("all here", "stop")) + chunk(b"data: [DONE]\n\n"))
        server.done.wait(0.05)  # then closes: the body never ends as chunked framing says it must

    server = raw(reply)
    res = client.chat("m", "hi", timeout=30)
    assert (res["text"], res["error"], res["timed_out"]) == ("all here", "", False)
    assert transport.POOL.take(("http", "127.0.0.1", int(server.base_url.split(":")[2].split("/")[0]))) is None


def test_stop_while_draining_after_done_keeps_the_answer(raw):
    def reply(conn):
        conn.sendall(SSE_HEAD + chunk(event("all here", "stop")) + chunk(b"data: [DONE]\n\n"))
        server.done.wait(30)

    server = raw(reply)
    timer = threading.Timer(transport.DRAIN / 2, client.STOP.set)  # during the DRAIN after [DONE]
    timer.start()
    try:
        res = client.chat("m", "hi", timeout=30)
    finally:
        timer.cancel()
        client.STOP.clear()
    assert (res["text"], res["error"], res["timed_out"]) == ("all here", "", False)


def test_a_body_past_the_size_limit_ends_too_large(raw, monkeypatch):
    monkeypatch.setattr(transport, "MAX_REPLY", 5000)

    def reply(conn):
        conn.sendall(SSE_HEAD)
        for _ in range(100):
            conn.sendall(chunk(event("x" * 100)))

    raw(reply)
    res = client.chat("m", "hi")
    assert res["error"] == "Error: client failed: the reply is over 0.005 MB"


def test_a_chunked_body_closed_mid_chunk_broke_off(raw):
    raw(lambda conn: conn.sendall(SSE_HEAD + chunk(event("half")) + b"40\r\ndata: {"))
    res = client.chat("m", "hi")
    assert res["error"].startswith("Error: client failed: the reply broke off part way")


def test_a_silent_body_times_out_by_its_deadline(raw):
    def reply(conn):
        conn.sendall(SSE_HEAD + chunk(event("a")))
        server.done.wait(30)

    server = raw(reply)
    started = time.monotonic()
    res = client.chat("m", "hi", timeout=0.6)
    assert res["timed_out"] and res["text"] == ""
    assert time.monotonic() - started < 0.6 + gather.SCAN + 0.5


def test_stop_ends_every_gathered_body(raw):
    def reply(conn):
        conn.sendall(SSE_HEAD + chunk(event("a")))
        server.done.wait(30)

    server = raw(reply)
    timer = threading.Timer(0.3, client.STOP.set)
    timer.start()
    try:
        started = time.monotonic()
        res = client.chat("m", "hi", timeout=60)
        assert res["timed_out"] and time.monotonic() - started < 2
    finally:
        timer.cancel()
        client.STOP.clear()


def test_a_body_that_came_with_the_headers_never_reaches_the_reader(raw):
    body = b"".join(chunk(event(w)) for w in ("all ", "at ", "once")) + chunk(event("", "stop")) + b"0\r\n\r\n"
    raw(lambda conn: conn.sendall(SSE_HEAD + body))
    before = len(SEEN)
    res = client.chat("m", "hi")
    assert res["text"] == "all at once" and res["error"] == ""
    assert len(SEEN) in (before, before + 1)  # usually none: http.client had read it all with the headers


@pytest.mark.parametrize("cut", range(1, 40))
def test_chunked_framing_split_anywhere(cut):
    wire = chunk(b"hello ") + b"5;ext=1\r\nworld\r\n" + b"0\r\nX-Trailer: t\r\n\r\n"
    framing = gather.Chunked()
    out = framing.feed(wire[:cut]) + framing.feed(wire[cut:])
    assert out == b"hello world" and framing.complete


def test_chunked_framing_refuses_a_bad_size_line():
    with pytest.raises(Exception):
        gather.Chunked().feed(b"zz\r\n")


def test_begin_sends_at_once_on_a_kept_connection_and_the_answer_waits(bench):
    client.chat("paced", "warm the pool")
    seen = len(bench.requests)
    finish = client.begin("paced", "sent before anyone waits")
    deadline = time.monotonic() + 5
    while len(bench.requests) == seen and time.monotonic() < deadline:
        time.sleep(0.005)  # the upstream records the request from its own thread
    assert bench.requests[-1]["body"]["messages"][-1]["content"] == "sent before anyone waits"
    res = finish()
    assert res["text"] == bench.answer_for("paced", "sent before anyone waits") and res["attempts"] == 1


def test_begin_leaves_opening_a_connection_to_the_waiting_half(bench):
    transport.POOL.clear()
    finish = client.begin("quick", "cold")
    assert finish.args[0].early is None  # nothing sent: connecting could have held up the caller
    res = finish()
    assert res["text"] == bench.answer_for("quick", "cold") and res["attempts"] == 1


def odd_stream():
    """Every way an SSE stream may be written: comments, other fields, CRLF, data split over lines, a blank
    data line, two events with no blank line between them, then plain one-line events (data that is not JSON
    is an error: tests/test_upstream_faults.py)."""
    return [b": keep-alive\r\n\r\n",
            b"event: delta\nid: 1\n" + event("Mixed ")[:-1] + b"\r\n",
            b'data: {"model": "m", "choices": [{"index": 0,\ndata: "delta": {"content": "lines "}}]}\n\n',
            b"data:\r\n\r\n",
            b'data: {"choices": [{"index": 0, "delta": {"content": "two "}}]}\n'
            b'data: {"choices": [{"index": 0, "delta": {"content": "events "}}]}\n\n',
            event("and "), event("plain "), event("ones", "stop"), b"data: [DONE]\n\n"]


@pytest.mark.parametrize("events", [
    [event(f"w{i} ") for i in range(30)] + [event("", "stop"), b"data: [DONE]\n\n"],  # as providers write them
    odd_stream(),
])
def test_a_gathered_stream_reads_as_the_same_events_as_a_listened_one(raw, events):
    def reply(conn):
        conn.sendall(SSE_HEAD)
        for data in events:
            conn.sendall(chunk(data))
            server.done.wait(0.002)  # apart, so they arrive as separate reads
        conn.sendall(b"0\r\n\r\n")

    server = raw(reply)
    heard = []
    live = client.chat("m", "hi", on_delta=lambda kind, piece: heard.append(piece))
    quiet = client.chat("m", "hi")
    assert quiet["text"] == live["text"] == "".join(heard) and quiet["text"]
    assert (quiet["error"], quiet["finish"]) == ("", "stop")
    assert quiet["first_token_s"] <= live["first_token_s"] + 0.05


def test_a_batch_wakes_the_waiting_call_before_the_body_ends():
    left, right = socket.socketpair()
    with left, right:
        body = gather.Gathered(left, chunked=False, length=None, deadline=time.monotonic() + 5, limit=10**6,
                               sse=True, drain=0.25)
        for i in range(gather.BATCH - 1):
            body.take(b"data: {}\n\n", time.monotonic())
        assert body.fresh.locked()  # no signal yet
        body.take(b"data: {}\n\n", time.monotonic())
        assert not body.fresh.locked() and not body.done.is_set()


def test_a_waiting_call_parses_what_has_gathered_while_the_server_holds(raw, monkeypatch):
    monkeypatch.setattr(gather, "BATCH", 1)  # every piece wakes the waiting call
    release = threading.Event()
    head = SSE_HEAD + b"".join(chunk(event(f"w{i} ")) for i in range(5))

    def reply(conn):
        conn.sendall(head)
        release.wait(30)
        conn.sendall(chunk(event("end", "stop")) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    raw(reply)
    before = len(SEEN)
    result = {}
    asking = threading.Thread(target=lambda: result.update(client.chat("m", "hi")))
    asking.start()
    try:
        def parsed_while_held():  # the five words arrive with the headers or after them: none waits for the end
            return len(SEEN) > before and SEEN[before].total and not SEEN[before].pieces

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not parsed_while_held():
            time.sleep(0.005)
        assert parsed_while_held() and not SEEN[before].done.is_set()
    finally:
        release.set()
        asking.join(10)
    assert result["text"] == "w0 w1 w2 w3 w4 end" and result["error"] == ""
