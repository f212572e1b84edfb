"""Ollama: `/api/chat`, `/api/generate`, `/api/tags`, `/api/version`, `/api/show` (formats.md §7, §12 OUT-5).

Ollama clients (Open WebUI, the `ollama` library, editors) see the collections
as local models: `bench/core` in `/api/tags`, its card in `/api/show`, and the
panel's answer as NDJSON lines or one JSON object. Images are bare base64, as
Ollama takes them; they become data URLs so the panel's vision filter sees them.

Decisions where the spec is silent or improved:
- improvement 12: `"stream": null` streams like an absent key, as Ollama itself
  does (the reference answered in one piece).
- improvement 9: an empty `/api/generate` prompt is Ollama's "load the model"
  call; it gets a `done` reply with no text (`done_reason: "load"`, as Ollama
  says). The same goes for `/api/chat` with no messages, Ollama's load call there.
- improvement 8: `/api/show` lists `tools` for route-mode names whose members all call tools.
- a message `content` that is not a string (or null) is refused, not stringified;
  an `images` entry that is already a data URL is taken as it is.
"""

import datetime
import functools
import hashlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from . import common, schemas
from .schemas import BOOL, INT, MODEL, STR, arr, described, maybe, obj
from .common import Body, Write
from .turn import Turn

VERSION = "0.12.0"
ROLES = ("system", "user", "assistant", "tool")
DETAILS = {"parent_model": "", "format": "", "family": "benchwarmers", "families": ["benchwarmers"],
           "parameter_size": "", "quantization_level": ""}
TOOL_CALLS = "tool_calls must be a list, in an assistant message"
BASE64_ONLY = "Ollama takes images as base64 only; an http(s) image URL cannot be sent to it"


def error_body(status: int, message: str) -> Body:
    return {"error": message}


def now() -> str:
    """Ollama's timestamps: UTC, microseconds, `Z` (FMT-2)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def model_name(model: str) -> str:
    """`:latest` is Ollama's default tag, not a reply mode: it is removed."""
    return model[:-len(":latest")] if isinstance(model, str) and model.endswith(":latest") else model


# ---------------------------------------------------------------- reading a request


def _stream(body: Body) -> bool:
    return True if body.get("stream") is None else bool(body["stream"])


def _options(body: Body) -> Body:
    given = common.obj(body.get("options"))
    return common.options(given.get("num_predict"), given.get("temperature"), given.get("top_p"), given.get("stop"))


def _format(body: Body) -> Body:
    shape = body.get("format")
    if shape == "json":
        return {"response_format": {"type": "json_object"}}
    if isinstance(shape, dict) and shape:
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "response", "schema": shape}}}
    return {}


def _content(message: Body, role: str) -> str | list[Body]:
    """Text then one image part per base64 string, packed (FMT-19)."""
    content = message.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise common.Unsupported(f"{role}: content must be a string")
    found = [common.text_part(content)] if content else []
    pictures = message.get("images")
    if pictures:
        if not isinstance(pictures, list) or not all(isinstance(p, str) for p in pictures):
            raise common.Unsupported(f"{role}: images must be a list of base64 strings")
        for data in pictures:
            if data.lower().startswith("data:"):
                found.append(common.image_part(data))
            else:
                found.append(common.data_url(common.sniff(data), data, "an image"))
    return common.pack(found)


def _calls(message: Body, numbering: common.Numbering) -> list[Body]:
    calls = []
    for item in message["tool_calls"]:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict):
            raise common.Unsupported("every tool call needs a function with a name and arguments")
        name = function.get("name")
        call_id = numbering.call(item.get("id"), name)
        arguments = function.get("arguments")
        calls.append(common.tool_call(call_id, name, {} if arguments is None else arguments))
    return calls


def _messages(given: object) -> list[Body]:
    numbering = common.Numbering()
    messages: list[Body] = []
    for message in common.a_list(given, '"messages" must be a list of message objects'):
        role = message.get("role")
        if role not in ROLES:
            raise common.Unsupported(f'a message "role" must be one of {", ".join(ROLES)}, not {role!r}')
        if message.get("tool_calls"):
            if role != "assistant" or not isinstance(message["tool_calls"], list):
                raise common.Unsupported(TOOL_CALLS)
            text = common.string(message.get("content"))
            messages.append({"role": "assistant", "content": text or None,
                             "tool_calls": _calls(message, numbering)})
        elif role == "tool":
            name = message.get("tool_name") or message.get("name")
            content = message.get("content")
            messages.append({"role": "tool", "tool_call_id": numbering.result(message.get("tool_call_id"), name),
                             "content": "" if content is None else str(content)})
        else:
            messages.append({"role": role, "content": _content(message, role)})
    return messages


def _tools(body: Body) -> Body:
    tools = body.get("tools")
    if not tools:
        return {}
    if not isinstance(tools, list) or not all(isinstance(t, dict) and t.get("type") == "function" for t in tools):
        raise common.Unsupported('"tools" must be a list of {"type": "function", "function": {...}} objects')
    return {"tools": tools}


def chat_ask(body: Body) -> common.Ask:
    """The Ask of an `/api/chat` body (§7.1). Ignored: keep_alive, think, num_ctx, seed, top_k and the rest."""
    messages = _messages(body.get("messages"))
    return common.make_ask(body, messages, _stream(body), _options(body), {**_tools(body), **_format(body)},
                           model=model_name(common.bench_fields(body)[0]), load=not messages)


def generate_ask(body: Body) -> common.Ask:
    """The Ask of an `/api/generate` body (§7.2); `format` is read as `/api/chat` reads it (issue 30).
    Ignored: suffix, template, raw, keep_alive."""
    prompt = body.get("prompt")
    if prompt is None:
        prompt = ""
    if not isinstance(prompt, str):
        raise common.Unsupported('"prompt" must be a string')
    if body.get("context"):
        raise common.Unsupported('"context" is a model\'s own token state, which a panel of other models cannot '
                                 "take up; send the conversation as messages to /api/chat")
    messages: list[Body] = [{"role": "system", "content": str(body["system"])}] if body.get("system") else []
    user = _content({"content": prompt, "images": body.get("images")}, "user")
    if user:
        messages.append({"role": "user", "content": user})
    return common.make_ask(body, messages, _stream(body), _options(body), _format(body),
                           model=model_name(common.bench_fields(body)[0]), load=not user)


# ---------------------------------------------------------------- answering


def _done(seconds: float, tokens_in: int, tokens_out: int, reason: str = "stop") -> Body:
    ns = max(1, int(seconds * 1e9))
    return {"done": True, "done_reason": reason, "total_duration": ns, "load_duration": 0,
            "prompt_eval_count": tokens_in, "prompt_eval_duration": 0, "eval_count": tokens_out,
            "eval_duration": ns}


def _said(key: str, text: str) -> Body:
    return {"message": {"role": "assistant", "content": text}} if key == "message" else {"response": text}


def _reply(key: str, content: str, shown: str, bench: Body | None, tokens: tuple[int, int], seconds: float,
           reason: str) -> Body:
    answer = {"model": shown, "created_at": now(), **_said(key, content), **_done(seconds, *tokens, reason)}
    if bench is not None:
        answer["bench"] = bench
    return answer


def chat_reply(content: str, shown: str, bench: Body | None, tokens: tuple[int, int], seconds: float = 0,
               reason: str = "stop") -> Body:
    return _reply("message", content, shown, bench, tokens, seconds, reason)


def generate_reply(content: str, shown: str, bench: Body | None, tokens: tuple[int, int], seconds: float = 0,
                   reason: str = "stop") -> Body:
    return _reply("response", content, shown, bench, tokens, seconds, reason)


class _Lines:
    """What the panel streams and a route turn's stream share: NDJSON lines, no opening line, text pieces."""

    content_type = "application/x-ndjson"
    key = "message"

    def __init__(self, write: Write, shown: str, prompt_tokens: int = 0, reason: str = "stop") -> None:
        self.write = write
        self.shown = shown
        self.prompt_tokens = prompt_tokens
        self.reason = reason
        self.started = time.monotonic()

    def _line(self, obj: Body) -> None:
        self.write(common.json_bytes(obj) + b"\n")

    def _piece(self, text: str) -> Body:
        return {"model": self.shown, "created_at": now(), **_said(self.key, text), "done": False}

    def start(self) -> None:
        """Ollama streams have no opening line."""

    def text(self, piece: str) -> None:
        self._line(self._piece(piece))

    def error(self, status: int, message: str) -> None:
        self._line(error_body(status, message))

    def keepalive(self) -> None:
        self._line(self._piece(""))


class ChatStream(_Lines):
    """NDJSON, no opening line; `bench` rides on the `done` line; keep-alive is an empty `done: false` line."""

    def end(self, bench: Body | None, tokens: tuple[int, int] | None = None) -> None:
        """The `done` line: a panel's tokens (`common.panel_tokens`), or a route turn's `tokens` (TextRoute)."""
        usage = tokens or common.panel_tokens(bench, self.prompt_tokens)
        last = {**self._piece(""), **_done(time.monotonic() - self.started, *usage, self.reason)}
        if bench is not None:
            last["bench"] = bench
        self._line(last)


class GenerateStream(ChatStream):
    key = "response"


def tool_calls(turn: Turn) -> list[Body]:
    """A member's calls as Ollama carries them (11.8a): name and arguments as an object, no ids."""
    return [{"function": {"name": call.name, "arguments": call.arguments_object}} for call in turn.calls]


def route_reply(turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float) -> Body:
    reason = "length" if turn.stop == "length" else "stop"
    answer = chat_reply(turn.text, shown, bench, turn.tokens(tokens_in), seconds, reason)
    if turn.calls:
        answer["message"]["tool_calls"] = tool_calls(turn)
    return answer


class RouteStream(_Lines):
    """A route turn (RT-21): text lines as they come; the calls in one line of their own at the end; then the
    done line with the member's tokens and `bench`."""

    def chunk(self, chunk: Body, text: str) -> None:
        if text:
            self.text(text)

    def end(self, turn: Turn, bench: Body) -> None:
        if turn.calls:
            line = self._piece("")
            line["message"]["tool_calls"] = tool_calls(turn)
            self._line(line)
        reason = "length" if turn.stop == "length" else "stop"
        last = {**self._piece(""), **_done(time.monotonic() - self.started, *turn.tokens(self.prompt_tokens), reason)}
        last["bench"] = bench
        self._line(last)


# ---------------------------------------------------------------- listing and the model card


def tags(rows: list[Body]) -> Body:
    """`GET /api/tags` from the listing rows (§7.3)."""
    stamp = now()
    return {"models": [{"name": row["id"], "model": row["id"], "modified_at": stamp, "size": 0,
                        "digest": hashlib.sha256(row["id"].encode()).hexdigest(), "details": DETAILS}
                       for row in rows]}


def shown_name(body: Body) -> str:
    """The name `/api/show` was asked for: `model`, else `name`, `:latest` removed."""
    name = body.get("model") or body.get("name") or ""
    return model_name(name) if isinstance(name, str) else ""


def not_found(name: str) -> str:
    return f"model {name!r} not found: GET /api/tags lists the collections you can use"


def show(name: str, rows: list[Body]) -> Body | None:
    """`POST /api/show` (FMT-31): the card of the listed name `name` (or `bench/` + it), else None."""
    row = next((r for r in rows if r["id"] in (name, "bench/" + name)), None) if name else None
    if row is None:
        return None
    together = common.obj(row.get("together"))
    capabilities = together.get("capabilities") or []
    info: Body = {"general.architecture": "benchwarmers", "general.basename": name}
    if together.get("context_window"):
        info["benchwarmers.context_length"] = together["context_window"]
    able = ["completion"] + (["vision"] if "vision" in capabilities else [])
    if row.get("reply") == "route" and "tools" in capabilities:
        able.append("tools")
    return {"modelfile": f"# {row.get('description') or name}", "parameters": "", "template": "{{ .Prompt }}",
            "details": DETAILS, "model_info": info, "modified_at": now(), "capabilities": able}


# ---------------------------------------------------------------- outbound


def request(model: str, messages: list[Any], options: Body | None = None, stream: bool = False) -> Body:
    """An Ollama `/api/chat` body for OpenAI `messages` (OUT-5); `Unsupported` for tool turns or image URLs."""
    common.outbound_turns(messages)
    out = []
    for message in messages:
        role = message.get("role") or "user"
        found = common.parts(message.get("content"))
        native = {"role": "system" if role in ("system", "developer") else role,
                  "content": "\n\n".join(p["text"] for p in found if p["type"] == "text")}
        pictures = []
        for part in found:
            if part["type"] == "image_url":
                inline = common.split_data_url(part["image_url"]["url"])
                if not inline:
                    raise common.Unsupported(BASE64_ONLY)
                pictures.append(inline[1])
        if pictures:
            native["images"] = pictures
        out.append(native)
    body: Body = {"model": model, "messages": out, "stream": stream}
    options = options or {}
    given = {"num_predict": options.get("max_tokens"), "temperature": options.get("temperature"),
             "top_p": options.get("top_p"), "stop": options.get("stop")}
    if any(v is not None for v in given.values()):
        body["options"] = {k: v for k, v in given.items() if v is not None}
    return body


class Reader:
    """Reads Ollama replies and NDJSON lines back (OUT-6): `response`, else `message.content`."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.model = ""
        self.usage: Body = {}
        self.finish = ""
        self.done = False
        self.reasoning = ""

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def feed(self, line: Body) -> list[tuple[str, str]]:
        if line.get("error"):
            raise common.UpstreamError(str(line["error"]), "stream", line)
        model = line.get("model")
        if isinstance(model, str):
            self.model = model


        message = common.obj(line.get("message"))
        piece = line["response"] if "response" in line else message.get("content")
        if line.get("done"):
            self.done = True
            self.finish = line.get("done_reason") or "stop"
            self.usage = {k: line[k] for k in ("prompt_eval_count", "eval_count") if isinstance(line.get(k), int)}
        if isinstance(piece, str) and piece:
            self.pieces.append(piece)
            return [("text", piece)]
        return []

    def end(self) -> None:
        """Errors raised as they came."""


# ---------------------------------------------------------------- the APIs


class Chat(common.Format):
    """Ollama's `POST /api/chat` (§7.1)."""

    name = "ollama_chat"
    Stream: type[ChatStream] = ChatStream
    takes = obj({"model": MODEL}, messages=arr(schemas.MESSAGE),
                stream=described(schemas.ANY, "absent or null streams NDJSON (Ollama's default); else truthy streams"),
                bench=schemas.BENCH_ASK)
    gives = obj({"model": STR, "created_at": STR, "done": BOOL}, message=schemas.MESSAGE, done_reason=STR,
                eval_count=INT, prompt_eval_count=INT, bench=schemas.BENCH)
    events = described(obj({}, model=STR, created_at=STR, message=schemas.MESSAGE, response=STR, done=BOOL,
                           bench=schemas.BENCH, error=STR),
                       "one JSON object a line: a piece each (`done: false`), the last `done: true` with `bench`; "
                       "an `error` line when the panel fails after the 200")
    example = {"model": "bench/demo", "stream": False, "messages": [{"role": "user", "content": schemas.QUESTION}]}
    read = staticmethod(chat_ask)
    answer = staticmethod(chat_reply)
    error_body = staticmethod(error_body)

    def route_writer(self, shown: str, tokens_in: int = 0, sse: bool = False,
                     custom: Iterable[str] = ()) -> Callable[[Write], Any]:
        return functools.partial(RouteStream, shown=shown, prompt_tokens=tokens_in)

    def route_reply(self, turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        return route_reply(turn, shown, bench, tokens_in, seconds), {}

    def loaded(self, shown: str) -> Body:
        """Improvement 9: the empty `done` reply to Ollama's "load the model" call (no prompt, no messages)."""
        said = _said(self.Stream.key, "")
        return {"model": shown, "created_at": now(), **said, "done": True, "done_reason": "load"}


class Generate(Chat):
    """Ollama's `POST /api/generate` (§7.2): route turns carry text only (RT-21), with the panel's writer."""

    name = "ollama_generate"
    Stream = GenerateStream
    takes = obj({"model": MODEL}, prompt=described(maybe(STR), "absent or null: Ollama's load-the-model call, "
                                                             "answered with an empty `done` reply"),
                stream=Chat.takes["properties"]["stream"], bench=schemas.BENCH_ASK)
    gives = obj({"model": STR, "created_at": STR, "done": BOOL}, response=STR, done_reason=STR, eval_count=INT,
                prompt_eval_count=INT, bench=schemas.BENCH)
    example = {"model": "bench/demo", "stream": False, "prompt": schemas.QUESTION}
    read = staticmethod(generate_ask)
    answer = staticmethod(generate_reply)
    route_writer = common.Format.route_writer

    def route_reply(self, turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        reason = "length" if turn.stop == "length" else "stop"
        return generate_reply(turn.text, shown, bench, turn.tokens(tokens_in), seconds, reason), {}
