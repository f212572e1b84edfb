"""Issue 12, "Nothing lost": an upstream that garbles a chunk or stalls, through the real gateway.

The misbehaving upstream is the project's own (metrics/demo/demo.py: `fail: "garbled"`, `"stall_headers"`,
`"stall_after_first"`, `"stall_mid"`) on 127.0.0.1. A seat whose stream held a chunk that cannot be read
ends `error` saying why, never `ok` with words missing; a seat whose upstream sends no byte within
`first_byte_timeout` / `idle_timeout` (config/gateway.json) ends `error` "no bytes for N s" with its real
seconds, while the other seats answer. Both readers are proven: the gathered one (metrics/net/gather.py, a
seat nobody listens to) and the threaded one (a listener: the streamed merger, `on_delta`).
"""

import http.client
import json
import socket
import time

import openai
import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import registry
from benchwarmers.calling import client, llm_backend
from benchwarmers.panel import collections
from benchwarmers.demo import demo
from benchwarmers.demo.demo import Upstream

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
ANSWER = "Garbled: the loop skips the first item and the last."
WORDS = " ".join(f"w{i}" for i in range(20))
LOST = "Error: client failed: the stream held a chunk that is not JSON: 'LOST-WORDS {' (after "
FIRST = "Error: client failed: no bytes for 0.6 s after the request was sent (first_byte_timeout)"
IDLE = "Error: client failed: no bytes for 0.4 s mid-reply (idle_timeout)"
FAULTS = {"garbled": {"fail": "garbled", "answer": ANSWER},
          "stuck": {"fail": "stall_headers", "answer": "never"},
          "halting": {"fail": "stall_after_first", "answer": "never either"},
          "silent": {"fail": "slow", "delay": 30},
          "pausing": {"fail": "stall_mid", "answer": WORDS, "latency": 0.6, "pause": 0.3},
          "steady": {"answer": WORDS, "latency": 2.0},
          "patient": {"answer": WORDS, "keepalive": True, "latency": 0.2},
          "whole": {"answer": ANSWER, "streams": False, "latency": 0.9}}


@pytest.fixture
def faulty(bench):
    """The gateway's bench plus the faulty models, each registered under its own name."""
    for name, spec in FAULTS.items():
        bench.set_model(name, **spec)
    demo.register(bench, aliases={name: name for name in FAULTS})
    return bench


def windows(first_byte, idle):
    """The seats' no-bytes windows in the data folder's config/gateway.json, as an operator sets them."""
    fileio.write_atomic(paths.file("config", "gateway.json"), json.dumps(
        {"max_calls": 5, "max_explorers": 0, "first_byte_timeout": first_byte, "idle_timeout": idle}))


def panel(gateway, members, stream=False, merger=""):
    """Ask `bench/core` through the gateway with the OpenAI SDK: `(seats by alias, the reply's text)`;
    a merger's seat is under `merger`."""
    demo.set_collection("core", members, merger=merger)
    sdk = openai.OpenAI(base_url=gateway + "/v1", api_key="unused", max_retries=0)
    ask = {"model": "bench/core:merged" if merger else "bench/core", "messages": [{"role": "user", "content": PROMPT}]}
    if stream:
        chunks = list(sdk.chat.completions.create(**ask, stream=True))
        text, field = "".join(c.choices[0].delta.content or "" for c in chunks), chunks[-1].model_extra["bench"]
    else:
        reply = sdk.chat.completions.create(**ask)
        text, field = reply.choices[0].message.content, reply.model_extra["bench"]
    seats = {s["alias"]: s for s in field["seats"]}
    if field.get("merger"):
        seats["merger"] = field["merger"]
    return seats, text


def logged():
    """The offload log's lines by model, as written to the data folder."""
    lines = paths.file("metrics", "offloads.jsonl").read_text().splitlines()
    return {entry["model"]: entry for entry in map(json.loads, lines)}


def ledger():
    return [json.loads(row) for f in (paths.data() / "metrics" / "usage").glob("*.jsonl")
            for row in f.read_text().splitlines()]


# --- a chunk that cannot be read ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_garbled_chunk_makes_the_seat_an_error_not_an_ok_with_words_missing(gateway, faulty, stream):
    """The gathered reader: the seat says which chunk and how far in; the offload line says error."""
    seats, text = panel(gateway, ["alpha", "garbled"], stream)
    seat = seats["garbled"]
    assert seat["status"] == "error" and seat["answer"] == ""
    assert seat["error"] == LOST + "9 characters of the answer; whatever it carried is missing)"
    assert "Garbled: the loop" not in text and "_error: Error: client failed: the stream held a chunk" in text
    assert seats["alpha"]["status"] == "ok" and seats["alpha"]["answer"] in text
    line = logged()["garbled"]
    assert line["status"] == "error" and line["call"] == seat["call"] and LOST in line["note"]


def test_a_garbled_chunk_in_the_streamed_mergers_words_is_an_error_too(gateway, faulty):
    """The threaded reader (the merger streams to a listener): its words stop, the every-answer fallback follows."""
    seats, text = panel(gateway, ["alpha", "beta"], stream=True, merger="garbled")
    assert seats["merger"]["status"] == "error" and seats["merger"]["error"].startswith(LOST)
    assert "_Merged reply unavailable: the merger garbled came back error" in text
    assert logged()["garbled"]["status"] == "error"


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini", "responses"])
@pytest.mark.parametrize("listened", [False, True])
def test_every_reader_ends_a_garbled_stream_with_an_error(home, api, listened):
    """Chat completions and the native readers, gathered and threaded: an error, and the ledger line says so."""
    with Upstream({"garbled": FAULTS["garbled"]}) as up:
        demo.register(up, api=api)
        heard = []
        res = client.chat("garbled", PROMPT, on_delta=(lambda kind, piece: heard.append(piece)) if listened else None)
    assert res["text"] == "" and res["error"].startswith(LOST + "9 characters")
    assert heard == (["Garbled: "] if listened else [])  # what came before the bad chunk, and nothing after it
    assert [line["status"] for line in ledger()] == ["error"]


def test_keep_alive_comments_and_blank_data_lines_stay_ok(gateway, faulty):
    """A comment or an empty `data:` line carries no words: the seat answers whole, gathered and threaded."""
    seats, _ = panel(gateway, ["patient"])
    assert seats["patient"]["status"] == "ok" and seats["patient"]["answer"] == WORDS
    heard = []
    res = client.chat("patient", PROMPT, on_delta=lambda kind, piece: heard.append(piece))
    assert res["error"] == "" and res["text"] == "".join(heard) == WORDS


def test_the_llm_backend_never_reports_a_garbled_reply_as_ok(gateway, faulty, monkeypatch):
    """llm's openai SDK raises on a chunk, or a whole reply, that is not JSON: the seat reads it in the built-in
    client's words. A seat nobody listens to is asked whole (its JSON has `LOST-WORDS {` in it); streamed, the
    chunk and how far in are named."""
    registry.sync_to_llm()
    monkeypatch.setenv("BENCH_CLIENT", "llm")
    seats, _ = panel(gateway, ["alpha", "garbled"])
    seat = seats["garbled"]
    assert seat["status"] == "error" and seat["error"].startswith("Error: client failed: the reply was not JSON: {")
    assert "LOST-WORDS {" in seat["error"] and seats["alpha"]["status"] == "ok"
    assert logged()["garbled"]["status"] == "error"
    streamed = llm_backend.ask("garbled", PROMPT, on_delta=lambda kind, piece: None)
    assert streamed["path"] == "inprocess" and streamed["text"] == ""
    assert streamed["error"] == LOST + "9 characters of the answer; whatever it carried is missing)"


# --- an upstream that stalls -----------------------------------------------------------------------


@pytest.mark.parametrize("alias, error", [("stuck", FIRST), ("silent", FIRST), ("halting", IDLE)],
                         ids=["headers-then-nothing", "nothing-at-all", "first-chunk-then-nothing"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_stalled_upstream_ends_its_seat_with_no_bytes_for_n_s(gateway, faulty, alias, error, stream):
    """Headers then nothing, nothing at all (the first-byte window bounds the wait for the head too), a first
    chunk then nothing: the seat ends by its window with its real seconds, logged; the other seat answers."""
    windows(0.6, 0.4)
    seats, text = panel(gateway, ["alpha", alias], stream)
    seat = seats[alias]
    assert seat["status"] == "error" and seat["error"] == error and seat["answer"] == ""
    assert 0.3 <= seat["seconds"] < 5  # by its window, far below the 420 s limit
    assert seats["alpha"]["status"] == "ok" and seats["alpha"]["answer"] in text
    line = logged()[alias]
    assert line["status"] == "error" and line["seconds"] == seat["seconds"] and error in line["note"]


def test_a_stalled_merger_streamed_to_its_listener_ends_by_its_window(gateway, faulty):
    """The threaded reader: the merger streams its words to the caller, then stalls."""
    windows(0.6, 0.4)
    seats, text = panel(gateway, ["alpha", "beta"], stream=True, merger="halting")
    assert seats["merger"]["status"] == "error" and seats["merger"]["error"] == IDLE
    assert seats["merger"]["seconds"] < 5 and "_Merged reply unavailable: the merger halting came back error" in text
    assert logged()["halting"]["status"] == "error"


@pytest.mark.parametrize("stream", [False, True])
def test_a_pause_or_a_steady_stream_within_the_idle_window_is_not_cut(gateway, faulty, stream):
    """The idle window starts again at every read: a 0.3 s pause, and 2 s of tokens 0.1 s apart, pass a
    0.8 s window; a plain reply (RET-5: the upstream refuses to stream) is only bounded by the overall limit,
    its first byte being its last."""
    windows(0.6, 0.8)
    seats, _ = panel(gateway, ["pausing", "steady", "whole"], stream)
    assert {alias: seat["status"] for alias, seat in seats.items()} == {"pausing": "ok", "steady": "ok", "whole": "ok"}
    assert seats["pausing"]["answer"] == seats["steady"]["answer"] == WORDS and seats["whole"]["answer"] == ANSWER
    assert seats["steady"]["seconds"] > 0.8 and seats["whole"]["seconds"] > 0.6  # longer than the windows


@pytest.mark.parametrize("listened", [False, True])
def test_both_readers_end_a_stall_by_its_window_and_zero_turns_a_window_off(home, listened):
    """The built-in client, gathered and threaded; a window of 0 leaves only the overall deadline (timed out)."""
    on_delta = (lambda kind, piece: None) if listened else None
    with Upstream(FAULTS) as up:
        demo.register(up)
        for alias, error in (("stuck", FIRST), ("halting", IDLE)):
            res = client.chat(alias, PROMPT, first_byte=0.6, idle=0.4, on_delta=on_delta)
            assert (res["error"], res["timed_out"], res["text"]) == (error, False, "") and res["seconds"] < 5
        steady = client.chat("steady", PROMPT, first_byte=0.6, idle=0.8, on_delta=on_delta)
        assert steady["error"] == "" and steady["text"] == WORDS
        off = client.chat("halting", PROMPT, timeout=1, first_byte=0, idle=0, on_delta=on_delta)
        assert off["timed_out"] and off["error"] == ""
    assert [line["status"] for line in ledger()] == ["error", "error", "ok", "timeout"]


class Handed:
    """Stands in for the OS socket under a Body: each read hands over the next piece; each timeout set (a
    system call) is counted."""

    def __init__(self, pieces):
        self.pieces = list(pieces)
        self.timeouts = []

    def recv_into(self, buffer, size):
        piece = self.pieces.pop(0) if self.pieces else b""
        buffer[:len(piece)] = piece
        return len(piece)

    def gettimeout(self):
        return 5.0

    def settimeout(self, value):
        self.timeouts.append(value)


def test_the_windows_cost_no_system_call_per_read(home):
    """The idle window is what each read may wait, the same every read: the socket timeout is set once, when
    the idle window takes over from the deadline, however many chunks follow."""
    events = [b'data: {"choices": [{"delta": {"content": "w "}}]}\n\n'] * 200 + [b"data: [DONE]\n\n"]
    pieces = [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]
    near, far = socket.socketpair()  # the head and the first piece, as http.client reads them
    far.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                + pieces[0])
    far.close()
    resp = http.client.HTTPResponse(near)
    resp.begin()
    near.close()
    sock = Handed(pieces[1:])
    body = client.Body(client.Call(timeout=5, first_byte=1, idle=0.5), resp, sock)
    assert len(list(client.sse(body))) == 201 and body.complete
    assert len(sock.timeouts) == 1 and sock.timeouts[0] == pytest.approx(0.5)


def test_a_stall_ends_when_the_upstream_stops():
    """A held reply waits on the upstream's stop event, not a long sleep: stopping hangs up at once."""
    up = Upstream(FAULTS).start()
    conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=10)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "stuck", "stream": True, "messages": []}))
    resp = conn.getresponse()  # the head came: the reply is held
    started = time.monotonic()
    up.stop()
    with pytest.raises(http.client.IncompleteRead):
        resp.read()
    assert resp.status == 200 and time.monotonic() - started < 2
    conn.close()


def timeouts():
    found = collections.settings()
    return found.first_byte_timeout, found.idle_timeout


def test_the_windows_are_read_from_gateway_json_fractions_allowed(home):
    """COL-2's settings are unchanged; the windows sit beside them, any number of seconds of 0 or more."""
    assert timeouts() == (180, 60)  # the shipped gateway.json
    assert (collections.settings().max_calls, collections.settings().max_explorers) == (5, 2)
    windows(0.3, 0)
    assert timeouts() == (0.3, 0)
    assert collections.settings_problems() == []
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"first_byte_timeout": "soon", "idle_timeout": -1}')
    assert timeouts() == (180, 60)
    assert collections.settings_problems() == [
        'first_byte_timeout must be a number of seconds, 0 or more; got "soon", using 180',
        "idle_timeout must be a number of seconds, 0 or more; got -1, using 60"]
