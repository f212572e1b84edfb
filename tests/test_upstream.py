"""The local OpenAI-compatible upstream (metrics/demo.py) that tests, benchmarks and the demo call.

Everything here talks to a real server on 127.0.0.1 (TST-1, OFF-1, OFF-6): the real `openai` SDK,
raw http.client for the failure modes of OFF-2 / ERR-5, and the real `llm` CLI for the llm backend.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import pytest

from metrics.demo import DEMO_MODELS, NOTICE, Upstream

ROOT = Path(__file__).resolve().parent.parent
PNG = "data:image/png;base64," + "iVBORw0KGgo" * 200

MODELS = {
    "ok": {"answer": "The fix is to cap the retry loop.", "context_window": 8192, "max_output": 1024,
           "tools": True},
    "thinks": {"answer": "Forty two.", "reasoning": "Six times seven.", "vision": True},
    "rate": {"fail": "429", "retry_after": 3},
    "rate-once": {"fail": "429", "clears_after": 1, "answer": "finally"},
    "boom": {"fail": "500"},
    "html": {"fail": "502html"},
    "empty": {"fail": "empty"},
    "budget": {"fail": "length_empty", "reasoning": "Still thinking about it."},
    "slow": {"fail": "slow", "delay": 30},
    "notice": {"fail": "notice"},
    "drop": {"fail": "drop", "answer": "one two three four five six"},
    "gone": {"fail": "404"},
    "err200": {"fail": "error200"},
    "capped": {"answer": "short", "max_tokens_limit": 100},
    "echo": {"echo": True},
    "wordy": {"words": 12},
}


@pytest.fixture
def up():
    with Upstream(MODELS) as server:
        yield server


def ask(model, content="Please review my retry loop.", **extra):
    return {"model": model, "messages": [{"role": "user", "content": content}], **extra}


def post(up, body, headers=None, timeout=5, path="/v1/chat/completions"):
    """POST with http.client; returns (status, headers dict with lower-cased names, raw body)."""
    conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def get(up, path="/v1/models", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def events(raw):
    """SSE data payloads in order: parsed JSON, or the string "[DONE]"."""
    out = []
    for line in raw.decode().split("\n"):
        if line.startswith("data: "):
            data = line[len("data: "):]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def joined(chunks, field):
    return "".join(c["choices"][0]["delta"].get(field) or "" for c in chunks if isinstance(c, dict) and c["choices"])


# --- the real openai SDK -------------------------------------------------------------------------


def test_openai_sdk_plain_reply(up):
    client = openai.OpenAI(base_url=up.base_url, api_key="x")
    reply = client.chat.completions.create(**ask("thinks", "What is six times seven?"))
    assert reply.object == "chat.completion" and reply.id.startswith("chatcmpl-")
    assert reply.model == "thinks"
    assert reply.choices[0].message.content == "Forty two."
    assert reply.choices[0].message.reasoning_content == "Six times seven."
    assert reply.choices[0].finish_reason == "stop"
    # prompt_tokens = len(all message text)//4 + 1; completion = answer + reasoning tokens
    assert reply.usage.prompt_tokens == len("What is six times seven?") // 4 + 1
    assert reply.usage.completion_tokens == 2 + 3
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + 5


def test_openai_sdk_stream(up):
    client = openai.OpenAI(base_url=up.base_url, api_key="x")
    chunks = list(client.chat.completions.create(**ask("thinks"), stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.model == "thinks" for c in chunks)
    with_choices = [c for c in chunks if c.choices]
    assert "".join(c.choices[0].delta.content or "" for c in with_choices) == "Forty two."
    reasoning = "".join(getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in with_choices)
    assert reasoning == "Six times seven."
    assert [c.choices[0].finish_reason for c in with_choices] == [None] * (len(with_choices) - 1) + ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 5


def test_stream_without_include_usage_has_no_usage_chunk(up):
    status, headers, raw = post(up, ask("ok", stream=True))
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert headers["transfer-encoding"] == "chunked"
    chunks = events(raw)
    assert chunks[-1] == "[DONE]" and all(c["choices"] for c in chunks[:-1])
    assert joined(chunks, "content") == "The fix is to cap the retry loop."
    # Token = a word plus its trailing space.
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:4]] == ["The ", "fix ", "is "]


def test_models_listing_has_catalog_facts(up):
    """CAT-7 / CAT-10 field names; a model that answers 404 is not listed."""
    models = {m.id: m for m in openai.OpenAI(base_url=up.base_url, api_key="x").models.list()}
    assert "gone" not in models and {"ok", "thinks", "rate"} <= set(models)
    status, listing = get(up, "/models")
    assert status == 200 and listing["object"] == "list"
    rows = {row["id"]: row for row in listing["data"]}
    ok = rows["ok"]
    assert ok["object"] == "model" and ok["owned_by"] == "benchwarmers-demo" and isinstance(ok["created"], int)
    assert ok["context_length"] == ok["context_window"] == 8192
    assert ok["max_output_tokens"] == 1024
    assert ok["architecture"]["input_modalities"] == ["text"]
    assert "tools" in ok["supported_parameters"]
    assert rows["thinks"]["architecture"]["input_modalities"] == ["text", "image"]
    assert "tools" not in rows["thinks"]["supported_parameters"]
    assert "context_length" not in rows["thinks"]


# --- failure modes over raw HTTP (OFF-2, ERR-5) -------------------------------------------------


@pytest.mark.parametrize("model, status, error", [
    ("boom", 500, {"error": {"message": "Internal server error", "code": 500}}),
    ("gone", 404, {"error": {"message": "Model not found", "code": 404}}),
    ("err200", 200, {"error": {"message": "upstream provider error", "code": 502}}),
    ("nope", 404, {"error": {"message": "Model not found: nope", "code": 404}}),
])
@pytest.mark.parametrize("stream", [False, True])
def test_json_errors(up, model, status, error, stream):
    got, headers, raw = post(up, ask(model, stream=stream))
    assert (got, json.loads(raw)) == (status, error)
    assert headers["content-type"] == "application/json"


def test_429_carries_retry_after_and_never_clears(up):
    for _ in range(3):
        status, headers, raw = post(up, ask("rate"))
        assert status == 429 and headers["retry-after"] == "3"
        assert json.loads(raw) == {"error": {"message": "Rate limit exceeded", "type": "rate_limit_error",
                                             "code": 429}}


def test_429_clears_after(up):
    assert post(up, ask("rate-once"))[0] == 429
    status, _, raw = post(up, ask("rate-once"))
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "finally"
    up.clear()  # counters reset with the record
    assert post(up, ask("rate-once"))[0] == 429
    up.set_model("rate-once", fail="429", clears_after=0, answer="at once")
    assert post(up, ask("rate-once"))[0] == 200


def test_502_html(up):
    status, headers, raw = post(up, ask("html"))
    assert status == 502 and headers["content-type"].startswith("text/html")
    assert raw == b"<html><body><h1>502 Bad Gateway</h1></body></html>"


def test_empty_success(up):
    status, _, raw = post(up, ask("empty"))
    choice = json.loads(raw)["choices"][0]
    assert status == 200 and choice["message"]["content"] == "" and choice["finish_reason"] == "stop"
    chunks = events(post(up, ask("empty", stream=True, stream_options={"include_usage": True}))[2])
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[2]["choices"] == [] and "usage" in chunks[2]
    assert chunks[3:] == ["[DONE]"]
    assert joined(chunks, "content") == ""


def test_length_empty_only_reasons(up):
    status, _, raw = post(up, ask("budget"))
    choice = json.loads(raw)["choices"][0]
    assert status == 200 and choice["finish_reason"] == "length"
    assert not choice["message"]["content"] and choice["message"]["reasoning_content"] == "Still thinking about it."
    chunks = events(post(up, ask("budget", stream=True))[2])
    assert joined(chunks, "content") == "" and joined(chunks, "reasoning_content") == "Still thinking about it."
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"


def test_length_below_answers_with_enough_budget(up):
    """BUD-4 anchor: only reasoning with finish length below 100 tokens; an answer at 128."""
    up.set_model("budget", fail="length_empty", length_below=100, answer="done")
    cut = json.loads(post(up, ask("budget", max_tokens=64))[2])["choices"][0]
    assert cut["finish_reason"] == "length" and not cut["message"]["content"]
    full = json.loads(post(up, ask("budget", max_completion_tokens=128))[2])["choices"][0]
    assert full["finish_reason"] == "stop" and full["message"]["content"] == "done"


def test_max_tokens_limit(up):
    """BUD-4 anchor: 400 "max_tokens is too large" at or above the limit."""
    for field in ("max_tokens", "max_completion_tokens"):
        status, _, raw = post(up, ask("capped", **{field: 100}))
        assert (status, json.loads(raw)) == (400, {"error": {"message": "max_tokens is too large"}})
    assert post(up, ask("capped", max_tokens=99))[0] == 200


def test_credit_notice(up):
    content = json.loads(post(up, ask("notice"))[2])["choices"][0]["message"]["content"]
    assert content == NOTICE and "insufficient credits" in content.lower()
    up.set_model("notice", fail="notice", answer="Please add credits to continue.")
    assert joined(events(post(up, ask("notice", stream=True))[2]), "content") == "Please add credits to continue."


def test_drop_breaks_the_stream_off(up):
    """STR-8: a stream that ends with neither [DONE] nor a finish reason (close-delimited body)."""
    status, headers, raw = post(up, ask("drop", stream=True, stream_options={"include_usage": True}))
    chunks = events(raw)
    assert status == 200 and headers["connection"] == "close"
    assert "[DONE]" not in chunks
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    assert joined(chunks, "content") == "one two three "


def test_drop_cuts_a_plain_body(up):
    """STR-4: a connection drop part way through the body."""
    with pytest.raises(http.client.IncompleteRead):
        post(up, ask("drop"))


def test_slow_does_not_block_others_and_stop_is_prompt():
    with Upstream(MODELS) as up:
        with pytest.raises(TimeoutError):
            post(up, ask("slow"), timeout=0.3)
        outcome = []

        def held():
            try:
                outcome.append(post(up, ask("slow"), timeout=10))
            except OSError as exc:  # stop() hangs up on the waiting reply
                outcome.append(exc)

        holder = threading.Thread(target=held)
        holder.start()
        assert post(up, ask("ok"))[0] == 200
        started = time.monotonic()
    assert time.monotonic() - started < 2  # the 30 s wait is abandoned, not slept out
    holder.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)


# --- auth, recording, echo --------------------------------------------------------------------------


def test_api_key():
    with Upstream(MODELS, key="secret") as up:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            status, _, raw = post(up, ask("ok"), headers)
            assert (status, json.loads(raw)) == (401, {"error": {"message": "Invalid API key", "code": 401}})
        assert get(up)[0] == 401
        assert get(up, headers={"Authorization": "Bearer secret"})[0] == 200
        assert post(up, ask("ok"), {"Authorization": "Bearer secret"})[0] == 200
        assert len(up.requests) == 5  # refused requests are recorded too


def test_requests_are_recorded(up):
    before = time.monotonic()
    post(up, ask("ok", max_tokens=5), {"X-Trace": "t1"})
    get(up, "/models")
    first, second = up.requests
    assert first["method"] == "POST" and first["path"] == "/v1/chat/completions"
    assert first["headers"]["x-trace"] == "t1" and first["headers"]["content-type"] == "application/json"
    assert first["body"] == ask("ok", max_tokens=5) and first["model"] == "ok"
    assert before <= first["at"] <= second["at"] <= time.monotonic()
    assert (second["method"], second["path"], second["body"], second["model"]) == ("GET", "/models", None, None)
    up.clear()
    assert up.requests == []


def test_echo_returns_the_messages_and_logs_nothing(up, capfd):
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                             {"type": "image_url", "image_url": {"url": PNG}}]}]
    body = {"model": "echo", "messages": messages}
    assert json.loads(json.loads(post(up, body)[2])["choices"][0]["message"]["content"]) == messages
    seer = Upstream().answer_for("seer", messages)
    assert "image/png" in seer and "iVBOR" not in seer
    captured = capfd.readouterr()
    assert captured.out == captured.err == ""


def test_chunked_request_body(up):
    conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=5)
    conn.request("POST", "/chat/completions", iter([json.dumps(ask("ok")).encode()]),
                 {"Content-Type": "application/json"}, encode_chunked=True)
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["choices"][0]["message"]["content"].startswith("The fix")
    conn.close()


def test_malformed_framing_is_a_400(up):
    with socket.create_connection(("127.0.0.1", up.port), timeout=5) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")
        reply = sock.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 400 ") and b"Malformed request framing" in reply
    assert up.requests[0]["body"] is None


def test_set_model_refuses_unknown_fail_mode(up):
    with pytest.raises(ValueError, match="unknown fail mode"):
        up.set_model("typo", fail="timeout")


# --- connections, timing, concurrency ---------------------------------------------------------------


def test_keep_alive_reuses_one_connection(up):
    conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=5)
    sockets = set()
    for body in (ask("ok"), ask("ok", stream=True), ask("empty", stream=True), ask("nope"), ask("ok")):
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        conn.getresponse().read()
        sockets.add(conn.sock)
    conn.close()
    assert len(sockets) == 1


def test_stop_hangs_up_idle_keep_alive_connections():
    up = Upstream(MODELS).start()
    conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=5)
    conn.request("GET", "/v1/models")
    conn.getresponse().read()
    up.stop()
    conn.auto_open = 0  # no silent reconnect: the kept-alive socket must be dead
    with pytest.raises((http.client.HTTPException, OSError)):
        conn.request("GET", "/v1/models")
        conn.getresponse()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", up.port), timeout=1)


def test_stream_spreads_latency_over_tokens(up):
    up.set_model("paced", answer="a b c", latency=0.4)  # 3 tokens: one every 0.1 s, finish at 0.4 s
    conn = http.client.HTTPConnection("127.0.0.1", up.port, timeout=5)
    started = time.monotonic()
    conn.request("POST", "/v1/chat/completions", json.dumps(ask("paced", stream=True)))
    resp = conn.getresponse()
    first_text = None
    while line := resp.readline():  # http.client de-chunks; lines arrive as the server flushes them
        if b'"content": "a ' in line and first_text is None:
            first_text = time.monotonic() - started
    total = time.monotonic() - started
    conn.close()
    assert 0.05 < first_text < 0.3 and total >= 0.39


def test_plain_latency(up):
    up.set_model("paced", answer="x", latency=0.2)
    started = time.monotonic()
    assert post(up, ask("paced"))[0] == 200
    assert time.monotonic() - started >= 0.19


def test_hundred_concurrent_streams(up):
    up.set_model("busy", words=20, latency=0.5)
    client = openai.OpenAI(base_url=up.base_url, api_key="x", max_retries=0)
    expected = up.answer_for("busy", "go")
    gate = threading.Barrier(100)
    answers = []

    def one():
        gate.wait()
        stream = client.chat.completions.create(**ask("busy", "go"), stream=True)
        answers.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))

    threads = [threading.Thread(target=one) for _ in range(100)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert answers == [expected] * 100
    assert time.monotonic() - started < 5  # served side by side: one after another would take 50 s
    assert len(up.requests) == 100


# --- demo models ------------------------------------------------------------------------------------


def test_demo_models_are_distinct_and_deterministic():
    up = Upstream()
    assert 4 <= len(up.models) <= 8 and up.models == DEMO_MODELS and up.models is not DEMO_MODELS
    prompts = ["Review my retry loop in fetch()", "Is this SQL query safe?", "Why does the cache grow?"]
    answers = {name: [up.answer_for(name, p) for p in prompts] for name in up.models}
    assert answers == {name: [up.answer_for(name, p) for p in prompts] for name in up.models}
    firsts = [a[0] for a in answers.values()]
    assert len(set(firsts)) == len(firsts)
    assert all('"Review my retry loop in fetch()"' in a for a in firsts)
    assert any(len(set(a)) > 1 for a in answers.values())  # a template choice, not one fixed text


def test_demo_thinker_reasons_and_seer_needs_an_image():
    with Upstream() as up:
        status, _, raw = post(up, ask("thinker", "Should this be idempotent?"))
        message = json.loads(raw)["choices"][0]["message"]
        assert message["reasoning_content"] and message["content"]
        assert "no image" in up.answer_for("seer", "what is this?")


def test_module_cli_serves_demo_models():
    with subprocess.Popen([sys.executable, "-m", "metrics.demo", "--port", "0"], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True) as proc:
        try:
            base = proc.stdout.readline().strip()
            assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
            ids = [m.id for m in openai.OpenAI(base_url=base, api_key="x").models.list()]
            assert ids == list(DEMO_MODELS)
        finally:
            proc.terminate()


# --- the real llm CLI (OFF-1) -----------------------------------------------------------------------


@pytest.mark.parametrize("flags", [[], ["--no-stream"]])
def test_llm_cli_against_the_upstream(tmp_path, flags):
    user = tmp_path / "llm-user"
    user.mkdir()
    with Upstream(key="secret") as up:
        (user / "extra-openai-models.yaml").write_text(
            f'- model_id: demo-terse\n  model_name: terse\n  api_base: "{up.base_url}"\n  api_key_name: demo\n')
        (user / "keys.json").write_text(json.dumps({"demo": "secret"}))
        env = {**os.environ, "LLM_USER_PATH": str(user), "PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1"}
        done = subprocess.run(["llm", "-m", "demo-terse", *flags, "hello"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == up.answer_for("terse", "hello")
        (call,) = up.requests
        assert call["headers"]["authorization"] == "Bearer secret" and call["model"] == "terse"
        assert call["body"]["stream"] is (not flags)

