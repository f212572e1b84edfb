"""Anthropic Messages (formats.md §6.1, §12 OUT-2; models.md REQ-2, STR-14).

Inbound: `POST /v1/messages` and `/v1/messages/count_tokens` read by `ask()`,
answered by `reply()` or `Stream`, refused with `error_body()`. Outbound: the
built-in client sends `request()` to a native Anthropic endpoint and reads the
answer with `Reader`, the inbound conversions run in reverse.

Decisions where the spec is silent or improved:
- improvement 10: an image block in `system` is refused (a system prompt carries
  text only) instead of being dropped silently.
- `system` that is neither a string nor a list of blocks is refused like message content.
- a `tool_result` block whose content holds anything but text and images is refused
  like any other block.
"""

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from . import common, schemas
from .schemas import INT, MODEL, STR, arr, described, maybe, obj
from .common import Body, Write
from .turn import Call, Turn

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error"}
# STR-14: the status an error type stands for when an upstream names it (529: Anthropic's "overloaded").
STATUS_OF: dict[Any, int] = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
             "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
             "overloaded_error": 529}
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}
DEFAULT_MAX_TOKENS = 8192
TOOL_CHOICE: dict[Any, str] = {"auto": "auto", "any": "required", "none": "none"}
STOP_REASON = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def error_body(status: int, message: str) -> Body:
    """§2: every refusal on these routes, and the in-stream `error` event."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


# ---------------------------------------------------------------- reading a request


def _image(source: object) -> Body:
    if not isinstance(source, dict):
        raise common.Unsupported("an image block needs a source: base64 data or a url")
    kind = source.get("type")
    if kind == "base64":
        data = source.get("data")
        mime = source.get("media_type") or common.sniff(data if isinstance(data, str) else "")
        return common.data_url(mime, data, "an image block")
    if kind == "url" and isinstance(source.get("url"), str):
        return common.image_part(source["url"])
    raise common.Unsupported(f"an image block's source type {kind!r} cannot be passed on; send the image as base64 "
                             "or a url")


def _other_block(kind: str) -> NoReturn:
    if kind.endswith(("tool_use", "tool_result")):
        raise common.Unsupported(f"a {kind!r} block is a tool Anthropic runs on its own servers; no other model can "
                                 "take it up")
    raise common.Unsupported(f"a {kind!r} content block cannot be put to a panel; send text and images")


def _blocks(content: list[Any], role: str) -> tuple[list[Body], list[Body], list[Body]]:
    """`(parts, calls, results)` of a list of content blocks, in order."""
    found: list[Body] = []
    calls: list[Body] = []
    results: list[Body] = []
    for block in content:
        kind = common.kind_of(block)
        if not isinstance(block, dict):
            _other_block(kind)
        if kind == "text":
            found.append(common.text_part(str(block.get("text") or "")))
        elif kind == "image":
            found.append(_image(block.get("source")))
        elif kind in ("thinking", "redacted_thinking"):
            continue  # FMT-25: earlier reasoning is dropped
        elif kind == "tool_use":
            if role != "assistant":
                raise common.Unsupported("a tool_use block cannot be in a user message")
            call_input = block.get("input")
            calls.append(common.tool_call(block.get("id"), block.get("name"), {} if call_input is None else call_input))
        elif kind == "tool_result":
            if role != "user":
                raise common.Unsupported("a tool_result block cannot be in an assistant message")
            results.append(block)
        else:
            _other_block(kind)
    return found, calls, results


def _result(block: Body) -> tuple[Body, list[Body]]:
    """A tool_result as `(tool message, its images)`."""
    content = block.get("content")
    if isinstance(content, str):
        found = [common.text_part(content)]
    elif isinstance(content, list):
        found, calls, results = _blocks(content, "user")
        if calls or results:
            raise common.Unsupported("a tool_result's content takes text and image blocks only")
    elif content is None:
        found = []
    else:
        raise common.Unsupported("a tool_result's content must be a string or a list of content blocks")
    text = "\n\n".join(p["text"] for p in found if p["type"] == "text")
    if block.get("is_error"):
        text = "Error: " + text
    message = {"role": "tool", "tool_call_id": str(block.get("tool_use_id") or ""), "content": text}
    return message, [p for p in found if p["type"] == "image_url"]


def _message(message: Body) -> list[Body]:
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise common.Unsupported(f'a message "role" must be "user" or "assistant", not {role!r}')
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise common.Unsupported(f"{role}: content must be a string or a list of content blocks")
    found, calls, results = _blocks(content, role)
    if role == "assistant":
        return [common.assistant(found, calls)]
    out: list[Body] = []
    later: list[Body] = []
    for block in results:  # tool results come first: they answer the previous turn's calls
        tool_message, result_images = _result(block)
        out.append(tool_message)
        later += result_images
    if found + later or not results:
        out.append({"role": "user", "content": common.pack(found + later)})
    return out


def _system(system: object) -> str:
    if isinstance(system, str):
        return system
    if not isinstance(system, list):
        raise common.Unsupported("system: content must be a string or a list of content blocks")
    found, calls, results = _blocks(system, "system")
    if calls or results or any(p["type"] == "image_url" for p in found):
        raise common.Unsupported("system takes text blocks only; put images and tool turns in the messages")
    return "\n\n".join(p["text"] for p in found)


def _tools(body: Body) -> Body:
    """`upstream` tool fields from `tools` and `tool_choice`."""
    tools = body.get("tools")
    if tools is None:
        return {}
    if not isinstance(tools, list):
        raise common.Unsupported('"tools" must be a list')
    defs = []
    for tool in tools:
        kind = tool.get("type") if isinstance(tool, dict) else common.kind_of(tool)
        if not isinstance(tool, dict) or kind not in (None, "custom"):
            raise common.Unsupported(f"the {kind!r} tool is one Anthropic runs on its own servers; no other model can "
                                     "run it. Send tools with name, description and input_schema")
        defs.append(common.function_tool(tool.get("name"), tool.get("description"), tool.get("input_schema")))
    upstream: Body = {"tools": defs} if defs else {}
    choice = body.get("tool_choice")
    if defs and isinstance(choice, dict):
        kind = choice.get("type")
        if kind == "tool":
            upstream["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
        else:
            upstream["tool_choice"] = TOOL_CHOICE.get(kind, "auto")
        if choice.get("disable_parallel_tool_use") is True:
            upstream["parallel_tool_calls"] = False
    return upstream


def _output_format(body: Body) -> Body:
    """`upstream`'s response_format from `output_config.format` (or the older top-level `output_format`), as the
    other readers map their schema field (issue 30: the SDK's `messages.parse` sends it)."""
    config = common.obj(body.get("output_config"))
    shape = config.get("format") or body.get("output_format")
    if isinstance(shape, dict) and shape.get("type") == "json_schema" and isinstance(shape.get("schema"), dict):
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "response",
                                                                             "schema": shape["schema"]}}}
    return {}


def ask(body: Body) -> common.Ask:
    """The Ask of a Messages body (§6.1), or `Unsupported` with why.

    Ignored: top_k, thinking, metadata, service_tier, cache_control, container, output_config's effort and the rest.
    """
    messages = []
    if body.get("system"):
        messages.append({"role": "system", "content": _system(body["system"])})
    for message in common.a_list(body.get("messages"), '"messages" must be a list of message objects'):
        messages += _message(message)
    stop = body.get("stop_sequences")
    options = common.options(body.get("max_tokens"), body.get("temperature"), body.get("top_p"), stop)
    return common.make_ask(body, messages, body.get("stream"), options, {**_tools(body), **_output_format(body)})


def count(body: Body) -> int:
    """`/v1/messages/count_tokens`: P of the body read exactly as `/v1/messages` reads it (no tool definitions)."""
    return common.prompt_tokens(ask(body).messages)


# ---------------------------------------------------------------- answering


def reply(content: str, shown: str, bench: Body | None, tokens: tuple[int, int], seconds: float = 0) -> Body:
    tokens_in, tokens_out = tokens
    answer: Body = {"id": "msg_" + common.hex24(), "type": "message", "role": "assistant", "model": shown,
              "content": [{"type": "text", "text": content}], "stop_reason": "end_turn", "stop_sequence": None,
              "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}
    if bench is not None:
        answer["bench"] = bench
    return answer


class _Events:
    """What the panel stream and a route turn's stream share: the events, the opening message, text pieces."""

    content_type = "text/event-stream"

    def __init__(self, write: Write, shown: str, prompt_tokens: int = 0) -> None:
        self.write = write
        self.shown = shown
        self.prompt_tokens = prompt_tokens

    def _event(self, payload: Body) -> None:
        self.write(common.sse(payload, payload["type"]))

    def _message_start(self) -> None:
        self._event({"type": "message_start", "message": {
            "id": "msg_" + common.hex24(), "type": "message", "role": "assistant", "model": self.shown, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": self.prompt_tokens, "output_tokens": 0}}})

    def text(self, piece: str) -> None:
        self._event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})

    def error(self, status: int, message: str) -> None:
        self._event(error_body(status, message))

    def keepalive(self) -> None:
        self._event({"type": "ping"})


class Stream(_Events):
    """The panel stream (§6.1): one text block; `bench` rides on `message_delta`; keep-alive is `ping`."""

    def start(self) -> None:
        self._message_start()
        self._event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})

    def end(self, bench: Body | None) -> None:
        self._event({"type": "content_block_stop", "index": 0})
        tokens_in, tokens_out = common.panel_tokens(bench, self.prompt_tokens)
        delta: Body = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}
        if bench is not None:
            delta["bench"] = bench
        self._event(delta)
        self._event({"type": "message_stop"})


def stop_reason(finish: str) -> str:
    """RT-21a: a member's finish reason in Anthropic's words."""
    return STOP_REASON.get(finish, "end_turn")


def tool_use(call: Call) -> Body:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments_object}


def route_reply(turn: Turn, shown: str, bench: Body, tokens_in: int) -> Body:
    """A non-streamed route turn (RT-21): a text block (when there is text, or no calls), then `tool_use` blocks."""
    tokens = turn.tokens(tokens_in)
    answer = reply(turn.text, shown, bench, tokens)
    if turn.calls:
        answer["content"] = answer["content"] if turn.text else []
        answer["content"] += [tool_use(call) for call in turn.calls]
    answer["stop_reason"] = stop_reason(turn.stop)
    return answer


class RouteStream(_Events):
    """A route turn (RT-21): the text block opens with the first text; at the end each call is one `tool_use`
    block whose input arrives whole in one `input_json_delta`, then `message_delta` with the stop reason,
    the member's tokens and `bench`. Reasoning is not shown (RT-21d)."""

    def __init__(self, write: Write, shown: str, prompt_tokens: int = 0) -> None:
        super().__init__(write, shown, prompt_tokens)
        self.opened = False

    def start(self) -> None:
        self._message_start()

    def _open_text(self) -> None:
        if not self.opened:
            self.opened = True
            self._event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})

    def chunk(self, chunk: Body, text: str) -> None:
        if text:
            self._open_text()
            self.text(text)

    def end(self, turn: Turn, bench: Body) -> None:
        index = 0
        if self.opened or not turn.calls:  # an empty turn still has its (empty) text block
            self._open_text()
            self._event({"type": "content_block_stop", "index": 0})
            index = 1
        for call in turn.calls:
            self._event({"type": "content_block_start", "index": index,
                         "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}})
            self._event({"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(call.arguments_object, ensure_ascii=False)}})
            self._event({"type": "content_block_stop", "index": index})
            index += 1
        tokens_in, tokens_out = turn.tokens(self.prompt_tokens)
        self._event({"type": "message_delta", "delta": {"stop_reason": stop_reason(turn.stop), "stop_sequence": None},
                     "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}, "bench": bench})
        self._event({"type": "message_stop"})


# ---------------------------------------------------------------- outbound


def _native_content(content: object) -> str | list[Body]:
    if isinstance(content, str):
        return content
    blocks: list[Body] = []
    for part in common.parts(content):
        if part["type"] == "text":
            blocks.append({"type": "text", "text": part["text"]})
            continue
        url = part["image_url"]["url"]
        inline = common.split_data_url(url)
        if inline:
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": inline[0],
                                                       "data": inline[1]}})
        else:
            blocks.append({"type": "image", "source": {"type": "url", "url": url}})
    return blocks


def request(model: str, messages: list[Any], options: Body | None = None, stream: bool = False) -> Body:
    """The native Messages body for OpenAI `messages` (OUT-2, REQ-2); `Unsupported` for tool turns."""
    system, turns = common.outbound_turns(messages)
    options = options or {}
    body: Body = {"model": model, "max_tokens": options.get("max_tokens") or DEFAULT_MAX_TOKENS}
    for name, native in (("temperature", "temperature"), ("top_p", "top_p"), ("stop", "stop_sequences")):
        if options.get(name) is not None:
            value = options[name]
            body[native] = [value] if name == "stop" and isinstance(value, str) else value
    if stream:
        body["stream"] = True
    if system:
        body["system"] = system
    body["messages"] = [{"role": "assistant" if m.get("role") == "assistant" else "user",
                         "content": _native_content(m.get("content"))} for m in turns]
    return body


class Reader(common.Pieces):
    """Reads a Messages reply or stream back (OUT-6, STR-14).

    `feed(event)` returns the pieces it adds as `("text" | "reasoning", piece)` and
    raises `UpstreamError` for an `error`; `done` once `message_stop` (or a whole
    message) arrived; `finish` in chat completions' words.
    """

    @property
    def finish(self) -> str:
        return FINISH.get(self.stop, self.stop)

    def _add(self, kind: str, piece: object) -> list[tuple[str, str]]:
        if isinstance(piece, str) and piece:
            self.pieces[kind].append(piece)
            return [(kind, piece)]
        return []

    def _usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            self.usage.update((k, v) for k, v in usage.items() if v is not None)

    def feed(self, event: Body) -> list[tuple[str, str]]:
        kind = event.get("type")
        if kind == "error":
            error = common.obj(event.get("error"))
            name = error.get("type")
            raise common.UpstreamError(str(error.get("message") or ""), STATUS_OF.get(name) or name or "stream", event)
        if kind == "message":
            self.model = common.string(event.get("model"))
            self._usage(event.get("usage"))
            self.stop = event.get("stop_reason") or ""
            self.done = True
            added: list[tuple[str, str]] = []
            for block in common.items(event.get("content")):
                if isinstance(block, dict) and block.get("type") == "text":
                    added += self._add("text", block.get("text"))
                elif isinstance(block, dict) and block.get("type") == "thinking":
                    added += self._add("reasoning", block.get("thinking"))
            return added
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = event["message"]
            if isinstance(message.get("model"), str):
                self.model = message["model"]
            self._usage(message.get("usage"))
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            delta = event["delta"]
            if delta.get("type") == "text_delta":
                return self._add("text", delta.get("text"))
            if delta.get("type") == "thinking_delta":
                return self._add("reasoning", delta.get("thinking"))
        elif kind == "message_delta":
            delta = common.obj(event.get("delta"))
            self.stop = delta.get("stop_reason") or self.stop
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            self.done = True
        return []

    def end(self) -> None:
        """Nothing is pending at the end of an Anthropic stream: errors raised as they came."""


# ---------------------------------------------------------------- the API


class Messages(common.Format):
    """Anthropic Messages on `POST /v1/messages` (§6.1)."""

    name = "anthropic"
    Stream = Stream
    takes = obj({"model": MODEL, "messages": arr(schemas.MESSAGE)}, system=schemas.ANY, stream=schemas.STREAM,
                bench=schemas.BENCH_ASK)
    gives = obj({"id": STR, "type": STR, "role": STR, "model": STR, "content": arr(obj({"type": STR}, text=STR)),
                 "stop_reason": maybe(STR), "usage": obj({"input_tokens": INT, "output_tokens": INT})},
                bench=schemas.BENCH)
    events = described(obj({"type": STR}, message=schemas.OBJ, index=INT, delta=schemas.OBJ, error=schemas.OBJ),
                       "`event: <type>` then its `data:`: message_start, content_block_start, content_block_delta, "
                       "content_block_stop, message_delta (with `bench`), message_stop; ping as keep-alive; error")
    example = {"model": "bench/demo", "max_tokens": 1024, "messages": [{"role": "user", "content": schemas.QUESTION}]}
    read = staticmethod(ask)
    answer = staticmethod(reply)
    error_body = staticmethod(error_body)

    def route_writer(self, shown: str, tokens_in: int = 0, sse: bool = False,
                     custom: Iterable[str] = ()) -> Callable[[Write], Any]:
        return functools.partial(RouteStream, shown=shown, prompt_tokens=tokens_in)

    def route_reply(self, turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        return route_reply(turn, shown, bench, tokens_in), {}
