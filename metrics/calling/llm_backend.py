"""The `llm` backend: ask a model through the llm package's registry, keys, options and plugins (LLM-1..5, GWC-1).

The reference starts one `llm -m <alias>` process per seat: about 2 s and 4 s of
CPU per panel, and parallel seats fight over llm's `logs.db`. Here `ask()` calls
llm's Python API in this process instead and falls back to the subprocess only
where that cannot work. Both paths return the built-in client's result shape
(models.md §7) plus `"backend": "llm"` and `"path": "inprocess"|"subprocess"`,
and their error texts classify alike (ERR-1, ERR-2, ERR-5).

Which path (the fallback rule):
1. env `BENCH_LLM_INPROCESS=0` → the subprocess, always.
2. llm cannot be imported by this Python → the subprocess.
3. `llm.get_model(alias)` raises `UnknownModelError` → the subprocess when an llm
   binary exists (it may carry plugins this Python lacks, e.g. a pipx install;
   if it does not know the alias either, its own "Unknown model" comes back);
   else the error `Error: client failed: Unknown model: <alias>`.
4. The model is not a synchronous `llm.Model` / `llm.KeyModel` → the subprocess.
5. Otherwise in-process.

In-process (`path: "inprocess"`):
- llm's own registry (`LLMDIR/extra-openai-models.yaml`, aliases, plugins) and
  default options (`LLMDIR/model_options.json`, what `llm models options set` writes).
  Models and their clients are kept until those registry files change (or a minute
  passes, for plugins that keep their lists elsewhere): llm rebuilds every model on
  each lookup, which costs about 50 ms with 200 registrations.
- The key: for a model that names one, `core.keys` resolves it, so a
  `BENCHWARMERS_KEY_*` variable overrides `LLMDIR/keys.json` (KEY-4) and is passed
  as `key=`; with neither, llm's own lookup runs (its env var, then NeedsKey).
- Nothing is logged to `logs.db`: no shared sqlite lock between seats. The cost
  page (COST-1) therefore does not see these calls.
- Streaming only for a listener: with `on_delta` (as `client.chat` takes it) the
  answer streams and each text/reasoning piece is handed over as it arrives; without
  one the model is asked with `stream=False`. The openai SDK builds a pydantic object
  per stream chunk: a call with a 150-chunk answer costs 30-45 ms of CPU streamed and
  4-5 ms as one JSON reply, and a non-streamed panel has nobody to show pieces to.
  llm's plain-reply reader needs fields some servers leave out (`usage`, `choices`);
  when it fails on a 200 reply the same prompt is asked once more streamed (counted
  in `attempts`), and that model streams until the registry cache lapses. A plain
  reply cut part way reads like the built-in client's (`the reply broke off part
  way`) and is not retried (RET-1).
- Deadline: the response is iterated in a worker thread and the caller waits on
  an event until `timeout`; past it the call ends `timed_out` and the worker is
  abandoned. The worker only ever writes to its own call object and stops at the
  next chunk, and for llm's OpenAI-compatible models (and plugins built on them,
  anything with a `get_client` whose client has `with_options`) the client gets
  the time left as its socket timeout and `max_retries=0`, so a stuck read ends
  soon after the deadline and no request is sent after it.
- Retries for those models are ours, as the built-in client does them (RET-1/2):
  408, 409, 429, ≥ 500 and connection errors, twice more, Retry-After (0-60 s)
  else backoff, never past the deadline, never after part of an answer. Other
  plugins keep their own SDK's retry policy (`attempts` then counts 1).
- Error texts as the built-in client writes them: `Error: Error code: <status> -
  <body repr> Retry-After: <raw>` (RET-3), `Error: client failed: Connection
  error. (<reason>)` (RET-4), a stream without choices or cut before its finish
  reason is an error (STR-8), a missing key reads as the client's (ERR table).
  The openai SDK raises on a stream chunk, or a plain reply, that is not JSON
  (it never skips one): that error reads as the client's too (issue 12).
- No-bytes windows (`first_byte_timeout`, `idle_timeout`) are the built-in
  client's: a seat asked here without a listener is not streamed, and a plain
  reply's first byte is its last, so only the overall deadline bounds it.
- `status` is the HTTP status an error carried, else 0 (llm does not expose it);
  `model`, `usage`, `finish` come from llm's OpenAI response JSON when there is one.

Subprocess (`path: "subprocess"`), the fallback only:
- One `llm -m` costs about 1.2 s of CPU around its one request, nearly all of it
  start-up: interpreter and site 40 ms, `import llm` 300-350 ms (the openai SDK's
  types), `import llm.cli` 450 ms more (click, sqlite_utils), then the registry
  yaml, the SDK client, the logs.db migration and log write; a pyenv shim on PATH
  adds up to 150 ms. Five seats on two cores take 3-4 s, so this path cannot come
  near a 150 ms panel overhead; only not starting a process per seat can (the
  in-process path, or a long-lived llm worker).
- `on_delta` hears the whole answer once, when the run ends (as `client.chat` does
  for a JSON reply).
- `cli()` runs `llm -m <alias>` [+ `-s <system>`] once: prompt on stdin,
  `PYTHONIOENCODING=utf-8`, `PYTHONUTF8=1`, killed at the timeout (LLM-1, LLM-3),
  the binary per LLM-5. `seat_result()` reads the run as a gateway seat (`ask_cli`,
  LLM-3), `suite_text()` as the suite's text (`run_cli`, LLM-1, LLM-2); both apply
  the log-only rule (LLM-4).
- `logs.db` stays on (COST-1 reads it). llm opens and migrates it on every run,
  even with `--no-log`, so on a fresh LLMDIR parallel seats used to race on its
  creation; before the first child starts, this process creates and migrates it
  once under `fileio.lock(LLMDIR/logs.db)` (once per folder, even when llm is not
  importable here). Later log-write contention is what the log-only rule is for.
- Keys: llm reads `keys.json` first, then the model's own env var (for
  OpenAI-compatible registrations `OPENAI_API_KEY`). A key that exists only as
  `BENCHWARMERS_KEY_*` is handed to the child in that variable (never on argv);
  when `keys.json` holds the name too, llm uses the stored one. With no such
  variable set, llm is not imported here at all to find the model's key.
- llm retries inside the child; `attempts` counts 1 there.
"""

import copy
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

from ..core import fileio, keys, paths, settings
from ..models import registry
from . import client

TIMEOUT = 420
CLI_TIMEOUT = 120
RETRIES = 2
RETRYABLE = {408, 409, 429}
MIN_SOCKET_TIMEOUT = 0.01
LOG_LOCKED = "sqlite3.OperationalError: database is locked"
EXIT_DETAIL = 300
INPROCESS_ENV = "BENCH_LLM_INPROCESS"

REGISTRY_FILES = (registry.NAME, "aliases.json")  # llm's own, in its user folder: a change reloads its models

MODELS_TTL = 60

_plugins_lock = threading.Lock()
_plugins_loaded = False
_cache = {"key": None, "models": {}, "clients": {}, "streamed": set()}
_prepared = set()
_prepare_lock = threading.Lock()


class _Fallback(Exception):
    """This alias goes to the subprocess (rule 2-4); carries the model when llm resolved one."""

    def __init__(self, model=None):
        super().__init__()
        self.model = model


def binary():
    """The llm executable (LLM-5): on PATH, else `~/.local/bin/llm.exe`; None when absent."""
    found = shutil.which("llm")
    if found:
        return found
    fallback = Path.home() / ".local" / "bin" / "llm.exe"
    return str(fallback) if fallback.is_file() else None


def _result(path, seconds, **fields):
    result = {
        "text": "", "reasoning": "", "error": "", "timed_out": False, "status": 0, "model": "",
        "usage": {}, "finish": "", "tool_calls": 0, "first_token_s": None, "attempts": 0,
    }
    result.update(fields)
    result["seconds"] = round(seconds, 1)
    result["backend"] = "llm"
    result["path"] = path
    return result


def _no_answer(timeout):
    return f"no answer in {timeout:g}s"


# ---------------------------------------------------------------- in-process


def _llm():
    """llm, with its plugins loaded once: llm's own loader is not safe for threads arriving together."""
    global _plugins_loaded
    import llm

    if not _plugins_loaded:
        with _plugins_lock:
            if not _plugins_loaded:
                llm.load_plugins()
                _plugins_loaded = True
    return llm


def _generation(llm):
    """llm's models by alias and the clients built for them, kept until llm's registry files change.

    Looking a model up the llm way parses the registry yaml and builds every model on each call
    (about 50 ms for 200 registrations), and each OpenAI client costs about 25 ms to build. Plugins
    may keep their model lists elsewhere, so the cache also lapses every MODELS_TTL seconds.
    """
    global _cache
    folder = paths.llm_dir()  # llm.user_dir() is the same folder, with a mkdir on every call
    key = (str(folder), *(fileio.stamp(folder / name) for name in REGISTRY_FILES), int(time.monotonic() // MODELS_TTL))
    cache = _cache
    if cache["key"] != key:
        cache = _cache = {"key": key, "models": llm.get_model_aliases(), "clients": {}, "streamed": set()}
    return cache


def resolve(alias):
    """llm's model for `alias`, a private copy (a call changes its `get_client`).

    Raises `_Fallback` when the subprocess should answer, `LookupError` for an alias nobody knows.
    """
    try:
        llm = _llm()
    except ImportError:
        raise _Fallback()
    known = _generation(llm)["models"].get(alias)
    try:
        model = copy.copy(known) if known is not None else llm.get_model(alias)
    except llm.UnknownModelError as exc:
        if binary():
            raise _Fallback()
        raise LookupError(str(exc.args[0] if exc.args else exc))
    if not isinstance(model, (llm.Model, llm.KeyModel)):
        raise _Fallback(model)
    return model


def _default_options(model):
    """`llm models options set` defaults for this model (LLMDIR/model_options.json), as the CLI adds them."""
    stored = fileio.read_json(paths.llm_dir() / "model_options.json", comments=False).get(model.model_id)
    return dict(stored) if isinstance(stored, dict) else {}


class _Call:
    """One in-process call. It runs in a worker thread; the caller reads it only after `done` is set.

    An abandoned call (past its deadline) writes nothing but its own fields, tells its listener
    nothing more, and stops at the next chunk.
    """

    def __init__(self, model, prompt, system, secret, deadline, on_delta=None):
        self.model = model
        self.prompt = prompt
        self.system = system or None
        self.secret = secret
        self.deadline = deadline
        self.on_delta = on_delta
        self.generation = _cache  # the one `resolve` just used
        self.streamed = bool(model.can_stream) and (
            on_delta is not None or model.model_id in self.generation["streamed"])
        self.started = time.monotonic()
        self.done = threading.Event()
        self.abandoned = threading.Event()
        self.listening = threading.Lock()  # the listener is never called once the caller has given up
        self.owned = False  # our client settings took: retries are ours
        self.attempts = 0
        self.text = []
        self.reasoning = []
        self.tool_calls = 0
        self.first_token_s = None
        self.response = None
        self.error = None
        self._bound_client()

    def _bound_client(self):
        original = getattr(self.model, "get_client", None)
        if not callable(original):
            return

        clients = self.generation["clients"]

        def get_client(*args, **kwargs):
            # One client per model and key (they are safe across threads); each call gets a copy with its own limits.
            key = (type(self.model), self.model.model_id, repr(args), repr(sorted(kwargs.items())))
            client = clients.get(key)
            if client is None:
                client = clients[key] = original(*args, **kwargs)
            if not hasattr(client, "with_options"):
                return client
            self.owned = True
            left = max(self.deadline - time.monotonic(), MIN_SOCKET_TIMEOUT)
            return client.with_options(timeout=left, max_retries=0)

        self.model.get_client = get_client

    def run(self):
        try:
            for retry in range(RETRIES + 1):
                if self.abandoned.is_set():
                    return
                self.attempts += 1
                self.error = None
                try:
                    self._once()
                    return
                except Exception as exc:
                    self.error = exc
                wait = self._retry_wait(self.error, retry)
                if wait is None or time.monotonic() + wait >= self.deadline or self.abandoned.wait(wait):
                    return
        finally:
            self.done.set()

    def abandon(self):
        with self.listening:
            self.abandoned.set()

    def _once(self):
        try:
            self._read()
        except (AttributeError, IndexError, KeyError, TypeError):
            # llm's plain-reply reader failed on the reply's shape (a server without `usage`, a 200
            # carrying an error); its stream reader copes, so ask once more streamed (module docstring).
            if self.streamed or self.text or self.reasoning or self.tool_calls or not self.model.can_stream:
                raise
            if self.abandoned.is_set():
                return
            self.generation["streamed"].add(self.model.model_id)
            self.streamed = True
            self.attempts += 1
            self._read()

    def _read(self):
        response = self.model.prompt(
            self.prompt,
            system=self.system,
            stream=self.streamed,
            options=_default_options(self.model),
            key=self.secret,
        )
        for event in response.stream_events():
            if self.abandoned.is_set():
                return
            if event.type in ("text", "reasoning") and event.chunk:
                self._piece(event.type, event.chunk)
            elif event.type == "tool_call_name":
                self._first_piece()
                self.tool_calls += 1
        self.response = response

    def _piece(self, kind, chunk):
        self._first_piece()
        (self.text if kind == "text" else self.reasoning).append(chunk)
        if self.on_delta is None:
            return
        with self.listening:
            if self.abandoned.is_set():
                return
            try:
                self.on_delta(kind, chunk)
            except Exception:
                self.on_delta = None  # a raising listener is dropped; the call goes on (STR-11)

    def _first_piece(self):
        if self.first_token_s is None:
            self.first_token_s = round(time.monotonic() - self.started, 2)

    def _retry_wait(self, exc, retry):
        """Seconds to wait before trying again, or None when this error is final (RET-1, RET-2)."""
        if retry >= RETRIES or not self.owned or self.text or self.reasoning or self.tool_calls:
            return None
        status = getattr(exc, "status_code", None)
        if isinstance(status, int):
            if status not in RETRYABLE and status < 500:
                return None
            headers = getattr(getattr(exc, "response", None), "headers", None)
            stated = client.retry_after(headers) if headers is not None else None
            if stated is not None:
                return stated
        elif _kind(exc) != "connection":
            return None
        return client.backoff(retry)


def _kind(exc):
    """`timeout`, `connection`, `broke off` or None, by the exception's class names (openai, anthropic, httpx)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"APITimeoutError", "TimeoutException", "TimeoutError"}:
        return "timeout"
    if "APIConnectionError" in names:
        return "broke off" if _cut_body(exc) else "connection"
    if "TransportError" in names:
        return "broke off"
    return None


def _cut_body(exc):
    """The httpx error behind an SDK connection error when it came while a plain reply's body was read.

    httpx reads a plain reply whole inside `send`, so the SDK calls a cut body a connection error;
    httpcore says "Server disconnected without sending a response" when no reply had begun.
    """
    cause = exc.__cause__
    if type(cause).__name__ == "RemoteProtocolError" and "without sending a response" not in str(cause):
        return cause
    return None


def _body_text(response):
    """An error body as the built-in client shows it (RET-3): parsed JSON as its repr, else the stripped text."""
    try:
        text = response.text.strip()
    except Exception:  # a body that broke off while read counts as empty
        return ""
    try:
        return repr(json.loads(text))
    except ValueError:
        return text


def error_text(exc, model=None):
    """The built-in client's wording for what went wrong (ERR table, RET-3, RET-4, STR-7), as written down."""
    return keys.clean(_error_text(exc, model))


def _error_text(exc, model):
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if isinstance(status, int) and response is not None:
        text = f"Error: Error code: {status}"
        body = _body_text(response)
        if body:
            text += f" - {body}"
        retry_after = getattr(response, "headers", {}).get("retry-after")
        if retry_after:
            text += f" Retry-After: {retry_after}"
        return text
    kind = _kind(exc)
    if kind == "connection":
        reason = exc.__cause__ or exc.__context__ or type(exc).__name__
        return f"Error: client failed: Connection error. ({reason})"
    if kind == "broke off":
        cut = _cut_body(exc) or exc
        return f"Error: client failed: the reply broke off part way ({type(cut).__name__}: {cut})"
    if type(exc).__name__ == "NeedsKeyException" and getattr(model, "needs_key", None):
        name = model.needs_key
        return f"Error: client failed: no key named '{name}' is set (llm keys set {name})"
    body = getattr(exc, "body", None)
    if isinstance(body, dict):  # an error event inside a 200 stream
        return f"Error: Error code: {body.get('code') or 'stream'} - {({'error': body})!r}"
    return f"Error: client failed: {type(exc).__name__}: {exc}"


def _openai_chat(model):
    try:
        from llm.default_plugins.openai_models import Chat
    except ImportError:
        return False
    return isinstance(model, Chat)


def _not_json(call):
    """What the SDK could not read as JSON, in the built-in client's words (issue 12, STR-9): a stream's chunk,
    whose words would be missing from the answer, or the whole reply."""
    shown = call.error.doc
    if call.streamed:
        return client.unreadable(client.Unreadable(shown.encode()), len("".join(call.text)))
    return "Error: client failed: the reply was not JSON: " + shown[:client.EXCERPT]


def _finished(call, timeout):
    """The result of a call whose worker ended."""
    fields = {"attempts": call.attempts, "first_token_s": call.first_token_s, "tool_calls": call.tool_calls}
    if call.error is not None:
        if _kind(call.error) == "timeout":
            return dict(fields, error=_no_answer(timeout), timed_out=True)
        if isinstance(call.error, json.JSONDecodeError):
            return dict(fields, error=_not_json(call))
        status = getattr(call.error, "status_code", None)
        return dict(fields, error=error_text(call.error, call.model), status=status if isinstance(status, int) else 0)
    if call.response is None:  # abandoned between chunks; the caller already gave up
        return dict(fields, error=_no_answer(timeout), timed_out=True)
    text = "".join(call.text)
    reply = call.response.response_json if isinstance(call.response.response_json, dict) else {}
    if call.streamed and _openai_chat(call.model) and "finish_reason" not in reply:
        # llm returns whatever arrived; the built-in client never passes a cut stream off as an answer (STR-8)
        if "model" not in reply and "id" not in reply:
            return dict(fields, error="Error: client failed: the reply had no choices: the stream sent none")
        error = f"Error: client failed: the stream broke off before it finished ({len(text)} characters in)"
        return dict(fields, error=error)
    usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
    if not usage and call.response.input_tokens is not None:
        usage = {"prompt_tokens": call.response.input_tokens, "completion_tokens": call.response.output_tokens}
    choices = reply.get("choices")  # a plain reply keeps its finish reason in its first choice
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    return dict(
        fields,
        text=text,
        reasoning="".join(call.reasoning),
        model=reply.get("model") or "",
        usage=usage,
        finish=reply.get("finish_reason") or choice.get("finish_reason") or "",
    )


def _ask_inprocess(model, prompt, system, timeout, started, on_delta=None):
    """One call of an already resolved llm model, bounded by `timeout` seconds from `started`."""
    secret = keys.key(model.needs_key) if getattr(model, "needs_key", None) else ""
    call = _Call(model, prompt, system, secret or None, started + timeout, on_delta)
    threading.Thread(target=call.run, name=f"llm-{model.model_id}", daemon=True).start()
    if not call.done.wait(max(call.deadline - time.monotonic(), 0)):
        call.abandon()
        fields = {"error": _no_answer(timeout), "timed_out": True, "attempts": call.attempts}
    else:
        fields = _finished(call, timeout)
    return _result("inprocess", time.monotonic() - started, **fields)


def inprocess_wanted():
    return settings.env(INPROCESS_ENV).strip() != "0"


def ask(alias, prompt, system="", timeout=TIMEOUT, on_delta=None):
    """Ask `alias` through llm: in-process when it can be (module docstring), else `llm -m` in a subprocess.

    `on_delta(kind, piece)` hears text and reasoning as they arrive, as with `client.chat`; without
    it the answer is not streamed. Never raises for a model failure: the result's `error` says what
    went wrong.
    """
    started = time.monotonic()
    if not inprocess_wanted():
        return _told(ask_cli(alias, prompt, system, timeout), on_delta)
    try:
        model = resolve(alias)
    except _Fallback as fallback:
        return _told(seat_result(cli(alias, prompt, system, timeout, fallback.model, started), timeout), on_delta)
    except LookupError as exc:
        return _result("inprocess", time.monotonic() - started, error=f"Error: client failed: {exc}")
    except Exception as exc:  # a broken registry yaml or plugin: the CLI would fail the same way
        error = f"Error: client failed: llm cannot load its models ({type(exc).__name__}: {exc})"
        return _result("inprocess", time.monotonic() - started, error=error)
    return _ask_inprocess(model, prompt, system, timeout, started, on_delta)


def _told(result, on_delta):
    """A subprocess answer handed to the listener whole, once (`llm -m` output is read when it ends)."""
    if on_delta is not None and result["text"] and not result["error"]:
        try:
            on_delta("text", result["text"])
        except Exception:  # a raising listener changes nothing about the answer (STR-11)
            pass
    return result


# ---------------------------------------------------------------- subprocess


def prepare_log():
    """Create and migrate llm's `logs.db` once, under our lock, before parallel children race to do it."""
    path = paths.llm_dir() / "logs.db"
    if path in _prepared:
        return
    with _prepare_lock:
        if path in _prepared:
            return
        try:
            import sqlite_utils
            from llm.migrations import migrate
        except ImportError:  # no llm in this Python: the children migrate as they always did
            _prepared.add(path)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with fileio.lock(path):
            db = sqlite_utils.Database(path)
            try:
                migrate(db)
            finally:
                db.close()
        _prepared.add(path)


def _key_env(alias, model=None):
    """`{env var: secret}` for a key llm cannot find in keys.json but we have from BENCHWARMERS_KEY_*."""
    if not keys.env_keys():
        return {}
    if model is None:
        try:
            model = resolve(alias)
        except Exception:
            return {}
    name = getattr(model, "needs_key", None)
    variable = getattr(model, "key_env_var", None)
    if not name or not variable or name in keys.stored():
        return {}
    secret = keys.key(name)
    return {variable: secret} if secret else {}


def child_env(alias, model=None):
    env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONUTF8="1")
    env.update(_key_env(alias, model))
    return env


def log_only(returncode, stdout, stderr):
    """LLM-4: llm printed the whole answer and then only failed to write its own log."""
    if returncode == 0 or not stdout.strip():
        return False
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return bool(lines) and lines[-1] == LOG_LOCKED


class Finished(NamedTuple):
    """One `llm -m` run, before it is read as a seat result or as suite text."""

    returncode: int  # -1 when it timed out or did not start
    stdout: str
    stderr: str
    timed_out: bool = False
    failure: str = ""  # `<ExceptionType>: <message>` when it did not start
    seconds: float = 0.0


def cli(alias, prompt, system="", timeout=TIMEOUT, model=None, started=None):
    """Run `llm -m <alias>` [+ `-s <system>`] with the prompt on stdin, killed at `timeout` (LLM-1, LLM-3).

    `started` (monotonic) is when the caller's call began, so time spent before counts against `timeout`.
    """
    started = time.monotonic() if started is None else started
    try:
        llm_path = binary()
        if not llm_path:
            raise FileNotFoundError("the llm command is not installed (not on PATH, nor ~/.local/bin/llm.exe)")
        prepare_log()
        argv = [llm_path, "-m", alias] + (["-s", system] if system else [])
        env = child_env(alias, model)
        done = subprocess.run(
            argv,
            input=prompt.encode("utf-8"),
            capture_output=True,
            timeout=max(started + timeout - time.monotonic(), MIN_SOCKET_TIMEOUT),
            env=env,
        )
    except subprocess.TimeoutExpired:
        return Finished(-1, "", "", timed_out=True, seconds=time.monotonic() - started)
    except Exception as exc:  # failure to start: one seat failing must not lose the others
        return Finished(-1, "", "", failure=f"{type(exc).__name__}: {exc}", seconds=time.monotonic() - started)
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    return Finished(done.returncode, stdout, stderr, seconds=time.monotonic() - started)


def seat_result(run, timeout=TIMEOUT):
    """A run read as the gateway reads a seat (LLM-3, LLM-4), in the client's result shape."""
    fields = {"attempts": 0 if run.failure else 1}
    if run.timed_out:
        fields.update(error=_no_answer(timeout), timed_out=True)
    elif run.failure:
        fields.update(error=run.failure)
    elif run.returncode != 0 and not log_only(run.returncode, run.stdout, run.stderr):
        fields.update(error=keys.clean(run.stderr.strip()) or f"llm exited {run.returncode}")
    else:
        fields.update(text=run.stdout.strip())
    return _result("subprocess", run.seconds, **fields)


def suite_text(run, timeout=CLI_TIMEOUT):
    """A run read as the suite reads it (LLM-1, LLM-2): the text `outcome()` classifies."""
    if run.timed_out:
        return f"<<TIMED OUT after {timeout:g}s>>"
    if run.failure:
        return f"Error: client failed: llm did not start ({run.failure})"
    if run.returncode != 0 and not log_only(run.returncode, run.stdout, run.stderr):
        detail = (run.stderr.strip() or run.stdout.strip()).replace("\r\n", "\n").replace("\n", " ")
        return f"Error: llm exited {run.returncode}: {keys.clean(detail)[:EXIT_DETAIL]}"  # LLM-2: 300 characters
    return run.stdout or run.stderr


def ask_cli(alias, prompt, system="", timeout=TIMEOUT, model=None):
    """The gateway seat through `llm -m`: the same result shape as `ask()`."""
    return seat_result(cli(alias, prompt, system, timeout, model), timeout)


def run_cli(alias, prompt, timeout=CLI_TIMEOUT):
    """The suite's and probes' text through `llm -m`, ready for `outcome()`.
    The suite runner calls it for models whose backend is `llm` (`suite/run.py`)."""
    return suite_text(cli(alias, prompt, "", timeout), timeout)


def main(argv=None):
    """`python -m benchwarmers.calling.llm_backend <alias> "<prompt>"`: one call, its result as JSON."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print('usage: python -m benchwarmers.calling.llm_backend ALIAS "PROMPT"', file=sys.stderr)
        return 2
    result = ask(argv[0], argv[1], timeout=CLI_TIMEOUT)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 1 if result["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
