"""OpenAI chat completions, the gateway's own format (gateway.md §6 ASK-1, §10 STR-10..12).

`ask(body)` reads a request into an Ask; `reply()` and `Stream` write the answer;
`error_body()` is the refusal shape shared with legacy completions. The other
formats (Anthropic, Responses, Ollama, Gemini, in `metrics.formats`) provide the
same pieces and share `bench_fields()` and `options()`, the checks and readings
every body gets (formats.md FMT-10, §3.2).
"""

import json
import secrets
import time

REPLY_MODES = ("all", "merged", "route")
MAX_WITH = 8
MAX_ALIAS = 200
LEGACY_FUNCTIONS = ('legacy "functions" / "function_call" fields are not supported; '
                    'send "tools" and "tool_calls" instead')


class Unsupported(ValueError):
    """A request this format cannot put to a panel (400, GW-4)."""


def bench_fields(body):
    """`(model, with, reply)` of any format's body, or `Unsupported` with why (FMT-10, ASK-1).

    Any falsy `model`, `with` or `bench` reads as none (corrections from testing). Issue 21: `with`
    names at most `MAX_WITH` aliases of at most `MAX_ALIAS` characters, since every name is looked at
    and may be echoed in the reply and the call log, while at most two explorer seats can take one.
    """
    model = body.get("model") or ""
    if not isinstance(model, str):
        raise Unsupported('"model" must be a collection name such as bench/core')
    nominees = body.get("with") or []
    if not isinstance(nominees, list) or not all(isinstance(a, str) for a in nominees):
        raise Unsupported('"with" must be a list of model aliases')
    if len(nominees) > MAX_WITH or any(len(a) > MAX_ALIAS for a in nominees):
        raise Unsupported(f'"with" takes at most {MAX_WITH} model aliases of at most {MAX_ALIAS} characters '
                          "each: nominees fill explorer seats, of which a panel has at most 2")
    bench = body.get("bench") or {}
    if not isinstance(bench, dict) or ("reply" in bench and bench["reply"] not in REPLY_MODES):
        raise Unsupported('"bench" must be an object whose "reply" is "all", "merged" or "route"')
    return model, nominees, bench.get("reply", "")


def options(max_tokens=None, temperature=None, top_p=None, stop=None):
    """The Ask's `options` (§3.2): `None` dropped, `stop` always a list. Read by a panel, never forwarded."""
    if isinstance(stop, str):
        stop = [stop]
    found = {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p, "stop": stop}
    return {k: v for k, v in found.items() if v is not None}


def agentic(upstream, messages):
    """True when the request carries tools, tool calls or tool results (§3.2): a panel refuses it."""
    return bool(upstream.get("tools")) or any(
        isinstance(m, dict) and (m.get("role") == "tool" or m.get("tool_calls")) for m in messages)


def ask(body):
    """The Ask of a chat completions body (ASK-1), or `Unsupported` with why."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise Unsupported('"messages" must be a list of message objects')
    if "functions" in body or "function_call" in body or any(
            m.get("role") == "function" or "function_call" in m for m in messages):
        raise Unsupported(LEGACY_FUNCTIONS)
    model, nominees, reply_mode = bench_fields(body)
    upstream = {k: v for k, v in body.items()
                if k not in ("model", "messages", "stream", "stream_options", "with", "bench")}
    return {
        "model": model,
        "messages": messages,
        "stream": bool(body.get("stream")),
        "options": options(body.get("max_completion_tokens") or body.get("max_tokens"), body.get("temperature"),
                           body.get("top_p"), body.get("stop")),
        "with": nominees,
        "reply": reply_mode,
        "upstream": upstream,
        "agentic": agentic(upstream, messages),
    }


def json_bytes(payload):
    """`payload` as UTF-8 JSON, non-ASCII unescaped, for a stream. A lone surrogate (a model's answer may hold
    one) goes out as its `\\udXXX` escape, inside its string, rather than raising mid-stream (issue 21)."""
    return json.dumps(payload, ensure_ascii=False).encode("utf-8", "backslashreplace")


def completion_id():
    return "chatcmpl-" + secrets.token_hex(12)


def reply(content, shown, bench):
    """The non-streamed reply (STR-11): no `usage` key, `bench` beside `choices`."""
    return {"id": completion_id(), "object": "chat.completion", "created": int(time.time()), "model": shown,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "bench": bench}


def error_body(status, message):
    """STR-12: the refusal shape for chat completions, legacy completions and `/bench/*`."""
    return {"error": {"message": message, "type": "bench_gateway", "code": status}}


class Stream:
    """The chat completions stream writer (STR-1, STR-10). `write(bytes)` raises once the client is gone."""

    content_type = "text/event-stream"

    def __init__(self, write, shown):
        self.write = write
        self.id = completion_id()
        self.created = int(time.time())
        self.shown = shown

    def _chunk(self, delta, finish=None, **extra):
        chunk = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.shown,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        self._event(chunk)

    def _event(self, payload):
        self.write(b"data: " + json_bytes(payload) + b"\n\n")

    def start(self):
        self._chunk({"role": "assistant", "content": ""})

    def text(self, piece):
        self._chunk({"content": piece})

    def end(self, bench):
        self._chunk({}, "stop", bench=bench)
        self.write(b"data: [DONE]\n\n")

    def error(self, status, message):
        self._event(error_body(status, message))
        self.write(b"data: [DONE]\n\n")

    def keepalive(self):
        self.write(b": keep-alive\n\n")
