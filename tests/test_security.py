"""Who may call the gateway, and that nothing leaks or hangs (security.md §17, improvements 1-23).

A real gateway on 127.0.0.1 port 0 over a real local upstream; raw sockets or http.client
wherever an SDK would hide the detail; environment toggled between requests. Every secret a
test uses is handed to `watch`, which afterwards greps every file under the data folder and
everything written to stderr (in-process servers and subprocesses alike) for it.
The dashboard's own routes (login page, Settings) come with the dashboard; their shared
pieces (cookie, admin bearer, login backoff) are tested here through `benchwarmers.server.guard`.
"""

import base64
import datetime
import http.client
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.wire import routes
from benchwarmers.demo import demo
from benchwarmers.server import gatekeys, guard, httpserver
from benchwarmers.store import rates, store

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
TOKEN = "correct-horse-battery-staple-42"
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 3).decode()


class Watch:
    """Secrets that must never be written down, and everything stderr received meanwhile."""

    def __init__(self, capfd):
        self.capfd = capfd
        self.secrets = []
        self.err = ""
        self.out = ""

    def add(self, *secrets):
        for secret in secrets:
            self.secrets.append(secret)
            if secret.startswith(gatekeys.PREFIX):
                self.secrets.append(secret[4:12])
        return secrets[0]

    def read(self):
        captured = self.capfd.readouterr()
        self.err += captured.err
        self.out += captured.out
        return self.err


@pytest.fixture(autouse=True)
def watch(capfd, home):
    """LOG-6, TM-6, TEST-6, issue 5 item 7: no secret in any file of the data folder or on stderr."""
    watched = Watch(capfd)
    yield watched
    err = watched.read()
    files = [p for p in home.rglob("*") if p.is_file()]
    for secret in watched.secrets:
        assert secret not in err, f"{secret[:6]}… reached stderr"
        for path in files:
            assert secret.encode() not in path.read_bytes(), f"{secret[:6]}… reached {path}"


@pytest.fixture
def keys_on(monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")


def request(port, method, path, body=None, headers=None, host=None):
    """One request through http.client: `(status, headers, parsed body or text)`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    sent = {"Host": host or f"127.0.0.1:{port}", **(headers or {})}
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    if data is not None and not any(k.lower() == "content-type" for k in sent):
        sent["Content-Type"] = "application/json"
    conn.request(method, path, data, sent)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    try:
        payload = json.loads(raw) if raw else None
    except ValueError:
        payload = raw.decode("latin-1")
    return response.status, response.headers, payload


def raw(port, data, timeout=15):
    """Bytes in, `(status, {lower-cased header: value}, body bytes)` out, over a bare socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines[0] else 0
    return status, {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}, body


def ask_body(collection="bench/core", **extra):
    return {"model": collection, "messages": [{"role": "user", "content": PROMPT}], **extra}


def message(payload):
    return payload["error"]["message"]


def calls():
    return fileio.read_jsonl(paths.file("runs", "gateway", "calls.jsonl"))


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- route classification and startup -------------------------------------------------------

@pytest.mark.parametrize("path, gateway", [
    ("/v1/models", True), ("/bench/verdict", True), ("/v1beta/models", True), ("/api/tags", True),
    ("/api/chat/", True), ("/mcp", True), ("/mcp/", True), ("//mcp", True), ("/v1/mcp", True),
    ("/v1", False), ("//v1/x", False), ("/api/endpoints", False), ("/api/stamp", False), ("/api/tagsx", False),
    ("/health", False), ("/login", False), ("/v1/models?key=x", True),
])
def test_test5_route1_classification(path, gateway):
    """ROUTE-1, TEST-5."""
    assert routes.is_gateway_route(path) is gateway


def test_test2_startup_checks_and_warnings(monkeypatch):
    """START-2..4, START-3 loopback forms, improvements 16 and 17, §2 port parsing."""
    for address in ("127.0.0.1", "127.8.9.1", "localhost", "LOCALHOST", "::1", "[::1]"):
        assert guard.startup_problem(address) == "", address
    for address in ("0.0.0.0", "", "::", "192.0.2.7", "example.com"):
        assert "BENCHWARMERS_ADMIN_TOKEN" in guard.startup_problem(address), address
    assert "BENCH_BIND=127.0.0.1" in guard.startup_problem("0.0.0.0")
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", "short")
    problem = guard.startup_problem("127.0.0.1")
    assert "5 characters" in problem and "16" in problem and "secrets.token_urlsafe" in problem
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", "x" * 15 + "\n")  # improvement 17: the newline is not counted
    assert "15 characters" in guard.startup_problem("127.0.0.1")
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", "a" * 24)
    assert guard.startup_problem("0.0.0.0") == ""
    assert "easy to guess" in " ".join(guard.startup_warnings())
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", f" {TOKEN}\n")
    assert guard.admin_token() == TOKEN and "newline" in " ".join(guard.startup_warnings())
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    assert guard.startup_warnings() == []
    monkeypatch.setenv("BENCHWARMERS_PUBLIC_URL", "bench.example.com")
    assert "'bench.example.com'" in guard.startup_problem("127.0.0.1")
    monkeypatch.setenv("BENCHWARMERS_PUBLIC_URL", "https://Bench.Example.com:443/")
    assert guard.public() == ("bench.example.com", "https://bench.example.com")
    monkeypatch.setenv("BENCHWARMERS_PUBLIC_URL", "https://u@bench.example.com")
    assert guard.public() == ("", "") and guard.startup_problem("127.0.0.1")
    monkeypatch.delenv("BENCHWARMERS_PUBLIC_URL")
    monkeypatch.setenv("BENCH_ALLOWED_ORIGINS", "http://app.example:5173/, app.example")
    assert guard.startup_warnings() == [
        "BENCH_ALLOWED_ORIGINS item 'app.example' is not scheme://host[:port]; no browser sends it"]
    monkeypatch.setenv("BENCH_GATEWAY_PORT", "80x")
    assert guard.startup_problem("127.0.0.1") == "BENCH_GATEWAY_PORT must be a port number, not '80x'"
    monkeypatch.setenv("BENCH_GATEWAY_PORT", " ")
    assert guard.port_setting("BENCH_GATEWAY_PORT") == 8123


def test_test2_gateway_process_refuses_unsafe_configurations(tmp_path):
    """START-1, START-2, TEST-2 end to end: `python gateway.py` exits 1 with one message, before the data folder."""
    home = tmp_path / "never-made"
    cases = {
        "beyond loopback": ({"BENCH_BIND": "0.0.0.0"}, "BENCHWARMERS_ADMIN_TOKEN"),
        "short token": ({"BENCHWARMERS_ADMIN_TOKEN": "abc"}, "the minimum is 16"),
        "public url": ({"BENCHWARMERS_PUBLIC_URL": "bench.example.com"}, "http(s)://host[:port]"),
        "bad port": ({"BENCH_GATEWAY_PORT": "eighty"}, "BENCH_GATEWAY_PORT must be a port number"),
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH", "BENCHWARMERS"))}
    running = {name: subprocess.Popen([sys.executable, "gateway.py"], cwd=paths.CODE, text=True,
                                      env={**base, "BENCHWARMERS_HOME": str(home), **env},
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for name, (env, _) in cases.items()}
    for name, process in running.items():
        out, err = process.communicate(timeout=30)
        assert process.returncode == 1, name
        assert cases[name][1] in err and err.count("\n") == 1 and out == "", name
    assert not home.exists()


# -- Host and write checks ---------------------------------------------------------------------

def test_test1_host_allow_list_on_every_method(port, monkeypatch):
    """HOST-1..5, TEST-1, WRITE-9, improvement 18 (the bind address) and 16 (default ports)."""
    for host in (f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}", f"127.0.0.1:{port}"):
        assert request(port, "GET", "/v1/models", host=host)[0] == 200, host
    for host in ("evil.example:%d" % port, "127.0.0.1", f"127.0.0.1:{port + 1}", f"localhost:{port}.evil"):
        status, _, reply = request(port, "GET", "/v1/models", host=host)
        assert status == 403 and message(reply) == (
            f"unknown Host '{host.lower()}'; set BENCHWARMERS_PUBLIC_URL or BENCH_ALLOWED_HOSTS to add one")
        assert request(port, "POST", "/v1/chat/completions", ask_body(), host=host)[0] == 403
        assert request(port, "OPTIONS", "/v1/models", host=host, headers={"Origin": "http://x"})[0] == 403
    status, _, body = raw(port, b"GET /v1/models HTTP/1.0\r\n\r\n")
    assert status == 403 and b"unknown Host '(none)'" in body
    monkeypatch.setenv("BENCH_ALLOWED_HOSTS", " Bench:8123 ,, proxy.lan:80")
    assert request(port, "GET", "/v1/models", host="bench:8123")[0] == 200
    assert request(port, "GET", "/v1/models", host="bench")[0] == 403
    monkeypatch.setenv("BENCHWARMERS_PUBLIC_URL", "https://Bench.Example.com/")
    for host in ("bench.example.com", "BENCH.example.com:443"):
        assert request(port, "GET", "/v1/models", host=host)[0] == 200, host
    assert request(port, "GET", "/v1/models", host="bench.example.com:80")[0] == 403
    monkeypatch.setenv("BENCH_BIND", "192.0.2.7")
    assert request(port, "GET", "/v1/models", host=f"192.0.2.7:{port}")[0] == 200
    monkeypatch.setenv("BENCH_BIND", "0.0.0.0")
    assert request(port, "GET", "/v1/models", host=f"0.0.0.0:{port}")[0] == 403


def test_open1_imp21_health_answers_any_host_and_discloses_nothing(port, keys_on):
    """OPEN-1 and improvement 21 on the gateway port; improvement 19: no version to a stranger."""
    status, headers, body = raw(port, b"GET /health HTTP/1.0\r\nHost: evil.example\r\n\r\n")
    assert (status, body) == (200, b'{"ok": true}')
    assert "server" not in headers and "x-benchwarmers-version" not in headers
    status, headers, body = raw(port, b"HEAD /health HTTP/1.0\r\n\r\n")
    assert (status, body, headers["content-length"]) == (200, b"", "12")


def test_test1_write_checks_refuse_before_reading_a_byte(port):
    """WRITE-1..8, TM-1, TM-7, GW-3, improvements 13, 14, 15; the order a stranger sees."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    cross = {**form, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    status, _, reply = request(port, "POST", "/v1/chat/completions", b"model=bench%2Fcore", cross)
    assert status == 403 and message(reply) == "cross-site requests are refused"
    status, _, reply = request(port, "POST", "/v1/chat/completions", b"{}", {"Origin": "https://Evil.example"})
    assert status == 403 and message(reply) == (
        "Origin 'https://evil.example' is not allowed; set BENCH_ALLOWED_ORIGINS to add one")
    for kind in ("text/plain", "application/x-www-form-urlencoded", "application/jsonx", "multipart/form-data",
                 "text/json", ""):
        status, _, reply = request(port, "POST", "/v1/chat/completions", b"{}", {"Content-Type": kind})
        assert (status, message(reply)) == (415, "send Content-Type: application/json"), kind
    for kind in ("application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"):
        status, _, reply = request(port, "POST", "/v1/chat/completions", b"{}", {"Content-Type": kind})
        assert status == 400 and "messages" in message(reply), kind  # past the checks, into the Ask
    head = f"POST /v1/chat/completions HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    for length, words in [("x", "not a number"), ("-1", "negative"), ("+5", "not a number"),
                          ("1_000", "not a number"), ("5 ", "not a number"), ("0x10", "not a number"),
                          ("\uff15".encode().decode("latin-1"), "not a number")]:
        status, _, body = raw(port, (head + f"Content-Length: {length}\r\n\r\n").encode("latin-1"))
        assert status == 400 and words in json.loads(body)["error"]["message"], length
    status, _, body = raw(port, (head + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}").encode())
    assert status == 400 and b"more than once" in body
    status, _, body = raw(port, (head + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n").encode())
    assert status == 411 and b"chunked bodies are not supported" in body
    status, _, body = raw(port, (head + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}").encode())
    assert status == 400 and b"not both" in body
    # 25 MB announced, not a byte sent: the 413 arrives anyway, so the body was never waited for
    status, _, body = raw(port, (head + "Content-Length: 25000000\r\n\r\n").encode())
    text = json.loads(body)["error"]["message"]
    assert status == 413 and text.startswith("body is 25,000,000 bytes; the limit is 20,000,000") and \
        "http(s) URLs" in text
    exactly = b"{" + b" " * (guard.GATEWAY_CAP - 2) + b"}"
    status, _, reply = request(port, "POST", "/v1/chat/completions", exactly)
    assert status == 400 and "messages" in message(reply)
    deep = b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, _, reply = request(port, "POST", "/v1/chat/completions", deep)
    assert (status, message(reply)) == (400, "body is not JSON")


# -- gateway keys ------------------------------------------------------------------------------

def test_test4_key_making_storage_and_revocation(watch):
    """KEY-1..7, MGMT-1, MGMT-3/4, improvements 10, 20; the CLI (`python -m benchwarmers.server.gatekeys`)."""
    demo.set_collection("core", ["alpha"])
    demo.set_collection("vision", ["seer"])
    key = watch.add(gatekeys.make("chat-ui"))
    assert key.startswith("bwk_") and len(key) == 47
    scoped = watch.add(gatekeys.make("estate", ["vision", "core", "vision"], 2, by="admin"))
    stored = json.loads(paths.file("config", "gateway-keys.json").read_text())
    assert set(stored["chat-ui"]) == {"sha256", "hint", "created"}
    assert stored["chat-ui"]["hint"] == key[-4:] and stored["estate"]["collections"] == ["core", "vision"]
    assert stored["estate"]["rpm"] == 2 and len(stored["chat-ui"]["sha256"]) == 64
    assert stat.S_IMODE(os.stat(gatekeys.path()).st_mode) == 0o600
    for name, chosen, rpm, words in [
        ("A", None, None, "name: 2-32"), ("a", None, None, "name: 2-32"), ("x" * 33, None, None, "name: 2-32"),
        ("-ab", None, None, "name: 2-32"), ("local", None, None, "local is what a call without a key is recorded as"),
        ("new", ["Core"], None, "collections: names such as core"), ("new", [1], None, "collections:"),
        ("new", None, 0, "requests a minute"), ("new", None, True, "requests a minute"),
        ("new", None, "5", "requests a minute"), ("new", None, 10_001, "requests a minute"),
        ("estate", None, None, "there is already a key named estate"),
    ]:
        with pytest.raises(ValueError) as refused:
            gatekeys.make(name, chosen, rpm)
        assert words in str(refused.value), name
    assert gatekeys.lookup(key) == "chat-ui" and gatekeys.lookup(scoped) == "estate"
    for value in ("", key + "x", key[:-1], "bwk_é", "bwk_\udcff", None):
        assert gatekeys.lookup(value) is None
    rows = gatekeys.listing()
    assert [r["name"] for r in rows] == ["chat-ui", "estate"] and "sha256" not in json.dumps(rows)
    assert rows[1]["collections"] == ["core", "vision"] and rows[0]["rpm"] is None and rows[0]["problem"] is None
    changes = fileio.read_jsonl(paths.file("config", "changes.jsonl"))
    assert changes[1] == {**changes[1], "by": "admin", "field": "gateway key", "old": None,
                          "new": {"name": "estate", "collections": ["core", "vision"], "rpm": 2}}
    assert gatekeys.revoke("estate", by="admin") is True and gatekeys.revoke("estate") is False
    assert gatekeys.lookup(scoped) is None
    assert fileio.read_jsonl(paths.file("config", "changes.jsonl"))[-1]["old"] == "estate"
    gatekeys.main(["create", "cli-app", "--collections", "core", "--rpm", "5"])
    watch.read()
    printed = watch.out
    cli_key = watch.add(printed.split()[0])
    assert gatekeys.lookup(cli_key) == "cli-app" and "shown this once" in printed
    gatekeys.main(["list"])
    watch.read()
    assert "cli-app  bwk_…" + cli_key[-4:] + "  collections: core  rpm: 5  last used: never" in watch.out
    with pytest.raises(SystemExit) as refused:
        gatekeys.main(["create", "other", "--collections", "nope"])
    assert refused.value.code == "no collection named nope"
    gatekeys.main(["revoke", "cli-app"])
    with pytest.raises(SystemExit):
        gatekeys.main(["revoke", "cli-app"])


def test_test4_scope_and_rpm_read_from_hand_edits():
    """SCOPE-1 (fails closed), RATE-1 with improvement 10 (a bad rpm caps at 1), the may-call matrix."""
    entries = {"all": {"sha256": "0" * 64}, "empty": {"sha256": "1" * 64, "collections": []},
               "one": {"sha256": "2" * 64, "collections": ["vision"], "rpm": 3}, "junk": "not an object"}
    for i, bad in enumerate(["core", "", 0, False, [1], {"core": 1}]):
        entries[f"bad{i}"] = {"sha256": f"{i}" * 64, "collections": bad}
    for i, bad in enumerate([0, True, "5", 2.5, -1]):
        entries[f"rpm{i}"] = {"sha256": "f" * 64, "rpm": bad}
    fileio.write_atomic(gatekeys.path(), json.dumps(entries))
    assert gatekeys.scope("all") is None and gatekeys.scope("empty") is None and gatekeys.scope("local") is None
    assert gatekeys.scope("gone") is None and gatekeys.scope("one") == {"vision"}
    for i in range(6):
        assert gatekeys.scope(f"bad{i}") == frozenset(), i
        assert gatekeys.admit(f"bad{i}", "core")[1] == \
            f"the gateway key bad{i} may not call bench/core; it may call none"
    assert gatekeys.admit("one", "core")[:2] == (
        403, "the gateway key one may not call bench/core; it may call bench/vision")
    assert gatekeys.admit("all", "core") is None and gatekeys.rpm("all") is None and gatekeys.rpm("one") == 3
    for i in range(5):
        assert gatekeys.rpm(f"rpm{i}") == 1, i
    problems = {row["name"]: row["problem"] for row in gatekeys.listing()}
    assert "junk" not in problems and "may call nothing" in problems["bad0"] and "capped at 1" in problems["rpm2"]
    assert gatekeys.lookup("anything") is None  # entries that are not objects never match


def test_test4_rate_window_counts_permitted_requests_only(storage):
    """RATE-2..4: the third request on a cap of 2 is 429 with 1 ≤ Retry-After ≤ 61; uncapped is unlimited."""
    store.current().update_json(store.GATEWAY_KEYS, lambda data: data.update(
        {"two": {"sha256": "0" * 64, "rpm": 2, "collections": ["a"]}, "free": {"sha256": "1" * 64}}))
    assert gatekeys.admit("two", "b")[0] == 403  # refused by scope: not counted
    assert gatekeys.admit("two", "a") is None and gatekeys.admit("two", "a") is None
    status, text, headers = gatekeys.admit("two", "a")
    assert status == 429 and 1 <= int(headers["Retry-After"]) <= 61
    assert text == f"the gateway key two may make 2 requests a minute; try again in {headers['Retry-After']}s"
    assert gatekeys.admit("two", "a")[0] == 429  # refused attempts are not recorded either
    if storage == "folder":
        assert len(json.loads(paths.file(*rates.RATES).read_text())["two"]) == 2
    assert all(gatekeys.admit("free", "a") is None for _ in range(50))
    # a stamp from before the window and one from the future (the clock stepped back) are dropped
    assert rates.window([100.0, 150.0, 500.0], 2, 200.0) == (None, [150.0, 200.0])
    assert rates.window([100.0, 150.0, 500.0], 1, 200.0) == (11, [150.0])


def test_cred_test4_test7_credential_forms_and_messages(port, keys_on, monkeypatch, watch):
    """§7, CRED-1..6, TEST-4 precedence cases, TEST-7 forms, KEY-8, LOG-1..3, improvement 22."""
    key = watch.add(gatekeys.make("chat-ui"))
    watch.add(TOKEN)

    def listing(path="/v1/models", **headers):
        return request(port, "GET", path, headers=headers)

    status, headers, reply = listing()
    assert status == 401 and headers["WWW-Authenticate"] == 'Bearer realm="benchwarmers"'
    assert "needs a gateway key" in message(reply)
    for sent in ({"Authorization": key}, {"Authorization": f"Basic {key}"}, {"Authorization": "Bearer "},
                 {"Authorization": ""}, {"x-api-key": ""}, {"x-goog-api-key": " "}):
        status, headers, reply = listing(**sent)
        assert status == 401 and "Bearer <key>" in message(reply), sent
        assert headers["WWW-Authenticate"].startswith("Bearer")
    status, _, reply = listing(Authorization="Bearer sk-dummy")
    assert status == 401 and message(reply) == \
        "unknown or revoked gateway key (gateway keys start bwk_; this is some other key)"
    status, _, reply = listing(Authorization="Bearer bwk_" + "A" * 43)
    assert message(reply) == "unknown or revoked gateway key"
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)  # CRED-6: the admin token is not a gateway key
    assert "some other key" in message(listing(Authorization=f"Bearer {TOKEN}")[2])
    assert listing(Cookie=guard.session_cookie(port).split(";")[0])[0] == 401  # ROUTE-5: a cookie is no key
    monkeypatch.delenv("BENCHWARMERS_ADMIN_TOKEN")
    # every form, first one present judged
    assert listing(Authorization=f"bearer   {key}  ")[0] == 200
    assert listing(**{"x-api-key": key})[0] == 200
    assert listing(**{"x-goog-api-key": key})[0] == 200
    assert listing(Authorization="Bearer sk-dummy", **{"x-api-key": key})[0] == 401
    assert listing(**{"x-api-key": "bad", "x-goog-api-key": key})[0] == 401
    assert listing(f"/v1/models?key={key}")[0] == 401  # CRED-5: not on OpenAI routes
    for path in (f"/v1beta/models?key={key}", f"/v1beta/models/core:generateContent?alt=sse&key={key}",
                 f"/v1/models/core:countTokens?key={key}"):
        assert listing(path)[0] != 401, path  # identified; what the route answers is not this test's
    assert listing(f"/v1beta/models?key=&key={key}")[0] == 401
    assert listing(f"/v1beta/models?key={key}", **{"x-api-key": "bad"})[0] == 401
    assert listing(Authorization=f"Bearer {key}", Host="evil.example")[0] == 403  # Host first, key or not
    entry = gatekeys.entries()["chat-ui"]
    assert entry["last_used"] and "rpm" not in entry
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "off")
    assert listing(Authorization="Basic nonsense")[0] == 200  # CRED-1: ignored
    err = watch.read()
    assert "GET /v1/models 200 chat-ui\n" in err and "GET /v1/models 401 -\n" in err
    assert "GET /v1/models 200 local" in err and "?key" not in err and "key=" not in err


def test_test7_credentials_in_other_formats(port, keys_on, watch):
    """TEST-7, CRED-2 (3), ERR-1: each format's header or query credential; refusals in the route's shape."""
    demo.set_collection("core", ["alpha"])
    key = watch.add(gatekeys.make("sdk"))
    scoped = watch.add(gatekeys.make("other-only", ["other"]))
    anthropic = {"model": "bench/core", "max_tokens": 100, "messages": [{"role": "user", "content": PROMPT}]}
    status, headers, reply = request(port, "POST", "/v1/messages", anthropic)
    assert status == 401 and reply["error"]["type"] == "authentication_error"
    assert headers["WWW-Authenticate"] == 'Bearer realm="benchwarmers"'
    status, _, reply = request(port, "POST", "/v1/messages", anthropic, {"x-api-key": key})
    assert status == 200 and reply["type"] == "message"
    gemini = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}
    status, _, reply = request(port, "POST", "/v1beta/models/core:generateContent", gemini, {"x-goog-api-key": key})
    assert status == 200 and reply["candidates"]
    status, headers, text = request(port, "POST", f"/v1beta/models/core:streamGenerateContent?alt=sse&key={key}",
                                    gemini)
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream") and "data: " in text
    status, _, reply = request(port, "POST", "/v1beta/models/core:generateContent?key=bwk_nope", gemini)
    assert status == 401 and reply["error"]["status"] == "UNAUTHENTICATED"
    status, _, reply = request(port, "POST", "/v1/messages", anthropic, {"x-api-key": scoped})
    assert status == 403 and reply["error"]["type"] == "permission_error"
    assert reply["error"]["message"].endswith("may call bench/other")
    status, _, reply = request(port, "POST", "/v1/messages", anthropic, {"x-api-key": key, "Host": "evil.example"})
    assert status == 403 and reply["error"]["type"] == "permission_error"
    assert watch.read().count(" sdk\n") == 3


@pytest.mark.parametrize("value, required", [("1", True), ("required", True), ("TRUE", True), (" yes ", True),
                                             ("typo", True), ("off", False), ("0", False), ("No", False),
                                             ("", False), ("false", False)])
def test_test4_require_keys_parsing_fails_closed(monkeypatch, value, required):
    """§2 BENCHWARMERS_REQUIRE_KEYS; §7: no token and no requirement → `local` whatever is sent."""
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", value)
    who, refusal = guard.identify({"Authorization": "Bearer bwk_forged"}, "/v1/models")
    assert (refusal is not None) is required and (who == "local") is (not required)
    assert guard.dashboard_caller({"Authorization": "Bearer bwk_forged"}, "127.0.0.1", 8122) == ("local", None)


def test_test6_scope_cap_and_callers_end_to_end(port, keys_on, watch):
    """SCOPE-1..3, SCOPE-6, RATE-2..4, DSP-2/3, LST-2, TEST-6, improvement 12 (/bench/* scoped)."""
    demo.set_collection("core", ["alpha"])
    demo.set_collection("vision", ["seer"])
    estate = watch.add(gatekeys.make("estate", ["vision"], 2))
    chat_ui = watch.add(gatekeys.make("chat-ui"))
    watch.add(PNG.split(",")[1][200:240])  # any 40 characters of the image would betray it
    as_estate = {"Authorization": f"Bearer {estate}"}
    as_chat = {"Authorization": f"Bearer {chat_ui}"}
    _, _, listed = request(port, "GET", "/v1/models", headers=as_estate)
    assert [row["id"] for row in listed["data"]] == ["bench/vision", "bench/vision:merged", "bench/vision:route",
                                                     "bench/vision:council"]
    assert request(port, "GET", "/v1/models/bench/core", headers=as_estate)[0] == 404
    assert request(port, "GET", "/v1/models/bench/vision", headers=as_estate)[0] == 200
    status, _, reply = request(port, "POST", "/v1/chat/completions", ask_body("bench/nope"), as_estate)
    assert status == 404 and "bench/vision" in message(reply) and "bench/core" not in message(reply)
    status, _, reply = request(port, "POST", "/v1/chat/completions", ask_body("bench/core"), as_estate)
    assert status == 403 and message(reply) == \
        "the gateway key estate may not call bench/core; it may call bench/vision"
    image = {"model": "bench/vision", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What does the screenshot show?"}, {"type": "image_url", "image_url": {"url": PNG}}]}]}
    status, _, vision_reply = request(port, "POST", "/v1/chat/completions", image, as_estate)
    assert status == 200
    status, _, core_reply = request(port, "POST", "/v1/chat/completions", ask_body("bench/core"), as_chat)
    assert status == 200
    assert request(port, "POST", "/v1/chat/completions", ask_body("bench/vision:all", tools=[{}]), as_estate)[0] \
        == 400  # refused after the cap was charged: still counts (RATE-2)
    status, headers, reply = request(port, "POST", "/v1/chat/completions", ask_body("bench/vision"), as_estate)
    assert status == 429 and int(headers["Retry-After"]) >= 1 and "may make 2 requests a minute" in message(reply)
    assert [(line["model"], line["key"]) for line in calls()] == [("bench/vision", "estate"), ("bench/core", "chat-ui")]
    core_call = core_reply["bench"]["seats"][0]["call"]
    vision_call = vision_reply["bench"]["seats"][0]["call"]
    status, headers, reply = request(port, "POST", "/bench/verdict", {"call": vision_call, "useful": True}, as_estate)
    assert status == 429 and "Retry-After" in headers  # /bench/* counts against the cap too (security review 4)
    as_estate = {"Authorization": f"Bearer {watch.add(gatekeys.make('estate-judge', ['vision']))}"}
    status, _, reply = request(port, "POST", "/bench/verdict", {"call": core_call, "useful": True}, as_estate)
    assert status == 404 and "no offload with call id" in message(reply)
    assert request(port, "POST", "/bench/verdict", {"call": vision_call, "useful": True}, as_estate)[0] == 200
    assert request(port, "POST", "/bench/pending", {"calls": [core_call, vision_call]}, as_chat)[2] == \
        {"pending": [core_call]}
    assert request(port, "POST", "/bench/pending", {"calls": [core_call]}, as_estate)[2] == {"pending": []}
    assert request(port, "POST", "/bench/verdict", {"call": core_call, "useful": True}, as_chat)[0] == 200
    assert request(port, "GET", "/bench/record?collection=bench/core", headers=as_estate)[2]["aliases"] == {}
    assert request(port, "GET", "/bench/record?collection=core", headers=as_chat)[2]["aliases"] != {}
    assert gatekeys.revoke("estate-judge")
    assert request(port, "GET", "/v1/models", headers=as_estate)[0] == 401  # KEY-6: at once


def test_issue29_item3_verdict_notes_and_claims_are_bounded_and_a_key_is_capped_a_day(port, keys_on, watch):
    """Issue 29 item 3: a scoped key's 5 MB notes on its own seat are 413 and leave the offload log as it was; a
    note at the bound is kept whole in the log but echoed cut; past `verdicts_per_key_day` the key hears 429 until
    midnight, while another key, a repeat of the verdict in force and a new day are let through."""
    demo.set_collection("core", ["alpha", "beta"])
    fileio.write_atomic(paths.file("config", "gateway.json"), json.dumps({"max_explorers": 0, "verdicts_per_key_day": 3}))
    as_judge = {"Authorization": f"Bearer {watch.add(gatekeys.make('judge', ['core']))}"}
    as_other = {"Authorization": f"Bearer {watch.add(gatekeys.make('other', ['core']))}"}
    status, _, reply = request(port, "POST", "/v1/chat/completions", ask_body("bench/core"), as_judge)
    assert status == 200
    first, second = [seat["call"] for seat in reply["bench"]["seats"]]
    log = paths.file("metrics", "offloads.jsonl")
    size = log.stat().st_size
    for _ in range(3):
        status, _, refused = request(port, "POST", "/bench/verdict",
                                     {"call": first, "useful": True, "note": "x" * 5_242_880}, as_judge)
        assert status == 413 and message(refused) == '"note" is 5,242,880 bytes; the limit is 4,096'
    status, _, refused = request(port, "POST", "/bench/verdict",
                                 {"call": first, "useful": True, "real": ["fine", "é" * 600]}, as_judge)
    assert status == 413 and message(refused) == 'a claim in "real" is 1,200 bytes; the limit is 1,024'
    status, _, refused = request(port, "POST", "/bench/verdict",
                                 {"call": first, "useful": True, "real": ["a"] * 30, "false": ["b"] * 21}, as_judge)
    assert status == 413 and message(refused) == '"real" and "false" hold 51 claims; the limit is 50'
    assert log.stat().st_size == size
    note = "n" * 4_096
    status, _, judged = request(port, "POST", "/bench/verdict",
                                {"call": first, "useful": True, "note": note, "real": ["r" * 1_024]}, as_judge)
    assert status == 200 and judged["recorded"]["note"] == "n" * 200 + "…"
    assert judged["recorded"]["real"] == ["r" * 200 + "…"] and "task" not in judged["recorded"]
    assert fileio.read_jsonl(log)[-1]["note"] == note and size < log.stat().st_size < size + 6_000
    for verdict in ({"call": second, "useful": False}, {"call": first, "useful": False}):
        assert request(port, "POST", "/bench/verdict", verdict, as_judge)[0] == 200
    size = log.stat().st_size
    status, headers, refused = request(port, "POST", "/bench/verdict", {"call": second, "useful": True}, as_judge)
    assert status == 429 and message(refused) == ("the gateway key judge has added 3 verdicts today "
                                                  "(verdicts_per_key_day in config/gateway.json); try again tomorrow")
    assert 1 <= int(headers["Retry-After"]) <= 86_401 and log.stat().st_size == size
    assert request(port, "POST", "/bench/verdict", {"call": first, "useful": False}, as_judge)[0] == 200  # in force
    assert request(port, "POST", "/bench/verdict", {"call": second, "useful": True}, as_other)[0] == 200
    counts = paths.file("runs", "gateway", "verdicts.json")
    yesterday = (datetime.date.today() - datetime.timedelta(days=1)).isoformat()
    fileio.write_atomic(counts, json.dumps({"day": yesterday, "keys": {"judge": 3}}))
    assert request(port, "POST", "/bench/verdict", {"call": second, "useful": False}, as_judge)[0] == 200
    assert fileio.read_json(counts) == {"day": datetime.date.today().isoformat(), "keys": {"judge": 1}}


def test_imp11_rate_cap_counts_across_two_server_processes(storage, port, keys_on, watch):
    """Improvement 11 (and RATE-5's per-process residual gone): one window in the data folder for all servers."""
    demo.set_collection("core", ["alpha"])
    key = watch.add(gatekeys.make("agent", rpm=2))
    other = free_port()
    process = subprocess.Popen([sys.executable, "gateway.py", "--port", str(other)], cwd=paths.CODE, text=True,
                               env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout.readline().startswith(f"bench gateway on http://127.0.0.1:{other}/v1")
        sent = {"Authorization": f"Bearer {key}"}
        assert request(port, "POST", "/v1/chat/completions", ask_body(), sent)[0] == 200
        assert request(other, "POST", "/v1/chat/completions", ask_body(), sent)[0] == 200
        for target in (port, other):
            status, headers, _ = request(target, "POST", "/v1/chat/completions", ask_body(), sent)
            assert status == 429 and 1 <= int(headers["Retry-After"]) <= 61
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert "POST /v1/chat/completions 429 agent" in err
    for secret in watch.secrets:
        assert secret not in err


# -- CORS ---------------------------------------------------------------------------------------

def test_test6_cors_for_allowed_origins_only(port, keys_on, monkeypatch, watch):
    """CORS-1..6, WRITE-2, ERR-1 (OPTIONS refusals), improvements 5 and 16."""
    monkeypatch.setenv("BENCH_ALLOWED_ORIGINS", "http://App.example:5173/")
    key = watch.add(gatekeys.make("browser-app"))
    app = "http://app.example:5173"

    def preflight(path="/v1/chat/completions", origin=app, asked=None):
        headers = {"Origin": origin, "Access-Control-Request-Method": "POST"}
        if asked is not None:
            headers["Access-Control-Request-Headers"] = asked
        return request(port, "OPTIONS", path, headers=headers)

    status, headers, body = preflight(asked="authorization, content-type, x-stainless-os")
    assert (status, body) == (204, None)
    assert headers["Access-Control-Allow-Origin"] == app and headers["Vary"] == "Origin"
    assert headers["Access-Control-Allow-Methods"] == "GET, POST, OPTIONS"
    assert headers["Access-Control-Allow-Headers"] == \
        "Authorization, Content-Type, authorization, content-type, x-stainless-os"
    assert headers["Access-Control-Max-Age"] == "600" and "Access-Control-Allow-Credentials" not in headers
    assert "X-Bench-Panel" in headers["Access-Control-Expose-Headers"]
    assert preflight(origin="HTTP://APP.EXAMPLE:5173")[1]["Access-Control-Allow-Origin"] == "HTTP://APP.EXAMPLE:5173"
    for asked in ("x-ok; not a name", "x-a,\n x-b", ",".join(["x"] * 33), "x" * 65):
        assert preflight(asked=asked)[1]["Access-Control-Allow-Headers"] == "Authorization, Content-Type", asked
    assert preflight(asked="x-a,\tx-b")[1]["Access-Control-Allow-Headers"].endswith("x-a,\tx-b")
    # a folded request header arrives holding CR LF: never echoed (improvement 5)
    status, headers, _ = raw(port, (f"OPTIONS /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nOrigin: {app}\r\n"
                                    "Access-Control-Request-Headers: x-a,\r\n Set-Cookie: x=1\r\n\r\n").encode())
    assert status == 204 and headers["access-control-allow-headers"] == "Authorization, Content-Type"
    assert "set-cookie" not in headers
    with pytest.raises(ValueError):
        httpserver.Handler.send_header(object.__new__(httpserver.Handler), "X-Echo", "a\r\nSet-Cookie: x=1")
    status, headers, reply = preflight(origin="https://evil.example")
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    assert message(reply) == ("Origin 'https://evil.example' is not allowed; set BENCH_ALLOWED_ORIGINS or "
                              "BENCHWARMERS_PUBLIC_URL to add one")
    status, _, reply = request(port, "OPTIONS", "/v1/models")
    assert status == 403 and "'(none)'" in message(reply)
    assert preflight(path="/chat/completions")[0] == 501  # ROUTE-4: bare aliases get no CORS
    assert preflight(path="/nowhere")[0] == 501
    status, headers, _ = request(port, "GET", "/v1/models", headers={"Origin": app})
    assert status == 401 and headers["Access-Control-Allow-Origin"] == app  # CORS-3 on a 401 too
    status, headers, _ = request(port, "GET", "/v1/models", headers={"Origin": app, "Authorization": f"Bearer {key}"})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == app and headers["Vary"] == "Origin"
    assert "Access-Control-Allow-Origin" not in request(port, "GET", "/v1/models",
                                                        headers={"Authorization": f"Bearer {key}"})[1]
    cross = {"Sec-Fetch-Site": "cross-site", "Authorization": f"Bearer {key}"}
    status, headers, reply = request(port, "POST", "/bench/verdict", {"call": "x"}, {**cross, "Origin": app})
    assert status == 400 and "useful" in message(reply) and headers["Access-Control-Allow-Origin"] == app
    status, headers, _ = request(port, "POST", "/bench/verdict", {"call": "x"},
                                 {**cross, "Origin": "https://evil.example"})
    assert status == 403 and "Access-Control-Allow-Origin" not in headers
    assert request(port, "POST", "/bench/verdict", {"call": "x"}, cross)[0] == 403  # cross-site needs an Origin
    monkeypatch.setenv("BENCHWARMERS_PUBLIC_URL", "https://bench.example.com")
    assert preflight(origin="https://bench.example.com:443")[0] == 204  # improvement 16


# -- abuse: slow clients, many clients, big heads ------------------------------------------------

def test_imp1_slow_loris_is_dropped_at_the_deadline_while_others_are_served(server, port, watch):
    """Improvement 1: a client sending a byte a second (head or body) holds its thread only until the deadline."""
    server.read_timeout = 2.0
    stop = threading.Event()
    results = {}

    def trickle(name, first, drip):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            started = time.monotonic()
            sock.sendall(first)
            for byte in drip:
                if stop.wait(1.0):
                    break
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    break
                sock.settimeout(0.01)
                try:
                    if sock.recv(1) == b"":
                        break
                except TimeoutError:
                    continue
                except OSError:
                    break
            results[name] = time.monotonic() - started

    host = f"Host: 127.0.0.1:{port}\r\n".encode()
    body_head = (b"POST /bench/pending HTTP/1.0\r\n" + host + b"Content-Type: application/json\r\n"
                 b"Content-Length: 200\r\n\r\n")
    slow = [threading.Thread(target=trickle, args=("head", b"G", b"ET /v1/models HTTP/1.0\r\n" + host * 10)),
            threading.Thread(target=trickle, args=("body", body_head, b" " * 200))]
    for thread in slow:
        thread.start()
    for _ in range(5):
        assert request(port, "GET", "/v1/models")[0] == 200  # served meanwhile
    for thread in slow:
        thread.join(10)
    stop.set()
    assert 1.8 <= results["head"] < 4 and 1.8 <= results["body"] < 4, results
    assert watch.read().count("Request timed out") == 2


def test_imp2_300_concurrent_connections_are_served_or_told_503(server, port, watch):
    """Improvement 2: beyond the cap a connection gets 503 + Retry-After, never silence."""
    server.read_timeout = 10.0
    server.max_per_address = server.max_connections  # the whole cap from one address (issue 21's cap is its own test)
    held = []
    request_head = f"GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n".encode()
    try:
        for _ in range(server.max_connections):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(request_head)  # the blank line comes later: each holds a handler thread
            held.append(sock)
        deadline = time.monotonic() + 10
        while server.open < server.max_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.open == server.max_connections
        extra = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(300 - len(held))]
        answers = []
        for sock in extra:
            sock.sendall(request_head + b"\r\n")
        for sock in extra + held:
            if sock in held:
                sock.sendall(b"\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            answers.append(answer)
    finally:
        for sock in held + extra:
            sock.close()
    statuses = [int(a.split(b" ", 2)[1]) for a in answers]
    assert len(statuses) == 300 and statuses.count(200) == 256 and statuses.count(503) == 44
    busy = answers[0].decode()
    assert "Retry-After: 1" in busy and '"code": 503' in busy and "nosniff" in busy
    assert request(port, "GET", "/health")[0] == 200
    assert watch.read().count("GET /health 503 - 127.0.0.1") == 44


def test_imp3_srv3_request_line_and_header_limits(port):
    """Improvement 3: 414 over 8 KiB of request line; 431 for a long header line, too many or too much."""
    host = f"Host: 127.0.0.1:{port}\r\n"
    assert raw(port, f"GET /{'a' * 8200} HTTP/1.0\r\n{host}\r\n".encode())[0] == 414
    assert raw(port, f"GET /v1/models HTTP/1.0\r\n{host}X-Long: {'a' * 8200}\r\n\r\n".encode())[0] == 431
    many = "".join(f"X-{i}: a\r\n" for i in range(101))
    assert raw(port, f"GET /v1/models HTTP/1.0\r\n{host}{many}\r\n".encode())[0] == 431
    large = "".join(f"X-{i}: {'a' * 7000}\r\n" for i in range(10))
    assert raw(port, f"GET /v1/models HTTP/1.0\r\n{host}{large}\r\n".encode())[0] == 431
    fine = "".join(f"X-{i}: {'a' * 7000}\r\n" for i in range(8))
    assert raw(port, f"GET /v1/models HTTP/1.0\r\n{host}{fine}\r\n".encode())[0] == 200


def test_srv1_issue35_a_connection_is_kept_only_where_no_byte_can_be_read_as_the_next_request(server, port, keys_on,
                                                                                          watch, monkeypatch):
    """SRV-1, FMT-1: an HTTP/1.1 client keeps its connection across plain replies, and each request names its own
    caller; a body left unread, a GET's body, `Transfer-Encoding`, HTTP/1.0, the last of MAX_REQUESTS and an
    idle connection all end it, so nothing a client sends after a reply's end is read as a request."""
    key = watch.add(gatekeys.make("kept"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {key}"})
    first = conn.getresponse()
    first.read()
    kept = conn.sock
    conn.request("GET", "/v1/models")
    second = conn.getresponse()
    second.read()
    assert (first.status, first.version, first.getheader("Connection")) == (200, 11, None)
    assert second.status == 401 and conn.sock is kept  # the key of the request before is not carried over
    conn.close()
    host = f"Host: 127.0.0.1:{port}\r\n".encode()
    smuggled = b"GET /v1/models HTTP/1.1\r\n" + host + b"\r\n"
    post = b"POST /v1/chat/completions HTTP/1.1\r\n" + host
    for sent in (b"GET /health HTTP/1.1\r\n" + host + b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled,
                 post + b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled,
                 post + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + b"%x\r\n" % len(smuggled) + smuggled + b"\r\n0\r\n\r\n"):
        status, headers, body = raw(port, sent)
        assert status in (200, 411, 415) and headers["connection"] == "close" and b"HTTP/1." not in body, sent
    status, headers, body = raw(port, b"GET /health HTTP/1.0\r\n" + host + b"\r\n")
    assert status == 200 and "connection" not in headers and body == b'{"ok": true}'
    monkeypatch.setattr(httpserver, "MAX_REQUESTS", 2)
    health = b"GET /health HTTP/1.1\r\n" + host + b"\r\n"
    status, headers, body = raw(port, health * 3)  # pipelined: the second reply says close, the third is never read
    assert status == 200 and "connection" not in headers and body.count(b"HTTP/1.1 200") == 1
    assert b"Connection: close" in body and body.count(b'{"ok": true}') == 2
    monkeypatch.setattr(httpserver, "KEEP_IDLE", 0.2)
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(health)
        began, answer = time.monotonic(), b""
        while chunk := sock.recv(65536):
            answer += chunk
        assert answer.count(b"HTTP/1.1 200") == 1 and time.monotonic() - began < 5  # closed once idle 0.2 s
    monkeypatch.setattr(httpserver, "KEEP_IDLE", 30)
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(health)
        answer = sock.recv(65536)
        while answer.count(b'{"ok": true}') < 1:
            answer += sock.recv(65536)
        began = time.monotonic()
        server.server_close()  # a stopping server ends a kept connection waiting for its next request at once
        assert sock.recv(65536) == b"" and time.monotonic() - began < 5


def test_imp23_imp6_imp19_head_and_reply_headers(port, keys_on, watch):
    """Improvement 23 (HEAD), 6 (nosniff, framing), 19 (Server only to identified callers), SRV-2."""
    key = watch.add(gatekeys.make("monitor"))
    status, headers, body = raw(port, f"HEAD /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n"
                                      f"Authorization: Bearer {key}\r\n\r\n".encode())
    assert status == 200 and body == b"" and int(headers["content-length"]) > 10
    assert headers["server"].startswith("benchwarmers/")
    for sent in (b"GET /v1/models HTTP/1.0\r\nHost: evil\r\n\r\n", b"PUT /v1/models HTTP/1.0\r\n\r\n",
                 b"GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n" % port, b"HEAD /v1/models HTTP/1.0\r\n\r\n"):
        status, headers, _ = raw(port, sent)
        assert status in (401, 403, 501), sent
        assert "server" not in headers and headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY" and headers["content-security-policy"] == "frame-ancestors 'none'"


# -- the access log -------------------------------------------------------------------------------

def test_log_test7_access_log_never_holds_a_query_key_or_control_character(port, keys_on, monkeypatch, watch):
    """LOG-1..6, GW-11/12, TEST-7's malformed request line, improvement 20 (client address with BENCH_LOG_ADDRESS=1,
    opt-in proxy)."""
    monkeypatch.setenv("BENCH_LOG_ADDRESS", "1")
    key = watch.add(gatekeys.make("chat-ui"))
    raw(port, f"GET /v1beta/models/x%0a\u00e9?key={key}&code=abc HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
        .encode("latin-1"))
    assert raw(port, f"GET /v1/models?key={key} x HTTP/1.0\r\n\r\n".encode())[0] == 400  # quoted in a diagnostic
    raw(port, f"GET /bench\x1b[31mred?key={key} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    monkeypatch.setenv("BENCH_TRUST_FORWARDED", "1")
    request(port, "GET", "/v1/models", headers={"Authorization": f"Bearer {key}",
                                                "X-Forwarded-For": "198.51.100.1, 203.0.113.9"})
    err = watch.read()
    lines = err.splitlines()
    assert re.search(r" GET /v1beta/models/x%0a\\xe9 \d+ chat-ui 127\.0\.0\.1\n", err), err
    assert " GET /bench\\x1b[31mred 401 - 127.0.0.1\n" in err
    assert "Bad request syntax ('GET /v1/models?key=... x HTTP/1.0')" in err and "code=abc" not in err
    assert " - - 400 - 127.0.0.1\n" in err
    assert any(line.endswith("GET /v1/models 200 chat-ui 203.0.113.9") for line in lines), err
    assert "\x1b" not in err


# -- admin token, cookie and login (the dashboard's shared pieces) ----------------------------------

def test_test3_session_cookie_and_admin_bearer(monkeypatch, watch):
    """ADM-1, ADM-3, ADM-4, ADM-6, TEST-3, improvement 8 (logout cookie); issue 29 items 5, 6 (lifetime, port)."""
    watch.add(TOKEN)
    assert guard.session_cookie(8122) and not guard.session_valid(guard.session_cookie(8122).split(";")[0], 8122)
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    cookie = guard.session_cookie(8122, now=1_000)
    value = cookie.split(";")[0]
    assert cookie == f"{value}; Path=/; Max-Age=28800; HttpOnly; SameSite=Strict" and TOKEN not in cookie
    assert value.startswith("bw_session_8122=29800.")
    fresh = guard.session_cookie(8122).split(";")[0]
    assert guard.session_valid(fresh, 8122) and guard.session_valid(f"theme=dark; {fresh}; other=1", 8122)
    expiry, signature = fresh.split("=", 1)[1].split(".")
    epoch = fileio.read_json(guard.sessions_path())["epoch"]
    for bad in ("", "bw_session_8122=", fresh + "0", f"bw_session_8122={int(expiry) + 1}.{signature}",
                "bw_session_8122=1.abc", f"bw_session_8122=\u00b2{expiry[1:]}.{signature}", 'bw_session_8122=x="',
                "bw_session_8122=0." + guard._signature(0, TOKEN, epoch, 8122), "other=1", f"bw_session={expiry}.{signature}",
                f"bw_session_8123={expiry}.{signature}",  # another port's name: signed for 8122
                f"bw_session_8122={int(expiry) + 86_400}." + guard._signature(int(expiry) + 86_400, TOKEN, epoch, 8122)):
        assert not guard.session_valid(bad, 8122), bad
    assert not guard.session_valid(fresh, 8123)
    monkeypatch.setenv("BENCH_SESSION_HOURS", "0.001")  # shortened: longer sessions end at once
    assert not guard.session_valid(fresh, 8122)
    monkeypatch.setenv("BENCH_SESSION_HOURS", "1e999")  # not a number of hours: the default
    assert guard.session_seconds() == 28_800 and guard.session_valid(fresh, 8122)
    assert any("BENCH_SESSION_HOURS='1e999'" in w for w in guard.startup_warnings())
    monkeypatch.delenv("BENCH_SESSION_HOURS")
    assert guard.admin_matches(TOKEN) and not guard.admin_matches(TOKEN + "x") and not guard.admin_matches(TOKEN[:23])
    assert guard.dashboard_caller({"Authorization": f"bearer  {TOKEN} "}, "a", 8122) == ("admin", None)
    assert guard.dashboard_caller({"Cookie": fresh}, "a", 8122) == ("admin", None)
    assert guard.dashboard_caller({"Cookie": fresh}, "a", 8123)[1][0] == 401
    assert guard.dashboard_caller({"Authorization": f"Basic {TOKEN}", "Cookie": fresh}, "a", 8122) == ("admin", None)
    assert guard.dashboard_caller({"Authorization": f"Basic {TOKEN}"}, "a", 8122)[1][0] == 401
    who, refusal = guard.dashboard_caller({"Authorization": "Bearer wrong", "Cookie": fresh}, "a", 8122)
    assert who is None and refusal[1] == "that bearer is not the admin token (a gateway key opens /v1 only)"
    assert guard.dashboard_caller({}, "a", 8122)[1][1].startswith("sign in first")
    assert guard.dashboard_caller({"Authorization": "Bearer "}, "a", 8122)[1][1].startswith("sign in first")
    key = watch.add(gatekeys.make("chat-ui"))
    assert guard.dashboard_caller({"Authorization": f"Bearer {key}"}, "a", 8122)[0] is None  # a key never opens it
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN + "-rotated")
    assert not guard.session_valid(fresh, 8122)  # a new token signs everyone out
    monkeypatch.setenv("BENCHWARMERS_PUBLIC_URL", "https://bench.example.com")
    assert guard.session_cookie(8122).endswith("; Secure")
    assert guard.logout_cookie(8122) == "bw_session_8122=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure"


def test_imp4_login_backoff_per_address(monkeypatch, watch):
    """ADM-2 outcomes and improvement 4: 10 failures a minute → 429 + Retry-After, right token included."""
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", watch.add(TOKEN))
    monkeypatch.setattr(guard, "LOGINS", guard.Backoff())
    assert guard.login(None, "a", 8122)[:2] == (400, 'send {"token": "..."}')
    assert guard.login([TOKEN], "a", 8122)[0] == 400
    status, _, headers = guard.login({"token": TOKEN}, "a", 8122)
    assert status == 200 and headers["Set-Cookie"].startswith("bw_session_8122=")
    for guess in range(10):
        assert guard.login({"token": f"guess-{guess}"}, "b", 8122)[:2] == (401, "that is not the admin token")
    status, text, headers = guard.login({"token": TOKEN}, "b", 8122)
    assert status == 429 and 1 <= int(headers["Retry-After"]) <= 61 and "try again" in text
    assert guard.dashboard_caller({"Authorization": f"Bearer {TOKEN}"}, "b", 8122)[1][0] == 429
    assert guard.login({"token": TOKEN}, "c", 8122)[0] == 200  # other addresses are not held up
    for guess in range(10):
        guard.dashboard_caller({"Authorization": f"Bearer guess-{guess}"}, "d", 8122)
    assert guard.login({"token": TOKEN}, "d", 8122)[0] == 429


def test_issue29_item7_clients_are_grouped_as_the_connection_cap_groups_them():
    """Item 7: the login backoff and the connection cap count a client by one function: an IPv4 address alone, an
    IPv6 one by its /64, an IPv4-mapped one as its IPv4 address."""
    assert guard.client_group("127.0.0.7") == "127.0.0.7" != guard.client_group("127.0.0.8")
    assert guard.client_group("2001:db8:1:2::7") == guard.client_group("2001:db8:1:2:ffff::1") == "2001:db8:1:2::/64"
    assert guard.client_group("2001:db8:1:3::7") != guard.client_group("2001:db8:1:2::7")
    assert guard.client_group("::ffff:192.0.2.5") == "192.0.2.5" and guard.client_group("fe80::1%eth0") == "fe80::/64"
    assert guard.client_group("not-an-address" * 10) == ("not-an-address" * 10)[:64]
    server = httpserver.Server(("::1", 0), httpserver.Handler)
    try:
        assert server.address_key(("2001:db8:1:2::7", 1, 0, 0)) == guard.client_group("2001:db8:1:2::7")
        assert server.address_key(("::ffff:192.0.2.5", 1, 0, 0)) == "192.0.2.5"
    finally:
        server.server_close()


def test_imp22_last_used_never_waits_for_a_busy_key_file(port, keys_on, watch):
    """KEY-8 with improvement 22: a locked key file skips the `last_used` write instead of delaying the call."""
    key = watch.add(gatekeys.make("poller"))
    with fileio.lock(gatekeys.path()):
        started = time.monotonic()
        assert request(port, "GET", "/v1/models", headers={"Authorization": f"Bearer {key}"})[0] == 200
        assert time.monotonic() - started < 1
    assert "last_used" not in gatekeys.entries()["poller"]
    assert request(port, "GET", "/v1/models", headers={"Authorization": f"Bearer {key}"})[0] == 200
    stamped = gatekeys.entries()["poller"]["last_used"]
    assert request(port, "GET", "/v1/models", headers={"Authorization": f"Bearer {key}"})[0] == 200
    assert gatekeys.entries()["poller"]["last_used"] == stamped  # at most one write a minute
