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

from . import common

LEGACY_FUNCTIONS = ('legacy "functions" / "function_call" fields are not supported; '
                    'send "tools" and "tool_calls" instead')


def ask(body):
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


def completion_id():
    return "chatcmpl-" + secrets.token_hex(12)


def usage_of(tokens):
    """`{prompt_tokens, completion_tokens, total_tokens}` of `(input, output)`."""
    return {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)}


def panel_usage(bench, tokens_in):
    """The panel's `usage`, summed over the seats and the merger (`common.panel_tokens`, module docstring)."""
    return usage_of(common.panel_tokens(bench, tokens_in))


def reply(content, shown, bench, usage):
    """The non-streamed reply (STR-11, with `usage`), `bench` beside `choices`."""
    return {"id": completion_id(), "object": "chat.completion", "created": int(time.time()), "model": shown,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": usage, "bench": bench}


def error_body(status, message):
    """STR-12: the refusal shape for chat completions, legacy completions and `/bench/*`."""
    return {"error": {"message": message, "type": "bench_gateway", "code": status}}


class Stream:
    """The chat completions stream writer (STR-1, STR-10). `write(bytes)` raises once the client is gone."""

    content_type = "text/event-stream"

    def __init__(self, write, shown, tokens_in=0, include_usage=False):
        self.write = write
        self.id = completion_id()
        self.created = int(time.time())
        self.shown = shown
        self.tokens_in = tokens_in
        self.include_usage = include_usage

    def _chunk(self, delta, finish=None, **extra):
        chunk = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.shown,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        self._event(chunk)

    def _event(self, payload):
        self.write(b"data: " + common.json_bytes(payload) + b"\n\n")

    def start(self):
        self._chunk({"role": "assistant", "content": ""})

    def text(self, piece):
        self._chunk({"content": piece})

    def end(self, bench):
        self._chunk({}, "stop", bench=bench)
        if self.include_usage:
            self._event({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                         "model": self.shown, "choices": [], "usage": panel_usage(bench, self.tokens_in)})
        self.write(b"data: [DONE]\n\n")

    def error(self, status, message):
        self._event(error_body(status, message))
        self.write(b"data: [DONE]\n\n")

    def keepalive(self):
        self.write(b": keep-alive\n\n")


class RouteStream:
    """A route turn (RT-21): every member chunk relayed as it was sent (reasoning, tool-call deltas and
    usage-only chunks included), named as the collection; the last chunk carries `bench`, then `[DONE]`."""

    content_type = "text/event-stream"

    def __init__(self, write, shown):
        self.write = write
        self.shown = shown
        self.id = completion_id()
        self.created = int(time.time())

    def start(self):
        """A relayed turn has no opening chunk: the member's first one opens it."""

    def chunk(self, chunk, text):
        if isinstance(chunk.get("id"), str) and chunk["id"]:
            self.id = chunk["id"]  # the stream's id follows the member's
        relayed = {**chunk, "id": self.id, "object": "chat.completion.chunk", "model": self.shown,
                   "created": chunk.get("created") or self.created}
        self.write(b"data: " + common.json_bytes(relayed) + b"\n\n")

    def end(self, turn, bench):
        last = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.shown,
                "choices": [], "bench": bench}
        self.write(b"data: " + common.json_bytes(last) + b"\n\ndata: [DONE]\n\n")

    def error(self, status, message):
        self.write(b"data: " + common.json_bytes(error_body(status, message)) + b"\n\ndata: [DONE]\n\n")

    def keepalive(self):
        self.write(common.KEEPALIVE_COMMENT)


def route_reply(turn, shown, bench, tokens_in):
    """A non-streamed route turn (RT-21): the assembled calls, the reasoning, the member's own usage."""
    message = {"role": "assistant", "content": turn.text or (None if turn.calls else "")}
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
    read = staticmethod(ask)
    error_body = staticmethod(error_body)

    def answer(self, content, shown, bench, tokens, seconds):
        """The reply with its `usage`: `tokens` are the panel's (`common.panel_tokens`), as every API's are."""
        return reply(content, shown, bench, usage_of(tokens))

    def shown(self, name, ask):
        """FMT-14: always the collection, `bench/<name>`, however it was asked (`core`, `bench/core:all`)."""
        return f"bench/{name}"

    def writer(self, shown, tokens_in=0, sse=False, include_usage=False):
        """STR-10's stream; its usage chunk only when the client asked (`stream_options.include_usage`)."""
        return functools.partial(Stream, shown=shown, tokens_in=tokens_in, include_usage=include_usage)

    def route_writer(self, shown, tokens_in=0, sse=False, custom=()):
        return functools.partial(RouteStream, shown=shown)

    def route_reply(self, turn, shown, bench, tokens_in, seconds, custom=()):
        return route_reply(turn, shown, bench, tokens_in), {}
