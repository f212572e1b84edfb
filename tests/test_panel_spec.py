"""The rest of gateway.md, statement by statement, through the real gateway.

tests/test_gateway.py pins the first set (plain and streamed panels, seat
failures, the ask refusals, images, merge, verdicts, listing, the demo). This
file covers what it leaves: streaming edge cases (grace, keep-alive, errors
after the 200, merged streams), nominees, retired and vision-specialist seats,
the merger's choice, the router's cooling set, redaction, the call log, CORS,
method handling, logging and the §20 improvements. Each test names the ids it
pins. Real parts only: the gateway on a free port, the local upstream as every
seat (and as the decision model that picks shapes), the OpenAI SDK or raw HTTP.
"""

import base64
import http.client
import json
import re
import socket
import subprocess
import threading

import openai
import pytest

from benchwarmers.core import fileio, images, paths
from benchwarmers.models import endpoints, learn, registry
from benchwarmers.panel import collections, offload, panel, route
from benchwarmers.demo import demo
from benchwarmers.core import errors
from benchwarmers.models import catalog
from benchwarmers.panel import shape

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 60).decode()
SIGNED = "https://u:pw@h.example/p?sig=SECRET123"
CALL_ID = re.compile(r"\bp\d{8}-\d{6}-[0-9a-f]{16}\.[a-z]+\d*\b")  # GW-ID-1 with 64 random bits (issue 12 item 8)
PANEL_ID = re.compile(r"p\d{8}-\d{6}-[0-9a-f]{16}")
RETIRED_ON = ("retired from the bench on 2026-10-20; take it out of the collection "
              "(Restore in its model popup brings it back)")
KNOWN_SHAPES = "code, design, enumeration, general, image, prose, quick, review, vision"


@pytest.fixture
def gw(bench):
    """The real gateway on a free port (as conftest's `gateway`, but it stops in milliseconds)."""
    from benchwarmers.server import gateway

    server = gateway.Server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# -- set-up helpers -------------------------------------------------------------------------------

def settings(max_calls=5, max_explorers=0):
    fileio.write_atomic(paths.file("config", "gateway.json"),
                        json.dumps({"max_calls": max_calls, "max_explorers": max_explorers}))


def collection(members, name="core", **fields):
    demo.set_collection(name, members, **fields)


def only_explorers(*allowed, models=None):
    """model-roles.json holding every other registered alias ad hoc, so the router's picks are known."""
    held = [a for a in registry.registrations() if a not in allowed]
    fileio.write_atomic(paths.file("config", "model-roles.json"),
                        json.dumps({"models": models or {}, "ad_hoc": held}))


def retire(*aliases):
    fileio.write_atomic(paths.file("config", "retired.json"),
                        json.dumps({a: {"at": "2026-10-20T10:00:00", "why": "gone", "served": a} for a in aliases}))


def onboard_picker():
    """The local upstream's `picker` as the shape picker (SHP-3)."""
    fileio.write_atomic(paths.file("config", "decision-models.json"),
                        json.dumps({"picker": {"via": "demo", "served": "picker", "question_types": ["choice"]}}))


def user(text):
    return [{"role": "user", "content": text}]


def image_messages(*urls, text="What does this show? " + SIGNED):
    return [{"role": "user", "content": [{"type": "text", "text": text}]
             + [{"type": "image_url", "image_url": {"url": url}} for url in urls or (PNG,)]}]


def seat_requests(up, model=None):
    return [r for r in up.requests if r["path"].endswith("/chat/completions")
            and (model is None or r["model"] == model)]


def call_log():
    return fileio.read_jsonl(paths.file("runs", "gateway", "calls.jsonl"))


def secrets_written(*bits):
    """Every (file, bit) where a secret bit is written anywhere in the data folder."""
    found = []
    for path in paths.data().rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            found += [(str(path), bit) for bit in bits if bit in text]
    return found


# -- HTTP helpers ---------------------------------------------------------------------------------

def address(gw):
    host, port = gw.split("//")[1].split(":")
    return host, int(port)


def request(gw, method, path, body=None, headers=None):
    """`(status, {lower-case header: value}, raw body bytes)`; JSON bodies are sent as application/json."""
    conn = http.client.HTTPConnection(*address(gw), timeout=30)
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    sent = {"Content-Type": "application/json"} if data is not None else {}
    conn.request(method, path, data, {**sent, **(headers or {})})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, raw


def raw_exchange(gw, data):
    """Send raw bytes, read until the server closes: the whole response as bytes."""
    with socket.create_connection(address(gw), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def chat(gw, model="bench/core", messages=None, **fields):
    """A plain chat completion: `(status, parsed body)`."""
    status, _, raw = request(gw, "POST", "/v1/chat/completions",
                             {"model": model, "messages": messages or user(PROMPT), **fields})
    return status, json.loads(raw)


def sse(gw, model="bench/core", messages=None, headers=None, **fields):
    """A streamed chat completion: `(status, headers, events)`; an event is
    `("comment", text)`, `("data", chunk)` or `("done", None)`; a refusal is `("json", body)`."""
    status, head, raw = request(gw, "POST", "/v1/chat/completions",
                                {"model": model, "messages": messages or user(PROMPT), "stream": True, **fields},
                                headers)
    if not head.get("content-type", "").startswith("text/event-stream"):
        return status, head, [("json", json.loads(raw))]
    events = []
    for block in raw.decode("utf-8").split("\n\n"):
        if not block:
            continue
        if block.startswith(":"):
            events.append(("comment", block))
        elif block == "data: [DONE]":
            events.append(("done", None))
        else:
            assert block.startswith("data: "), block
            events.append(("data", json.loads(block[len("data: "):])))
    return status, head, events


def streamed_text(events):
    return "".join((e[1]["choices"][0]["delta"].get("content") or "") for e in events
                   if e[0] == "data" and "choices" in e[1])


def normalised(content):
    """Content with the panel id and seat timings blanked, to compare two panels' replies."""
    content = PANEL_ID.sub("PANEL", content)
    return re.sub(r"· \d+\.\d+s", "· Ns", content)


def sdk(gw):
    return openai.OpenAI(base_url=gw + "/v1", api_key="unused", max_retries=0)


# -- §1 constants ---------------------------------------------------------------------------------

def test_section1_constants():
    """§1: the timing and size constants the rest of the contract is written against (TST-0 seams)."""
    from benchwarmers.server import gateway

    assert (panel.SEAT_TIMEOUT, panel.LARGE, images.IMAGE_TOKENS) == (420, 8000, 2500)
    assert (gateway.STREAM_GRACE, gateway.KEEPALIVE) == (1.0, 10.0)
    assert (shape.CONFIDENT, shape.INPUT_CAP, shape.TIMEOUT, shape.RATE_LIMIT_WAITS) == (0.6, 20000, 60, (5, 15))
    assert (panel.SEAT_ERROR_KEPT, panel.SECTION_ERROR, panel.TASK_CHARS, offload.ERROR_EXCERPT) == (500, 300, 90, 120)
    assert (collections.DEFAULTS.max_calls, collections.DEFAULTS.max_explorers) == (5, 2)
    assert route.EXPLORER_CLAMP == 2


# -- §3 identifiers and §9.5 the call log ---------------------------------------------------------

def test_gwid1_clg1_call_ids_and_the_call_log_line(gw, bench):
    """GW-ID-1, CLG-1, IMG-9, MRG-5, PNL-15 (explorer / explorer2 keys), RPL-3."""
    settings(max_explorers=2)
    only_explorers("gamma", "seer")
    collection(["alpha", "beta"], shape="review", reply="merged", merger="merger")
    messages = [{"role": "system", "content": "Cite line numbers."}] + user(PROMPT)
    status, reply = chat(gw, messages=messages)
    assert status == 200
    field = reply["bench"]
    calls = [s["call"] for s in field["seats"]] + [field["merger"]["call"]]
    assert [c.split(".", 1)[1] for c in calls] == ["member1", "member2", "explorer", "explorer2", "merger"]
    assert [s["seat"] for s in field["seats"]] == ["member", "member", "explorer", "explorer 2"]
    for call in calls:
        assert CALL_ID.fullmatch(call) and call.startswith(field["panel"] + ".")
    assert CALL_ID.findall(reply["choices"][0]["message"]["content"]) == [field["merger"]["call"]]

    [line] = call_log()
    assert list(line) == ["panel", "at", "model", "shape", "shape_by", "key", "system", "prompt", "seats"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", line["at"])
    assert (line["panel"], line["model"], line["key"]) == (field["panel"], "bench/core", "local")
    assert (line["shape"], line["shape_by"]) == ("review", "set on the collection")
    assert (line["system"], line["prompt"]) == ("Cite line numbers.", PROMPT)
    assert [s["call"] for s in line["seats"]] == calls  # seats in seat order, then the merger
    for seat in line["seats"]:
        assert list(seat) == ["call", "seat", "alias", "status", "answer", "error", "seconds", "usage"]
        assert set(seat["usage"]) == {"prompt_tokens", "completion_tokens"}  # the demo counts every seat's tokens
    assert line["seats"][-1]["seat"] == "merger" and line["seats"][-1]["answer"] == field["merger"]["answer"]
    assert "system" not in field and "prompt" not in field
    notes = {e.call: e.note for e in offload.entries()}  # OFF-N1: the label, then the outcome
    assert notes[calls[3]].startswith("explorer 2; ok in ") and notes[calls[4]].startswith("merger; ok in ")
    merge_text = seat_requests(bench, "merger")[0]["body"]["messages"][-1]["content"]
    assert "## explorer 2 — seer\n\nSeer: " in merge_text  # MRG-2 labels the seats as the reply does


# -- §12 the offload log --------------------------------------------------------------------------

def test_off2_a_verdict_replaces_the_seat_in_place(gw, bench):
    """OFF-1, OFF-2, OFF-4, VRD-1, VRD-2, IMP-6, IMP-7, IMP-19, TST-2, TST-7."""
    collection(["alpha", "beta"])
    _, reply = chat(gw)
    first, second = [s["call"] for s in reply["bench"]["seats"]]
    order = [e.call for e in offload.entries()]
    status, _, raw = request(gw, "POST", "/bench/verdict",
                             {"call": second, "useful": False, "note": "  wrong   about the loop, café ",
                              "real": ["", "  the loop starts at 1 "], "false": []})
    assert status == 200
    recorded = json.loads(raw)["recorded"]
    assert recorded["note"] == "wrong about the loop, café" and recorded["real"] == ["the loop starts at 1"]
    entries = offload.entries()
    assert [e.call for e in entries] == order  # one entry per call, at the first one's position
    judged = next(e for e in entries if e.call == second)
    assert judged.model == "beta" and judged.useful is False and judged.status == "ok"
    lines = paths.file("metrics", "offloads.jsonl").read_bytes().decode("ascii").splitlines()
    assert len(lines) == 3 and "caf\\u00e9" in lines[-1]
    assert list(json.loads(lines[-1])) == ["date", "model", "task", "useful", "note", "call", "real", "status",
                                           "seconds", "collection", "shape"]
    assert "task" not in recorded  # the reply never shows the prompt's first words (security review 4)
    _, _, with_prefix = request(gw, "GET", "/bench/record?collection=bench/core")
    _, _, bare = request(gw, "GET", "/bench/record?collection=core")
    aliases = json.loads(with_prefix)["aliases"]
    assert aliases == json.loads(bare)["aliases"] == {
        "beta": {"useful": 0, "notUseful": 1, "judged": 1, "lastAt": judged.date}}
    assert json.loads(request(gw, "GET", "/bench/record?collection=bench/other")[2])["aliases"] == {}
    assert json.loads(request(gw, "POST", "/bench/pending", {"calls": [second, first]})[2]) == {"pending": [first]}


def test_ali1_a_renamed_alias_keeps_its_record(gw, bench):
    """ALI-1, VRD-2: records keyed by alias read under the new name; the log is never rewritten."""
    collection(["beta"])
    _, reply = chat(gw)
    request(gw, "POST", "/bench/verdict", {"call": reply["bench"]["seats"][0]["call"], "useful": True})
    before = paths.file("metrics", "offloads.jsonl").read_bytes()
    fileio.write_atomic(paths.file("config", "alias-history.json"), json.dumps({"beta": "beta-2"}))
    aliases = json.loads(request(gw, "GET", "/bench/record?collection=bench/core")[2])["aliases"]
    assert list(aliases) == ["beta-2"] and aliases["beta-2"]["useful"] == 1
    assert paths.file("metrics", "offloads.jsonl").read_bytes() == before


def test_imp16_concurrent_panels_lose_no_line(gw, bench):
    """IMP-16, PNL-20, PNL-21: eight panels at once: every seat and every panel written whole."""
    collection(["alpha", "beta", "gamma"])
    replies = []
    threads = [threading.Thread(target=lambda: replies.append(chat(gw))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [status for status, _ in replies] == [200] * 8
    calls = {s["call"] for _, reply in replies for s in reply["bench"]["seats"]}
    assert len(calls) == 24 and {e.call for e in offload.entries()} == calls
    assert len(paths.file("metrics", "offloads.jsonl").read_text().splitlines()) == 24
    assert sorted(line["panel"] for line in call_log()) == sorted(r["bench"]["panel"] for _, r in replies)


# -- §10 streaming --------------------------------------------------------------------------------

def test_str3_a_refusal_before_seating_keeps_its_status_when_streaming(gw, bench):
    """STR-3, PNL-13, PNL-15, PNL-16, PNL-17, DSP-1: plain JSON with the mapped status, not a stream."""
    settings(max_explorers=2)
    collection(["alpha"], shape="nope")
    collection(["alpha", "beta"], name="blind")
    collection(["tiny"], name="small", shape="review")
    retire("beta")
    collection(["beta"], name="empty")
    only_explorers()
    cases = [
        ("bench/core", user(PROMPT), 400, f"unknown shape 'nope'; known: {KNOWN_SHAPES}"),
        ("bench/blind", image_messages(), 400, "no seat in bench/blind can see images"),
        ("bench/small", user("x " * 6000), 413, "prompt is about 3,299 tokens; too large for tiny 3,000"),
        ("bench/empty", user(PROMPT), 503, "collection 'empty' has no members and no explorer could be seated"),
        ("bench/none", user(PROMPT), 404, "'bench/none' is not a collection here."),
    ]
    for model, messages, status, words in cases:
        got, head, events = sse(gw, model, messages)
        assert (got, head["content-type"]) == (status, "application/json"), model
        [(kind, body)] = events
        assert body["error"]["code"] == status and words in body["error"]["message"], model
    assert not seat_requests(bench)
    assert not paths.file("metrics", "offloads.jsonl").exists() and not call_log()  # PNL-21


def test_str4_keepalive_comments_while_a_slow_seat_works(gw, bench, monkeypatch):
    """STR-4, STR-10: `: keep-alive` comments fill the silence; SDK clients skip them."""
    from benchwarmers.server import gateway

    monkeypatch.setattr(gateway, "KEEPALIVE", 0.1)
    collection(["slow", "alpha"])
    status, _, events = sse(gw)
    assert status == 200
    kinds = [e[0] for e in events]
    alpha_at = next(i for i, e in enumerate(events) if e[0] == "data" and "Alpha:" in json.dumps(e[1]))
    slow_at = next(i for i, e in enumerate(events) if e[0] == "data" and "Slow:" in json.dumps(e[1]))
    between = kinds[alpha_at:slow_at]
    assert between.count("comment") >= 2
    assert all(e[1] == ": keep-alive" for e in events if e[0] == "comment")
    chunks = list(sdk(gw).chat.completions.create(model="bench/core", stream=True, messages=user(PROMPT)))
    assert chunks[-1].model_extra["bench"]["seats"][0]["status"] == "ok"


def test_str4_a_late_heading_gets_a_keepalive_at_once(gw, bench, monkeypatch):
    """STR-4: "a panel whose heading is late gets the 200 at 1 s followed at once by a keep-alive"."""
    from benchwarmers.server import gateway

    monkeypatch.setattr(gateway, "STREAM_GRACE", 0.1)
    monkeypatch.setattr(gateway, "KEEPALIVE", 5.0)
    bench.set_model("picker", latency=0.5, decisions={"shape": {"choice": "review", "confidence": 0.9}})
    onboard_picker()
    settings(max_explorers=1)
    collection(["alpha"])
    _, _, events = sse(gw)
    assert [e[0] for e in events[:2]] == ["data", "comment"]


def test_str8_a_refusal_after_the_200_arrives_in_stream(gw, bench, monkeypatch):
    """STR-8, STR-10, STR-12, PNL-14, PNL-17: a slow shape picker outlasts the grace, then no seat can be had."""
    from benchwarmers.server import gateway

    monkeypatch.setattr(gateway, "STREAM_GRACE", 0.1)
    bench.set_model("picker", latency=0.4, decisions={"shape": {"choice": "review", "confidence": 0.9}})
    onboard_picker()
    settings(max_explorers=2)
    only_explorers()  # every registered alias ad hoc: the router can seat nobody
    collection([])
    status, head, events = sse(gw)
    assert status == 200 and head["content-type"] == "text/event-stream"
    events = [e for e in events if e[0] != "comment"]
    assert [e[0] for e in events] == ["data", "data", "done"]
    assert events[0][1]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert events[1][1] == {"error": {"message": "collection 'core' has no members and no explorer could be seated",
                                      "type": "bench_gateway", "code": 503}}
    assert [r for r in bench.requests if r["path"].endswith("/decisions")]
    assert chat(gw)[0] == 503  # the same panel not streamed: the plain refusal


def test_nothing_lost_item4_a_log_that_cannot_be_written_loses_no_answer(gw, bench):
    """Nothing-lost item 4: an offload log that cannot be written (here a folder in its place) still
    returns every answer, plain and streamed; each seat says `logged: false` and why, so does the reply."""
    collection(["alpha", "beta"])
    paths.file("metrics", "offloads.jsonl").mkdir(parents=True)
    status, reply = chat(gw)
    assert status == 200
    seats = reply["bench"]["seats"]
    assert [s["alias"] for s in seats] == ["alpha", "beta"] and all(s["status"] == "ok" for s in seats)
    assert all(s["logged"] is False and "Is a directory" in s["log_error"] for s in seats)
    assert "could not be written" in reply["bench"]["log"]
    assert "not in the offload log" in reply["choices"][0]["message"]["content"]
    status, _, events = sse(gw)
    assert status == 200
    last = [e[1] for e in events if e[0] == "data"][-1]
    assert all(s["logged"] is False for s in last["bench"]["seats"]) and "log" in last["bench"]
    assert len(call_log()) == 2  # the calls log still took both panels

def test_str5_str10_stream_concatenates_to_the_plain_reply(gw, bench):
    """STR-5, STR-7, STR-10, RPL-1: pieces join to the non-streamed content; every chunk has the chat shape."""
    collection(["alpha", "slow"], description="a fast and a slow reviewer")
    status, head, events = sse(gw)
    assert status == 200 and head["cache-control"] == "no-cache" and "content-length" not in head
    data = [e[1] for e in events if e[0] == "data"]
    assert events[-1] == ("done", None)
    assert len({c["id"] for c in data}) == 1 and re.fullmatch(r"chatcmpl-[0-9a-f]{24}", data[0]["id"])
    for chunk in data:
        assert chunk["object"] == "chat.completion.chunk" and chunk["model"] == "bench/core"
        assert isinstance(chunk["created"], int) and chunk["choices"][0]["index"] == 0
    assert data[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["choices"][0]["finish_reason"] is None and "bench" not in c for c in data[:-1])
    assert data[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    pieces = [c["choices"][0]["delta"]["content"] for c in data[1:-1]]
    assert pieces[0].startswith("Bench bench/core p") and pieces[0].endswith("\n")  # the heading first
    assert pieces[-1].startswith("\n---\n")  # the footer last
    _, plain = chat(gw)
    assert normalised("".join(pieces)) == normalised(plain["choices"][0]["message"]["content"])
    # STR-11 had no usage; issue 16 adds it (the llm CLI reads it), and no usage chunk unless the stream asks
    assert list(plain) == ["id", "object", "created", "model", "choices", "usage", "bench"]


def test_str6_tst13_merged_streams(gw, bench):
    """STR-6, TST-13, MRG-8: a failed merge streams exactly three data chunks; a good one joins to the plain reply."""
    collection(["alpha", "beta"], reply="merged", merger="gone")
    _, _, events = sse(gw)
    data = [e[1] for e in events if e[0] == "data"]
    assert len(data) == 3 and events[-1] == ("done", None)
    whole = data[1]["choices"][0]["delta"]["content"]
    assert whole.startswith("_Merged reply unavailable: the merger gone came back error")
    assert data[2]["bench"]["reply"] == "all" and len(data[2]["bench"]["seats"]) == 2
    _, plain = chat(gw)
    assert normalised(whole) == normalised(plain["choices"][0]["message"]["content"])

    collection(["alpha", "beta"], reply="merged", merger="merger")
    _, _, events = sse(gw)
    text = streamed_text(events)
    assert "## member" not in text
    _, plain = chat(gw)
    assert normalised(text) == normalised(plain["choices"][0]["message"]["content"])


def test_merged_stream_that_breaks_off_is_followed_by_every_answer(gw, bench):
    """MRG-6, MRG-8 (beyond the reference's one-piece merged stream): the partial merge, then the fallback."""
    bench.set_model("merger", fail="drop", answer=" ".join(f"word{i}" for i in range(40)), context_window=128000)
    collection(["alpha", "beta"], reply="merged", merger="merger")
    _, _, events = sse(gw)
    text = streamed_text(events)
    assert text.startswith("word0 word1")
    partial, _, rest = text.partition("\n\n_Merged reply unavailable: the merger merger came back error")
    assert rest and "## member — alpha" in rest and "word39" not in partial
    bench_field = [e[1] for e in events if e[0] == "data"][-1]["bench"]
    assert bench_field["reply"] == "all" and bench_field["merger"]["status"] == "error"
    _, plain = chat(gw)
    assert plain["choices"][0]["message"]["content"].startswith("_Merged reply unavailable: the merger merger")


# -- §7 the panel ---------------------------------------------------------------------------------

def test_pnl3_pnl20_members_deduplicated_and_seats_get_system_and_prompt(gw, bench):
    """PNL-3, PNL-20, FLT-1..3, SEAT-1, ASK-1 (`options` are not passed to seats)."""
    collection(["alpha", "alpha", "", 7, "beta"])
    messages = [{"role": "developer", "content": "Be brief."}, {"role": "system", "content": "Cite lines."},
                {"role": "user", "content": "first"}, {"role": "assistant", "content": None},
                {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "text", "text": "third"}]}]
    status, reply = chat(gw, messages=messages, temperature=0.123, max_tokens=7, stop=["ZZZ"])
    assert status == 200 and [s["alias"] for s in reply["bench"]["seats"]] == ["alpha", "beta"]
    system, prompt = "Be brief.\n\nCite lines.", "user: first\n\nassistant: \n\nuser: second\nthird"
    for sent in seat_requests(bench):
        assert sent["body"]["messages"] == [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        assert sent["body"].get("temperature") != 0.123 and sent["body"].get("max_tokens") != 7
        assert "stop" not in sent["body"]
    assert (call_log()[0]["system"], call_log()[0]["prompt"]) == (system, prompt)


def test_pnl20_a_seat_is_logged_before_slower_seats_finish(gw, bench):
    """PNL-20, STR-5: when the fast seat's section reaches the client, its offload line is already written
    and the slow seat is still working."""
    collection(["slow", "alpha"])
    conn = http.client.HTTPConnection(*address(gw), timeout=30)
    conn.request("POST", "/v1/chat/completions",
                 json.dumps({"model": "bench/core", "stream": True, "messages": user(PROMPT)}),
                 {"Content-Type": "application/json"})
    response = conn.getresponse()
    while b"Alpha: the loop" not in (line := response.fp.readline()):
        assert line, "the stream ended before alpha's section"
    assert [e.model for e in offload.entries()] == ["alpha"]
    rest = response.read()
    conn.close()
    assert b"Slow: I agree" in rest and sorted(e.model for e in offload.entries()) == ["alpha", "slow"]


def test_pnl3_members_that_are_not_a_list_are_no_members(gw, bench):
    """PNL-3, PNL-17: a hand-edited `"members": "alpha"` seats nobody (never the letters a, l, p, h)."""
    collection("alpha")
    status, reply = chat(gw)
    assert status == 503 and "has no members" in reply["error"]["message"]
    assert not seat_requests(bench)


def test_pnl5_nominees_take_explorer_seats(gw, bench):
    """PNL-5, PNL-15, RTR-5, ROL-4, IMP-2: named aliases sit in explorer seats, ad hoc ones too, with a note;
    a member named in `with` uses no slot."""
    settings(max_explorers=2)
    only_explorers()
    collection(["alpha"], shape="review")
    status, reply = chat(gw, **{"with": ["alpha", "beta", "gamma"]})
    assert status == 200
    seats = reply["bench"]["seats"]
    assert [(s["seat"], s["alias"]) for s in seats] == [("member", "alpha"), ("explorer", "beta"),
                                                         ("explorer 2", "gamma")]
    notes = reply["bench"]["notes"]
    assert len(notes) == 2 and all("ad hoc" in n and "seated because it was named" in n for n in notes)
    assert "skipped" not in reply["bench"]
    assert "## explorer 2 — gamma" in reply["choices"][0]["message"]["content"]


def test_pnl15_pnl21_members_start_before_the_router_and_refusals_start_nothing(bench):
    """PNL-15, PNL-20, PNL-21 (issue 7): each member is handed on to be asked before the router is asked for
    explorers, in seat order; a refusal, the router's unknown shape included, hands on no seat at all."""
    settings(max_explorers=2)
    only_explorers("gamma", "seer")
    collection(["alpha", "beta"])
    heard = []

    def on_seat(plan, key, alias):
        heard.append((key, alias, plan.router))

    plan = panel.Plan("core", user(PROMPT), on_seat=on_seat)
    assert [(key, alias) for key, alias, _ in heard] == plan.seats
    assert [key for key, _, router in heard if router is None] == ["member1", "member2"]
    assert [key for key, _, router in heard if router is not None] == ["explorer", "explorer2"]

    heard.clear()
    collection(["alpha"], shape="nope")
    with pytest.raises(ValueError, match="unknown shape 'nope'"):
        panel.Plan("core", user(PROMPT), on_seat=on_seat)
    collection(["alpha", "tiny"], name="small")
    with pytest.raises(errors.PromptTooLarge):
        panel.Plan("small", user("x " * 6000), on_seat=on_seat)
    assert heard == [] and not seat_requests(bench)


def test_pnl5_imp2_imp4_nominees_that_cannot_sit_are_reported(gw, bench):
    """PNL-5, PNL-22, IMP-2, IMP-4: retired, too small, unavailable and seat-less nominees are named, never called."""
    settings(max_explorers=2)
    only_explorers("gamma")
    retire("slow")
    collection(["alpha"], shape="review")
    status, reply = chat(gw, messages=user("x " * 6000), **{"with": ["slow", "ghost", "tiny"]})
    assert status == 200
    field = reply["bench"]
    assert field["skipped"] == [
        {"seat": "with", "alias": "slow", "why": RETIRED_ON},
        {"seat": "with", "alias": "ghost", "why": "not registered on the bench"},  # issue 21: before the router
        {"seat": "with", "alias": "tiny", "why": "its context window (3,000 tokens) is below this prompt's 3,299"},
    ]
    assert [s["alias"] for s in field["seats"]] == ["alpha", "gamma"]  # ghost's seat went to the stalest
    assert not seat_requests(bench, "slow") and not seat_requests(bench, "tiny")

    settings(max_explorers=0)
    status, reply = chat(gw, **{"with": ["beta"]})
    [skipped] = reply["bench"]["skipped"]
    assert (skipped["seat"], skipped["alias"]) == ("with", "beta") and "leaves no explorer seat" in skipped["why"]
    assert not seat_requests(bench, "beta")


def test_pnl7_retired_merger_is_skipped_only_when_merging(gw, bench):
    """PNL-7, PNL-22, MRG-3, TST-16: the merger is chosen by verdicts instead, and never called."""
    retire("merger")
    collection(["alpha", "beta"], merger="merger")
    _, reply = chat(gw)
    assert "skipped" not in reply["bench"] and "reply" not in reply["bench"]
    _, reply = chat(gw, "bench/core:merged")
    assert reply["bench"]["skipped"] == [
        {"seat": "merger", "alias": "merger", "why": RETIRED_ON + "; the merger is chosen by verdicts"}]
    assert reply["bench"]["reply"] == "merged" and reply["bench"]["merger"]["alias"] == "alpha"
    assert not seat_requests(bench, "merger")


def test_pnl9_a_retired_member_frees_an_explorer_seat(gw, bench):
    """PNL-4, PNL-9, COL-3: five members leave no explorer seat; with one retired, four leave one."""
    settings(max_explorers=2)
    only_explorers("seer")
    retire("beta")
    collection(["beta", "alpha", "gamma", "blank", "noticer"], shape="review")
    _, reply = chat(gw)
    assert [(s["seat"], s["alias"]) for s in reply["bench"]["seats"]][-1] == ("explorer", "seer")
    assert reply["choices"][0]["message"]["content"].startswith(
        f"Bench bench/core {reply['bench']['panel']} · 4 members + 1 explorers · explorer shape review "
        "(set on the collection)\n\nNot asked: beta (retired from the bench on 2026-10-20")


def test_pnl11_tst19_vision_specialist_sits_only_for_pictures(gw, bench, monkeypatch):
    """PNL-10, PNL-11, TST-19, ROL-1, SEAT-1: llm path for text; the specialist is skipped, unless named."""
    registry.sync_to_llm()
    monkeypatch.setenv("BENCH_CLIENT", "llm")
    settings(max_explorers=1)
    only_explorers(models={"seer": "vision"})
    collection(["alpha", "seer"], shape="review")
    status, reply = chat(gw)
    assert status == 200 and [s["alias"] for s in reply["bench"]["seats"]] == ["alpha"]
    [skipped] = reply["bench"]["skipped"]
    assert (skipped["seat"], skipped["alias"]) == ("member", "seer") and "vision specialist" in skipped["why"]
    assert reply["bench"]["seats"][0]["answer"] == "Alpha: the loop skips the first item."
    assert seat_requests(bench, "alpha")[0]["headers"]["user-agent"].startswith("OpenAI/")  # llm's own client
    assert not seat_requests(bench, "seer")

    _, reply = chat(gw, messages=image_messages())
    assert [s["alias"] for s in reply["bench"]["seats"]] == ["seer"]  # pictures: it sits, alpha cannot see
    [sent] = seat_requests(bench, "seer")
    assert sent["body"]["messages"] == image_messages() and sent["headers"]["user-agent"] == "benchwarmers"

    collection(["alpha"], shape="review")
    _, reply = chat(gw, **{"with": ["seer"]})
    assert [(s["seat"], s["alias"]) for s in reply["bench"]["seats"]] == [("member", "alpha"), ("explorer", "seer")]


def test_pnl14_shape_rules(gw, bench):
    """PNL-14, SHP-7: images pick `vision` unless the collection sets a shape; no explorer seat, no picker."""
    onboard_picker()
    collection(["seer"], shape="code")
    _, reply = chat(gw)
    assert (reply["bench"]["shape"], reply["bench"]["shape_by"]) == ("code", "no explorer seats to fill")
    _, reply = chat(gw, messages=image_messages())
    assert (reply["bench"]["shape"], reply["bench"]["shape_by"]) == ("code", "no explorer seats to fill")
    collection(["seer"])
    _, reply = chat(gw)
    assert (reply["bench"]["shape"], reply["bench"]["shape_by"]) == ("general", "no explorer seats to fill")
    assert not [r for r in bench.requests if r["path"].endswith("/decisions")]
    settings(max_explorers=1)
    only_explorers("tiny")
    _, reply = chat(gw, messages=image_messages())
    assert (reply["bench"]["shape"], reply["bench"]["shape_by"]) == ("vision", "the request carries images")
    assert not [r for r in bench.requests if r["path"].endswith("/decisions")]


def test_pnl15_unknown_shape_is_400(gw, bench):
    """PNL-15, RTR-3, §14: the router's ValueError; with no explorer seat the shape is only a label."""
    settings(max_explorers=2)
    collection(["alpha"], shape="nope")
    status, reply = chat(gw)
    assert status == 400 and reply["error"]["message"] == f"unknown shape 'nope'; known: {KNOWN_SHAPES}"
    assert not seat_requests(bench)
    settings(max_explorers=0)
    status, reply = chat(gw)
    assert status == 200 and reply["bench"]["shape"] == "nope"


def test_pnl17_no_seat_is_503_naming_each_skip(gw, bench):
    """PNL-17, §14 (LookupError → 503)."""
    retire("beta")
    collection(["beta"])
    status, reply = chat(gw)
    assert status == 503
    assert reply["error"]["message"] == ("collection 'core' has no members and no explorer could be seated; "
                                         f"beta not asked: {RETIRED_ON}")
    assert not seat_requests(bench)


def test_pnl18_a_collection_without_members_runs_on_explorers(gw, bench):
    """PNL-18, COL-3, SHP-3, RPL-1."""
    settings(max_explorers=2)
    only_explorers("gamma", "beta")
    collection([])
    status, reply = chat(gw)
    assert status == 200
    assert [s["seat"] for s in reply["bench"]["seats"]] == ["explorer", "explorer 2"]
    assert {s["alias"] for s in reply["bench"]["seats"]} == {"gamma", "beta"}
    assert reply["bench"]["shape_by"] == "no decision model onboarded"
    assert f"{reply['bench']['panel']} · 0 members + 2 explorers ·" in reply["choices"][0]["message"]["content"]


# -- §7.1 seats -----------------------------------------------------------------------------------

def test_seat3_imp15_seat_errors_are_redacted_before_they_are_written(gw, bench):
    """SEAT-2, SEAT-3, IMP-15, IMG-8, TST-18: an upstream echoing the request (a short "notice") in text and image
    requests: the stored error carries placeholders, never the query, user:password or image bytes."""
    bench.set_model("parrot", echo=True, context_window=32000, vision=True)
    demo.register(bench, aliases={"parrot": "parrot"})
    catalog.warm(refresh=True)
    collection(["parrot"])
    _, reply = chat(gw, messages=user("Are we out of credits? See " + SIGNED))
    [seat] = reply["bench"]["seats"]
    assert seat["status"] == "error" and seat["answer"] == ""
    assert seat["error"].startswith("provider notice in a success reply (out of credits): ")
    assert "https://h.example/p?..." in seat["error"]

    _, reply = chat(gw, messages=image_messages(text="out of credits?"))
    [seat] = reply["bench"]["seats"]
    assert seat["status"] == "error" and "[image: data URL, 1 KB]" in seat["error"]
    assert call_log()[-1]["seats"][0]["error"] == seat["error"]
    stored = {e.call: e for e in offload.entries()}[seat["call"]]
    assert stored.note == "member; error in " + f"{seat['seconds']:.1f}s: " + seat["error"][:120]  # OFF-N1
    base64_head = PNG.split(",")[1][:24]
    for text in (json.dumps(reply), json.dumps(call_log())):
        assert "SECRET123" not in text and "u:pw" not in text and base64_head not in text
    assert not secrets_written("SECRET123", "u:pw", base64_head)


def test_rtr13_seat4_a_rate_limited_seat_cools_and_explorers_avoid_it(gw, bench, monkeypatch):
    """SEAT-4, RTR-13, PNL-15 (`avoid`): a 429 starts a cooldown through learn; the next panel's explorers skip it."""
    monkeypatch.setattr(panel, "SEAT_TIMEOUT", 5)
    bench.set_model("limited", fail="429", retry_after=60)
    demo.register(bench, aliases={"limited": "limited"})
    settings(max_explorers=2)
    only_explorers("alpha", "limited")
    collection([], shape="general")
    _, reply = chat(gw)
    seats = {s["alias"]: s for s in reply["bench"]["seats"]}
    assert set(seats) == {"alpha", "limited"} and seats["limited"]["status"] == "error"
    assert "limited" in learn.cooling() and "limited" in route.cooling()
    _, reply = chat(gw)
    assert [s["alias"] for s in reply["bench"]["seats"]] == ["alpha"]
    assert len(seat_requests(bench, "limited")) == 1


# -- §7.2 merge -----------------------------------------------------------------------------------

def test_mrg3_tst15_merger_chosen_by_the_record(gw, bench):
    """MRG-3, TST-15: with no merger set, the first member merges until another has a useful verdict on the shape."""
    collection(["alpha", "beta"], reply="merged")
    _, reply = chat(gw)
    assert reply["bench"]["merger"]["alias"] == "alpha"
    beta_call = next(s["call"] for s in reply["bench"]["seats"] if s["alias"] == "beta")
    assert request(gw, "POST", "/bench/verdict", {"call": beta_call, "useful": True})[0] == 200
    _, reply = chat(gw)
    assert reply["bench"]["merger"]["alias"] == "beta"
    assert reply["choices"][0]["message"]["content"].startswith("Beta: the code looks correct")


def test_mrg4_tst11_merger_window_too_small(gw, bench):
    """MRG-4, MRG-8, TST-11: every answer with the note; no merger key; the merger never called."""
    collection(["alpha", "beta"], reply="merged", merger="tiny")
    status, reply = chat(gw, messages=user("x " * 6000))
    assert status == 200
    field = reply["bench"]
    assert field["reply"] == "all" and "merger" not in field
    assert re.fullmatch(r"no merger has the context window for the merge \(about \d{1,3}(,\d{3})* tokens\)",
                        field["note"])
    assert reply["choices"][0]["message"]["content"].startswith(f"_Merged reply unavailable: {field['note']}. "
                                                                "Every answer follows._\n\nBench bench/core")
    assert not seat_requests(bench, "tiny")
    assert len(call_log()[0]["seats"]) == 2


def test_mrg1_no_seat_answered_no_merge(gw, bench):
    """MRG-1, MRG-8."""
    collection(["gone", "blank"], reply="merged", merger="merger")
    _, reply = chat(gw)
    assert reply["bench"]["note"] == "no seat answered" and "merger" not in reply["bench"]
    assert reply["choices"][0]["message"]["content"].startswith(
        "_Merged reply unavailable: no seat answered. Every answer follows._\n\n")
    assert not seat_requests(bench, "merger")


def test_tst12_reply_mode_precedence(gw, bench):
    """DSP-4, PNL-6, TST-12, MRG-9: body › suffix › collection › all."""
    collection(["alpha", "beta"], reply="merged", merger="merger")
    assert chat(gw)[1]["bench"]["reply"] == "merged"
    assert "reply" not in chat(gw, "bench/core:all")[1]["bench"]
    assert chat(gw, "bench/core:all", bench={"reply": "merged"})[1]["bench"]["reply"] == "merged"
    assert "reply" not in chat(gw, "bench/core:merged", bench={"reply": "all"})[1]["bench"]
    collection(["alpha", "beta"], merger="merger")
    assert "reply" not in chat(gw)[1]["bench"]
    assert chat(gw, "core:merged")[1]["bench"]["reply"] == "merged"


def test_tst20_merged_image_request_gives_the_merger_placeholders(gw, bench):
    """TST-20, MRG-2, IMG-8: the merger reads placeholders and the answers, never bytes or a signature."""
    collection(["seer"], reply="merged", merger="merger")
    status, reply = chat(gw, messages=image_messages())
    assert status == 200 and reply["bench"]["reply"] == "merged"
    [sent] = seat_requests(bench, "merger")
    text = json.dumps(sent["body"])
    assert "[image: data URL, 1 KB]" in text and "https://h.example/p?..." in text and "Seer: the screenshot" in text
    assert "SECRET123" not in text and "u:pw" not in text and PNG.split(",")[1][:24] not in text


# -- §8 images ------------------------------------------------------------------------------------

def test_tst17_image_panel_with_llm_backend_and_a_seeing_explorer(gw, bench, monkeypatch):
    """TST-17, PNL-9, PNL-10, PNL-15 (`avoid` blind models), IMP-5, SEAT-1: images take the client path."""
    monkeypatch.setenv("BENCH_CLIENT", "llm")
    settings(max_explorers=2)
    collection(["alpha", "seer", "beta", "gamma"])
    status, reply = chat(gw, messages=image_messages())
    assert status == 200
    field = reply["bench"]
    assert [(s["seat"], s["alias"]) for s in field["seats"]] == [("member", "seer"), ("explorer", "tiny")]
    assert [(s["seat"], s["alias"]) for s in field["skipped"]] == [("member", "alpha"), ("member", "beta"),
                                                                 ("member", "gamma")]
    assert (field["shape"], field["shape_by"]) == ("vision", "the request carries images")
    for alias in ("seer", "tiny"):
        [sent] = seat_requests(bench, alias)
        assert sent["body"]["messages"] == image_messages() and sent["headers"]["user-agent"] == "benchwarmers"


def test_tst21_no_member_can_see_names_each_reason(gw, bench):
    """TST-21, PNL-16, IMG-5: blind, unknown, and reached through the Responses API."""
    # another base URL (the same upstream by name), so the registration resolves to this endpoint
    responses = {"base": f"http://localhost:{bench.port}/v1", "key": "", "kind": "local", "api": "responses"}
    fileio.update(endpoints.path(), lambda data: data.__setitem__("resp", responses))
    registry.add_registration("oldapi", "seer", "resp")
    collection(["alpha", "oldapi", "gone"])
    status, reply = chat(gw, messages=image_messages())
    assert status == 400
    message = reply["error"]["message"]
    assert message.startswith("no seat in bench/core can see images")
    for words in ("alpha does not take images", "oldapi is reached through the Responses API",
                  "gone the catalog does not say", "Vision / OCR", "none is asked rather than answer blind",
                  "No model that takes images was free for an explorer seat", "together.capabilities"):
        assert words in message
    assert not seat_requests(bench)


def test_tst22_images_count_against_the_window(gw, bench):
    """TST-22, PNL-13, EST-1."""
    collection(["tiny"])
    messages = image_messages(PNG, PNG, text="compare")
    status, reply = chat(gw, messages=messages)
    needed = images.estimate("compare\n[image: data URL, 1 KB]\n[image: data URL, 1 KB]") + 5000
    assert status == 413
    assert reply["error"]["message"].startswith(f"prompt is about {needed:,} tokens (each image counted as 2,500); "
                                                "too large for tiny 3,000 (context windows) in bench/core.")


def test_imp11_imp12_imp13_malformed_content_is_400(gw, bench):
    """IMP-11 (audio part), IMP-12 (number content, JSON nested too deep), IMP-13 (unparseable image host)."""
    collection(["alpha"])
    audio = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "input_audio"}]}]
    status, reply = chat(gw, messages=audio)
    assert status == 400 and "cannot be put to a panel" in reply["error"]["message"]
    status, reply = chat(gw, messages=[{"role": "user", "content": 42}])
    assert status == 400 and '"content" must be a string' in reply["error"]["message"]
    broken = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://[::1/x.png"}}]}]
    status, reply = chat(gw, messages=broken)
    assert status == 400 and "an image_url must be an http(s) URL" in reply["error"]["message"]
    deep = b'{"model": "bench/core", "messages": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    status, _, raw = request(gw, "POST", "/v1/chat/completions", deep)
    assert status == 400 and json.loads(raw)["error"]["message"] == "body is not JSON"
    assert not seat_requests(bench)


# -- §6 the Ask and dispatch ----------------------------------------------------------------------

@pytest.mark.parametrize("fields", [{"with": None}, {"with": ""}, {"with": 0}, {"with": False}, {"with": {}},
                                    {"bench": None}, {"bench": []}, {"bench": ""}, {"bench": 0}, {"bench": False},
                                    {"bench": {}}])
def test_ask1_falsy_with_and_bench_read_as_none(gw, bench, fields):
    """ASK-1 and its correction from testing: any falsy `with` is [], any falsy `bench` is no bench."""
    collection(["alpha"])
    status, reply = chat(gw, **fields)
    assert status == 200 and "reply" not in reply["bench"]


@pytest.mark.parametrize("fields, words", [
    ({"with": {"a": 1}}, '"with" must be a list of model aliases'),
    ({"with": ["alpha", 1]}, '"with" must be a list of model aliases'),
    ({"bench": "merged"}, '"bench" must be an object whose "reply" is'),
    ({"bench": {"reply": ""}}, '"bench" must be an object whose "reply" is'),
    ({"bench": {"reply": None}}, '"bench" must be an object whose "reply" is'),
    ({"messages": [{"role": "tool", "content": "42", "tool_call_id": "c1"}]}, ":route"),
    ({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]}, ":route"),
    ({"function_call": "auto"}, 'send "tools" and "tool_calls" instead'),
])
def test_ask1_dsp6_refusals(gw, bench, fields, words):
    """ASK-1, DSP-6, TST-26."""
    collection(["alpha"])
    status, reply = chat(gw, **fields)
    assert status == 400 and words in reply["error"]["message"]
    assert not seat_requests(bench)


def test_dsp5_col4_names_shown_and_resolved(gw, bench):
    """DSP-5, COL-4, COL-5: the reply names bench/<name> whatever suffix or prefix was sent."""
    collection(["alpha"])
    for model in ("core", "bench/core:all", " bench/core ", "core:merged"):
        status, reply = chat(gw, model)
        assert (status, reply["model"]) == (200, "bench/core"), model
    assert chat(gw, "bench/Core")[0] == 404
    assert chat(gw, "bench/")[0] == 404


def test_col8_refusal_text(gw, bench):
    """COL-8, IMP-8: repr quoting, the legacy `note`, and the line shown when there is no collection."""
    status, reply = chat(gw, "bench/it's")
    assert status == 404 and reply["error"]["message"] == (
        '"bench/it\'s" is not a collection here. Set "model" to the collection that fits the task '
        "(GET /v1/models lists them with description and tags):\n"
        "- none yet: create one with `python -m benchwarmers.scripts.collection add NAME MEMBER...`")
    collection(["alpha"], name="legacy", note="the old reviewers")
    collection(["beta"], name="core", tags=["code", "py"])
    status, reply = chat(gw, "bench/core:x")
    assert status == 404 and reply["error"]["message"].split("\n")[1:] == [
        "- bench/core: no description [code, py]", "- bench/legacy: the old reviewers"]
    assert reply["error"]["message"].startswith("'bench/core:x' is not a collection here.")


def test_imp14_a_collection_gone_before_the_panel_is_404(home):
    """IMP-14: deleted between the route's resolve and the panel's load: 404 with COL-8's message."""
    with pytest.raises(panel.UnknownCollection) as caught:
        panel.run("ghost", user(PROMPT))
    refusal = errors.planned(caught.value)
    assert (refusal.status, refusal.message) == (404, collections.choose_message("ghost"))


def test_imp9_bad_gateway_settings_do_not_crash_the_panel(gw, bench):
    """IMP-9, COL-2, COL-3: a string keeps the default; max_explorers above 2 is clamped."""
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": "5", "max_explorers": 9, "_why": "x"}')
    only_explorers("beta", "gamma", "seer")
    collection(["alpha"], shape="review")
    status, reply = chat(gw)
    assert status == 200 and [s["seat"] for s in reply["bench"]["seats"]] == ["member", "explorer", "explorer 2"]
    listing = json.loads(request(gw, "GET", "/v1/models")[2])
    assert listing["data"][0]["explorers"] == 2


# -- §9.1 the shape picker ------------------------------------------------------------------------

def test_shp_picker_contract(gw, bench, monkeypatch):
    """SHP-2..6, IMP-10: the picker's request, its failures and unsure answers, ad hoc and incomplete entries."""
    settings(max_explorers=1)
    only_explorers("beta")
    collection(["alpha"])
    monkeypatch.setenv("BENCHWARMERS_KEY_DEMO", "decision-secret")
    fileio.update(endpoints.path(), lambda data: data["demo"].__setitem__("key", "demo"))
    fileio.write_atomic(paths.file("config", "decision-models.json"), json.dumps({
        "incomplete": {"via": "demo", "served": "picker"},
        "picker": {"via": "demo", "served": "picker", "question_types": ["noul", "choice", "score"]}}))

    def shape_of(text=PROMPT):
        field = chat(gw, messages=user(text))[1]["bench"]
        return field["shape"], field["shape_by"]

    long = "y" * 25000
    assert shape_of(long) == ("review", "picker, 0.90")
    [asked] = [r for r in bench.requests if r["path"].endswith("/decisions")]
    assert asked["headers"]["authorization"] == "Bearer decision-secret"
    assert asked["body"]["model"] == "picker" and asked["body"]["state"] == long[:20000]
    question = asked["body"]["questions"]["shape"]
    assert question["type"] == "choice" and question["instructions"]
    assert list(question["criteria"]) == ["general", "design", "prose", "review", "code", "enumeration", "quick"]
    assert all(question["criteria"].values())

    bench.set_model("picker", decisions={"shape": {"choice": "vision", "confidence": 0.95}})
    assert shape_of() == ("general", "picker unsure (vision at 0.95)")
    bench.set_model("picker", decisions={"shape": {"choice": "code", "confidence": 0.5}})
    assert shape_of() == ("general", "picker unsure (code at 0.50)")
    bench.set_model("picker", fail="500")
    assert shape_of()[1].startswith("picker failed (500 ")
    monkeypatch.setattr(shape, "RATE_LIMIT_WAITS", (0.01, 0.01))
    bench.set_model("picker", fail="429", clears_after=1, decisions={"shape": {"choice": "code", "confidence": 1}})
    assert shape_of() == ("code", "picker, 1.00")

    only_explorers("beta")
    fileio.update(paths.file("config", "model-roles.json"), lambda data: data["ad_hoc"].append("picker"))
    assert shape_of() == ("general", "no decision model onboarded")
    paths.file("config", "model-roles.json").unlink()
    assert shape_of() == ("general", "config/model-roles.json missing")
    fileio.write_atomic(paths.file("config", "model-roles.json"), "[1]")
    assert shape_of() == ("general", "config/model-roles.json unreadable")


# -- §11 listing ----------------------------------------------------------------------------------

def test_lst1_lst2_listing_rows_and_an_invalid_reply(gw, bench):
    """LST-1, LST-2, COL-6, IMP-21: every field of a row; an invalid stored reply lists all three variants."""
    collection(["alpha", "seer"], reply="bogus", description="two", tags=["t"], shape="review", merger="merger")
    _, head, raw = request(gw, "GET", "/v1/models")
    rows = json.loads(raw)["data"]
    assert [r["id"] for r in rows] == ["bench/core", "bench/core:all", "bench/core:merged", "bench/core:route",
                                       "bench/core:council"]
    first = rows[0]
    assert list(first) == ["id", "object", "owned_by", "description", "tags", "members", "shape", "explorers",
                           "reply", "merger", "together"]
    assert (first["object"], first["owned_by"], first["reply"], first["explorers"]) == ("model", "benchwarmers",
                                                                                       "bogus", 0)
    assert first["together"]["context_window"] == 32000 and first["together"]["context_unknown"] == []
    assert [r["reply"] for r in rows[1:]] == ["all", "merged", "route", "council"]
    model = sdk(gw).models.retrieve("bench/core:merged")
    assert model.id == "bench/core:merged" and model.model_extra["reply"] == "merged"
    assert json.loads(request(gw, "GET", "/v1/models/core")[2])["id"] == "bench/core"


# -- §5 HTTP surface ------------------------------------------------------------------------------

def test_gw1_gw2_paths_and_the_host_check(gw, bench):
    """GW-1 (query dropped, trailing `/` stripped, unprefixed aliases), GW-2 (Host check on GET), GW-3 (bad length)."""
    collection(["alpha"])
    status, _, raw = request(gw, "POST", "/chat/completions/?trace=1",
                             {"model": "bench/core", "messages": user(PROMPT)})
    assert status == 200 and json.loads(raw)["bench"]["seats"][0]["status"] == "ok"
    assert json.loads(request(gw, "GET", "/models/?x=1")[2])["data"][0]["id"] == "bench/core"
    status, _, raw = request(gw, "GET", "/v1/models", headers={"Host": "evil.example"})
    assert status == 403 and json.loads(raw)["error"]["type"] == "bench_gateway"
    host, port = address(gw)
    for length in (b"abc", b"-1"):
        answer = raw_exchange(gw, b"POST /v1/chat/completions HTTP/1.0\r\nHost: " + f"{host}:{port}".encode()
                              + b"\r\nContent-Type: application/json\r\nContent-Length: " + length + b"\r\n\r\n{}")
        assert answer.startswith(b"HTTP/1.0 400"), answer[:60]
    status, _, raw = request(gw, "POST", "/v1/nowhere", {})
    assert status == 404 and "/bench/verdict" in json.loads(raw)["error"]["message"]
    status, head, raw = request(gw, "GET", "/mcp")
    assert (status, head["allow"]) == (405, "POST")


def test_gw7_gw8_options_and_cors(gw, bench, monkeypatch):
    """GW-7, GW-8: preflight on gateway routes only; CORS headers for allowed origins, never `*`."""
    collection(["alpha"])
    host, port = address(gw)
    mine = f"http://{host}:{port}"
    status, _, _ = request(gw, "OPTIONS", "/")
    assert status == 501
    status, _, raw = request(gw, "OPTIONS", "/v1/chat/completions", headers={"Host": "evil.example", "Origin": mine})
    assert status == 403
    status, _, raw = request(gw, "OPTIONS", "/v1/chat/completions")
    message = json.loads(raw)["error"]["message"]
    assert status == 403 and "(none)" in message and "BENCH_ALLOWED_ORIGINS" in message
    assert "BENCHWARMERS_PUBLIC_URL" in message
    status, _, raw = request(gw, "OPTIONS", "/v1/chat/completions", headers={"Origin": "https://evil.example"})
    assert status == 403 and "'https://evil.example'" in json.loads(raw)["error"]["message"]

    status, head, raw = request(gw, "OPTIONS", "/v1/chat/completions",
                                headers={"Origin": mine, "Access-Control-Request-Headers": "X-Trace, x-other"})
    assert (status, raw) == (204, b"")
    assert head["access-control-allow-methods"] == "GET, POST, OPTIONS"
    assert head["access-control-allow-headers"] == "Authorization, Content-Type, X-Trace, x-other"
    assert head["access-control-max-age"] == "600"
    assert head["access-control-allow-origin"] == mine and head["vary"] == "Origin"
    _, head, _ = request(gw, "OPTIONS", "/v1/models", headers={"Origin": mine,
                                                                "Access-Control-Request-Headers": "bad header!"})
    assert head["access-control-allow-headers"] == "Authorization, Content-Type"

    monkeypatch.setenv("BENCH_ALLOWED_ORIGINS", "https://app.example")
    status, head, _ = request(gw, "POST", "/v1/chat/completions", {"model": "bench/core", "messages": user(PROMPT)},
                              {"Origin": "https://app.example"})
    assert status == 200 and head["access-control-allow-origin"] == "https://app.example"
    assert head["access-control-expose-headers"] == ("X-Bench-Panel, X-Bench-Seats, X-Bench-Conversation, "
                                                     "X-Bench-Model, X-Bench-Call")  # improvement 7
    assert "access-control-allow-credentials" not in head
    status, head, _ = sse(gw, headers={"Origin": "https://app.example"})
    assert status == 200 and head["access-control-allow-origin"] == "https://app.example"
    _, head, _ = request(gw, "GET", "/v1/models")
    assert not [h for h in head if h.startswith("access-control")]


def test_gw9_other_methods_are_501_head_is_get_without_a_body(gw, bench):
    """GW-9, changed by security improvement 23: HEAD answers as GET without a body; PUT, DELETE, PATCH are 501."""
    status, head, raw = request(gw, "HEAD", "/v1/models")
    assert (status, raw, head["content-type"]) == (200, b"", "application/json") and int(head["content-length"]) > 0
    for method in ("PUT", "DELETE", "PATCH"):
        assert request(gw, method, "/v1/models")[0] == 501, method


def test_gw10_json_is_ascii_escaped_and_sse_is_utf8(gw, bench):
    """GW-10: `application/json` without charset, a Content-Length, ASCII escapes; streams carry raw UTF-8."""
    bench.set_model("alpha", answer="Grüße: the loop skips ß.", context_window=32000)
    collection(["alpha"], description="Über reviewers")
    _, head, raw = request(gw, "GET", "/v1/models")
    assert head["content-type"] == "application/json" and int(head["content-length"]) == len(raw)
    assert b"\\u00dcber reviewers" in raw and raw.isascii()
    _, _, raw = request(gw, "POST", "/v1/chat/completions", {"model": "bench/core", "messages": user(PROMPT)})
    assert raw.isascii() and b"Gr\\u00fc\\u00dfe" in raw
    _, _, raw = request(gw, "POST", "/v1/chat/completions",
                        {"model": "bench/core", "messages": user(PROMPT), "stream": True})
    assert "Grüße: the loop skips ß.".encode() in raw


def test_gw11_access_log_one_line_per_response(gw, bench, capfd, monkeypatch):
    """GW-11, LOG-1..3, TST-18 (access log): method, path without query, ASCII-escaped and cut at 200 characters,
    status, caller; the client address (security improvement 20) only with BENCH_LOG_ADDRESS=1."""
    collection(["alpha"])
    capfd.readouterr()
    request(gw, "GET", "/v1/models?key=SECRET1")
    chat(gw, messages=image_messages())
    request(gw, "GET", "/v1/" + "a" * 300)
    host, port = address(gw)
    raw_exchange(gw, b"GET /v1/caf\xc3\xa9 HTTP/1.0\r\nHost: " + f"{host}:{port}".encode() + b"\r\n\r\n")
    err = capfd.readouterr().err
    lines = [line[20:] for line in err.splitlines() if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", line)]
    assert lines == ["GET /v1/models 200 local",
                     "POST /v1/chat/completions 400 local",
                     "GET /v1/" + "a" * 196 + " 404 local",
                     "GET /v1/caf\\xc3\\xa9 404 local"]
    assert "SECRET" not in err and "u:pw" not in err and PNG.split(",")[1][:24] not in err
    monkeypatch.setenv("BENCH_LOG_ADDRESS", "1")  # the documented opt-in adds the address (improvement 20)
    request(gw, "GET", "/v1/models")
    assert capfd.readouterr().err.splitlines()[-1][20:] == "GET /v1/models 200 local 127.0.0.1"


def test_gw12_diagnostic_lines_hide_key_values(gw, bench, capfd):
    """GW-12: http.server quotes a malformed request line; `key=`, `api_key=`, `access_token=` values become `...`."""
    answer = raw_exchange(gw, b"GET /v1/models?api_key=SECRET2&Key=SECRET3 HTTP/1.0 HTTP/1.0\r\n\r\n")
    err = capfd.readouterr().err
    assert answer.startswith(b"HTTP/1.0 400")
    assert "api_key=...&Key=..." in err and "SECRET" not in err


def test_imp18_an_ipv6_bind_address_serves(bench):
    """IMP-18: the address family follows the bind address."""
    from benchwarmers.server import gateway

    try:
        server = gateway.Server(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        conn = http.client.HTTPConnection("::1", port, timeout=10)
        conn.request("GET", "/v1/models", headers={"Host": f"[::1]:{port}"})
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        server.shutdown()
        server.server_close()


def test_rpl1_footer_names_both_ways_to_record_a_verdict_and_both_work(gw, bench):
    """RPL-1 (4), RPL-3, OFF-6: the footer names the route and the CLI, and the CLI it prints records the verdict;
    `bench.verdict` is the path-form hint."""
    collection(["alpha"])
    _, reply = chat(gw)
    content = reply["choices"][0]["message"]["content"]
    footer = content[content.rindex("\n---\n") + 5:].split("\n")
    assert len(footer) == 2 and "verdict" in footer[0]
    assert "`POST /bench/verdict`" in footer[1] and "`bench.verdict`" in footer[1]
    assert '`python -m benchwarmers.panel.offload verdict <call id> --useful|--not-useful --note "..."`' in footer[1]
    assert reply["bench"]["verdict"] == ('POST /bench/verdict {"call", "useful": true|false, "note", '
                                         '"real": [...], "false": [...]}')
    call = reply["bench"]["seats"][0]["call"]
    done = subprocess.run([*paths.module_command("panel.offload"), "verdict", call, "--useful", "--note", "ok"],
                          cwd=paths.CODE, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert offload.by_call(call).useful is True
