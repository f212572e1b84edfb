"""OpenAI Responses: `POST /v1/responses` (formats.md §6.2, §12 OUT-4; models.md REQ-4, STR-16).

Inbound: `ask()` reads the input items into chat messages, `reply()` and
`Stream` answer with a Response object and its numbered events, `error_body()`
refuses. Responses are never stored, so `previous_response_id` and stored
conversations are refused: the client must send the whole conversation.

Outbound: `request()` builds the native body (OUT-4) and `Reader` reads the
event stream back; the last of `response.completed` / `.failed` / `.incomplete`
/ `error` decides (STR-16).

Decisions where the spec is silent or improved:
- `response.failed` carries the same zero usage as `response.created`.
- improvement 10: reasoning summaries are kept as reasoning, and a completed
  response finishes `stop`.
- a custom tool without a description gets the grammar sentence alone.
- issue 30: `store: true` is answered (the reply says `"store": false`, as every reply does) with a note in
  `bench.notes`, and `GET /v1/responses/<id>` is a 404 that says why (`not_stored`), not "no such route".
"""

import functools
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from . import common, schemas
from .schemas import INT, MODEL, STR, arr, described, maybe, obj
from .common import Body, Write
from .turn import Call, Turn

ROLES = ("user", "assistant", "system", "developer")
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
FINALS = ("response.completed", "response.failed", "response.incomplete", "error")
NOT_STORED = ("responses are never stored here, so {} cannot be fetched; keep the reply you were sent, and send the "
              'whole conversation in "input" to go on')
STORE_NOTE = ('store: true is not honoured: responses are never stored here (the reply says "store": false), so '
              'GET /v1/responses/<id> cannot fetch it; keep the reply, and send the whole conversation in "input"')
CUSTOM_INPUT = {"type": "object", "required": ["input"],
                "properties": {"input": {"type": "string", "description": "The tool's whole input, as free text."}}}


def error_body(status: int, message: str) -> Body:
    return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                      "param": None, "code": str(status)}}


# ---------------------------------------------------------------- reading a request


def _part(part: object) -> Body:
    kind = part.get("type") if isinstance(part, dict) else common.kind_of(part)
    if not isinstance(part, dict):
        raise common.Unsupported(f"a {kind!r} content part cannot be put to a panel; send text and images")
    if kind in ("input_text", "output_text", "text"):
        return common.text_part(str(part.get("text") or ""))
    if kind == "refusal":
        return common.text_part(str(part.get("refusal") or ""))
    if kind == "input_image":
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        if not isinstance(url, str) or not url:
            raise common.Unsupported("an input_image without an image_url (a file_id names an upload the gateway "
                                     "cannot reach): send the image as a data URL or an http(s) URL")
        return common.image_part(url)
    raise common.Unsupported(f"a {kind!r} content part cannot be put to a panel; send text and images")


def _content(content: object) -> str | list[Body]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise common.Unsupported("a message's content must be a string or a list of content parts")
    return common.pack([_part(p) for p in content])


def _call(item: Body) -> Body:
    call_id = item.get("call_id") or item.get("id")
    if item.get("type") == "custom_tool_call":
        return common.tool_call(call_id, item.get("name"), json.dumps({"input": item.get("input")}, ensure_ascii=False))
    arguments = item.get("arguments")
    return common.tool_call(call_id, item.get("name"), "{}" if arguments is None else arguments)


def _output(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n\n".join(p["text"] for p in (_part(x) for x in output) if p["type"] == "text")
    return "" if output is None else json.dumps(output, ensure_ascii=False)


def _messages(body: Body) -> list[Body]:
    messages: list[Body] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        return messages + [{"role": "user", "content": items}]
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise common.Unsupported('"input" must be a string or a list of items')
    for item in items:
        kind = item.get("type") or "message"
        if kind == "reasoning":
            continue  # FMT-25
        if kind in CALLS:
            last = messages[-1] if messages else None
            if last and last["role"] == "assistant":
                if "tool_calls" not in last:
                    last["content"] = common.text_of(last["content"]) or None
                    last["tool_calls"] = []
                last["tool_calls"].append(_call(item))
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [_call(item)]})
        elif kind in OUTPUTS:
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""),
                             "content": _output(item.get("output"))})
        elif kind == "message":
            role = item.get("role")
            if role not in ROLES:
                raise common.Unsupported(f'a message "role" must be one of {", ".join(ROLES)}, not {role!r}')
            messages.append({"role": role, "content": _content(item.get("content"))})
        else:
            raise common.Unsupported(f"a {kind!r} input item cannot be put to a panel; send messages, function "
                                     "calls and their outputs")
    return messages


def _custom(tool: Body) -> Body:
    description = common.string(tool.get("description"))
    grammar = common.obj(tool.get("format"))
    if grammar.get("type") == "grammar":
        syntax = f" {grammar['syntax']}" if grammar.get("syntax") else ""
        rule = f"The input must follow this{syntax} grammar:\n" + str(grammar.get("definition") or "")
        description = f"{description}\n\n{rule}" if description else rule
    return common.function_tool(tool.get("name"), description, CUSTOM_INPUT)


def _tools(body: Body) -> tuple[Body, list[str]]:
    """`(upstream tool fields, names of custom tools)`."""
    tools = body.get("tools")
    upstream: Body = {}
    custom: list[str] = []
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise common.Unsupported('"tools" must be a list')
    defs = []
    for tool in tools:
        kind = tool.get("type") if isinstance(tool, dict) else common.kind_of(tool)
        if kind == "function":
            strict = {"strict": tool["strict"]} if tool.get("strict") is not None else {}
            defs.append(common.function_tool(tool.get("name"), tool.get("description"), tool.get("parameters"),
                                             **strict))
        elif kind == "custom":
            defs.append(_custom(tool))
            custom.append(tool.get("name"))
        else:
            raise common.Unsupported(f"the {kind!r} tool is one OpenAI runs itself; no other model can run it. "
                                     "Send function or custom tools")
    if defs:
        upstream["tools"] = defs
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            upstream["tool_choice"] = ({"type": "function", "function": {"name": choice["name"]}}
                                       if choice.get("name") else choice.get("mode") or "auto")
        elif choice is not None:
            upstream["tool_choice"] = choice
        if body.get("parallel_tool_calls") is not None:
            upstream["parallel_tool_calls"] = body["parallel_tool_calls"]
    text = common.obj(body.get("text"))
    shape = common.obj(text.get("format"))
    if shape.get("type") == "json_schema":
        upstream["response_format"] = {"type": "json_schema", "json_schema": {
            k: shape[k] for k in ("name", "schema", "strict", "description") if k in shape}}
    elif shape.get("type") == "json_object":
        upstream["response_format"] = {"type": "json_object"}
    return upstream, custom


def ask(body: Body) -> common.Ask:
    """The Ask of a Responses body (§6.2), or `Unsupported` with why.

    Ignored: include, reasoning, truncation, metadata, user and the rest; `store: true` is noted (replies always
    say false).
    """
    if body.get("previous_response_id") or body.get("conversation"):
        raise common.Unsupported("responses are never stored here, so previous_response_id and conversations "
                                 'cannot be continued; send the whole conversation in "input"')
    messages = _messages(body)
    upstream, custom = _tools(body)
    options = common.options(body.get("max_output_tokens"), body.get("temperature"), body.get("top_p"))
    notes = [STORE_NOTE] if body.get("store") is True else []
    return common.make_ask(body, messages, body.get("stream"), options, upstream, custom=custom, notes=notes)


def not_stored(response_id: str) -> str:
    """The message of `GET /v1/responses/<id>`'s 404: nothing is stored, so nothing can be fetched."""
    return NOT_STORED.format(repr(response_id))


# ---------------------------------------------------------------- answering


def usage_of(tokens_in: int, tokens_out: int) -> Body:
    return {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": tokens_out,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens_in + tokens_out}


def response(response_id: str, created: int, shown: str, status: str, output: list[Body], usage: Body,
             bench: Body | None = None, error: Body | None = None) -> Body:
    """The Response object, keys in the order of §6.2; `bench` last where it carries one."""
    obj: Body = {"id": response_id, "object": "response", "created_at": created, "status": status, "error": error,
           "incomplete_details": None, "instructions": None, "max_output_tokens": None, "model": shown,
           "output": output, "parallel_tool_calls": False, "previous_response_id": None,
           "reasoning": {"effort": None, "summary": None}, "store": False, "temperature": None,
           "text": {"format": {"type": "text"}}, "tool_choice": "none", "tools": [], "top_p": None,
           "truncation": "disabled", "metadata": {}, "usage": usage}
    if bench is not None:
        obj["bench"] = bench
    return obj


def output_text(text: str) -> Body:
    return {"type": "output_text", "text": text, "annotations": []}


def message_item(item_id: str, text: str, status: str = "completed") -> Body:
    content = [] if status == "in_progress" else [output_text(text)]
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def reply(content: str, shown: str, bench: Body | None, tokens: tuple[int, int], seconds: float = 0) -> Body:
    return response("resp_" + common.hex24(), int(time.time()), shown, "completed",
                    [message_item("msg_" + common.hex24(), content)], usage_of(*tokens), bench)


class _Events:
    """What the panel stream and a route turn's stream share: numbered events, the response, text pieces."""

    content_type = "text/event-stream"

    def __init__(self, write: Write, shown: str, prompt_tokens: int = 0) -> None:
        self.write = write
        self.shown = shown
        self.prompt_tokens = prompt_tokens
        self.id = "resp_" + common.hex24()
        self.item = "msg_" + common.hex24()
        self.created = int(time.time())
        self.sequence = 0
        self.said: list[str] = []

    def _event(self, kind: str, **fields: Any) -> None:
        self.write(common.sse({"type": kind, "sequence_number": self.sequence, **fields}, kind))
        self.sequence += 1

    def _response(self, status: str, output: list[Body], usage: Body, **extra: Any) -> Body:
        return response(self.id, self.created, self.shown, status, output, usage, **extra)

    def _where(self) -> Body:
        return {"item_id": self.item, "output_index": 0, "content_index": 0}

    def text(self, piece: str) -> None:
        self.said.append(piece)
        self._event("response.output_text.delta", **self._where(), delta=piece, logprobs=[])

    def error(self, status: int, message: str) -> None:
        self._event("error", code=str(status), message=message, param=None)
        failed = {"code": "server_error" if status >= 500 else "invalid_request", "message": message}
        self._event("response.failed", response=self._response("failed", [], usage_of(0, 0), error=failed))

    def keepalive(self) -> None:
        self.write(common.KEEPALIVE_COMMENT)


class Stream(_Events):
    """The panel stream (§6.2): numbered events, `bench` in `response.completed`; keep-alive is a comment."""

    def start(self) -> None:
        opening = self._response("in_progress", [], usage_of(0, 0))
        self._event("response.created", response=opening)
        self._event("response.in_progress", response=opening)
        self._event("response.output_item.added", output_index=0, item=message_item(self.item, "", "in_progress"))
        self._event("response.content_part.added", **self._where(), part=output_text(""))

    def end(self, bench: Body | None) -> None:
        text = "".join(self.said)
        item = message_item(self.item, text)
        self._event("response.output_text.done", **self._where(), text=text, logprobs=[])
        self._event("response.content_part.done", **self._where(), part=output_text(text))
        self._event("response.output_item.done", output_index=0, item=item)
        usage = usage_of(*common.panel_tokens(bench, self.prompt_tokens))
        self._event("response.completed", response=self._response("completed", [item], usage, bench=bench))


def call_item(call: Call, custom: Iterable[str], status: str = "completed") -> Body:
    """RT-21b: a member's call as a Responses output item; a call to one of the request's custom tools
    carries its raw input, as the custom tool takes it."""
    if call.name in custom:
        given = call.arguments_object.get("input")
        text = given if isinstance(given, str) else "".join(call.pieces)
        return {"type": "custom_tool_call", "id": "ctc_" + common.hex24(), "call_id": call.id, "name": call.name,
                "input": "" if status == "in_progress" else text, "status": status}
    return {"type": "function_call", "id": "fc_" + common.hex24(), "call_id": call.id, "name": call.name,
            "arguments": "" if status == "in_progress" else call.arguments, "status": status}


def route_output(turn: Turn, custom: Iterable[str]) -> list[Body]:
    """The output items of a route turn: the message (when there is text, or no calls), then each call."""
    items = [message_item("msg_" + common.hex24(), turn.text)] if turn.text or not turn.calls else []
    return items + [call_item(call, custom) for call in turn.calls]


def route_reply(turn: Turn, shown: str, bench: Body, tokens_in: int, custom: Iterable[str]) -> Body:
    return response("resp_" + common.hex24(), int(time.time()), shown, "completed", route_output(turn, custom),
                    usage_of(*turn.tokens(tokens_in)), bench)


class RouteStream(_Events):
    """A route turn (RT-21): the message item opens with the first text; at the end each call is an item of
    its own with its argument events (a custom tool's `custom_tool_call_input` events, improvement 5), then
    `response.completed` with every item, the member's tokens and `bench`. An empty turn streams the same
    empty message item as the non-streamed reply (improvement 5)."""

    def __init__(self, write: Write, shown: str, prompt_tokens: int = 0, custom: Iterable[str] = ()) -> None:
        super().__init__(write, shown, prompt_tokens)
        self.custom = tuple(custom)
        self.opened = False

    def start(self) -> None:
        opening = self._response("in_progress", [], usage_of(0, 0))
        self._event("response.created", response=opening)
        self._event("response.in_progress", response=opening)

    def _open_text(self) -> None:
        if not self.opened:
            self.opened = True
            self._event("response.output_item.added", output_index=0,
                        item=message_item(self.item, "", "in_progress"))
            self._event("response.content_part.added", **self._where(), part=output_text(""))

    def chunk(self, chunk: Body, text: str) -> None:
        if text:
            self._open_text()
            self.text(text)

    def end(self, turn: Turn, bench: Body) -> None:
        output: list[Body] = []
        if self.opened or not turn.calls:
            self._open_text()
            text = "".join(self.said)
            item = message_item(self.item, text)
            self._event("response.output_text.done", **self._where(), text=text, logprobs=[])
            self._event("response.content_part.done", **self._where(), part=output_text(text))
            self._event("response.output_item.done", output_index=0, item=item)
            output.append(item)
        for call in turn.calls:
            item = call_item(call, self.custom)
            index, where = len(output), {"item_id": item["id"], "output_index": len(output)}
            self._event("response.output_item.added", output_index=index, item={**call_item(
                call, self.custom, "in_progress"), "id": item["id"]})
            if item["type"] == "custom_tool_call":
                self._event("response.custom_tool_call_input.delta", **where, delta=item["input"])
                self._event("response.custom_tool_call_input.done", **where, input=item["input"])
            else:
                self._event("response.function_call_arguments.delta", **where, delta=item["arguments"])
                self._event("response.function_call_arguments.done", **where, arguments=item["arguments"])
            self._event("response.output_item.done", output_index=index, item=item)
            output.append(item)
        usage = usage_of(*turn.tokens(self.prompt_tokens))
        self._event("response.completed", response=self._response("completed", output, usage, bench=bench))


# ---------------------------------------------------------------- outbound


def _input_content(role: str, content: object) -> list[Body]:
    found: list[Body] = []
    for part in common.parts(content):
        if part["type"] == "text":
            found.append({"type": "output_text" if role == "assistant" else "input_text", "text": part["text"]})
        else:
            found.append({"type": "input_image", "image_url": part["image_url"]["url"]})
    return found


def request(model: str, messages: list[Any], options: Body | None = None, stream: bool = False) -> Body:
    """The native Responses body for OpenAI `messages` (OUT-4); `Unsupported` for tool turns."""
    system, turns = common.outbound_turns(messages)
    options = options or {}
    body: Body = {"model": model, "input": [], "store": False}
    for message in turns:
        role = "assistant" if message.get("role") == "assistant" else "user"
        body["input"].append({"role": role, "content": _input_content(role, message.get("content"))})
    if system:
        body["instructions"] = system
    for name, native in (("max_tokens", "max_output_tokens"), ("temperature", "temperature"), ("top_p", "top_p")):
        if options.get(name) is not None:
            body[native] = options[name]
    if stream:
        body["stream"] = True
    return body


class Reader:
    """Reads a Responses event stream, or one Response object, back (OUT-6, STR-16).

    Deltas are heard as they come; the final event (the last of `response.completed`,
    `.failed`, `.incomplete` and `error`) is judged by `end()`, which raises
    `UpstreamError` for anything but a completed response.
    """

    def __init__(self) -> None:
        self.pieces: dict[str, list[str]] = {"text": [], "reasoning": []}
        self.final: Body | None = None
        self.model = ""
        self.usage: Body = {}
        self.finish = ""
        self.answer: str | None = None

    @property
    def done(self) -> bool:
        return self.final is not None

    @property
    def text(self) -> str:
        return self.answer if self.answer is not None else "".join(self.pieces["text"])

    @property
    def reasoning(self) -> str:
        return "".join(self.pieces["reasoning"])

    def _add(self, kind: str, piece: object) -> list[tuple[str, str]]:
        if isinstance(piece, str) and piece:
            self.pieces[kind].append(piece)
            return [(kind, piece)]
        return []

    def feed(self, event: Body) -> list[tuple[str, str]]:
        kind = event.get("type")
        if kind == "response.output_text.delta":
            return self._add("text", event.get("delta"))
        if kind == "response.reasoning_summary_text.delta":
            return self._add("reasoning", event.get("delta"))
        if kind in FINALS:
            self.final = event
        elif event.get("object") == "response":
            status = event.get("status")
            self.final = {"type": "response.completed" if status == "completed" else f"response.{status}",
                          "response": event}
        return []

    def end(self) -> None:
        if self.final is None:
            return
        final = self.final
        body = common.obj(final.get("response"))
        if final.get("type") != "response.completed":
            obj = body.get("error") or body.get("incomplete_details") or final
            code = obj.get("code") if isinstance(obj, dict) else None
            message = obj.get("message") if isinstance(obj, dict) else None
            raise common.UpstreamError(str(message or final.get("message") or ""), code or final.get("type"), obj)
        self.model = common.string(body.get("model"))
        self.usage = common.obj(body.get("usage"))
        self.finish = "stop"
        texts = [part["text"] for item in body.get("output") or [] if isinstance(item, dict)
                 and item.get("type") == "message" for part in item.get("content") or []
                 if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)]
        if texts:
            self.answer = "".join(texts)


# ---------------------------------------------------------------- the API


class Responses(common.Format):
    """OpenAI Responses on `POST /v1/responses` (§6.2)."""

    name = "responses"
    Stream = Stream
    takes = obj({"model": MODEL, "input": schemas.either(STR, arr(schemas.OBJ))}, stream=schemas.STREAM,
                bench=schemas.BENCH_ASK)
    gives = obj({"id": STR, "object": STR, "created_at": INT, "status": STR, "model": STR, "output": arr(schemas.OBJ),
                 "usage": schemas.OBJ}, error=maybe(schemas.OBJ), bench=schemas.BENCH)
    events = described(obj({"type": STR, "sequence_number": INT}, response=schemas.OBJ, item=schemas.OBJ,
                           delta=STR, text=STR),
                       "`event: <type>` then its `data:`: response.created ... response.completed (whose `response` "
                       "carries `bench`), or error and response.failed")
    example = {"model": "bench/demo", "input": schemas.QUESTION}
    read = staticmethod(ask)
    answer = staticmethod(reply)
    error_body = staticmethod(error_body)

    def route_writer(self, shown: str, tokens_in: int = 0, sse: bool = False,
                     custom: Iterable[str] = ()) -> Callable[[Write], Any]:
        return functools.partial(RouteStream, shown=shown, prompt_tokens=tokens_in, custom=custom)

    def route_reply(self, turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        return route_reply(turn, shown, bench, tokens_in, custom), {}
