"""Cross-cutting checks of models.md that no single module's tests own.

- ERR-5 / issue 3 item 7: the built-in client and the `llm` backend, given the same
  registrations (written by `registry`, synced to llm's folder), the same keys and the same
  upstream behaviour, return the same result shape and classify alike (benchwarmers.models.scoring).
- Reply shapes and statuses the demo upstream does not produce (a 502 whose body is cut, a `{}`
  200, a stream without its content type or without blank lines, an error mid-stream, tool calls,
  a JSON reply cut short, each retryable status): `Raw`, a bare socket server in this file.
- The ledger when it cannot be written (LED-8), its command (LED-9), notice phrase order (PN-1).
- PATH-6 and the foundation issue's rule that, when the checkout itself is the data folder,
  everything the code writes there is gitignored.
"""

import concurrent.futures
import http.client
import json
import re
import shutil
import socket
import socketserver
import subprocess
import threading
import time
from email.utils import formatdate

import pytest

from benchwarmers.core import fileio, keys, paths
from benchwarmers.wire import notices
from benchwarmers.models import learn, registry
from benchwarmers.calling import client, ledger, llm_backend
from benchwarmers.demo import demo
from benchwarmers.demo.demo import Upstream
from benchwarmers.models import scoring

STORED_SECRET = "sk-spec-stored-5e0c7d1b9a"
ENV_SECRET = "sk-spec-envonly-3f8a2c6d4e"
LONG = "Cap the retry loop at three tries, and add jitter so the retries do not line up."
SYSTEM = "Be brief."
SLOW = 1.5

# name -> (upstream spec, endpoint, timeout, failure class the suite must see at min_length 40; None = answered)
SCENARIOS = {
    "answer": ({"answer": LONG}, "main", 30, None),
    "short": ({"answer": "Yes."}, "main", 30, "other"),
    "empty": ({"fail": "empty"}, "main", 30, "empty"),
    "gone": ({"fail": "404"}, "main", 30, "structural"),
    "busy": ({"fail": "429", "retry_after": 0.1}, "main", 30, "capacity"),
    "clears": ({"fail": "429", "retry_after": 0.1, "clears_after": 1, "answer": LONG}, "main", 30, None),
    "html502": ({"fail": "502html"}, "main", 30, "capacity"),
    "slow": ({"fail": "slow", "delay": 10}, "main", SLOW, "timeout"),
    "notice": ({"fail": "notice"}, "main", 30, "entitlement"),
    "refused": ({"answer": LONG}, "dead", 30, "other"),
    "missing-key": ({"answer": LONG}, "nokey", 30, "other"),
    "env-key": ({"answer": LONG}, "env", 30, None),
}
BACKENDS = ("builtin", "llm")


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def alias(name, backend):
    return f"{name}-{backend}"


# ---------------------------------------------------------------- ERR-5: both backends


def test_err5_builtin_client_and_llm_backend_agree(llmdir, monkeypatch, capfd):
    """ERR-5, ERR-3, REG-1, REG-9, KEY-2..4, KEY-7, BK-6: one registry, one key store, two backends, same verdicts."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("BENCH_LLM_INPROCESS", raising=False)
    monkeypatch.setenv("BENCHWARMERS_KEY_ENVHUB", ENV_SECRET)
    specs = {where: {alias(name, b): dict(spec) for name, (spec, at, _, _) in SCENARIOS.items() if at == where
                     for b in BACKENDS} for where in ("main", "env")}
    with Upstream(specs["main"], key=STORED_SECRET) as main, Upstream(specs["env"], key=ENV_SECRET) as env:
        fileio.write_atomic(paths.file("config", "endpoints.json"), fileio.dumps({
            "main": {"base": main.base_url, "key": "main", "default": True},
            "nokey": {"base": main.base_url, "key": "nowhere"},
            "env": {"base": env.base_url, "key": "envhub"},
            "dead": {"base": f"http://127.0.0.1:{closed_port()}/v1", "key": "main"},
        }))
        for name, (_, where, _, _) in SCENARIOS.items():
            for backend in BACKENDS:
                registry.add_registration(alias(name, backend), alias(name, backend), where)
        keys.set_key("main", STORED_SECRET)
        registry.sync_to_llm()

        def run(name, backend):
            timeout = SCENARIOS[name][2]
            if backend == "builtin":
                return client.chat(alias(name, backend), "Review my retry loop.", SYSTEM, timeout=timeout)
            return llm_backend.ask(alias(name, backend), "Review my retry loop.", SYSTEM, timeout=timeout)

        with concurrent.futures.ThreadPoolExecutor(len(SCENARIOS) * 2) as pool:
            futures = {(name, b): pool.submit(run, name, b) for name in SCENARIOS for b in BACKENDS}
            results = {key: future.result() for key, future in futures.items()}
        asked = {b: [r["model"] for r in main.requests + env.requests if r["model"].endswith(b)] for b in BACKENDS}

    for name, (_, _, timeout, expected) in SCENARIOS.items():
        builtin, via_llm = results[name, "builtin"], results[name, "llm"]
        assert set(builtin) <= set(via_llm) and set(via_llm) - set(builtin) == {"backend", "path"}, name
        assert via_llm["path"] == "inprocess", name
        texts = {b: client.output(results[name, b], timeout) for b in BACKENDS}
        for min_length in (40, 1):
            assert scoring.outcome(texts["builtin"], min_length) == scoring.outcome(texts["llm"], min_length), name
            assert (scoring.failure_class(texts["builtin"], min_length)
                    == scoring.failure_class(texts["llm"], min_length)), name
        assert scoring.failure_class(texts["builtin"]) == expected, (name, texts["builtin"])
        if not builtin["error"] and not builtin["timed_out"]:
            assert builtin["text"] == via_llm["text"], name
        if builtin["status"] >= 400:
            assert builtin["status"] == via_llm["status"], name

    # A key missing on both sides sends nothing; a key from the environment reached the upstream.
    for backend in BACKENDS:
        assert alias("missing-key", backend) not in asked[backend]
        assert results["env-key", backend]["text"] == LONG
    # BK-6: only the built-in path writes the ledger, one line per call.
    lines = list(ledger.rows())
    assert sorted(line["alias"] for line in lines) == sorted(alias(name, "builtin") for name in SCENARIOS)
    # KEY-7: neither secret is in any file written or anything printed.
    for folder in (paths.data(), llmdir):
        for path in folder.rglob("*"):
            if path.is_file() and path != keys.store_path():
                blob = path.read_bytes()
                assert STORED_SECRET.encode() not in blob and ENV_SECRET.encode() not in blob, path
    out, err = capfd.readouterr()
    assert not any(secret in out + err for secret in (STORED_SECRET, ENV_SECRET))


# ---------------------------------------------------------------- the built-in client: reply shapes


class _Threaded(socketserver.ThreadingTCPServer):
    daemon_threads = True


class Raw:
    """A bare HTTP server: `respond()` returns the exact bytes of each reply; then the connection closes.
    `hits` holds the request bodies."""

    def __init__(self, respond):
        outer = self
        self.hits = []

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, rest = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?im)^content-length:\s*(\d+)", head).group(1))
                while len(rest) < length:
                    rest += self.request.recv(65536)
                outer.hits.append(json.loads(rest))
                self.request.sendall(respond())

        self.server = _Threaded(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def reply(status, body, content_type="application/json", length=None, headers=()):
    """Raw reply bytes; `length` may promise more than `body` holds (a cut body)."""
    body = body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}",
             f"Content-Length: {len(body) if length is None else length}", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def sse(*events):
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)


@pytest.fixture
def raw():
    made = []

    def make(respond):
        server = Raw(respond)
        made.append(server)
        fileio.write_atomic(paths.file("config", "endpoints.json"), fileio.dumps({"raw": {"base": server.base_url}}))
        registry.remove_registration("m")
        registry.add_registration("m", "m", "raw")
        return server

    yield make
    for server in made:
        server.close()


# http.client's read1() ends a Content-Length body that the server cut short as if it were whole;
# the client must still tell it apart (STR-4, RET-3).


def test_ret3_err3_a_502_whose_body_breaks_off_reads_as_an_empty_502(raw):
    server = raw(lambda: reply(502, b"<html>Bad Gat", "text/html", length=400))
    res = client.chat("m", "hi", retries=1)
    assert res["error"] == "Error: Error code: 502" and res["attempts"] == 2 and len(server.hits) == 2
    assert scoring.failure_class(client.output(res, 420)) == "capacity"


def test_str9_err3_an_empty_object_200_is_a_broken_endpoint(raw):
    raw(lambda: reply(200, {}))
    res = client.chat("m", "hi")
    assert res["error"] == "Error: client failed: the reply had no choices: {}" and res["attempts"] == 1
    assert scoring.failure_class(client.output(res, 420)) == "other"
    raw(lambda: reply(200, [1, 2]))
    assert client.chat("m", "hi")["error"] == "Error: client failed: unexpected reply: [1, 2]"


def test_str5_str6_a_stream_without_its_content_type_or_blank_lines(raw):
    chunk = {"model": "m", "choices": [{"delta": {"content": "one "}}]}
    last = {"model": "m", "choices": [{"delta": {"content": "two"}, "finish_reason": "stop"}]}
    raw(lambda: reply(200, b"\n" + sse(chunk, last, b"[DONE]"), "application/json"))
    assert client.chat("m", "hi")["text"] == "one two"
    packed = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n" for e in (chunk, last)) + b"data: [DONE]\r\n"
    raw(lambda: reply(200, packed, "text/event-stream"))
    res = client.chat("m", "hi")
    assert (res["text"], res["finish"], res["error"]) == ("one two", "stop", "")


def test_str7_str8_an_error_mid_stream_and_a_stream_without_choices(raw):
    part = {"model": "m", "choices": [{"delta": {"content": "half an answer"}}]}
    failed = {"model": "m", "choices": [{"delta": {}, "finish_reason": "error"}]}
    raw(lambda: reply(200, sse(part, failed), "text/event-stream"))
    res = client.chat("m", "hi")
    assert res["error"] == f"Error: Error code: stream - {failed!r}" and res["text"] == ""
    raw(lambda: reply(200, sse({"usage": {"prompt_tokens": 1}, "choices": []}, b"[DONE]"),
                                "text/event-stream"))
    assert client.chat("m", "hi")["error"] == "Error: client failed: the reply had no choices: the stream sent none"


def test_str17_led3_tool_calls_are_counted_and_count_as_an_answer(raw):
    call = {"index": 0, "id": "c0", "type": "function", "function": {"name": "get_time", "arguments": ""}}
    events = [{"model": "m", "choices": [{"delta": {"tool_calls": [call]}}]},
              {"model": "m", "choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]},
              {"model": "m", "choices": [{"delta": {"tool_calls": [{**call, "index": 1, "id": "c1"}]},
                                          "finish_reason": "tool_calls"}]}, b"[DONE]"]
    raw(lambda: reply(200, sse(*events), "text/event-stream"))
    res = client.chat("m", "what time is it in Oslo?")
    assert (res["text"], res["error"], res["tool_calls"], res["finish"]) == ("", "", 2, "tool_calls")
    assert res["first_token_s"] is not None and "budget_retry" not in res
    assert list(ledger.rows())[-1]["status"] == "ok"


def test_str4_a_json_reply_cut_short_is_never_retried(raw):
    server = raw(lambda: reply(200, b'{"choices": [{"message": {"content": "hal', length=500))
    res = client.chat("m", "hi")
    assert res["error"].startswith("Error: client failed: the reply broke off part way (")
    assert res["attempts"] == 1 and len(server.hits) == 1


@pytest.mark.parametrize("status, attempts", [(400, 1), (401, 1), (404, 1), (408, 2), (409, 2), (429, 2),
                                              (500, 2), (503, 2)])
def test_ret1_which_statuses_are_retried(raw, status, attempts):
    server = raw(lambda: reply(status, {"error": {"message": "no"}}, headers=["Retry-After: 0.01"]))
    res = client.chat("m", "hi", retries=1)
    assert res["attempts"] == len(server.hits) == attempts and res["status"] == status
    assert res["error"].startswith(f"Error: Error code: {status} - {{'error'")


def test_ret2_a_stated_wait_past_the_deadline_returns_the_error_at_once(raw):
    raw(lambda: reply(429, {"error": "slow down"}, headers=["Retry-After: 30"]))
    started = time.monotonic()
    res = client.chat("m", "hi", timeout=5)
    assert res["attempts"] == 1 and time.monotonic() - started < 1
    assert res["error"] == "Error: Error code: 429 - {'error': 'slow down'} Retry-After: 30"


def test_ret2_retry_after_spellings():
    assert 1.5 < client.retry_after({"Retry-After": formatdate(time.time() + 3, usegmt=True)}) <= 3
    assert client.retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert client.retry_after({"Retry-After": "0"}) is None and client.retry_after({"Retry-After": "soon"}) is None


# ---------------------------------------------------------------- ledger and notices


def test_led8_a_ledger_that_cannot_be_written_says_so_and_keeps_the_ticket(capfd):
    released = []

    def reserve(call):
        call.releases.append(lambda: released.append(call.alias))

    with Upstream({"ok": {"answer": LONG}}) as up:
        demo.register(up)
        paths.file("metrics", "usage").write_text("a file where the ledger folder should be")
        client.PREFLIGHT.append(reserve)
        try:
            res = client.chat("ok", "hi")
        finally:
            client.PREFLIGHT.remove(reserve)
    assert res["text"] == LONG and released == []
    assert "note: the usage ledger was not written: " in capfd.readouterr().err


def test_led9_command_prints_each_connection(home, capsys):
    assert ledger.main() == 0
    assert capsys.readouterr().out == f"no calls in the ledger this month ({ledger.folder()})\n"
    now = time.time()
    for t, used in ((now - 5, 10), (now - 7200, 20)):
        ledger.write(ledger.line(t, "m", "groq", "groq", "x", "ok", 1, {"prompt_tokens": used,
                                                                        "completion_tokens": 1}, 1.0, ""))
    ledger.main()
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[0] == "connection" and table[1].split()[0] == "groq"
    assert re.search(r"1 req, 11 tok\s+2 req, 32 tok\s+2 req, 32 tok$", table[1])


def test_pn1_pn2_the_first_phrase_in_list_order_and_only_in_short_replies():
    assert notices.notice("You have run out of credits.") == "run out of credits"
    assert notices.notice("  Your CREDIT BALANCE is too low  ") == "credit balance"
    assert notices.notice("Upgrade your plan: " + "x" * 381) == "upgrade your plan"  # 400 characters
    assert notices.notice("Upgrade your plan: " + "x" * 382) == ""
    assert notices.notice("") == "" and notices.as_error("a real answer") == ""


# ---------------------------------------------------------------- PATH-6 and the checkout as data folder

# State the specs name under DATA (models.md §1, §10-17; gateway, security, dashboard, suite specs): when the
# checkout is the data folder, git must ignore each of them.
SPEC_STATE = [
    "config/endpoints.json", "config/extra-openai-models.yaml", "config/model-options.json",
    "config/connections.json", "config/client.json", "config/model-catalog.json", "config/model-overrides.json",
    "config/connection-limits.json", "config/model-learned.json", "config/alias-history.json",
    "config/provider-tags.json", "config/decision-models.json", "config/collections.json",
    "config/gateway-keys.json", "config/gateway-keys.json.lock", "config/changes.jsonl", "config/retired.json",
    "config/served-snapshot.json", "config/scheduler.json", "config/connect-chatgpt.lock", "config/ui.json",
    "config/.endpoints.json.1a2b3c4d5e6f.part", "metrics/usage/2026-10.jsonl", "metrics/usage/usage.lock",
    "metrics/offloads.jsonl", "metrics/alerts.json", "metrics/cost.json", "metrics/benchmark-calls.json",
    "metrics/onboard-issues.json", "runs/quotas.json", "runs/inflight.json", "runs/pacing.lock",
    "runs/cooldowns.json", "runs/cache/modelsdev.json", "runs/discover-seen.json", "runs/gateway/calls.jsonl",
    "runs/gateway/routes.jsonl", "runs/scheduler.log", "runs/suite-2026-10-23.md", "perf/history.csv",
    "suite/tasks/claim-1/task.json", "suite/tasks/claim-1/output/m.txt",
]


def _ignored(relative):
    """`{path: whether .gitignore ignores it}` by the checkout's rules (tracked or not)."""
    done = subprocess.run(["git", "-C", str(paths.CODE), "check-ignore", "--no-index", "-v", "-n", "--stdin"],
                          input="\n".join(relative) + "\n", capture_output=True, text=True, timeout=30)
    found = {}
    for line in done.stdout.splitlines():
        source, _, path = line.partition("\t")
        pattern = source.split(":", 2)[-1]
        found[path] = bool(source) and source != "::" and not pattern.startswith("!")
    return found


def _tracked():
    done = subprocess.run(["git", "-C", str(paths.CODE), "ls-files"], capture_output=True, text=True, timeout=30)
    return set(done.stdout.splitlines())


needs_git = pytest.mark.skipif(shutil.which("git") is None or not (paths.CODE / ".git").exists(),
                               reason="needs git and the checkout's .git")


STATE_IN_CODE = ("config", "runs", "perf", "suite/tasks", "metrics")


def _state_files_in_code():
    """Files in the checkout's state places that git does not track (what an install would have left)."""
    tracked = _tracked()
    found = set()
    for part in STATE_IN_CODE:
        for path in (paths.CODE / part).rglob("*"):
            relative = path.relative_to(paths.CODE).as_posix()
            if path.is_file() and relative not in tracked and path.suffix not in (".py", ".pyc"):
                found.add(relative)
    return found


@needs_git
def test_path6_everything_written_under_data_would_be_gitignored_in_a_checkout(gateway, bench, llmdir):
    """PATH-1 case 3, PATH-6, DATA-3: a panel (seats answering and failing), learning, keys and the
    ledger, all into a fresh data folder. Nothing lands in the checkout, and each file written, placed
    in the checkout, is ignored by git, except the shipped defaults themselves (tracked: an edited
    `config/gateway.json` shows as a change, which no .gitignore line can prevent)."""
    before = _state_files_in_code()
    demo.set_collection("core", ["alpha", "gone", "noticer"])
    host, port = gateway.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps(
        {"model": "bench/core", "messages": [{"role": "user", "content": "Is this loop off by one?"}]}),
        {"Content-Type": "application/json"})
    assert conn.getresponse().status == 200
    conn.close()
    learn.record("alpha", "429 Too Many Requests: limit 30 requests per minute", "gateway")
    keys.set_key("demo", "stored-in-llms-folder-only")
    assert client.chat("alpha", "hi")["error"] == ""

    written = sorted(p.relative_to(paths.data()).as_posix() for p in paths.data().rglob("*") if p.is_file())
    for expected in ("metrics/offloads.jsonl", "runs/gateway/calls.jsonl", "runs/cooldowns.json",
                     "config/model-learned.json", "config/extra-openai-models.yaml", "metrics/usage/usage.lock"):
        assert expected in written
    assert not [p for p in written if p.startswith("keys")] and (llmdir / "keys.json").exists()
    tracked = _tracked()
    shipped = {f"config/{p.name}" for p in paths.SHIPPED.iterdir() if p.is_file()}
    assert {p for p in written if p in tracked} <= shipped  # only the shipped defaults are tracked
    asked = [p for p in written if p not in tracked] + SPEC_STATE
    ignored = _ignored(asked)
    assert set(ignored) == set(asked) and [p for p, yes in ignored.items() if not yes] == []
    assert _state_files_in_code() == before  # PATH-6: nothing was written into the checkout
