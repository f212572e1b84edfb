"""Gemini: `POST …/models/<collection>:generateContent`, `:streamGenerateContent`, `:countTokens`,
`GET /v1beta/models[/<name>]` (formats.md §8, §12 OUT-3; models.md REQ-3, STR-15).

The collection is named in the path (`/v1beta/models/bench/core:generateContent`),
so `ask()` takes it from there. Google's SDK rejects unknown fields, so the panel's
`bench` object never appears in a Gemini body: the panel id and the seats' call ids
travel in the `X-Bench-Panel` / `X-Bench-Seats` headers (non-streamed) and in the text.

Both camelCase and snake_case field names are read everywhere (`field()`).

Decisions where the spec is silent or improved:
- improvement 11: `tools` given as an object, or a function declaration that is
  not an object, is refused with why.
- image parts in `systemInstruction` are refused (it is text only), not dropped.
- the JSON-array stream writes its `[` with the first element, so nothing is sent
  before the first chunk, exactly as §8.1 describes it.
"""

import functools
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from . import common, schemas
from .schemas import INT, STR, arr, described, obj
from .common import Body, Write
from .turn import Turn

STATUS = {400: "INVALID_ARGUMENT", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED",
          403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
ROOTS = ("/v1beta/models/", "/v1/models/")
METHODS = ("generateContent", "streamGenerateContent")
FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
GEMINI_TOOLS = "a tool Gemini runs itself (Google Search, code execution, URL context); no other model can run it"
TOOLS_SHAPE = '"tools" must be a list of {"functionDeclarations": [...]} objects'


def error_body(status: int, message: str) -> Body:
    return {"error": {"code": status, "message": message, "status": STATUS.get(status, "INTERNAL")}}


def model_path(path: str) -> tuple[str, str] | None:
    """`(model, method)` of a Gemini model path (FMT-4), or None. Splits at the last `:`."""
    for root in ROOTS:
        if path.startswith(root):
            model, colon, method = urllib.parse.unquote(path[len(root):]).rpartition(":")
            return (model, method) if colon and model else None
    return None


def not_allowed(method: str) -> str:
    return f"POST /v1beta/models/<collection>:generateContent or :streamGenerateContent, not :{method}"


def field(obj: object, camel: str) -> Any:
    """`obj[camel]`, else its snake_case spelling (`systemInstruction` / `system_instruction`)."""
    if not isinstance(obj, dict):
        return None
    if camel in obj:
        return obj[camel]
    return obj.get(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel))


def lowered(schema: object) -> Any:
    """A schema with every string `type` lower-cased, recursively (`OBJECT` → `object`)."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else lowered(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [lowered(v) for v in schema]
    return schema


# ---------------------------------------------------------------- reading a request


def _parts(given: object, role: str) -> list[Body]:
    if isinstance(given, dict):
        given = [given]
    if not isinstance(given, list):
        raise common.Unsupported(f"{role}: parts must be a list")
    if not all(isinstance(p, dict) for p in given):
        raise common.Unsupported(f"{role}: every part must be an object")
    return given


def _media(part: Body) -> Body | None:
    """An image part for `inlineData` or `fileData`, else None."""
    inline = field(part, "inlineData")
    if inline is not None:
        mime = field(inline, "mimeType")
        return common.data_url(mime, field(inline, "data"), "an inlineData part")
    stored = field(part, "fileData")
    if stored is None:
        return None
    uri = field(stored, "fileUri")
    mime = field(stored, "mimeType") or (common.guess_mime(uri) if isinstance(uri, str) else None)
    if not isinstance(mime, str) or not mime.lower().startswith("image/"):
        raise common.Unsupported(f"a fileData part is {mime or 'of no known type'}; {common.ONLY_IMAGES}")
    if not common.is_web(uri):
        raise common.Unsupported("a fileData part must name an http(s) URL; a file uploaded to Google's Files API "
                                 "cannot be reached by other models")
    return common.image_part(uri)


def _turn(content: Body, numbering: common.Numbering) -> list[Body]:
    """The messages of one content object."""
    role = content.get("role") or "user"
    if role not in ("user", "model", "function"):
        raise common.Unsupported(f'a content "role" must be "user" or "model", not {role!r}')
    found: list[Body] = []
    calls: list[Body] = []
    results: list[Body] = []
    for part in _parts(field(content, "parts"), role):
        if part.get("thought") is True:
            continue  # FMT-25
        call, response = field(part, "functionCall"), field(part, "functionResponse")
        if "text" in part:
            found.append(common.text_part(str(part["text"] or "")))
        elif call is not None:
            if role != "model":
                raise common.Unsupported("a functionCall part belongs in a model turn")
            call = call if isinstance(call, dict) else {}
            call_id = numbering.call(call.get("id"), call.get("name"))
            args = call.get("args")
            calls.append(common.tool_call(call_id, call.get("name"), {} if args is None else args))
        elif response is not None:
            if role == "model":
                raise common.Unsupported("a functionResponse part belongs in a user turn, not a model turn")
            response = response if isinstance(response, dict) else {}
            results.append({"role": "tool", "tool_call_id": numbering.result(response.get("id"), response.get("name")),
                            "content": json.dumps(response.get("response") or {}, ensure_ascii=False)})
        elif field(part, "executableCode") is not None or field(part, "codeExecutionResult") is not None:
            raise common.Unsupported("code execution parts belong to Gemini's own code execution tool; no other "
                                     "model runs it")
        else:
            media = _media(part)
            if media is None:
                keys = ", ".join(sorted(part)) or "nothing"
                raise common.Unsupported(f"a part with {keys} cannot be put to a panel; send text and images")
            found.append(media)
    if role == "model":
        return [common.assistant(found, calls)]
    return results + ([{"role": "user", "content": common.pack(found)}] if found or not results else [])


def _system(given: object) -> str:
    if isinstance(given, str):
        return given
    found = []
    for part in _parts(field(given, "parts") if isinstance(given, dict) else given, "systemInstruction"):
        if field(part, "functionCall") is not None or field(part, "functionResponse") is not None:
            raise common.Unsupported("a function call or response cannot be here, in systemInstruction")
        if "text" not in part:
            raise common.Unsupported("systemInstruction takes text parts only; put images in a user turn")
        found.append(str(part["text"] or ""))
    return "\n\n".join(found)


def _tools(body: Body) -> Body:
    tools = field(body, "tools")
    if tools is None:
        return {}
    if not isinstance(tools, list):
        raise common.Unsupported(TOOLS_SHAPE)
    defs = []
    for tool in tools:
        keys = sorted(tool) if isinstance(tool, dict) else []
        if keys not in (["functionDeclarations"], ["function_declarations"]):
            raise common.Unsupported(f"a tool with {', '.join(keys) or 'nothing'} is {GEMINI_TOOLS}; send "
                                     "functionDeclarations")
        declarations = field(tool, "functionDeclarations")
        if not isinstance(declarations, list) or not all(isinstance(d, dict) for d in declarations):
            raise common.Unsupported("functionDeclarations must be a list of objects with a name")
        for declaration in declarations:
            schema = field(declaration, "parametersJsonSchema") or lowered(declaration.get("parameters"))
            defs.append(common.function_tool(declaration.get("name"), declaration.get("description"), schema))
    if not defs:
        return {}
    upstream: Body = {"tools": defs}
    config = field(field(body, "toolConfig"), "functionCallingConfig")
    mode = str(field(config, "mode") or "").upper()
    if mode == "NONE":
        upstream["tool_choice"] = "none"
    elif mode in ("ANY", "VALIDATED"):
        allowed = field(config, "allowedFunctionNames")
        upstream["tool_choice"] = ({"type": "function", "function": {"name": allowed[0]}}
                                   if isinstance(allowed, list) and len(allowed) == 1 else "required")
    return upstream


def ask(body: Body, model: str = "", method: str = "generateContent") -> common.Ask:
    """The Ask of a generateContent body for the path's `model` (§8.1), or `Unsupported` with why.

    Ignored: topK, candidateCount, thinkingConfig, safetySettings, cachedContent.
    """
    contents = field(body, "contents")
    if isinstance(contents, dict):
        contents = [contents]
    messages: list[Body] = []
    system = field(body, "systemInstruction")
    if system:
        messages.append({"role": "system", "content": _system(system)})
    numbering = common.Numbering()
    for content in common.a_list(contents, '"contents" must be a list of content objects'):
        messages += _turn(content, numbering)
    config = field(body, "generationConfig")
    config = config if isinstance(config, dict) else {}
    upstream = _tools(body)
    if field(config, "responseMimeType") == "application/json":
        schema = field(config, "responseJsonSchema") or lowered(field(config, "responseSchema"))
        upstream["response_format"] = ({"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}
                                       if schema else {"type": "json_object"})
    options = common.options(field(config, "maxOutputTokens"), config.get("temperature"), field(config, "topP"),
                             field(config, "stopSequences"))
    return common.make_ask(body, messages, method == "streamGenerateContent", options, upstream, model=model)


def count(body: Body) -> int:
    """`:countTokens` (FMT-70): P of `generateContentRequest` when present, else of the body."""
    request = field(body, "generateContentRequest")
    return common.prompt_tokens(ask(request if isinstance(request, dict) else body, "").messages)


# ---------------------------------------------------------------- answering


def usage_of(tokens_in: int, tokens_out: int) -> Body:
    return {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out,
            "totalTokenCount": tokens_in + tokens_out}


def _chunk(text: str, shown: str, response_id: str, finish: str | None = None, usage: Body | None = None) -> Body:
    candidate: Body = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    chunk: Body = {"candidates": [candidate], "modelVersion": shown, "responseId": response_id}
    if usage:
        chunk["usageMetadata"] = usage
    return chunk


def reply(content: str, shown: str, bench: Body | None, tokens: tuple[int, int], seconds: float = 0) -> Body:
    """The non-streamed reply: no `bench` key (Google's SDK refuses unknown fields); see `headers()`."""
    return _chunk(content, shown, common.hex24(), "STOP", usage_of(*tokens))


def headers(bench: Body) -> dict[str, str]:
    """FMT-16: the panel id and every seat's call id, for clients that cannot read a `bench` field."""
    if not bench:
        return {}
    seats = list(bench.get("seats") or []) + ([bench["merger"]] if bench.get("merger") else [])
    listed = [{k: s.get(k) for k in ("call", "seat", "alias", "status")} for s in seats]
    return {"X-Bench-Panel": bench.get("panel", ""), "X-Bench-Seats": json.dumps(listed)}


class _Chunks:
    """What the panel stream and a route turn's stream share: chunks as SSE `data:` events (`?alt=sse`) or as one
    JSON array written as it grows (§8.1), text pieces, the error and the keep-alive.

    No `bench` anywhere; keep-alive is an empty-text chunk, since Google's readers
    take any line that is not `data:` for an error.
    """

    def __init__(self, write: Write, shown: str, prompt_tokens: int = 0, sse: bool = False) -> None:
        self.write = write
        self.shown = shown
        self.prompt_tokens = prompt_tokens
        self.sse = sse
        self.content_type = "text/event-stream" if sse else "application/json"
        self.id = common.hex24()
        self.elements = 0

    def _emit(self, obj: Body, last: bool = False) -> None:
        data = common.json_bytes(obj)
        if self.sse:
            self.write(b"data: " + data + b"\n\n")
        else:
            self.write((b"[" if not self.elements else b",\r\n") + data + (b"]" if last else b""))
        self.elements += 1

    def start(self) -> None:
        """Nothing opens a Gemini stream: the first chunk does."""

    def text(self, piece: str) -> None:
        self._emit(_chunk(piece, self.shown, self.id))

    def error(self, status: int, message: str) -> None:
        self._emit(error_body(status, message), last=True)

    def keepalive(self) -> None:
        self._emit(_chunk("", self.shown, self.id))


class Stream(_Chunks):
    """The panel stream: the text as it comes, then a last chunk with the finish and the estimated tokens."""

    def end(self, bench: Body | None) -> None:
        usage = usage_of(*common.panel_tokens(bench, self.prompt_tokens))
        self._emit(_chunk("", self.shown, self.id, "STOP", usage), last=True)


FINISH_REASON = {"length": "MAX_TOKENS"}


def _call_parts(turn: Turn) -> list[Body]:
    return [{"functionCall": {"id": call.id, "name": call.name, "args": call.arguments_object}} for call in turn.calls]


def _route_last(turn: Turn, shown: str, response_id: str, text: str, tokens: tuple[int, int]) -> Body:
    """The last chunk of a route turn: the finish, the member's tokens and, when it called tools, the calls as
    its parts (RT-21); no `bench`, which Google's readers refuse."""
    last = _chunk(text, shown, response_id, FINISH_REASON.get(turn.stop, "STOP"), usage_of(*tokens))
    if turn.calls:
        last["candidates"][0]["content"]["parts"] = _call_parts(turn)
    return last


def route_reply(turn: Turn, shown: str, tokens_in: int) -> Body:
    answer = _route_last(turn, shown, common.hex24(), turn.text, turn.tokens(tokens_in))
    if turn.calls and turn.text:
        answer["candidates"][0]["content"]["parts"].insert(0, {"text": turn.text})
    return answer


def route_headers(bench: Body) -> dict[str, str]:
    """Gemini carries no `bench` in a body: the call id goes in a header of its own (improvement 7)."""
    return {"X-Bench-Call": bench["call"]} if bench and bench.get("call") else {}


class RouteStream(_Chunks):
    """A route turn (RT-21): text chunks as they come; the last chunk says how it ended and carries the calls."""

    def chunk(self, chunk: Body, text: str) -> None:
        if text:
            self.text(text)

    def end(self, turn: Turn, bench: Body) -> None:
        self._emit(_route_last(turn, self.shown, self.id, "", turn.tokens(self.prompt_tokens)), last=True)


# ---------------------------------------------------------------- listing


def model_entry(row: Body) -> Body:
    """FMT-71: one listed name as a Gemini model."""
    together = common.obj(row.get("together"))
    entry: Body = {"name": "models/" + row["id"], "baseModelId": row["id"], "version": "1", "displayName": row["id"],
             "description": row.get("description") or ""}
    if together.get("context_window"):
        entry["inputTokenLimit"] = together["context_window"]
    entry["supportedGenerationMethods"] = ["generateContent", "streamGenerateContent", "countTokens"]
    return entry


def models(rows: list[Body]) -> Body:
    return {"models": [model_entry(row) for row in rows]}


def model(rows: list[Body], name: str) -> Body | None:
    """FMT-72: the entry for exactly a listed name (`bench/core`, `bench/core:merged`), else None."""
    return next((model_entry(r) for r in rows if r["id"] == name), None)


def not_listed(name: str) -> str:
    return f"{name!r} is not a collection here; GET /v1beta/models lists them"


# ---------------------------------------------------------------- outbound


def _native_parts(content: object) -> list[Body]:
    found: list[Body] = []
    for part in common.parts(content):
        if part["type"] == "text":
            found.append({"text": part["text"]})
            continue
        url = part["image_url"]["url"]
        inline = common.split_data_url(url)
        if inline:
            found.append({"inlineData": {"mimeType": inline[0], "data": inline[1]}})
        else:
            found.append({"fileData": {"mimeType": common.guess_mime(url, "image/jpeg"), "fileUri": url}})
    return found


def request(messages: list[Any], options: Body | None = None) -> Body:
    """The native generateContent body for OpenAI `messages` (OUT-3, REQ-3); `Unsupported` for tool turns."""
    system, turns = common.outbound_turns(messages)
    body: Body = {"contents": [{"role": "model" if m.get("role") == "assistant" else "user",
                          "parts": _native_parts(m.get("content"))} for m in turns]}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    options = options or {}
    config: Body = {}
    for name, native in (("max_tokens", "maxOutputTokens"), ("temperature", "temperature"), ("top_p", "topP"),
                         ("stop", "stopSequences")):
        if options.get(name) is not None:
            value = options[name]
            config[native] = [value] if name == "stop" and isinstance(value, str) else value
    if config:
        body["generationConfig"] = config
    return body


def url(base: str, model: str, stream: bool = True) -> str:
    """Where a native call goes (REQ-3): the model without `models/`, URL-quoted keeping `-._~`."""
    name = urllib.parse.quote(model.removeprefix("models/"), safe="-._~")
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"{base}/models/{name}:{method}"


class Reader(common.Pieces):
    """Reads Gemini chunks back (OUT-6, STR-15): thought parts are reasoning, the rest text."""

    @property
    def finish(self) -> str:
        return FINISH.get(self.stop, self.stop.lower())

    def feed(self, chunk: Body) -> list[tuple[str, str]]:
        if "error" in chunk:
            error = chunk["error"] if isinstance(chunk["error"], dict) else {}
            raise common.UpstreamError(str(error.get("message") or ""), error.get("code") or "stream", chunk)
        if isinstance(chunk.get("modelVersion"), str):
            self.model = chunk["modelVersion"]
        meta = chunk.get("usageMetadata")
        if isinstance(meta, dict):
            usage = {"prompt_tokens": meta.get("promptTokenCount"),
                     "completion_tokens": meta.get("candidatesTokenCount")}
            self.usage = {k: v for k, v in usage.items() if v is not None}
            if meta.get("thoughtsTokenCount"):
                self.usage["completion_tokens_details"] = {"reasoning_tokens": meta["thoughtsTokenCount"]}
        candidates = chunk.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if not isinstance(candidate, dict):
            return []
        added: list[tuple[str, str]] = []
        content = common.obj(candidate.get("content"))
        for part in common.items(content.get("parts")):
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
                kind = "reasoning" if part.get("thought") is True else "text"
                self.pieces[kind].append(part["text"])
                added.append((kind, part["text"]))
        if candidate.get("finishReason"):
            self.stop = candidate["finishReason"]
            self.done = True
        return added

    def end(self) -> None:
        """Errors raised as they came."""


# ---------------------------------------------------------------- the API


class GenerateContent(common.Format):
    """Gemini's `:generateContent` and `:streamGenerateContent` (§8.1): `read(body, model, method)` takes
    the model and the method from the path."""

    name = "gemini"
    Stream = Stream
    takes = obj({"contents": schemas.either(arr(schemas.OBJ), schemas.OBJ)}, systemInstruction=schemas.OBJ)
    gives = described(obj({"candidates": arr(obj({"content": schemas.OBJ}, finishReason=STR, index=INT)),
                           "modelVersion": STR, "responseId": STR}, usageMetadata=schemas.OBJ),
                      "no `bench` (Google's SDK refuses unknown fields): the X-Bench-Panel and X-Bench-Seats headers "
                      "carry the panel id and each seat's call id")
    events = described(schemas.either(gives, obj({"error": schemas.OBJ})),
                       "a GenerateContentResponse per piece, the last with `finishReason` and `usageMetadata`; "
                       "an error body when the panel fails after the 200")
    example = {"contents": [{"role": "user", "parts": [{"text": schemas.QUESTION}]}]}

    @property
    def stream_types(self) -> tuple[str, ...]:
        """§8.1: one JSON array written as it grows, or SSE events with `?alt=sse`."""
        return ("application/json", "text/event-stream")
    read = staticmethod(ask)
    answer = staticmethod(reply)
    error_body = staticmethod(error_body)
    headers = staticmethod(headers)

    def writer(self, shown: str, tokens_in: int = 0, sse: bool = False) -> Callable[[Write], Any]:
        """§8.1: SSE events with `?alt=sse`, else one JSON array written as it grows."""
        return functools.partial(Stream, shown=shown, prompt_tokens=tokens_in, sse=sse)

    def route_writer(self, shown: str, tokens_in: int = 0, sse: bool = False,
                     custom: Iterable[str] = ()) -> Callable[[Write], Any]:
        return functools.partial(RouteStream, shown=shown, prompt_tokens=tokens_in, sse=sse)

    def route_reply(self, turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        return route_reply(turn, shown, tokens_in), route_headers(bench)
