"""The built-in model client: one call to one registered model (CL, REQ, STR, RET, BUD, SWAP, ERR, BK).

`chat(alias, prompt)` sends one request to the endpoint `alias` is registered on
and reads the reply as it streams. What it guarantees:

- one deadline (`timeout`) bounds everything: connecting, every read (the socket
  timeout follows the time left, so a server trickling bytes cannot hold a call), and
  retry waits;
- with `first_byte` and `idle` (a panel seat's, from config/gateway.json), an upstream that
  sends no byte of the body within `first_byte` seconds of the request, or none within `idle`
  seconds of the last, ends the call with the error `no bytes for N s` (issue 12): a stalled
  upstream no longer holds a seat to the overall deadline. The windows ride on the reads'
  socket timeouts, as the deadline does: no extra call per chunk;
- a stream event that cannot be read (its data not JSON, or not a JSON object) ends the call
  with an error quoting it, never an answer with its words missing (issue 12, beyond STR-6,
  which dropped it); a blank data line is a keep-alive, as comments are;
- rate limits, server errors and connection failures are retried, honouring a
  usable Retry-After;
- redirects are never followed, so a key only ever reaches the registration's host,
  and an error text that echoes a key shows `***` instead, hidden before any cut (`keys.hide`, `keys.cut`);
- error texts are a contract: downstream classifiers read them (ERR);
- every call writes a ledger line, even one that ended before anything was sent.

The requests, their bodies, the kept-alive connections and the deadlines' reads are
metrics/net/transport.py's; this module builds the request, reads the reply's events, and
decides about retries, the ledger and the backend.

`begin()` is `chat()` in two halves, so a panel can send every seat's request from
one thread before any seat's thread wakes; a reply nobody listens to as it streams
is read by the one reader thread of metrics/net/gather.py instead of its caller's.

`APIS` maps an endpoint's `api` to its (build, read) pair: chat completions,
and the native Anthropic, Gemini and Responses APIs, whose requests and readers
are the gateway's own format translators run in reverse (`wire`), so
a model on a native endpoint sits in a panel like any other. Native APIs take
no tool turns and none of a caller's own request fields (REQ-6..8).

Steps other modules own slot into `PREFLIGHT` (sign-in renewal before
`require_key`; the free-tier guard, then pacing, after `name_connection`), and
quota records hear every response through `OBSERVERS` (RET-7).

Improvements over the reference (models.md, "Improvements worth making"):
- 3: an unknown `BENCH_CLIENT` value is ignored with a warning, not taken as the llm path;
- 6: swaps are judged with `catalog.norm_model`, the one normaliser;
- 14: a plain JSON reply calls `on_delta` once with its reasoning and once with its text,
  so streaming callers behave the same for both kinds of reply (STR-11 said none);
- 15: a short success reply that reads as a provider notice is flagged in the ledger line;
- 10: Responses reasoning summaries are kept in `reasoning`, and a completed response finishes `stop`;
- 11: a native reply that is not a stream is read as one JSON object, or (Gemini) a JSON array of
  chunks; for the Responses API too, whose reply the reference read only as events (STR-5).

    python -m benchwarmers.calling.client ALIAS "PROMPT"    one call (timeout 120 s); prints the answer or the error
"""

import functools
import http.client
import itertools
import json
import math
import random
import shutil
import sys
import time
from email.utils import parsedate_to_datetime

from .. import wire
from ..core import console, fileio, keys, paths, settings
from ..wire import notices
from ..net import transport
from ..models import catalog, connections, endpoints, freetier, learn, quota, registry
from ..providers import renewal
from . import ledger, pacing
from ..wire.turn import delta_text
from ..net.gather import Stalled, TimedOut, TooLarge
# STOP, Body and HTTPError are callers' names too, as client.STOP (the gateway's and panel's stop) and the rest
from ..net.transport import DRAIN, STOP, USER_AGENT, Body, HTTPError

DEFAULT_TIMEOUT = 420
CLI_TIMEOUT = 120
RETRIES = 2
RETRYABLE = (408, 409, 429)
EXCERPT = 1000
BUDGET_FAILED_CHARS = 200
TIMEOUT_SLACK = 0.5
MAX_RETRY_AFTER = 60
BACKENDS = ("builtin", "llm")
BODY_OWN_FIELDS = ("model", "messages", "stream", "stream_options")

DONE = object()  # the `[DONE]` marker of a stream


class Stop(Exception):
    """Ends a call before anything is sent; `text` is its error, `refused` marks a guard or pacing refusal."""

    def __init__(self, text, refused=False):
        super().__init__(text)
        self.text = text
        self.refused = refused


# ---------------------------------------------------------------- one call's state


class Call(transport.Deadline):
    """One call's deadline (as the transport keeps it) and bookkeeping, shared with the builders, readers
    and PREFLIGHT hooks."""

    def __init__(self, alias="", timeout=DEFAULT_TIMEOUT, first_token=None, on_delta=None, on_chunk=None,
                 first_byte=None, idle=None):
        super().__init__(timeout, first_token, first_byte, idle)
        self.alias = alias
        self.wall = time.time()
        self.on_delta = on_delta
        self.on_chunk = on_chunk
        self.registration = registry.Registration(alias)
        self.base = ""
        self.endpoint = ""
        self.entry = endpoints.Endpoint("")
        self.api = "chat"
        self.connection = ""
        self.secret = ""
        self.url = ""
        self.headers = {}
        self.payload = {}
        self.asked = ("", "", None, None)  # prompt, system, messages, body as the caller gave them
        self.releases = []  # run after the ledger line is written (a pacing ticket, LED-8)
        self.waits = []  # PREFLIGHT checks put off to the call's own thread: `check(call)` -> refusal text or ""
        self.attempts = 0
        self.sent_at = None
        self.status = 0
        self.early = None  # the first attempt, sent by `begin()` before anyone waits for it
        self.fell_back = False
        self.swap = False

    def check(self):
        if STOP.is_set() or self.left() <= 0:
            raise TimedOut()

    def piece(self):
        if self.first_piece is None:
            self.first_piece = round((self.arrived or time.monotonic()) - self.started, 2)

    def quiet(self):
        """Nobody needs this call's pieces as they come: its body can be read whole by `transport.READER`."""
        return self.on_delta is None and self.on_chunk is None and self.first_deadline is None

    def delta(self, kind, text):
        """A new piece of `text` ("text" or "reasoning"): the first sets first_token_s; `on_delta` hears it."""
        if not text:
            return
        if self.first_piece is None:  # issue 35: past the first piece a delta is a call less
            self.piece()
        if self.on_delta:
            try:
                self.on_delta(kind, text)
            except Exception:
                self.on_delta = None  # a raising listener is dropped; the call goes on (STR-11)

    def chunk(self, event):
        if self.on_chunk:
            try:
                self.on_chunk(event)
            except Exception:
                self.on_chunk = None


def _reply(**values):
    reply = {"text": "", "reasoning": "", "error": "", "timed_out": False, "status": 0, "model": "",
             "usage": {}, "finish": "", "tool_calls": 0}
    reply.update(values)
    return reply


def _reason(exc):
    return str(exc) or type(exc).__name__


def _excerpt(call, text, limit=EXCERPT):
    """`text` cut to `limit` once the call's secret and every known key are out of it (KEY-7): hidden
    first, as a cut key is no longer one `_settle` can find, and a word the cut splits is dropped."""
    if call.secret:
        text = text.replace(call.secret, "***")
    return keys.cut(keys.hide(text), limit)


# ---------------------------------------------------------------- reading replies


class Unreadable:
    """An event whose data is not JSON, as `sse()` yields it: the readers end the call on it (`unreadable`)."""

    __slots__ = ("raw",)

    def __init__(self, raw):
        self.raw = raw


def sse(pieces):
    """JSON values of a server-sent event stream, `DONE` for `[DONE]`, `Unreadable` for data that is not JSON (STR-6).

    What has arrived is split on bytes and only whole events are decoded, so a character split across
    reads survives; the end of the body ends the last line and the last event. Issue 35: a buffer
    without a CR is cut at its last blank line, decoded to text once, and each one-line `data: {...}`
    event (a provider's every chunk) parsed where it lies; anything else goes line by line (`_lines`).
    """
    pending, carried_cr = b"", False
    for piece in itertools.chain(pieces, (b"\n\n",)):
        buffer = pending + piece if pending else piece
        if carried_cr or b"\r" in piece:
            pending = yield from _lines(buffer)
            carried_cr = b"\r" in pending
            continue
        cut = buffer.rfind(b"\n\n", max(0, len(pending) - 1))  # the bytes held back have none
        if cut < 0:
            pending = buffer
            continue
        pending = buffer[cut + 2:]
        for block in buffer[:cut].decode("utf-8", "replace").split("\n\n"):
            if block.startswith("data: {") and "\n" not in block:
                try:
                    value, end = _raw_decode(block, 6)
                except ValueError:
                    end = 0
                if end == len(block):
                    yield value
                    continue
            if block:
                yield from _event_lines(block.encode().split(b"\n"))


def _lines(buffer):
    """The events of `buffer` whose blank line has come, line by line (a CR ends no line: it is stripped);
    returns the bytes of the event still open."""
    lines = buffer.split(b"\n")
    last = lines.pop()
    start = 0
    for i, line in enumerate(lines):
        if not line.rstrip(b"\r"):
            yield from _event_lines(lines[start:i])
            start = i + 1
    return b"\n".join(lines[start:] + [last])


def _event_lines(lines):
    """The values of one event given its lines (no blank one among them): its data lines, as `_event` reads them."""
    data = []
    for line in lines:
        line = line.rstrip(b"\r")
        if line.startswith(b"data:"):
            data.append(line[6:] if line[5:6] == b" " else line[5:])
    return _event(data) if data else ()


def _event(data):
    """The values of one event's data lines: together as one, else line by line (no blank lines between events).
    Blank data is a keep-alive and gives nothing; data that is not JSON is `Unreadable`, never dropped."""
    joined = data[0] if len(data) == 1 else b"\n".join(data)
    if joined.strip() == b"[DONE]":
        return [DONE]
    try:
        return [_json(joined)]
    except ValueError:
        if len(data) == 1:
            return [Unreadable(joined)] if joined.strip() else []
    values = []
    for line in data:
        if line.strip() == b"[DONE]":
            values.append(DONE)
        elif line.strip():
            try:
                values.append(_json(line))
            except ValueError:
                values.append(Unreadable(line))
    return values


_raw_decode = json.JSONDecoder().raw_decode


def _json(raw):
    """`json.loads` of UTF-8 bytes (invalid bytes replaced, STR-6), minus its wrapper's two regex scans:
    a stream parses one value per chunk."""
    text = raw.strip(b" \t\r\n").decode("utf-8", "replace")
    value, end = _raw_decode(text)
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def _reasoning_of(message):
    value = message.get("reasoning_content") or message.get("reasoning")
    return value if isinstance(value, str) else ""


def unreadable(event, heard):
    """The error for a stream event that cannot be read (not JSON, or not an object), `heard` characters into
    the answer: whatever it carried is lost, so the answer is not passed off as whole (llm_backend says it too)."""
    if isinstance(event, Unreadable):
        what, shown = "not JSON", event.raw.strip().decode("utf-8", "replace")
    else:
        what, shown = "not a JSON object", json.dumps(event)
    return (f"Error: client failed: the stream held a chunk that is {what}: {shown[:EXCERPT]!r} "
            f"(after {heard} characters of the answer; whatever it carried is missing)")


def _event_error(event):
    error = event.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return f"Error: Error code: {code or 'stream'} - {event!r}"


def _chat_stream(call, events):
    """Read a chat completions stream (STR-7, STR-8)."""
    reply = _reply()
    text, thought, tools = [], [], set()
    saw_choice = done = False
    for event in events:
        if event is DONE:
            done = True
            break
        if not isinstance(event, dict):
            return _reply(error=unreadable(event, sum(map(len, text))))
        choices = event.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if event.get("error") or (choice and choice.get("finish_reason") == "error"):
            return _reply(error=_event_error(event))
        if call.on_chunk:  # issue 35: a stream nobody listens to (a panel's seat) skips a call an event
            call.chunk(event)
        if event.get("model"):
            reply["model"] = event["model"]
        if isinstance(event.get("usage"), dict) and event["usage"]:
            reply["usage"] = event["usage"]
        if choice is None:
            continue
        saw_choice = True
        delta = choice.get("delta") or choice.get("message") or {}
        if isinstance(delta, dict):
            # issue 35: the common delta (one string of content, no reasoning) is read without a call
            reasoning = _reasoning_of(delta) if "reasoning_content" in delta or "reasoning" in delta else ""
            if reasoning:
                thought.append(reasoning)
                call.delta("reasoning", reasoning)
            content = delta.get("content")
            if not isinstance(content, str):
                content = delta_text(content)
            if content:
                text.append(content)
                call.delta("text", content)
            for item in delta.get("tool_calls") if isinstance(delta.get("tool_calls"), list) else ():
                if isinstance(item, dict):
                    tools.add(item.get("index") if item.get("index") is not None else item.get("id"))
                    call.piece()
        if choice.get("finish_reason"):
            reply["finish"] = choice["finish_reason"]
    if not saw_choice:
        return _reply(error="Error: client failed: the reply had no choices: the stream sent none")
    answer = "".join(text)
    if not done and not reply["finish"]:
        # A cut answer is never returned as the model's work.
        return _reply(error=f"Error: client failed: the stream broke off before it finished "
                            f"({len(answer)} characters in)")
    reply.update(text=answer, reasoning="".join(thought), tool_calls=len(tools))
    return reply


def _as_chunk(obj, reply, message, tool_calls):
    """The one chunk `on_chunk` hears for a plain JSON reply (STR-12)."""
    delta = {"role": "assistant"}
    if reply["text"]:
        delta["content"] = reply["text"]
    for field in ("reasoning_content", "reasoning"):
        if isinstance(message.get(field), str) and message[field]:
            delta[field] = message[field]
    if tool_calls:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(tool_calls)]
    return {"id": obj.get("id") or "chatcmpl-benchwarmers", "object": "chat.completion.chunk",
            "created": obj.get("created") or int(time.time()), "model": reply["model"],
            "usage": reply["usage"] or None,
            "choices": [{"index": 0, "delta": delta, "finish_reason": reply["finish"] or "stop"}]}


def _chat_json(call, blob):
    """Read a whole chat completions reply (STR-9)."""
    try:
        obj = json.loads(blob)
    except ValueError:
        return _reply(error="Error: client failed: the reply was not JSON: "
                            + _excerpt(call, blob.decode("utf-8", "replace")))
    if not isinstance(obj, dict):
        return _reply(error="Error: client failed: unexpected reply: "
                            + _excerpt(call, blob.decode("utf-8", "replace")))
    choices = obj.get("choices")
    if obj.get("error") and not choices:
        error = obj["error"]
        code = error.get("code") if isinstance(error, dict) else None
        return _reply(error=f"Error: Error code: {code or 200} - {obj!r}")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") or choice.get("delta")
    if not isinstance(message, dict):
        return _reply(error=f"Error: client failed: the reply had no choices: {_excerpt(call, repr(obj))}")
    tool_calls = [t for t in message.get("tool_calls") or [] if isinstance(t, dict)]
    reply = _reply(text=delta_text(message.get("content")), reasoning=_reasoning_of(message),
                   model=obj.get("model") if isinstance(obj.get("model"), str) else "",
                   usage=obj["usage"] if isinstance(obj.get("usage"), dict) else {},
                   finish=choice.get("finish_reason") or "", tool_calls=len(tool_calls))
    call.delta("reasoning", reply["reasoning"])
    call.delta("text", reply["text"])
    if tool_calls:
        call.piece()
    if call.on_chunk:
        call.chunk(_as_chunk(obj, reply, message, tool_calls))
    return reply


def read_chat(call, resp, body):
    """A chat completions reply: a stream by its content type or its first bytes, else one JSON object (STR-5)."""
    if "text/event-stream" in (resp.getheader("Content-Type") or "").lower():
        return _chat_stream(call, sse(body))
    blob = body.read()
    if blob.lstrip().startswith(b"data:"):
        return _chat_stream(call, sse([blob]))
    return _chat_json(call, blob)


# ---------------------------------------------------------------- building requests


def build_chat(call, prompt, system, messages, body):
    """POST `<base>/chat/completions` with the alias's options and the caller's own fields (REQ-1, CL-4)."""
    if messages is None:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    payload = {"model": call.registration.model_name or call.alias, "messages": messages}
    payload.update((k, v) for k, v in registry.options(call.alias).items() if k not in BODY_OWN_FIELDS)
    if body:
        if "max_completion_tokens" in body:
            payload.pop("max_tokens", None)  # some APIs refuse both
        payload.update((k, v) for k, v in body.items() if k not in BODY_OWN_FIELDS)
    payload["stream"] = True
    payload["stream_options"] = {"include_usage": True}
    return call.base + "/chat/completions", payload


def _native(call, prompt, system, messages, body):
    """The messages a native API is sent (REQ-6): a caller's own request fields never go there."""
    if body:
        raise Stop(f"Error: client failed: a request's own fields (tools and the rest) go to chat completions "
                   f"only, not the {call.api} API")
    if messages is None:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return messages


def build_anthropic(call, prompt, system, messages, body):
    """POST `<base>/messages` (REQ-2, OUT-2); tool turns are refused (REQ-8)."""
    messages = _native(call, prompt, system, messages, body)
    served = call.registration.model_name or call.alias
    try:
        payload = wire.anthropic.request(served, messages, registry.options(call.alias), stream=True)
    except wire.Unsupported as exc:
        raise Stop(f"Error: client failed: {exc}") from exc
    return call.base + "/messages", payload


def build_gemini(call, prompt, system, messages, body):
    """POST `<base>/models/<model>:streamGenerateContent?alt=sse` (REQ-3, OUT-3); tool turns are refused (REQ-8)."""
    messages = _native(call, prompt, system, messages, body)
    served = call.registration.model_name or call.alias
    try:
        payload = wire.gemini.request(messages, registry.options(call.alias))
    except wire.Unsupported as exc:
        raise Stop(f"Error: client failed: {exc}") from exc
    return wire.gemini.url(call.base, served), payload


def build_responses(call, prompt, system, messages, body):
    """POST `<base>/responses` (REQ-4): the prompt alone, never stored; model options are not applied."""
    _native(call, prompt, system, None, body)
    if messages is not None:
        raise Stop("Error: client failed: given messages are sent to chat completions only, not the Responses API")
    payload = {"model": call.registration.model_name or call.alias,
               "input": [{"role": "user", "content": prompt}], "stream": True, "store": False}
    if system:
        payload["instructions"] = system
    return call.base + "/responses", payload


READERS = {"anthropic": wire.anthropic.Reader, "gemini": wire.gemini.Reader,
           "responses": wire.responses.Reader}


def _blocked(event):
    """STR-15: a Gemini prompt its filters refused, as the error text; `""` when not."""
    feedback = event.get("promptFeedback")
    reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
    return f"Error: client failed: the prompt was blocked ({reason}): {event!r}" if reason else ""


def read_native(call, resp, body):
    """A native API's reply (STR-5, STR-14..16): its event stream, else one JSON object (a Gemini array too)."""
    reader = READERS[call.api]()
    if "text/event-stream" in (resp.getheader("Content-Type") or "").lower():
        events = sse(body)
    else:
        blob = body.read()
        try:
            parsed = json.loads(blob)
        except ValueError:
            return _reply(error="Error: client failed: the reply was not JSON: "
                                + _excerpt(call, blob.decode("utf-8", "replace")))
        if not isinstance(parsed, (dict, list)):
            return _reply(error="Error: client failed: unexpected reply: "
                                + _excerpt(call, blob.decode("utf-8", "replace")))
        events = parsed if isinstance(parsed, list) else [parsed]
    heard = False
    try:
        for event in events:
            if event is DONE:
                break
            if not isinstance(event, dict):
                return _reply(error=unreadable(event, len(reader.text)))
            blocked = _blocked(event) if call.api == "gemini" else ""
            if blocked:
                return _reply(error=blocked)
            for kind, piece in reader.feed(event):
                heard = heard or kind == "text"
                call.delta(kind, piece)
        reader.end()
    except wire.UpstreamError as exc:
        return _reply(error=f"Error: Error code: {exc.code} - {exc.payload!r}")
    if not reader.done:
        if call.api == "responses":
            return _reply(error="Error: client failed: the stream ended before response.completed")
        return _reply(error=f"Error: client failed: the stream broke off before it finished "
                            f"({len(reader.text)} characters in)")
    if not heard:
        call.delta("text", reader.text)  # a Response object read whole: its text is heard once
    return _reply(text=reader.text, reasoning=reader.reasoning, model=reader.model, usage=reader.usage,
                  finish=reader.finish)


# api name -> (build(call, prompt, system, messages, body) -> (url, payload), read(call, resp, body) -> reply)
APIS = {"chat": (build_chat, read_chat), "anthropic": (build_anthropic, read_native),
        "gemini": (build_gemini, read_native), "responses": (build_responses, read_native)}


# ---------------------------------------------------------------- pre-flight


def renew_signin(call):
    """CN-6 / CL-2 d: a sign-in that renews itself and is about to run out is renewed first (under its per-key
    lock, `providers.renewal`); a renewal that fails ends the call with a text containing `sign in again`."""
    if not renewal.due(call.entry.connect):
        return
    problem = renewal.fresh(call.endpoint)
    if problem:
        raise Stop(f"Error: client failed: {problem}")


def require_key(call):
    """A registration that names a key sends nothing until the key is set: a keyless 401 would be misread (CL-2 d)."""
    name = call.registration.api_key_name
    if not name:
        return  # a local runtime: no auth header at all
    call.secret = keys.key(name)
    if not call.secret:
        raise Stop(f"Error: client failed: no key named '{name}' is set (llm keys set {name})")


def name_connection(call):
    """The connection the call is counted under (CONN-2); `?` when naming fails, which never fails the call (CL-6)."""
    try:
        call.connection = connections.connection_of(call.alias)
    except Exception:
        call.connection = "?"


# Run in order after the request is built; a hook raises Stop to end the call
# unsent (Stop(text, refused=True) for a refusal) and may append to
# `call.releases`, or to `call.waits` a check that must wait (pacing): it runs
# before the first request on the call's own thread, so a panel sending every
# seat's request from one thread is not held by one seat's wait. Sign-in renewal
# goes before require_key; the free-tier guard (AL-5), then pacing (PACE), after
# name_connection.
PREFLIGHT = [renew_signin, require_key, name_connection]


def refuse_if(check):
    """A PREFLIGHT hook from a module below this one, which cannot raise Stop: `check(call)` returns the
    refusal text (ledger `refused`, nothing sent) or ""."""
    def hook(call):
        text = check(call)
        if text:
            raise Stop(text, refused=True)
    hook.__name__ = check.__name__
    return hook


PREFLIGHT += [refuse_if(freetier.hold), refuse_if(pacing.pace)]  # AL-5, then PACE (CL-2 e, f)

# fn(alias, connection, base, status, headers, body) for every response: success
# headers before the body is read (body None), errors with their parsed JSON body
# (None when not JSON). Failures are swallowed (RET-7, QUO-8).
OBSERVERS = [quota.observe]


def _prepare(call, prompt, system, messages, body):
    """Pre-flight (CL-2): the first failure raises Stop and nothing is sent."""
    reg = registry.registration(call.alias)
    if reg is None:
        text = f"Error: client failed: no model is registered as '{call.alias}'"
        broken = registry.problem()  # a file llm cannot read registers nothing: the error says why
        # issue 16: say where a model is registered (the classifiers read only the text before it)
        raise Stop(f"{text}: {broken}" if broken else
                   f"{text} (register one with `python -m benchwarmers.scripts.onboard SERVED_NAME`)")
    call.registration = reg
    api_base = reg.api_base
    call.base = api_base.rstrip("/")
    if not call.base.lower().startswith(("http://", "https://")):
        raise Stop(f"Error: client failed: endpoint base must be http(s), not '{api_base}'")
    try:
        found = endpoints.load()
    except RuntimeError as exc:
        raise Stop(f"Error: client failed: {exc}") from exc
    call.endpoint = endpoints.endpoint_name(reg) or ""
    call.entry = found.get(call.endpoint) or endpoints.Endpoint(call.endpoint)
    call.api = call.entry.api
    if call.api not in APIS:
        raise Stop(f"Error: client failed: the {call.api} API is not supported yet")
    call.url, call.payload = APIS[call.api][0](call, prompt, system, messages, body)
    call.asked = (prompt, system, messages, body)  # what pacing estimates the tokens from (PACE-5)
    for hook in PREFLIGHT:
        hook(call)
    call.headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    call.headers.update(reg.headers)
    if call.api == "anthropic":
        call.headers["anthropic-version"] = endpoints.ANTHROPIC_VERSION
    if call.secret:
        call.headers.update(endpoints.auth_headers(call.api, call.secret))


# ---------------------------------------------------------------- sending


def _observe(call, resp, body):
    if not OBSERVERS:
        return
    parsed = None
    if body:
        try:
            parsed = json.loads(body)
        except ValueError:
            pass
    for observer in OBSERVERS:
        try:
            observer(call.alias, call.connection, call.base, resp.status, resp.headers, parsed)
        except Exception:
            pass


def _error_body(body):
    """An error reply's body; one that breaks off or runs out of time reads as empty (RET-3)."""
    try:
        return body.read()
    except (OSError, ValueError, http.client.HTTPException):
        return b""


def _shown(call, body):
    """An error body as the error text shows it: a JSON value's Python repr, else the stripped text."""
    if not body.strip():
        return ""
    try:
        shown = repr(json.loads(body))
    except ValueError:
        shown = body.decode("utf-8", "replace").strip()
    return _excerpt(call, shown)


def _http_error(call, resp, body):
    """RET-3's text for an HTTP error."""
    text = f"Error: Error code: {resp.status}"
    shown = _shown(call, body)
    if shown:
        text += f" - {shown}"
    if resp.getheader("Retry-After"):
        text += f" Retry-After: {resp.getheader('Retry-After')}"
    if 300 <= resp.status < 400:
        text += f" (redirect to {resp.getheader('Location', '')} not followed)"
    return text


def retry_after(headers):
    """The server's usable wait in seconds (RET-2): `retry-after-ms`, else `Retry-After`; None unless 0 < wait ≤ 60."""
    for name, scale in (("retry-after-ms", 0.001), ("Retry-After", 1)):
        raw = (headers.get(name) or "").strip()
        if not raw:
            continue
        try:
            wait = float(raw) * scale
        except ValueError:
            try:
                wait = parsedate_to_datetime(raw).timestamp() - time.time()
            except (TypeError, ValueError, IndexError):
                continue
        if 0 < wait <= MAX_RETRY_AFTER:
            return wait
    return None


def backoff(k):
    """Wait before retry k = 0, 1, ...: min(0.5·2^k, 8) s less up to 25 % jitter."""
    return min(0.5 * 2 ** k, 8) * (1 - 0.25 * random.random())


def _stream_refused(call, status, body):
    """RET-5: a 400/422 that objects to streaming is sent once more without it; True when it will be."""
    if call.fell_back or call.api != "chat" or status not in (400, 422) or "stream" not in call.payload:
        return False
    said = body.decode("utf-8", "replace").lower()
    if "stream" not in said:
        return False
    call.fell_back = True
    dropped = ("stream_options",) if "stream_options" in said else ("stream", "stream_options")
    call.payload = {k: v for k, v in call.payload.items() if k not in dropped}
    return True


def _read_reply(call, read, key, conn, resp, body):
    try:
        reply = read(call, resp, body)
    except TimedOut:
        reply = _reply(timed_out=True)
    except (Stalled, TooLarge) as exc:
        reply = _reply(error=f"Error: client failed: {exc}")
    except (OSError, http.client.HTTPException) as exc:
        # Never retried: chunks may already have been relayed (STR-4).
        reply = _reply(error=f"Error: client failed: the reply broke off part way ({_reason(exc)})")
    if not body.complete and not reply["error"] and not reply["timed_out"]:
        body.drain(DRAIN)
    transport.release(key, conn, body)
    return reply


def _post(call, connect=True):
    """Send `call.payload` as one attempt: its `Sent`, the exception that stopped it, or a reply
    when it cannot be sent at all; None when `connect` is False and no idle connection was ready."""
    try:
        data = json.dumps(call.payload).encode()
    except (TypeError, ValueError) as exc:
        return _reply(error=f"Error: client failed: the request cannot be sent as JSON: {exc}")
    wall = time.time()
    # a reply asked for whole (RET-5) sends its first byte when it is done: only the deadline bounds it
    call.quiet_by = time.monotonic() + (math.inf if call.fell_back else call.first_byte)
    try:
        sent = transport.send("POST", call.url, call.headers, data, call.waiting, connect)
    except ValueError as exc:
        sent = _reply(error=f"Error: client failed: {exc}")
    except (OSError, http.client.HTTPException) as exc:
        sent = exc
    if sent is not None:
        call.attempts += 1
        call.sent_at = call.sent_at or wall
    return sent


def _attempts(call, read, retries):
    """Send `call.payload` until it succeeds, fails for good, or time runs out (RET-1..6)."""
    tried = 0
    while True:
        if STOP.is_set() or call.left() <= 0:
            return _reply(timed_out=True)
        sent, call.early = call.early or _post(call), None
        if isinstance(sent, dict):
            return sent
        wait = None
        try:
            if isinstance(sent, BaseException):
                raise sent
            key, conn, resp, sock = transport.response(sent)
        except (OSError, http.client.HTTPException) as exc:
            if isinstance(exc, TimeoutError) and call.left() <= TIMEOUT_SLACK:
                return _reply(timed_out=True)
            if isinstance(exc, TimeoutError) and call.quiet_by - time.monotonic() <= TIMEOUT_SLACK:
                return _reply(error=f"Error: client failed: {call.stalled(0)}")  # not even the headers came
            reply = _reply(error=f"Error: client failed: Connection error. ({_reason(exc)})")
        else:
            call.status = resp.status
            body = Body(call, resp, sock)
            if resp.status < 300:
                _observe(call, resp, None)
                if call.quiet():
                    body.gather()
                return _read_reply(call, read, key, conn, resp, body)
            blob = _error_body(body)
            transport.release(key, conn, body)
            _observe(call, resp, blob)
            if _stream_refused(call, resp.status, blob):
                continue  # counted as an attempt, not as a retry
            reply = _reply(error=_http_error(call, resp, blob))
            if resp.status not in RETRYABLE and resp.status < 500:
                return reply
            wait = retry_after(resp.headers)
        if tried >= retries:
            return reply
        wait = wait or backoff(tried)
        if time.monotonic() + wait >= call.limit():
            return reply  # a real error says more than a timeout
        if STOP.wait(wait):
            return _reply(timed_out=True)
        tried += 1


def _send(call, read, retries):
    reply = _attempts(call, read, retries)
    reply["status"] = call.status
    return reply


def _as_int(value):
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _budget_cut(call, reply):
    """BUD-1: an empty answer that ran out of output budget, on a call that relayed nothing."""
    return (call.api in ("chat", "anthropic") and not call.on_chunk and not reply["error"]
            and not reply["timed_out"] and not reply["text"] and not reply["tool_calls"]
            and reply["finish"] == "length")


def _budget_retry(call, read, retries, first):
    """BUD-2/3: once more with twice the budget (capped at the catalog's max_output)."""
    key = "max_completion_tokens" if "max_completion_tokens" in call.payload else "max_tokens"
    current = _as_int(call.payload.get(key, (first["usage"] or {}).get("completion_tokens")))
    if current is None or current <= 0:
        return first
    new = current * 2
    try:
        cap = catalog.max_output(call.alias)
    except Exception:
        cap = None
    if cap:
        new = min(new, cap)
    if new <= current:
        return first
    call.payload = {**call.payload, key: new}
    second = _send(call, read, retries)
    if second["error"] or second["timed_out"]:
        # The retry's failure (a budget over the cap, say) is not the model's: the empty answer stands.
        failed = _excerpt(call, second["error"] or "timed out", BUDGET_FAILED_CHARS)
        first["budget_retry"] = {key: [current, new], "answered": False, "failed": failed}
        return first
    second["budget_retry"] = {key: [current, new], "answered": bool(second["text"])}
    return second


def _note_swap(call, reply):
    """SWAP-1/2: whether the reply names another model than the one registered; noted, never an error."""
    served = call.registration.model_name
    model = reply["model"]
    if not served or not model or model == served or catalog.norm_model(model) == catalog.norm_model(served):
        return False
    try:
        known = (learn.learned(call.alias).get("served_as") or {}).get("served")
        if known != model:
            learn.note_served_as(call.alias, served, model)
            console.say(f"note: {call.alias} asked for {served} and was served {model} (a silent swap?)")
    except Exception:
        pass
    return True


# ---------------------------------------------------------------- the call


def _status(res, refused):
    """LED-3."""
    if refused:
        return "refused"
    if res["timed_out"]:
        return "timeout"
    if res["error"]:
        return "error"
    return "ok" if res["text"] or res["tool_calls"] else "empty"


def _account(call, res, purpose, refused):
    """The ledger line (LED-1), then whatever PREFLIGHT asked to release once it exists (LED-8)."""
    status = _status(res, refused)
    record = ledger.line(
        call.sent_at or call.wall, call.alias, call.connection, call.endpoint, res["model"], status,
        res["attempts"], res["usage"], res["seconds"], purpose or settings.env("BENCH_PURPOSE"),
        swap=call.swap, budget_retry=res.get("budget_retry"),
        notice=notices.notice(res["text"]) if status == "ok" else "",
    )
    ledger.write(record, call.releases)


def chat(alias, prompt, system="", timeout=DEFAULT_TIMEOUT, messages=None, on_delta=None, purpose="",
         body=None, on_chunk=None, first_token=None, retries=None, first_byte=None, idle=None):
    """One call to `alias`; never raises for a model's failure.

    Returns `text`, `reasoning`, `error` ("" on success), `timed_out`, `status`
    (last HTTP status, 0 if none), `model` (as the reply named it), `usage`,
    `finish`, `tool_calls` (count), `first_token_s`, `attempts` (requests sent),
    `seconds`; and `budget_retry` when BUD applied.

    `messages` (OpenAI shape) replace `system` + `prompt`; `body` adds the caller's
    own request fields; `on_delta(kind, piece)` hears text and reasoning as they
    arrive, `on_chunk(chunk)` every stream chunk (a proxy); `first_token` ends the
    call as timed out when no first piece came within that many seconds. `first_byte` and `idle`
    (seconds; None or 0: none) end it with the error `no bytes for N s` when no byte of the reply came
    within `first_byte` of a request, or within `idle` of the byte before.
    """
    return begin(alias, prompt, system, timeout, messages, on_delta, purpose, body, on_chunk, first_token,
                 retries, first_byte, idle)()


def begin(alias, prompt, system="", timeout=DEFAULT_TIMEOUT, messages=None, on_delta=None, purpose="",
          body=None, on_chunk=None, first_token=None, retries=None, first_byte=None, idle=None):
    """`chat()` in two halves: prepare the call and send its first request now, if a kept-alive connection
    is ready for it; the function returned sends it otherwise, waits for the answer and returns `chat()`'s
    reply. A panel sends every seat's request from one thread before any seat waits, so no seat's
    request queues behind another's preparation, and none behind another's connection set-up."""
    call = Call(alias, timeout, first_token, on_delta, on_chunk, first_byte, idle)
    retries = RETRIES if retries is None else retries
    try:
        _prepare(call, prompt, system, messages, body)
        if not call.waits:
            call.early = _post(call, connect=False)
    except Stop as stop:
        return functools.partial(_settle, call, _reply(error=stop.text), purpose, stop.refused)
    except Exception as exc:
        return functools.partial(_settle, call, exc, purpose, False)
    return functools.partial(_finish_call, call, purpose, retries)


def _finish_call(call, purpose, retries):
    reply, refused = _reply(), False
    try:
        for check in call.waits:
            text = check(call)
            if text:
                raise Stop(text, refused=True)
        read = APIS[call.api][1]
        reply = _send(call, read, retries)
        if _budget_cut(call, reply):
            reply = _budget_retry(call, read, retries, reply)
        if not reply["error"] and not reply["timed_out"]:
            call.swap = _note_swap(call, reply)
    except Stop as stop:
        reply, refused = _reply(error=stop.text), stop.refused
    finally:
        _settle(call, reply, purpose, refused)
    return reply


def _settle(call, reply, purpose, refused):
    """Every call's last step, however it ended: the secret taken out of the error, the timings, the ledger line.
    `reply` may be the exception that ended the call before a request could be sent: it is raised after."""
    raised = reply if isinstance(reply, BaseException) else None
    if raised is not None:
        reply = _reply()
    if call.secret and call.secret in reply["error"]:
        reply["error"] = keys.hide(reply["error"].replace(call.secret, "***"))  # an upstream echoing it (KEY-7)
    reply.update(first_token_s=call.first_piece, attempts=call.attempts,
                 seconds=round(time.monotonic() - call.started, 1))
    _account(call, reply, purpose, refused)
    if raised is not None:
        raise raised
    return reply


def output(res, timeout):
    """The text the suite and probes classify (CL-9)."""
    if res.get("timed_out"):
        return f"<<TIMED OUT after {timeout:g}s>>"
    if res.get("error"):
        return res["error"]
    return res["text"] + "\n" if res.get("text") else ""


# ---------------------------------------------------------------- backend choice

_warned = set()


def chosen():
    """`(backend, where the choice came from)` (BK-2), read on every call.

    An unknown `BENCH_CLIENT` is ignored with one warning (models.md improvement 3).
    """
    value = settings.env("BENCH_CLIENT").strip().lower()
    if value in BACKENDS:
        return value, "environment"
    if value and value not in _warned:
        _warned.add(value)
        console.say(f"warning: BENCH_CLIENT={value!r} is not a backend (one of {', '.join(BACKENDS)}); ignored")
    setting = fileio.read_json(paths.file("config", "client.json")).get("client")
    if setting in BACKENDS:
        return setting, "settings"
    return "builtin", "default"


def choose(name):
    """Save the backend choice (BK-4): `""` when saved, else why it was refused. Applies from the next call.
    The dashboard's Settings page calls it (`settingsedit`)."""
    if name not in BACKENDS:
        return "client: one of llm, builtin"
    if settings.env("BENCH_CLIENT").strip():
        return ("BENCH_CLIENT is set in this server's environment and wins over the setting; "
                "unset it and restart to choose here")
    if name == "llm" and not shutil.which("llm"):
        return "the llm command is not on PATH: install it (pip install llm) or keep the built-in client"
    fileio.update(paths.file("config", "client.json"), lambda data: data.__setitem__("client", name))
    return ""


def backend(alias=""):
    """`builtin` or `llm` for `alias` (BK-3): non-chat APIs and renewing sign-ins always use the built-in client."""
    if alias:
        entry = registry.entry_of(alias)
        if entry.api != "chat" or (entry.connect or {}).get("refreshes"):
            return "builtin"
    return chosen()[0]


# ---------------------------------------------------------------- command line

USAGE = (
    'usage: python -m benchwarmers.calling.client ALIAS "PROMPT"\n\n'
    "Makes one call to ALIAS (a model registered in config/extra-openai-models.yaml) through the "
    "built-in client with a 120 s timeout, and prints the answer, the error, or <<TIMED OUT after 120s>>. "
    "Exits 1 on an error or a timeout, else 0."
)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(USAGE)
        return 2
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    res = chat(argv[0], argv[1], timeout=CLI_TIMEOUT)
    text = output(res, CLI_TIMEOUT)
    print(text, end="" if text.endswith("\n") else "\n")
    return 1 if res["error"] or res["timed_out"] else 0


if __name__ == "__main__":
    sys.exit(main())
