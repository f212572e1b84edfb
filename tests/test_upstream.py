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



# --- scripted tool calls: route mode's agent models (chat completions) -------------------------------

ADD = {"name": "add", "arguments": {"a": 2, "b": 3}}
MULTIPLY = {"name": "multiply", "arguments": {"a": "{result}", "b": 4}}
README = {"name": "read_file", "arguments": {"path": "README.md"}, "id": "call_readme"}
LISTING = {"name": "list_dir", "arguments": {"path": "docs", "depth": 2}}
CITIES = [{"name": "weather", "arguments": {"city": "Paris"}}, {"name": "weather", "arguments": {"city": "Oslo"}}]
AGENTS = {
    "agent": {"tool_calls": [[ADD], [MULTIPLY]], "answer": "No tools needed."},
    "reader": {"tool_calls": [[README, LISTING]], "say": "Let me check.", "latency": 0.1},
    "fanout": {"tool_calls": [CITIES], "parallel": True},
    "late": {"tool_calls": [[README, LISTING]], "late_id": True},
    "fanout-late": {"tool_calls": [CITIES], "parallel": True, "late_id": True},
    "whole": {"tool_calls": [[README]], "whole": True, "answer": "Read it."},
    "agent-429": {"tool_calls": [[ADD]], "fail": "429", "clears_after": 1, "retry_after": 2},
    "agent-drop": {"tool_calls": [[README, LISTING]], "fail": "drop"},
    "agent-stall": {"tool_calls": [[ADD]], "fail": "stall_headers"},
    "ponders": {"reasoning": "Nothing to add here.", "fail": "empty"},
}
MADE = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}  # a call already made
TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} tool",
                                            "parameters": {"type": "object", "properties": {}}}}
         for name in ("add", "multiply", "read_file", "list_dir", "weather")]


@pytest.fixture
def agents():
    with Upstream(AGENTS) as server:
        yield server


def call_deltas(chunks):
    """Every tool-call delta of a stream, in order."""
    return [d for c in chunks if isinstance(c, dict) and c["choices"]
            for d in c["choices"][0]["delta"].get("tool_calls") or []]


def assemble(chunks):
    """The tool calls a stream's deltas build, as a client does: {index: {"id", "name", "arguments"}}."""
    calls = {}
    for delta in call_deltas(chunks):
        call = calls.setdefault(delta["index"], {"id": None, "name": "", "arguments": ""})
        call["id"] = delta.get("id") or call["id"]
        call["name"] += (delta.get("function") or {}).get("name") or ""
        call["arguments"] += (delta.get("function") or {}).get("arguments") or ""
    return calls


def test_tool_calls_plain_reply(agents):
    status, headers, raw = post(agents, ask("reader", "What is in the README?", tools=TOOLS))
    reply = json.loads(raw)
    (choice,) = reply["choices"]
    assert status == 200 and headers["content-type"] == "application/json"
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant" and message["content"] == "Let me check."
    first, second = message["tool_calls"]
    assert (first["id"], first["type"], first["function"]["name"]) == ("call_readme", "function", "read_file")
    assert (second["id"], second["type"], second["function"]["name"]) == ("call_reader_0_1", "function", "list_dir")
    assert json.loads(first["function"]["arguments"]) == {"path": "README.md"}
    assert json.loads(second["function"]["arguments"]) == {"path": "docs", "depth": 2}
    # completion tokens: "Let me check." (3) + '{"path": "README.md"}' (2) + '{"path": "docs", "depth": 2}' (4)
    assert reply["usage"]["completion_tokens"] == 9
    assert reply["usage"]["total_tokens"] == reply["usage"]["prompt_tokens"] + 9


def test_tool_calls_plain_reply_without_say_has_null_content(agents):
    reply = json.loads(post(agents, ask("agent", "Add 2 and 3.", tools=TOOLS))[2])
    message = reply["choices"][0]["message"]
    assert message["content"] is None and reply["choices"][0]["finish_reason"] == "tool_calls"
    (call,) = message["tool_calls"]
    assert call == {"id": "call_agent_0_0", "type": "function",
                    "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})}}
    assert reply["usage"]["completion_tokens"] == 4  # '{"a": 2, "b": 3}' is four words


def test_tool_calls_stream(agents):
    started = time.monotonic()
    status, headers, raw = post(agents, ask("reader", "What is in the README?", tools=TOOLS, stream=True,
                                            stream_options={"include_usage": True}))
    took = time.monotonic() - started
    chunks = events(raw)
    assert status == 200 and headers["content-type"] == "text/event-stream" and took >= 0.09  # latency 0.1
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    # The said text first, then the calls: no content after the first tool-call delta.
    kinds = ["calls" if d.get("tool_calls") else "text" for c in chunks[1:-3] for d in [c["choices"][0]["delta"]]]
    assert kinds == ["text"] * 3 + ["calls"] * 8  # "Let ", "me ", "check."; per call a head and 3 pieces
    assert joined(chunks, "content") == "Let me check."
    assert assemble(chunks) == {
        0: {"id": "call_readme", "name": "read_file", "arguments": json.dumps({"path": "README.md"})},
        1: {"id": "call_reader_0_1", "name": "list_dir", "arguments": json.dumps({"path": "docs", "depth": 2})}}
    head, *pieces = call_deltas(chunks)[:4]
    assert head == {"index": 0, "id": "call_readme", "type": "function",
                    "function": {"name": "read_file", "arguments": ""}}
    assert [set(p) for p in pieces] == [{"index", "function"}] * 3 and all(p["function"]["arguments"] for p in pieces)
    assert [d["index"] for d in call_deltas(chunks)] == [0] * 4 + [1] * 4  # one call after the other
    finish, used, done = chunks[-3:]
    assert finish["choices"] == [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]
    assert used["choices"] == [] and used["usage"]["completion_tokens"] == 9
    assert done == "[DONE]"


def test_tool_calls_stream_without_say_opens_with_null_content(agents):
    chunks = events(post(agents, ask("agent", "Add 2 and 3.", tools=TOOLS, stream=True))[2])
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert joined(chunks, "content") == ""
    assert assemble(chunks) == {0: {"id": "call_agent_0_0", "name": "add", "arguments": json.dumps(ADD["arguments"])}}
    assert len(call_deltas(chunks)) == 4 and chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_tool_steps_chain_results_then_echo_them(agents):
    """The agent loop: step 0 adds, step 1 multiplies the result ("{result}"), then the results are echoed."""
    messages = [{"role": "user", "content": "What is (2 + 3) * 4?"}]
    ran = {"add": lambda a, b: a + b, "multiply": lambda a, b: a * b}
    made = []
    for step in range(3):
        reply = json.loads(post(agents, {"model": "agent", "messages": messages, "tools": TOOLS})[2])
        message = reply["choices"][0]["message"]
        if reply["choices"][0]["finish_reason"] != "tool_calls":
            break
        messages.append(message)
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            made.append((call["id"], call["function"]["name"], arguments))
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": json.dumps(ran[call["function"]["name"]](**arguments))})
    assert step == 2 and made == [("call_agent_0_0", "add", {"a": 2, "b": 3}),
                                  ("call_agent_1_0", "multiply", {"a": 5, "b": 4})]
    assert reply["choices"][0]["finish_reason"] == "stop" and "tool_calls" not in message
    assert message["content"] == "Tool results: 5; 20" == agents.answer_for("agent", messages)


def test_result_that_is_not_json_is_passed_as_text(agents):
    agents.set_model("agent", tool_calls=[[ADD], [{"name": "shout", "arguments": {"say": ["{result}", "!"],
                                                                                   "keep": "{result} "}}]])
    messages = [{"role": "user", "content": "Shout the sum."},
                {"role": "assistant", "content": None, "tool_calls": [MADE]},
                {"role": "tool", "tool_call_id": "c1", "content": "five"}]
    call = json.loads(post(agents, {"model": "agent", "messages": messages, "tools": TOOLS})[2])[
        "choices"][0]["message"]["tool_calls"][0]
    assert call["id"] == "call_agent_1_0" and call["function"]["name"] == "shout"
    assert json.loads(call["function"]["arguments"]) == {"say": ["five", "!"], "keep": "{result} "}


def test_without_tools_a_tool_model_answers_text(agents):
    for tools in ({}, {"tools": []}):
        for stream in (False, True):
            status, _, raw = post(agents, ask("agent", "Hello?", stream=stream, **tools))
            if stream:
                chunks = events(raw)
                assert call_deltas(chunks) == [] and chunks[-2]["choices"][0]["finish_reason"] == "stop"
                assert joined(chunks, "content") == "No tools needed."
            else:
                choice = json.loads(raw)["choices"][0]
                assert choice["finish_reason"] == "stop" and "tool_calls" not in choice["message"]
                assert choice["message"]["content"] == "No tools needed."


def test_only_tool_results_since_the_last_user_message_are_echoed(agents):
    messages = [{"role": "user", "content": "Add."},
                {"role": "assistant", "content": None, "tool_calls": [MADE]},
                {"role": "tool", "tool_call_id": "c1", "content": "5"},
                {"role": "assistant", "content": "It is 5."},
                {"role": "user", "content": "Thanks, anything else?"}]
    reply = json.loads(post(agents, {"model": "agent", "messages": messages})[2])
    assert reply["choices"][0]["message"]["content"] == "No tools needed."
    # With tools, the same conversation is at step 1 (one call made): the multiply, fed the last result.
    reply = json.loads(post(agents, {"model": "agent", "messages": messages, "tools": TOOLS})[2])
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "multiply" and json.loads(call["function"]["arguments"]) == {"a": 5, "b": 4}


def test_parallel_calls_interleave(agents):
    chunks = events(post(agents, ask("fanout", "Weather in Paris and Oslo?", tools=TOOLS, stream=True))[2])
    deltas = call_deltas(chunks)
    assert [d["index"] for d in deltas] == [0, 1] * 4  # both heads, then the pieces in turn
    assert [d["function"].get("name") for d in deltas[:2]] == ["weather", "weather"]
    assert all("name" not in d["function"] and d["function"]["arguments"] for d in deltas[2:])
    assert all(len(c["choices"][0]["delta"]["tool_calls"]) == 1 for c in chunks if call_deltas([c]))
    assert assemble(chunks) == {
        0: {"id": "call_fanout_0_0", "name": "weather", "arguments": json.dumps({"city": "Paris"})},
        1: {"id": "call_fanout_0_1", "name": "weather", "arguments": json.dumps({"city": "Oslo"})}}
    # Plain, the same calls in order.
    message = json.loads(post(agents, ask("fanout", "Weather?", tools=TOOLS))[2])["choices"][0]["message"]
    assert [json.loads(c["function"]["arguments"])["city"] for c in message["tool_calls"]] == ["Paris", "Oslo"]


@pytest.mark.parametrize("model, indices", [("late", [0] * 4 + [1] * 4), ("fanout-late", [0, 1] * 4)])
def test_late_id_comes_with_the_first_arguments_piece(agents, model, indices):
    chunks = events(post(agents, ask(model, "Go.", tools=TOOLS, stream=True))[2])
    deltas = call_deltas(chunks)
    assert [d["index"] for d in deltas] == indices
    calls = assemble(chunks)
    for index, call in calls.items():
        own = [d for d in deltas if d["index"] == index]
        assert "id" not in own[0] and own[0]["function"] == {"name": call["name"], "arguments": ""}
        assert own[1]["id"] == call["id"] and own[1]["function"]["arguments"]
        assert all("id" not in d for d in own[2:])
    assert [c["id"] for c in calls.values()] == (["call_readme", "call_late_0_1"] if model == "late" else
                                                  ["call_fanout-late_0_0", "call_fanout-late_0_1"])
    assert json.loads(calls[1]["arguments"]) == ({"path": "docs", "depth": 2} if model == "late" else {"city": "Oslo"})


def test_whole_answers_json_to_a_stream_request(agents):
    status, headers, raw = post(agents, ask("whole", "Read it.", tools=TOOLS, stream=True))
    reply = json.loads(raw)
    assert status == 200 and headers["content-type"] == "application/json"
    assert reply["object"] == "chat.completion" and reply["choices"][0]["finish_reason"] == "tool_calls"
    (call,) = reply["choices"][0]["message"]["tool_calls"]
    assert (call["id"], call["function"]["name"]) == ("call_readme", "read_file")
    status, headers, raw = post(agents, ask("whole", "Hi.", stream=True))  # no tools: whole text
    assert headers["content-type"] == "application/json"
    assert json.loads(raw)["choices"][0]["message"]["content"] == "Read it."


def test_openai_sdk_reads_tool_calls(agents):
    client = openai.OpenAI(base_url=agents.base_url, api_key="x", max_retries=0)
    reply = client.chat.completions.create(**ask("reader", "README?"), tools=TOOLS)
    assert reply.choices[0].finish_reason == "tool_calls" and reply.choices[0].message.content == "Let me check."
    calls = reply.choices[0].message.tool_calls
    assert [(c.id, c.type, c.function.name) for c in calls] == [("call_readme", "function", "read_file"),
                                                                ("call_reader_0_1", "function", "list_dir")]
    assert [json.loads(c.function.arguments) for c in calls] == [README["arguments"], LISTING["arguments"]]
    assert reply.usage.completion_tokens == 9


@pytest.mark.parametrize("model", ["reader", "fanout", "late", "fanout-late"])
def test_openai_sdk_streams_tool_calls(agents, model):
    """The SDK's own stream accumulator builds the same calls as a plain reply carries."""
    client = openai.OpenAI(base_url=agents.base_url, api_key="x", max_retries=0)
    plain = client.chat.completions.create(**ask(model, "Go."), tools=TOOLS).choices[0].message
    with client.chat.completions.stream(**ask(model, "Go."), tools=TOOLS,
                                        stream_options={"include_usage": True}) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls" and final.usage.completion_tokens > 0
    assert message.content == plain.content
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == \
        [(c.id, c.function.name, json.loads(c.function.arguments)) for c in plain.tool_calls]
    assert len(message.tool_calls) == 2


def test_reasoning_then_an_empty_finish(agents):
    chunks = events(post(agents, ask("ponders", stream=True, stream_options={"include_usage": True}))[2])
    assert joined(chunks, "reasoning_content") == "Nothing to add here." and joined(chunks, "content") == ""
    assert [c["choices"][0]["delta"] for c in chunks[1:5]] == [{"reasoning_content": t}
                                                                for t in ("Nothing ", "to ", "add ", "here.")]
    assert chunks[5]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert chunks[6]["usage"]["completion_tokens"] == 4 and chunks[7:] == ["[DONE]"]
    message = json.loads(post(agents, ask("ponders"))[2])["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "", "reasoning_content": "Nothing to add here."}


def test_tool_model_429_clears_after_one(agents):
    status, headers, raw = post(agents, ask("agent-429", tools=TOOLS))
    assert status == 429 and headers["retry-after"] == "2" and json.loads(raw)["error"]["code"] == 429
    chunks = events(post(agents, ask("agent-429", tools=TOOLS, stream=True))[2])
    assert assemble(chunks) == {0: {"id": "call_agent-429_0_0", "name": "add", "arguments": '{"a": 2, "b": 3}'}}


def test_tool_call_stream_drop_breaks_off_mid_call(agents):
    status, headers, raw = post(agents, ask("agent-drop", tools=TOOLS, stream=True))
    chunks = events(raw)
    assert status == 200 and headers["connection"] == "close" and "[DONE]" not in chunks
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    assert len(call_deltas(chunks)) == 3  # DROP_AFTER deltas: the first call's head and two of its pieces
    (call,) = assemble(chunks).values()
    with pytest.raises(ValueError):
        json.loads(call["arguments"])


def test_tool_model_stall_headers(agents):
    conn = http.client.HTTPConnection("127.0.0.1", agents.port, timeout=0.3)
    conn.request("POST", "/v1/chat/completions", json.dumps(ask("agent-stall", tools=TOOLS, stream=True)))
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    with pytest.raises(TimeoutError):
        resp.read()
    conn.close()


def test_tool_models_are_listed_as_tools_capable(agents):
    rows = {row["id"]: row for row in get(agents)[1]["data"]}
    assert "tools" in rows["agent"]["supported_parameters"] and rows["agent"]["supported_features"] == ["tools"]
    assert "tools" not in rows["ponders"]["supported_parameters"]
    agents.set_model("agent", tool_calls=[[ADD]], tools=False)  # the spec's own word wins
    rows = {row["id"]: row for row in get(agents)[1]["data"]}
    assert "tools" not in rows["agent"]["supported_parameters"] and rows["agent"]["supported_features"] == []


@pytest.mark.parametrize("spec, refusal", [
    ({"tool_calls": [ADD]}, "list of steps"),
    ({"tool_calls": [[]]}, "non-empty list"),
    ({"tool_calls": [[{"name": "add"}]]}, "a tool call is"),
    ({"tool_calls": [[{"name": "add", "arguments": "{}"}]]}, "a tool call is"),
    ({"tool_calls": [[{"name": "", "arguments": {}}]]}, "a tool call is"),
    ({"tool_calls": [[{"name": "add", "arguments": {}, "id": 7}]]}, "a tool call is"),
    ({"tool_calls": [[{"name": "add", "arguments": {}, "kind": "x"}]]}, "a tool call is"),
    ({"tool_calls": [[{"name": "add", "arguments": {"at": object()}}]]}, "not JSON"),
    ({"tool_calls": [[ADD]], "parallel": "yes"}, "parallel is true or false"),
    ({"whole": 1}, "whole is true or false"),
    ({"tool_calls": [[ADD]], "say": 3}, "say is a text"),
    ({"late_id": True}, "late_id needs tool_calls"),
    ({"say": "Let me check."}, "say needs tool_calls"),
])
def test_set_model_refuses_a_bad_tool_script(up, spec, refusal):
    with pytest.raises(ValueError, match=refusal):
        up.set_model("typo", **spec)
    with pytest.raises(ValueError, match=refusal):
        Upstream({"typo": spec})
