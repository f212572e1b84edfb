"""The MCP server (suite-cli-mcp.md §11, improvements 17-19) on both transports, driven by the official `mcp`
Python SDK client (MCP-21): stdio as `python -m benchwarmers.server.mcp_server` (and `bench mcp`, LN-10) pointed at a real
gateway, and streamable HTTP at the gateway's own `/mcp` and `/v1/mcp`. The protocol's edges (MCP-5, MCP-15..19)
are sent by hand, since the SDK never sends a malformed message."""

import asyncio
import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from benchwarmers import __version__
from benchwarmers.core import paths
from benchwarmers.net import remote
from benchwarmers.demo import demo
from benchwarmers.server import gatekeys, mcp_server, mcp_tools

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
TRANSPORTS = ["stdio", "http"]


@pytest.fixture
def bench_core(bench):
    """`core` (alpha, gamma), `vision` (seer) and `crawl` (the slow model, made slower: a long panel)."""
    demo.set_collection("core", ["alpha", "gamma"], description="code review", tags=["review"])
    demo.set_collection("vision", ["seer"])
    demo.set_collection("crawl", ["slow"])
    bench.set_model("slow", answer="Slow: done at last.", latency=2.6, context_window=32000)
    return bench


def child_env(gateway, **extra):
    return {"BENCHWARMERS_URL": gateway + "/v1/", "PYTHONIOENCODING": "utf-8",
            "BENCHWARMERS_HOME": os.environ["BENCHWARMERS_HOME"], **extra}


@contextlib.asynccontextmanager
async def connected(transport, gateway, key="", path="/mcp", **env):
    """An initialized SDK client on `transport`: stdio runs the server as a child, HTTP reaches the gateway."""
    if transport == "stdio":
        extra = {**({"BENCHWARMERS_KEY": key} if key else {}), **env}
        target = StdioServerParameters(command=sys.executable, args=["-m", "benchwarmers.server.mcp_server"],
                                       env=child_env(gateway, **extra))
        async with Client(target, mode="legacy") as client:
            yield client
        return
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(gateway + path, http_client=http), mode="legacy") as client:
            yield client


def texts(result):
    return [item.text for item in result.content]


def post(gateway, path, body, headers=None):
    """A raw POST: `(status, {lower header: value}, body bytes)`."""
    host, port = gateway.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, data, {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, raw


def rpc(method, params=None, id_=1):
    return {"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params is not None else {})}


# -- the SDK client, both transports ----------------------------------------------------------------------------

@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mcp21_initialize_list_ask_verdict(transport, gateway, bench_core, monkeypatch):
    """MCP-1..3, MCP-8..11, MCP-21: initialize, tools/list, list_collections, ask without a progress token, verdict."""
    async def session():
        async with connected(transport, gateway) as client:
            assert client.server_info.name == "benchwarmers" and client.server_info.version == __version__
            assert client.protocol_version in mcp_server.VERSIONS
            assert "verdict" in client.instructions and "agreement" in client.instructions
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["list_collections", "ask", "verdict", "pending_verdicts"]
            assert all(t.input_schema["additionalProperties"] is False for t in tools)
            ask = next(t for t in tools if t.name == "ask")
            assert ask.input_schema["required"] == ["collection", "prompt"] and ask.title == "Ask a collection"
            assert ask.annotations.open_world_hint is True and ask.annotations.read_only_hint is False
            assert "minutes" in ask.description and "cannot read your files" in ask.description
            listed = await client.call_tool("list_collections", {})
            rows = json.loads(texts(listed)[0])
            assert [r["name"] for r in rows] == ["bench/core", "bench/vision", "bench/crawl"]
            assert rows[0]["members"] == ["alpha", "gamma"] and rows[0]["tags"] == ["review"]
            assert {"context_window", "capabilities", "limits", "reply", "explorers"} <= set(rows[0])
            asked = await client.call_tool("ask", {"collection": "core", "prompt": PROMPT})
            assert asked.is_error is False
            answer, seats = texts(asked)
            assert bench_core.answer_for("alpha", PROMPT) in answer and bench_core.answer_for("gamma", PROMPT) in answer
            summary = json.loads(seats.split("\n", 1)[1])
            assert summary["collection"] == "bench/core" and len(summary["seats"]) == 2
            assert all("answer" not in seat for seat in summary["seats"])  # text 1 holds them (MCP-10)
            call = summary["seats"][0]["call"]
            judged = await client.call_tool("verdict", {"call": call, "useful": True, "real": ["a"], "false": []})
            assert texts(judged) == [f"Recorded {call}: useful, 1 real, 0 false."]
            assert await client.session.send_ping() is not None
    asyncio.run(session())
    calls = paths.file("runs", "gateway", "calls.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(calls[-1])["key"] == "local"  # MCP-20: no key on this machine, the caller is local


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mcp19_long_ask_sends_progress(transport, gateway, bench_core, monkeypatch):
    """MCP-19, improvement 19: a call with a progress token hears the panel running every KEEPALIVE seconds
    (shortened here), on stdio as over HTTP; the same call without a token completes too."""
    monkeypatch.setenv("BENCH_MCP_KEEPALIVE", "1")
    heard = []

    async def on_progress(progress, total, message):
        heard.append((progress, message))

    async def session():
        async with connected(transport, gateway, BENCH_MCP_KEEPALIVE="1") as client:
            result = await client.call_tool("ask", {"collection": "crawl", "prompt": PROMPT},
                                            progress_callback=on_progress)
            assert "Slow: done at last." in texts(result)[0]
    asyncio.run(session())
    assert len(heard) >= 2, heard
    assert heard[0] == (1, "the panel is running, 1 s") and heard[1][0] == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mcp6_mcp14_refusals_are_tool_errors(transport, gateway, bench_core):
    """MCP-6, MCP-9, MCP-14: a gateway refusal passes its message through as a tool error; bad arguments too."""
    async def session():
        async with connected(transport, gateway) as client:
            unknown = await client.call_tool("ask", {"collection": "nowhere", "prompt": PROMPT})
            assert unknown.is_error is True
            text = texts(unknown)[0]
            assert text.startswith("Benchwarmers refused POST /v1/chat/completions (404): ") and "bench/core" in text
            empty = await client.call_tool("ask", {"collection": "core", "prompt": "  "})
            assert (empty.is_error, texts(empty)) == (True, ["`prompt` is required"])
            verdict = await client.call_tool("verdict", {"call": "p20260101-000000-abcd.member1", "useful": False})
            assert verdict.is_error is True and "(404)" in texts(verdict)[0]
    asyncio.run(session())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mcp20_a_scoped_key_keeps_its_scope(transport, gateway, bench_core, monkeypatch):
    """MCP-20: over loopback (HTTP) and with BENCHWARMERS_KEY (stdio) a key limited to `vision` sees only it and
    is refused `core` as a tool error naming what it may call."""
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    key = gatekeys.make("agent", collections=["vision"])

    async def session():
        async with connected(transport, gateway, key=key) as client:
            rows = json.loads(texts(await client.call_tool("list_collections", {}))[0])
            assert [r["name"] for r in rows] == ["bench/vision"]
            refused = await client.call_tool("ask", {"collection": "core", "prompt": PROMPT})
            assert refused.is_error is True and "may call bench/vision" in texts(refused)[0]
    asyncio.run(session())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mcp7_a_ping_is_answered_while_a_panel_runs(transport, gateway, bench_core):
    """MCP-7 (stdio) and one request per POST (HTTP): a ping and a second call come back while a long ask runs."""
    async def session():
        async with connected(transport, gateway) as client:
            long_ask = asyncio.create_task(client.call_tool("ask", {"collection": "crawl", "prompt": PROMPT}))
            await asyncio.sleep(0.3)
            started = time.monotonic()
            await client.session.send_ping()
            listed = await client.call_tool("list_collections", {})
            assert time.monotonic() - started < 1.5 and not long_ask.done()
            assert "bench/crawl" in texts(listed)[0]
            assert "Slow: done at last." in texts(await long_ask)[0]
    asyncio.run(session())


def test_mcp_http_paths_and_the_v1_alias(gateway, bench_core):
    """MCP-15: `/v1/mcp` answers like `/mcp` through the SDK."""
    async def session():
        async with connected("http", gateway, path="/v1/mcp") as client:
            assert [t.name for t in (await client.list_tools()).tools][0] == "list_collections"
    asyncio.run(session())


# -- stdio by hand ------------------------------------------------------------------------------------------

def test_mcp_http_on_the_dashboard_port(bench_core):
    """§11.4: the dashboard's port answers `/mcp` with the gateway's rules, its tools calling back on that port."""
    from benchwarmers.dashboard import serve

    dashboard = serve.serve("127.0.0.1", 0)
    board = f"http://127.0.0.1:{dashboard.server_address[1]}"

    async def session():
        async with connected("http", board, path="/v1/mcp") as client:
            asked = await client.call_tool("ask", {"collection": "core", "prompt": PROMPT})
            assert asked.is_error is False and bench_core.answer_for("gamma", PROMPT) in texts(asked)[0]
    try:
        asyncio.run(session())
    finally:
        dashboard.shutdown()
        dashboard.server_close()


def run_stdio(gateway, lines, *command, **env):
    """Feed `lines` to the stdio server and close its input: `(exit code, stdout lines, stderr)`."""
    done = subprocess.run([sys.executable, *(command or ["-m", "benchwarmers.server.mcp_server"])],
                          input="".join(json.dumps(line) + "\n" if not isinstance(line, str) else line for line in lines),
                          capture_output=True, text=True, env={**os.environ, **child_env(gateway, **env)}, timeout=60)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_mcp7_a_call_completes_after_stdin_closes(gateway, bench_core):
    """MCP-7: the input ends right after a long ask; the reply still comes, then the server exits 0. Blank lines
    are ignored; a notification gets no reply."""
    code, replies, _ = run_stdio(gateway, [rpc("initialize", {}), "\n",
                                           {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                           rpc("tools/call", {"name": "ask", "arguments": {
                                               "collection": "crawl", "prompt": PROMPT}}, id_=2)])
    assert code == 0 and [r["id"] for r in replies] == [1, 2]
    assert "Slow: done at last." in replies[1]["result"]["content"][0]["text"]


def test_ln10_bench_mcp_answers_one_initialize(gateway, bench_core):
    """LN-10: `bench mcp` (the launcher) fed one initialize line prints exactly one line and exits 0 at end of input."""
    code, replies, _ = run_stdio(gateway, [rpc("initialize", {"protocolVersion": "2024-11-05"})],
                                 "-m", "benchwarmers.cli.launcher", "mcp")
    assert code == 0 and len(replies) == 1
    assert replies[0]["result"]["serverInfo"]["version"] == __version__
    assert replies[0]["result"]["protocolVersion"] == "2024-11-05"


def test_mcp5_protocol_errors_on_stdio(gateway, bench_core):
    """MCP-3, MCP-5: every malformed line is answered, never a crash, and the server goes on."""
    code, replies, _ = run_stdio(gateway, [
        "{not json\n", "[" * 100_000 + "\n", [rpc("ping")], {"jsonrpc": "1.0", "id": 7, "method": "ping"},
        {"jsonrpc": "2.0", "id": 8, "method": 5}, rpc("ping", [1], id_=9), rpc("tools/call", {"name": ["x"]}, id_=10),
        rpc("tools/call", {"name": "ask", "arguments": [1]}, id_=11), rpc("resources/list", id_=12),
        rpc("initialize", {"protocolVersion": "1999-01-01"}, id_=13), rpc("ping", id_=14)])
    assert code == 0
    calls = [r for r in replies if r["id"] in (10, 11)]  # tool calls answer from their own threads
    replies = [r for r in replies if r not in calls]
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies] == [
        (None, -32700), (None, -32700), (None, -32600), (7, -32600), (8, -32600), (9, -32602),
        (12, -32601), (13, None), (14, None)]
    unknown, wrong = sorted(calls, key=lambda r: r["id"])
    assert unknown["error"] == {"code": -32602, "message": "unknown tool ['x']"}
    assert wrong["result"] == {"content": [{"type": "text", "text": "arguments must be an object"}], "isError": True}
    assert replies[6]["error"]["message"] == "no method 'resources/list'"
    assert replies[7]["result"]["protocolVersion"] == mcp_server.VERSIONS[0]
    assert replies[8]["result"] == {}


def test_mcp12_mcp13_pending_verdicts_reads_the_transcript_once_per_session(gateway, bench_core, tmp_path):
    """MCP-12, MCP-13 on stdio: the seats of this session's panels with no verdict, reminded once per session;
    a verdict clears a seat; `active` and a path that is no .jsonl say nothing."""
    status, _, raw = post(gateway, "/v1/chat/completions",
                          {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    seats = [seat["call"] for seat in json.loads(raw)["bench"]["seats"]]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(json.dumps({"text": f"ran {call} and p20260101-000000-abcd.member9"}) + "\n"
                                  for call in seats), encoding="utf-8")
    post(gateway, "/bench/verdict", {"call": seats[0], "useful": True})

    def pending(id_, session, **extra):
        return rpc("tools/call", {"name": "pending_verdicts", "arguments": {
            "session": session, "transcript": str(transcript), **extra}}, id_=id_)

    code, replies, _ = run_stdio(gateway, [pending(1, "a"), pending(2, "a"), pending(3, "b", active=True),
                                           pending(4, "b"), rpc("tools/call", {"name": "pending_verdicts", "arguments": {
                                               "session": "c", "transcript": str(tmp_path / "x.txt")}}, id_=5)])
    said = {r["id"]: r["result"]["content"][0]["text"] for r in replies}
    assert code == 0 and len(said) == 5
    assert sorted(n for n, text in said.items() if text) in ([1, 4], [2, 4])  # a once, b once (not while active)
    reminder = json.loads(said[4])["hookSpecificOutput"]
    assert reminder["hookEventName"] == "Stop"
    assert "1 seat has" in reminder["additionalContext"] and seats[1] in reminder["additionalContext"]
    assert seats[0] not in reminder["additionalContext"]  # judged; the unknown member9 is never pending


def test_mcp14_a_server_not_running_is_a_tool_error():
    """MCP-14: nothing listening → a tool error saying Benchwarmers is not running, naming the port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    conn = mcp_server.Conn(remote.Server(base=f"http://127.0.0.1:{port}", timeout=5))
    reply = mcp_server.answer(rpc("tools/call", {"name": "list_collections"}), conn)
    text = reply["result"]["content"][0]["text"]
    assert reply["result"]["isError"] is True and "not running" in text and str(port) in text


# -- streamable HTTP by hand ------------------------------------------------------------------------------------

def test_mcp4_mcp5_mcp18_http_replies(gateway, bench_core):
    """MCP-4: a notification is a 202 with an empty body; MCP-5: a parse error is a 400, an invalid message a
    200 carrying its error; MCP-18: without `text/event-stream` in Accept a tool call is plain JSON."""
    status, headers, raw = post(gateway, "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (status, headers["content-length"], raw) == (202, "0", b"")
    status, _, raw = post(gateway, "/mcp", b"{oops")
    assert (status, json.loads(raw)) == (400, mcp_server.PARSE_ERROR)
    status, _, raw = post(gateway, "/mcp", [rpc("ping")])
    assert (status, json.loads(raw)["error"]["code"]) == (200, -32600)
    status, headers, raw = post(gateway, "/mcp", rpc("tools/call", {"name": "list_collections"}))
    assert (status, headers["content-type"]) == (200, "application/json")
    assert "bench/core" in json.loads(raw)["result"]["content"][0]["text"]


@pytest.mark.parametrize("path, answered", [("/mcp/", True), ("//mcp", True), ("/v1//mcp", True), ("/v1/mcp", True),
                                            ("/mcpx", False), ("/v1/mcp/x", False)])
def test_mcp15_route_match(gateway, bench_core, path, answered):
    """MCP-15: runs of `/` collapsed and a trailing `/` dropped; nothing else is the MCP route."""
    status, _, raw = post(gateway, path, rpc("ping"))
    assert (status == 200 and json.loads(raw) == {"jsonrpc": "2.0", "id": 1, "result": {}}) is answered


def test_mcp16_mcp17_the_guard_runs_first(gateway, bench_core, monkeypatch):
    """MCP-16: a foreign Host is 403 and, with keys required, no bearer (or an empty one) is 401; MCP-17: GET is a
    405 saying to POST, with no session id."""
    status, _, _ = post(gateway, "/mcp", rpc("ping"), {"Host": "evil.example"})
    assert status == 403
    host, port = gateway.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/v1/mcp")
    response = conn.getresponse()
    assert (response.status, response.getheader("Allow"), response.getheader("Mcp-Session-Id")) == (405, "POST", None)
    assert "one JSON-RPC message per request" in json.loads(response.read())["error"]["message"]
    body = json.dumps(rpc("ping")).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:  # a body over the gateway's cap
        sock.sendall(f"POST /mcp HTTP/1.0\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {10 ** 9}\r\n\r\n".encode() + body)
        assert sock.recv(64).startswith(b"HTTP/1.0 413")
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    for headers in ({}, {"Authorization": "Bearer "}):
        assert post(gateway, "/mcp", rpc("ping"), headers)[0] == 401


def sse_events(gateway, message, headers=None):
    """A raw SSE tool call: the status, the content type, and every frame (comments included), in order."""
    host, port = gateway.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/mcp", json.dumps(message).encode(), {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})
    response = conn.getresponse()
    frames = [frame for frame in response.read().decode().split("\n\n") if frame]
    conn.close()
    return response.status, response.getheader("Content-Type"), response.getheader("Cache-Control"), frames


def test_mcp19_sse_keepalives_and_the_last_event(gateway, bench_core, monkeypatch):
    """MCP-19: without a progress token the stream holds with `: keep-alive` comments, then the reply is the last
    event; a call that fails validation still gets its error as the one event."""
    monkeypatch.setenv("BENCH_MCP_KEEPALIVE", "1")
    status, content_type, cache, frames = sse_events(gateway, rpc("tools/call", {
        "name": "ask", "arguments": {"collection": "crawl", "prompt": PROMPT}}))
    assert (status, content_type, cache) == (200, "text/event-stream", "no-cache")
    assert frames[:2] == [": keep-alive", ": keep-alive"]
    assert frames[-1].startswith("event: message\ndata: ")
    assert "Slow: done at last." in json.loads(frames[-1].split("data: ", 1)[1])["result"]["content"][0]["text"]
    _, _, _, frames = sse_events(gateway, {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": [1]})
    assert [json.loads(f.split("data: ", 1)[1])["error"]["code"] for f in frames] == [-32602]


def test_mcp19_a_caller_who_hangs_up_loses_no_seat(gateway, bench_core):
    """MCP-19: the caller disconnects mid-panel; the panel still finishes and its seat is in the offload log."""
    log = paths.file("metrics", "offloads.jsonl")
    before = log.read_text(encoding="utf-8").count("\n") if log.exists() else 0
    host, port = gateway.removeprefix("http://").split(":")
    body = json.dumps(rpc("tools/call", {"name": "ask", "arguments": {"collection": "crawl", "prompt": PROMPT}}))
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"POST /mcp HTTP/1.0\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                     f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode())
        assert sock.recv(64).startswith(b"HTTP/1.0 200")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (log.read_text(encoding="utf-8").count("\n") if log.exists() else 0) == before:
        time.sleep(0.1)
    lines = log.read_text(encoding="utf-8").splitlines()[before:]
    assert [json.loads(line)["model"] for line in lines] == ["slow"]


def test_improvement18_no_transcript_is_read_over_http(gateway, bench_core, tmp_path):
    """Improvement 18: over HTTP, pending_verdicts never opens a path the caller names."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("p20260101-000000-abcd.member1\n", encoding="utf-8")
    status, _, raw = post(gateway, "/mcp", rpc("tools/call", {"name": "pending_verdicts", "arguments": {
        "session": "s", "transcript": str(transcript)}}))
    assert status == 200 and json.loads(raw)["result"]["content"] == [{"type": "text", "text": ""}]


def test_mcp13_reminders_keep_at_most_1000_sessions():
    """MCP-13: a new session beyond 1000 evicts the oldest, which would then be reminded again."""
    reminders = mcp_tools.Reminders()
    assert reminders.due("s0", ["a"]) == ["a"] and reminders.due("s0", ["a", "b"]) == ["b"]
    for n in range(1, mcp_tools.SESSIONS_KEPT + 1):
        reminders.due(f"s{n}", ["a"])
    assert len(reminders.sessions) == mcp_tools.SESSIONS_KEPT and reminders.due("s0", ["a"]) == ["a"]
