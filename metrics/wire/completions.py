"""OpenAI legacy completions: `POST /v1/completions` (formats.md §5.2).

One prompt string becomes one user message; the panel's answer comes back as
`choices[0].text`. Refusals use the chat completions shape (§2).

Decision (improvement 4): streamed chunks carry a `cmpl-` id like the
non-streamed reply, not the reference's `chatcmpl-`.
"""

import time
from collections.abc import Iterable
from typing import Any

from . import chat, common, schemas
from .schemas import INT, MODEL, STR, arr, described, maybe, obj
from .common import Body, Write
from .turn import Turn

ONE_PROMPT = ('"prompt" must be one string (or a list of exactly one string); lists of several prompts and '
              "token ids are not supported")

error_body = chat.error_body


def ask(body: Body) -> common.Ask:
    """The Ask of a completions body. Ignored: suffix, echo, n, logprobs, best_of and the rest."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise common.Unsupported(ONE_PROMPT)
    options = common.options(body.get("max_tokens"), body.get("temperature"), body.get("top_p"), body.get("stop"))
    return common.make_ask(body, [{"role": "user", "content": prompt}], body.get("stream"), options, {})


def completion_id() -> str:
    return "cmpl-" + common.hex24()


def reply(content: str, shown: str, bench: Body | None, tokens: tuple[int, int], seconds: float = 0,
          reason: str = "stop") -> Body:
    tokens_in, tokens_out = tokens
    answer: Body = {"id": completion_id(),
 "object": "text_completion", "created": int(time.time()), "model": shown,
              "choices": [{"text": content, "index": 0, "logprobs": None, "finish_reason": reason}],
              "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                        "total_tokens": tokens_in + tokens_out}}
    if bench is not None:
        answer["bench"] = bench
    return answer


class Stream:
    """No opening chunk; one chunk per piece; the last carries `finish_reason` and `bench`, then `[DONE]`."""

    content_type = "text/event-stream"

    def __init__(self, write: Write, shown: str, prompt_tokens: int = 0, reason: str = "stop") -> None:
        self.write = write
        self.shown = shown
        self.id = completion_id()
        self.created = int(time.time())
        self.reason = reason  # a route turn that ran out of output ends `length`

    def _chunk(self, text: str, finish: str | None = None, **extra: Any) -> None:
        chunk = {"id": self.id, "object": "text_completion", "created": self.created, "model": self.shown,
                 "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}], **extra}
        self.write(common.sse(chunk))

    def start(self) -> None:
        """Legacy completions have no opening chunk."""

    def text(self, piece: str) -> None:
        self._chunk(piece)

    def end(self, bench: Body | None, tokens: tuple[int, int] | None = None) -> None:
        """The last chunk; a legacy stream carries no usage, so a route turn's `tokens` are not shown."""
        self._chunk("", self.reason, **({"bench": bench} if bench is not None else {}))
        self.write(b"data: [DONE]\n\n")

    def error(self, status: int, message: str) -> None:
        self.write(common.sse(error_body(status, message)))
        self.write(b"data: [DONE]\n\n")

    def keepalive(self) -> None:
        self.write(common.KEEPALIVE_COMMENT)


class Completions(common.Format):
    """OpenAI legacy completions on `POST /v1/completions` (§5.2)."""

    name = "completion"
    Stream = Stream
    takes = obj({"model": MODEL, "prompt": schemas.either(STR, arr(STR))}, stream=schemas.STREAM,
                bench=schemas.BENCH_ASK)
    gives = obj({"id": STR, "object": STR, "created": INT, "model": STR,
                 "choices": arr(obj({"text": STR, "index": INT}, finish_reason=maybe(STR)))},
                usage=schemas.OBJ, bench=schemas.BENCH)
    events = described(obj({}, id=STR, object=STR, choices=arr(schemas.OBJ), bench=schemas.BENCH, error=schemas.OBJ),
                       "a `text_completion` chunk per piece (the last carries `bench`), then `data: [DONE]`")
    example = {"model": "bench/demo", "prompt": schemas.QUESTION}
    read = staticmethod(ask)
    answer = staticmethod(reply)
    error_body = staticmethod(error_body)

    def route_reply(self, turn: Turn, shown: str, bench: Body, tokens_in: int, seconds: float,
                    custom: Iterable[str] = ()) -> tuple[Body, dict[str, str]]:
        """RT-21: the text, the member's tokens, `length` when it ran out of output (improvement 4)."""
        reason = "length" if turn.stop == "length" else "stop"
        return reply(turn.text, shown, bench, turn.tokens(tokens_in), seconds, reason), {}
