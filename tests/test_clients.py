"""Real clients beyond the SDKs (issue 16 item 5): a panel reply's `usage`, the final usage chunk of a stream
that asks for it, and the `llm` CLI with the gateway registered as an OpenAI-compatible model. Issue 30: the
same panel asked through all six APIs counts the same usage, and the fields a panel does not apply are noted."""

import json
import os
import subprocess

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import types

from benchwarmers.core import images
from benchwarmers.demo import demo
from benchwarmers.wire import chat

QUESTION = "Is x = x + 1 right?"


@pytest.fixture
def core(server):
    demo.set_collection("core", ["alpha", "beta"])


def sdk(gateway):
    return openai.OpenAI(base_url=gateway + "/v1", api_key="unused", max_retries=0)


def test_usage_is_the_seats_own_counts_summed(gateway, core):
    reply = sdk(gateway).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": QUESTION}])
    seats = reply.model_extra["bench"]["seats"]
    assert all(s["usage"]["completion_tokens"] > 0 for s in seats)  # the upstream counted each seat's tokens
    assert reply.usage.prompt_tokens == sum(s["usage"]["prompt_tokens"] for s in seats)
    assert reply.usage.completion_tokens == sum(s["usage"]["completion_tokens"] for s in seats)
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_usage_is_estimated_where_no_count_was_given():
    """A seat without counts is estimated (prompt and answer); a failed one that counted nothing adds nothing;
    the merger read the prompt and every answer."""
    bench = {"seats": [{"status": "ok", "answer": "a" * 400, "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
                       {"status": "ok", "answer": "b" * 400},
                       {"status": "error", "answer": ""}],
             "merger": {"status": "ok", "answer": "c" * 40}}
    usage = chat.panel_usage(bench, 50)
    answers = 2 * images.estimate("a" * 400)
    assert usage["prompt_tokens"] == 7 + 50 + 0 + (50 + answers)
    assert usage["completion_tokens"] == 3 + images.estimate("b" * 400) + images.estimate("c" * 40)


def test_include_usage_ends_the_stream_with_a_usage_chunk(gateway, core):
    client = sdk(gateway)
    messages = [{"role": "user", "content": QUESTION}]
    chunks = list(client.chat.completions.create(model="bench/core", messages=messages, stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])
    plain = client.chat.completions.create(model="bench/core", messages=messages)
    assert chunks[-1].usage.prompt_tokens == plain.usage.prompt_tokens  # the same seats, the same counts
    without = list(client.chat.completions.create(model="bench/core", messages=messages, stream=True))
    assert all(c.usage is None and c.choices for c in without)


def test_llm_cli_streamed_and_not(gateway, core, llmdir, bench):
    """`llm -m` with the gateway as an OpenAI-compatible model: `--no-stream` reads `usage` (it failed without)."""
    (llmdir / "extra-openai-models.yaml").write_text(
        f"- model_id: panel\n  model_name: bench/core\n  api_base: {gateway}/v1\n", encoding="utf-8")
    env = {**os.environ, "OPENAI_API_KEY": "unused"}
    for extra in ([], ["--no-stream"]):
        done = subprocess.run(["llm", "-m", "panel", *extra, QUESTION], capture_output=True, text=True, env=env,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert bench.answer_for("alpha", QUESTION) in done.stdout and "## member" in done.stdout
    logged = subprocess.run(["llm", "logs", "-n", "1", "--json"], capture_output=True, text=True, env=env)
    assert json.loads(logged.stdout)[0]["input_tokens"] > 0  # the usage llm recorded is the panel's


def six_usages(gateway, stream):
    """`(input, output)` of one panel asked through each of the six APIs' own clients."""
    said = [{"role": "user", "content": QUESTION}]
    openai_sdk = sdk(gateway)
    claude = anthropic.Anthropic(base_url=gateway, api_key="x", max_retries=0)
    google = genai.Client(api_key="x", http_options=types.HttpOptions(base_url=gateway))
    local = ollama.Client(host=gateway)
    if not stream:
        chat_usage = openai_sdk.chat.completions.create(model="bench/core", messages=said).usage
        completion = openai_sdk.completions.create(model="bench/core", prompt=QUESTION).usage
        responses = openai_sdk.responses.create(model="bench/core", input=QUESTION).usage
        message = claude.messages.create(model="bench/core", max_tokens=1024, messages=said).usage
        gemini = google.models.generate_content(model="bench/core", contents=QUESTION).usage_metadata
        chatted, generated = local.chat(model="bench/core", messages=said), local.generate(model="bench/core",
                                                                                          prompt=QUESTION)
        return {"chat": (chat_usage.prompt_tokens, chat_usage.completion_tokens),
                "completions": (completion.prompt_tokens, completion.completion_tokens),
                "responses": (responses.input_tokens, responses.output_tokens),
                "anthropic": (message.input_tokens, message.output_tokens),
                "gemini": (gemini.prompt_token_count, gemini.candidates_token_count),
                "ollama chat": (chatted.prompt_eval_count, chatted.eval_count),
                "ollama generate": (generated.prompt_eval_count, generated.eval_count)}
    chunks = list(openai_sdk.chat.completions.create(model="bench/core", messages=said, stream=True,
                                                     stream_options={"include_usage": True}))
    events = list(openai_sdk.responses.create(model="bench/core", input=QUESTION, stream=True))
    with claude.messages.stream(model="bench/core", max_tokens=1024, messages=said) as running:
        message = running.get_final_message().usage
    gemini = list(google.models.generate_content_stream(model="bench/core", contents=QUESTION))[-1].usage_metadata
    chatted = list(local.chat(model="bench/core", messages=said, stream=True))[-1]
    generated = list(local.generate(model="bench/core", prompt=QUESTION, stream=True))[-1]
    return {"chat": (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens),
            "responses": (events[-1].response.usage.input_tokens, events[-1].response.usage.output_tokens),
            "anthropic": (message.input_tokens, message.output_tokens),
            "gemini": (gemini.prompt_token_count, gemini.candidates_token_count),
            "ollama chat": (chatted.prompt_eval_count, chatted.eval_count),
            "ollama generate": (generated.prompt_eval_count, generated.eval_count)}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_one_panel_counts_the_same_usage_through_every_api(gateway, core, stream):
    """Issue 30 item 5: every API counts a panel as chat completions does: the seats' own tokens, summed."""
    counted = six_usages(gateway, stream)
    assert len(set(counted.values())) == 1, counted
    reply = sdk(gateway).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": QUESTION}])
    seats = reply.model_extra["bench"]["seats"]
    assert counted["chat"] == (sum(s["usage"]["prompt_tokens"] for s in seats),
                               sum(s["usage"]["completion_tokens"] for s in seats))


def test_fields_a_panel_does_not_apply_are_noted(gateway, core):
    """Issue 30 item 6: `max_tokens` and `n` reach no seat; the reply says so, and where they are applied."""
    reply = sdk(gateway).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": QUESTION}],
                                                max_tokens=10, n=3)
    assert len(reply.choices) == 1
    assert reply.model_extra["bench"]["notes"] == [
        "not applied by a panel: max_tokens, n; each seat answers once with its own options, so the reply is one "
        "choice of any length; to have them applied ask one member with route mode (bench/core:route)"]
    plain = sdk(gateway).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": QUESTION}],
                                                n=1, temperature=0)
    assert plain.model_extra["bench"]["notes"][0].startswith("not applied by a panel: temperature;")
