"""Every client's own API (formats.md): which format a path speaks, and each format's pieces.

The panel is format-blind; the gateway asks this package, whatever the client spoke:

- `format_of(path)`: the fmt id, from the path alone and before the body is read,
  so every refusal on a route (Host, key, size, 404) comes back in that route's
  shape (FMT-3, ERR-1); read off the route table (`wire.routes`);
- `get(fmt)`: that API's `Format` (`common.Format`), one object per API:
  `read(body)` → the Ask (§3.2), or `Unsupported` with why (a 400);
  `shown(name, ask)` → the model a reply names (FMT-14);
  `reply(...)` → the non-streamed body and its extra headers;
  `writer(...)` → a stream writer factory, `make(write)` → an object with the
  STR-1 interface (`content_type`, `start()`, `text(s)`, `end(bench)`,
  `error(status, message)`, `keepalive()`);
  `error_body(status, message)`;
- `error_body(fmt, status, message)`: the refusal body of a path's fmt.

One small module per API: `chat` (chat completions), `anthropic`, `responses`,
`completions`, `ollama`, `gemini`. Each holds pure functions (its reader, reply,
stream writer, error body and, for the outbound half, the native request builder
and `Reader` the built-in client uses) and its `Format` subclass, which binds the
inbound ones. Route mode (§11) adds two methods to each: `route_writer(...)` and
`route_reply(turn, ...)`, which relay one member's turn (`turn.Turn`, assembled from its chunks)
with tool calls in the client's own shape; legacy completions and Ollama's generate carry its text.
"""

from . import routes
from . import anthropic, chat, common, completions, gemini, ollama, responses

Unsupported = common.Unsupported
body_problem = common.body_problem
UpstreamError = common.UpstreamError
prompt_tokens = common.prompt_tokens
usage = common.usage
panel_notes = common.panel_notes
format_of = routes.format_of

FORMATS = {api.name: api for api in (chat.ChatCompletions(), completions.Completions(), anthropic.Messages(),
                                     responses.Responses(), ollama.Chat(), ollama.Generate(), gemini.GenerateContent())}


def get(fmt: str) -> common.Format:
    """The `Format` of the fmt id `fmt` (FMT-3); chat completions, the gateway's own shape, for any other."""
    return FORMATS.get(fmt) or FORMATS["chat"]


def error_body(fmt: str, status: int, message: str) -> common.Body:
    """§2: the refusal body of `fmt` for any status."""
    return get(fmt).error_body(status, message)
