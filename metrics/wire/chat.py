"""OpenAI chat completions, the gateway's own format (gateway.md §6 ASK-1, §10 STR-10..12).

`ask(body)` reads a request into an Ask; `reply()` and `Stream` write the answer;
`panel_usage()` is the reply's `usage` (issue 16, beside STR-10/11, which had none: the `llm` CLI and
other OpenAI clients read it): the seats' and the merger's tokens summed, as every API counts a panel
(`common.panel_tokens`, issue 30). With `stream_options.include_usage`
the stream ends with the usage-only chunk the OpenAI API sends (empty `choices`) before `[DONE]`;
`error_body()` is the refusal shape shared with legacy completions. The other
formats (Anthropic, Responses, Ollama, Gemini, beside this module) provide the
same pieces; `common.bench_fields()` and `common.options()` are the checks and
readings every body gets (formats.md FMT-10, §3.2).
"""

import functools
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any

from . import common, schemas
from .schemas import INT, MODEL, STR, arr, described, maybe, obj
from .common import Body, Write
from .turn import Turn

LEGACY_FUNCTIONS = ('legacy "functions" / "function_call" fields are not supported; '
                    'send "tools" and "tool_calls" instead')


def ask(body: Body) -> common.Ask:
    """The Ask of a chat completions body (ASK-1), or `Unsupported` with why."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise common.Unsupported('"messages" must be a list of message objects')
    if "functions" in body or "function_call" in body or any(
            m.get("role") == "function" or "function_call" in m for m in messages):
        raise common.Unsupported(LEGACY_FUNCTIONS)
    upstream = {k: v for k, v in body.items()
                if k not in ("model", "messages", "stream", "stream_options", "with", "bench")}
    options = body.get("stream_options")
    wants = bool(body.get("stream")) and isinstance(options, dict) and options.get("include_usage") is True
    return common.make_ask(body, messages, body.get("stream"), {}, upstream, include_usage=wants)


def completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(12)


def usage_of(tokens: tuple[int, int]) -> dict[str, int]:
    """`{prompt_tokens, completion_tokens, total_tokens}` of `(input, output)`."""
    return {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)}


def panel_usage(bench: Body, tokens_in: int) -> dict[str, int]:
    """The panel's `usage`, summed over the seats and the merger (`common.panel_tokens`, module docstring)."""
    return usage_of(common.panel_tokens(bench, tokens_in))


def reply(content: str, shown: str, bench: Body, usage: Body) -> Body:
    """The non-streamed reply (STR-11, with `usage`), `bench` beside `choices`."""
    return {"id": completion_id(), "object": "chat.completion", "created": int(time.time()), "model": shown,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": usage, "bench": bench}


def error_body(status: int, message: str) -> Body:
    """STR-12: the refusal shape for chat completions, legacy completions and `/bench/*`."""
    return {"error": {"message": message, "type": "bench_gateway", "code": status}}


class Stream:
    """The chat completions stream writer (STR-1, STR-10). `write(bytes)` raises once the client is gone."""

    content_type = "text/event-stream"

    def __init__(self, write: Write, shown: str, tokens_in: int = 0, include_usage: bool = False) -> None:
        self.write = write
        self.id = completion_id()
        self.created = int(time.time())
        self.shown = shown
        self.tokens_in = tokens_in
        self.include_usage = include_usage

    def _chunk(self, delta: Body, finish: str | None = None, **extra: Any) -> None:
        chunk = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.shown,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        self._event(chunk)

    def _event(self, payload: Body) -> None:
        self.write(b"data: " + common.json_bytes(payload) + b"\n\n")

    def start(self) -> None:
        self._chunk({"role": "assistant", "content": ""})

    def text(self, piece: str) -> None:
        self._chunk({"content": piece})

    def end(self, bench: Body) -> None:
        self._chunk({}, "stop", bench=bench)
        if self.include_usage:
            self._event({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                         "model": self.shown, "choices": [], "usage": panel_usage(bench, self.tokens_in)})
        self.write(b"data: [DONE]\n\n")

    def error(self, status: int, message: str) -> None:
        self._event(error_body(status, message))
        self.write(b"data: [DONE]\n\n")

    def keepalive(self) -> None:
        self.write(b": keep-alive\n\n")


class RouteStream:
    """A route turn (RT-21): every member chunk relayed as it was sent (reasoning, tool-call deltas and
    usage-only chunks included), named as the collection; the last chunk carries `bench`, then `[DONE]`."""

    content_type = "text/event-stream"

    def __init__(self, write: Write, shown: str) -> None:
        self.write = write
        self.shown = shown
        self.id = completion_id()
        self.created = int(time.time())

    def start(self) -> None:
        """A relayed turn has no opening chunk: the member's first one opens it."""

    def chunk(self, chunk: Body, text: str) -> None:
        if isinstance(chunk.get("id"), str) and chunk["id"]:
            self.id = chunk["id"]  # the stream's id follows the member's
        relayed = {**chunk, "id": self.id, "object": "chat.completion.chunk", "model": self.shown,
                   "created": chunk.get("created") or self.created}
        self.write(b"data: " + common.json_bytes(relayed) + b"\n\n")

    def end(self, turn: Turn, bench: Body) -> None:
        last = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.shown,
                "choices": [], "bench": bench}
        self.write(b"data: " + common.json_bytes(last) + b"\n\ndata: [DONE]\n\n")

    def error(self, status: int, message: str) -> None:
        self.write(b"data: " + common.json_bytes(error_body(status, message)) + b"\n\ndata: [DONE]\n\n")

    def keepalive(self) -> None:
        self.write(common.KEEPALIVE_COMMENT)


def route_reply(turn: Turn, shown: str, bench: Body, tokens_in: int) -> Body:
    """A non-streamed route turn (RT-21): the assembled calls, the reasoning, the member's own usage."""
    message: Body = {"role": "assistant", "content": turn.text or (None if turn.calls else "")}
    if turn.calls:
        message["tool_calls"] = [call.chat() for call in turn.calls]
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    usage = turn.usage or usage_of(turn.tokens(tokens_in))
    return {"id": completion_id(), "object": "chat.completion", "created": int(time.time()), "model": shown,
            "choices": [{"index": 0, "finish_reason": turn.stop, "message": message}], "usage": usage,
            "bench": bench}


class ChatCompletions(common.Format):
    """OpenAI chat completions on `POST /v1/chat/completions` (§5.1): the gateway's own shape."""

    name = "chat"
    Stream = Stream
    takes = obj({"model": MODEL, "messages": arr(schemas.MESSAGE)}, stream=schemas.STREAM, bench=schemas.BENCH_ASK)
    gives = obj({"id": STR, "object": STR, "created": INT, "model": STR,
                 "choices": arr(obj({"index": INT, "message": schemas.MESSAGE}, finish_reason=maybe(STR)))},
                usage=schemas.OBJ, bench=schemas.BENCH)
    events = described(obj({}, id=STR, object=STR, choices=arr(schemas.OBJ), bench=schemas.BENCH, error=schemas.OBJ),
                       "a `chat.completion.chunk` (the last carries `bench`), an error body, then `data: [DONE]`")
    example = {"model": "bench/demo", "messages": [{"role": "user", "content": schemas.QUESTION}]}
    read = staticmethod(ask)
    error_body = staticmethod(error_body)

    def answer(self, content: str, shown: str, bench: Body, tokens: tuple[int, int], seconds: float) -> Body:
        """The reply with its `usage`: `tokens` are the panel's (`common.panel_tokens`), as every API's are."""
        return reply(content, shown, bench, usage_of(tokens))

    def shown(self, name: str, ask: common.Ask) -> str:
        """FMT-14: always the collection, `bench/<name>`, however it was asked (`core`, `bench/core:all`)."""
        return f"bench/{name}"

    def writer(self, shown: str, tokens_in: int = 0, sse: bool = False,
               include_usage: bool = False) -> Callable[[Write], Any]:
        """STR-10's stream; its usage chunk only when the client asked (`stream_options.include_usage`)."""
        return functools.partial(Stream, shown=shown, tokens_in=tokens_in, include_usage=include_usage)

    def route_writer(self, shown: str, tokens_in: int = 0, sse: bool = False,
                     custom: Iterable[str] = ()) -> Callable[[Write], Any]:
        return functools.partial(RouteStream, shown=shown)

    def route_reply(self, turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        return route_reply(turn, shown, bench, tokens_in), {}
