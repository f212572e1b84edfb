"""One member's turn in route mode, assembled from the chat completions chunks it streamed (formats.md §11.6).

Route mode relays a member's chunks to the client as they come; every format but chat completions
also needs the turn whole at its end (Anthropic's `tool_use` blocks, Responses' call items, Gemini's
`functionCall` parts, Ollama's `tool_calls`). `Turn.feed(chunk)` takes each chunk and says what it
added; the properties give the assembled answer.

Tool-call deltas are matched to calls as providers really send them (ACC-2): by id when one was
seen, by index otherwise, an id arriving after a call's first piece joins that call, and a new id
on a reused index starts a new call.

Improvement 15: a reported token count of 0 is a count (a tool-call-only turn may really have
produced no text tokens by the provider's measure), not a missing one.
"""

import json
from typing import cast


from ..core import images
from . import common
from .common import Body


def delta_text(value: object) -> str:
    """A delta's (or a message's) text: a string, or a list of parts whose `text` fields are joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class Call:
    """One tool call as it is assembled: its id (invented until the member names one), name and arguments."""

    __slots__ = ("id", "name", "pieces", "invented")

    def __init__(self, call_id: str | None) -> None:
        self.invented = not call_id
        self.id = str(call_id) if call_id else "call_" + common.hex24()
        self.name = ""
        self.pieces: list[str] = []

    @property
    def arguments(self) -> str:
        """The arguments as the member sent them, text; `{}` when it sent none (RT-21 chat: `"{}"`)."""
        return "".join(self.pieces) or "{}"

    @property
    def arguments_object(self) -> Body:
        """ACC-4: the arguments as an object, for the formats that need one."""
        raw = "".join(self.pieces)
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except ValueError:
            return {"arguments": raw}
        return value if isinstance(value, dict) else {"arguments": value}

    def chat(self) -> Body:
        """The call in chat completions' `tool_calls` shape."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class Turn:
    """ACC-1..4: what a member's chunks add up to."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self.calls: list[Call] = []
        self._by_id: dict[str, Call] = {}
        self._by_index: dict[int, Call] = {}
        self._last: Call | None = None
        self.usage: Body = {}
        self.model = ""
        self.finish = ""

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    @property
    def stop(self) -> str:
        """ACC-4: `tool_calls` whenever a call exists, else the member's last finish reason, else `stop`."""
        return "tool_calls" if self.calls else (self.finish or "stop")

    @property
    def answered(self) -> bool:
        """Whether the member said anything an agent can use: text or a tool call (RT-16 `ok`)."""
        return bool(self._text) or bool(self.calls)

    def feed(self, chunk: object) -> tuple[str, bool]:
        """Take one chunk; returns `(answer text it added, whether it added text or a tool-call delta)` (ACC-3)."""
        if not isinstance(chunk, dict):
            return "", False
        if isinstance(chunk.get("usage"), dict) and chunk["usage"]:
            self.usage = chunk["usage"]
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        choices = chunk.get("choices")
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            return "", False
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
            self.finish = choice["finish_reason"]
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else choice.get("message")
        if not isinstance(delta, dict):
            return "", False
        thought = delta_text(delta.get("reasoning_content")) or delta_text(delta.get("reasoning"))
        if thought:
            self._reasoning.append(thought)
        text = delta_text(delta.get("content"))
        if text:
            self._text.append(text)
        touched = False
        for piece in common.items(delta.get("tool_calls")):
            if isinstance(piece, dict):
                self._call_delta(piece)
                touched = True
        return text, bool(text) or touched

    def _call_delta(self, piece: Body) -> None:
        """ACC-2: the call a delta belongs to, then its name and arguments."""
        given = piece.get("id")
        given = str(given) if given not in (None, "") else None
        index = piece.get("index") if isinstance(piece.get("index"), int) else None
        call = self._by_id.get(given) if given else None
        if call is None and given and index in self._by_index and self._by_index[index].invented:
            call = self._by_index[index]
            call.id, call.invented = given, False
        if call is None and (given or not self.calls or (index is not None and index not in self._by_index)):
            call = Call(given)
            self.calls.append(call)
        if call is None:  # a turn with calls has touched one: `_last` is set
            call = self._by_index[index] if index is not None else cast(Call, self._last)
        if given:
            self._by_id[given] = call
        if index is not None:
            self._by_index[index] = call
        self._last = call
        function = common.obj(piece.get("function"))
        if not call.name and isinstance(function.get("name"), str):
            call.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.pieces.append(arguments)
        elif isinstance(arguments, (dict, list)):
            call.pieces.append(json.dumps(arguments, ensure_ascii=False))

    def tokens(self, estimate_in: int) -> tuple[int, int]:
        """ACC-4: (input, output) tokens, from the member's usage when it reported them, else estimated."""
        usage = self.usage
        tokens_in = _count(usage.get("prompt_tokens"))
        if tokens_in is None:
            tokens_in = _count(usage.get("input_tokens"))
        tokens_out = _count(usage.get("completion_tokens"))
        if tokens_out is None:
            tokens_out = _count(usage.get("output_tokens"))
        if tokens_in is None:
            tokens_in = estimate_in
        if tokens_out is None:
            tokens_out = images.estimate(self.text + "".join("".join(c.pieces) for c in self.calls))
        return tokens_in, tokens_out

    def reasoning_tokens(self) -> int | None:
        """The reasoning tokens the member reported (RT-22 `reasoning`), or None."""
        details = self.usage.get("completion_tokens_details") or self.usage.get("output_tokens_details")
        return _count(details.get("reasoning_tokens")) if isinstance(details, dict) else None
