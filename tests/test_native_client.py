"""The built-in client on native endpoints (formats.md §12, models.md REQ-2..4, STR-14..16), for real:
the local upstream speaks Anthropic Messages, Gemini and OpenAI Responses on their own roots, and a
member on such an endpoint sits in a panel like any other.
"""

import base64
import json

import openai
import pytest

from benchwarmers.core import fileio, keys, paths
from benchwarmers.models import catalog, endpoints
from benchwarmers.calling import client
from benchwarmers.demo import demo

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 60).decode()


@pytest.fixture
def native(bench, upstream):
    """Three native endpoints on the local upstream, each with a stored key; catalog warmed."""
    upstream.set_model("claude-x", answer="ready", reasoning="hmm", latency=0.02, context_window=200000)
    upstream.set_model("gemini-x", answer="ready", reasoning="let me see", context_window=100000)
    upstream.set_model("gpt-x", answer="ready", reasoning="summary", context_window=100000)
    for endpoint, api, aliases in (("anth", "anthropic", {"claude": "claude-x", "claude-seer": "seer",
                                                          "claude-alpha": "alpha"}),
                                   ("gem", "gemini", {"gem": "gemini-x", "gem-beta": "beta"}),
                                   ("resp", "responses", {"resp": "gpt-x", "resp-gamma": "gamma"})):
        keys.set_key(endpoint, f"sk-{endpoint}")
        demo.register(upstream, endpoint, aliases, default=False, api=api, key=endpoint)
    catalog.warm(refresh=True)
    upstream.clear()
    return upstream


def options(**per_alias):
    fileio.write_atomic(paths.file("config", "model-options.json"), json.dumps(per_alias))


def sent(upstream):
    return [r for r in upstream.requests if r["method"] == "POST"]


def ledger_lines():
    files = sorted((paths.data() / "metrics" / "usage").glob("*.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines()]


def test_test24_anthropic_native_request_stream_usage_and_ledger(native):
    """TEST-24, REQ-2, CL-3, STR-14: body, headers, a stream with a thinking block and a ping, usage, ledger."""
    options(claude={"max_tokens": 700, "temperature": 0.3, "seed": 1})
    heard = []
    res = client.chat("claude", "Say ready.", system="Be brief.", on_delta=lambda kind, piece: heard.append(kind))
    assert (res["error"], res["text"], res["reasoning"], res["finish"], res["model"]) == (
        "", "ready", "hmm", "stop", "claude-x")
    [request] = sent(native)
    assert request["path"] == "/anthropic/v1/messages"
    assert request["body"] == {"model": "claude-x", "max_tokens": 700, "temperature": 0.3, "stream": True,
                               "system": "Be brief.", "messages": [{"role": "user", "content": "Say ready."}]}
    assert request["headers"]["x-api-key"] == "sk-anth" and request["headers"]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request["headers"]
    assert heard[0] == "reasoning" and "text" in heard
    assert set(res["usage"]) == {"input_tokens", "output_tokens"}
    line = ledger_lines()[-1]
    assert (line["alias"], line["status"], line["tokens_in"], line["tokens_out"]) == (
        "claude", "ok", res["usage"]["input_tokens"], res["usage"]["output_tokens"])
    assert "swap" not in line
    image = [{"role": "user", "content": [{"type": "text", "text": "What is it?"},
                                          {"type": "image_url", "image_url": {"url": PNG}}]}]
    assert client.chat("claude", "", messages=image)["error"] == ""
    assert sent(native)[-1]["body"]["messages"][0]["content"][1] == {
        "type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG.split(",", 1)[1]}}


def test_test25_anthropic_native_errors_keep_the_error_text_contract(native):
    """TEST-25, STR-14, REQ-6, REQ-8: 429, an overloaded event mid-stream, a cut stream, fields and tool turns."""
    native.set_model("claude-x", fail="429", retry_after=1)
    res = client.chat("claude", "hi", retries=0)
    assert res["error"].startswith("Error: Error code: 429 - ") and "rate_limit_error" in res["error"]
    native.set_model("claude-x", fail="error200")
    res = client.chat("claude", "hi")
    assert res["error"].startswith("Error: Error code: 529 - {'type': 'error'") and "overloaded_error" in res["error"]
    native.set_model("claude-x", answer="one two three four five six", fail="drop")
    res = client.chat("claude", "hi")
    assert res["error"].startswith("Error: client failed: the stream broke off before it finished (")
    native.clear()
    res = client.chat("claude", "hi", body={"tools": [{"type": "function"}]})
    assert res["error"] == ("Error: client failed: a request's own fields (tools and the rest) go to chat "
                            "completions only, not the anthropic API") and res["attempts"] == 0
    res = client.chat("claude", "", messages=[{"role": "user", "content": "x"},
                                              {"role": "tool", "tool_call_id": "c", "content": "y"}])
    assert res["error"] == ("Error: client failed: tool calls and results are sent to chat completions only, "
                            "not a native API")
    assert sent(native) == []


def test_test26_gemini_native_request_thoughts_usage_and_errors(native):
    """TEST-26, REQ-3, STR-15: path, key header, body, thought parts as reasoning, usage mapping, 429, cuts."""
    res = client.chat("gem", "Say ready.", system="Be brief.")
    assert (res["error"], res["text"], res["reasoning"], res["finish"], res["model"]) == (
        "", "ready", "let me see", "stop", "gemini-x")
    [request] = sent(native)
    assert request["path"] == "/gemini/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    assert request["headers"]["x-goog-api-key"] == "sk-gem" and "authorization" not in request["headers"]
    assert request["body"] == {"contents": [{"role": "user", "parts": [{"text": "Say ready."}]}],
                               "systemInstruction": {"parts": [{"text": "Be brief."}]}}
    usage = res["usage"]
    assert set(usage) == {"prompt_tokens", "completion_tokens", "completion_tokens_details"}
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 3
    line = ledger_lines()[-1]
    assert (line["tokens_in"], line["tokens_out"], line["reasoning"]) == (
        usage["prompt_tokens"], usage["completion_tokens"], 3)
    native.set_model("gemini-x", fail="429")
    res = client.chat("gem", "hi", retries=0)
    assert res["error"].startswith("Error: Error code: 429 - ") and "RESOURCE_EXHAUSTED" in res["error"]
    native.set_model("gemini-x", fail="error200")
    assert client.chat("gem", "hi")["error"].startswith("Error: Error code: 500 - {'error'")
    native.set_model("gemini-x", answer="one two three four five six", fail="drop")
    assert "the stream broke off before it finished" in client.chat("gem", "hi")["error"]


def test_responses_native_request_summaries_and_errors(native):
    """REQ-4, REQ-7, STR-16, models.md improvement 10: prompt only, summaries kept, the final event decides."""
    options(resp={"max_tokens": 5})
    res = client.chat("resp", "Say ready.", system="Be brief.")
    assert (res["error"], res["text"], res["reasoning"], res["finish"]) == ("", "ready", "summary", "stop")
    [request] = sent(native)
    assert request["path"] == "/responses/v1/responses" and request["headers"]["authorization"] == "Bearer sk-resp"
    assert request["body"] == {"model": "gpt-x", "input": [{"role": "user", "content": "Say ready."}],
                               "stream": True, "store": False, "instructions": "Be brief."}
    assert res["usage"]["output_tokens_details"]["reasoning_tokens"] == 1
    native.set_model("gpt-x", fail="error200")
    res = client.chat("resp", "hi")
    assert res["error"].startswith("Error: Error code: server_error - {'code': 'server_error'")
    native.set_model("gpt-x", answer="one two three four five six", fail="drop")
    assert client.chat("resp", "hi")["error"] == "Error: client failed: the stream ended before response.completed"
    res = client.chat("resp", "", messages=[{"role": "user", "content": "x"}])
    assert res["error"] == ("Error: client failed: given messages are sent to chat completions only, "
                            "not the Responses API")


def test_test27_native_listings_and_the_builtin_backend(native, monkeypatch):
    """TEST-27, EP-11: each native endpoint's model list in its own shape; natives always use the built-in client."""
    assert "claude-x" in endpoints.models("anth")
    listed = endpoints.models("gem")
    assert "gemini-x" in listed and "models/gemini-x" not in listed
    gets = [r for r in native.requests if r["method"] == "GET"]
    assert {r["path"] for r in gets} == {"/anthropic/v1/models", "/gemini/v1beta/models?pageSize=1000"}
    by_path = {r["path"]: r["headers"] for r in gets}
    assert by_path["/anthropic/v1/models"]["x-api-key"] == "sk-anth"
    assert by_path["/gemini/v1beta/models?pageSize=1000"]["x-goog-api-key"] == "sk-gem"
    monkeypatch.setenv("BENCH_CLIENT", "llm")
    assert [client.backend(a) for a in ("claude", "gem", "resp", "alpha")] == ["builtin", "builtin", "builtin", "llm"]


def test_a_panel_seats_members_on_every_native_endpoint(native, gateway):
    """Issue 6, part 3: members on Anthropic, Gemini and Responses endpoints sit in a panel like any other."""
    demo.set_collection("mixed", ["claude-alpha", "gem-beta", "resp-gamma", "alpha"], description="every API")
    sdk = openai.OpenAI(base_url=gateway + "/v1", api_key="x", max_retries=0)
    reply = sdk.chat.completions.create(model="bench/mixed", messages=[{"role": "user", "content": "Review this."}])
    seats = reply.model_extra["bench"]["seats"]
    assert [(s["alias"], s["status"]) for s in seats] == [("claude-alpha", "ok"), ("gem-beta", "ok"),
                                                           ("resp-gamma", "ok"), ("alpha", "ok")]
    assert [s["answer"] for s in seats] == [native.answer_for(m, "Review this.")
                                            for m in ("alpha", "beta", "gamma", "alpha")]
    assert sorted(r["path"] for r in sent(native)) == ["/anthropic/v1/messages", "/gemini/v1beta/models/beta:"
                                                       "streamGenerateContent?alt=sse", "/responses/v1/responses",
                                                       "/v1/chat/completions"]


def test_a_native_vision_member_gets_the_image_as_a_base64_block(native, gateway):
    """IMG policy through a native endpoint: the seeing member gets Anthropic's image block; the blind one sits out."""
    demo.set_collection("eyes", ["claude-seer", "claude-alpha"], description="one sees")
    sdk = openai.OpenAI(base_url=gateway + "/v1", api_key="x", max_retries=0)
    reply = sdk.chat.completions.create(model="bench/eyes", messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": PNG}}]}])
    bench_field = reply.model_extra["bench"]
    assert [s["alias"] for s in bench_field["seats"]] == ["claude-seer"]
    assert bench_field["skipped"][0]["alias"] == "claude-alpha"
    [request] = sent(native)
    assert request["path"] == "/anthropic/v1/messages" and request["body"]["model"] == "seer"
    assert request["body"]["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG.split(",", 1)[1]}}]}]
