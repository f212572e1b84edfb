"""Limits on what one request or one client may cost (security review, issue 21).

A real gateway on 127.0.0.1 over the real local upstream, driven with raw sockets where the
detail matters: `with` capped and unknown nominees summarised (item 3), text that is not
valid Unicode refused before any seat is asked (item 7), a per-address connection cap and a
body deadline that follows the bytes received (item 8), and a seeded fuzz of every route
whose malformed requests must all get a 4xx JSON reply (the fuzz finding).
"""

import base64
import concurrent.futures
import json
import random
import re
import socket
import time

import pytest

from benchwarmers.server import gateway as gateway_module
from benchwarmers import wire
from benchwarmers.core import fileio, paths
from benchwarmers.models import catalog
from benchwarmers.panel import offload
from benchwarmers.demo import demo
from benchwarmers.server import gatekeys, httpserver
from benchwarmers.wire import common
from conftest import wait_for

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 60).decode()


# -- raw exchanges -------------------------------------------------------------------------------

def exchange(port, data, timeout=10.0, source="127.0.0.1"):
    """Send `data`, close the sending half, read to the close: `(status, headers, body)`; status 0 = no reply."""
    with socket.socket() as sock:
        sock.settimeout(timeout)
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer (413, 415) and close before taking the whole body
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split()
    status = int(words[1]) if len(words) > 1 and words[1].isdigit() else 0
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, body


def http_request(port, method, path, body=b"", headers=None):
    """The bytes of one HTTP/1.0 request; `headers` may override or (with None values) drop the defaults."""
    sent = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json", "Content-Length": str(len(body))}
    if method == "GET":
        del sent["Content-Type"], sent["Content-Length"]
    for name, value in (headers or {}).items():
        if value is None:
            sent.pop(name, None)
        else:
            sent[name] = value
    head = f"{method} {path} HTTP/1.0\r\n".encode() + b"".join(
        name.encode("latin-1") + b": " + (value if isinstance(value, bytes) else value.encode("latin-1")) + b"\r\n"
        for name, value in sent.items())
    return head + b"\r\n" + body


def post(port, path, body):
    """One POST over a raw socket: `(status, parsed JSON body or the raw bytes)`."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, head, raw = exchange(port, http_request(port, "POST", path, data))
    return status, json.loads(raw) if head.get("content-type") == "application/json" else raw


def seat_requests(upstream):
    return [r for r in upstream.requests if r["method"] == "POST"]


def call_log():
    return fileio.read_jsonl(paths.file("runs", "gateway", "calls.jsonl"))


def settings(**values):
    fileio.write_atomic(paths.file("config", "gateway.json"), json.dumps({"max_calls": 5, **values}))


def user(content):
    return [{"role": "user", "content": content}]


# -- item 3: `with` is capped, unknown nominees summarised ------------------------------------------

# one panel route per format, as (path, body without `with`); a streamed twin of each follows
PANEL_ROUTES = [
    ("/v1/chat/completions", {"model": "bench/core", "messages": user(PROMPT)}),
    ("/v1/completions", {"model": "bench/core", "prompt": PROMPT}),
    ("/v1/messages", {"model": "bench/core", "max_tokens": 64, "messages": user(PROMPT)}),
    ("/v1/responses", {"model": "bench/core", "input": PROMPT}),
    ("/api/chat", {"model": "bench/core", "messages": user(PROMPT), "stream": False}),
    ("/api/generate", {"model": "bench/core", "prompt": PROMPT, "stream": False}),
    ("/v1beta/models/bench/core:generateContent", {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}),
]


def streamed(path, body):
    if path.endswith(":generateContent"):
        return path.replace(":generateContent", ":streamGenerateContent?alt=sse"), body
    return path, {**body, "stream": True}


@pytest.mark.parametrize("path, body", PANEL_ROUTES + [streamed(*route) for route in PANEL_ROUTES])
def test_with_past_its_cap_is_refused_in_every_format_before_any_seat(port, bench, path, body):
    """Issue 21 item 3: nine names in `with`, or one name of 201 characters, is a 400 naming the cap in the
    route's own error shape, plain or streamed; 100,000 names are refused at once with a short reply."""
    demo.set_collection("core", ["alpha"])
    fmt = wire.format_of(path)
    cap = f'"with" takes at most {common.MAX_WITH} model aliases of at most {common.MAX_ALIAS} characters each'
    for names in ([f"ghost-{i}" for i in range(9)], ["g" * 201], ["alpha"] * 100_000):
        started = time.monotonic()
        status, payload = post(port, path, {**body, "with": names})
        assert status == 400 and time.monotonic() - started < 2 and len(json.dumps(payload)) < 400
        error = payload["error"]
        message = error if isinstance(error, str) else error["message"]  # Ollama's error is the message itself
        assert message.startswith(cap) and payload == wire.error_body(fmt, 400, message)
    assert not seat_requests(bench) and not paths.file("runs", "gateway", "calls.jsonl").exists()


def test_unknown_nominees_are_one_skipped_entry_and_never_looked_up(port, bench, monkeypatch):
    """Issue 21 item 3: names no model answers to are counted and listed once, in `bench.skipped`, the heading
    and the call log alike, whether an explorer seat is free, none is, or the request carries an image; the
    catalog is never asked about them, and a registered nominee still takes its seat."""
    looked_up = []
    record = catalog._record
    monkeypatch.setattr(catalog, "_record", lambda alias: looked_up.append(alias) or record(alias))
    ghosts = [f"ghost-{i}" for i in range(7)]
    one_entry = {"seat": "with", "alias": ", ".join(ghosts), "why": "7 names not registered on the bench"}

    settings(max_explorers=1)
    demo.set_collection("core", ["alpha"], shape="general")
    status, reply = post(port, "/v1/chat/completions",
                         {"model": "bench/core", "messages": user(PROMPT), "with": ghosts + ["gamma"]})
    assert status == 200
    field, content = reply["bench"], reply["choices"][0]["message"]["content"]
    assert field["skipped"] == [one_entry]
    assert [(s["seat"], s["alias"]) for s in field["seats"]] == [("member", "alpha"), ("explorer", "gamma")]
    assert f"\nNot asked: {one_entry['alias']} ({one_entry['why']})\n" in content and content.count("ghost-") == 7
    assert call_log()[-1]["skipped"] == [one_entry]

    settings(max_explorers=0)
    status, reply = post(port, "/v1/chat/completions",
                         {"model": "bench/core", "messages": user(PROMPT), "with": ghosts[:1]})
    assert status == 200 and reply["bench"]["skipped"] == [
        {"seat": "with", "alias": "ghost-0", "why": "not registered on the bench"}]

    settings(max_explorers=2)
    demo.set_collection("core", ["seer"])
    picture = [{"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                            {"type": "image_url", "image_url": {"url": PNG}}]}]
    status, reply = post(port, "/v1/chat/completions", {"model": "bench/core", "messages": picture, "with": ghosts})
    assert status == 200 and reply["bench"]["skipped"] == [one_entry]
    assert reply["bench"]["seats"][0]["alias"] == "seer"
    assert not [alias for alias in looked_up if alias.startswith("ghost-")]
    assert not [r for r in seat_requests(bench) if r["model"].startswith("ghost-")]


# -- item 7: text that is not valid Unicode ------------------------------------------------------

LONE = "audit me \ud800"


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", {"model": "bench/core", "messages": user(LONE)}),
    ("/v1/chat/completions", {"model": "bench/core", "messages": user(LONE), "stream": True}),
    ("/v1/messages", {"model": "bench/core", "max_tokens": 64, "messages": user(LONE)}),
    ("/v1/messages", {"model": "bench/core", "max_tokens": 64, "messages": user(LONE), "stream": True}),
    ("/v1beta/models/bench/core:streamGenerateContent?alt=sse", {"contents": [{"parts": [{"text": LONE}]}]}),
])
def test_lone_surrogate_is_refused_before_any_seat_is_asked(port, bench, path, body):
    """Issue 21 item 7: a lone surrogate, escaped (`\\ud800`) or as raw bytes (ED A0 80), is a 400 in the
    route's shape before any seat is asked, streamed or not, and nothing is written anywhere; a surrogate
    pair (an emoji escaped) is fine."""
    demo.set_collection("core", ["alpha", "beta"])
    refusal = wire.error_body(wire.format_of(path), 400, common.NOT_UNICODE)
    for data in (json.dumps(body).encode(), json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")):
        assert post(port, path, data) == (400, refusal)
    assert not seat_requests(bench) and not offload.entries()
    assert not paths.file("runs", "gateway", "calls.jsonl").exists()
    status, answer = post(port, path, json.dumps(body).replace("\\ud800", "\\ud83d\\ude00").encode())
    assert status == 200 and "bench" in (answer if isinstance(answer, dict) else answer.decode())
    assert len(seat_requests(bench)) == 2 and "audit me \U0001f600" in call_log()[-1]["prompt"]


def test_lone_surrogate_in_a_verdict_note_is_refused_and_nothing_changes(port, bench):
    """Issue 21 item 7: every route reads its body through the same check, verdicts too."""
    demo.set_collection("core", ["alpha"])
    status, reply = post(port, "/v1/chat/completions", {"model": "bench/core", "messages": user(PROMPT)})
    call = reply["bench"]["seats"][0]["call"]
    before = paths.file("metrics", "offloads.jsonl").read_bytes()
    status, payload = post(port, "/bench/verdict", {"call": call, "useful": True, "note": LONE})
    assert status == 400 and "lone surrogate" in payload["error"]["message"]
    assert paths.file("metrics", "offloads.jsonl").read_bytes() == before


STREAM_ENDS = {"chat": b"data: [DONE]", "completion": b"data: [DONE]", "anthropic": b"event: message_stop",
               "responses": b"event: response.completed", "ollama_chat": b'"done": true',
               "ollama_generate": b'"done": true', "gemini": b'"finishReason": "STOP"'}


@pytest.mark.parametrize("path, body", PANEL_ROUTES[:1] + [streamed(*route) for route in PANEL_ROUTES])
def test_an_answer_holding_a_lone_surrogate_is_streamed_and_logged_whole(port, bench, path, body):
    """Issue 21 item 7: a model's answer may hold a lone surrogate (an upstream's JSON can escape one). Every
    format's stream still runs to its end, with the surrogate escaped inside its JSON string, and the call
    log's line is written whole: valid UTF-8 JSON that reads back to the same text."""
    answer = "Alpha: half a pair \ud800 here."
    bench.set_model("alpha", answer=answer, context_window=32000)
    demo.set_collection("core", ["alpha"])
    status, reply = post(port, path, body)
    assert status == 200
    if isinstance(reply, dict):
        assert reply["bench"]["seats"][0]["answer"] == answer
    else:
        assert "half a pair \\ud800 here." in reply.decode("utf-8")
        assert STREAM_ENDS[wire.format_of(path)] in reply
    raw = paths.file("runs", "gateway", "calls.jsonl").read_bytes()
    assert raw.decode("utf-8").count("\n") == 1 and json.loads(raw)["seats"][0]["answer"] == answer


# -- item 8: connections per address, and a body deadline that follows the bytes ----------------

def hold(port, head, source="127.0.0.1"):
    """A connection that has sent part of a request head, so it holds a handler thread."""
    sock = socket.socket()
    sock.settimeout(10)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(head)
    return sock


def read_all(sock):
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def test_one_address_past_its_cap_gets_503_while_another_is_served(server, port):
    """Issue 21 item 8: idle connections from one address fill only that address's share; its next gets 503 with
    Retry-After, while a client from another address (127.0.0.2) is served, and the share frees as they close."""
    server.max_per_address = 4
    head = f"GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n".encode()
    held = [hold(port, head) for _ in range(4)]
    try:
        assert wait_for(lambda: server.per_address.get("127.0.0.1") == 4)
        status, headers, body = exchange(port, head + b"\r\n")
        assert status == 503 and headers["retry-after"] == "1"
        assert json.loads(body)["error"]["message"].startswith("too many connections from your address (4 open)")
        assert exchange(port, head + b"\r\n", source="127.0.0.2")[0] == 200
        for sock in held:
            sock.sendall(b"\r\n")
        assert [read_all(sock).split(b" ", 2)[1] for sock in held] == [b"200"] * 4
    finally:
        for sock in held:
            sock.close()
    assert wait_for(lambda: server.open == 0) and server.per_address == {}
    assert exchange(port, head + b"\r\n")[0] == 200


def test_per_address_cap_setting_and_ipv6_prefix(monkeypatch, capfd):
    """Issue 21 item 8: `BENCH_MAX_PER_ADDRESS` is read when a server starts (a bad value keeps the default); an
    IPv6 client counts by its /64, an IPv4 client of a dual-stack socket by its own address."""
    monkeypatch.setenv("BENCH_MAX_PER_ADDRESS", "3")
    srv = gateway_module.Server(("127.0.0.1", 0))
    assert srv.max_per_address == 3 and srv.address_key(("192.0.2.7", 5)) == "192.0.2.7"
    srv.server_close()
    monkeypatch.setenv("BENCH_MAX_PER_ADDRESS", "²")
    srv = gateway_module.Server(("::1", 0))
    assert srv.max_per_address == httpserver.MAX_PER_ADDRESS < srv.max_connections
    assert "BENCH_MAX_PER_ADDRESS='²' is not a whole number" in capfd.readouterr().err
    assert srv.address_key(("2001:db8::1:2:3:4", 5, 0, 0)) == srv.address_key(("2001:db8::9", 5, 0, 0))
    assert srv.address_key(("2001:db8:0:1::9", 5, 0, 0)) == "2001:db8:0:1::/64"
    assert srv.address_key(("::ffff:192.0.2.7", 5, 0, 0)) == "192.0.2.7"
    srv.server_close()


def send_paced(port, head, pieces, interval):
    """Send `head`, then each piece `interval` seconds apart: `(seconds until the server closed, reply bytes)`."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(head)
        answer = b""
        for piece in pieces:
            time.sleep(interval)  # the client's pace is what is under test
            try:
                sock.sendall(piece)
            except OSError:
                break
            sock.settimeout(0.01)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        sock.settimeout(10)
        try:
            answer += read_all(sock)
        except OSError:
            pass
        return time.monotonic() - started, answer


def test_body_deadline_follows_the_bytes_received_not_the_length_declared(server, port, capfd):
    """Issue 21 item 8: a POST declaring 20 MB and trickling a byte every 0.2 s is dropped at about the read
    timeout (it was held timeout + length / MIN_RATE, 402 s here); a body arriving steadily faster than
    MIN_RATE is taken however long past the read timeout it runs."""
    server.read_timeout = 1.5
    head = (f"POST /bench/pending HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Content-Length: {length}\r\n\r\n")
    seconds, answer = send_paced(port, head.format(length=20_000_000).encode(), [b" "] * 40, 0.2)
    assert 1.4 <= seconds < 3.5 and answer == b""
    assert "Request timed out" in capfd.readouterr().err

    body = json.dumps({"calls": []}).encode().ljust(8 * httpserver.MIN_RATE)
    pieces = [body[i:i + httpserver.MIN_RATE // 2] for i in range(0, len(body), httpserver.MIN_RATE // 2)]
    seconds, answer = send_paced(port, head.format(length=len(body)).encode(), pieces, 0.15)
    assert seconds > server.read_timeout and answer.startswith(b"HTTP/1.0 200 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2]) == {"pending": []}


# -- the fuzz ----------------------------------------------------------------------------------

TOOL = {"type": "function", "function": {"name": "look", "parameters": {"type": "object", "properties": {}}}}
BASES = [
    ("/v1/chat/completions", {"model": "bench/core", "max_tokens": 64, "with": ["alpha"], "bench": {"reply": "all"},
                              "messages": [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": PROMPT}]}),
    ("/v1/chat/completions", {"model": "bench/core:merged", "tools": [TOOL], "messages": [
        {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "seen"}]}),
    ("/v1/completions", {"model": "bench/core", "prompt": PROMPT, "max_tokens": 64}),
    ("/v1/messages", {"model": "bench/core", "max_tokens": 64, "system": "Be brief.",
                      "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]}),
    ("/v1/messages", {"model": "bench/core", "max_tokens": 64, "tools": [{"name": "look", "input_schema": {}}],
                      "messages": [{"role": "user", "content": PROMPT},
                                   {"role": "assistant", "content": [
                                       {"type": "tool_use", "id": "t1", "name": "look", "input": {"a": [1]}}]},
                                   {"role": "user", "content": [
                                       {"type": "tool_result", "tool_use_id": "t1", "content": [
                                           {"type": "text", "text": "seen"}]}]}]}),
    ("/v1/messages/count_tokens", {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]}),
    ("/v1/responses", {"model": "bench/core", "instructions": "Be brief.",
                       "input": [{"role": "user", "content": [{"type": "input_text", "text": PROMPT}]}]}),
    ("/v1/responses", {"model": "bench/core", "tools": [{"type": "function", "name": "look", "parameters": {}}],
                       "input": [{"role": "user", "content": PROMPT},
                                 {"type": "function_call", "call_id": "c1", "name": "look", "arguments": "{}"},
                                 {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text",
                                                                                             "text": "seen"}]}]}),
    ("/api/chat", {"model": "bench/core", "stream": False, "options": {"temperature": 0.1},
                   "messages": [{"role": "user", "content": PROMPT, "images": []}]}),
    ("/api/chat", {"model": "bench/core", "stream": False, "tools": [TOOL], "messages": [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "look", "arguments": {}}}]},
        {"role": "tool", "tool_name": "look", "content": "seen"}]}),
    ("/api/generate", {"model": "bench/core", "prompt": PROMPT, "system": "Be brief.", "stream": False}),
    ("/api/show", {"model": "bench/core"}),
    ("/v1beta/models/bench/core:generateContent", {
        "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 64, "responseMimeType": "application/json",
                             "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}}}),
    ("/v1beta/models/bench/core:generateContent", {
        "tools": [{"functionDeclarations": [{"name": "look", "parameters": {"type": "OBJECT"}}]}],
        "contents": [{"role": "user", "parts": [{"text": PROMPT}]},
                     {"role": "model", "parts": [{"functionCall": {"name": "look", "args": {"a": 1}}}]},
                     {"role": "user", "parts": [{"functionResponse": {"name": "look", "response": {"r": 1}}}]}]}),
    ("/v1beta/models/bench/core:countTokens", {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}),
    ("/bench/verdict", {"call": "p20260101-000000-abcd.member1", "useful": True, "note": "checked",
                        "real": ["a claim"], "false": []}),
    ("/bench/pending", {"calls": ["p20260101-000000-abcd.member1"]}),
]
GETS = ["/v1/models", "/v1/models/bench%2Fcore", "/bench/record?collection=bench/core&task=loop", "/api/tags",
        "/api/version", "/v1beta/models", "/v1beta/models/bench%2Fcore", "/health"]


# stand-ins for arrays nested hundreds deep, spliced in as bytes (json.dumps itself would refuse the deepest)
DEEP = {f"\x00deep{depth}\x00": b"[" * depth + b"0" + b"]" * depth for depth in (150, 500, 900, 975)}
WEIRD = [None, True, False, 0, -1, 1.5, 10 ** 30, -(10 ** 30), 1e308, "", "x", "bench/core", "é🙂", "audit me \ud800",
         "a" * 50_000, [], {}, [None], [1, 2], ["alpha", 7], {"a": 1},
         {"type": "image_url", "image_url": {"url": "file:///x"}},
         {"type": "image", "source": {"type": "base64", "data": "AAAA"}}, {"type": "text", "text": 5},
         {"role": "tool", "content": "x"}, {"role": 5, "content": [1]}, [[[[[[[[[[[]]]]]]]]]]], *DEEP,
         *({"type": "OBJECT", "properties": {"a": deep}} for deep in DEEP)]
ODD_BODIES = [b"", b"{", b"[1, 2]", b'"text"', b"null", b"1e999999", b"1" * 5000, b"\xff\xfe\x00{}",
              b'{"model": "bench/core", "messages": "\xc3\x28"}', b"[" * 100_000, b"{}" * 3, b"NaN"]
CONTENT_TYPES = ["text/plain", "application/jsonx", "application/json; charset=utf-8", "", "application/json\x80"]
LENGTHS = ["x", "-1", "+5", " 5", "1_0", "99999999999999999999", "0"]


def paths_of(value, where=()):
    """Every place in a JSON value, as key paths."""
    yield where
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_of(item, where + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths_of(item, where + (index,))


def weird(rng):
    return json.loads(json.dumps(rng.choice(WEIRD)))  # a fresh copy: later mutations must not change WEIRD


def mutate(rng, body):
    """One random change somewhere in `body`: a weird value, a deleted key, an added one, a wrapped one."""
    where = rng.choice(list(paths_of(body)))
    if not where:
        return rng.choice([body, [body], {"body": body}, weird(rng)])
    parent = body
    for step in where[:-1]:
        parent = parent[step]
    last = where[-1]
    action = rng.randrange(4)
    if action == 0:
        parent[last] = weird(rng)
    elif action == 1 and isinstance(parent, dict):
        del parent[last]
    elif action == 2 and isinstance(parent, dict):
        parent[rng.choice(["with", "bench", "stream", "tools", "images", "extra", "alt"])] = weird(rng)
    else:
        parent[last] = [parent[last]] if rng.random() < 0.5 else {"value": parent[last]}
    return body


def fuzz_body(rng, base):
    body = json.loads(json.dumps(base))
    for _ in range(rng.randint(1, 3)):
        body = mutate(rng, body)
    data = json.dumps(body, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    for stand_in, deep in DEEP.items():
        data = data.replace(json.dumps(stand_in).encode(), deep)
    roll = rng.random()
    if roll < 0.08:
        data = data[:rng.randrange(len(data) + 1)]
    elif roll < 0.14:
        at = rng.randrange(len(data) + 1)
        data = data[:at] + rng.choice([b"\xff", b"\x00", b"\xed\xa0\x80", b"\xc3", b"\\ud800", b"}"]) + data[at:]
    elif roll < 0.2:
        data = rng.choice(ODD_BODIES)
    return data


def fuzz_headers(rng, data):
    """Mostly right headers; now and then a wrong Content-Type, Content-Length, Host or an odd extra."""
    headers = {}
    roll = rng.random()
    if roll < 0.05:
        headers["Content-Type"] = rng.choice(CONTENT_TYPES)
    elif roll < 0.12:
        headers["Content-Length"] = rng.choice(LENGTHS + [str(max(0, len(data) - rng.randint(1, 9))),
                                                          str(len(data) + rng.randint(1, 9))])
    elif roll < 0.14:
        headers["Transfer-Encoding"] = "chunked"
    elif roll < 0.16:
        headers["Host"] = rng.choice(["evil.example", "127.0.0.1", "", "127.0.0.1:1"])
    elif roll < 0.22:
        name, value = rng.choice([("Origin", "https://evil.example"), ("Sec-Fetch-Site", "cross-site"),
                                  ("Authorization", "Bearer \xff junk"), ("X-Api-Key", ""),
                                  ("Expect", "100-continue"), ("X-Odd", b"\xc3\x28\x80"),
                                  ("Content-Length", str(len(data)) + ", " + str(len(data)))])
        headers[name] = value
    return headers


def fuzz_cases(rng, port, count):
    """`count` seeded requests over every route: `(what, bytes)`."""
    cases = []
    for number in range(count):
        if rng.random() < 0.06:
            path = rng.choice(GETS) + rng.choice(["", "?alt=sse", "?key=%ff%00", "/%ff"])
            cases.append((f"{number} GET {path}", http_request(port, "GET", path)))
            continue
        path, base = rng.choice(BASES)
        base = dict(base)
        if path.endswith(":generateContent") and rng.random() < 0.3:
            path = path.replace(":generateContent", ":streamGenerateContent") + rng.choice(["", "?alt=sse"])
        elif rng.random() < 0.15 and ("messages" in base or "prompt" in base or "input" in base):
            base["stream"] = True
        data = fuzz_body(rng, base)
        cases.append((f"{number} POST {path}", http_request(port, "POST", path, data, fuzz_headers(rng, data))))
    return cases


def answered_well(result):
    """A status line, never a 5xx, and a JSON body on every refusal (the stream's own errors never a 500)."""
    status, headers, body = result
    if not 200 <= status < 500:
        return False
    if status >= 400:
        try:
            json.loads(body)
        except ValueError:
            return False
        return headers.get("content-type") == "application/json"
    return b"the panel failed" not in body and b'"code": 500' not in body


def test_json_nested_past_the_limit_is_a_400_not_a_dropped_connection(port, bench):
    """Issue 21 (the fuzz's failing case): a Gemini responseSchema nested 600 deep passed the JSON parser, then
    overflowed the reader's schema walk and the connection dropped unanswered. Now a body nesting lists and
    objects past 100 levels is a 400 in the route's shape on every route, and one at the limit is taken."""
    demo.set_collection("core", ["alpha"])
    schema = {"type": "STRING"}
    for _ in range(300):
        schema = {"type": "OBJECT", "properties": {"a": schema}}
    gemini = {"contents": [{"parts": [{"text": PROMPT}]}],
              "generationConfig": {"responseMimeType": "application/json", "responseSchema": schema}}
    too_deep = f"body nests lists and objects deeper than {common.MAX_NESTING} levels"
    assert post(port, "/v1beta/models/bench/core:generateContent", gemini) == (
        400, wire.error_body("gemini", 400, too_deep))
    for depth, status in ((common.MAX_NESTING, 200), (common.MAX_NESTING + 1, 400)):
        extra = []
        for _ in range(depth - 2):  # the body object and the innermost list make two levels
            extra = [extra]
        body = {"model": "bench/core", "messages": user(PROMPT), "user": extra}
        assert post(port, "/v1/chat/completions", body)[0] == status
    assert post(port, "/bench/verdict", {"call": "x", "useful": True, "real": extra})[0] == 400


def test_fuzz_every_malformed_request_gets_a_4xx_json_reply(port, bench):
    """Issue 21 (fuzz): 2,000 seeded mutations of valid requests on every route; each is answered, never a
    dropped connection or a 500, and every refusal is JSON."""
    demo.set_collection("core", ["alpha", "gamma"])
    cases = fuzz_cases(random.Random(1), port, 2000)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda case: exchange(port, case[1]), cases))
    failed = [(what, result[0], result[2][:160]) for (what, _), result in zip(cases, results)
              if not answered_well(result)]
    assert not failed, failed[:10]


# -- items 4, 6 and 9: call ids, the record's collection, the calls log ------------------------------

@pytest.fixture
def keyed(port, monkeypatch):
    """Gateway keys required on the running gateway; returns `post(path, body, key)`."""
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")

    def as_key(path, body, key):
        data = json.dumps(body).encode()
        status, head, raw = exchange(port, http_request(port, "POST", path, data, {"Authorization": f"Bearer {key}"}))
        return status, head, json.loads(raw)
    return as_key


def test_pending_is_capped_charged_and_a_verdict_shows_no_prompt(port, bench, keyed):
    """Item 4: `/bench/pending` takes at most 1,000 ids and, like `/bench/verdict`, counts against the
    key's rpm, so ids cannot be guessed in bulk; a verdict's reply does not show the task's prompt words."""
    demo.set_collection("core", ["alpha"])
    key = gatekeys.make("guesser", rpm=3)
    status, _, reply = keyed("/v1/chat/completions", {"model": "bench/core", "messages": user(PROMPT)}, key)
    assert status == 200, reply
    call = reply["bench"]["seats"][0]["call"]
    assert status == 200 and re.fullmatch(r"p\d{8}-\d{6}-[0-9a-f]{16}\.member1", call)
    guesses = [f"{call[:17]}{n:016x}.member1" for n in range(1001)]
    status, _, refused = keyed("/bench/pending", {"calls": guesses}, key)
    assert status == 400 and "at most 1,000" in refused["error"]["message"]
    status, _, judged = keyed("/bench/verdict", {"call": call, "useful": True}, key)
    assert status == 200 and "task" not in judged["recorded"] and PROMPT[:20] not in json.dumps(judged)
    status, headers, refused = keyed("/bench/pending", {"calls": [call]}, key)
    assert status == 429 and int(headers["retry-after"]) >= 1  # the fourth request this minute


def test_a_collection_named_in_the_prompt_counts_for_nothing(port, bench, keyed):
    """Item 6: the record reads the collection the gateway wrote, never one the prompt names."""
    demo.set_collection("core", ["alpha"])
    demo.set_collection("other", ["beta"])
    key = gatekeys.make("skewer", ["other"])
    before = post(port, "/bench/pending", {"calls": []})  # the gateway is up
    assert before[0] in (200, 401)
    status, _, reply = keyed("/v1/chat/completions",
                             {"model": "bench/other", "messages": user("(bench/core, review) rate me")}, key)
    assert status == 200, reply
    call = reply["bench"]["seats"][0]["call"]
    assert keyed("/bench/verdict", {"call": call, "useful": True}, key)[0] == 200
    entry = offload.by_call(call)
    assert entry.collection == "bench/other" and "(bench/core, review)" in entry.task
    assert offload.record("bench/core") == {}
    assert offload.record("bench/other")["beta"]["judged"] == 1


def test_the_calls_log_can_keep_no_prompt_and_is_rotated_by_size(port, bench):
    """Item 9: `calls_log_prompts: false` keeps prompts out of calls.jsonl; past `calls_log_max_mb` it is
    rotated, `calls_log_keep` files kept, every line whole."""
    demo.set_collection("core", ["seer"])  # a window of 128,000 tokens
    settings(max_explorers=0, calls_log_prompts=False, calls_log_max_mb=1, calls_log_keep=2)
    prompt = "a private question " * 15_000  # ~285 KB a line: the fourth line passes 1 MB
    for _ in range(7):
        assert post(port, "/v1/chat/completions", {"model": "bench/core", "messages": user(prompt)})[0] == 200
    log = paths.file("runs", "gateway", "calls.jsonl")
    assert all("private question" not in line["prompt"] for line in call_log())
    assert call_log()[0]["prompt"] == f"[not kept: {len(prompt):,} characters]"
    settings(max_explorers=0, calls_log_max_mb=1, calls_log_keep=2)
    for _ in range(13):  # rotated after the 4th, 8th and 12th: the oldest file is dropped
        assert post(port, "/v1/chat/completions", {"model": "bench/core", "messages": user(prompt)})[0] == 200
    rotated = [log.with_name("calls.jsonl.1"), log.with_name("calls.jsonl.2")]
    assert all(path.exists() for path in rotated) and not log.with_name("calls.jsonl.3").exists()
    for path in [log, *rotated]:
        assert path.stat().st_size < 2_000_000 and all(line["seats"] for line in fileio.read_jsonl(path))
    assert call_log()[-1]["prompt"].startswith("a private question")


def test_panels_in_flight_are_capped_per_key(port, bench, keyed):
    """Item 2: past `max_panels_per_key` a key's next panel is a 503 with Retry-After, while another key
    (and the same key once its panel has ended) is still served."""
    demo.set_collection("core", ["slow"])  # 0.6 s
    settings(max_explorers=0, max_panels_per_key=1)
    first, second = gatekeys.make("first"), gatekeys.make("second")
    body = {"model": "bench/core", "stream": True, "messages": user(PROMPT)}
    with socket.create_connection(("127.0.0.1", port)) as held:
        data = json.dumps(body).encode()
        held.sendall(http_request(port, "POST", "/v1/chat/completions", data, {"Authorization": f"Bearer {first}"}))
        assert held.recv(12).startswith(b"HTTP/1.0 200")  # the panel is seated and in flight
        status, headers, refused = keyed("/v1/chat/completions", body, first)
        assert status == 503 and headers["retry-after"] == "2"
        assert "max_panels_per_key" in refused["error"]["message"]
        assert keyed("/v1/chat/completions", {**body, "stream": False}, second)[0] == 200
        read_all(held)
    assert wait_for(lambda: keyed("/v1/chat/completions", {**body, "stream": False}, first)[0] == 200)
