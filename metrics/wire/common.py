"""Conversions every format shares (formats.md §0, §3.2, §4, §12).

Each reader turns its client's request into the one Ask the panel (and, later,
route mode) takes: OpenAI-style messages with images as `image_url` parts, so
the panel's image checks and vision filter see them whatever the client spoke.
What cannot be carried over is refused with why (`Unsupported`, a 400), never
dropped: a seat that silently lost part of a request would answer something else.

The outbound half (the built-in client calling a native API) uses the same
conversions in reverse; its readers raise `UpstreamError` for an error the
upstream sent, and the client turns that into its error text.
"""

import base64
import binascii
import collections
import dataclasses
import functools
import json
import mimetypes
import secrets
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from ..core import images
from ..core.errors import Unsupported
from . import schemas

Body = dict[str, Any]  # a JSON object as a request or reply carries it
Write = Callable[[bytes], object]  # where a stream writer's bytes go

REPLY_MODES = ("all", "merged", "route", "council")
MAX_WITH = 8
MAX_ALIAS = 200
TOOL_TURNS = "tool calls and results are sent to chat completions only, not a native API"
ONLY_IMAGES = "only images can be passed to a panel"
MAX_NESTING = 100
NOT_UNICODE = ("the request holds text that is not valid Unicode (a lone surrogate, such as \\ud800 without its "
               "pair); send UTF-8 text")
MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
         (b"RIFF", "image/webp"), (b"BM", "image/bmp"))


class UpstreamError(Exception):
    """An error a native upstream sent (OUT-6): `code` as its API names it, `payload` the object itself."""

    def __init__(self, message: str, code: object, payload: object) -> None:
        super().__init__(message)
        self.code = code
        self.payload = payload


class Pieces:
    """What a native reader has heard so far: text and reasoning pieces, model, usage, stop reason."""

    def __init__(self) -> None:
        self.pieces: dict[str, list[str]] = {"text": [], "reasoning": []}
        self.model = ""
        self.usage: Body = {}
        self.stop = ""
        self.done = False

    @property
    def text(self) -> str:
        return "".join(self.pieces["text"])

    @property
    def reasoning(self) -> str:
        return "".join(self.pieces["reasoning"])


def body_problem(raw: bytes, body: object) -> str:
    """Why a parsed JSON body cannot be taken (a 400 on every route), or "" (issue 21).

    Nesting is bounded so that no later recursion over the body (a schema walk, `str()`, `json.dumps`)
    can meet the interpreter's limit, which the parser alone leaves a few frames short of. A lone
    surrogate cannot be sent to any seat or written to a UTF-8 log, so it is refused before a seat is
    asked. Each scan runs only when the raw bytes could hold what it looks for, so the hot path pays a
    few byte scans.
    """
    if raw.count(b"[") + raw.count(b"{") > MAX_NESTING and deeper_than(body, MAX_NESTING):
        return f"body nests lists and objects deeper than {MAX_NESTING} levels"
    # only a \u escape, a non-ASCII byte or a UTF-16/32 body (NUL bytes) can carry a surrogate
    if (b"\\u" in raw or b"\x00" in raw or not raw.isascii()) and not encodable(body):
        return NOT_UNICODE
    return ""


def deeper_than(value: object, limit: int) -> bool:
    """True when `value` nests lists and objects more than `limit` deep; walked level by level, never recursing."""
    level = [value]
    for _ in range(limit):
        level = [child for item in level if isinstance(item, (list, dict))
                 for child in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return False
    return any(isinstance(item, (list, dict)) for item in level)


def encodable(value: object) -> bool:
    """True when every string in `value` (keys included) encodes as UTF-8: no lone surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def obj(value: object) -> Body:
    """`value` when it is a JSON object, else `{}`: a field that should hold an object, read."""
    return value if isinstance(value, dict) else {}


def string(value: object) -> str:
    """`value` when it is a JSON string, else `""`: a field that should hold text, read."""
    return value if isinstance(value, str) else ""


def items(value: object) -> list[Any]:
    """`value` when it is a JSON list, else `[]`: a field that should hold a list, read."""
    return value if isinstance(value, list) else []


def hex24() -> str:

    return secrets.token_hex(12)


def prompt_tokens(messages: list[Any]) -> int:
    """P(messages) of §0: the panel's flattening and estimate, 2,500 per valid image."""
    system, prompt = images.flatten(messages)
    return images.request_estimate(system, prompt, images.count(messages))


def panel_tokens(bench: Body | None, tokens_in: int) -> tuple[int, int]:
    """`(input, output)` tokens of a panel reply, one rule for every API (FMT-16, issue 30; a council's stages,
    CNC-9): each seat's and the merger's own counts where their upstream gave them, else estimates (the prompt's, `tokens_in`, for input;
    the merger's prompt with every answer in it; the answer's for output; a failed seat that counted nothing,
    nothing), summed. The markdown reply itself is never counted: the seats' tokens are what was spent."""
    bench = bench or {}
    seats = [s for s in bench.get("seats") or [] if isinstance(s, dict)]
    answers = sum(images.estimate(s.get("answer") or "") for s in seats)
    asked = [(s, tokens_in) for s in seats]
    if isinstance(bench.get("merger"), dict):
        asked.append((bench["merger"], tokens_in + answers))
    prompt = completion = 0
    for seat, estimate in asked:
        given = obj(seat.get("usage"))
        failed = seat.get("status") == "error"
        prompt += given.get("prompt_tokens", 0 if failed else estimate)
        completion += given.get("completion_tokens", images.estimate(seat.get("answer") or ""))
    spent = obj(obj(bench.get("council")).get("stages"))  # a council's rankings and chairman, counted by stage
    for stage in ("ranking", "chairman"):
        prompt += obj(spent.get(stage)).get("prompt_tokens", 0)
        completion += obj(spent.get(stage)).get("completion_tokens", 0)
    return prompt, completion


def usage(messages: list[Any], bench: Body | None) -> tuple[int, int]:
    """`(input, output)` of a panel reply to `messages` (`panel_tokens`)."""
    return panel_tokens(bench, prompt_tokens(messages))


# ---------------------------------------------------------------- parts and content


def text_part(text: str) -> Body:
    return {"type": "text", "text": text}


def image_part(url: str) -> Body:
    return {"type": "image_url", "image_url": {"url": url}}


def parts(content: object) -> list[Body]:
    """OpenAI content as parts (FMT-18): text and image_url parts kept, anything else dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [text_part(content)] if content else []
    found = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "image_url":
            found.append(image_part(images.image_url(part)))
        elif kind in ("text", "input_text", "output_text"):
            found.append(text_part(str(part.get("text") or "")))
    return found


def text_of(content: object) -> str:
    """The text of OpenAI content: its text parts joined by a blank line (FMT-18)."""
    return "\n\n".join(p["text"] for p in parts(content) if p["type"] == "text")


def pack(found: list[Body]) -> str | list[Body]:
    """FMT-19: all-text parts become one string; a single image keeps the part list."""
    if any(p["type"] == "image_url" for p in found):
        return found
    return "\n\n".join(p["text"] for p in found)


def sniff(data: str) -> str:
    """The MIME type of base64 image data from its first bytes (FMT-21); image/png when unsure."""
    head = data[:24]
    try:
        raw = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return "image/png"
    for magic, mime in MAGIC:
        if raw.startswith(magic):
            return mime
    return "image/png"


def data_url(mime: object, data: object, what: str) -> Body:
    """An image part for base64 `data` (FMT-20); `what` names the source in the refusal."""
    if not isinstance(mime, str) or not mime.lower().startswith("image/"):
        shown = mime if isinstance(mime, str) and mime else "of no stated type"
        raise Unsupported(f"{what} is {shown}; {ONLY_IMAGES}")
    if not isinstance(data, str) or not data:
        raise Unsupported(f"{what} carries no base64 data")
    return image_part(f"data:{mime};base64,{data}")


def split_data_url(url: str) -> tuple[str, str] | None:
    """`(mime, base64 data)` of a `data:<mime>;base64,<data>` URL, or None for any other URL."""
    if not url.lower().startswith("data:"):
        return None
    head, _, data = url.partition(",")
    return head[5:].split(";", 1)[0], data


def guess_mime(url: str, default: str | None = None) -> str | None:
    """An image's MIME type from its URL's path (`.png`, `.jpg`, ...), else `default`."""
    try:
        path = urllib.parse.urlsplit(url).path
    except ValueError:
        return default
    return mimetypes.guess_type(path)[0] or default


def is_web(url: object) -> bool:
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


# ---------------------------------------------------------------- tools


def function_tool(name: object, description: object = None, parameters: object = None, **extra: Any) -> Body:
    """A tool as chat completions takes it (FMT-22)."""
    if not isinstance(name, str) or not name:
        raise Unsupported("every tool needs a name")
    function = {"name": name, "description": description if isinstance(description, str) else "",
                "parameters": parameters if parameters else {"type": "object", "properties": {}}}
    function.update(extra)
    return {"type": "function", "function": function}


def arguments_text(arguments: object) -> str:
    """A tool call's arguments as chat completions carries them: text as given, an object as JSON (FMT-23)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def tool_call(call_id: object, name: object, arguments: object) -> Body:
    """FMT-23: the given id (as text) or an invented `call_<hex24>`."""
    return {"id": str(call_id) if call_id not in (None, "") else "call_" + hex24(), "type": "function",
            "function": {"name": str(name or ""), "arguments": arguments_text(arguments)}}


def assistant(found: list[Body], calls: list[Body]) -> Body:
    """FMT-24: with calls, the content is its text or null; without, the packed parts."""
    if not calls:
        return {"role": "assistant", "content": pack(found)}
    text = "\n\n".join(p["text"] for p in found if p["type"] == "text")
    return {"role": "assistant", "content": text or None, "tool_calls": calls}


def _hashable(name: object) -> str:
    """A tool name as a dict key: a request may send any JSON value where a name belongs."""
    return name if isinstance(name, str) else json.dumps(name, sort_keys=True)


class Numbering:
    """Tool-call ids for inputs that usually carry none (Gemini, Ollama), fresh per request (FMT-26).

    A result takes the oldest open call with its id, or with its name; queues per id and per name
    make that constant time, so a body of many thousands of calls and results is read in linear time
    (security review 1: a list scan per result took minutes).
    """

    def __init__(self) -> None:
        self.n = 0
        self.open: dict[int, str] = {}  # sequence number -> call id, for the calls no result has answered yet
        self.by_id: dict[str, collections.deque[int]] = {}
        self.by_name: dict[str, collections.deque[int]] = {}
        self.order: collections.deque[int] = collections.deque()

    def call(self, given: object, name: object) -> str:
        call_id = str(given) if given not in (None, "") else f"call_{self.n}"
        seq = self.n
        self.n += 1
        self.open[seq] = call_id
        self.by_id.setdefault(call_id, collections.deque()).append(seq)
        self.by_name.setdefault(_hashable(name), collections.deque()).append(seq)
        self.order.append(seq)
        return call_id

    def _answer(self, queue: collections.deque[int] | None) -> str | None:
        """The id of the oldest open call in `queue`, now answered; None when none is open."""
        while queue:
            call_id = self.open.pop(queue.popleft(), None)
            if call_id is not None:
                return call_id
        return None

    def result(self, given: object, name: object) -> str:
        if given not in (None, ""):
            given = str(given)
            self._answer(self.by_id.get(given))
            return given
        found = self._answer(self.by_name.get(_hashable(name)) if name else self.order)
        return found if found is not None else f"call_{self.n}"


# ---------------------------------------------------------------- the Ask


@dataclasses.dataclass(frozen=True, slots=True)
class Ask:
    """What a client asked, whatever API it spoke (formats.md §3.2): every reader returns one.

    - `model`: as the client named it (Ollama: `:latest` removed; Gemini: from the path);
    - `messages`: OpenAI-style messages, images as `image_url` parts, tool calls and results in chat's shape;
    - `stream`; `nominees`: the aliases in `with`; `reply`: `bench.reply`, or "" (FMT-13);
    - `tools`: function tools in chat's shape (FMT-22; chat's as sent); `tool_choice`: in chat's shape or None;
    - `passthrough`: the other fields route mode forwards, in chat's names: sampling options, response_format,
      parallel_tool_calls (chat: every other field of the body);
    - `custom`: Responses only, the names of its custom tools (§6.2);
    - `load`: Ollama's "load the model" call, with no prompt and no messages (improvement 9);
    - `notes`: what the reader took but the gateway does not honour, for `bench.notes` (Responses' `store: true`).

    A panel reads the model, messages, stream, nominees and reply mode. Route mode (§11) sends the
    messages, tools, tool choice and pass-through fields on to one member (RT-11) and answers a call to a
    custom tool in the Responses shape (RT-21b). §3.2's `options` are among the pass-through fields, as
    nothing else reads them (each seat asks with its own), and its `upstream` is the three together.
    """

    model: str
    messages: list
    stream: bool
    nominees: list = dataclasses.field(default_factory=list)
    reply: str = ""
    tools: list = dataclasses.field(default_factory=list)
    tool_choice: object = None
    passthrough: dict = dataclasses.field(default_factory=dict)
    custom: list = dataclasses.field(default_factory=list)
    load: bool = False
    include_usage: bool = False  # chat completions' stream_options.include_usage: a final usage chunk
    notes: tuple[str, ...] = ()

    @property
    def agentic(self) -> bool:
        """True when the Ask carries tools, tool calls or tool results (§3.2): a panel refuses it (FMT-15)."""
        return bool(self.tools) or any(
            isinstance(m, dict) and (m.get("role") == "tool" or m.get("tool_calls")) for m in self.messages)


def bench_fields(body: Body) -> tuple[str, list[str], str]:
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
        raise Unsupported('"bench" must be an object whose "reply" is "all", "merged", "route" or "council"')
    return model, nominees, bench.get("reply", "")


def options(max_tokens: object = None, temperature: object = None, top_p: object = None, stop: object = None) -> Body:
    """Sampling options under chat completions' names (§3.2 `options`): `None` dropped, `stop` always a list.
    A panel never forwards them (FMT-15a); route mode does, in `Ask.passthrough` (RT-11)."""
    if isinstance(stop, str):
        stop = [stop]
    found = {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p, "stop": stop}
    return {k: v for k, v in found.items() if v is not None}


def make_ask(body: Body, messages: list[Any], stream: object, options: Body, upstream: Body, model: str | None = None,
             custom: Iterable[str] = (), load: bool = False, include_usage: bool = False,
             notes: Iterable[str] = ()) -> Ask:
    """The Ask of a reader's results: `options` and `upstream` in chat completions' names, `None` dropped
    (§3.2); `with` and `bench` are checked here for every format."""
    asked, nominees, reply = bench_fields(body)
    fields = {k: v for k, v in {**upstream, **options}.items() if v is not None}
    return Ask(asked if model is None else model, messages, bool(stream), nominees, reply,
               tools=fields.pop("tools", []), tool_choice=fields.pop("tool_choice", None), passthrough=fields,
               custom=list(custom), load=load, include_usage=include_usage, notes=tuple(notes))


# issue 30: the pass-through fields whose effect a client would miss from a panel's reply (FMT-15a)
NOT_APPLIED = ("max_tokens", "max_completion_tokens", "n", "stop", "temperature", "top_p", "seed",
               "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs")


def _asks_for(field: str, value: object) -> bool:
    """True when `value` asks for something a panel's reply lacks (`n: 1` and `logprobs: false` ask nothing)."""
    return value is not None and value is not False and not (field == "n" and value == 1)


def panel_notes(ask: Ask, name: str) -> list[str]:
    """What a panel says in `bench.notes` about the fields it does not apply (FMT-15a, issue 30): the reader's own
    notes, the sampling and shape fields by name, then `response_format`; route mode applies them all."""
    notes = list(ask.notes)
    ignored = [field for field in NOT_APPLIED if _asks_for(field, ask.passthrough.get(field))]
    if ignored:
        notes.append(f"not applied by a panel: {', '.join(ignored)}; each seat answers once with its own options, so "
                     f"the reply is one choice of any length; to have them applied ask one member with route mode "
                     f"(bench/{name}:route)")
    if ask.passthrough.get("response_format") not in (None, {"type": "text"}):
        notes.append("response_format is ignored by a panel: several models answer in markdown, so the reply is not "
                     f"JSON; for structured output ask one member with route mode (bench/{name}:route)")
    return notes


def a_list(value: object, message: str) -> list[Body]:
    """`value` when it is a list of objects, else `Unsupported(message)`."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise Unsupported(message)
    return value


def kind_of(value: object) -> str:
    """A JSON value's kind for a refusal: the `type` of an object, else its JSON type."""
    if isinstance(value, dict):
        return str(value.get("type"))
    return {str: "string", bool: "boolean", int: "number", float: "number", list: "list"}.get(
        type(value), "null" if value is None else type(value).__name__)


# ---------------------------------------------------------------- one object per API


class Format:
    """One client's API on a panel route (formats.md §5-§8, §10): one subclass per API, in its own module.

    A subclass names its fmt id (`name`, FMT-3) and its panel stream writer (`Stream`, STR-1), and gives
    `read`, `answer` and `error_body`; the rest has a default a subclass may replace, route mode's
    `route_writer` and `route_reply` (RT-21) among them.
    """

    name = ""
    Stream: Callable[..., Any]  # the panel stream writer's class: `Stream(write, shown=, prompt_tokens=)`
    # what `/openapi.json` says of this API's panel route (issue 33): the body it takes, the reply, one streamed
    # event (an SSE `data:` line's JSON, or an NDJSON line) and a request the demo bench answers
    takes: schemas.Schema = schemas.OBJ
    gives: schemas.Schema = schemas.OBJ
    events: schemas.Schema = schemas.OBJ
    example: Body = {}

    @property
    def stream_types(self) -> tuple[str, ...]:
        """The Content-Types of this API's streamed replies."""
        return (str(getattr(self.Stream, "content_type")),)

    def read(self, body: Body) -> Ask:
        """The Ask of a body posted to this API's panel route (§3.2), or `Unsupported` with why (a 400)."""
        raise NotImplementedError

    def answer(self, content: str, shown: str, bench: Body, tokens: tuple[int, int], seconds: float) -> Body:
        """The body of a non-streamed panel reply (FMT-16); `tokens` = (input, output) estimates."""
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> Body:
        """§2: this API's refusal body, for any status."""
        raise NotImplementedError

    def headers(self, bench: Body) -> dict[str, str]:
        """Extra headers of a non-streamed panel reply (FMT-16): none but Gemini's."""
        return {}

    def shown(self, name: str, ask: Ask) -> str:
        """FMT-14: the model name a reply shows: the model as asked (chat completions shows the collection)."""
        return ask.model

    def reply(self, content: str, shown: str, bench: Body, tokens: tuple[int, int],
              seconds: float) -> tuple[Body, dict[str, str]]:
        """`(body, headers)` of a non-streamed panel reply (FMT-16)."""
        return self.answer(content, shown, bench, tokens, seconds), self.headers(bench)

    def writer(self, shown: str, tokens_in: int = 0, sse: bool = False) -> Callable[[Write], Any]:
        """A factory `make(write)` for this API's panel stream writer (STR-1); `sse` is Gemini's `?alt=sse`."""
        return functools.partial(self.Stream, shown=shown, prompt_tokens=tokens_in)

    # -- route mode (§11.7): one member's turn relayed in this API's shape

    def route_writer(self, shown: str, tokens_in: int = 0, sse: bool = False,
                     custom: Iterable[str] = ()) -> Callable[[Write], Any]:
        """A factory `make(write)` for this API's route stream writer (RT-20, RT-21): `start()`, `chunk(chunk,
        text)` per relayed member chunk and the answer text it added, `end(turn, bench)`, `error(status,
        message)`, `keepalive()`. By default the panel's writer carries the text alone (no tool calls)."""
        make = self.writer(shown, tokens_in, sse)
        return lambda write: TextRoute(make(write), tokens_in)

    def route_reply(self, turn: Any, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        """`(body, headers)` of a non-streamed route reply (RT-21): the panel reply's shape with the member's
        text and tokens; the formats that carry tool calls replace it. `turn` is a `turn.Turn`, not named
        here: that module imports this one."""
        return self.answer(turn.text, shown, bench, turn.tokens(tokens_in), seconds), {}


class TextRoute:
    """A route turn on a panel stream writer, for the APIs that carry text only (legacy completions, Ollama's
    generate): each piece of answer text as it comes, the end with the member's finish (`length` when it ran
    out of output, improvement 4; the reference always said `stop`)."""

    def __init__(self, stream: Any, tokens_in: int = 0) -> None:
        self.stream = stream
        self.tokens_in = tokens_in
        self.content_type = stream.content_type

    def start(self) -> None:
        self.stream.start()

    def chunk(self, chunk: Body, text: str) -> None:
        if text:
            self.stream.text(text)

    def end(self, turn: Any, bench: Body) -> None:
        self.stream.reason = "length" if turn.stop == "length" else "stop"
        self.stream.end(bench, turn.tokens(self.tokens_in))  # the member's tokens, not a panel's

    def error(self, status: int, message: str) -> None:
        self.stream.error(status, message)

    def keepalive(self) -> None:
        self.stream.keepalive()


# ---------------------------------------------------------------- outbound


def outbound_turns(messages: list[Any]) -> tuple[str, list[Body]]:
    """`(system text, other messages)` for a native API (OUT-1); tool turns refused (REQ-8)."""
    for message in messages:
        if not isinstance(message, dict):
            raise Unsupported('"messages" must be a list of message objects')
        if message.get("role") in ("tool", "function") or message.get("tool_calls"):
            raise Unsupported(TOOL_TURNS)
    lead = ("system", "developer")
    system = "\n\n".join(text_of(m.get("content")) for m in messages if m.get("role") in lead)
    return system, [m for m in messages if m.get("role") not in lead]


# ---------------------------------------------------------------- writing


KEEPALIVE_COMMENT = b": keep-alive\n\n"


def json_bytes(payload: object) -> bytes:
    """`payload` as UTF-8 JSON, non-ASCII unescaped, for a stream. A lone surrogate (a model's answer may hold
    one) goes out as its `\\udXXX` escape, inside its string, rather than raising mid-stream (issue 21)."""
    return json.dumps(payload, ensure_ascii=False).encode("utf-8", "backslashreplace")


def sse(payload: object, event: str | None = None) -> bytes:
    """One SSE event (§0): named when `event` is given; JSON keeps non-ASCII as UTF-8."""
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json_bytes(payload) + b"\n\n"
