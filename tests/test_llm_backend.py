"""The `llm` backend (LLM-1..5, GWC-1, ERR-5) against the real local upstream and the real `llm` package.

Every scenario goes through both paths, in-process (`ask`) and `llm -m` (`cli`, read as a seat and
as suite text), all at once so the slow ones overlap; the tests then compare shapes, texts and
failure classes. The classifier below is a test-local copy of ERR-1/ERR-2 (the suite owns the real one).
"""

import concurrent.futures
import contextlib
import http.server
import io
import json
import os
import socket
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

import pytest

from benchwarmers.core import paths
from benchwarmers.models import learn
from benchwarmers.calling import llm_backend
from benchwarmers.demo.demo import Upstream

STORED_SECRET = "sk-stored-4f1c9a7be2d84c55"
ENV_SECRET = "sk-envonly-93b0d6e1aa7c4f02"
ANSWER = "Cap the retry loop at three tries and add jitter between them."
SYSTEM = "Be brief."
TIMEOUT = 60
SLOW_TIMEOUT = 1.5
# `llm` children started at once: each spends a second or two of CPU importing, and a dozen together on two
# busy cores could run past TIMEOUT before any scenario is asked
BURST = 8

# scenario -> (upstream spec, which upstream, key name, timeout)
SCENARIOS = {
    "reply": ({"answer": ANSWER, "latency": 0.05}, "main", "stored", TIMEOUT),
    "empty": ({"fail": "empty"}, "main", "stored", TIMEOUT),
    "thinker": ({"answer": ANSWER, "reasoning": "Three tries is what the spec says."}, "main", "stored", TIMEOUT),
    "gone": ({"fail": "404"}, "main", "stored", TIMEOUT),
    "busy": ({"fail": "429", "retry_after": 0.1}, "main", "stored", TIMEOUT),
    "clears": ({"fail": "429", "retry_after": 0.1, "clears_after": 1, "answer": ANSWER}, "main", "stored", TIMEOUT),
    "bad-gateway": ({"fail": "502html"}, "main", "stored", TIMEOUT),
    "slow": ({"fail": "slow", "delay": 10}, "main", "stored", SLOW_TIMEOUT),
    "notice": ({"fail": "notice"}, "main", "stored", TIMEOUT),
    "refused": ({"answer": ANSWER}, "closed", "stored", TIMEOUT),
    "env-key": ({"answer": ANSWER}, "env", "envhub", TIMEOUT),
    "missing-key": ({"answer": ANSWER}, "main", "nowhere", TIMEOUT),
}
PATHS = ("inprocess", "subprocess")

# What the suite must make of each scenario's text (ERR-3, ERR-5); None = answered.
EXPECTED_CLASS = {
    "reply": None, "empty": "empty", "thinker": None, "gone": "structural", "busy": "capacity",
    "clears": None, "bad-gateway": "capacity", "slow": "timeout", "notice": "entitlement",
    "refused": "other", "env-key": None, "missing-key": "other",
}

ERRORS = ["service temporarily overloaded", "rate limit", "internal server error", "bad gateway",
          "connection reset", "502", "503", "error: error code:", "model not found",
          "not available in your subscription", "no endpoints found", "request too large",
          "insufficient_quota", "quota exceeded", "context length", "too many requests",
          "error: llm exited", "error: client failed", "codec can't encode", "request limit reached"]
REFUSALS = ["blocked by gemini's filters", "i can't help with that", "i cannot help with that",
            "i'm not able to help", "against my guidelines", "unable to assist"]
NOTICES = ["run out of credits", "out of credits", "insufficient credits", "credit balance",
           "upgrade your plan", "upgrade to continue", "upgrade your account", "exceeded your current quota",
           "quota has been exhausted", "daily limit reached", "you have reached your", "free tier limit",
           "please add credits", "top up your"]
CLASSES = [
    ("signin", ["error code: 401", "sign in again", "sharing_usage_unavailable"]),
    ("structural", ["model not found", "no endpoints found", "does not exist", "unknown model", "invalid model",
                    "model_not_found"]),
    ("paywalled", ["unavailable for free", "use this slug instead", "the paid version is available",
                   "free launch period", "variant has been retired"]),
    ("entitlement", ["not available in your subscription", "not authorized", "unauthorized", "permission denied",
                     "no access to model", "insufficient balance", "insufficient credit", "payment required",
                     "only available on agentic harnesses", "only available on"]),
]
CAPACITY = ["rate limit", "quota exceeded", "insufficient_quota", "usage_limit_exceeded", "too many requests",
            "request too large", "context length", "service temporarily overloaded", "internal server error",
            "provider returned error", "bad gateway", "502", "503", "request limit reached", "resourceexhausted"]


def notice(text):
    stripped = text.strip()
    if len(stripped) <= 400:
        return next((phrase for phrase in NOTICES if phrase in stripped.lower()), None)
    return None


def outcome(output, min_length=40):
    head = output.strip()[:400].lower()
    if "<<timed out" in head:
        return "timeout"
    if any(marker in head for marker in ERRORS) or notice(output):
        return "error"
    if any(marker in head for marker in REFUSALS):
        return "refused"
    return "error" if len(output.strip()) < min_length else None


def failure_class(output, min_length=40):
    head = output.strip()[:400].lower()
    if "<<timed out" in head:
        return "timeout"
    for name, markers in CLASSES:
        if any(marker in head for marker in markers):
            return name
    if notice(output):
        return "entitlement"
    if any(marker in head for marker in CAPACITY):
        return "capacity"
    if not output.strip():
        return "empty"
    return None if outcome(output, min_length) is None else "other"


def as_suite_text(result, timeout):
    """CL-9's reading of a result: what the suite classifies for the in-process path."""
    if result["timed_out"]:
        return f"<<TIMED OUT after {timeout:g}s>>"
    return result["error"] or (result["text"] + "\n" if result["text"] else "")


def seat_status(result):
    """GWC-1 / SEAT-5 without the notice check (the gateway's job)."""
    if result["error"] or result["timed_out"]:
        return "error"
    return "ok" if result["text"].strip() else "empty"


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def register(llmdir, rows):
    """`LLMDIR/extra-openai-models.yaml` as the sync script writes it (REG-1): rows of (alias, base, key name)."""
    blocks = [f'\n- model_id: {alias}\n  model_name: {alias}\n  api_base: "{base}"\n  api_key_name: {key}\n'
              for alias, base, key in rows]
    (llmdir / "extra-openai-models.yaml").write_text("".join(blocks), encoding="utf-8")


def served(scenario, path):
    return f"{scenario}-{path}"


@contextlib.contextmanager
def stderr_captured():
    """Everything written to stderr, by Python or at the file-descriptor level, while the block runs."""
    with tempfile.TemporaryFile() as raw, io.StringIO() as text:
        saved = os.dup(2)
        os.dup2(raw.fileno(), 2)
        try:
            with contextlib.redirect_stderr(text):
                yield lambda: raw.seek(0) or raw.read().decode("utf-8", "replace") + text.getvalue()
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Run every scenario through both paths once, in parallel, in a data folder and llm folder of its own.

    llm's logging is off here (`llm logs off`): a dozen children writing logs.db at once lock each other,
    and an empty answer followed by that lock is an error by LLM-4, which is not what these scenarios are
    about. Log contention has its own test below.
    """
    root = tmp_path_factory.mktemp("llm-backend")
    data, llmdir = root / "data", root / "llm"
    llmdir.mkdir()
    main_specs = {served(name, path): spec for name, (spec, where, _, _) in SCENARIOS.items()
                  if where == "main" for path in PATHS}
    env_specs = {served(name, path): spec for name, (spec, where, _, _) in SCENARIOS.items()
                 if where == "env" for path in PATHS}
    with Upstream(main_specs, key=STORED_SECRET) as main, Upstream(env_specs, key=ENV_SECRET) as env_up, \
            pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHWARMERS_HOME", str(data))
        mp.setenv("LLM_USER_PATH", str(llmdir))
        mp.setenv("BENCHWARMERS_KEY_ENVHUB", ENV_SECRET)
        mp.delenv("OPENAI_API_KEY", raising=False)
        mp.delenv("BENCH_LLM_INPROCESS", raising=False)
        paths.reload()
        bases = {"main": main.base_url, "env": env_up.base_url, "closed": f"http://127.0.0.1:{closed_port()}/v1"}
        register(llmdir, [(served(name, path), bases[where], key)
                          for name, (_, where, key, _) in SCENARIOS.items() for path in PATHS])
        (llmdir / "keys.json").write_text(json.dumps({"stored": STORED_SECRET}), encoding="utf-8")
        (llmdir / "logs-off").touch()

        def inprocess(name):
            return llm_backend.ask(served(name, "inprocess"), "Review my retry loop.", SYSTEM, SCENARIOS[name][3])

        def subprocess_run(name):
            return llm_backend.cli(served(name, "subprocess"), "Review my retry loop.", SYSTEM, SCENARIOS[name][3])

        with stderr_captured() as read_stderr, concurrent.futures.ThreadPoolExecutor(BURST) as pool:
            asked = {name: pool.submit(inprocess, name) for name in SCENARIOS}
            ran = {name: pool.submit(subprocess_run, name) for name in SCENARIOS}
            results = {}
            for name in SCENARIOS:
                timeout = SCENARIOS[name][3]
                run = ran[name].result()
                results[name] = {
                    "inprocess": asked[name].result(),
                    "subprocess": llm_backend.seat_result(run, timeout),
                    "run": run,
                    "suite": {"inprocess": as_suite_text(asked[name].result(), timeout),
                              "subprocess": llm_backend.suite_text(run, timeout)},
                }
            for name, got in results.items():  # as the gateway does with every seat error (SEAT-4)
                for path in PATHS:
                    if got[path]["error"]:
                        learn.record(served(name, path), got[path]["error"], "gateway")
            stderr = read_stderr()
        requests = {name: {path: [r for r in main.requests + env_up.requests if r["model"] == served(name, path)]
                           for path in PATHS} for name in SCENARIOS}
    paths.reload()
    return {"results": results, "requests": requests, "stderr": stderr, "data": data, "llmdir": llmdir}


@pytest.mark.parametrize("name", SCENARIOS)
def test_err5_both_paths_same_shape_and_class(world, name):
    got = world["results"][name]
    inprocess, sub = got["inprocess"], got["subprocess"]
    assert set(inprocess) == set(sub)
    assert (inprocess["backend"], inprocess["path"], sub["path"]) == ("llm", "inprocess", "subprocess")
    assert isinstance(inprocess["seconds"], float) and isinstance(sub["attempts"], int)
    assert inprocess["timed_out"] == sub["timed_out"]
    assert seat_status(inprocess) == seat_status(sub)
    assert inprocess["text"] == sub["text"]
    for min_length in (40, 1):
        texts = got["suite"]
        assert outcome(texts["inprocess"], min_length) == outcome(texts["subprocess"], min_length)
        assert failure_class(texts["inprocess"], min_length) == failure_class(texts["subprocess"], min_length)
    assert failure_class(got["suite"]["inprocess"]) == EXPECTED_CLASS[name]


def test_llm3_reply_and_system_prompt_reach_the_model(world):
    got = world["results"]["reply"]
    assert got["inprocess"]["text"] == ANSWER
    assert got["suite"]["subprocess"] == got["suite"]["inprocess"] == ANSWER + "\n"
    assert got["inprocess"]["model"] == served("reply", "inprocess")
    assert got["inprocess"]["finish"] == "stop" and got["inprocess"]["usage"]["completion_tokens"] > 0
    assert got["inprocess"]["first_token_s"] is not None
    for path in PATHS:
        (request,) = world["requests"]["reply"][path]
        assert request["body"]["messages"][0] == {"role": "system", "content": SYSTEM}
        assert request["headers"]["authorization"] == f"Bearer {STORED_SECRET}"
    streamed = {path: bool(world["requests"]["reply"][path][0]["body"].get("stream")) for path in PATHS}
    assert streamed == {"inprocess": False, "subprocess": True}  # nobody listened in-process


def test_reasoning_then_answer_gives_the_answer(world):
    got = world["results"]["thinker"]
    assert got["inprocess"]["text"] == got["subprocess"]["text"] == ANSWER


def test_empty_reply_is_no_error(world):
    for path in PATHS:
        result = world["results"]["empty"][path]
        assert (result["text"], result["error"], result["timed_out"]) == ("", "", False)


def test_ret3_http_errors_read_like_the_builtin_client(world):
    results = world["results"]
    assert results["gone"]["inprocess"]["error"].startswith("Error: Error code: 404 - {'error': {'message': 'Model")
    assert results["gone"]["inprocess"]["status"] == 404
    busy = results["busy"]["inprocess"]
    assert busy["error"].startswith("Error: Error code: 429 - {'error'") and busy["error"].endswith("Retry-After: 0.1")
    assert results["bad-gateway"]["inprocess"]["error"].startswith("Error: Error code: 502 - <html>")
    assert results["busy"]["subprocess"]["error"].startswith("Error: Error code: 429")


def test_ret1_429_forever_is_three_requests_on_each_path(world):
    requests = world["requests"]["busy"]
    assert world["results"]["busy"]["inprocess"]["attempts"] == 3
    assert (len(requests["inprocess"]), len(requests["subprocess"])) == (3, 3)


def test_ret1_429_that_clears_answers(world):
    got = world["results"]["clears"]
    assert got["inprocess"]["text"] == got["subprocess"]["text"] == ANSWER
    assert got["inprocess"]["attempts"] == 2
    assert [len(world["requests"]["clears"][path]) for path in PATHS] == [2, 2]


def test_too_slow_ends_timed_out_within_the_deadline(world):
    for path in PATHS:
        result = world["results"]["slow"][path]
        assert result["timed_out"] and result["error"] == f"no answer in {SLOW_TIMEOUT:g}s"
        assert result["seconds"] < SLOW_TIMEOUT + 1.5
    assert world["results"]["slow"]["suite"]["subprocess"] == f"<<TIMED OUT after {SLOW_TIMEOUT:g}s>>"


def test_credit_notice_comes_back_as_the_answer(world):
    got = world["results"]["notice"]
    assert got["inprocess"]["text"] == got["subprocess"]["text"]
    assert notice(got["inprocess"]["text"]) == "insufficient credits"


def test_ret4_refused_connection(world):
    error = world["results"]["refused"]["inprocess"]["error"]
    assert error.startswith("Error: client failed: Connection error. (")
    assert world["results"]["refused"]["suite"]["subprocess"].startswith("Error: llm exited 1: ")


def test_key4_env_key_reaches_both_paths(world):
    got = world["results"]["env-key"]
    assert got["inprocess"]["text"] == got["subprocess"]["text"] == ANSWER
    for path in PATHS:
        (request,) = world["requests"]["env-key"][path]
        assert request["headers"]["authorization"] == f"Bearer {ENV_SECRET}"


def test_missing_key_sends_nothing(world):
    error = world["results"]["missing-key"]["inprocess"]["error"]
    assert error == "Error: client failed: no key named 'nowhere' is set (llm keys set nowhere)"
    assert world["requests"]["missing-key"] == {"inprocess": [], "subprocess": []}


def test_key7_no_secret_in_any_file_or_stderr(world):
    secrets = (STORED_SECRET, ENV_SECRET)
    keys_file = world["llmdir"] / "keys.json"
    checked = 0
    for folder in (world["data"], world["llmdir"]):
        for path in folder.rglob("*"):
            if path.is_file() and path != keys_file:
                blob = path.read_bytes()
                checked += 1
                assert not any(s.encode() in blob for s in secrets), path
    assert checked >= 3  # yaml, logs.db, cooldowns
    texts = [world["stderr"]]
    for got in world["results"].values():
        texts += [got["run"].stderr, got["run"].stdout, got["inprocess"]["error"], got["subprocess"]["error"]]
    assert not any(s in text for s in secrets for text in texts)


# ---------------------------------------------------------------- one scenario at a time


@pytest.fixture
def up(llmdir, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with Upstream({"ok": {"answer": ANSWER, "latency": 0.05}, "slow": {"fail": "slow", "delay": 3},
                   "late": {"fail": "429", "retry_after": 5}, "cut": {"fail": "drop", "answer": ANSWER},
                   "error200": {"fail": "error200"},
                   "dribble": {"answer": " ".join(["word"] * 40), "latency": 2}}) as server:
        register(llmdir, [(name, server.base_url, "") for name in server.models])
        yield server


def asked(up, model):
    return [r for r in up.requests if r["model"] == model]


def test_a_listener_gets_the_answer_streamed_and_nobody_gets_it_plain(up):
    """The openai SDK's stream costs ~10x the CPU of a plain reply, so only a listener makes llm stream."""
    heard = []
    streamed = llm_backend.ask("ok", "anything", on_delta=lambda kind, piece: heard.append((kind, piece)))
    plain = llm_backend.ask("ok", "anything")
    assert streamed["text"] == plain["text"] == ANSWER
    assert len(heard) > 1 and "".join(piece for kind, piece in heard if kind == "text") == ANSWER
    assert [bool(r["body"].get("stream")) for r in asked(up, "ok")] == [True, False]
    for result in (streamed, plain):
        assert (result["finish"], result["model"], result["attempts"]) == ("stop", "ok", 1)
        assert result["usage"]["completion_tokens"] > 0 and result["first_token_s"] is not None


def test_str11_a_raising_listener_is_dropped_and_the_call_goes_on(up):
    calls = []

    def listener(kind, piece):
        calls.append(piece)
        raise RuntimeError("the client went away")

    result = llm_backend.ask("ok", "anything", on_delta=listener)
    assert (result["text"], result["error"], len(calls)) == (ANSWER, "", 1)


def test_the_listener_hears_nothing_after_the_deadline(up):
    heard = []
    result = llm_backend.ask("dribble", "anything", timeout=0.3, on_delta=lambda kind, piece: heard.append(piece))
    at_return = len(heard)
    assert result["timed_out"] and 0 < at_return < 40
    for worker in [t for t in threading.enumerate() if t.name == "llm-dribble"]:
        worker.join(10)
    assert len(heard) == at_return


def test_ret1_a_plain_reply_cut_part_way_is_not_retried(up):
    result = llm_backend.ask("cut", "anything")
    assert result["error"].startswith("Error: client failed: the reply broke off part way (RemoteProtocolError: ")
    assert (result["text"], result["attempts"], len(asked(up, "cut"))) == ("", 1, 1)


def test_str8_a_200_carrying_an_error_is_read_by_the_stream_reader(up):
    """llm's plain-reply reader fails on a reply without `usage`; the prompt goes again streamed, once."""
    result = llm_backend.ask("error200", "anything")
    assert result["error"] == "Error: client failed: the reply had no choices: the stream sent none"
    assert result["attempts"] == 2
    assert [bool(r["body"].get("stream")) for r in asked(up, "error200")] == [False, True]


class NoUsage(http.server.BaseHTTPRequestHandler):
    """A server that answers without `usage`, as some OpenAI imitations do: plain JSON or a stream."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.streams.append(bool(body.get("stream")))
        choice = {"index": 0, "finish_reason": "stop"}
        if body.get("stream"):
            chunk = {"id": "x", "model": body["model"], "choices": [dict(choice, delta={"content": ANSWER})]}
            reply, kind = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode(), "text/event-stream"
        else:
            plain = {"id": "x", "model": body["model"], "choices": [dict(choice, message={"content": ANSWER})]}
            reply, kind = json.dumps(plain).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def test_a_server_without_usage_still_answers_and_then_streams(llmdir):
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoUsage) as server:
        server.streams = []
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        register(llmdir, [("bare", f"http://127.0.0.1:{server.server_address[1]}/v1", "")])
        first, second = (llm_backend.ask("bare", "anything") for _ in range(2))
        server.shutdown()
    assert (first["text"], first["error"], first["attempts"]) == (ANSWER, "", 2)
    assert (second["text"], second["error"], second["attempts"]) == (ANSWER, "", 1)
    assert server.streams == [False, True, True]  # asked streamed from then on


def test_llm4_parallel_subprocess_seats_on_a_fresh_llm_folder(up, llmdir, monkeypatch):
    """Five `llm -m` seats at once on a folder without logs.db: none fails on its creation."""
    monkeypatch.setenv("BENCH_LLM_INPROCESS", "0")
    assert not (llmdir / "logs.db").exists()
    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        results = list(pool.map(lambda i: llm_backend.ask("ok", f"question {i}"), range(5)))
    assert [(r["path"], r["error"], r["text"]) for r in results] == [("subprocess", "", ANSWER)] * 5
    with sqlite3.connect(llmdir / "logs.db") as db:
        assert db.execute("select count(*) from _llm_migrations").fetchone()[0] > 0
        assert 1 <= db.execute("select count(*) from turns").fetchone()[0] <= 5  # a locked log write is allowed


def test_deadline_abandons_the_worker_and_nothing_follows(up, llmdir):
    started = time.monotonic()
    result = llm_backend.ask("slow", "anything", timeout=0.5)
    assert result["timed_out"] and result["error"] == "no answer in 0.5s" and result["path"] == "inprocess"
    assert time.monotonic() - started < 1.5
    for worker in [t for t in threading.enumerate() if t.name == "llm-slow"]:
        worker.join(10)
        assert not worker.is_alive()
    assert len([r for r in up.requests if r["model"] == "slow"]) == 1
    assert sorted(p.name for p in llmdir.iterdir()) == ["extra-openai-models.yaml"]


def test_ret2_a_stated_wait_past_the_deadline_returns_the_error_at_once(up):
    started = time.monotonic()
    result = llm_backend.ask("late", "anything", timeout=2)
    assert result["error"].startswith("Error: Error code: 429") and result["attempts"] == 1
    assert time.monotonic() - started < 1


def test_model_options_from_llm_are_sent_and_nothing_is_logged(up, llmdir):
    (llmdir / "model_options.json").write_text(json.dumps({"ok": {"temperature": 0.25}}), encoding="utf-8")
    result = llm_backend.ask("ok", "anything")
    assert (result["path"], result["text"]) == ("inprocess", ANSWER)
    assert up.requests[-1]["body"]["temperature"] == 0.25
    assert not (llmdir / "logs.db").exists()


def test_fallback_rule_unknown_alias(up, monkeypatch, tmp_path):
    """Rule 3: an alias this Python's llm does not know goes to the CLI; with no CLI it is an error."""
    via_cli = llm_backend.ask("nobody", "anything", timeout=TIMEOUT)
    assert via_cli["path"] == "subprocess" and "Unknown model: nobody" in via_cli["error"]
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    alone = llm_backend.ask("nobody", "anything")
    assert alone["path"] == "inprocess"
    assert alone["error"] == "Error: client failed: Unknown model: nobody"
    assert failure_class(alone["error"]) == "structural"


def test_llm3_llm5_failure_to_start(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert llm_backend.binary() is None
    result = llm_backend.ask_cli("ok", "anything")
    assert result["error"].startswith("FileNotFoundError: ") and result["attempts"] == 0
    assert llm_backend.run_cli("ok", "anything").startswith("Error: client failed: llm did not start (")
    fake = Path(tmp_path, ".local", "bin", "llm.exe")
    fake.parent.mkdir(parents=True)
    fake.write_text("")
    assert llm_backend.binary() == str(fake)


class EchoingKey(http.server.BaseHTTPRequestHandler):
    """An upstream that repeats the key it was sent in its 401 (some proxies do)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"message": f"bad key: {self.headers.get('Authorization')}"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_key7_a_key_echoed_by_the_upstream_is_hidden(llmdir, monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_KEY_HUB", ENV_SECRET)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), EchoingKey) as server:
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        register(llmdir, [("echo", f"http://127.0.0.1:{server.server_address[1]}/v1", "hub")])
        result = llm_backend.ask("echo", "anything")
        server.shutdown()
    assert result["error"].startswith("Error: Error code: 401 - {'error': {'message': 'bad key: Bearer ***'")
    run = llm_backend.Finished(1, "", f"Error: Error code: 401 - bad key: Bearer {ENV_SECRET}\n")
    assert ENV_SECRET not in llm_backend.seat_result(run)["error"] + llm_backend.suite_text(run)


SHIM = """#!/bin/sh
# A stand-in for the llm CLI (OFF-3): records how it was run, then behaves per $SHIM_MODE.
printf '%s\\n' "$@" > "$SHIM_DIR/argv"
printf '%s %s\\n' "$PYTHONIOENCODING" "$PYTHONUTF8" > "$SHIM_DIR/env"
cat > "$SHIM_DIR/stdin"
case "$SHIM_MODE" in
  ok) cat "$SHIM_DIR/stdin"; echo ;;
  log-lock) echo "the whole answer"; printf 'Traceback (most recent call last):\\n  ...\\n%s\\n' \\
      "sqlite3.OperationalError: database is locked" >&2; exit 1 ;;
  early-lock) echo "sqlite3.OperationalError: database is locked" >&2; exit 1 ;;
  cut) printf 'half an ans'; echo "Error: peer closed connection without sending complete message body" >&2; exit 1 ;;
esac
"""


@pytest.mark.parametrize(
    "mode, text, error, suite",
    [
        ("ok", "Résumé ✓ — review", "", "Résumé ✓ — review\n"),
        ("log-lock", "the whole answer", "", "the whole answer\n"),
        ("early-lock", "", "sqlite3.OperationalError: database is locked",
         "Error: llm exited 1: sqlite3.OperationalError: database is locked"),
        ("cut", "", "Error: peer closed connection without sending complete message body",
         "Error: llm exited 1: Error: peer closed connection without sending complete message body"),
    ],
)
def test_off3_llm3_llm4_through_a_fake_llm(tmp_path, monkeypatch, mode, text, error, suite):
    shim = tmp_path / "bin" / "llm"
    shim.parent.mkdir()
    shim.write_text(SHIM)
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SHIM_DIR", str(tmp_path))
    monkeypatch.setenv("SHIM_MODE", mode)
    monkeypatch.setenv("BENCH_LLM_INPROCESS", "0")
    heard = []
    result = llm_backend.ask("some-alias", "Résumé ✓ — review", system="Be brief.", timeout=10,
                             on_delta=lambda kind, piece: heard.append((kind, piece)))
    assert (result["path"], result["text"], result["error"]) == ("subprocess", text, error)
    assert heard == ([("text", text)] if text else [])  # the whole answer, once, when the run ends
    assert (tmp_path / "argv").read_text().splitlines() == ["-m", "some-alias", "-s", "Be brief."]
    assert (tmp_path / "env").read_text() == "utf-8 1\n"
    assert (tmp_path / "stdin").read_text(encoding="utf-8") == "Résumé ✓ — review"
    assert llm_backend.run_cli("some-alias", "Résumé ✓ — review", timeout=10) == suite
    assert (tmp_path / "argv").read_text().splitlines() == ["-m", "some-alias"]


LOCKED = "Traceback (most recent call last):\n  ...\nsqlite3.OperationalError: database is locked\n\n"


@pytest.mark.parametrize(
    "run, seat, suite",
    [
        (llm_backend.Finished(0, "answer\n", ""), ("answer", ""), "answer\n"),
        (llm_backend.Finished(1, "answer\n", LOCKED), ("answer", ""), "answer\n"),
        (llm_backend.Finished(1, "  \n", LOCKED), ("", LOCKED.strip()),
         "Error: llm exited 1: " + LOCKED.strip().replace("\n", " ")[:300]),
        (llm_backend.Finished(1, "part of an ans", "Error: peer closed connection\n"),
         ("", "Error: peer closed connection"), "Error: llm exited 1: Error: peer closed connection"),
        (llm_backend.Finished(2, "", ""), ("", "llm exited 2"), "Error: llm exited 2: "),
        (llm_backend.Finished(1, "", "Error: " + "x-" * 200), ("", "Error: " + "x-" * 200),
         "Error: llm exited 1: Error: " + ("x-" * 200)[:293]),
        (llm_backend.Finished(1, "", "Error: 401 from https://u:pw@h.example/v1?key=k\n"),  # written down (IMG-8)
         ("", "Error: 401 from https://h.example/v1?..."),
         "Error: llm exited 1: Error: 401 from https://h.example/v1?..."),
    ],
)
def test_llm1_llm2_llm4_reading_a_run(run, seat, suite):
    result = llm_backend.seat_result(run)
    assert (result["text"], result["error"]) == seat
    assert llm_backend.suite_text(run) == suite
