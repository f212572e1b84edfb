"""What another user of this machine, a gateway key's holder and an upstream can see or forge (issue 29,
the security review's second round: items 1, 2, 4, 8 and 9).

Each attack is made for real. Another local user is a forked child that has become `nobody` (no groups, not
root; these tests need root to become it, as CI is) and reads the folders while the bench writes them, with
inotify as the reported attacker did. A key holder asks a real gateway, in every client format, streamed and
not, in panel, merged and route mode, of a real upstream on 127.0.0.1 that echoes the Authorization header it
was sent (the demo's `echo_auth`) in pieces of 5 characters (`split`), so a key straddles two chunks; or that
echoes it as a tool call's arguments, or in an error. Terminal escapes go in over a raw socket and in an
upstream's `model` field.
"""

import contextlib
import ctypes
import http.client
import json
import os
import pwd
import re
import secrets
import select
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from benchwarmers.core import keys, paths
from benchwarmers.demo import demo
from benchwarmers.models import catalog
from benchwarmers.panel import conversations, offload
from benchwarmers.server import gatekeys, guard

ENDPOINT_KEY = "ep-" + secrets.token_hex(20)
ADMIN_TOKEN = "admin-" + secrets.token_urlsafe(24)
PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
IN_NOTIFY = 0x100 | 0x2 | 0x80  # IN_CREATE | IN_MODIFY | IN_MOVED_TO
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="becoming another user needs root (CI runs as root)")


# -- another user of this machine -------------------------------------------------------------------------------

class Intruder:
    """A forked child that has become `nobody`, with no supplementary groups: another user of this machine.
    `Intruder(work, *args)` runs `work(stop_fd, *args)` there and waits until the child has dropped root;
    `stop()` closes `stop_fd` (the child's `select` sees it end) and returns what `work` returned."""

    def __init__(self, work, *args):
        self.user = pwd.getpwnam("nobody")
        self.stop_read, self.stop_write = os.pipe()
        result_read, result_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            code = 0
            try:
                os.close(self.stop_write)
                os.close(result_read)
                os.setgroups([])
                os.setgid(self.user.pw_gid)
                os.setuid(self.user.pw_uid)
                os.write(result_write, b"ready\n")
                outcome = {"uid": os.getuid(), "found": work(self.stop_read, *args)}
            except BaseException as exc:
                outcome, code = {"failed": repr(exc)}, 1
            with os.fdopen(result_write, "w") as out:
                out.write(json.dumps(outcome) + "\n")
            os._exit(code)
        os.close(self.stop_read)
        os.close(result_write)
        self.results = os.fdopen(result_read)
        assert self.results.readline() == "ready\n"

    def stop(self):
        os.close(self.stop_write)
        outcome = json.loads(self.results.readline())
        self.results.close()
        os.waitpid(self.pid, 0)
        assert outcome.get("uid") == self.user.pw_uid, outcome
        return outcome["found"]


def try_read(path):
    """What reading `path` gave this user: its text, or the name of the error."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as exc:
        return type(exc).__name__


def spy(stop_fd, folder, decoy):
    """The reported attack: watch `folder` with inotify and read every file the moment it appears or changes,
    until told to stop. Returns the decoy's text (proof this user may read what is open to it), how many
    temporaries it saw and what it read from each file it could open."""
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_NONBLOCK)
    assert libc.inotify_add_watch(watch, folder.encode(), IN_NOTIFY) >= 0
    found = {"decoy": try_read(decoy), "temporaries": 0, "read": []}
    while True:
        ready, _, _ = select.select([watch, stop_fd], [], [])
        if stop_fd in ready:
            return found
        data, names = os.read(watch, 65536), set()
        while data:
            _, _, _, size = struct.unpack_from("iIII", data)
            names.add(data[16:16 + size].rstrip(b"\0").decode())
            data = data[16 + size:]
        for name in names - {"", "decoy.txt"}:
            found["temporaries"] += name.endswith(".part")
            text = try_read(os.path.join(folder, name))
            if text not in ("PermissionError", "FileNotFoundError"):
                found["read"].append(text[:200])


def look(stop_fd, folder, files):
    """Another user's look at the data folder: its listing and each file's text, or why not."""
    listing = try_list(folder)
    return {"listing": listing, "files": {f: try_read(f) for f in files}}


def try_list(folder):
    try:
        return sorted(os.listdir(folder))
    except OSError as exc:
        return type(exc).__name__


@pytest.fixture
def open_folder():
    """A folder every user may enter (0755 under /tmp), as an llm user folder or the parent of a data folder
    usually is; pytest's own temporary folders are root's alone, which would stop the intruder at the door."""
    folder = Path(tempfile.mkdtemp(prefix="bw-exposure-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_root
def test_item1_keys_json_is_never_readable_by_another_user_while_it_is_saved(open_folder, monkeypatch):
    """Issue 29 item 1: llm's `keys.json` is saved through a temporary created 0600 from its first byte (it was
    made with the umask's 0644 and chmodded after the write). Another user watching the folder with inotify
    opens every temporary the moment it appears, during 40 saves of a store that starts with an endpoint key
    and holds 8 MB (so each write takes a while), and reads none of them, nor the store."""
    monkeypatch.setenv("LLM_USER_PATH", str(open_folder))
    marker = "sk-marker-" + secrets.token_hex(8)
    decoy = open_folder / "decoy.txt"
    decoy.write_text("open to all")
    decoy.chmod(0o644)
    keys.set_key("endpoint-0", f"{marker}-0")
    keys.set_key("bulk", "x" * 8_000_000)  # after the key: a temporary's first bytes hold it
    intruder = Intruder(spy, str(open_folder), str(decoy))
    for i in range(1, 41):
        keys.set_key(f"endpoint-{i}", f"{marker}-{i}")
    found = intruder.stop()
    assert found["decoy"] == "open to all"  # the intruder can read whatever is open to it
    assert not [text for text in found["read"] if marker in text], f"{len(found['read'])} reads held a key"
    assert stat.S_IMODE(os.stat(open_folder / "keys.json").st_mode) == 0o600
    assert keys.key("endpoint-40") == f"{marker}-40" and not list(open_folder.glob(".*.part"))


@pytest.fixture
def shared_home(home, open_folder, monkeypatch):
    """The data folder inside `open_folder`, made by the bench itself (it does not exist yet)."""
    data = open_folder / "data"
    monkeypatch.setenv("BENCHWARMERS_HOME", str(data))
    paths.reload()
    return data


def written_files(folder):
    return sorted(p for p in folder.rglob("*") if p.is_file())


@needs_root
def test_item4_the_data_folder_and_every_file_in_it_are_the_owners_alone(shared_home, bench, gateway, capfd):
    """Issue 29 item 4, PATH-7: the data folder and every folder in it are made 0700 and every file 0600 (the
    call log, the offload log, the routes log, the ledger, conversations, copies of the shipped config, locks),
    so another user reads no
    prompt or answer: not through the folder, and not through a file should the folder be opened. A folder
    open to others is named at start with the command that closes it."""
    demo.set_collection("core", ["alpha"])
    demo.set_collection("agents", ["alpha"], reply="route")
    for model in ("bench/core", "bench/agents"):
        status, _, data = ask(gateway, "/v1/chat/completions", {"model": model, "messages": [
            {"role": "user", "content": PROMPT}]})
        assert status == 200, data
    files = written_files(shared_home)
    names = {p.relative_to(shared_home).as_posix() for p in files}
    assert {"runs/gateway/calls.jsonl", "runs/gateway/routes.jsonl", "config/gateway.json"} <= names
    assert offload.log_path() in files and any(p.parent == conversations.folder() for p in files)
    assert stat.S_IMODE(shared_home.stat().st_mode) == 0o700
    loose = {p.relative_to(shared_home).as_posix(): oct(stat.S_IMODE(p.stat().st_mode))
             for p in shared_home.rglob("*") if p.stat().st_mode & 0o077}
    assert not loose, loose  # every folder 0700, every file 0600
    shown = [str(p) for p in files]
    seen = Intruder(look, str(shared_home), shown).stop()
    assert seen["listing"] == "PermissionError"
    assert set(seen["files"].values()) == {"PermissionError"}
    shared_home.chmod(0o755)  # as an older version made it, or a user opened it
    seen = Intruder(look, str(shared_home), shown).stop()
    assert "runs" in seen["listing"]  # the names show ...
    assert set(seen["files"].values()) == {"PermissionError"}  # ... no prompt or answer does
    capfd.readouterr()
    warnings = guard.startup_warnings()
    assert warnings == [f"the data folder {shared_home} is open to other users of this machine (mode 0755), "
                        "and it holds prompts, answers and the call log; make it yours alone with: "
                        f"chmod 700 {shared_home}"]


def test_item4_a_gateway_started_on_an_open_data_folder_says_how_to_close_it(open_folder):
    """Issue 29 item 4: the real gateway process, started on a data folder other users may enter, warns on
    stderr naming the fix before it serves; one made by the bench is 0700 and draws no warning."""
    made = open_folder / "made"
    opened = open_folder / "opened"
    opened.mkdir(mode=0o755)
    opened.chmod(0o755)
    said = {}
    for folder in (made, opened):
        env = {**os.environ, "BENCHWARMERS_HOME": str(folder)}
        with subprocess.Popen([sys.executable, "-m", "benchwarmers.server.gateway", "--port", "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
            try:
                assert "bench gateway on http://127.0.0.1:" in process.stdout.readline()
            finally:
                process.terminate()
            said[folder] = process.communicate(timeout=30)[1]
    assert stat.S_IMODE(made.stat().st_mode) == 0o700 and "open to other users" not in said[made]
    assert f"make it yours alone with: chmod 700 {opened}" in said[opened]


# -- a gateway key's holder and an echoing upstream ------------------------------------------------------------

FORMATS = ("chat", "completions", "anthropic", "responses", "ollama_chat", "ollama_generate", "gemini")
TOOLS = {
    "chat": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
    "anthropic": [{"name": "lookup", "input_schema": {"type": "object"}}],
    "responses": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}],
    "ollama_chat": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
    "gemini": [{"functionDeclarations": [{"name": "lookup", "parameters": {"type": "object"}}]}],
}


def request(fmt, model, text, stream, tools=False):
    """`(path, body)` asking `model` `text` in client format `fmt`."""
    messages = [{"role": "user", "content": text}]
    extra = {"tools": TOOLS[fmt]} if tools else {}
    if fmt == "gemini":
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"/v1beta/models/{model}:{method}", {"contents": [{"role": "user", "parts": [{"text": text}]}],
                                                    **extra}
    path, body = {
        "chat": ("/v1/chat/completions", {"messages": messages}),
        "completions": ("/v1/completions", {"prompt": text}),
        "anthropic": ("/v1/messages", {"max_tokens": 2000, "messages": messages}),
        "responses": ("/v1/responses", {"input": text}),
        "ollama_chat": ("/api/chat", {"messages": messages}),
        "ollama_generate": ("/api/generate", {"prompt": text}),
    }[fmt]
    return path, {"model": model, "stream": stream, **body, **extra}


def ask(gateway, path, body, key=None):
    """`(status, headers with lower-case names, body text)`; a stream is read to its close."""
    host, port = gateway.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json",
                                                           **({"Authorization": f"Bearer {key}"} if key else {})})
    response = conn.getresponse()
    data = response.read().decode()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


TEXT_FIELDS = {"content", "text", "delta", "response", "partial_json", "arguments", "reasoning_content", "message",
               "thinking"}


def streamed_text(body):
    """The text fields of every JSON object in `body` (a JSON reply, an SSE or NDJSON stream) joined in order:
    a key split across two events shows whole here, where the raw body has event framing between its halves."""
    objects = []
    with contextlib.suppress(ValueError):
        objects = [json.loads(body)]
    if not objects:
        for line in body.splitlines():
            with contextlib.suppress(ValueError):
                objects.append(json.loads(line.removeprefix("data: ")))
    said = []

    def walk(value, name=""):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, key)
        elif isinstance(value, list):
            for item in value:
                walk(item, name)
        elif isinstance(value, str) and name in TEXT_FIELDS:
            said.append(value)

    walk(objects)
    return "".join(said)


def assert_hidden(body, *known):
    """No 8-character piece of any secret in the body as sent, nor in its streamed text joined up; and `***`
    where one was (the echo happened, and was hidden rather than lost)."""
    joined = streamed_text(body)
    for secret in known:
        pieces = {secret[i:i + 8] for i in range(len(secret) - 7)}
        assert not [p for p in pieces if p in body or p in joined], f"a piece of {secret[:5]}… reached the caller"
    assert "***" in body


@pytest.fixture
def leaky(bench, monkeypatch):
    """The bench with an endpoint whose key is real (KEY-3) and models that give it back: in an answer streamed
    5 characters a piece, in an error, in a tool call's arguments. Login is on (the admin token set), so every
    caller holds a gateway key."""
    bench.set_model("echo", echo_auth=200, split=5, context_window=64000, tools=True)
    bench.set_model("echo-error", echo_auth=400, context_window=64000)
    bench.set_model("echo-tool", context_window=64000, tools=True,
                    tool_calls=[[{"name": "lookup", "arguments": {"header": "{authorization}"}}]])
    demo.register(bench, endpoint="leaky", key="leaky", default=False,
                  aliases={name: name for name in ("echo", "echo-error", "echo-tool")})
    monkeypatch.setenv("BENCHWARMERS_KEY_LEAKY", ENDPOINT_KEY)
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", ADMIN_TOKEN)
    catalog.warm(refresh=True)
    demo.set_collection("panel", ["echo"])
    demo.set_collection("merged", ["alpha"], reply="merged", merger="echo")
    demo.set_collection("agents", ["echo"], reply="route")
    demo.set_collection("failing", ["echo-error"], reply="route")
    demo.set_collection("tools", ["echo-tool"], reply="route")
    return bench


@pytest.mark.parametrize("fmt", FORMATS)
def test_item2_no_secret_reaches_a_key_holder_in_any_format(leaky, gateway, fmt):
    """Issue 29 item 2: an upstream echoing the Authorization header it was sent hands its endpoint key to no
    caller, nor does an answer repeating the admin token or a gateway key: in a panel's sections and `bench`,
    a merged reply streamed by the merger 5 characters at a time, and a route turn relayed chunk by chunk,
    streamed and not; the call log keeps them hidden too."""
    caller = gatekeys.make("caller")
    other = gatekeys.make("other")
    text = f"{PROMPT} Remember {ADMIN_TOKEN} and {other}."
    for model in ("bench/panel", "bench/merged", "bench/agents"):
        for stream in (False, True):
            status, _, body = ask(gateway, *request(fmt, model, text, stream), key=caller)
            assert status == 200, (model, stream, body)
            assert_hidden(body, ENDPOINT_KEY, ADMIN_TOKEN, other, caller)
    assert leaky.requests[-1]["headers"]["authorization"] == f"Bearer {ENDPOINT_KEY}"  # the key was sent
    logged = paths.file("runs", "gateway", "calls.jsonl").read_text()
    assert ENDPOINT_KEY not in logged and ADMIN_TOKEN not in logged and other not in logged


@pytest.mark.parametrize("fmt", FORMATS)
def test_item2_an_upstream_error_echoing_its_key_is_hidden_in_every_error_body(leaky, gateway, fmt):
    """Issue 29 item 2, RT-17: a route turn whose member's upstream answers an error repeating its key is
    refused (502) with the key hidden, streamed or not; a panel seat's error is hidden in its section."""
    caller = gatekeys.make("caller")
    for stream in (False, True):
        status, _, body = ask(gateway, *request(fmt, "bench/failing", PROMPT, stream), key=caller)
        assert status == 502 and "no member of bench/failing answered" in body, body
        assert_hidden(body, ENDPOINT_KEY)
    demo.set_collection("panel", ["echo-error"])
    status, _, body = ask(gateway, *request(fmt, "bench/panel", PROMPT, True), key=caller)
    assert status == 200 and "Bearer ***" in body
    assert_hidden(body, ENDPOINT_KEY)


@pytest.mark.parametrize("fmt", sorted(TOOLS))
def test_item2_a_tool_call_echoing_the_key_is_hidden(leaky, gateway, fmt):
    """Issue 29 item 2: a route member whose tool call's arguments carry the Authorization header (streamed in
    three pieces, so the key straddles them) reaches the agent with the key hidden, streamed and not."""
    caller = gatekeys.make("caller")
    for stream in (False, True):
        status, _, body = ask(gateway, *request(fmt, "bench/tools", PROMPT, stream, tools=True), key=caller)
        assert status == 200 and "lookup" in body, body
        assert_hidden(body, ENDPOINT_KEY)


def test_item2_a_stream_hides_a_secret_however_it_is_split():
    """Issue 29 item 2: `keys.Hider` gives, piece by piece, what `keys.hide` gives of the whole text, wherever
    the pieces are cut: a secret or a gateway key split across pieces is hidden, nothing else is held back
    at the end, and the secret a longer one contains is hidden inside the longer one."""
    inner = "sk-inner-" + secrets.token_hex(6)
    known = sorted([ENDPOINT_KEY, "pre" + inner + "post", inner], key=len, reverse=True)
    gateway_key = "bwk_" + secrets.token_urlsafe(32)
    text = (f"one {ENDPOINT_KEY} two pre{inner}post three {inner} four {gateway_key} five b bw bwk_ "
            f"{ENDPOINT_KEY[:-1]} six")
    whole = keys.hide(text, known=known)
    for size in (1, 2, 3, 5, 8, 13, 47, len(text)):
        hider = keys.Hider(known)
        shown = [hider.feed(text[at:at + size]) for at in range(0, len(text), size)] + [hider.end()]
        assert "".join(shown) == whole, size
    assert whole.count("***") == 4 and ENDPOINT_KEY[:-1] in whole and " b bw bwk_ " in whole


# -- what reaches the logs -------------------------------------------------------------------------------------

ESCAPES = "\x1b[2K\x1b[1A\x08\x07"


def test_item8_a_request_line_cannot_rewrite_the_access_log(server, capfd):
    """Issue 29 item 8: a method holding terminal escapes (sent before any credential is read) is written to
    the access log escaped, as the route already was."""
    port = server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(f"{ESCAPES} /v1/models HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.0 501")
    err = capfd.readouterr().err
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f]", err), repr(err)
    assert "\\x1b[2K\\x1b[1A\\x08\\x07 /v1/models 501 -" in err


def test_item8_an_upstreams_model_name_cannot_forge_a_line(bench, gateway, capfd):
    """Issue 29 item 8, SWAP-1: a reply naming another model is noted on stderr; a name carrying escapes and a
    line break (a malicious upstream) is written as one escaped line, so it forges no line of the server's."""
    forged = f"gpt-x{ESCAPES}\r\n2026-01-01 00:00:00 POST /bench/verdict 200 admin"
    bench.set_model("swapper", answer="Swapper: fine.", serves_as=forged, context_window=32000)
    demo.register(bench, endpoint="swaps", default=False, aliases={"swapper": "swapper"})
    demo.set_collection("core", ["swapper"])
    status, _, body = ask(gateway, "/v1/chat/completions", {"model": "bench/core", "messages": [
        {"role": "user", "content": PROMPT}]})
    assert status == 200, body
    err = capfd.readouterr().err
    [note] = [line for line in err.splitlines() if "(a silent swap?)" in line]
    assert note.startswith("note: swapper asked for swapper and was served gpt-x\\x1b[2K\\x1b[1A\\x08\\x07\\x0d"
                           "\\x0a2026-01-01 00:00:00 POST /bench/verdict 200 admin")
    assert not any(line.startswith("2026-01-01") for line in err.splitlines())
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f]", err), repr(err)


# -- ids -------------------------------------------------------------------------------------------------------

def test_item9_a_route_conversation_id_carries_64_random_bits(bench, gateway):
    """Issue 29 item 9, RT-9: `r<time>-<16 hex>`, and its call ids (which a verdict names) with it."""
    demo.set_collection("agents", ["alpha"], reply="route")
    status, headers, body = ask(gateway, "/v1/chat/completions", {"model": "bench/agents", "messages": [
        {"role": "user", "content": PROMPT}]})
    assert status == 200, body
    conversation = headers["x-bench-conversation"]
    assert re.fullmatch(r"r\d{8}-\d{6}-[0-9a-f]{16}", conversation)
    assert json.loads(body)["bench"]["call"] == f"{conversation}.1"
    assert len({conversations.new_id()[-16:] for _ in range(100)}) == 100
