"""Route mode through the real SDKs (formats.md §11, TEST-14..19, TST-3): tool loops an agent runs.

The gateway runs in-process on a free port in front of the local upstream, whose scripted models call
tools (`metrics/demo/demo.py`: `tool_calls`, `say`, `parallel`, `late_id`, `whole`). Each SDK (openai,
anthropic, google-genai, ollama) runs whole tool loops against `bench/core:route`: the model calls a
tool, the test runs it, sends the result back in that SDK's own shape, and the model answers with it.
Nothing is mocked; the upstream's record of requests shows what reached the member.
"""

import http.client
import json

import anthropic
import ollama
import openai
import pydantic
import pytest
from google import genai
from google.genai import types

from benchwarmers.core import fileio
from benchwarmers.panel import route_mode
from benchwarmers.demo import demo

ROUTE = "bench/core:route"
FORECAST = "Oslo: 7 C and rain"
CUSTOM_INPUT = "*** Begin Patch\n*** Update File: parser.py\n-    return 0\n+    return 1\n*** End Patch"
TOOLING = {"latency": 0.01, "context_window": 32000, "max_output": 8192}
MODELS = {
    # says a sentence, then calls one tool with an id of its own; with the result, answers with it
    "forecaster": {**TOOLING, "say": "Let me check.",
                   "tool_calls": [[{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_oslo"}]]},
    # the same script under other ids: in every collection beside the forecaster, never asked
    "understudy": {**TOOLING, "tool_calls": [[{"name": "get_weather", "arguments": {"city": "Oslo"}}]]},
    # two tools chained: add(2, 3), then multiply(<add's result>, 4), then the results
    "calculator": {**TOOLING, "tool_calls": [[{"name": "add", "arguments": {"a": 2, "b": 3}}],
                                             [{"name": "multiply", "arguments": {"a": "{result}", "b": 4}}]]},
    # two calls at once, their deltas interleaved
    "twins": {**TOOLING, "parallel": True,
              "tool_calls": [[{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_a"},
                              {"name": "get_time", "arguments": {"zone": "Europe/Oslo"}, "id": "call_b"}]]},
    # each call's id arrives on its second delta
    "tardy": {**TOOLING, "late_id": True,
              "tool_calls": [[{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_late"}]]},
    # a plain JSON reply to a stream request
    "monolith": {**TOOLING, "whole": True,
                 "tool_calls": [[{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_whole"}]]},
    # a function tool and a custom tool in one step (Responses)
    "patcher": {**TOOLING, "say": "Patching.",
                "tool_calls": [[{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_fn"},
                                {"name": "apply_patch", "arguments": {"input": CUSTOM_INPUT}, "id": "call_patch"}]]},
    # thinks, then says nothing
    "ponder": {"reasoning": "Thinking it over at length.", "fail": "empty", "context_window": 32000, "tools": True},
    # rate-limited on its first request only (and cooling down for 30 s after it), and on every request
    "flaky": {**TOOLING, "fail": "429", "clears_after": 1, "retry_after": 30,
              "tool_calls": [[{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_flaky"}]]},
    # answers JSON fitting the requested schema (issue 30 item 1)
    "shaper": {**TOOLING, "schema": True},
    "limited": {"fail": "429", "retry_after": 1, "context_window": 32000, "tools": True},
    "limited2": {"fail": "429", "retry_after": 1, "context_window": 32000, "tools": True},
}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather now in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
CLOCK = {"type": "function", "function": {
    "name": "get_time", "description": "The time now in a zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
WEATHER_SCHEMA = WEATHER["function"]["parameters"]


def get_weather(city: str) -> str:
    """The weather now in a city."""
    return {"Oslo": FORECAST}.get(city, f"{city}: unknown")


@pytest.fixture
def route_models():
    return MODELS


def collection(*members):
    demo.set_collection("core", list(members))


def asked(up, model=None):
    """The chat completions bodies the upstream received, in order (of `model` only, when named)."""
    return [r["body"] for r in up.requests if r["method"] == "POST" and r["path"].endswith("/chat/completions")
            and (model is None or r["model"] == model)]


def members_asked(up):
    return [body["model"] for body in asked(up)]


def route_lines():
    return fileio.read_jsonl(route_mode.routes_path())


def exchange(gw, path, body):
    """`(status, headers with lower-case names, raw body)`; a stream is read to its close."""
    host, port = gw.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def sse_data(data):
    """The JSON objects of an SSE body's `data:` lines, `[DONE]` left out."""
    return [json.loads(line[6:]) for line in data.decode().splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def expected_deltas(up, model):
    """The tool-call deltas `model` streamed for its last request, as the upstream builds them."""
    spec, body = up.models[model], asked(up, model)[-1]
    calls = demo.script_calls(model, spec, body["messages"], body.get("tools"))
    return demo.call_deltas({"calls": calls, "parallel": bool(spec.get("parallel")),
                             "late_id": bool(spec.get("late_id"))})


# ---------------------------------------------------------------- OpenAI chat completions


def openai_sdk(gw):
    return openai.OpenAI(base_url=gw + "/v1", api_key="x", max_retries=0)


def openai_turn(sdk, messages, stream, tools=(WEATHER,), **fields):
    """One chat turn through the SDK: `(headers, the assistant message as a dict, bench)`; a stream's deltas are
    assembled here by index, as an agent does."""
    raw = sdk.chat.completions.with_raw_response.create(model=ROUTE, messages=messages, stream=stream,
                                                        tools=list(tools), **fields)
    if not stream:
        reply = raw.parse()
        assert reply.model == "bench/core" and reply.id.startswith("chatcmpl-")
        message = reply.choices[0].message.model_dump(exclude_none=True)
        assert reply.choices[0].finish_reason == ("tool_calls" if message.get("tool_calls") else "stop")
        return raw.headers, message, reply.model_extra["bench"]
    chunks = list(raw.parse())
    assert {c.model for c in chunks} == {"bench/core"} and chunks[-1].choices == []
    text, calls = [], {}
    for chunk in chunks:
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            for piece in choice.delta.tool_calls or ():
                call = calls.setdefault(piece.index, {"id": None, "type": "function",
                                                      "function": {"name": "", "arguments": ""}})
                call["id"] = call["id"] or piece.id
                if piece.function:
                    call["function"]["name"] += piece.function.name or ""
                    call["function"]["arguments"] += piece.function.arguments or ""
    message = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return raw.headers, message, chunks[-1].model_extra["bench"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_openai_sdk_chat_tool_loop(gw, routed, stream):
    """RT-21 chat, RT-21c, RT-12: the call reaches the SDK with the member's id, the result goes back under it,
    the answer uses it; both turns on one member, one conversation (headers and bench agree)."""
    collection("forecaster", "understudy")
    sdk = openai_sdk(gw)
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    head, message, bench = openai_turn(sdk, messages, stream)
    assert message["content"] == "Let me check."
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]] \
        == [("call_oslo", "get_weather", {"city": "Oslo"})]
    assert (head["x-bench-model"], head["x-bench-conversation"]) == ("forecaster", bench["conversation"])
    assert (bench["alias"], bench["turn"], bench["reply"]) == ("forecaster", 1, "route")
    messages.append(message)
    for call in message["tool_calls"]:
        result = get_weather(**json.loads(call["function"]["arguments"]))
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    head2, answer, bench2 = openai_turn(sdk, messages, stream)
    assert answer["content"] == f"Tool results: {FORECAST}" and "tool_calls" not in answer
    assert (head2["x-bench-model"], head2["x-bench-conversation"]) == ("forecaster", bench["conversation"])
    assert (bench2["alias"], bench2["turn"], bench2["call"]) == ("forecaster", 2, bench["conversation"] + ".1")
    sent = asked(routed)[-1]["messages"]  # the client's id reached the member, both sides (RT-21c)
    assert sent[1]["tool_calls"][0]["id"] == "call_oslo" and sent[2]["tool_call_id"] == "call_oslo"
    assert members_asked(routed) == ["forecaster", "forecaster"]


# ---------------------------------------------------------------- Anthropic Messages


ANTHROPIC_WEATHER = {"name": "get_weather", "description": "The weather now in a city", "input_schema": WEATHER_SCHEMA}


def anthropic_sdk(gw):
    return anthropic.Anthropic(base_url=gw, api_key="x", max_retries=0)


def anthropic_turn(sdk, stream, **fields):
    """One Messages turn through the SDK: `(headers, the final Message, bench, the stream's events or [])`."""
    fields = {"model": ROUTE, "max_tokens": 1024, "tools": [ANTHROPIC_WEATHER], **fields}
    if not stream:
        raw = sdk.messages.with_raw_response.create(**fields)
        message = raw.parse()
        return raw.headers, message, message.model_extra["bench"], []
    with sdk.messages.stream(**fields) as running:
        events = list(running)
        message = running.get_final_message()
        headers = running.response.headers
    deltas = [e for e in events if e.type == "message_delta"]
    assert len(deltas) == 1 and events[-1].type == "message_stop"
    return headers, message, deltas[0].model_extra["bench"], events


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_anthropic_sdk_tool_loop(gw, routed, stream):
    """RT-21 anthropic, RT-21a, RT-21c, 11.8a: text then a tool_use block with the member's id and input as an
    object; the tool_result goes back under that id and the answer uses it; one member, one conversation."""
    collection("forecaster", "understudy")
    sdk = anthropic_sdk(gw)
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    head, message, bench, _ = anthropic_turn(sdk, stream, messages=messages)
    assert [b.type for b in message.content] == ["text", "tool_use"] and message.stop_reason == "tool_use"
    assert message.content[0].text == "Let me check."
    use = message.content[1]
    assert (use.id, use.name, use.input) == ("call_oslo", "get_weather", {"city": "Oslo"})
    assert (head["x-bench-model"], head["x-bench-conversation"]) == ("forecaster", bench["conversation"])
    assert (bench["alias"], bench["turn"]) == ("forecaster", 1)
    messages += [{"role": "assistant", "content": [block.to_dict() for block in message.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                               "content": get_weather(**use.input)}]}]
    head2, answer, bench2, _ = anthropic_turn(sdk, stream, messages=messages)
    assert [b.type for b in answer.content] == ["text"] and answer.stop_reason == "end_turn"
    assert answer.content[0].text == f"Tool results: {FORECAST}"
    assert (head2["x-bench-model"], head2["x-bench-conversation"]) == ("forecaster", bench["conversation"])
    assert (bench2["alias"], bench2["turn"], bench2["call"]) == ("forecaster", 2, bench["conversation"] + ".1")
    sent = asked(routed)[-1]["messages"]
    assert sent[1] == {"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "call_oslo", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_oslo", "content": FORECAST}
    assert members_asked(routed) == ["forecaster", "forecaster"]


CLAUDE_CODE_SYSTEM = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {"type": "text", "text": "Use the tools to read files before you change them.",
     "cache_control": {"type": "ephemeral"}},
]


def test_test14_claude_code_shape_through_the_anthropic_sdk(gw, routed):
    """TEST-14, RT-11, RT-14, RT-21: max_tokens 32000 cut to the member's 8192; system blocks with cache_control
    forwarded as plain text; a reasoning-only member fails over as empty; text, then a tool_use block opened with
    `input: {}` and filled by exactly one input_json_delta; stop_reason tool_use; usage from the upstream's."""
    collection("ponder", "forecaster")
    sdk = anthropic_sdk(gw)
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is the weather in Oslo?",
                                              "cache_control": {"type": "ephemeral"}}]}]
    head, message, bench, events = anthropic_turn(sdk, True, max_tokens=32000, system=CLAUDE_CODE_SYSTEM,
                                                  messages=messages)
    assert bench["failed_over"] == [{"alias": "ponder", "error": "an empty reply"}] and bench["alias"] == "forecaster"
    assert head["x-bench-model"] == "forecaster"
    sent = asked(routed, "forecaster")[-1]
    assert sent["max_tokens"] == 8192 and asked(routed, "ponder")[-1]["max_tokens"] == 32000  # ponder: no cap
    assert sent["messages"][0] == {"role": "system", "content": "\n\n".join(b["text"] for b in CLAUDE_CODE_SYSTEM)}
    assert sent["messages"][1] == {"role": "user", "content": "What is the weather in Oslo?"}
    starts = [e.content_block for e in events if e.type == "content_block_start"]
    assert [b.type for b in starts] == ["text", "tool_use"]
    assert (starts[1].id, starts[1].name, starts[1].input) == ("call_oslo", "get_weather", {})
    json_deltas = [e.delta for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
    assert len(json_deltas) == 1 and json.loads(json_deltas[0].partial_json) == {"city": "Oslo"}
    assert [e.type for e in events if e.type == "thinking"] == []  # RT-21d: ponder's thoughts not shown
    said = "Let me check. " + json.dumps({"city": "Oslo"})  # what the upstream counts as its output
    usage = demo.usage(sent["messages"], said, "")
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (usage["prompt_tokens"],
                                                                        usage["completion_tokens"])
    use = message.content[1]
    messages += [{"role": "assistant", "content": [block.to_dict() for block in message.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": [
                     {"type": "text", "text": get_weather(**use.input)}]}]}]
    _, answer, bench2, _ = anthropic_turn(sdk, True, max_tokens=32000, system=CLAUDE_CODE_SYSTEM, messages=messages)
    assert answer.stop_reason == "end_turn" and answer.content[0].text == f"Tool results: {FORECAST}"
    assert bench2["alias"] == "forecaster" and "failed_over" not in bench2  # the conversation stays put
    sent = asked(routed)[-1]["messages"]
    assert sent[2]["content"] == "Let me check." and sent[2]["tool_calls"][0]["id"] == "call_oslo"
    assert sent[3] == {"role": "tool", "tool_call_id": "call_oslo", "content": FORECAST}
    assert members_asked(routed) == ["ponder", "forecaster", "forecaster"]


def test_test15_parallel_calls_arrive_whole(gw, routed):
    """TEST-15, ACC-2: interleaved deltas of two calls: Anthropic streams two input_json_deltas, each the whole
    arguments of its call; chat non-streamed has both calls under their own ids."""
    collection("twins")
    sdk = anthropic_sdk(gw)
    clock = {"name": "get_time", "input_schema": CLOCK["function"]["parameters"]}
    _, message, _, events = anthropic_turn(sdk, True, tools=[ANTHROPIC_WEATHER, clock],
                                           messages=[{"role": "user", "content": "Weather and time in Oslo?"}])
    json_deltas = [(e.index, json.loads(e.delta.partial_json)) for e in events
                   if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
    assert json_deltas == [(0, {"city": "Oslo"}), (1, {"zone": "Europe/Oslo"})]  # no text: the calls start at 0
    assert [(b.id, b.name, b.input) for b in message.content] == [
        ("call_a", "get_weather", {"city": "Oslo"}), ("call_b", "get_time", {"zone": "Europe/Oslo"})]
    reply = openai_sdk(gw).chat.completions.create(model=ROUTE, tools=[WEATHER, CLOCK], messages=[
        {"role": "user", "content": "Weather and time in Bergen?"}])
    calls = reply.choices[0].message.tool_calls
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("call_a", "get_weather", {"city": "Oslo"}), ("call_b", "get_time", {"zone": "Europe/Oslo"})]
    assert reply.choices[0].message.content is None and reply.choices[0].finish_reason == "tool_calls"
    sent = asked(routed)[-1]
    said = " ".join(["", json.dumps({"city": "Oslo"}), json.dumps({"zone": "Europe/Oslo"})])
    assert reply.usage.model_dump(exclude_none=True) == demo.usage(sent["messages"], said, "")  # verbatim (RT-21)


# ---------------------------------------------------------------- Gemini


def gemini_sdk(gw):
    return genai.Client(api_key="x", http_options=types.HttpOptions(base_url=gw, api_version="v1beta"))


GEMINI_WEATHER = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="get_weather", description="The weather now in a city",
    parameters=types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")}, required=["city"]))])


def gemini_config(mode="AUTO"):
    return types.GenerateContentConfig(tools=[GEMINI_WEATHER], tool_config=types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(mode=mode)))


def gemini_turn(sdk, contents, stream, mode="AUTO"):
    """One Gemini turn through the SDK: `(the model's Content, chunks, headers or None)`; streamed, the model's
    Content is the text said along the way then the last chunk's parts."""
    if not stream:
        reply = sdk.models.generate_content(model=ROUTE, contents=contents, config=gemini_config(mode))
        assert reply.model_version == ROUTE  # FMT-14: the model as asked
        return reply.candidates[0].content, [reply], reply.sdk_http_response.headers
    chunks = list(sdk.models.generate_content_stream(model=ROUTE, contents=contents, config=gemini_config(mode)))
    text = "".join(p.text or "" for c in chunks[:-1] for p in c.candidates[0].content.parts)
    last = chunks[-1].candidates[0].content.parts
    parts = ([types.Part(text=text)] if text else []) + list(last)
    return types.Content(role="model", parts=parts), chunks, None


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_gemini_sdk_tool_loop(gw, routed, stream):
    """RT-21 gemini, RT-21c, 11.8a: the functionCall reaches the SDK with the member's id and its args as an
    object; the functionResponse goes back under that id (kept both ways) and the answer uses it."""
    collection("forecaster", "understudy")
    sdk = gemini_sdk(gw)
    contents = [types.Content(role="user", parts=[types.Part(text="What is the weather in Oslo?")])]
    said, chunks, head = gemini_turn(sdk, contents, stream)
    assert said.parts[0].text == "Let me check."
    call = said.parts[1].function_call
    assert (call.id, call.name, call.args) == ("call_oslo", "get_weather", {"city": "Oslo"}) and len(said.parts) == 2
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    if head is not None:
        assert head["x-bench-model"] == "forecaster" and head["x-bench-call"] == head["x-bench-conversation"] + ".1"
        assert "x-bench-panel" not in head and "x-bench-seats" not in head
    contents += [said, types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
        id=call.id, name=call.name, response={"forecast": get_weather(**call.args)}))])]
    answer, chunks, head2 = gemini_turn(sdk, contents, stream)
    text = "".join(p.text or "" for p in answer.parts)
    assert FORECAST in text and text == "Tool results: " + json.dumps({"forecast": FORECAST})
    assert not any(p.function_call for p in answer.parts)
    if head2 is not None:
        assert head2["x-bench-model"] == "forecaster"
        assert head2["x-bench-conversation"] == head["x-bench-conversation"]
    sent = asked(routed)[-1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_oslo" and sent[2]["tool_call_id"] == "call_oslo"
    assert members_asked(routed) == ["forecaster", "forecaster"]
    lines = route_lines()
    assert [(line["alias"], line["turn"], line["tool_calls"]) for line in lines] == [("forecaster", 1, 1),
                                                                                   ("forecaster", 2, 0)]
    assert lines[0]["conversation"] == lines[1]["conversation"]


def test_gemini_sdk_runs_the_tool_itself(gw, routed):
    """11.8a, FMT-26: google-genai's automatic function calling (a Python function as the tool): the SDK runs
    the call it got and sends an id-less functionResponse, which the gateway matches to the member's call by name;
    the text it returns is the member's answer with the result."""
    collection("forecaster")
    sdk = gemini_sdk(gw)  # kept in a name: a collected client closes its connections
    chat = sdk.chats.create(model=ROUTE, config=types.GenerateContentConfig(tools=[get_weather]))
    reply = chat.send_message("What is the weather in Oslo?")
    assert reply.text == "Tool results: " + json.dumps({"result": FORECAST})
    history = chat.get_history()
    assert [c.role for c in history] == ["user", "model", "user", "model"]
    assert history[1].parts[1].function_call.id == "call_oslo" and history[2].parts[0].function_response.id is None
    first, second = asked(routed)
    assert first["tools"][0]["function"]["parameters"] == WEATHER_SCHEMA  # the SDK's schema of get_weather
    assert second["messages"][1]["tool_calls"][0]["id"] == second["messages"][2]["tool_call_id"] == "call_oslo"
    assert reply.sdk_http_response.headers["x-bench-model"] == "forecaster"


def test_test17_gemini_schema_mode_last_chunk_and_numbered_ids(gw, routed):
    """TEST-17, FMT-26: upper-case schema types lowered and mode ANY sent as `required`; the last SSE chunk's
    parts are exactly the functionCall (upstream id, parsed args); text deltas join to the text; the next turn's
    id-less functionCall/functionResponse pair reaches the member as `call_0` on both sides."""
    collection("forecaster")
    sdk = gemini_sdk(gw)
    contents = [types.Content(role="user", parts=[types.Part(text="Weather in Oslo, please.")])]
    status, head, data = exchange(gw, f"/v1beta/models/{ROUTE}:streamGenerateContent?alt=sse", {
        "contents": [{"role": "user", "parts": [{"text": "Weather in Oslo, please."}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {
            "type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}})
    assert status == 200 and head["content-type"].startswith("text/event-stream")
    chunks = sse_data(data)
    assert chunks[-1]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"id": "call_oslo", "name": "get_weather", "args": {"city": "Oslo"}}}]
    assert "".join(p["text"] for c in chunks[:-1] for p in c["candidates"][0]["content"]["parts"]) == "Let me check."
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "bench" not in chunks[-1]
    sent = asked(routed)[-1]
    assert sent["tools"] == [{"type": "function", "function": {"name": "get_weather", "description": "", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    assert sent["tool_choice"] == "required"
    said, _, _ = gemini_turn(sdk, contents, True, mode="ANY")  # the same through the SDK
    assert said.parts[-1].function_call.args == {"city": "Oslo"}
    function = asked(routed)[-1]["tools"][0]["function"]  # the SDK's types.Schema(type="OBJECT") too
    assert function["parameters"] == WEATHER_SCHEMA and asked(routed)[-1]["tool_choice"] == "required"
    contents += [types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
                     name="get_weather", args={"city": "Oslo"}))]),
                 types.Content(role="user", parts=[types.Part.from_function_response(
                     name="get_weather", response={"forecast": FORECAST})])]
    answer, _, head = gemini_turn(sdk, contents, False)
    assert answer.parts[0].text == "Tool results: " + json.dumps({"forecast": FORECAST})
    sent = asked(routed)[-1]["messages"]
    assert sent[1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_0", "content": json.dumps({"forecast": FORECAST})}
    assert head["x-bench-model"] == "forecaster"


# ---------------------------------------------------------------- Ollama


def ollama_turn(sdk, messages, stream):
    """One `/api/chat` turn through the library: `(the assistant Message, every part)`; streamed, the text of
    the parts joined and the calls of the part that carries them."""
    if not stream:
        reply = sdk.chat(model=ROUTE, messages=messages, tools=[WEATHER])
        assert reply.done and reply.done_reason == "stop" and reply.model == ROUTE
        return reply.message, [reply]
    parts = list(sdk.chat(model=ROUTE, messages=messages, tools=[WEATHER], stream=True))
    assert [p.done for p in parts].count(True) == 1 and parts[-1].done and parts[-1].done_reason == "stop"
    calls = [c for p in parts for c in p.message.tool_calls or ()]
    message = ollama.Message(role="assistant", content="".join(p.message.content or "" for p in parts),
                             tool_calls=calls or None)
    return message, parts


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_ollama_sdk_tool_loop(gw, routed, stream):
    """RT-21 ollama_chat, FMT-26, 11.8a: the call arrives without an id, arguments as an object; the library sends
    it back with a `tool` message naming the tool, which the gateway numbers `call_0` on both sides; the answer
    uses the result; both turns on one member, one conversation (routes.jsonl: the library drops `bench`)."""
    collection("forecaster", "understudy")
    sdk = ollama.Client(host=gw)
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    message, parts = ollama_turn(sdk, messages, stream)
    assert message.content == "Let me check."
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [("get_weather", {"city": "Oslo"})]
    if stream:  # the calls ride on one line of their own, just before the done line (RT-21)
        assert parts[-2].message.tool_calls and not parts[-2].done and not parts[-1].message.tool_calls
    messages += [message, {"role": "tool", "tool_name": "get_weather",
                           "content": get_weather(**message.tool_calls[0].function.arguments)}]
    answer, _ = ollama_turn(sdk, messages, stream)
    assert answer.content == f"Tool results: {FORECAST}" and not answer.tool_calls
    sent = asked(routed)[-1]["messages"]
    assert sent[1] == {"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_0", "content": FORECAST}
    assert members_asked(routed) == ["forecaster", "forecaster"]
    lines = route_lines()
    assert [(line["alias"], line["turn"]) for line in lines] == [("forecaster", 1), ("forecaster", 2)]
    assert lines[0]["conversation"] == lines[1]["conversation"] and lines[0]["call"] == lines[1]["call"]


def test_test18_ollama_route_shapes_on_the_wire(gw, routed):
    """TEST-18: non-streamed `message.tool_calls` is exactly `[{"function": {"name", "arguments": {...}}}]`;
    streamed, a tool_calls line then the done line with `bench`; a `tool` message with `tool_name` is matched."""
    collection("forecaster")
    body = {"model": ROUTE, "tools": [WEATHER], "messages": [{"role": "user", "content": "Weather in Oslo?"}]}
    status, head, data = exchange(gw, "/api/chat", {**body, "stream": False})
    reply = json.loads(data)
    assert status == 200 and reply["message"]["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]
    assert reply["message"]["content"] == "Let me check." and reply["done"] is True
    assert head["x-bench-model"] == "forecaster" and reply["bench"]["alias"] == "forecaster"
    status, head, data = exchange(gw, "/api/chat", {**body, "stream": True})
    lines = [json.loads(line) for line in data.decode().splitlines()]
    assert status == 200 and head["content-type"] == "application/x-ndjson"
    assert lines[-2]["message"] == {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]} and lines[-2]["done"] is False
    assert lines[-1]["done"] is True and lines[-1]["bench"]["turn"] == 2 and "tool_calls" not in lines[-1]["message"]
    assert "".join(line["message"]["content"] for line in lines) == "Let me check."
    later = body["messages"] + [reply["message"], {"role": "tool", "tool_name": "get_weather", "content": FORECAST}]
    status, _, data = exchange(gw, "/api/chat", {**body, "messages": later, "stream": False})
    assert status == 200 and json.loads(data)["message"]["content"] == f"Tool results: {FORECAST}"
    sent = asked(routed)[-1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == sent[2]["tool_call_id"] == "call_0"
    collection("twins")  # two calls; their results come back in the other order, matched by tool_name
    sdk = ollama.Client(host=gw)
    messages = [{"role": "user", "content": "Weather and time in Oslo?"}]
    reply = sdk.chat(model=ROUTE, messages=messages, tools=[WEATHER, CLOCK])
    assert [c.function.name for c in reply.message.tool_calls] == ["get_weather", "get_time"]
    messages += [reply.message, {"role": "tool", "tool_name": "get_time", "content": "14:00"},
                 {"role": "tool", "tool_name": "get_weather", "content": FORECAST}]
    answer = sdk.chat(model=ROUTE, messages=messages, tools=[WEATHER, CLOCK])
    assert answer.message.content == f"Tool results: 14:00; {FORECAST}"
    sent = asked(routed, "twins")[-1]["messages"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["call_0", "call_1"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[2:]] == [("call_1", "14:00"), ("call_0", FORECAST)]


# ---------------------------------------------------------------- OpenAI Responses


RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA},  # no description
    {"type": "custom", "name": "apply_patch", "description": "Apply a patch to the files",
     "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/'}},
]


def responses_turn(sdk, items, stream):
    """One Responses turn through the SDK: `(headers, the completed Response, the events or [])`."""
    raw = sdk.responses.with_raw_response.create(model=ROUTE, input=items, tools=RESPONSES_TOOLS, stream=stream)
    if not stream:
        return raw.headers, raw.parse(), []
    events = list(raw.parse())
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    return raw.headers, events[-1].response, events


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_test16_responses_function_and_custom_tools(gw, routed, stream):
    """TEST-16, RT-21b, 11.8a: the function tool goes out with `description: ""`, the custom one as one required
    string `input` with its grammar in the description; the reply is a message, a function_call (call_id = the
    member's id) and a custom_tool_call with the raw input; both outputs go back, the custom call as
    `{"input": ...}` arguments, and the answer uses both results."""
    collection("patcher", "understudy")
    sdk = openai_sdk(gw)
    items = [{"role": "user", "content": "Check the weather, then fix parser.py"}]
    head, response, events = responses_turn(sdk, items, stream)
    sent = asked(routed)[-1]
    weather, patch = sent["tools"]
    assert weather == {"type": "function", "function": {"name": "get_weather", "description": "",
                                                        "parameters": WEATHER_SCHEMA}}
    assert patch["function"]["parameters"]["required"] == ["input"]
    assert patch["function"]["parameters"]["properties"]["input"]["type"] == "string"
    assert patch["function"]["description"].startswith("Apply a patch to the files")
    assert RESPONSES_TOOLS[1]["format"]["definition"] in patch["function"]["description"]
    assert [item.type for item in response.output] == ["message", "function_call", "custom_tool_call"]
    assert response.output_text == "Patching." and response.status == "completed"
    call, custom = response.output[1], response.output[2]
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_fn", "get_weather", {"city": "Oslo"})
    assert (custom.call_id, custom.name, custom.input) == ("call_patch", "apply_patch", CUSTOM_INPUT)
    assert call.id.startswith("fc_") and custom.id.startswith("ctc_")
    assert head["x-bench-model"] == "patcher"
    bench = response.model_extra["bench"]
    assert (bench["alias"], bench["turn"], bench["conversation"]) == ("patcher", 1, head["x-bench-conversation"])
    if stream:
        kinds = [e.type for e in events]
        assert kinds[:2] == ["response.created", "response.in_progress"]
        added = [e.item.type for e in events if e.type == "response.output_item.added"]
        assert added == ["message", "function_call", "custom_tool_call"]
        done = [e for e in events if e.type == "response.function_call_arguments.done"]
        assert len(done) == 1 and json.loads(done[0].arguments) == {"city": "Oslo"} and done[0].item_id == call.id
        assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Patching."
    items += [item.model_dump(exclude_none=True) for item in response.output]
    items += [{"type": "function_call_output", "call_id": call.call_id, "output": get_weather(city="Oslo")},
              {"type": "custom_tool_call_output", "call_id": custom.call_id, "output": "patched parser.py"}]
    head2, answer, _ = responses_turn(sdk, items, stream)
    assert answer.output_text == f"Tool results: {FORECAST}; patched parser.py"
    assert [item.type for item in answer.output] == ["message"]
    assert (head2["x-bench-model"], head2["x-bench-conversation"]) == ("patcher", head["x-bench-conversation"])
    assert answer.model_extra["bench"]["turn"] == 2
    sent = asked(routed)[-1]["messages"]
    assert sent[1] == {"role": "assistant", "content": "Patching.", "tool_calls": [
        {"id": "call_fn", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        {"id": "call_patch", "type": "function", "function": {
            "name": "apply_patch", "arguments": json.dumps({"input": CUSTOM_INPUT})}}]}
    assert sent[2:] == [{"role": "tool", "tool_call_id": "call_fn", "content": FORECAST},
                        {"role": "tool", "tool_call_id": "call_patch", "content": "patched parser.py"}]
    assert members_asked(routed) == ["patcher", "patcher"]


# ---------------------------------------------------------------- chat streams as sent (RT-21, TEST-11, TEST-19)


@pytest.mark.parametrize("member", ["forecaster", "twins", "tardy"])
def test_rt21_chat_stream_relays_each_tool_call_delta_as_the_member_sent_it(gw, routed, member):
    """RT-21 chat, TEST-11, ACC-2: every tool-call delta reaches the client exactly as the member streamed it
    (heads, argument pieces, interleaved or with a late id), in chunks under the member's own id, with its
    finish and usage-only chunks; the SDK assembles the same calls the gateway assembles when not streaming."""
    collection(member)
    body = {"model": ROUTE, "stream": True, "tools": [WEATHER, CLOCK],
            "messages": [{"role": "user", "content": f"Weather in Oslo ({member})?"}]}
    status, head, data = exchange(gw, "/v1/chat/completions", body)
    chunks = sse_data(data)
    assert status == 200 and head["x-bench-model"] == member
    relayed = [c["choices"][0]["delta"] for c in chunks if c["choices"] and "tool_calls" in c["choices"][0]["delta"]]
    expected = expected_deltas(routed, member)
    assert relayed == expected and len(expected) >= 4  # each call's head and its argument pieces, one per chunk
    if member == "twins":  # interleaved: both heads first, then the pieces by turns
        assert [d["tool_calls"][0]["index"] for d in relayed[:3]] == [0, 1, 0]
    if member == "tardy":
        assert "id" not in relayed[0]["tool_calls"][0] and relayed[1]["tool_calls"][0]["id"] == "call_late"
    upstream_ids = {c["id"] for c in chunks[:-1]}
    assert len(upstream_ids) == 1 and upstream_ids.pop().startswith("chatcmpl-demo")  # the member's stream id
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]] \
        == ["tool_calls"]
    usage_only = [c for c in chunks[:-1] if c["choices"] == []]
    assert len(usage_only) == 1 and usage_only[0]["usage"]["completion_tokens"] > 0
    assert all(c["model"] == "bench/core" and c["object"] == "chat.completion.chunk" for c in chunks)
    script = [(s["id"], s["name"], json.dumps(s["arguments"])) for s in routed.models[member]["tool_calls"][0]]
    sdk = openai_sdk(gw)
    with sdk.chat.completions.stream(model=ROUTE, tools=[WEATHER, CLOCK], messages=[
            {"role": "user", "content": f"Again, streamed ({member})"}]) as running:  # the SDK's own accumulator
        streamed = running.get_final_completion().choices[0]
    plain = sdk.chat.completions.create(model=ROUTE, tools=[WEATHER, CLOCK], messages=[
        {"role": "user", "content": f"Again, whole ({member})"}]).choices[0]  # assembled by the gateway
    for choice in (streamed, plain):
        assert choice.finish_reason == "tool_calls"
        assert [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls] == script


def test_test19_a_whole_json_reply_is_relayed_as_one_chunk(gw, routed):
    """TEST-19, RT-12: a member that answers a stream request with one plain JSON body: its reply goes out as one
    chunk (the tool call at index 0 inside it), then the bench; the SDKs get the call, streamed and not."""
    collection("monolith")
    status, head, data = exchange(gw, "/v1/chat/completions", {
        "model": ROUTE, "stream": True, "tools": [WEATHER],
        "messages": [{"role": "user", "content": "Weather in Oslo?"}]})
    chunks = sse_data(data)
    assert status == 200 and len(chunks) == 2 and chunks[1]["choices"] == []
    assert chunks[1]["bench"]["alias"] == "monolith" and head["x-bench-model"] == "monolith"
    choice = chunks[0]["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["delta"]["tool_calls"] == [
        {"index": 0, "id": "call_whole", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]
    assert asked(routed)[-1]["stream"] is True  # it was asked to stream, and did not
    _, message, _ = openai_turn(openai_sdk(gw), [{"role": "user", "content": "Weather in Bergen?"}], True)
    assert [(c["id"], c["function"]["arguments"]) for c in message["tool_calls"]] == [
        ("call_whole", '{"city": "Oslo"}')]
    _, message, bench, events = anthropic_turn(anthropic_sdk(gw), True,
                                               messages=[{"role": "user", "content": "Weather in Tromsø?"}])
    assert [(b.type, b.id, b.input) for b in message.content] == [("tool_use", "call_whole", {"city": "Oslo"})]
    assert bench["alias"] == "monolith"


# ---------------------------------------------------------------- failover, rate limits (RT-15, RT-17)


def test_rt15_a_rate_limited_member_is_replaced_unseen_through_the_sdks(gw, routed):
    """RT-12, RT-15, RT-26: the first member 429s on its first turn; the SDK sees only the second member's call,
    and the reply names who answered and who was passed over; the next turn stays with the one that answered,
    and a new conversation starts on it too while the 429 cools the first one down (RT-6)."""
    collection("flaky", "forecaster")
    sdk = openai_sdk(gw)
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    head, message, bench = openai_turn(sdk, messages, False)
    assert message["tool_calls"][0]["id"] == "call_oslo" and head["x-bench-model"] == "forecaster"
    assert bench["alias"] == "forecaster" and [f["alias"] for f in bench["failed_over"]] == ["flaky"]
    assert "429" in bench["failed_over"][0]["error"]
    messages += [message, {"role": "tool", "tool_call_id": "call_oslo", "content": FORECAST}]
    head, answer, bench2 = openai_turn(sdk, messages, True)
    assert answer["content"] == f"Tool results: {FORECAST}" and head["x-bench-model"] == "forecaster"
    assert "failed_over" not in bench2 and bench2["conversation"] == bench["conversation"]
    assert members_asked(routed) == ["flaky", "forecaster", "forecaster"]  # no retry before a failover
    with anthropic_sdk(gw).messages.stream(model=ROUTE, max_tokens=100, tools=[ANTHROPIC_WEATHER], messages=[
            {"role": "user", "content": "A new conversation"}]) as running:
        message = running.get_final_message()
    assert running.response.headers["x-bench-model"] == "forecaster"  # RT-6: flaky cools down, so it goes last
    assert [b.type for b in message.content] == ["text", "tool_use"] and message.content[1].id == "call_oslo"
    assert members_asked(routed)[3:] == ["forecaster"]


def test_rt17_every_member_rate_limited_is_the_sdks_rate_limit_error(gw, routed):
    """RT-17: when every member tried was rate-limited the SDK raises its RateLimitError: status 429, the
    message names each member, and the raw response carries Retry-After."""
    collection("limited", "limited2")
    with pytest.raises(openai.RateLimitError) as caught:
        openai_sdk(gw).chat.completions.create(model=ROUTE, tools=[WEATHER],
                                               messages=[{"role": "user", "content": "Weather in Oslo?"}])
    error = caught.value
    assert error.status_code == 429 and int(error.response.headers["retry-after"]) >= 1
    assert error.body["message"].startswith("no member of bench/core answered: limited: Error: Error code: 429")
    assert "; limited2: Error: Error code: 429" in error.body["message"]
    with pytest.raises(anthropic.RateLimitError) as caught:
        with anthropic_sdk(gw).messages.stream(model=ROUTE, max_tokens=100, tools=[ANTHROPIC_WEATHER],
                                               messages=[{"role": "user", "content": "Weather in Oslo?"}]) as running:
            list(running)
    assert caught.value.status_code == 429 and int(caught.value.response.headers["retry-after"]) >= 1
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert "x-bench-conversation" in caught.value.response.headers  # improvement 13: the conversation is known
    assert route_lines()[-1]["error"] == "every member failed"


# ---------------------------------------------------------------- an agent loop, end to end


def test_agent_loop_completes_a_multi_step_task_on_one_model(gw, routed):
    """The whole point of route mode: an ordinary agent loop over the OpenAI SDK runs tools until the model
    stops calling them: add(2, 3), then multiply(5, 4), then the answer; three turns, one model, one conversation."""
    collection("calculator", "understudy")
    sdk = openai_sdk(gw)
    tools = {"add": lambda a, b: a + b, "multiply": lambda a, b: a * b}
    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
              "required": ["a", "b"]}
    definitions = [{"type": "function", "function": {"name": name, "description": f"{name} two numbers",
                                                     "parameters": schema}} for name in tools]
    messages = [{"role": "system", "content": "Use the tools for arithmetic."},
                {"role": "user", "content": "What is (2 + 3) * 4?"}]
    turns, ran = [], []
    while len(turns) < 6:
        raw = sdk.chat.completions.with_raw_response.create(model=ROUTE, messages=messages, tools=definitions)
        reply = raw.parse()
        turns.append((raw.headers["x-bench-model"], raw.headers["x-bench-conversation"], reply.model_extra["bench"]))
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            result = tools[call.function.name](**arguments)
            ran.append((call.function.name, arguments, result))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    assert ran == [("add", {"a": 2, "b": 3}, 5), ("multiply", {"a": 5, "b": 4}, 20)]
    assert "20" in message.content and message.content == "Tool results: 5; 20"
    assert len(turns) == 3 and {t[0] for t in turns} == {"calculator"} and len({t[1] for t in turns}) == 1
    assert [t[2]["turn"] for t in turns] == [1, 2, 3] and {t[2]["call"] for t in turns} == {turns[0][1] + ".1"}
    assert members_asked(routed) == ["calculator"] * 3
    lines = route_lines()
    assert [line["tool_calls"] for line in lines] == [1, 1, 0] and [line["status"] for line in lines] == ["ok"] * 3


# ---------------------------------------------------------------- structured output (issue 30 items 1 and 2)


class Forecast(pydantic.BaseModel):
    city: str
    celsius: int
    rain: bool


def test_anthropic_parse_with_an_output_format_gets_its_schema_through(gw, routed):
    """`messages.parse(output_format=...)` sends `output_config.format`; the member is asked for that schema as
    `response_format`, answers JSON, and the SDK parses it into the model."""
    collection("shaper")
    parsed = anthropic_sdk(gw).messages.parse(model=ROUTE, max_tokens=512, output_format=Forecast,
                                              messages=[{"role": "user", "content": "The weather in Oslo?"}])
    # the demo's schema model draws each leaf from the prompt: the whole text for a string, 1 with no number in it
    assert parsed.parsed_output == Forecast(city="The weather in Oslo?", celsius=1, rain=True)
    sent = asked(routed, "shaper")[-1]["response_format"]
    assert sent["type"] == "json_schema" and set(sent["json_schema"]["schema"]["properties"]) == {"city", "celsius",
                                                                                                 "rain"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_ollama_generate_honours_format_in_route_mode(gw, routed, stream):
    """`/api/generate` passes `format` on as `/api/chat` does: a schema, and `json`."""
    collection("shaper")
    sdk = ollama.Client(host=gw)
    drawn = Forecast(city="The weather in Oslo?", celsius=1, rain=True)
    for shape, expected in ((Forecast.model_json_schema(), drawn), ("json", {"answer": None})):
        parts = sdk.generate(model=ROUTE, prompt="The weather in Oslo?", format=shape, stream=stream)
        text = "".join(p.response for p in parts) if stream else parts.response
        if shape == "json":  # a JSON object, whatever its answer says
            assert set(json.loads(text)) == set(expected)
        else:
            assert Forecast.model_validate_json(text) == expected
        sent = asked(routed, "shaper")[-1]["response_format"]
        assert sent == ({"type": "json_object"} if shape == "json" else
                        {"type": "json_schema", "json_schema": {"name": "response", "schema": shape}})
