"""Real clients beyond the SDKs (issue 16 item 5): a panel reply's `usage`, the final usage chunk of a stream
that asks for it, and the `llm` CLI with the gateway registered as an OpenAI-compatible model."""

import json
import os
import subprocess

import openai
import pytest

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
    answers = 2 * chat.images.estimate("a" * 400)
    assert usage["prompt_tokens"] == 7 + 50 + 0 + (50 + answers)
    assert usage["completion_tokens"] == 3 + chat.images.estimate("b" * 400) + chat.images.estimate("c" * 40)


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
