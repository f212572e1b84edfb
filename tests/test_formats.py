"""Every client's own API (formats.md): the translators both ways, then each real SDK against the gateway.

The first half is pure: readers, writers and the outbound builders, run on their
own and read back by each other (OUT-7). The second half runs the real gateway on
a real upstream and talks to it with the vendors' own SDKs (TST-3): Anthropic,
OpenAI (Responses, legacy completions), Ollama and Google's google-genai.
"""

import base64
import hashlib
import http.client
import json
import time

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from benchwarmers.server import gateway
from benchwarmers import wire
from benchwarmers.core import fileio, images, paths
from benchwarmers.calling import client
from benchwarmers.demo import demo
from benchwarmers.wire import anthropic as fa
from benchwarmers.wire import common, completions, gemini, ollama as fo, responses

PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\0" * 60
PNG_B64 = base64.b64encode(PNG_BYTES).decode()
PNG = "data:image/png;base64," + PNG_B64
WEB_IMAGE = "https://images.example/cat.png"
PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"},
                                 {"type": "image_url", "image_url": {"url": PNG}}]},
    {"role": "assistant", "content": "A cat."},
    {"role": "user", "content": "What colour is it?"},
]


def refused(read, body, *args):
    with pytest.raises(wire.Unsupported) as caught:
        read(body, *args)
    return str(caught.value)


# ---------------------------------------------------------------- paths and shapes


def test_fmt3_format_of_and_fmt4_gemini_model_paths():
    """FMT-3, FMT-4: the format comes from the path alone (query and trailing slash ignored)."""
    table = {"/v1/chat/completions": "chat", "/completions": "completion", "/v1/messages/": "anthropic",
             "/v1/messages/count_tokens": "anthropic", "/responses?x=1": "responses", "/api/chat": "ollama_chat",
             "/api/generate": "ollama_generate", "/api/tags": "ollama_chat", "/api/version": "ollama_chat",
             "/api/show": "ollama_chat", "/v1beta/models": "gemini", "/v1beta/anything": "gemini",
             "/v1/models/bench/core:generateContent": "gemini", "/v1/models": "chat", "/bench/verdict": "chat",
             "/api/tagsx": "chat", "/nowhere": "chat"}
    assert {path: wire.format_of(path) for path in table} == table
    assert gemini.model_path("/v1beta/models/bench/core:merged:streamGenerateContent") == (
        "bench/core:merged", "streamGenerateContent")
    assert gemini.model_path("/v1beta/models/bench%2Fcore:generateContent") == ("bench/core", "generateContent")
    assert gemini.model_path("/v1beta/models") is None and gemini.model_path("/v1beta/models/:x") is None


def test_section2_error_bodies_per_format():
    """§2, ERR-1: one refusal, every shape."""
    assert wire.error_body("chat", 404, "m") == {"error": {"message": "m", "type": "bench_gateway", "code": 404}}
    assert wire.error_body("completion", 400, "m")["error"]["type"] == "bench_gateway"
    assert wire.error_body("anthropic", 413, "m") == {"type": "error", "error": {"type": "request_too_large",
                                                                                   "message": "m"}}
    assert [wire.error_body("anthropic", s, "m")["error"]["type"] for s in (401, 403, 429, 503, 502)] == [
        "authentication_error", "permission_error", "rate_limit_error", "overloaded_error", "api_error"]
    assert wire.error_body("responses", 429, "m") == {"error": {"message": "m", "type": "invalid_request_error",
                                                                  "param": None, "code": "429"}}
    assert wire.error_body("responses", 500, "m")["error"]["type"] == "server_error"
    assert wire.error_body("ollama_generate", 400, "m") == {"error": "m"}
    assert wire.error_body("gemini", 415, "m") == {"error": {"code": 415, "message": "m",
                                                               "status": "INVALID_ARGUMENT"}}
    assert [wire.error_body("gemini", s, "m")["error"]["status"] for s in (401, 403, 404, 429, 503, 500)] == [
        "UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL"]


def test_fmt21_sniff_and_fmt26_numbering():
    """FMT-21 magic bytes; FMT-26 numbered ids, results closing the oldest open call of their name."""
    assert [common.sniff(b) for b in (PNG_B64, "/9j/4AAQ", "R0lGODlh", base64.b64encode(b"RIFF....").decode(),
                                      "Qk0=", "!!!", "")] == [
        "image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/png", "image/png"]
    numbering = common.Numbering()
    assert [numbering.call(None, "get_weather"), numbering.call("given", "x"), numbering.call(None, "get_weather")] \
        == ["call_0", "given", "call_2"]
    assert numbering.result(None, "get_weather") == "call_0"
    assert numbering.result("given", None) == "given"
    assert numbering.result(None, None) == "call_2"
    assert numbering.result(None, "get_weather") == "call_3"


@pytest.mark.parametrize("read", [wire.get("anthropic").read, wire.get("responses").read,
                                  wire.get("completion").read, wire.get("ollama_chat").read,
                                  lambda body: gemini.ask(body, "bench/core")])
def test_fmt10_checks_on_every_format(read):
    """FMT-10 and its correction: model, with and bench are checked whatever the format; falsy reads as none."""
    body = {"messages": [], "input": "hi", "prompt": "hi", "contents": []}
    assert '"model" must be a collection name' in refused(read, {**body, "model": 7})
    assert '"with" must be a list of model aliases' in refused(read, {**body, "with": "alpha"})
    assert '"bench" must be an object' in refused(read, {**body, "bench": {"reply": ""}})
    assert '"bench" must be an object' in refused(read, {**body, "bench": "route"})
    ask = read({**body, "with": 0, "bench": [], "tools": []})
    assert ask.nominees == [] and ask.reply == "" and ask.agentic is False


# ---------------------------------------------------------------- OUT-7: the round trips


def test_out7_native_requests_read_back_to_the_same_messages():
    """OUT-7: each native request, read by its own reader, gives the conversation back exactly."""
    assert fa.ask(fa.request("bench/core", CONVERSATION)).messages == CONVERSATION
    assert gemini.ask(gemini.request(CONVERSATION), "bench/core").messages == CONVERSATION
    assert responses.ask(responses.request("bench/core", CONVERSATION)).messages == CONVERSATION
    assert fo.chat_ask(fo.request("bench/core", CONVERSATION)).messages == CONVERSATION
    web = json.loads(json.dumps(CONVERSATION).replace(PNG, WEB_IMAGE))
    assert fa.ask(fa.request("m", web)).messages == web
    assert gemini.ask(gemini.request(web), "m").messages == web
    assert responses.ask(responses.request("m", web)).messages == web
    assert "base64 only" in refused(fo.request, "m", web)


def test_out2_to_out5_native_request_shapes():
    """OUT-2..5, REQ-2, REQ-3: what each native request looks like, options included."""
    options = {"max_tokens": 700, "temperature": 0.3, "top_p": 0.9, "stop": "END"}
    body = fa.request("claude-x", CONVERSATION, options, stream=True)
    assert list(body) == ["model", "max_tokens", "temperature", "top_p", "stop_sequences", "stream", "system",
                          "messages"]
    assert body["stop_sequences"] == ["END"] and body["system"] == "Be brief."
    assert body["messages"][0]["content"][1] == {"type": "image", "source": {"type": "base64",
                                                                          "media_type": "image/png", "data": PNG_B64}}
    assert fa.request("m", [{"role": "user", "content": "x"}])["max_tokens"] == 8192
    body = gemini.request(CONVERSATION, options)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["generationConfig"] == {"maxOutputTokens": 700, "temperature": 0.3, "topP": 0.9,
                                        "stopSequences": ["END"]}
    assert body["contents"][0]["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": PNG_B64}}
    assert gemini.request([{"role": "user", "content": [{"type": "image_url", "image_url": {
        "url": "https://x.example/a"}}]}])["contents"][0]["parts"] == [
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://x.example/a"}}]
    assert gemini.url("https://g.example/v1beta", "models/gemini x") == (
        "https://g.example/v1beta/models/gemini%20x:streamGenerateContent?alt=sse")
    body = responses.request("gpt-x", CONVERSATION, options, stream=True)
    assert body["store"] is False and body["instructions"] == "Be brief." and body["max_output_tokens"] == 700
    assert body["input"][1]["content"] == [{"type": "output_text", "text": "A cat."}]
    body = fo.request("llama", CONVERSATION, options)
    assert body["options"] == {"num_predict": 700, "temperature": 0.3, "top_p": 0.9, "stop": "END"}
    assert body["messages"][1]["images"] == [PNG_B64] and body["stream"] is False
    for build in (lambda m: fa.request("m", m), gemini.request, lambda m: responses.request("m", m),
                  lambda m: fo.request("m", m)):
        for turn in ({"role": "tool", "tool_call_id": "c", "content": "x"},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}):
            assert "chat completions only" in refused(build, [turn])


def parse_sse(data):
    return [e for e in client.sse([data]) if e is not client.DONE]


def written(stream, pieces, error=None):
    """Drive a panel stream writer as the gateway does (keep-alives between the pieces); its bytes."""
    out = []
    stream.write = out.append
    stream.start()
    stream.keepalive()
    for piece in pieces:
        stream.text(piece)
        stream.keepalive()
    if error:
        stream.error(500, error)
    else:
        stream.end({"panel": "p1"})
    return b"".join(out)


def read_back(reader, events):
    for event in events:
        reader.feed(event)
    reader.end()
    return reader


PIECES = ["Bench bench/core p1\n", "\n## member — alpha\n`p1.member1` · ok", "\nfooter é"]


@pytest.mark.parametrize("make, parse, reader", [
    (lambda: fa.Stream(None, "bench/core", 5), parse_sse, fa.Reader),
    (lambda: responses.Stream(None, "bench/core", 5), parse_sse, responses.Reader),
    (lambda: gemini.Stream(None, "bench/core", 5, sse=True), parse_sse, gemini.Reader),
    (lambda: gemini.Stream(None, "bench/core", 5), json.loads, gemini.Reader),
    (lambda: fo.ChatStream(None, "bench/core", 5), lambda d: [json.loads(x) for x in d.splitlines()], fo.Reader),
    (lambda: fo.GenerateStream(None, "bench/core", 5), lambda d: [json.loads(x) for x in d.splitlines()], fo.Reader),
], ids=["anthropic", "responses", "gemini-sse", "gemini-array", "ollama-chat", "ollama-generate"])
def test_out7_every_stream_writer_read_back_by_its_reader(make, parse, reader):
    """OUT-7: stream writers read back give the text (keep-alives interleaved); an error makes the reader raise."""
    done = read_back(reader(), parse(written(make(), PIECES)))
    assert done.text == "".join(PIECES) and done.done
    with pytest.raises(wire.UpstreamError) as caught:
        read_back(reader(), parse(written(make(), PIECES[:1], error="the panel failed (boom)")))
    assert "the panel failed (boom)" in str(caught.value)


def test_out7_every_reply_writer_read_back():
    """OUT-7 for plain replies; FMT-16 shapes: usage as given, bench where the format has room."""
    bench = {"panel": "p1", "seats": [{"call": "p1.member1", "seat": "member", "alias": "alpha", "status": "ok",
                                       "answer": "x"}]}
    for module, reader in ((fa, fa.Reader), (responses, responses.Reader), (gemini, gemini.Reader)):
        body = module.reply("the answer", "bench/core", bench, (12, 3), 0.5)
        assert read_back(reader(), [body]).text == "the answer"
    assert "bench" not in gemini.reply("x", "m", bench, (1, 1))
    assert gemini.headers(bench) == {"X-Bench-Panel": "p1", "X-Bench-Seats": json.dumps(
        [{"call": "p1.member1", "seat": "member", "alias": "alpha", "status": "ok"}])}
    body = fo.chat_reply("hi", "bench/core", bench, (4, 1), 0.2)
    assert read_back(fo.Reader(), [body]).text == "hi" and body["total_duration"] >= 2e8
    assert body["created_at"].endswith("Z") and body["bench"] == bench
    assert fo.generate_reply("hi", "m", None, (1, 1))["response"] == "hi"
    body = completions.reply("hi", "bench/core", bench, (4, 1))
    assert body["id"].startswith("cmpl-") and body["usage"] == {"prompt_tokens": 4, "completion_tokens": 1,
                                                                "total_tokens": 5}
    body = responses.reply("hi", "core", bench, (4, 1))
    assert list(body)[:4] == ["id", "object", "created_at", "status"] and list(body)[-1] == "bench"
    assert body["id"].startswith("resp_") and body["output"][0]["id"].startswith("msg_")


def test_responses_stream_numbers_and_completions_stream_ids():
    """§6.2 sequence numbers 0..n-1 (keep-alives take none); improvement 4: `cmpl-` stream ids."""
    events = parse_sse(written(responses.Stream(None, "core", 3), PIECES))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events][:4] == ["response.created", "response.in_progress",
                                               "response.output_item.added", "response.content_part.added"]
    assert events[-1]["response"]["bench"] == {"panel": "p1"}
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "".join(PIECES)
    failed = parse_sse(written(responses.Stream(None, "core", 3), [], error="x"))
    assert [e["type"] for e in failed[-2:]] == ["error", "response.failed"]
    assert failed[-1]["response"]["error"] == {"code": "server_error", "message": "x"}
    chunks = parse_sse(written(completions.Stream(None, "core"), PIECES))
    assert {c["id"][:5] for c in chunks} == {"cmpl-"} and chunks[-1]["bench"] == {"panel": "p1"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    data = written(gemini.Stream(None, "core", 3), [], error="x")
    assert data.startswith(b"[") and data.endswith(b"]") and json.loads(data)[-1]["error"]["message"] == "x"


# ---------------------------------------------------------------- readers: what maps, what is refused


def test_anthropic_reader_maps_tools_results_images_and_ignores_what_it_should():
    """§6.1: tool_use/tool_result order, images, thinking dropped, tool_choice, options; ignored fields."""
    body = {"model": "bench/core", "max_tokens": 32000, "top_k": 5, "thinking": {"type": "enabled"},
            "metadata": {"user_id": "u"}, "stop_sequences": ["END"], "temperature": 0.2,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": "Really."}],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                                  {"type": "text", "text": "Let me check."},
                                                  {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                   "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "text", "text": "and this"},
                                             {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                                              "content": [{"type": "text", "text": "no data"},
                                                          {"type": "image", "source": {"type": "url",
                                                                                       "url": WEB_IMAGE}}]}]}]}
    ask = fa.ask(body)
    assert ask.messages == [
        {"role": "system", "content": "Be brief.\n\nReally."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "toolu_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: no data"},
        {"role": "user", "content": [{"type": "text", "text": "and this"},
                                     {"type": "image_url", "image_url": {"url": WEB_IMAGE}}]}]
    assert ask.tools == [{"type": "function", "function": {
        "name": "get_weather", "description": "", "parameters": {"type": "object"}}}]
    assert ask.tool_choice == "required" and ask.agentic
    assert ask.passthrough == {"parallel_tool_calls": False, "max_tokens": 32000, "temperature": 0.2, "stop": ["END"]}
    no_media_type = {"type": "image", "source": {"type": "base64", "data": "/9j/4AAQSkZJRg"}}
    assert fa.ask({"messages": [{"role": "user", "content": [no_media_type]}]}).messages[0]["content"][0] == {
        "type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg"}}


@pytest.mark.parametrize("body, says", [
    ({"messages": "hi"}, '"messages" must be a list'),
    ({"messages": [{"role": "system", "content": "x"}]}, "role"),
    ({"messages": [{"role": "user", "content": 5}]}, "user: content must be a string or a list of content blocks"),
    ({"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]}, "'document'"),
    ({"messages": [{"role": "user", "content": ["text"]}]}, "'string'"),
    ({"messages": [{"role": "assistant", "content": [{"type": "server_tool_use", "id": "s"}]}]}, "Anthropic runs"),
    ({"messages": [{"role": "user", "content": [{"type": "web_search_tool_result"}]}]}, "Anthropic runs"),
    ({"messages": [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]},
     "a tool_result block cannot be in an assistant message"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n"}]}]},
     "a tool_use block cannot be in a user message"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}]},
     "'file'"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "application/pdf", "data": "JVBER"}}]}]}, "only images"),
    ({"messages": [], "tools": {"name": "x"}}, '"tools" must be a list'),
    ({"messages": [], "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "web_search_20250305"),
    ({"messages": [], "tools": [{"description": "no name"}]}, "every tool needs a name"),
    ({"messages": [], "system": [{"type": "image", "source": {"type": "url", "url": WEB_IMAGE}}]}, "system"),
])
def test_anthropic_refused_not_dropped(body, says):
    """§6.1 refusals; improvement 10 (a system image block is refused)."""
    assert says in refused(fa.ask, body)


def test_responses_reader_items_tools_and_refusals():
    """§6.2: calls join the previous assistant message, outputs become tool messages, custom tools, text.format."""
    body = {"model": "bench/core", "instructions": "Be brief.", "store": True, "reasoning": {"effort": "low"},
            "parallel_tool_calls": True, "tool_choice": {"type": "function", "name": "apply_patch"},
            "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
            "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": True},
                      {"type": "custom", "name": "apply_patch", "description": "Patch files.",
                       "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}],
            "input": [{"type": "message", "role": "developer", "content": "Use tools."},
                      {"role": "user", "content": [{"type": "input_text", "text": "Fix it"}]},
                      {"type": "reasoning", "summary": []},
                      {"role": "assistant", "content": [{"type": "output_text", "text": "On it."}]},
                      {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": "{}"},
                      {"type": "custom_tool_call", "call_id": "call_b", "name": "apply_patch", "input": "*** diff"},
                      {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
                      {"type": "custom_tool_call_output", "call_id": "call_b",
                       "output": [{"type": "input_text", "text": "applied"}]}]}
    ask = responses.ask(body)
    assert ask.messages == [
        {"role": "system", "content": "Be brief."}, {"role": "developer", "content": "Use tools."},
        {"role": "user", "content": "Fix it"},
        {"role": "assistant", "content": "On it.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
            {"id": "call_b", "type": "function", "function": {"name": "apply_patch",
                                                              "arguments": '{"input": "*** diff"}'}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_b", "content": "applied"}]
    tools = ask.tools
    assert tools[0]["function"]["strict"] is True
    assert tools[1]["function"]["description"] == ("Patch files.\n\nThe input must follow this lark grammar:\n"
                                                   "start: /.+/")
    assert tools[1]["function"]["parameters"]["required"] == ["input"] and ask.custom == ["apply_patch"]
    assert ask.tool_choice == {"type": "function", "function": {"name": "apply_patch"}}
    assert ask.passthrough == {"response_format": {"type": "json_schema", "json_schema": {
        "name": "out", "schema": {"type": "object"}}}, "parallel_tool_calls": True}
    for body, says in (({"input": "x", "previous_response_id": "resp_1"}, "never stored"),
                       ({"input": "x", "conversation": "conv_1"}, "never stored"),
                       ({"input": 5}, '"input" must be a string or a list of items'),
                       ({"input": [{"type": "item_reference", "id": "x"}]}, "'item_reference'"),
                       ({"input": [{"role": "tool", "content": "x"}]}, "user, assistant, system, developer"),
                       ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
                        "file_id"),
                       ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
                        "'input_file'"),
                       ({"input": "x", "tools": [{"type": "web_search"}]}, "OpenAI runs itself")):
        assert says in refused(responses.ask, body)


def test_completions_and_ollama_readers():
    """§5.2 one prompt; §7.1/§7.2 Ollama: :latest, images, tool names, stream default, context, load calls."""
    assert completions.ask({"prompt": ["only"], "suffix": "x", "n": 3}).messages == [
        {"role": "user", "content": "only"}]
    for prompt in (["a", "b"], [1, 2], None):
        assert "one string" in refused(completions.ask, {"prompt": prompt})
    ask = fo.chat_ask({"model": "bench/core:latest", "format": "json", "options": {"num_predict": 5, "seed": 1},
                       "keep_alive": "5m", "messages": [
                           {"role": "user", "content": "look", "images": ["/9j/4AAQ"]},
                           {"role": "assistant", "content": "", "tool_calls": [
                               {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
                           {"role": "tool", "tool_name": "get_weather", "content": 21}]})
    assert ask.model == "bench/core" and ask.stream is True
    assert ask.passthrough == {"response_format": {"type": "json_object"}, "max_tokens": 5}
    assert ask.messages[0]["content"][1] == {"type": "image_url",
                                             "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}
    assert ask.messages[1]["tool_calls"][0]["id"] == "call_0"
    assert ask.messages[2] == {"role": "tool", "tool_call_id": "call_0", "content": "21"}
    assert fo.chat_ask({"model": "m:merged", "messages": [], "stream": None}).stream is True  # improvement 12
    assert fo.chat_ask({"messages": [], "stream": False}).stream is False
    assert fo.chat_ask({"messages": []}).load and fo.generate_ask({"prompt": ""}).load and not ask.load
    assert fo.generate_ask({"prompt": "hi", "system": "sys", "images": [PNG_B64], "raw": True}).messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": PNG}}]}]
    for read, body, says in ((fo.generate_ask, {"prompt": "x", "context": [1, 2]}, "/api/chat"),
                             (fo.generate_ask, {"prompt": 3}, '"prompt" must be a string'),
                             (fo.chat_ask, {"messages": [{"role": "user", "content": "x", "images": "abc"}]},
                              "images must be a list of base64 strings"),
                             (fo.chat_ask, {"messages": [{"role": "user", "content": "", "tool_calls": [{}]}]},
                              "tool_calls must be a list, in an assistant message"),
                             (fo.chat_ask, {"messages": [{"role": "function", "content": "x"}]},
                              "system, user, assistant, tool"),
                             (fo.chat_ask, {"messages": [], "tools": [{"name": "x"}]}, '"tools"')):
        assert says in refused(read, body)


def test_gemini_reader_both_spellings_tools_and_refusals():
    """§8.1: camel and snake case, thought parts dropped, numbered call ids, schema types lowered, tool config."""
    body = {"system_instruction": {"parts": [{"text": "Be brief."}]},
            "generation_config": {"max_output_tokens": 9, "topK": 3, "responseMimeType": "application/json",
                                  "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}},
            "tools": [{"function_declarations": [{"name": "get_weather", "parameters": {"type": "OBJECT"}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "any", "allowedFunctionNames": ["get_weather"]}},
            "contents": [{"parts": [{"text": "Weather?"},
                                    {"inline_data": {"mime_type": "image/png", "data": PNG_B64}}]},
                         {"role": "model", "parts": [{"text": "thinking", "thought": True},
                                                     {"functionCall": {"name": "get_weather", "args": {"c": "Oslo"}}}]},
                         {"role": "function", "parts": [{"functionResponse": {"name": "get_weather",
                                                                              "response": {"t": "21°"}}}]}]}
    ask = gemini.ask(body, "bench/core:route", "streamGenerateContent")
    assert ask.model == "bench/core:route" and ask.stream is True
    assert ask.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                     {"type": "image_url", "image_url": {"url": PNG}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"c": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": '{"t": "21°"}'}]
    assert ask.tools[0]["function"]["parameters"] == {"type": "object"}
    assert ask.tool_choice == {"type": "function", "function": {"name": "get_weather"}}
    assert ask.passthrough == {"max_tokens": 9, "response_format": {"type": "json_schema", "json_schema": {
        "name": "response", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}}
    for body, says in (({"contents": "hi"}, '"contents" must be a list of content objects'),
                       ({"contents": [{"role": "system", "parts": []}]}, "role"),
                       ({"contents": [{"parts": "x"}]}, "user: parts must be a list"),
                       ({"contents": [{"parts": [{}]}]}, "nothing"),
                       ({"contents": [{"parts": [{"inlineData": {"mimeType": "application/pdf", "data": "x"}}]}]},
                        "an inlineData part is application/pdf; only images"),
                       ({"contents": [{"parts": [{"fileData": {"fileUri": "gs://b/cat.png"}}]}]}, "Files API"),
                       ({"contents": [{"parts": [{"fileData": {"fileUri": "https://x/a.mp3"}}]}]}, "only images"),
                       ({"contents": [{"parts": [{"executableCode": {"code": "1"}}]}]}, "code execution"),
                       ({"contents": [{"parts": [{"functionCall": {"name": "f"}}]}]}, "model turn"),
                       ({"contents": [{"role": "model", "parts": [{"functionResponse": {"name": "f"}}]}]},
                        "model turn"),
                       ({"contents": [], "systemInstruction": {"parts": [{"functionCall": {"name": "f"}}]}},
                        "cannot be here"),
                       ({"contents": [], "tools": [{"googleSearch": {}}]}, "Gemini runs itself"),
                       ({"contents": [], "tools": {"functionDeclarations": []}}, '"tools" must be a list'),
                       ({"contents": [], "tools": [{"functionDeclarations": ["get_weather"]}]}, "list of objects")):
        assert says in refused(gemini.ask, body, "m")


def test_token_counts_fmt70_and_anthropic_count():
    """FMT-70: 400 chars count exactly estimate(400) = 110; §6.1: an image adds 2,500."""
    text = "x" * 400
    assert gemini.count({"contents": [{"parts": [{"text": text}]}]}) == 110
    assert gemini.count({"generateContentRequest": {"contents": [{"parts": [{"text": text}]}]}}) == 110
    n = fa.count({"messages": [{"role": "user", "content": [
        {"type": "text", "text": text}, {"type": "image", "source": {"type": "base64", "data": PNG_B64}}]}]})
    assert images.estimate(text) + 2500 <= n < images.estimate(text) + 2520


# ---------------------------------------------------------------- the real SDKs against the gateway


def collections_for_tests():
    demo.set_collection("core", ["alpha", "gamma"], description="two reviewers", tags=["code"])
    demo.set_collection("eyes", ["alpha", "seer"], description="one sees")
    demo.set_collection("small", ["tiny"], description="a small window")
    demo.set_collection("ordered", ["alpha", "slow"], description="one fast, one slow")


@pytest.fixture
def gw(gateway, bench):
    collections_for_tests()
    return gateway


def seat_requests(upstream, model):
    return [r["body"] for r in upstream.requests if r["model"] == model and r["path"].endswith("/chat/completions")]


def only_vision_seat_got_the_image(upstream, text):
    """TEST-2: the image reached the vision seat as exactly one user message of text + image_url parts."""
    asked = seat_requests(upstream, "seer")
    assert [b["messages"] for b in asked] == [[{"role": "user", "content": [
        {"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": PNG}}]}]]
    assert not [b for b in seat_requests(upstream, "alpha") if text in json.dumps(b)]


def refuse_after_the_200(upstream):
    """A refusal that can only come after a stream's 200: the shape picker outlasts the stream's grace
    (STR-4), then no seat can be found for bench/core (503): every format's in-stream error."""
    upstream.models["picker"]["latency"] = gateway.STREAM_GRACE + 0.5
    fileio.write_atomic(paths.file("config", "decision-models.json"),
                        json.dumps({"picker": {"via": "demo", "served": "picker", "question_types": ["choice"]}}))
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 2}')
    fileio.write_atomic(paths.file("config", "model-roles.json"),
                        json.dumps({"models": {}, "ad_hoc": [m for m in upstream.models if m != "picker"]}))
    demo.set_collection("core", [])


NO_SEAT = "no members and no explorer could be seated"


LONG = "word " * 4000  # far past tiny's 3,000-token window


def test_anthropic_sdk_messages_create_stream_count_tokens(gw, bench):
    """§6.1, TEST-1, TEST-5-like: create answers with bench; stream delivers seat by seat; count_tokens."""
    sdk = anthropic.Anthropic(base_url=gw, api_key="x", max_retries=0)
    message = sdk.messages.create(model="bench/core", max_tokens=1024, messages=[{"role": "user", "content": PROMPT}])
    bench_field = message.model_extra["bench"]
    assert message.model == "bench/core" and message.stop_reason == "end_turn" and message.id.startswith("msg_")
    assert [s["alias"] for s in bench_field["seats"]] == ["alpha", "gamma"]
    assert all(s["call"] in message.content[0].text for s in bench_field["seats"])
    with sdk.messages.stream(model="bench/ordered", max_tokens=1024,
                             messages=[{"role": "user", "content": PROMPT}]) as stream:
        kinds, pieces, benches = [], [], []
        for event in stream:
            kinds.append(event.type)
            if event.type == "text":
                pieces.append(event.text)
            if event.type == "message_delta":
                benches.append(event.model_extra["bench"])
    assert kinds[:2] == ["message_start", "content_block_start"] and kinds[-1] == "message_stop"
    assert pieces[0].startswith("Bench bench/ordered") and "Record a verdict" not in pieces[0]
    assert "Alpha:" in pieces[1] and "Slow:" in pieces[2] and "POST /bench/verdict" in pieces[3]
    assert [s["alias"] for s in benches[0]["seats"]] == ["alpha", "slow"]
    count = sdk.messages.count_tokens(model="bench/core", messages=[{"role": "user", "content": "x" * 400}])
    assert count.input_tokens == 110
    with pytest.raises(anthropic.NotFoundError) as caught:
        sdk.messages.count_tokens(model="bench/nowhere", messages=[{"role": "user", "content": "x"}])
    assert "bench/core" in caught.value.message  # improvement 3: unknown collections are 404 here too


def test_anthropic_sdk_image_tools_and_errors(gw, bench, upstream):
    """TEST-2, TEST-6, TEST-7, TEST-8 in the Anthropic SDK's own errors."""
    sdk = anthropic.Anthropic(base_url=gw, api_key="x", max_retries=0)
    picture = {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                           {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                        "data": PNG_B64}}]}
    message = sdk.messages.create(model="bench/eyes", max_tokens=100, messages=[picture])
    assert [s["alias"] for s in message.model_extra["bench"]["seats"]] == ["seer"]
    only_vision_seat_got_the_image(upstream, "What is this?")
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.messages.create(model="bench/core", max_tokens=100, messages=[{"role": "user", "content": "hi"}],
                            tools=[{"name": "get_weather", "input_schema": {"type": "object"}}])
    assert "route mode" in caught.value.message and caught.value.body["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.NotFoundError) as caught:
        sdk.messages.create(model="bench/nowhere", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
    assert "bench/core" in caught.value.message
    with pytest.raises(anthropic.APIStatusError) as caught:
        with sdk.messages.stream(model="bench/small", max_tokens=100,
                                 messages=[{"role": "user", "content": LONG}]) as stream:
            list(stream)
    assert caught.value.status_code == 413 and caught.value.body["error"]["type"] == "request_too_large"
    refuse_after_the_200(bench)
    with pytest.raises(anthropic.APIStatusError) as caught:
        with sdk.messages.stream(model="bench/core", max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as s:
            list(s)
    assert NO_SEAT in str(caught.value)


def test_openai_sdk_responses_plain_and_streamed(gw, bench, upstream):
    """§6.2, TEST-1, TEST-2, TEST-8: Responses through OpenAI's SDK."""
    sdk = openai.OpenAI(base_url=gw + "/v1", api_key="x", max_retries=0)
    reply = sdk.responses.create(model="bench/core:all", input=PROMPT, store=True)
    bench_field = reply.model_extra["bench"]
    assert reply.model == "bench/core:all" and reply.status == "completed" and reply.store is False
    assert [s["alias"] for s in bench_field["seats"]] == ["alpha", "gamma"]
    assert all(s["call"] in reply.output_text for s in bench_field["seats"])
    assert bench_field["notes"][0].startswith("store: true is not honoured: responses are never stored here")
    with pytest.raises(openai.NotFoundError) as caught:  # issue 30 item 7: said plainly, not "no such route"
        sdk.responses.retrieve(reply.id)
    assert caught.value.body["message"] == (f"responses are never stored here, so {reply.id!r} cannot be fetched; "
                                            "keep the reply you were sent, and send the whole conversation in "
                                            '"input" to go on')
    events = list(sdk.responses.create(model="bench/ordered", input=PROMPT, stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) == 4 and "Alpha:" in deltas[1] and "Slow:" in deltas[2]
    assert events[-1].type == "response.completed" and events[-1].response.output_text == "".join(deltas)
    assert [s["alias"] for s in events[-1].response.model_extra["bench"]["seats"]] == ["alpha", "slow"]
    sdk.responses.create(model="bench/eyes", input=[{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"}, {"type": "input_image", "image_url": PNG}]}])
    only_vision_seat_got_the_image(upstream, "What is this?")
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(model="bench/core", input="hi", tools=[{"type": "function", "name": "f",
                                                                     "parameters": {"type": "object"}}])
    assert "route mode" in caught.value.message and caught.value.code == "400"
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(model="bench/core", input="hi", previous_response_id="resp_1")
    assert "never stored" in caught.value.message


def test_openai_sdk_responses_and_completions_errors(gw, bench):
    """TEST-6, TEST-7: a refusal before the stream keeps its status; after it, the format's own error events."""
    sdk = openai.OpenAI(base_url=gw + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        list(sdk.responses.create(model="bench/small", input=LONG, stream=True))
    assert caught.value.status_code == 413
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.completions.create(model="bench/small", prompt=LONG, stream=True)
    assert caught.value.status_code == 413
    completion = sdk.completions.create(model="bench/core", prompt=PROMPT, max_tokens=50, echo=False)
    assert completion.id.startswith("cmpl-") and completion.model == "bench/core"
    assert "Alpha:" in completion.choices[0].text and completion.usage.total_tokens > 0
    assert completion.model_extra["bench"]["collection"] == "bench/core"
    chunks = list(sdk.completions.create(model="bench/core", prompt=PROMPT, stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].model_extra["bench"]["panel"]
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.completions.create(model="bench/core", prompt=["a", "b"])
    assert "one string" in caught.value.message
    refuse_after_the_200(bench)
    events = list(sdk.responses.create(model="bench/core", input="hi", stream=True))
    assert [e.type for e in events[-2:]] == ["error", "response.failed"]
    assert NO_SEAT in events[-1].response.error.message
    with sdk.responses.stream(model="bench/core", input="hi") as stream:
        with pytest.raises(RuntimeError):
            stream.get_final_response()
    with pytest.raises(openai.APIError) as caught:
        list(sdk.completions.create(model="bench/core", prompt="hi", stream=True))
    assert NO_SEAT in caught.value.message


def test_ollama_sdk_chat_generate_list_show(gw, bench, upstream):
    """§7, TEST-1, TEST-2, TEST-9: chat and generate, streamed and not; list; show; the load call."""
    sdk = ollama.Client(host=gw)
    reply = sdk.chat(model="bench/core:latest", messages=[{"role": "user", "content": PROMPT}])
    assert reply.done and reply.done_reason == "stop" and reply.model == "bench/core"
    assert "Alpha:" in reply.message.content and ".member2`" in reply.message.content  # the SDK drops `bench`
    assert reply.total_duration >= 1 and reply.prompt_eval_count > 0
    parts = list(sdk.chat(model="bench/ordered", messages=[{"role": "user", "content": PROMPT}], stream=True))
    assert [p.done for p in parts][-1] is True and parts[0].message.content.startswith("Bench bench/ordered")
    texts = [p.message.content for p in parts if p.message.content]
    assert "Alpha:" in texts[1] and "Slow:" in texts[2]
    generated = sdk.generate(model="bench/core", prompt=PROMPT)
    assert "Gamma:" in generated.response and generated.done
    streamed = list(sdk.generate(model="bench/core", prompt=PROMPT, stream=True))
    assert streamed[-1].done and "Gamma:" in "".join(p.response for p in streamed)
    assert sdk.generate(model="bench/core", prompt="").done_reason == "load"  # improvement 9: no panel
    assert sdk.chat(model="bench/core", messages=[]).done_reason == "load"
    listed = [m.model for m in sdk.list().models]
    assert listed[:3] == ["bench/core", "bench/core:merged", "bench/core:route"]
    card = sdk.show("core")
    assert card.capabilities == ["completion"] and card.modelinfo["benchwarmers.context_length"] == 32000
    assert sdk.show("bench/eyes").capabilities == ["completion"]  # alpha cannot see
    sdk.chat(model="bench/eyes", messages=[{"role": "user", "content": "What is this?", "images": [PNG_BYTES]}])
    only_vision_seat_got_the_image(upstream, "What is this?")


def test_ollama_sdk_errors(gw, bench):
    """TEST-6..8 in Ollama's `{"error"}` shape: the SDK raises ResponseError, streamed or not."""
    sdk = ollama.Client(host=gw)
    with pytest.raises(ollama.ResponseError) as caught:
        sdk.chat(model="bench/core", messages=[{"role": "user", "content": "hi"}],
                 tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
    assert caught.value.status_code == 400 and "route mode" in caught.value.error
    with pytest.raises(ollama.ResponseError) as caught:
        list(sdk.chat(model="bench/small", messages=[{"role": "user", "content": LONG}], stream=True))
    assert caught.value.status_code == 413
    with pytest.raises(ollama.ResponseError) as caught:
        sdk.show("nowhere")
    assert caught.value.status_code == 404 and "/api/tags" in caught.value.error
    with pytest.raises(ollama.ResponseError) as caught:
        sdk.generate(model="bench/core", prompt="go on", context=[1, 2, 3])
    assert "/api/chat" in caught.value.error
    refuse_after_the_200(bench)
    with pytest.raises(ollama.ResponseError) as caught:
        list(sdk.chat(model="bench/core", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert NO_SEAT in caught.value.error


def test_google_genai_sdk_generate_stream_count_list(gw, bench, upstream):
    """§8, TEST-1, TEST-2: google-genai with base_url; call ids in X-Bench-Seats and the text."""
    sdk = genai.Client(api_key="x", http_options=types.HttpOptions(base_url=gw))
    reply = sdk.models.generate_content(model="bench/core", contents=PROMPT)
    headers = reply.sdk_http_response.headers
    seats = json.loads(headers["x-bench-seats"])
    assert headers["x-bench-panel"].startswith("p") and [s["alias"] for s in seats] == ["alpha", "gamma"]
    assert all(s["call"] in reply.text for s in seats) and reply.model_version == "bench/core"
    assert reply.usage_metadata.prompt_token_count > 0
    chunks = [c.text or "" for c in sdk.models.generate_content_stream(model="bench/ordered", contents=PROMPT)]
    assert chunks[0].startswith("Bench bench/ordered") and "Alpha:" in chunks[1] and "Slow:" in chunks[2]
    assert sdk.models.count_tokens(model="bench/core", contents="x" * 400).total_tokens == 110
    names = [m.name for m in sdk.models.list()]
    assert names[:3] == ["models/bench/core", "models/bench/core:merged", "models/bench/core:route"]
    sdk.models.generate_content(model="bench/eyes", contents=[types.Content(role="user", parts=[
        types.Part(text="What is this?"), types.Part.from_bytes(data=PNG_BYTES, mime_type="image/png")])])
    only_vision_seat_got_the_image(upstream, "What is this?")


def test_google_genai_sdk_errors(gw, bench):
    """TEST-6..8 in Gemini's error shape: ClientError before the stream, an error chunk after it."""
    sdk = genai.Client(api_key="x", http_options=types.HttpOptions(base_url=gw))
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather", parameters=types.Schema(type="OBJECT"))])
    with pytest.raises(genai_errors.ClientError) as caught:
        sdk.models.generate_content(model="bench/core", contents="hi", config=types.GenerateContentConfig(tools=[tool]))
    assert caught.value.code == 400 and "route mode" in caught.value.message
    with pytest.raises(genai_errors.ClientError) as caught:
        sdk.models.generate_content(model="bench/nowhere", contents="hi")
    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND"
    with pytest.raises(genai_errors.ClientError) as caught:
        list(sdk.models.generate_content_stream(model="bench/small", contents=LONG))
    assert caught.value.code == 413
    refuse_after_the_200(bench)
    with pytest.raises(genai_errors.APIError) as caught:
        list(sdk.models.generate_content_stream(model="bench/core", contents="hi"))
    assert caught.value.code == 503 and NO_SEAT in caught.value.message


# ---------------------------------------------------------------- raw HTTP: what no SDK shows


def raw(gateway, method, path, body=None):
    """`(status, headers, body bytes, seconds to the status line)`."""
    host, port = gateway.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    started = time.monotonic()
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, data, {"Content-Type": "application/json"} if data else {})
    response = conn.getresponse()
    first = time.monotonic() - started
    payload = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, payload, first


ASKED = [{"role": "user", "content": PROMPT}]
STREAMS = {
    "chat": ("/v1/chat/completions", {"messages": ASKED}, "text/event-stream"),
    "completion": ("/v1/completions", {"prompt": PROMPT}, "text/event-stream"),
    "anthropic": ("/v1/messages", {"max_tokens": 9, "messages": ASKED}, "text/event-stream"),
    "responses": ("/v1/responses", {"input": PROMPT}, "text/event-stream"),
    "ollama_chat": ("/api/chat", {"messages": ASKED}, "application/x-ndjson"),
    "ollama_generate": ("/api/generate", {"prompt": PROMPT}, "application/x-ndjson"),
    "gemini_sse": ("/v1beta/models/bench/ordered:streamGenerateContent?alt=sse",
                   {"contents": [{"parts": [{"text": PROMPT}]}]}, "text/event-stream"),
    "gemini_array": ("/v1beta/models/bench/ordered:streamGenerateContent",
                     {"contents": [{"parts": [{"text": PROMPT}]}]}, "application/json"),
}


def test_test4_every_stream_variant_heading_first_keepalives_and_bench(gw, bench, monkeypatch):
    """TEST-4, PSTR-2..8: the 200 before the slow seat answers; faster seat first; each keep-alive form;
    `bench` on the format's final event (none for Gemini)."""
    from benchwarmers.server import gateway as gateway_module

    monkeypatch.setattr(gateway_module, "STREAM_GRACE", 0.1)
    monkeypatch.setattr(gateway_module, "KEEPALIVE", 0.15)
    for name, (path, body, content_type) in STREAMS.items():
        stream = name not in ("ollama_chat", "ollama_generate") and not name.startswith("gemini")
        status, headers, data, first = raw(gw, "POST", path, {"model": "bench/ordered", **body,
                                                              **({"stream": True} if stream else {})})
        assert status == 200 and first < 0.5, name
        assert headers["content-type"] == content_type and headers["cache-control"] == "no-cache", name
        assert "content-length" not in headers, name
        text = data.decode()
        assert text.index("Alpha:") < text.index("Slow:"), name
        if name.startswith("gemini"):
            chunks = parse_sse(data) if name == "gemini_sse" else json.loads(data)
            assert any(c["candidates"][0]["content"]["parts"] == [{"text": ""}] and "finishReason" not in
                       c["candidates"][0] for c in chunks), name
            assert '"bench"' not in text and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
        elif name.startswith("ollama"):
            lines = [json.loads(x) for x in data.splitlines()]
            assert any(not line["done"] and (line.get("response") == "" or (line.get("message") or {}).get("content")
                                             == "") for line in lines), name
            assert lines[-1]["done"] is True and lines[-1]["bench"]["collection"] == "bench/ordered"
        else:
            assert (b": keep-alive\n\n" in data) or (b"event: ping\n" in data), name
            events = parse_sse(data)
            final = {"chat": -1, "completion": -1, "anthropic": -2, "responses": -1}[name]
            carrier = events[final]
            carrier = carrier.get("response", carrier)
            assert carrier["bench"]["collection"] == "bench/ordered", name


def test_test8_test9_listings_show_version_and_refusals_in_each_shape(gw, bench):
    """TEST-8, TEST-9, FMT-6, FMT-8, FMT-31, FMT-71..73, improvement 8: listings, the card, odd routes."""
    fileio.write_atomic(paths.file("config", "model-overrides.json"),
                        json.dumps({"alpha": {"tools": True}, "gamma": {"tools": True}}))
    assert raw(gw, "GET", "/api/version")[2] == b'{"version": "0.12.0"}'
    tags = json.loads(raw(gw, "GET", "/api/tags/")[2])["models"]
    assert tags[0]["name"] == tags[0]["model"] == "bench/core" and tags[0]["details"]["family"] == "benchwarmers"
    assert tags[0]["digest"] == hashlib.sha256(b"bench/core").hexdigest()
    status, _, card, _ = raw(gw, "POST", "/api/show", {"name": "core:latest"})
    assert status == 200 and json.loads(card)["model_info"]["general.basename"] == "core"
    card = json.loads(raw(gw, "POST", "/api/show", {"model": "bench/core:route"})[2])
    assert card["capabilities"] == ["completion", "tools"] and card["modelfile"] == "# two reviewers"
    listing = json.loads(raw(gw, "GET", "/v1beta/models")[2])["models"]
    assert listing[0] == {"name": "models/bench/core", "baseModelId": "bench/core", "version": "1",
                          "displayName": "bench/core", "description": "two reviewers", "inputTokenLimit": 32000,
                          "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]}
    status, _, one, _ = raw(gw, "GET", "/v1beta/models/bench%2Fcore:merged")
    assert status == 200 and json.loads(one)["name"] == "models/bench/core:merged"
    status, _, missing, _ = raw(gw, "GET", "/v1beta/models/core")
    assert status == 404 and json.loads(missing)["error"]["status"] == "NOT_FOUND"
    assert "GET /v1beta/models" in json.loads(missing)["error"]["message"]
    openai_listing = json.loads(raw(gw, "GET", "/v1/models")[2])
    assert openai_listing["data"][0]["id"] == "bench/core" and openai_listing["models"][0] == listing[0]
    status, _, body, _ = raw(gw, "POST", "/v1beta/models/bench/core:embedContent", {})
    assert status == 404 and "generateContent" in json.loads(body)["error"]["message"]
    assert "not :embedContent" in json.loads(body)["error"]["message"]
    status, _, body, _ = raw(gw, "POST", "/v1beta/models/bench/nowhere:countTokens", {"contents": []})
    assert status == 404 and json.loads(body)["error"]["status"] == "NOT_FOUND"  # improvement 3
    status, headers, body, _ = raw(gw, "POST", "/v1beta/models/bench/core:generateContent?alt=sse",
                                   {"contents": [{"parts": [{"text": PROMPT}]}]})
    assert status == 200 and headers["content-type"] == "application/json" and headers["x-bench-panel"]
    status, _, body, _ = raw(gw, "POST", "/v1/messages", {"model": "bench/nowhere", "messages": ASKED})
    assert status == 404 and json.loads(body)["error"]["type"] == "not_found_error"
    assert "bench/core" in json.loads(body)["error"]["message"]
    status, _, body, _ = raw(gw, "POST", "/v1/messages", {"model": "bench/core", "messages": ASKED,
                                                          "stream": True, "bench": {"reply": "route"}})
    assert status == 200 and body.startswith(b"event: message_start")  # route mode, asked in the body
    status, _, body, _ = raw(gw, "POST", "/nowhere", {})
    assert status == 404 and "/v1/messages" in json.loads(body)["error"]["message"]
    host, port = gw.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", "/v1/messages", b"{}", {"Content-Type": "text/plain"})
    response = conn.getresponse()
    assert response.status == 415 and json.loads(response.read())["error"]["type"] == "api_error"  # §2: no 415 type
    conn.close()
    status, _, body, _ = raw(gw, "POST", "/api/chat", {"model": "bench/core", "messages": "hi"})
    assert status == 400 and set(json.loads(body)) == {"error"}
    status, _, body, _ = raw(gw, "POST", "/v1/responses", {"model": "bench/core", "input": 5})
    assert status == 400 and json.loads(body)["error"]["code"] == "400"


def test_ollama_load_call_streamed_is_one_done_line(gw, bench):
    """Improvement 9 on a streamed request: one NDJSON line, `done: true`, no panel asked."""
    status, headers, data, _ = raw(gw, "POST", "/api/generate", {"model": "bench/core"})
    assert status == 200 and headers["content-type"] == "application/x-ndjson"
    [line] = [json.loads(x) for x in data.splitlines()]
    assert line["done"] is True and line["done_reason"] == "load" and line["response"] == ""
    assert not [r for r in bench.requests if r["method"] == "POST"]


def test_test3_merged_by_tag_and_by_collection_setting(gw, bench):
    """TEST-3: `/api/chat` with `:merged`, `/v1/messages` on a merged collection; Gemini lists the merger too."""
    demo.set_collection("duo", ["alpha", "gamma"], merger="merger", description="merged")
    status, _, body, _ = raw(gw, "POST", "/api/chat", {"model": "bench/duo:merged", "stream": False,
                                                       "messages": ASKED})
    reply = json.loads(body)
    content, bench_field = reply["message"]["content"], reply["bench"]
    assert status == 200 and content.startswith("Merged:") and bench_field["reply"] == "merged"
    assert bench_field["merger"]["alias"] == "merger" and bench_field["merger"]["call"] in content
    demo.set_collection("duo", ["alpha", "gamma"], merger="merger", reply="merged")
    message = anthropic.Anthropic(base_url=gw, api_key="x", max_retries=0).messages.create(
        model="bench/duo", max_tokens=100, messages=ASKED)
    assert message.content[0].text.startswith("Merged:") and message.model_extra["bench"]["reply"] == "merged"
    _, headers, body, _ = raw(gw, "POST", "/v1beta/models/bench%2Fduo:generateContent",
                              {"contents": [{"parts": [{"text": PROMPT}]}]})
    seats = json.loads(headers["x-bench-seats"])
    assert [s["seat"] for s in seats] == ["member", "member", "merger"]
    assert all(s["call"] in json.loads(body)["candidates"][0]["content"]["parts"][0]["text"] for s in seats[2:])


def test_err1_keys_each_sdk_sends_its_own_header_and_refusals_keep_the_route_shape(gw, bench, monkeypatch):
    """ERR-1, KEY-1, FMT-6: with keys required each SDK's own key header works, a 401 comes in the route's shape
    with WWW-Authenticate, and a scoped key sees only its collections (listings, cards, counts)."""
    from benchwarmers.server import gatekeys

    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    secret = gatekeys.make("sdk", collections=["core"])
    message = anthropic.Anthropic(base_url=gw, api_key=secret, max_retries=0).messages.create(
        model="bench/core", max_tokens=100, messages=ASKED)
    assert message.model_extra["bench"]["collection"] == "bench/core"
    with pytest.raises(anthropic.AuthenticationError) as caught:
        anthropic.Anthropic(base_url=gw, api_key="wrong", max_retries=0).messages.create(
            model="bench/core", max_tokens=100, messages=ASKED)
    assert caught.value.body["error"]["type"] == "authentication_error"
    assert caught.value.response.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(anthropic.PermissionDeniedError):
        anthropic.Anthropic(base_url=gw, api_key=secret, max_retries=0).messages.create(
            model="bench/eyes", max_tokens=100, messages=ASKED)
    google = genai.Client(api_key=secret, http_options=types.HttpOptions(base_url=gw))
    assert [m.name for m in google.models.list()] == ["models/bench/core", "models/bench/core:merged",
                                                      "models/bench/core:route", "models/bench/core:council"]
    wrong = genai.Client(api_key="wrong", http_options=types.HttpOptions(base_url=gw))  # kept: GC closes it
    with pytest.raises(genai_errors.ClientError) as caught:
        wrong.models.generate_content(model="bench/core", contents="hi")
    assert caught.value.code == 401 and caught.value.status == "UNAUTHENTICATED"
    with pytest.raises(genai_errors.ClientError) as caught:
        google.models.count_tokens(model="bench/eyes", contents="hi")  # improvement 3: out of scope reads unknown
    assert caught.value.code == 404
    local = ollama.Client(host=gw, headers={"Authorization": f"Bearer {secret}"})
    assert [m.model for m in local.list().models] == ["bench/core", "bench/core:merged", "bench/core:route",
                                                      "bench/core:council"]
    with pytest.raises(ollama.ResponseError) as caught:
        local.show("eyes")
    assert caught.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as caught:
        ollama.Client(host=gw).list()
    assert caught.value.status_code == 401
