"""The built-in client against real servers on 127.0.0.1 (CL, REQ-1, STR, RET, BUD, SWAP, ERR, LED, PN, BK).

Most scenarios use the project's demo upstream (benchwarmers.demo.demo.Upstream, OFF-2). What it does
not do (redirects, a trickling body, a swapped model, a 400 on streaming, a huge body) comes
from `Scripted`, a tiny server in this file whose reply is a function of the request.
"""

import http.client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchwarmers.core import fileio, keys, paths
from benchwarmers.wire import notices
from benchwarmers.net import transport
from benchwarmers.models import registry
from benchwarmers.calling import client, ledger
from benchwarmers.demo.demo import NOTICE, Upstream

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-test-DO-NOT-LEAK-4242"

MODELS = {
    "ok": {"answer": "The fix is to cap the retry loop.", "reasoning": "Look at the loop first."},
    "empty": {"fail": "empty"},
    "budget": {"fail": "length_empty", "length_below": 100, "answer": "Enough room now."},
    "capped": {"fail": "length_empty", "max_tokens_limit": 100},
    "gone": {"fail": "404"},
    "rate": {"fail": "429", "retry_after": 0.1},
    "rate-once": {"fail": "429", "retry_after": 0.1, "clears_after": 1, "answer": "finally"},
    "html": {"fail": "502html"},
    "slow": {"fail": "slow", "delay": 10},
    "notice": {"fail": "notice"},
    "drop": {"fail": "drop", "answer": "one two three four five six"},
    "err200": {"fail": "error200"},
    "echo": {"echo": True},
    "dribble": {"words": 60, "latency": 6},
}


@pytest.fixture(scope="module")
def up():
    with Upstream(MODELS) as server:
        yield server


@pytest.fixture(scope="module")
def keyed():
    with Upstream({"ok": {"answer": "keyed answer"}}, key=SECRET) as server:
        yield server


def register(endpoints, aliases, options=None):
    """Write endpoints.json (`{name: entry}`) and register each `alias: (served, endpoint)`."""
    fileio.write_atomic(paths.file("config", "endpoints.json"), fileio.dumps(endpoints))
    for alias, (served, endpoint) in aliases.items():
        registry.add_registration(alias, served, endpoint)
    if options:
        fileio.write_atomic(paths.file("config", "model-options.json"), fileio.dumps(options))


@pytest.fixture
def bench(up):
    """Every demo model registered under its own name on endpoint `demo` (no key)."""
    up.clear()
    register({"demo": {"base": up.base_url, "default": True}}, {m: (m, "demo") for m in MODELS})
    return up


def ledger_lines():
    files = sorted((paths.data() / "metrics" / "usage").glob("*.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines()]


def chats(up):
    return [r for r in up.requests if r["path"].endswith("/chat/completions")]


class Scripted:
    """A tiny HTTP/1.1 server: `respond(handler, body)` writes each reply. `hits` counts requests."""

    def __init__(self, respond):
        outer = self
        self.respond = respond
        self.hits = []
        self.stopping = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.serve()

            def do_POST(self):
                self.serve()

            def serve(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                outer.hits.append({"path": self.path, "headers": dict(self.headers), "body": body})
                outer.respond(self, body)

            def send(self, status, data, content_type="application/json", headers=()):
                data = data if isinstance(data, bytes) else json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # a client hanging up is routine here
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    made = []

    def make(respond):
        server = Scripted(respond)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def completion(text, model="m", **extra):
    return {"id": "c1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, **extra},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2}}


# ---------------------------------------------------------------- answers


def test_streamed_reply_with_reasoning_cl3_cl4_req1_str7(bench):
    pieces = []
    res = client.chat("ok", "Review this.", system="Be brief.", on_delta=lambda kind, p: pieces.append((kind, p)))
    assert res["text"] == "The fix is to cap the retry loop."
    assert res["reasoning"] == "Look at the loop first."
    assert (res["error"], res["timed_out"], res["status"], res["attempts"]) == ("", False, 200, 1)
    assert res["model"] == "ok" and res["finish"] == "stop" and res["tool_calls"] == 0
    assert res["usage"]["completion_tokens"] > 0
    assert isinstance(res["first_token_s"], float) and isinstance(res["seconds"], float)
    # STR-10/11: reasoning pieces came first, apart from the text, and join back exactly.
    assert "".join(p for k, p in pieces if k == "reasoning") == res["reasoning"]
    assert "".join(p for k, p in pieces if k == "text") == res["text"]
    assert pieces[0][0] == "reasoning" and pieces[-1][0] == "text"
    sent = chats(bench)[-1]
    assert sent["body"] == {"model": "ok", "messages": [{"role": "system", "content": "Be brief."},
                                                        {"role": "user", "content": "Review this."}],
                            "stream": True, "stream_options": {"include_usage": True}}
    assert sent["headers"]["content-type"] == "application/json"
    assert sent["headers"]["user-agent"] == "benchwarmers"
    assert "authorization" not in sent["headers"]  # an empty api_key_name sends no auth (CL-2)


def test_options_and_caller_fields_req1_reg8(bench):
    fileio.write_atomic(paths.file("config", "model-options.json"),
                        fileio.dumps({"ok": {"max_tokens": 64, "temperature": 0.3}, "echo": "not an object"}))
    client.chat("ok", "hi")
    assert chats(bench)[-1]["body"]["max_tokens"] == 64 and chats(bench)[-1]["body"]["temperature"] == 0.3
    body = {"max_completion_tokens": 500, "temperature": 0.9, "tools": [{"type": "function"}],
            "model": "other", "stream": False, "messages": []}
    client.chat("ok", "hi", body=body)
    sent = chats(bench)[-1]["body"]
    assert "max_tokens" not in sent and sent["max_completion_tokens"] == 500
    assert sent["temperature"] == 0.9 and sent["tools"] == [{"type": "function"}]
    assert sent["model"] == "ok" and sent["stream"] is True and sent["messages"][-1]["content"] == "hi"
    client.chat("echo", "hi")
    assert set(chats(bench)[-1]["body"]) == {"model", "messages", "stream", "stream_options"}


def test_messages_are_sent_as_given_cl4(bench):
    messages = [{"role": "user", "content": [{"type": "text", "text": "what is this"},
                                             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    res = client.chat("echo", "ignored", system="ignored too", messages=messages)
    assert json.loads(res["text"]) == messages


def test_empty_answer_is_not_an_error(bench):
    res = client.chat("empty", "hi")
    assert (res["text"], res["error"], res["finish"]) == ("", "", "stop")
    assert ledger_lines()[-1]["status"] == "empty"


def test_budget_retry_doubles_the_budget_bud4(bench):
    fileio.write_atomic(paths.file("config", "model-options.json"), fileio.dumps({"budget": {"max_tokens": 64}}))
    res = client.chat("budget", "hi")
    assert [r["body"]["max_tokens"] for r in chats(bench)] == [64, 128]
    assert res["text"] == "Enough room now." and res["error"] == ""
    assert res["attempts"] == 2 and res["budget_retry"] == {"max_tokens": [64, 128], "answered": True}
    line = ledger_lines()[-1]
    assert line["attempts"] == 2 and line["budget_retry"] == res["budget_retry"] and line["status"] == "ok"


def test_budget_retry_failure_leaves_the_empty_answer_bud3_bud4(bench):
    fileio.write_atomic(paths.file("config", "model-options.json"), fileio.dumps({"capped": {"max_tokens": 64}}))
    res = client.chat("capped", "hi")
    assert [r["body"]["max_tokens"] for r in chats(bench)] == [64, 128]
    assert res["text"] == "" and res["error"] == "" and res["status"] == 200 and res["attempts"] == 2
    assert res["budget_retry"]["max_tokens"] == [64, 128] and res["budget_retry"]["answered"] is False
    assert "too large" in res["budget_retry"]["failed"]
    assert client.output(res, 420) == ""  # classified empty downstream
    assert ledger_lines()[-1]["status"] == "empty"


def test_budget_retry_is_capped_by_the_catalog_bud2(bench):
    fileio.write_atomic(paths.file("config", "model-options.json"), fileio.dumps({"capped": {"max_tokens": 64}}))
    fileio.write_atomic(paths.file("config", "model-overrides.json"), fileio.dumps({"capped": {"max_output": 99}}))
    res = client.chat("capped", "hi")
    assert [r["body"]["max_tokens"] for r in chats(bench)] == [64, 99]
    assert res["budget_retry"] == {"max_tokens": [64, 99], "answered": False}  # sent, still out of budget


def test_no_budget_retry_for_a_proxy_bud1(bench):
    fileio.write_atomic(paths.file("config", "model-options.json"), fileio.dumps({"budget": {"max_tokens": 64}}))
    res = client.chat("budget", "hi", on_chunk=lambda chunk: None)
    assert res["attempts"] == 1 and "budget_retry" not in res and res["finish"] == "length"


def test_credit_notice_is_returned_and_flagged_in_the_ledger_pn1_improvement15(bench):
    res = client.chat("notice", "hi")
    assert res["text"] == NOTICE and res["error"] == ""
    line = ledger_lines()[-1]
    assert line["status"] == "ok" and line["notice"] == "insufficient credits"
    assert notices.notice(res["text"]) == "insufficient credits"
    assert notices.as_error(res["text"]).startswith("provider notice in a success reply (insufficient credits): ")
    assert notices.notice("x" * 380 + " out of credits" + "y" * 10) == ""  # PN-2: too long to be a notice


# ---------------------------------------------------------------- failures (ERR)


def test_404_is_not_retried_err3(bench):
    res = client.chat("gone", "hi")
    assert res["error"] == "Error: Error code: 404 - {'error': {'message': 'Model not found', 'code': 404}}"
    assert res["attempts"] == 1 and res["status"] == 404
    assert ledger_lines()[-1]["status"] == "error"


def test_429_forever_gives_up_after_three_requests_ret1_ret2_ret3(bench):
    started = time.monotonic()
    res = client.chat("rate", "hi")
    assert res["attempts"] == 3 and len(chats(bench)) == 3
    assert res["error"] == ("Error: Error code: 429 - {'error': {'message': 'Rate limit exceeded', "
                            "'type': 'rate_limit_error', 'code': 429}} Retry-After: 0.1")
    assert time.monotonic() - started < 1.5  # Retry-After 0.1 was honoured instead of the backoff


def test_429_once_then_answer(bench):
    res = client.chat("rate-once", "hi")
    assert res["text"] == "finally" and res["error"] == "" and res["attempts"] == 2


def test_html_502_is_retried_and_shown_as_text_ret3(bench):
    res = client.chat("html", "hi", retries=1)
    assert res["error"] == "Error: Error code: 502 - <html><body><h1>502 Bad Gateway</h1></body></html>"
    assert res["attempts"] == 2


def test_too_slow_ends_timed_out_within_the_deadline_cl1(bench):
    started = time.monotonic()
    res = client.chat("slow", "hi", timeout=1)
    elapsed = time.monotonic() - started
    assert res["timed_out"] is True and res["error"] == "" and res["text"] == ""
    assert 0.9 <= elapsed < 1.6 and res["attempts"] == 1
    assert client.output(res, 1) == "<<TIMED OUT after 1s>>"
    assert ledger_lines()[-1]["status"] == "timeout"


def test_first_piece_window_str13(bench):
    started = time.monotonic()
    res = client.chat("slow", "hi", timeout=30, first_token=0.5)
    assert res["timed_out"] and time.monotonic() - started < 1.2 and res["first_token_s"] is None


def test_stop_ends_a_dribbling_stream_cl7(bench):
    timer = threading.Timer(0.6, client.STOP.set)
    timer.start()
    try:
        started = time.monotonic()
        res = client.chat("dribble", "hi")
        assert res["timed_out"] and time.monotonic() - started < 3
    finally:
        timer.cancel()
        client.STOP.clear()


def test_stream_broken_off_is_an_error_str8(bench):
    res = client.chat("drop", "hi")
    assert res["error"].startswith("Error: client failed: the stream broke off before it finished (")
    assert res["text"] == "" and res["attempts"] == 1


def test_error_in_a_200_reply_str9(bench):
    res = client.chat("err200", "hi")
    assert res["error"] == ("Error: Error code: 502 - {'error': {'message': 'upstream provider error', "
                            "'code': 502}}")
    assert res["status"] == 200


def test_refused_connection_is_retried_then_reported_ret4(home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    register({"dead": {"base": f"http://127.0.0.1:{port}/v1"}}, {"m": ("m", "dead")})
    res = client.chat("m", "hi")
    assert res["error"].startswith("Error: client failed: Connection error. (")
    assert "refused" in res["error"].lower()
    assert res["attempts"] == 3 and res["status"] == 0


def test_preflight_failures_send_nothing_cl2(bench):
    res = client.chat("nobody", "hi")
    assert res["error"] == ("Error: client failed: no model is registered as 'nobody' "
                            "(register one with `python -m benchwarmers.scripts.onboard SERVED_NAME`)") and res["attempts"] == 0
    register({"demo": {"base": bench.base_url}, "native": {"base": bench.base_url + "/native", "api": "anthropic"}},
             {"claude": ("claude", "native")})
    res = client.chat("claude", "hi", body={"tools": []})
    assert res["error"] == ("Error: client failed: a request's own fields (tools and the rest) go to chat "
                            "completions only, not the anthropic API")  # REQ-6
    text = registry.path().read_text() + '\n- model_id: local\n  model_name: m\n  api_base: "file:///etc"\n'
    fileio.write_atomic(registry.path(), text)
    res = client.chat("local", "hi")
    assert res["error"] == "Error: client failed: endpoint base must be http(s), not 'file:///etc'"
    assert chats(bench) == []
    lines = ledger_lines()
    assert [(l["alias"], l["status"], l["attempts"], l["connection"]) for l in lines] == [
        ("nobody", "error", 0, ""), ("claude", "error", 0, ""), ("local", "error", 0, "")]


def test_missing_key_sends_nothing_err(bench):
    register({"demo": {"base": bench.base_url, "key": "demo-key"}}, {"k": ("ok", "demo")})
    res = client.chat("k", "hi")
    assert res["error"] == "Error: client failed: no key named 'demo-key' is set (llm keys set demo-key)"
    assert res["attempts"] == 0 and chats(bench) == []
    assert ledger_lines()[-1]["connection"] == ""


def test_key_from_keys_json_and_from_the_environment_key2_key3_ep7(keyed, monkeypatch, capfd):
    keyed.clear()
    register({"locked": {"base": keyed.base_url, "key": "my-hub"}}, {"k": ("ok", "locked")})
    keys.set_key("my-hub", SECRET)
    assert client.chat("k", "hi")["text"] == "keyed answer"
    assert keyed.requests[-1]["headers"]["authorization"] == f"Bearer {SECRET}"
    keys.delete_key("my-hub")
    assert "no key named 'my-hub'" in client.chat("k", "hi")["error"]
    monkeypatch.setenv("BENCHWARMERS_KEY_MY_HUB", SECRET)
    assert client.chat("k", "hi")["text"] == "keyed answer"
    monkeypatch.setenv("BENCHWARMERS_KEY_MY_HUB", "wrong")
    res = client.chat("k", "hi")
    assert res["error"].startswith("Error: Error code: 401") and res["attempts"] == 1
    assert_secret_nowhere(capfd)


def assert_secret_nowhere(capfd):
    """KEY-7: the secret is in no file under the data folder, and in nothing printed."""
    for path in paths.data().rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
    out, err = capfd.readouterr()
    assert SECRET not in out and SECRET not in err


def test_an_echoed_key_is_taken_out_of_the_error_key7(home, scripted, capfd):
    server = scripted(lambda h, body: h.send(401, {"error": f"Incorrect API key: {h.headers['Authorization']}"}))
    register({"s": {"base": server.base_url, "key": "k"}}, {"m": ("m", "s")})
    keys.set_key("k", SECRET)
    res = client.chat("m", "hi")
    assert res["error"] == "Error: Error code: 401 - {'error': 'Incorrect API key: Bearer ***'}"
    assert_secret_nowhere(capfd)


def test_a_body_that_is_not_json_is_refused_before_sending(bench):
    res = client.chat("ok", "hi", body={"when": object()})
    assert res["error"].startswith("Error: client failed: the request cannot be sent as JSON: ")
    assert res["attempts"] == 0 and chats(bench) == []


def test_redirects_are_never_followed_str1(home, scripted):
    target = scripted(lambda h, body: h.send(200, completion("stolen")))
    moved = scripted(lambda h, body: h.send(302, b"", "text/plain", [("Location", target.base_url + "/chat/completions")]))
    register({"moved": {"base": moved.base_url, "key": "k"}}, {"m": ("m", "moved")})
    keys.set_key("k", SECRET)
    res = client.chat("m", "hi")
    assert res["error"] == f"Error: Error code: 302 (redirect to {target.base_url}/chat/completions not followed)"
    assert res["attempts"] == 1 and target.hits == []


def test_a_trickling_body_cannot_outlast_the_deadline_str2(home, scripted):
    def trickle(h, body):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "1000")
        h.end_headers()
        while not moved_on.is_set():
            h.wfile.write(b" ")
            h.wfile.flush()
            moved_on.wait(0.25)

    moved_on = threading.Event()
    server = scripted(trickle)
    register({"t": {"base": server.base_url}}, {"m": ("m", "t")})
    started = time.monotonic()
    res = client.chat("m", "hi", timeout=1.5)
    moved_on.set()
    assert res["timed_out"] and time.monotonic() - started < 2.5


def test_over_32_mb_str3(home, scripted):
    blob = b'{"pad": "' + b"x" * 32_000_001 + b'"}'
    server = scripted(lambda h, body: h.send(200, blob))
    register({"big": {"base": server.base_url}}, {"m": ("m", "big")})
    res = client.chat("m", "hi")
    assert res["error"] == "Error: client failed: the reply is over 32 MB"


def test_stream_refusal_falls_back_ret5_str12_improvement14(home, scripted):
    def no_stream(h, body):
        if body.get("stream"):
            return h.send(400, {"error": {"message": "Streaming is not supported for this model"}})
        h.send(200, completion("plain answer", model="m", reasoning_content="because"))

    server = scripted(no_stream)
    register({"s": {"base": server.base_url}}, {"m": ("m", "s")})
    pieces, chunks = [], []
    res = client.chat("m", "hi", on_delta=lambda k, p: pieces.append((k, p)), on_chunk=chunks.append, retries=0)
    assert res["text"] == "plain answer" and res["reasoning"] == "because" and res["attempts"] == 2
    assert "stream" not in server.hits[1]["body"] and "stream_options" not in server.hits[1]["body"]
    assert pieces == [("reasoning", "because"), ("text", "plain answer")]
    assert chunks == [{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                       "usage": {"prompt_tokens": 3, "completion_tokens": 2},
                       "choices": [{"index": 0, "delta": {"role": "assistant", "content": "plain answer",
                                                          "reasoning_content": "because"},
                                    "finish_reason": "stop"}]}]


def test_stream_options_refusal_drops_only_stream_options_ret5(home, scripted):
    def picky(h, body):
        if "stream_options" in body:
            return h.send(422, {"detail": "Unknown field stream_options"})
        data = b"data: " + json.dumps({"model": "m", "choices": [{"delta": {"content": "sse"},
                                                                  "finish_reason": "stop"}]}).encode()
        h.send(200, data + b"\n\ndata: [DONE]\n\n", "text/event-stream")

    server = scripted(picky)
    register({"s": {"base": server.base_url}}, {"m": ("m", "s")})
    res = client.chat("m", "hi")
    assert res["text"] == "sse" and res["attempts"] == 2 and server.hits[1]["body"]["stream"] is True


def test_swap_is_noted_not_failed_swap1_swap2(home, scripted, capfd):
    served = {"model": "other-vendor/another-model"}
    server = scripted(lambda h, body: h.send(200, completion("hi", model=served["model"])))
    register({"s": {"base": server.base_url}}, {"m": ("vendor/claude-x", "s")})
    res = client.chat("m", "hi")
    assert res["error"] == "" and res["model"] == "other-vendor/another-model"
    assert ledger_lines()[-1]["swap"] is True
    assert "note: m asked for vendor/claude-x and was served other-vendor/another-model" in capfd.readouterr().err
    learned = fileio.read_json(paths.file("config", "model-learned.json"))
    assert learned["m"]["served_as"]["served"] == "other-vendor/another-model"
    client.chat("m", "hi")
    assert "note:" not in capfd.readouterr().err  # already known: said once
    served["model"] = "claude-x-20261001:free"
    client.chat("m", "hi")
    assert "swap" not in ledger_lines()[-1]


def test_on_chunk_hears_every_chunk_but_done_str12(bench):
    chunks = []
    res = client.chat("ok", "hi", on_chunk=chunks.append)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == res["usage"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == res["text"]


def test_raising_callbacks_are_dropped_str11(bench):
    calls = []

    def bad(kind, piece):
        calls.append(piece)
        raise RuntimeError("listener bug")

    res = client.chat("ok", "hi", on_delta=bad, on_chunk=lambda c: 1 / 0)
    assert res["text"] == "The fix is to cap the retry loop." and len(calls) == 1


def test_preflight_hooks_and_observers(bench):
    """The slot for the free-tier guard and pacing: a refusal is ledgered `refused`; releases follow the line."""
    released, seen = [], []

    def refuse(call):
        raise client.Stop("Error: client failed: not sent: held for a test", refused=True)

    def reserve(call):
        call.releases.append(lambda: released.append(len(ledger_lines())))

    client.PREFLIGHT.append(refuse)
    try:
        res = client.chat("ok", "hi")
    finally:
        client.PREFLIGHT.remove(refuse)
    assert res["error"].endswith("held for a test") and chats(bench) == []
    assert ledger_lines()[-1]["status"] == "refused" and ledger_lines()[-1]["connection"] == "demo"
    def observe(*args):
        seen.append(args)

    client.PREFLIGHT.append(reserve)
    client.OBSERVERS.append(observe)
    try:
        client.chat("ok", "hi")
        client.chat("rate-once", "hi")
    finally:
        client.PREFLIGHT.remove(reserve)
        client.OBSERVERS.remove(observe)  # the quota observer stays for every later test
    assert released == [2, 3]  # each release ran after its own ledger line
    statuses = [(a[0], a[1], a[3], a[5]) for a in seen]
    assert statuses[0] == ("ok", "demo", 200, None)
    assert statuses[1][2] == 429 and statuses[1][3]["error"]["code"] == 429
    assert seen[1][4]["Retry-After"] == "0.1"


# ---------------------------------------------------------------- connections


def count_accepts(server):
    accepted = []
    original = server.process_request

    def counting(request, address):
        accepted.append(address)
        original(request, address)

    server.process_request = counting
    return accepted


def test_connections_are_kept_alive_and_shared(bench):
    transport.POOL.clear()
    accepted = count_accepts(bench.server)
    try:
        for _ in range(10):
            assert client.chat("ok", "hi")["error"] == ""
        assert len(accepted) == 1
        threads = [threading.Thread(target=client.chat, args=("ok", "hi")) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(accepted) <= 6 and len(chats(bench)) == 16
        client.chat("drop", "hi")  # closed by the server: never pooled
        before = len(accepted)
        bench.server.close_connections()  # the server hangs up on every idle connection
        assert client.chat("ok", "hi")["attempts"] == 1
        assert len(accepted) == before + 1
    finally:
        del bench.server.process_request


def test_a_pooled_connection_dropped_on_send_is_retried_once_unseen(home, scripted):
    """The server hangs up on the second request of a kept-alive connection without answering."""

    def once_per_connection(h, body):
        h.served = getattr(h, "served", 0) + 1
        if h.served > 1:
            h.close_connection = True
            return
        h.send(200, completion("fresh"))

    server = scripted(once_per_connection)
    register({"s": {"base": server.base_url}}, {"m": ("m", "s")})
    assert client.chat("m", "hi")["text"] == "fresh"
    res = client.chat("m", "hi")
    assert res["text"] == "fresh" and res["attempts"] == 1 and res["error"] == ""
    assert len(server.hits) == 3


# ---------------------------------------------------------------- reading bodies


class Handed:
    """Stands in for the OS socket under a Body: each read hands over the next scripted piece, then nothing."""

    def __init__(self, pieces):
        self.pieces = list(pieces)
        self.timeouts = []

    def recv(self, size):
        buffer = bytearray(size)
        return bytes(buffer[:self.recv_into(buffer, size)])

    def recv_into(self, buffer, size):
        piece = self.pieces.pop(0) if self.pieces else b""
        if len(piece) > size:
            self.pieces.insert(0, piece[size:])
            piece = piece[:size]
        buffer[:len(piece)] = piece
        return len(piece)

    def gettimeout(self):
        return self.timeouts[-1] if self.timeouts else 5.0

    def settimeout(self, value):
        self.timeouts.append(value)


def body_of(pieces, head=b"Transfer-Encoding: chunked", timeout=5):
    """A Body over a real HTTPResponse whose first read finds `pieces[0]` buffered with the headers."""
    near, far = socket.socketpair()
    far.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + head + b"\r\n\r\n" + pieces[0])
    far.close()
    resp = http.client.HTTPResponse(near)
    resp.begin()
    near.close()
    return transport.Body(client.Call(timeout=timeout), resp, Handed(pieces[1:]))


STREAM = ["data: {\"a\": 1}\r\n\r\n",
          ": a comment\nevent: delta\nid: 7\ndata: {\"b\": \"\u00e9\u20ac\"}\n\n",
          "data:{\"c\": [1,\ndata: 2]}\n\n",
          "data: {\"d\": 4}\ndata: {\"e\": 5}\n\n",
          "data: \n\n",
          "data: [DONE]\n\n"]
EVENTS = [{"a": 1}, {"b": "\u00e9\u20ac"}, {"c": [1, 2]}, {"d": 4}, {"e": 5}, client.DONE]


def chunked(texts, extension=b";name=value", trailer=b"X-Trailer: t\r\n"):
    out = b""
    for i, text in enumerate(texts):
        data = text.encode()
        out += b"%x%s\r\n%s\r\n" % (len(data), extension if i == 1 else b"", data)
    return out + b"0\r\n" + trailer + b"\r\n"


def test_chunked_framing_and_events_split_anywhere_str6(home):
    """STR-2, STR-6: chunk extensions, trailers, CRLF and LF lines, comments, multi-line data, a character
    split across reads, events split across chunks: the same events wherever the reads fall."""
    wire = chunked(["".join(STREAM[:2]) + STREAM[2][:9], STREAM[2][9:], *STREAM[3:]])
    body = body_of([wire[i:i + 1] for i in range(len(wire))])
    assert list(client.sse(body)) == EVENTS and body.complete
    for cut in range(1, len(wire) + 1):
        body = body_of([wire[:cut], wire[cut:]])
        assert list(client.sse(body)) == EVENTS and body.complete, cut
    body = body_of([wire])
    assert list(client.sse(body)) == EVENTS and body.complete and body.sock.timeouts == []


def test_a_body_cut_short_or_misframed_breaks_off_str4(home):
    wire = chunked(STREAM)
    last = wire.index(b"0\r\nX-Trailer")
    for cut in (5, len(wire) // 2, last - 1, last + 1):
        body = body_of([wire[:cut]])
        with pytest.raises(http.client.IncompleteRead):
            list(body)
        assert not body.complete
    body = body_of([wire[:last + 5]])  # closed within the trailers, as http.client allows
    assert list(client.sse(body)) == EVENTS and body.complete
    with pytest.raises(http.client.IncompleteRead):
        list(body_of([b"zz\r\ndata\r\n"]))
    sized = body_of([b"0123", b"456"], head=b"Content-Length: 10")
    with pytest.raises(http.client.IncompleteRead):
        list(sized)
    whole = body_of([b"0123", b"456789"], head=b"Content-Length: 10")
    assert whole.read() == b"0123456789" and whole.complete


def test_what_http_client_buffered_comes_first_then_large_reads_str2(home):
    """The bytes read along with the headers are not lost; a large body moves on to READ_SIZE reads."""
    blob = bytes(range(256)) * 400
    body = body_of([blob[:7000], blob[7000:]], head=b"Content-Length: %d" % len(blob))
    got = list(body)
    assert b"".join(got) == blob and body.complete and max(map(len, got)) == transport.READ_SIZE


def test_the_socket_timeout_is_set_again_only_as_the_deadline_nears_str2(home):
    """STR-2: not a system call per read; set to the time left once that is TIMEOUT_STEP below it."""
    wire = chunked(STREAM * 40)
    pieces = [wire[i:i + 40] for i in range(0, len(wire), 40)]
    body = body_of(pieces, timeout=5)  # the socket's 5 s is the time left
    assert len(list(client.sse(body))) == len(EVENTS) * 40 and body.sock.timeouts == []
    body = body_of(pieces, timeout=0.5)  # 4.5 s too long: cut to the time left
    assert len(list(client.sse(body))) == len(EVENTS) * 40
    assert body.sock.timeouts[0] <= 0.5 and len(body.sock.timeouts) < len(pieces) / 10


def test_a_gap_longer_than_the_first_piece_window_after_the_first_piece_str13(home, scripted):
    """STR-13: once a first piece came, the first-piece window no longer bounds reads: a pause past it is fine."""
    def paused(h, body):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        first = b'data: {"choices": [{"delta": {"content": "one "}}]}\n\n'
        h.wfile.write(b"%x\r\n%s\r\n" % (len(first), first))
        time.sleep(0.25)  # the gap is the scenario: no event can stand in for it
        rest = b'data: {"choices": [{"delta": {"content": "two"}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
        h.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))

    server = scripted(paused)
    register({"p": {"base": server.base_url}}, {"m": ("m", "p")})
    res = client.chat("m", "hi", timeout=5, first_token=0.1)
    assert (res["text"], res["error"], res["timed_out"]) == ("one two", "", False)


def test_a_chunked_stream_closed_mid_event_broke_off_str4(home, scripted):
    def cut(h, body):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        half = b'data: {"choices": [{"delta": {"content": "hal'
        h.wfile.write(b"%x\r\n%s" % (len(half) + 40, half))
        h.close_connection = True

    server = scripted(cut)
    register({"c": {"base": server.base_url}}, {"m": ("m", "c")})
    res = client.chat("m", "hi")
    assert res["error"].startswith("Error: client failed: the reply broke off part way (") and res["attempts"] == 1


# ---------------------------------------------------------------- ledger and output


def test_ledger_line_fields_and_order_led1_led2_led7(bench, monkeypatch):
    monkeypatch.setenv("BENCH_PURPOSE", "suite")
    res = client.chat("ok", "a prompt nobody may log", system="a system nobody may log")
    files = list((paths.data() / "metrics" / "usage").glob("*.jsonl"))
    assert [f.name for f in files] == [time.strftime("%Y-%m", time.gmtime()) + ".jsonl"]
    raw = files[0].read_text(encoding="utf-8")
    assert ", " not in raw and ": " not in raw  # compact separators
    line = json.loads(raw)
    assert list(line) == ["t", "at", "alias", "connection", "endpoint", "served", "status", "attempts",
                          "tokens_in", "tokens_out", "reasoning", "seconds", "caller", "purpose"]
    assert line["alias"] == "ok" and line["connection"] == "demo" and line["endpoint"] == "demo"
    assert line["served"] == "ok" and line["status"] == "ok" and line["attempts"] == 1
    assert line["tokens_out"] == res["usage"]["completion_tokens"] and line["reasoning"] >= 1
    assert line["purpose"] == "suite" and line["seconds"] == res["seconds"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", line["at"])
    assert abs(line["t"] - time.time()) < 5
    for secret in ("a prompt nobody may log", "a system nobody may log", res["text"], res["reasoning"]):
        assert secret not in raw
    client.chat("ok", "hi", purpose="gateway")
    assert ledger_lines()[-1]["purpose"] == "gateway"
    rows = list(ledger.rows(time.time() - 60))
    assert len(rows) == 2 and ledger.totals(time.time() - 60) == {"demo": [2, sum(
        r["tokens_in"] + r["tokens_out"] for r in rows)]}
    assert "demo" in ledger.summary()


LEDGER_WRITER = """
import sys
from benchwarmers.calling import ledger
for i in range(50):
    assert ledger.write(ledger.line(float(sys.argv[1]), "p", "c", "e", "m", "ok", 1, {}, 0.1, "load test"))
"""


def test_ledger_lines_stay_whole_across_threads_and_processes_led5(home):
    """LED-5: 4 threads and 2 processes × 50 lines, each under usage.lock, none torn or lost."""
    t = time.time()
    procs = [subprocess.Popen([sys.executable, "-c", LEDGER_WRITER, str(t)], cwd=ROOT) for _ in range(2)]
    threads = [threading.Thread(target=lambda: [ledger.write(ledger.line(t, "t", "c", "e", "m", "ok", 1, {}, 0.1,
                                                                         "x" * 2000)) for _ in range(50)])
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [p.wait() for p in procs] == [0, 0]
    lines = ledger_lines()
    assert len(lines) == 300 and sum(line["alias"] == "t" for line in lines) == 200
    assert (ledger.folder() / "usage.lock").exists()


def test_ledger_reopens_a_deleted_file_and_a_forked_child_writes_its_own_led5(home):
    def write(alias):
        return ledger.write(ledger.line(time.time(), alias, "c", "e", "m", "ok", 1, {}, 0.1, ""))

    assert write("first")
    shutil.rmtree(ledger.folder())  # a kept descriptor would now write into a deleted file
    assert write("second") and [line["alias"] for line in ledger_lines()] == ["second"]
    child = os.fork()
    if child == 0:
        os._exit(0 if write("child") else 1)
    assert os.waitpid(child, 0)[1] == 0 and write("parent")
    assert [line["alias"] for line in ledger_lines()] == ["second", "child", "parent"]


def test_ledger_months_are_utc_led6():
    t = 1798761599.5  # 2026-12-31T23:59:59.5Z
    assert ledger.month_file(t).name == "2026-12.jsonl" and ledger.month_file(t + 1).name == "2027-01.jsonl"
    assert ledger.month_start(t) == 1796083200 and ledger.next_month(t) == 1798761600
    assert ledger.summary().startswith("no calls in the ledger this month (")


def test_output_cl9():
    base = {"text": "", "error": "", "timed_out": False}
    assert client.output({**base, "timed_out": True}, 120) == "<<TIMED OUT after 120s>>"
    assert client.output({**base, "timed_out": True}, 1.5) == "<<TIMED OUT after 1.5s>>"
    assert client.output({**base, "error": "Error: x"}, 120) == "Error: x"
    assert client.output({**base, "text": "hi"}, 120) == "hi\n"
    assert client.output(base, 120) == ""


def test_backend_choice_bk2_bk3_improvement3(bench, monkeypatch, capfd):
    assert client.chosen() == ("builtin", "default")
    fileio.write_atomic(paths.file("config", "client.json"), fileio.dumps({"client": "llm"}))
    assert client.chosen() == ("llm", "settings") and client.backend("ok") == "llm"
    monkeypatch.setenv("BENCH_CLIENT", " Builtin ")
    assert client.chosen() == ("builtin", "environment")
    monkeypatch.setenv("BENCH_CLIENT", "curl")
    assert client.chosen() == ("llm", "settings")
    assert "BENCH_CLIENT='curl' is not a backend" in capfd.readouterr().err
    monkeypatch.delenv("BENCH_CLIENT")
    register({"demo": {"base": bench.base_url}, "gpt": {"base": "https://chatgpt.example/v1", "api": "responses"},
              "renews": {"base": "https://renews.example/v1", "connect": {"refreshes": True}}},
             {"r": ("r", "gpt"), "s": ("s", "renews")})
    assert client.backend("r") == "builtin" and client.backend("s") == "builtin" and client.backend("ok") == "llm"


def test_secret_is_never_written_or_printed_key7(bench, capfd, monkeypatch):
    register({"demo": {"base": bench.base_url, "key": "demo-key"}},
             {f"k-{m}": (m, "demo") for m in ("ok", "gone", "rate", "drop", "capped", "notice")},
             options={"k-capped": {"max_tokens": 64}})
    monkeypatch.setenv("BENCHWARMERS_KEY_DEMO_KEY", SECRET)
    for alias in ("k-ok", "k-gone", "k-rate", "k-drop", "k-capped", "k-notice"):
        client.chat(alias, "hi")
    assert bench.requests[-1]["headers"]["authorization"] == f"Bearer {SECRET}"
    assert len(ledger_lines()) == 6
    assert_secret_nowhere(capfd)


# ---------------------------------------------------------------- command line


def run_cli(*args, env=None):
    return subprocess.run([*paths.module_command("calling.client"), *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, cwd=ROOT, timeout=60)


def test_command_line_cl8(bench):
    done = run_cli("ok", "hi")
    assert done.returncode == 0 and done.stdout == "The fix is to cap the retry loop.\n"
    done = run_cli("gone", "hi")
    assert done.returncode == 1 and done.stdout.startswith("Error: Error code: 404")
    done = run_cli("just-one-argument")
    assert done.returncode == 2 and done.stdout.startswith("usage: python -m benchwarmers.calling.client ALIAS")
    assert ledger_lines()[-1]["caller"] == "metrics/client"


def test_bk4_saving_the_backend_choice(home, monkeypatch):
    assert client.choose("curl") == "client: one of llm, builtin"
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    assert "BENCH_CLIENT is set" in client.choose("llm")
    monkeypatch.delenv("BENCH_CLIENT")
    assert client.choose("llm") == ""  # the test extra installs llm, so it is on PATH
    assert client.chosen() == ("llm", "settings")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "not on PATH" in client.choose("llm")
    assert client.choose("builtin") == "" and client.chosen() == ("builtin", "settings")


def test_sse_reads_the_same_however_the_body_is_cut():
    """Issue 35: whole buffers are cut at their blank lines and one-line `data: {...}` events parsed in place; every
    other event, and every buffer with a CR, goes line by line. Either way the values are those of the events,
    whether the body comes whole, a byte at a time or in uneven pieces."""
    stream = (b'data: {"a": 1}\n\ndata:{"b": 2}\n\ndata:  {"c": 3} \n\ndata: {"d": 4} x\n\n'
              b'data: {"e": "\xff"}\n\n: ping\n\ndata: {"f": 6}\r\n\r\n\n\ndata: {"g": 7}\n\n\n'
              b'data: {"h":\ndata: 8}\n\ndata: [DONE]\n\n')
    expected = [{"a": 1}, {"b": 2}, {"c": 3}, ("unreadable", '{"d": 4} x'), {"e": "\ufffd"}, {"f": 6}, {"g": 7},
                {"h": 8}, client.DONE]

    def read(pieces):
        return [("unreadable", e.raw.decode("utf-8", "replace")) if isinstance(e, client.Unreadable) else e
                for e in client.sse(pieces)]

    assert read([stream]) == expected
    assert read([stream[i:i + 1] for i in range(len(stream))]) == expected
    for size in (2, 5, 7, 16):
        assert read([stream[i:i + size] for i in range(0, len(stream), size)]) == expected, size


def test_reply_parsers_read_what_providers_send():
    """STR-6..8, RET-2: SSE split anywhere, comments and multi-line data, a garbled chunk; the chat stream's
    text, reasoning and usage; a stream or a reply that breaks off, sends no choices or an error; Retry-After."""
    split = "é".encode()
    events = list(client.sse([b'data: {"a": 1}\r\n\r\n', b'data: {"b": "' + split[:1], split[1:] + b'"}\n\n',
                              b'event: x\n: comment\ndata: {"c": 3}\ndata: {"d": 4}\n\n', b"data: [DONE]\n\n"]))
    assert events == [{"a": 1}, {"b": "é"}, {"c": 3}, {"d": 4}, client.DONE], events
    garbled = list(client.sse([b"data: \n\ndata: LOST {\n\n"]))
    assert len(garbled) == 1 and garbled[0].raw == b"LOST {", garbled
    call = client.Call()
    stream = [{"model": "m", "choices": [{"delta": {"reasoning_content": "hm"}}]},
              {"choices": [{"delta": {"content": [{"type": "text", "text": "hi"}]}, "finish_reason": "stop"}]},
              {"choices": [], "usage": {"completion_tokens": 2}}, client.DONE]
    got = client._chat_stream(call, iter(stream))
    assert (got["text"], got["reasoning"], got["finish"], got["usage"]) == ("hi", "hm", "stop", {"completion_tokens": 2})
    assert "broke off before it finished (2 characters in)" in client._chat_stream(call, iter(stream[:1] + [
        {"choices": [{"delta": {"content": "hi"}}]}]))["error"]
    assert client._chat_stream(call, iter([{"choices": []}, client.DONE]))["error"].endswith("the stream sent none")
    cut = client._chat_stream(call, iter(stream[1:2] + garbled))["error"]
    assert "a chunk that is not JSON: 'LOST {' (after 2 characters" in cut, cut
    assert client._chat_stream(call, iter([{"error": {"code": 429}}]))["error"].startswith("Error: Error code: 429 - {")
    assert client._chat_json(call, b"{}")["error"] == "Error: client failed: the reply had no choices: {}"
    assert client._chat_json(call, b"<html>")["error"] == "Error: client failed: the reply was not JSON: <html>"
    assert client._chat_json(call, b'{"error": {"message": "x"}}')["error"].startswith(
        "Error: Error code: 200 - {'error'")
    tools = b'{"choices": [{"message": {"content": "ok", "tool_calls": [{}, 1]}}]}'
    assert client._chat_json(call, tools)["tool_calls"] == 1
    assert client.retry_after({"Retry-After": "2"}) == 2 and client.retry_after({"retry-after-ms": "1500"}) == 1.5
    assert client.retry_after({"Retry-After": "120"}) is None and client.retry_after({}) is None
    assert 0.375 <= client.backoff(0) <= 0.5 and client.backoff(9) <= 8


def test_a_changed_key_is_sent_not_the_head_prepared_for_the_last_call(home, scripted):
    # issue 35: a request's head is laid out once per destination and headers, never reused for other headers
    server = scripted(lambda h, body: h.send(200, completion("yes")))
    register({"s": {"base": server.base_url, "key": "k"}}, {"m": ("m", "s")})
    for secret in ("sk-first", "sk-second", "sk-first"):
        keys.set_key("k", secret)
        assert client.chat("m", "hi")["error"] == ""
    assert [hit["headers"]["Authorization"] for hit in server.hits] == [
        "Bearer sk-first", "Bearer sk-second", "Bearer sk-first"]
    assert all(hit["headers"]["Content-Length"] == str(len(json.dumps(hit["body"]))) for hit in server.hits)
