"""Every client's own API (formats.md): which format a path speaks, and each format's pieces.

The panel is format-blind; the gateway asks this package, whatever the client spoke:

- `format_of(path)`: the fmt id, from the path alone and before the body is read,
  so every refusal on a route (Host, key, size, 404) comes back in that route's
  shape (FMT-3, ERR-1);
- `read(fmt, body)`: the Ask (§3.2), or `Unsupported` with why (a 400);
- `reply(fmt, ...)`: the non-streamed body and its extra headers;
- `writer(fmt, ...)`: a stream writer factory, `make(write)` → an object with the
  STR-1 interface (`content_type`, `start()`, `text(s)`, `end(bench)`,
  `error(status, message)`, `keepalive()`);
- `error_body(fmt, status, message)`.

One small module per format: `chat` (chat completions), `anthropic`, `responses`,
`completions`, `ollama`, `gemini`. Each holds pure functions: its
reader, reply, stream writer, error body, and (for the outbound half) the native
request builder and `Reader` the built-in client uses. Route mode (§11) slots in
as one more writer per format beside the panel's.
"""

import functools

from metrics.formats import anthropic, chat, common, completions, gemini, ollama, responses

Unsupported = common.Unsupported
body_problem = common.body_problem
UpstreamError = common.UpstreamError
prompt_tokens = common.prompt_tokens
usage = common.usage

# FMT-3: the five Ollama names first, then the POST table; Gemini paths after.
OLLAMA_ROUTES = {"/api/chat": "ollama_chat", "/api/generate": "ollama_generate", "/api/show": "ollama_chat",
                 "/api/tags": "ollama_chat", "/api/version": "ollama_chat"}
PANEL_ROUTES = {"/v1/chat/completions": "chat", "/chat/completions": "chat", "/v1/completions": "completion",
                "/completions": "completion", "/v1/messages": "anthropic", "/v1/responses": "responses",
                "/responses": "responses", "/api/chat": "ollama_chat", "/api/generate": "ollama_generate"}
POST_ROUTES = {**PANEL_ROUTES, "/v1/messages/count_tokens": "anthropic"}

READERS = {"chat": chat.ask, "completion": completions.ask, "anthropic": anthropic.ask, "responses": responses.ask,
           "ollama_chat": ollama.chat_ask, "ollama_generate": ollama.generate_ask}
REPLIES = {"completion": completions.reply, "anthropic": anthropic.reply, "responses": responses.reply,
           "ollama_chat": ollama.chat_reply, "ollama_generate": ollama.generate_reply, "gemini": gemini.reply}
STREAMS = {"completion": completions.Stream, "anthropic": anthropic.Stream, "responses": responses.Stream,
           "ollama_chat": ollama.ChatStream, "ollama_generate": ollama.GenerateStream}
ERRORS = {"chat": chat.error_body, "completion": completions.error_body, "anthropic": anthropic.error_body,
          "responses": responses.error_body, "ollama_chat": ollama.error_body,
          "ollama_generate": ollama.error_body, "gemini": gemini.error_body}


def route(path):
    """GW-1: the path without its query string or trailing `/`."""
    return path.split("?", 1)[0].rstrip("/") or "/"


def format_of(path):
    """The fmt id a path speaks (FMT-3): `chat` unless it is a known other-format route."""
    path = route(path)
    if path in OLLAMA_ROUTES:
        return OLLAMA_ROUTES[path]
    if path in POST_ROUTES:
        return POST_ROUTES[path]
    if path.startswith("/v1beta/") or gemini.model_path(path):
        return "gemini"
    return "chat"


def error_body(fmt, status, message):
    """§2: the refusal body of `fmt` for any status."""
    return ERRORS.get(fmt, chat.error_body)(status, message)


def read(fmt, body):
    """The Ask of a body posted to a panel route of `fmt` (Gemini reads the model from its path: `gemini.ask`)."""
    return READERS[fmt](body)


def shown(fmt, name, ask):
    """FMT-14: chat always shows `bench/<name>`; every other format echoes the model as asked."""
    return f"bench/{name}" if fmt == "chat" else ask["model"]


def reply(fmt, content, shown_name, bench, tokens, seconds):
    """`(body, headers)` of a non-streamed panel reply (FMT-16); `tokens` = (input, output) estimates."""
    if fmt == "chat":
        return chat.reply(content, shown_name, bench), {}
    body = REPLIES[fmt](content, shown_name, bench, tokens, seconds)
    return body, gemini.headers(bench) if fmt == "gemini" else {}


def writer(fmt, shown_name, tokens_in=0, sse=False):
    """A factory `make(write)` for `fmt`'s panel stream writer (STR-1); `sse` is Gemini's `?alt=sse`."""
    if fmt == "chat":
        return functools.partial(chat.Stream, shown=shown_name)
    if fmt == "gemini":
        return functools.partial(gemini.Stream, shown=shown_name, prompt_tokens=tokens_in, sse=sse)
    return functools.partial(STREAMS[fmt], shown=shown_name, prompt_tokens=tokens_in)
