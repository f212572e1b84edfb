"""A local OpenAI-compatible upstream: the "models" behind the gateway in tests, benchmarks and the demo.

Why: nothing in Benchwarmers may reach the internet in tests (spec README rule 2, TST-1, OFF-1, OFF-6),
yet the gateway, the built-in client and the `llm` backend must be exercised over real HTTP: real
streaming, keep-alive, error bodies, Retry-After, latency and broken-off streams. One server whose
behaviour is chosen by the requested model name covers all of them; tests add failure modes with
`set_model`, benchmarks lean on it being fast and concurrent, and `python -m benchwarmers.demo.demo` gives the
offline demo something that answers like a panel of reviewers.

    with Upstream({"m": {"answer": "hi", "latency": 0.1}}, key=None) as up:
        openai.OpenAI(base_url=up.base_url, api_key="x")...
        up.answer_for("m", "prompt")   # what a success says, for assertions
        up.requests, up.clear(), up.set_model("m", fail="429", clears_after=1)

Model spec keys (all optional):
  answer str | words int | persona str (one of PERSONAS; default "plain") | echo bool
  latency float (whole reply; streams spread it over the tokens) | reasoning str
  keepalive bool (a stream sends a `: keep-alive` comment and a blank `data:` line before each piece)
  streams bool (false: a chat request asking to stream gets a 400 naming streaming, as some providers send)
  listed bool (default: all but fail "404"): whether GET /models lists the model
  fail: "429" (retry_after, clears_after) | "500" | "502html" | "empty" | "length_empty" (length_below)
        | "slow" (delay) | "notice" | "drop" | "404" | "error200" | "garbled"
        | "stall_headers" | "stall_after_first" | "stall_mid" (pause, default 1 s)
  context_window int | max_output int | vision bool | tools bool | max_tokens_limit int
  decisions {question: answer}: what POST /v1/decisions answers (a decision model for the shape picker)
  decides {question: {substring: answer}}: a decision model that reads the state (issue 20's simulated
        bench): for each question asked, the first substring (in the spec's order, case-sensitive) found in
        the request's `state` picks the answer; none found → the `decisions` answer, if any
  echo_auth int: a careless provider that repeats the prompt, then the Authorization header it was
        sent: as its answer when 200, else as the message of an error with that status (KEY-7's tests:
        a key must be hidden before any cut)
  split int: a stream sends its text (content and reasoning, in every API) in pieces of this many characters
        instead of words, so a key it echoes straddles two pieces (issue 29 item 2's tests)
  tool_calls [[{"name": str, "arguments": object, "id": str (optional)}, ...], ...]: a scripted agent model
        (chat completions only). A request with a non-empty `tools` list takes step N, N = the assistant
        messages in `messages` that carry a non-empty `tool_calls` (the calls this conversation already
        made); while step N exists the model answers its calls instead of text (finish_reason
        `tool_calls`). Ids: the call's `id`, else `call_<model>_<step>_<i>`. A string argument value equal
        to "{result}" (at any depth) becomes the last `tool` message's content, parsed as JSON when it
        parses, so steps chain. Past the last step, or without tools, it answers text: "Tool results: "
        + "; ".join(the `tool` messages' contents since the last user message) when there are any, else
        the usual answer. A string argument value equal to "{authorization}" becomes the Authorization header
        the request carried (a careless tool-calling upstream that echoes it)
  say str (with tool_calls): text said before a step's calls (streamed as content pieces first)
  parallel bool (with tool_calls): a stream interleaves a step's calls: every call's head, then their
        arguments pieces in turn, each delta with its own index
  late_id bool (with tool_calls): a streamed call's id comes on its second delta (the first arguments
        piece), not on its head
  whole bool: a chat request asking to stream gets a plain JSON chat.completion (tool calls included)
  agent bool: an agent model (chat completions only) that needs no script: offered tools, it calls the first
        function tool once per user message, with arguments drawn from that message (`draw()`), then answers
        "<tool> says: " + the tool results. Listed as tools-capable unless its spec says `tools`
  schema bool: a chat request whose `response_format` asks for a JSON schema is answered with JSON that fits
        it, its values drawn from the tool results since the last user message, else from that message
        (`draw()`); `json_object` gets `{"answer": <the usual answer>}`
  ranks str (issue 32, a council's scripted judge): a request showing answers as `## Response A`, … is answered
        with a ranking of them: "longest" (most words first), "shortest", "first" (the order shown, a judge
        with position bias) or "garbage" (no ranking at all). With `schema` and a requested JSON schema it is
        `{"ranking": ["Response B", ...]}`, else reasoning text ending in a `FINAL RANKING:` list
  serves_as str: the name the reply's `model` field gives instead of the requested one (a provider that
        silently serves another model: SWAP, the capability probe's `served as`, PROBE-3)
  ratelimit int (issue 19, quota records and pacing): the model allows that many requests (its count since
        set_model/clear). Every chat completions reply carries `x-ratelimit-limit-requests: N`,
        `x-ratelimit-remaining-requests: max(N - count, 0)` and `x-ratelimit-reset-requests: <ratelimit_reset,
        default "60s">`, as OpenAI-style providers send them; request N+1 onward is a 429 with those headers,
        `Retry-After` (retry_after, default 1) and the rate-limit body. See `limit_headers()`
  quota_body object (issue 19): the JSON body of this model's 429s (fail "429" or past its ratelimit)
        instead of the plain rate-limit one: a Gemini quota violation, OpenRouter's passed-on headers
  replies {substring: answer}: a scripted suite model (issue 18). The first substring (in the spec's
        order, case-sensitive) found in the last user message picks the answer; none found → the usual
        answer. Suite tests script a model that finds a seeded bug, one that invents, and so on

Decisions the brief left open (written down for the next engineer):
- `fail: "drop"` on a stream sends a close-delimited body (Connection: close, no chunking) and closes
  after a few content chunks: the HTTP framing is complete, the SSE stream is not (no finish_reason,
  no [DONE]), which is the "broke off" case of STR-8 / OFF-2's "HTTP/1.0 close". On a plain reply
  it promises a Content-Length and closes half way (a mid-body break, STR-4).
- `fail: "error200"` answers the same JSON body to stream and plain requests ("plain JSON to a stream
  request" is a scenario of its own in OFF-2).
- `length_below: N` (our addition, for BUD-4's budget retry): with `fail: "length_empty"`, only a
  request whose max_tokens is below N runs out of budget; the others answer normally.
- `persona` (our addition): picks the answer style of the demo models; answers vary with the prompt
  through a digest, so they are deterministic.
- A model with `fail: "404"` is left out of GET /models: a provider does not list what it no longer serves.
  `listed: true` (issue 18) keeps it listed: a name the provider lists with no model behind it (the
  "listed but failing structurally" case of the deprecation check).
- Listing rows carry each catalog fact under the names both CAT-7 (OpenRouter shape) and CAT-10
  (an endpoint's own listing) read; context and output sizes only when the spec gives them.
- Usage adds `completion_tokens_details.reasoning_tokens` when there is reasoning, as providers do.
- Precedence of the answer: a `tool_calls` model's tool results, then echo, then replies, then answer, then the notice
  text, then words, then the persona. Only a `tool_calls` model echoes tool results: the others answer
  as they always have.
- Nothing is logged: request bodies (and image data) live only in `Upstream.requests`, in memory.
- Waits use an Event rather than time.sleep so `stop()` returns at once even with a "slow" reply in flight.
- `fail: "garbled"` (issue 12, words lost from an answer marked ok): a stream sends the second piece of the
  answer as `data: LOST-WORDS {` (an event that is not JSON) and goes on to its end and [DONE]; a plain
  reply has `LOST-WORDS {` spliced in after its opening brace. Native streams garble their second piece too.
- Stalls (issue 12, a seat held to the overall deadline): `stall_headers` sends the 200 and its headers,
  `stall_after_first` a stream's first chunk (a plain reply: half its body), then nothing until the upstream
  stops; `stall_mid` pauses `pause` seconds half way and then finishes. Chat completions streams and every
  plain reply stall; a native stream answers whole.
- Tool calls (for route mode's tests): a streamed call is a head delta `{index, id, type: "function",
  function: {name, arguments: ""}}` then its arguments JSON text cut in thirds (2 pieces for a text of
  2 characters: `{}`), each delta its own chunk, paced by `latency` like text tokens. Without `say`,
  the opening delta is `{"role": "assistant", "content": null}` and a plain reply's content is null,
  as OpenAI sends them; with `say` both carry the said text. Reasoning, when given, comes first.
- Usage of a tool-call reply counts `say` and every call's arguments JSON text as output tokens.
- `fail: "empty"` and `"length_empty"` win over `tool_calls` (the reply is empty or out of budget, no
  calls); every other fail mode applies to a tool-call reply as to text: `drop` breaks a stream off
  after DROP_AFTER answer deltas (say pieces and call deltas alike), `garbled` garbles the second delta,
  the stalls hold where they hold a text reply. `fail: "empty"` keeps the model's reasoning: a stream
  sends its reasoning pieces, then an empty finish.
- "{result}" with no `tool` message in the conversation stays "{result}".
- `parallel`, `late_id` and `say` without `tool_calls` are refused (they would change nothing, silently).
- A `tool_calls` model is listed as tools-capable (CAT-4: route mode routes tool requests only to
  those) unless its spec says `tools` itself.
- `whole` is checked after `streams: false` (that model still refuses to stream), and only on chat
  completions: native streams stream.
- A chat stream's tokens are written by one pacer thread for every stream (`Pacer`), each at its due
  time: a thread per stream waking per token cost more CPU than the gateway it stands in front of.

Native APIs (formats.md §12, TST-1): the same models also answer Anthropic Messages
(`POST …/messages`), Gemini (`POST …/models/<m>:generateContent` / `:streamGenerateContent`,
`GET …/v1beta/models`) and OpenAI Responses (`POST …/responses`), so the built-in client's
native calls are tested for real. `up.url(api)` gives each API its own root
(`/anthropic/v1`, `/gemini/v1beta`, `/responses/v1`) so endpoints on one upstream stay
apart; `register(up, api=...)` points an endpoint there. Requests are read with the
gateway's own format readers; replies carry reasoning as each API does (a thinking block,
`thought` parts, reasoning summary deltas). Failure modes map onto each API:
- error replies keep their status with the API's error body (a 429 says `rate_limit_error`
  or `RESOURCE_EXHAUSTED`);
- `error200` fails after the 200: Anthropic an `overloaded_error` event, Gemini an error
  chunk, Responses `response.failed` (a whole error object when not streamed);
- `drop` breaks the stream off before its end (no `message_stop`, no finishReason,
  no `response.completed`).
"""

import argparse
import hashlib
import heapq
import itertools
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from .. import wire
from ..core import fileio, paths, settings
from ..models import endpoints, registry
from ..panel import collections

CREATED = 1700000000
OWNER = "benchwarmers-demo"
NOTICE = "Insufficient credits. Add more using https://example.invalid/credits"
BAD_GATEWAY_HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
FAILS = {"429", "500", "502html", "empty", "length_empty", "slow", "notice", "drop", "404", "error200", "garbled",
         "stall_headers", "stall_after_first", "stall_mid"}
ERROR_REPLIES = {
    "429": (429, {"error": {"message": "Rate limit exceeded", "type": "rate_limit_error", "code": 429}}),
    "500": (500, {"error": {"message": "Internal server error", "code": 500}}),
    "404": (404, {"error": {"message": "Model not found", "code": 404}}),
    "error200": (200, {"error": {"message": "upstream provider error", "code": 502}}),
}
BASE_PARAMETERS = ["max_tokens", "temperature", "top_p", "stop", "stream", "stream_options"]
DROP_AFTER = 3  # answer chunks (content or tool-call deltas) a dropped stream sends before it closes
LOST = b"LOST-WORDS {"  # what a garbled reply sends in place of part of its answer: not JSON
GARBLED = b"data: " + LOST + b"\n\n"
CALL_KEYS = {"name", "arguments", "id"}  # what one scripted tool call may say
SWITCHES = ("parallel", "late_id", "whole", "listed", "agent", "schema")  # the spec keys that are true or false
SCRIPTED = ("say", "parallel", "late_id")  # spec keys that only mean something with tool_calls
RESULT = "{result}"  # an argument value replaced by the last tool result
AUTHORIZATION = "{authorization}"  # an argument value replaced by the Authorization header sent
STALLS = {"stall_headers": 0, "stall_after_first": 1}  # writes a stalled stream sends, then nothing more
KEEPALIVE = b": keep-alive\n\ndata:\n\n"  # what providers send while they think: no event at all
ROOTS = {"chat": "/v1", "anthropic": "/anthropic/v1", "responses": "/responses/v1", "gemini": "/gemini/v1beta"}
VOCABULARY = ("review", "patch", "thread", "lock", "cache", "retry", "buffer", "parser", "token", "stream",
              "index", "schema", "branch", "commit", "test", "fixture", "queue", "socket", "header", "payload")

# Answer templates per persona; placeholders: {model}, {topic} (first 60 chars of the question),
# {images} (what was attached, never the image data itself).
PERSONAS = {
    "plain": ('This is {model}; you asked: "{topic}".',),
    "terse": (
        'LGTM with one nit on "{topic}": name the edge case you guard against and pin it with a test.',
        'Blocker in "{topic}": the error path swallows the exception. Re-raise it or return it; never log '
        "and continue.",
        'Two issues in "{topic}": an unchecked None on the early return and an off-by-one at the upper bound. '
        "Fix both, then merge.",
        'Fine as is. "{topic}" would read better split in two: parsing and side effects are different jobs.',
    ),
    "verbose": (
        'Here is a careful read of "{topic}".\n\n'
        "1. Correctness: the happy path is right, but the boundaries are not pinned down. Write down what "
        "should happen for an empty input, a single element and the largest input you expect, then add one "
        "test for each.\n"
        "2. Errors: every failure should surface with enough context to act on. Catching broad exceptions "
        "and carrying on hides the first symptom and makes the second one confusing.\n"
        "3. Concurrency: if two threads or two processes can run this, decide who owns the shared state and "
        "guard it with one lock, taken in one place.\n"
        "4. Shape: a function that both decides and acts is harder to test than two small ones. Keep the "
        "decision pure and the side effects thin.\n\n"
        "Overall the direction is sound. Fix the boundary tests and the error handling before merging; the "
        "rest can follow in a second change.",
        'Second opinion on "{topic}", in order of risk.\n\n'
        "First, data loss: any write that can be interrupted should go to a temporary file and be renamed "
        "into place, so a crash leaves the old record or the new one, never half of each.\n"
        "Second, performance: the loop re-reads the same input on every pass. Read it once, index it by the "
        "key you look up, and the quadratic cost disappears.\n"
        "Third, the interface: callers pass three booleans positionally, which nobody will read correctly in "
        "six months. Make them keyword-only or replace them with one small enum.\n"
        "Finally, tests: the existing ones check the output format but not the behaviour under failure. Add "
        "one that makes the dependency fail and asserts what the caller sees.\n\n"
        "None of this blocks a merge on its own, but the first point would be the one I fix today.",
        'Looking at "{topic}" from the outside in.\n\n'
        "Inputs: everything that crosses a trust boundary (request bodies, file names, headers) is used "
        "without validation. Check types and sizes where the data enters, once, and let the inner code "
        "trust it.\n"
        "Secrets: make sure keys and tokens never reach a log line, an error message or a traceback; redact "
        "at the point where you format the message, not afterwards.\n"
        "Time: there is no timeout on the outbound call, so one slow dependency can hold every worker. Give "
        "it a deadline and decide what the caller sees when it passes.\n"
        "Observability: record what was decided and why, not only that something failed.\n\n"
        "With the validation and the timeout in place I would be happy to approve.",
    ),
    "contrarian": (
        'I disagree with everyone on "{topic}". Global mutable state is the simplest correct design here, '
        "and locks only slow it down; remove them.",
        'The bug behind "{topic}" is not in your code. It is a compiler bug: pin an older toolchain and move '
        "on, tests would not have caught it anyway.",
        'Strongly disagree with the usual advice on "{topic}": catching every exception and returning None is '
        "the robust choice. Callers should never see errors.",
        'Premature. "{topic}" needs no input validation; the type hints already guarantee the values at run time.',
    ),
    "slowpoke": (
        'After a slow, thorough pass over "{topic}": the logic holds, but the retry loop has no upper bound. '
        "Cap it and add jitter so a failing dependency does not get hammered.",
        'Took my time with "{topic}". The main risk is the file write: write to a temporary file and rename '
        "it, so a crash never leaves half a record.",
        'Having read "{topic}" twice: the cache never expires. Give entries a time to live and a size bound, '
        "or it grows until the process is killed.",
    ),
    "seer": (
        'I looked at {images}. For "{topic}": the main element sits centre left, the labels are readable, '
        "and the secondary text has too little contrast for small screens.",
        'Describing {images}: a diagram of three boxes joined by arrows, left to right. For "{topic}" the '
        "arrow into the last box is the one that matters, and its label is cut off.",
        'From {images}: a screenshot of a stack trace. For "{topic}", read the first frame from your own '
        "code; the rest is the framework.",
    ),
    "thinker": (
        'Considered answer on "{topic}": the invariant is that every write is paired with exactly one read. '
        "Enforce it at the boundary and the rest of the code can trust it.",
        'On "{topic}": the smallest fix that is actually correct is to move the check before the side '
        "effect. Everything else follows from that ordering.",
        'For "{topic}": make the operation idempotent first; then retries, duplicates and crashes stop '
        "being special cases.",
    ),
}
# What the vision persona says when it was sent no image at all.
NO_IMAGE = ('I see no image in this message, so on "{topic}" I can only say: attach a screenshot and I will '
            "describe what it shows.",)
# Reasoning the persona thinks aloud when the spec gives none (only reasoning personas have any).
THOUGHTS = {
    "thinker": (
        'The question is about "{topic}". What must always hold? Where can it break? Which fix is smallest? '
        "The ordering of the check and the write looks like the crux.",
        'Restating "{topic}" in my own words, listing the failure cases, and checking each one against the '
        "code before answering.",
    ),
}
DEFAULT_THOUGHT = 'Thinking about "{topic}" step by step, weighing the options before committing to an answer.'

# each ranks a council's answers in its own way (issue 32): by length either way, or the order shown; seer cannot
DEMO_MODELS = {
    "terse": {"persona": "terse", "latency": 0.05, "context_window": 32768, "max_output": 4096, "tools": True,
              "ranks": "shortest"},
    "verbose": {"persona": "verbose", "latency": 0.3, "context_window": 131072, "max_output": 16384, "tools": True,
                "ranks": "longest"},
    "contrarian": {"persona": "contrarian", "latency": 0.1, "context_window": 8192, "max_output": 2048,
                   "tools": False, "ranks": "first"},
    "slowpoke": {"persona": "slowpoke", "latency": 1.5, "context_window": 65536, "max_output": 8192,
                 "ranks": "longest"},
    "seer": {"persona": "seer", "latency": 0.2, "vision": True, "context_window": 128000, "max_output": 4096},
    "thinker": {"persona": "thinker", "latency": 0.4, "context_window": 200000, "max_output": 32000,
                "tools": True, "ranks": "longest"},
    # route mode's point (issue 30 item 8): an agent that calls the tool it is given, and one that answers in JSON
    "fetcher": {"persona": "plain", "latency": 0.05, "context_window": 65536, "max_output": 8192, "agent": True,
                "schema": True},
    "clerk": {"persona": "terse", "latency": 0.05, "context_window": 32768, "max_output": 4096, "tools": False,
              "schema": True},
}


def listed(spec):
    """Whether GET /models lists the model: all but `fail: "404"`, unless its spec says `listed`."""
    return spec.get("listed", spec.get("fail") != "404")


def read_state(rules, state, asked):
    """`decides`: the answers a decision model that reads the state gives, `{question: answer}`, for the
    questions asked. Why: the simulated bench (benchmarks/learning.py) needs the gateway's own shape
    picker to recognise each prompt's shape, so a fixed `decisions` answer will not do."""
    text = state if isinstance(state, str) else ""
    found = {}
    for question, table in rules.items():
        if question in asked:
            answer = next((a for mark, a in table.items() if mark in text), None)
            if answer is not None:
                found[question] = answer
    return found


def check_spec(name, spec):
    """Refuse a spec with an unknown fail mode or persona, or a tool script that is not one, so a typo fails
    loudly instead of answering."""
    if spec.get("fail") is not None and spec["fail"] not in FAILS:
        raise ValueError(f"model {name!r}: unknown fail mode {spec['fail']!r} (one of {sorted(FAILS)})")
    if spec.get("persona", "plain") not in PERSONAS:
        raise ValueError(f"model {name!r}: unknown persona {spec['persona']!r} (one of {sorted(PERSONAS)})")
    if "tool_calls" in spec:
        check_script(name, spec["tool_calls"])
    for key in SWITCHES:
        if key in spec and not isinstance(spec[key], bool):
            raise ValueError(f"model {name!r}: {key} is true or false, not {spec[key]!r}")
    if "ratelimit" in spec and not (isinstance(spec["ratelimit"], int) and not isinstance(spec["ratelimit"], bool)
                                    and spec["ratelimit"] > 0):
        raise ValueError(f"model {name!r}: ratelimit is a positive whole number of requests, not {spec['ratelimit']!r}")
    if "quota_body" in spec and not isinstance(spec["quota_body"], (dict, list)):
        raise ValueError(f"model {name!r}: quota_body is a JSON object or list, not {spec['quota_body']!r}")
    replies = spec.get("replies", {})
    if not isinstance(replies, dict) or not all(isinstance(v, str) for v in replies.values()):
        raise ValueError(f"model {name!r}: replies is {{substring: answer text}}, not {replies!r}")
    decides = spec.get("decides", {})
    if not isinstance(decides, dict) or not all(isinstance(t, dict) for t in decides.values()):
        raise ValueError(f"model {name!r}: decides is {{question: {{substring: answer}}}}, not {decides!r}")
    if "serves_as" in spec and not (isinstance(spec["serves_as"], str) and spec["serves_as"]):
        raise ValueError(f"model {name!r}: serves_as is a model name, not {spec['serves_as']!r}")
    if "say" in spec and not isinstance(spec["say"], str):
        raise ValueError(f"model {name!r}: say is a text, not {spec['say']!r}")
    if "split" in spec and not (isinstance(spec["split"], int) and not isinstance(spec["split"], bool)
                                and spec["split"] > 0):
        raise ValueError(f"model {name!r}: split is a positive number of characters, not {spec['split']!r}")
    if "ranks" in spec and spec["ranks"] not in RANKS:
        raise ValueError(f"model {name!r}: ranks is one of {RANKS}, not {spec['ranks']!r}")
    for key in SCRIPTED:
        if key in spec and "tool_calls" not in spec:
            raise ValueError(f"model {name!r}: {key} needs tool_calls")
    return dict(spec)


def check_script(name, steps):
    """Refuse a `tool_calls` script that is not a list of steps, each a non-empty list of
    `{"name": str, "arguments": object, "id": str (optional)}` calls whose arguments are JSON."""
    if not isinstance(steps, list) or not all(isinstance(step, list) and step for step in steps):
        raise ValueError(f"model {name!r}: tool_calls is a list of steps, each a non-empty list of calls, "
                         f"not {steps!r}")
    for call in (call for step in steps for call in step):
        if not (isinstance(call, dict) and not set(call) - CALL_KEYS and isinstance(call.get("name"), str)
                and call["name"] and isinstance(call.get("arguments"), dict)
                and (isinstance(call.get("id"), str) and call["id"] or "id" not in call)):
            raise ValueError(f"model {name!r}: a tool call is {{name: str, arguments: object, id: str (optional)}}, "
                             f"not {call!r}")
        try:
            json.dumps(call["arguments"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"model {name!r}: tool call {call['name']!r} has arguments that are not JSON: {exc}")


def part_text(content):
    """Text of a message content: a string, or a list of parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def last_user(messages):
    """The last user message (a dict), or {} when there is none."""
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return users[-1] if users else {}


def image_urls(message):
    """URLs of the image parts of one message (OpenAI's image_url part, as a dict or a bare string)."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    urls = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            ref = part.get("image_url")
            urls.append(ref.get("url", "") if isinstance(ref, dict) else str(ref or ""))
    return urls


def describe_image(url):
    """A short description of one image reference that never includes the image data."""
    if url.startswith("data:"):
        media = url[5:].split(";", 1)[0].split(",", 1)[0] or "unknown type"
        size = len(url.split(",", 1)[-1]) * 3 // 4
        return f"{media}, {max(1, round(size / 1024))} KB"
    return urlsplit(url).hostname or "an unreadable link"


def describe_images(messages):
    urls = image_urls(last_user(messages))
    if not urls:
        return "no attached image, only the text"
    noun = "the attached image" if len(urls) == 1 else f"the {len(urls)} attached images"
    return f"{noun} ({'; '.join(describe_image(u) for u in urls)})"


def digest(name, prompt):
    """A stable number from model and prompt: picks templates so answers vary with the question."""
    return int.from_bytes(hashlib.sha256(f"{name}\0{prompt}".encode()).digest()[:8], "big")


def fill(templates, name, messages):
    prompt = part_text(last_user(messages).get("content"))
    topic = " ".join(prompt.split())[:60]
    template = templates[digest(name, prompt) % len(templates)]
    return template.format(model=name, topic=topic, images=describe_images(messages))


RANKS = ("longest", "shortest", "first", "garbage")
SHOWN = re.compile(r"^## Response ([A-Z]+)\n\n", re.M)


def ranking_text(spec, asked, as_json):
    """A scripted judge's ranking of the responses `asked` shows (`ranks`); the message's last paragraph is the
    instructions, so no answer's length counts them."""
    pieces = SHOWN.split(asked.rsplit("\n\n", 1)[0])[1:]
    shown = list(zip(pieces[::2], pieces[1::2]))
    if spec["ranks"] == "garbage" or not shown:
        return "They all have merit; I would not want to pick one."
    if spec["ranks"] != "first":
        shown.sort(key=lambda pair: len(pair[1].split()), reverse=spec["ranks"] == "longest")
    labels = [f"Response {label}" for label, _ in shown]
    if as_json:
        return json.dumps({"ranking": labels})
    listed = "\n".join(f"{i}. {label}" for i, label in enumerate(labels, 1))
    return f"{labels[0]} is the most useful; {labels[-1]} the least.\n\nFINAL RANKING:\n{listed}"


def answer_text(name, spec, messages, response_format=None):
    """What the model answers on success: a ranking, JSON for a requested schema, a tool_calls model's or an
    agent's tool results, echo, a fixed answer, a notice, N words, or its persona's text."""
    wanted = response_format.get("type") if spec.get("schema") and isinstance(response_format, dict) else None
    asked = part_text(last_user(messages).get("content"))
    if spec.get("ranks") and "## Response A" in asked:
        return ranking_text(spec, asked, wanted == "json_schema")
    if wanted == "json_schema":
        return json.dumps(shaped(response_format, messages))
    if wanted == "json_object":
        return json.dumps({"answer": answer_text(name, spec, messages)})
    results = tool_results(messages) if "tool_calls" in spec or spec.get("agent") else []
    if results and spec.get("agent"):
        return f"{called_last(messages)} says: " + "; ".join(results)
    if results:
        return "Tool results: " + "; ".join(results)
    if spec.get("echo"):
        return json.dumps(messages)
    for needle, reply in (spec.get("replies") or {}).items():
        if needle in asked:
            return reply
    if "answer" in spec:
        return spec["answer"]
    if spec.get("fail") == "notice":
        return NOTICE
    if spec.get("words"):
        start = digest(name, part_text(last_user(messages).get("content")))
        return " ".join(VOCABULARY[(start + 7 * i) % len(VOCABULARY)] for i in range(spec["words"]))
    persona = spec.get("persona", "plain")
    if persona == "seer" and not image_urls(last_user(messages)):
        return fill(NO_IMAGE, name, messages)
    return fill(PERSONAS[persona], name, messages)


def tool_messages(messages):
    """The `tool` role messages (tool results) of `messages`, in order."""
    return [m for m in messages if isinstance(m, dict) and m.get("role") == "tool"]


def tool_results(messages):
    """The contents of the `tool` messages since the last user message, in order."""
    users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
    return [part_text(m.get("content")) for m in tool_messages(messages[users[-1] + 1 if users else 0:])]


def calls_made(messages):
    """How many times this conversation already called tools: assistant messages with a non-empty `tool_calls`."""
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
               and isinstance(m.get("tool_calls"), list) and m["tool_calls"])


def with_result(value, result, authorization=""):
    """`value` with every string equal to RESULT, at any depth, replaced by `result`, and every one equal to
    AUTHORIZATION by `authorization`."""
    if isinstance(value, dict):
        return {key: with_result(item, result, authorization) for key, item in value.items()}
    if isinstance(value, list):
        return [with_result(item, result, authorization) for item in value]
    return {RESULT: result, AUTHORIZATION: authorization}.get(value, value) if isinstance(value, str) else value


def script_calls(name, spec, messages, tools, authorization=""):
    """The calls this request gets from the model's `tool_calls` script: `[{id, name, arguments (JSON text)}]`,
    or [] when the request offers no tools or every step is used."""
    steps, step = spec.get("tool_calls") or [], calls_made(messages)
    if not (isinstance(tools, list) and tools) or step >= len(steps):
        return []
    done = tool_messages(messages)
    result = RESULT
    if done:
        result = part_text(done[-1].get("content"))
        try:
            result = json.loads(result)
        except ValueError:
            pass
    return [{"id": call.get("id") or f"call_{name}_{step}_{i}", "name": call["name"],
             "arguments": json.dumps(with_result(call["arguments"], result, authorization))}
            for i, call in enumerate(steps[step])]


def agent_calls(name, messages, tools):
    """An `agent` model's call: the first function tool offered, once per user message, its arguments drawn from
    that message; [] without tools or once a tool has answered since the message."""
    offered = [t["function"] for t in tools or () if isinstance(t, dict) and isinstance(t.get("function"), dict)
               and isinstance(t["function"].get("name"), str)]
    if not offered or tool_results(messages):
        return []
    asked = part_text(last_user(messages).get("content"))
    arguments = draw(offered[0].get("parameters") or {}, asked, words=True)
    return [{"id": f"call_{name}_{digest(name, asked) % 10**8:08d}", "name": offered[0]["name"],
             "arguments": json.dumps(arguments if isinstance(arguments, dict) else {})}]


def called_last(messages):
    """The name of the last tool the conversation called, or "the tool"."""
    for message in reversed(messages):
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if isinstance(calls, list) and calls and isinstance(calls[-1], dict):
            return (calls[-1].get("function") or {}).get("name") or "the tool"
    return "the tool"


def shaped(response_format, messages):
    """A JSON value fitting `response_format`'s schema, drawn from the tool results since the last user
    message, else from that message."""
    spec = response_format.get("json_schema") if isinstance(response_format.get("json_schema"), dict) else {}
    source = "; ".join(tool_results(messages)) or part_text(last_user(messages).get("content"))
    return draw(spec.get("schema") or {}, source)


NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def draw(schema, text, words=False):
    """A value fitting JSON schema `schema`, its leaves drawn from `text`, the same every time: a string
    property takes what follows `<its name>:` or `<its name>=` in the text, else (with `words`, tool arguments)
    the first quoted phrase or the last capitalised word after the first, else the whole text; numbers take the
    text's numbers in turn (else 1); booleans are true; an array has one item; `enum`, `const`, `anyOf` and
    `oneOf` take their first choice; `$ref`s are read from `$defs`."""
    numbers = iter(NUMBER.findall(text))
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})} if isinstance(schema, dict) else {}

    def value(node, key):
        node = node if isinstance(node, dict) else {}
        if isinstance(node.get("$ref"), str):
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        if "const" in node:
            return node["const"]
        if isinstance(node.get("enum"), list) and node["enum"]:
            return node["enum"][0]
        for many in ("anyOf", "oneOf", "allOf"):
            choices = [c for c in node.get(many) or () if isinstance(c, dict) and c.get("type") != "null"]
            if choices:
                return value(choices[0], key)
        kind = node.get("type")
        kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
        if kind == "object" or "properties" in node:
            return {name: value(sub, name) for name, sub in (node.get("properties") or {}).items()}
        if kind == "array":
            return [value(node.get("items"), key)]
        if kind in ("integer", "number"):
            found = next(numbers, None)
            number = float(found) if found is not None else 1
            return int(number) if kind == "integer" else number
        if kind == "boolean":
            return True
        return phrase(text, key, words)

    return value(schema, "")


def phrase(text, key, words):
    """A string property's value from `text` (see `draw`)."""
    if key:
        found = re.search(rf"\b{re.escape(key)}\s*[:=]\s*([^,;.?!\n]+)", text, re.I)
        if found:
            return found.group(1).strip().strip("\"'")
    if words:
        quoted = re.search(r"[\"']([^\"']+)[\"']", text)
        if quoted:
            return quoted.group(1)
        capitals = [w.strip(".,;:?!") for w in text.split()[1:] if w[:1].isupper()]
        if capitals:
            return capitals[-1]
        return text.split()[-1].strip(".,;:?!") if text.split() else ""
    return text.strip()


def call_deltas(reply):
    """A stream's tool-call deltas, in order: per call a head (index, id, name, "" arguments), then its arguments
    text in 2-3 pieces. `parallel` interleaves the calls (every head, then the pieces in turn); `late_id` moves
    each id from its head to its first piece."""
    per_call = []
    for i, call in enumerate(reply["calls"]):
        text = call["arguments"]
        cuts = [0, len(text) // 3, 2 * len(text) // 3, len(text)]
        head = {"index": i, "id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": ""}}
        pieces = [{"index": i, "function": {"arguments": text[a:b]}} for a, b in zip(cuts, cuts[1:]) if a < b]
        if reply["late_id"]:
            del head["id"]
            pieces[0] = {"index": i, "id": call["id"], "function": pieces[0]["function"]}
        per_call.append([head] + pieces)
    if reply["parallel"]:
        order = [calls[0] for calls in per_call]
        order += [d for row in itertools.zip_longest(*(calls[1:] for calls in per_call)) for d in row if d]
    else:
        order = [d for calls in per_call for d in calls]
    return [{"tool_calls": [d]} for d in order]


def reasoning_text(name, spec, messages):
    """Reasoning sent before the answer: the spec's, else the persona's, else none."""
    if "reasoning" in spec:
        return spec["reasoning"]
    thoughts = THOUGHTS.get(spec.get("persona", "plain"))
    return fill(thoughts, name, messages) if thoughts else ""


def tokens(text, split=0):
    """Split text into stream tokens (a word plus its trailing space, or `split` characters) that join back to
    the exact text."""
    if split:
        return [text[at:at + split] for at in range(0, len(text or ""), split)]
    return re.findall(r"\s*\S+\s*", text or "") or ([text] if text else [])


def usage(messages, content, reasoning):
    prompt = sum(len(part_text(m.get("content"))) for m in messages if isinstance(m, dict)) // 4 + 1
    thought = len(tokens(reasoning))
    completion = len(tokens(content)) + thought
    out = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if thought:
        out["completion_tokens_details"] = {"reasoning_tokens": thought}
    return out


def listing_row(name, spec):
    """One GET /models row, with each fact under the names OpenRouter and endpoint listings use."""
    inputs = ["text", "image"] if spec.get("vision") else ["text"]
    tools = spec.get("tools", "tool_calls" in spec or bool(spec.get("agent")))
    row = {"id": name, "object": "model", "created": CREATED, "owned_by": OWNER,
           "architecture": {"input_modalities": inputs, "output_modalities": ["text"]},
           "input_modalities": inputs, "output_modalities": ["text"],
           "supported_parameters": BASE_PARAMETERS + (["tools", "tool_choice"] if tools else [])}
    top = {}
    if "context_window" in spec:
        row["context_length"] = row["context_window"] = top["context_length"] = spec["context_window"]
    if "max_output" in spec:
        row["max_output_tokens"] = row["max_output_length"] = top["max_completion_tokens"] = spec["max_output"]
    if top:
        row["top_provider"] = top
    if "tools" in spec or "tool_calls" in spec or spec.get("agent"):
        row["supported_features"] = ["tools"] if tools else []
    if spec.get("schema"):
        row["supported_parameters"] = row["supported_parameters"] + ["response_format", "structured_outputs"]
    return row


def requested_max_tokens(body):
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    return value if isinstance(value, int) else None


def fail_mode(spec, count, max_tokens):
    """The failure this request gets, after clears_after and length_below have had their say."""
    fail = spec.get("fail")
    if fail == "429" and "clears_after" in spec and count > spec["clears_after"]:
        return None
    if fail == "length_empty" and "length_below" in spec:
        if max_tokens is None or max_tokens >= spec["length_below"]:
            return None
    return fail


def limit_headers(spec, count):
    """`(headers, over)`: the rate-limit headers a `ratelimit` model sends with its reply to request `count`,
    and whether that request is past the limit (answered 429). No headers without `ratelimit`."""
    if "ratelimit" not in spec:
        return [], False
    allowed = spec["ratelimit"]
    return [("x-ratelimit-limit-requests", str(allowed)),
            ("x-ratelimit-remaining-requests", str(max(allowed - count, 0))),
            ("x-ratelimit-reset-requests", str(spec.get("ratelimit_reset", "60s")))], count > allowed


def garbles(reply, n):
    """Whether a native stream sends its piece `n` as GARBLED: the second piece of a garbled reply."""
    return n == 1 and reply.get("fail") == "garbled"


def error_body(message, code):
    return {"error": {"message": message, "code": code}}


def api_of(route):
    """Which API a path speaks, for its key header and error shape: Anthropic and Gemini by their
    paths or roots, everything else OpenAI's (the Responses API included)."""
    if route.endswith("/messages") or route.startswith(ROOTS["anthropic"] + "/"):
        return "anthropic"
    if "/v1beta/" in route or route.endswith("/v1beta"):
        return "gemini"
    if route.endswith("/responses"):
        return "responses"
    return "chat"


def gemini_row(name, spec):
    """One Gemini listing row (EP-11 reads `models[]` with generateContent among the methods)."""
    row = {"name": f"models/{name}", "displayName": name,
           "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]}
    if "context_window" in spec:
        row["inputTokenLimit"] = spec["context_window"]
    if "max_output" in spec:
        row["outputTokenLimit"] = spec["max_output"]
    return row


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One token per write: with Nagle on, small writes wait for the peer's delayed ACK (~40 ms each).
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        """Silent: the upstream never logs (requests may carry images and keys)."""

    def do_GET(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def serve(self):
        up = self.server.upstream
        try:
            raw = self.read_body()
        except ValueError:  # a Content-Length or chunk size that is not a number
            up.record(self.command, self.path, self.headers, None)
            self.close_connection = True
            return self.send_json(400, error_body("Malformed request framing", 400))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        route = urlsplit(self.path).path.rstrip("/")
        up.record(self.command, self.path, self.headers, body)
        api = api_of(route)
        gemini = wire.gemini.model_path(route[route.find("/v1beta/"):]) if "/v1beta/" in route else None
        if gemini and gemini[1] not in wire.gemini.METHODS:
            gemini = None
        if up.key is not None and not self.authorized(api):
            self.refuse(401, error_body("Invalid API key", 401), api=api)
        elif self.command == "GET" and route.endswith("/v1beta/models"):
            self.send_json(200, {"models": up.gemini_listing()})
        elif self.command == "GET" and route.endswith("/models"):
            self.send_json(200, {"object": "list", "data": up.listing()})
        elif self.command == "POST" and route.endswith("/chat/completions"):
            self.chat(body)
        elif self.command == "POST" and route in ("/v1/decisions", "/decisions"):
            self.decide(body)
        elif self.command == "POST" and (route.endswith(("/messages", "/responses")) or gemini):
            self.native(api, body, *(gemini or ()))
        else:
            self.refuse(404, error_body(f"Not found: {self.command} {route}", 404), api=api)

    def authorized(self, api):
        """The key in the header each API sends it in (EP-7); Gemini also takes `?key=`."""
        key = self.server.upstream.key
        if api == "anthropic":
            return self.headers.get("x-api-key") == key
        if api == "gemini":
            return self.headers.get("x-goog-api-key") == key or parse_qs(urlsplit(self.path).query).get("key") == [key]
        return self.headers.get("Authorization") == f"Bearer {key}"

    def refuse(self, status, payload, headers=(), api="chat"):
        """An error reply in `api`'s own shape; a None payload is the HTML 502 page."""
        if payload is None:
            return self.send_bytes(status, BAD_GATEWAY_HTML, "text/html; charset=utf-8")
        if api != "chat":
            error = payload.get("error") if isinstance(payload, dict) else None  # a quota_body may be a list
            payload = wire.error_body(api, status, str((error or {}).get("message") or ""))
        self.send_json(status, payload, headers)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline().strip():  # trailers, then the blank line
                pass
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError("negative Content-Length")
        return self.rfile.read(length)

    def send_json(self, status, payload, headers=()):
        self.send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def send_bytes(self, status, data, content_type, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def chat(self, body):
        if not isinstance(body, dict):
            return self.send_json(400, error_body("The request body must be a JSON object", 400))
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        reply, refusal = self.answer(body.get("model"), messages, requested_max_tokens(body), body.get("tools"),
                                     body.get("response_format"))
        if refusal:
            return self.refuse(*refusal)
        if body.get("stream") and not reply["streams"]:
            return self.refuse(400, error_body("Streaming is not supported for this model", 400))
        if body.get("stream") and not reply["whole"]:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.stream(reply, include_usage)
        else:
            self.plain(reply)

    def answer(self, name, messages, max_tokens, tools=None, response_format=None):
        """What model `name` says to `messages`, in no API's shape: `(reply, None)`, or
        `(None, (status, OpenAI-shaped error body or None for the HTML 502, headers))`.
        `tools` (a chat request's) lets a `tool_calls` or `agent` model answer with calls; `response_format`
        lets a `schema` model answer JSON."""
        up = self.server.upstream
        spec, count, seq = up.take(name)
        if spec is None:
            return None, (404, error_body(f"Model not found: {name}", 404), [])
        fail = fail_mode(spec, count, max_tokens)
        if fail == "slow":
            up.pause(spec.get("delay", 30))
        if "max_tokens_limit" in spec and max_tokens is not None and max_tokens >= spec["max_tokens_limit"]:
            return None, (400, {"error": {"message": "max_tokens is too large"}}, [])
        if "echo_auth" in spec:
            said = f"{part_text(last_user(messages).get('content'))} Authorization: {self.headers.get('Authorization')}"
            if spec["echo_auth"] != 200:
                return None, (spec["echo_auth"], error_body(said, spec["echo_auth"]), [])
            spec = {**spec, "answer": said}
        limits, over = limit_headers(spec, count)
        if over:
            fail = "429"
        if fail in ERROR_REPLIES:
            status, payload = ERROR_REPLIES[fail]
            retry = [("Retry-After", str(spec.get("retry_after", 1)))] if fail == "429" else []
            if fail == "429" and "quota_body" in spec:
                payload = spec["quota_body"]
            return None, (status, payload, limits + retry)
        if fail == "502html":
            return None, (502, None, [])
        calls = [] if fail in ("empty", "length_empty") else (
            agent_calls(name, messages, tools) if spec.get("agent")
            else script_calls(name, spec, messages, tools, self.headers.get("Authorization") or ""))
        if fail == "empty":
            content = ""
        elif fail == "length_empty":
            content = None  # out of budget: no content at all (null), as reasoning models send it
        elif calls:
            content = spec.get("say") or None  # null beside tool calls, as OpenAI sends it
        else:
            content = answer_text(name, spec, messages, response_format)
        reasoning = reasoning_text(name, spec, messages)
        if fail == "length_empty" and not reasoning:
            reasoning = fill((DEFAULT_THOUGHT,), name, messages)
        said = " ".join([content or ""] + [call["arguments"] for call in calls]) if calls else content
        reply = {"id": f"chatcmpl-demo{seq:08d}", "created": int(time.time()), "model": spec.get("serves_as", name),
                 "content": content, "reasoning": reasoning, "calls": calls,
                 "finish": "length" if fail == "length_empty" else "tool_calls" if calls else "stop",
                 "usage": usage(messages, said, reasoning),
                 "latency": spec.get("latency", 0), "drop": fail == "drop", "fail": fail,
                 "pause": spec.get("pause", 1.0) if fail == "stall_mid" else 0,
                 "keepalive": bool(spec.get("keepalive")), "streams": spec.get("streams", True),
                 "parallel": bool(spec.get("parallel")), "late_id": bool(spec.get("late_id")),
                 "whole": bool(spec.get("whole")), "split": spec.get("split", 0), "headers": limits}
        return reply, None

    def decide(self, body):
        """A Decisions API answer (the shape picker's contract, SHP-4): the model's `decisions` spec, as given."""
        name = body.get("model") if isinstance(body, dict) else None
        spec, count, _ = self.server.upstream.take(name)
        if spec is None:
            return self.send_json(404, error_body(f"Model not found: {name}", 404))
        fail = fail_mode(spec, count, None)
        if fail in ERROR_REPLIES:
            status, payload = ERROR_REPLIES[fail]
            return self.send_json(status, payload)
        self.server.upstream.pause(spec.get("latency", 0))
        asked = (body.get("questions") or {}) if isinstance(body.get("questions"), dict) else {}
        answers = {q: a for q, a in (spec.get("decisions") or {}).items() if q in asked}
        answers.update(read_state(spec.get("decides") or {}, body.get("state"), asked))
        self.send_json(200, {"answers": answers})

    def plain(self, reply):
        self.server.upstream.pause(reply["latency"])
        message = {"role": "assistant", "content": reply["content"]}
        if reply["reasoning"]:
            message["reasoning_content"] = reply["reasoning"]
        if reply["calls"]:
            message["tool_calls"] = [{"id": call["id"], "type": "function",
                                      "function": {"name": call["name"], "arguments": call["arguments"]}}
                                     for call in reply["calls"]]
        data = json.dumps({"id": reply["id"], "object": "chat.completion", "created": reply["created"],
                           "model": reply["model"], "usage": reply["usage"],
                           "choices": [{"index": 0, "message": message, "finish_reason": reply["finish"]}]}).encode()
        self.whole(data, reply)

    def whole(self, data, reply):
        """A plain JSON reply, or its fault: `drop` breaks off half way, `garbled` is not JSON, `stall_headers`
        holds after its head and `stall_after_first` after half the body, `stall_mid` pauses half way."""
        up, fail, half = self.server.upstream, reply.get("fail"), len(data) // 2
        if fail == "garbled":  # where a key must come: never valid JSON, wherever the answer's words fall
            data = data[:1] + LOST + data[1:]
        if fail not in ("drop", "stall_mid", *STALLS):
            return self.send_bytes(200, data, "application/json", reply.get("headers", ()))
        # Promise the whole body, then break off, hold or pause part way.
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if fail == "drop":
            self.send_header("Connection", "close")
        self.end_headers()
        if fail == "stall_headers":
            up.hold()
        self.wfile.write(data[:half])
        if fail == "stall_after_first":
            up.hold()
        if fail == "stall_mid":
            up.pause(reply["pause"])
            self.wfile.write(data[half:])

    def stream(self, reply, include_usage):
        up = self.server.upstream
        chunked = not reply["drop"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        for name, value in reply.get("headers", ()):
            self.send_header(name, value)
        # Chunked keeps the connection reusable; a drop is close-delimited so its framing is whole.
        self.send_header("Transfer-Encoding" if chunked else "Connection", "chunked" if chunked else "close")
        self.end_headers()

        def frame(data):
            return b"%x\r\n%s\r\n" % (len(data), data) if chunked else data

        def chunk(choices, **extra):
            return frame(b"data: " + json.dumps({"id": reply["id"], "object": "chat.completion.chunk",
                                                 "created": reply["created"], "model": reply["model"],
                                                 "choices": choices, **extra}).encode() + b"\n\n")

        def event(delta, finish=None):
            return chunk([{"index": 0, "delta": delta, "finish_reason": finish}])

        said = [{"content": t} for t in tokens(reply["content"], reply["split"])] + call_deltas(reply)
        deltas = [{"reasoning_content": t} for t in tokens(reply["reasoning"], reply["split"])]
        deltas += said[: DROP_AFTER if reply["drop"] else None]
        sent = [frame(KEEPALIVE) + event(delta) if reply["keepalive"] else event(delta) for delta in deltas]
        if reply["fail"] == "garbled":
            sent[1:2] = [frame(GARBLED)]  # the second piece's words go out in an event that is not JSON
        step, pause, half = reply["latency"] / (len(sent) + 1), reply["pause"], len(sent) // 2
        start = time.monotonic()
        opening = None if reply["calls"] and not reply["content"] else ""
        timed = [(start, event({"role": "assistant", "content": opening}))]
        timed += [(start + i * step + (pause if i > half else 0), data) for i, data in enumerate(sent, 1)]
        if not reply["drop"]:
            end = event({}, reply["finish"]) + (chunk([], usage=reply["usage"]) if include_usage else b"")
            end += frame(b"data: [DONE]\n\n") + b"0\r\n\r\n"
            timed.append((start + (len(sent) + 1) * step + pause, end))
        held = STALLS.get(reply["fail"])
        if held is not None:
            timed = timed[:held]
        if timed:
            up.pacer.send(self.wfile.write, timed)
        if held is not None:
            up.hold()


    # -- native APIs: Anthropic Messages, Gemini, OpenAI Responses ---------------

    def native(self, api, body, model=None, method=None):
        """A native request, read with the gateway's own format readers and answered in `api`'s shape."""
        if not isinstance(body, dict):
            return self.refuse(400, error_body("The request body must be a JSON object", 400), api=api)
        try:
            if api == "gemini":
                messages = wire.gemini.ask(body, model, method).messages
                config = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
                name, stream, budget = model, method == "streamGenerateContent", config.get("maxOutputTokens")
            else:
                messages = wire.get(api).read(body).messages
                name, stream = body.get("model"), bool(body.get("stream"))
                budget = body.get("max_tokens" if api == "anthropic" else "max_output_tokens")
        except wire.Unsupported as exc:
            return self.refuse(400, error_body(str(exc), 400), api=api)
        reply, refusal = self.answer(name, messages, budget if isinstance(budget, int) else None)
        if refusal and refusal[0] != 200:
            return self.refuse(*refusal, api=api)
        if refusal:  # error200: the failure comes after the 200, in the API's own way
            reply = {"id": f"demo{int(time.time())}", "created": int(time.time()), "model": name, "content": "",
                     "reasoning": "", "finish": "stop", "usage": usage(messages, "", ""), "latency": 0,
                     "drop": False, "split": 0, "failed": refusal[1]["error"]["message"]}
        sse = parse_qs(urlsplit(self.path).query).get("alt") == ["sse"]
        {"anthropic": self.as_anthropic, "gemini": self.as_gemini, "responses": self.as_responses}[api](reply, stream, sse)

    def open_events(self, drop, content_type="text/event-stream"):
        """The head of a native stream; returns `emit(bytes)` (chunked, or close-delimited for a drop)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection" if drop else "Transfer-Encoding", "close" if drop else "chunked")
        self.end_headers()

        def emit(data):
            self.wfile.write(data if drop else b"%x\r\n%s\r\n" % (len(data), data))
        return emit

    def close_events(self):
        self.wfile.write(b"0\r\n\r\n")

    def pieces(self, reply):
        """`(kind, token)` in order, reasoning first; a dropped reply stops a few content tokens in."""
        found = [("reasoning", t) for t in tokens(reply["reasoning"], reply["split"])]
        said = [("text", t) for t in tokens(reply["content"], reply["split"])]
        found += said[: DROP_AFTER if reply["drop"] else None]
        return found

    def as_anthropic(self, reply, stream, sse):
        up = self.server.upstream
        counts = reply["usage"]
        stop = "max_tokens" if reply["finish"] == "length" else "end_turn"
        failed = {"type": "error", "error": {"type": "overloaded_error", "message": reply.get("failed") or ""}}
        if not stream:
            up.pause(reply["latency"])
            if reply.get("failed"):
                return self.send_json(200, failed)
            blocks = []
            if reply["reasoning"]:
                blocks.append({"type": "thinking", "thinking": reply["reasoning"], "signature": ""})
            blocks.append({"type": "text", "text": reply["content"] or ""})
            message = {"id": f"msg_{reply['id']}", "type": "message", "role": "assistant", "model": reply["model"],
                       "content": blocks, "stop_reason": stop, "stop_sequence": None,
                       "usage": {"input_tokens": counts["prompt_tokens"],
                                 "output_tokens": counts["completion_tokens"]}}
            return self.whole(json.dumps(message).encode(), reply)
        emit = self.open_events(reply["drop"])

        def event(payload):
            emit(wire.common.sse(payload, payload["type"]))

        event({"type": "message_start", "message": {
            "id": f"msg_{reply['id']}", "type": "message", "role": "assistant", "model": reply["model"],
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": counts["prompt_tokens"], "output_tokens": 1}}})
        if reply.get("failed"):
            event(failed)
            return self.close_events()
        pieces = self.pieces(reply)
        step = reply["latency"] / (len(pieces) + 1)
        index, kind_open = 0, None
        for n, (kind, piece) in enumerate(pieces):
            if kind != kind_open:
                if kind_open:
                    event({"type": "content_block_stop", "index": index})
                    index += 1
                    event({"type": "ping"})
                block = {"type": "thinking", "thinking": ""} if kind == "reasoning" else {"type": "text", "text": ""}
                event({"type": "content_block_start", "index": index, "content_block": block})
                kind_open = kind
            up.pause(step)
            delta = {"type": "thinking_delta", "thinking": piece} if kind == "reasoning" else \
                {"type": "text_delta", "text": piece}
            if garbles(reply, n):
                emit(GARBLED)
            else:
                event({"type": "content_block_delta", "index": index, "delta": delta})
        if reply["drop"]:
            return
        if kind_open:
            event({"type": "content_block_stop", "index": index})
        up.pause(step)
        event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
               "usage": {"output_tokens": counts["completion_tokens"]}})
        event({"type": "message_stop"})
        self.close_events()

    def as_gemini(self, reply, stream, sse):
        up = self.server.upstream
        counts = reply["usage"]
        thoughts = (counts.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
        meta = {"promptTokenCount": counts["prompt_tokens"],
                "candidatesTokenCount": counts["completion_tokens"] - thoughts,
                "totalTokenCount": counts["total_tokens"]}
        if thoughts:
            meta["thoughtsTokenCount"] = thoughts
        finish = "MAX_TOKENS" if reply["finish"] == "length" else "STOP"
        failed = wire.gemini.error_body(500, reply.get("failed") or "")

        def chunk(parts, last=False):
            candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
            out = {"candidates": [candidate], "modelVersion": reply["model"], "responseId": reply["id"]}
            if last:
                candidate["finishReason"] = finish
                out["usageMetadata"] = meta
            return out

        if not stream:
            up.pause(reply["latency"])
            if reply.get("failed"):
                return self.send_json(200, failed)
            parts = [{"text": reply["reasoning"], "thought": True}] if reply["reasoning"] else []
            return self.whole(json.dumps(chunk(parts + [{"text": reply["content"] or ""}], True)).encode(), reply)
        emit = self.open_events(reply["drop"], "text/event-stream" if sse else "application/json")
        sent = 0

        def element(obj, end=False):
            nonlocal sent
            data = json.dumps(obj).encode()
            emit(b"data: " + data + b"\n\n" if sse else (b"," if sent else b"[") + data + (b"]" if end else b""))
            sent += 1

        if reply.get("failed"):
            element(failed, True)
            return self.close_events()
        pieces = self.pieces(reply)
        step = reply["latency"] / (len(pieces) + 1)
        for n, (kind, piece) in enumerate(pieces):
            up.pause(step)
            if garbles(reply, n):
                emit(GARBLED if sse else b"," + LOST)
            else:
                element(chunk([{"text": piece, "thought": True} if kind == "reasoning" else {"text": piece}]))
        if reply["drop"]:
            return
        up.pause(step)
        element(chunk([{"text": ""}], True), True)
        self.close_events()

    def as_responses(self, reply, stream, sse):
        up = self.server.upstream
        counts = reply["usage"]
        thoughts = (counts.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
        used = {"input_tokens": counts["prompt_tokens"], "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": counts["completion_tokens"], "output_tokens_details": {"reasoning_tokens": thoughts},
                "total_tokens": counts["total_tokens"]}
        item = wire.responses.message_item(f"msg_{reply['id']}", reply["content"] or "")

        def response(status, output, **extra):
            return wire.responses.response(f"resp_{reply['id']}", reply["created"], reply["model"], status,
                                              output, used, **extra)

        failed = response("failed", [], error={"code": "server_error", "message": reply.get("failed") or ""})
        if not stream:
            up.pause(reply["latency"])
            whole = failed if reply.get("failed") else response("completed", [item])
            return self.whole(json.dumps(whole).encode(), reply)
        emit = self.open_events(reply["drop"])
        sequence = 0

        def event(kind, **fields):
            nonlocal sequence
            emit(wire.common.sse({"type": kind, "sequence_number": sequence, **fields}, kind))
            sequence += 1

        event("response.created", response=response("in_progress", []))
        if reply.get("failed"):
            event("response.failed", response=failed)
            return self.close_events()
        pieces = self.pieces(reply)
        step = reply["latency"] / (len(pieces) + 1)
        for n, (kind, piece) in enumerate(pieces):
            up.pause(step)
            name = "response.reasoning_summary_text.delta" if kind == "reasoning" else "response.output_text.delta"
            if garbles(reply, n):
                emit(GARBLED)
            else:
                event(name, item_id=item["id"], output_index=0, delta=piece)
        if reply["drop"]:
            return
        up.pause(step)
        event("response.completed", response=response("completed", [item]))
        self.close_events()


class Pacer:
    """One thread that writes every stream's timed pieces when they fall due.

    A handler thread per stream sleeping between tokens wakes, and takes the GIL, once per token:
    with a hundred streams at a token every 1-2 ms that cost the upstream more than a core, and a
    benchmark measured the upstream instead of the gateway. Here one wake-up writes every piece
    that has fallen due, at most PACE late: a write of its own per piece while the upstream keeps
    up, as providers stream; the pieces of one stream that fell due together (the machine busy)
    go out in one write, so a loaded upstream stays on time instead of falling further behind.
    """

    PACE = 0.001

    def __init__(self, stopping):
        self.stopping = stopping
        self.due = []  # heap of (when, order, stream)
        self.order = 0
        self.wake = threading.Condition()
        self.thread = None

    def send(self, write, timed):
        """Write each `(monotonic time, bytes)` of `timed` with `write` at its time, in order; returns once all
        are written. Raises what a write raised, or ConnectionAbortedError when the upstream stops."""
        stream = {"write": write, "timed": timed, "next": 0, "done": threading.Event(), "error": None}
        with self.wake:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="demo-pacer", daemon=True)
                self.thread.start()
            self._queue(stream)
            self.wake.notify()
        stream["done"].wait()
        if stream["error"] is not None:
            raise stream["error"]

    def _queue(self, stream):
        self.order += 1
        heapq.heappush(self.due, (stream["timed"][stream["next"]][0], self.order, stream))

    def stop(self):
        with self.wake:
            self.wake.notify()

    def _run(self):
        while True:
            with self.wake:
                now = time.monotonic()
                while not self.stopping.is_set() and not (self.due and self.due[0][0] <= now):
                    self.wake.wait(self.due[0][0] - now if self.due else None)
                    now = time.monotonic()
                ready = []
                while self.due and (self.stopping.is_set() or self.due[0][0] <= now):
                    ready.append(heapq.heappop(self.due)[2])
                if self.stopping.is_set() and not ready:
                    self.thread = None
                    return
            for stream in ready:
                self._write(stream, now)
            time.sleep(self.PACE)

    def _write(self, stream, now):
        if self.stopping.is_set():
            stream["error"] = ConnectionAbortedError("the upstream stopped")
        else:
            timed, first = stream["timed"], stream["next"]
            last = first + 1
            while last < len(timed) and timed[last][0] <= now:
                last += 1
            try:
                stream["write"](b"".join(piece for _, piece in timed[first:last]))
                stream["next"] = last
            except OSError as exc:
                stream["error"] = exc
        if stream["error"] is None and stream["next"] < len(stream["timed"]):
            with self.wake:
                self._queue(stream)
        else:
            stream["done"].set()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024

    def __init__(self, address, upstream):
        self.upstream = upstream
        self.connections = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, Handler)

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self):
        """Hang up idle keep-alive connections too, so a stopped upstream really stops answering."""
        with self.connections_lock:
            open_now = list(self.connections)
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address):
        # A client hanging up (or stop() cutting a reply short) is routine here; real bugs still print.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class Upstream:
    """The fake provider: serves `models` ({name: spec}) on host:port in a daemon thread."""

    def __init__(self, models=None, host="127.0.0.1", port=0, key=None):
        source = DEMO_MODELS if models is None else models
        self.models = {name: check_spec(name, spec) for name, spec in source.items()}
        self.host = host
        self.key = key
        self.requests = []
        self.counts = {}
        self.seq = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.pacer = Pacer(self.stopping)
        self.server = None
        self.thread = None
        self.wanted_port = port

    @property
    def port(self):
        return self.server.server_address[1] if self.server else self.wanted_port

    @property
    def base_url(self):
        return f"http://{self.host}:{self.port}/v1"

    def url(self, api="chat"):
        """The base URL an endpoint of `api` uses here: each native API has its own root (see ROOTS)."""
        return f"http://{self.host}:{self.port}{ROOTS[api]}"

    def start(self):
        self.server = Server((self.host, self.wanted_port), self)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       name=f"demo-upstream-{self.port}", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if not self.server:
            return
        self.stopping.set()
        self.pacer.stop()
        self.server.shutdown()
        self.server.close_connections()
        self.server.server_close()
        self.thread.join()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def set_model(self, name, **spec):
        spec = check_spec(name, spec)
        with self.lock:
            self.models[name] = spec
            self.counts.pop(name, None)

    def clear(self):
        with self.lock:
            self.requests.clear()
            self.counts.clear()

    def answer_for(self, name, prompt):
        """The text `name` answers on success to a prompt (a string or a messages list): for assertions."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        with self.lock:
            spec = dict(self.models[name])
        return answer_text(name, spec, messages)

    def record(self, method, path, headers, body):
        model = body.get("model") if isinstance(body, dict) else None
        entry = {"method": method, "path": path, "headers": {k.lower(): v for k, v in headers.items()},
                 "body": body, "model": model if isinstance(model, str) else None, "at": time.monotonic()}
        with self.lock:
            self.requests.append(entry)

    def take(self, name):
        """(spec copy, this model's request number, reply sequence number); spec None when unknown."""
        with self.lock:
            self.seq += 1
            if not isinstance(name, str) or name not in self.models:
                return None, 0, self.seq
            self.counts[name] = self.counts.get(name, 0) + 1
            return dict(self.models[name]), self.counts[name], self.seq

    def listing(self):
        with self.lock:
            models = [(name, dict(spec)) for name, spec in self.models.items()]
        return [listing_row(name, spec) for name, spec in models if listed(spec)]

    def gemini_listing(self):
        with self.lock:
            models = [(name, dict(spec)) for name, spec in self.models.items()]
        return [gemini_row(name, spec) for name, spec in models if listed(spec)]

    def pause(self, seconds):
        """Wait in the handler thread; abandon the reply if the upstream is stopping."""
        if seconds > 0 and self.stopping.wait(seconds):
            raise ConnectionAbortedError("the upstream stopped")

    def hold(self):
        """Send nothing more until the upstream stops (a stalled reply), then abandon the reply."""
        self.stopping.wait()
        raise ConnectionAbortedError("the upstream stopped")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.demo.demo",
                                     description="Serve the demo models as a local OpenAI-compatible upstream.")
    parser.add_argument("--port", type=int, default=8124, help="port to listen on (0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--models", metavar="JSON_FILE",
                        help="serve the models of this JSON file ({name: spec}) instead of the demo's (benchmarks)")
    args = parser.parse_args(argv)
    models = None
    if args.models:
        with open(args.models, encoding="utf-8") as f:
            models = json.load(f)
    with Upstream(models=models, host=args.host, port=args.port) as up:
        print(up.base_url, flush=True)
        print(f"models: {', '.join(up.models)}  (ctrl-c to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())


def register(up, endpoint="demo", aliases=None, default=True, api="chat", key=""):
    """Point the current data folder at `up`: an endpoint entry plus one registration per alias.

    `aliases` maps alias -> served model name (default: every model under its own name).
    `api` ("anthropic", "gemini", "responses") makes it a native endpoint on that API's root;
    `key` names the stored key its registrations send.
    The demo, the tests and the benchmarks all build their bench this way.
    """
    def add(data):
        entry = {"base": up.url(api), "key": key, "kind": "local", "default": default}
        if api == "chat":
            entry["decisions"] = up.base_url + "/{path}"
        else:
            entry["api"] = api
        data[endpoint] = entry

    fileio.update(endpoints.path(), add)
    for alias, served in (aliases or {name: name for name in up.models}).items():
        registry.add_registration(alias, served, endpoint)


def set_collection(name, members, **fields):
    """Write one collection into the current data folder's collections.json."""
    fileio.update(collections.collections_path(), lambda data: data.__setitem__(name, {"members": members, **fields}))


DEMO_SCOUT = {"persona": "plain", "latency": 0.1, "context_window": 65536, "max_output": 8192, "tools": True}
DEMO_COLLECTION = {"members": ["terse", "verbose", "contrarian"], "description": "three reviewers and two explorers",
                   "tags": ["demo"]}
# route mode by default: a request with tools goes to fetcher (clerk calls none); either answers a JSON schema
AGENTS_COLLECTION = {"members": ["fetcher", "clerk"], "reply": "route", "tags": ["demo"],
                     "description": "for agents: one member calls your tools, both answer a JSON schema"}


def start_demo():
    """The offline demo: the demo upstream and a throwaway data folder whose `demo` collection it serves."""
    os.environ["BENCHWARMERS_HOME"] = tempfile.mkdtemp(prefix="benchwarmers-demo-")
    os.environ["BENCH_CLIENT"] = "builtin"
    os.environ["BENCHWARMERS_DEMO"] = "1"  # the reply footer's verdict command names this folder
    paths.reload()
    from . import feeds

    up = Upstream({**DEMO_MODELS, feeds.UNREGISTERED: DEMO_SCOUT}).start()
    register(up, aliases={name: name for name in DEMO_MODELS})
    set_collection("demo", **DEMO_COLLECTION)
    set_collection("agents", **AGENTS_COLLECTION)
    feeds.seed(up.base_url)
    return up


def stop_demo(up):
    """Stop the demo upstream and throw its data folder away."""
    up.stop()
    shutil.rmtree(paths.data(), ignore_errors=True)


def snippets(base):
    """What the demo prints: a ready curl command and an OpenAI SDK call."""
    return f"""
Data folder (thrown away when this stops): {settings.env("BENCHWARMERS_HOME")}
Commands in another terminal read it once it is named there too:
  export BENCHWARMERS_HOME={settings.env("BENCHWARMERS_HOME")}

Ask the panel with curl:
  curl -s {base}/chat/completions -H 'Content-Type: application/json' \\
    -d '{{"model": "bench/demo", "messages": [{{"role": "user", "content": "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"}}]}}'

Or with the OpenAI SDK:
  from openai import OpenAI
  panel = OpenAI(base_url="{base}", api_key="unused")
  print(panel.chat.completions.create(model="bench/demo", messages=[{{"role": "user", "content": "Review: x = x++"}}]).choices[0].message.content)

Judge an answer (the call ids are printed under each one):
  curl -s {base.rsplit('/v1', 1)[0]}/bench/verdict -H 'Content-Type: application/json' -d '{{"call": "<call id>", "useful": true}}'
"""
