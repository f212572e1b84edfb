"""Route mode's point, shown on the demo bench (issue 30 item 8): real agent frameworks, the OpenAI Agents SDK
and pydantic-ai, run an agent with a tool against `bench/agents` (a route collection) of the real gateway in
front of the demo upstream, streamed and not. The demo's `fetcher` calls the first tool it is offered with
arguments drawn from the prompt and answers from the tool's result; `fetcher` and `clerk` answer a requested
JSON schema with JSON that fits it. Nothing is mocked, and nothing leaves the machine (tracing is off)."""

import asyncio
import subprocess
import sys

import pydantic
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from benchwarmers.core import paths
from benchwarmers.demo import demo
from benchwarmers.models import catalog
from conftest import running_gateway

PROMPT = "What is the weather in Oslo?"
FORECAST = "Oslo: 7 C and rain"


class Forecast(pydantic.BaseModel):
    city: str
    celsius: int
    rain: bool


@pytest.fixture
def bench(home, monkeypatch):
    """The demo's bench (`start_demo`) behind the real gateway: its base URL; the demo folder thrown away after."""
    for name in ("BENCHWARMERS_HOME", "BENCH_CLIENT", "BENCHWARMERS_DEMO"):
        monkeypatch.setenv(name, "")  # start_demo sets them: monkeypatch puts back what they were
    up = demo.start_demo()
    try:
        catalog.warm(refresh=True)
        with running_gateway() as srv:
            yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        demo.stop_demo(up)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_openai_agents_sdk_agent_calls_its_tool_on_the_demo(bench, stream):
    set_tracing_disabled(True)
    cities = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather now in a city."""
        cities.append(city)
        return FORECAST

    model = OpenAIChatCompletionsModel(model="bench/agents", openai_client=AsyncOpenAI(base_url=bench, api_key="x"))
    agent = Agent(name="weather", instructions="Answer with the tool.", tools=[get_weather], model=model)

    async def run():
        if not stream:
            return (await Runner.run(agent, PROMPT)).final_output
        result = Runner.run_streamed(agent, PROMPT)
        async for _ in result.stream_events():
            pass
        return result.final_output

    assert asyncio.run(run()) == f"get_weather says: {FORECAST}"
    assert cities == ["Oslo"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_pydantic_ai_agent_calls_its_tool_on_the_demo(bench, stream):
    cities = []

    def get_weather(city: str) -> str:
        """The weather now in a city."""
        cities.append(city)
        return FORECAST

    model = OpenAIChatModel("bench/agents", provider=OpenAIProvider(base_url=bench, api_key="x"))
    agent = PydanticAgent(model, tools=[get_weather])

    async def run():
        if not stream:
            return (await agent.run(PROMPT)).output
        async with agent.run_stream(PROMPT) as result:
            return await result.get_output()

    assert asyncio.run(run()) == f"get_weather says: {FORECAST}"
    assert cities == ["Oslo"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_json_schema_is_answered_with_json_that_fits_it(bench, stream):
    """The Agents SDK asks for its output type as a strict JSON schema; whichever member answers, it fits."""
    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(model="bench/agents", openai_client=AsyncOpenAI(base_url=bench, api_key="x"))
    agent = Agent(name="forecast", instructions="Give the forecast.", output_type=Forecast, model=model)

    async def run():
        if not stream:
            return (await Runner.run(agent, "city: Oslo, 7 degrees and rain")).final_output
        result = Runner.run_streamed(agent, "city: Oslo, 7 degrees and rain")
        async for _ in result.stream_events():
            pass
        return result.final_output

    assert asyncio.run(run()) == Forecast(city="Oslo", celsius=7, rain=True)


def test_the_docs_agent_snippet_runs_against_the_demo(bench):
    """The Agents SDK snippet of docs/clients/agents.md, as printed there, in its own process, the test gateway in
    its URL."""
    text = (paths.CODE / "docs" / "clients" / "agents.md").read_text(encoding="utf-8")
    start = text.index("```python\nimport asyncio\nfrom agents import") + len("```python\n")
    lines = text[start:text.index("```", start)].splitlines()
    code = "\n".join(lines).replace("http://127.0.0.1:8122/v1", bench)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "get_weather says: Oslo: 7 C and rain"
