"""Route mode through the real gateway and the local upstream (formats.md §11, the route-mode issue).

Each member is a model of the local upstream with one behaviour (answers, 429s, stalls, drops part way,
thinks and says nothing); tests pin the RT statements they name. The SDK tool loops are in
`test_route_sdks.py`.
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import catalog, endpoints, registry
from benchwarmers.calling import ledger
from benchwarmers.panel import conversations, offload, route_mode
from benchwarmers.store import store
from benchwarmers.demo import demo
from benchwarmers.wire.turn import Turn

ROUTE_MODELS = {
    "steady": {"answer": "Steady: the test passes now.", "latency": 0.01, "context_window": 32000, "max_output": 8192,
               "tools": True},
    "backup": {"answer": "Backup: I would add a retry.", "latency": 0.01, "context_window": 32000, "tools": True},
    "limited": {"fail": "429", "retry_after": 1, "context_window": 32000, "tools": True},
    "broken": {"fail": "500", "context_window": 32000, "tools": True},
    "silent": {"fail": "stall_headers", "context_window": 32000, "tools": True},
    "dropper": {"answer": "Dropper: one two three four five six", "fail": "drop", "latency": 0.01,
                "context_window": 32000, "tools": True},
    "ponder": {"reasoning": "Thinking it over at length.", "fail": "empty", "context_window": 32000, "tools": True},
    "plain": {"answer": "Plain: no tools here.", "context_window": 32000, "tools": False},
    "small": {"answer": "Small window.", "context_window": 100, "tools": True},
    "eye": {"answer": "Eye: a red square.", "vision": True, "context_window": 32000, "tools": True},
    "lagging": {"answer": "Lagging: here at last.", "fail": "slow", "delay": 0.6, "context_window": 32000,
                "tools": True},
}
PROMPT = "Fix the failing test in parser.py"
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


@pytest.fixture
def route_models():
    return ROUTE_MODELS


def collection(*members, **fields):
    demo.set_collection("core", list(members), **fields)


def exchange(gw, path, body, headers=None):
    """`(status, headers with lower-case names, raw body)`; a stream is read to its close."""
    host, port = gw.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def chat(gw, stream=False, messages=None, **fields):
    body = {"model": "bench/core:route", "messages": messages or [{"role": "user", "content": PROMPT}],
            "stream": stream, **fields}
    return exchange(gw, "/v1/chat/completions", body)


def events(data):
    """The JSON objects of an SSE body's `data:` lines, `[DONE]` left out."""
    return [json.loads(line[6:]) for line in data.decode().splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def route_lines():
    return store.current().records(store.ROUTES)


# ---------------------------------------------------------------- the accumulator (ACC)


def test_acc2_tool_call_deltas_matched_by_id_then_index():
    """ACC-2's example: a late id joins its call; a new id on a reused index is a new call."""
    turn = Turn()
    for piece in ({"index": 0, "function": {"name": "get_weather", "arguments": ""}},
                  {"index": 0, "id": "call_late", "function": {"arguments": '{"city": '}},
                  {"index": 0, "function": {"arguments": '"Oslo"}'}},
                  {"index": 0, "id": "call_2", "function": {"name": "get_weather", "arguments": "{}"}}):
        assert turn.feed({"choices": [{"delta": {"tool_calls": [piece]}}]}) == ("", True)
    assert [(c.id, c.name, c.arguments) for c in turn.calls] == [
        ("call_late", "get_weather", '{"city": "Oslo"}'), ("call_2", "get_weather", "{}")]
    assert turn.stop == "tool_calls"


def test_acc1_acc4_text_reasoning_usage_and_arguments_as_objects():
    """ACC-1, ACC-3, ACC-4, improvement 15: a reported 0 is a count."""
    turn = Turn()
    assert turn.feed({"choices": [{"delta": {"reasoning_content": "hmm"}}]}) == ("", False)
    assert turn.feed({"choices": [{"delta": {"content": [{"type": "text", "text": "Hi"}]}}]}) == ("Hi", True)
    assert turn.feed({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 0}}) == ("", False)
    assert turn.feed("not a chunk") == ("", False)
    assert (turn.text, turn.reasoning, turn.tokens(99), turn.stop) == ("Hi", "hmm", (12, 0), "stop")
    turn.feed({"choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "[1]"}}]}}]})
    turn.feed({"choices": [{"delta": {"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "oops"}}]}}]})
    turn.feed({"choices": [{"delta": {"tool_calls": [{"id": "c", "function": {"name": "h"}}]}}]})
    assert [c.arguments_object for c in turn.calls] == [{"arguments": [1]}, {"arguments": "oops"}, {}]
    assert turn.calls[2].arguments == "{}"


# ---------------------------------------------------------------- entering, planning, refusals (RT-1..5)


def test_rt1_route_by_suffix_body_and_collection_setting(gw):
    """RT-1, FMT-13: `:route`, `bench.reply`, and a collection whose reply is route (unless overridden)."""
    collection("steady", reply="route")
    for body in ({"model": "bench/core:route"}, {"model": "core", "bench": {"reply": "route"}}, {"model": "core"}):
        status, head, data = exchange(gw, "/v1/chat/completions",
                                      {**body, "messages": [{"role": "user", "content": PROMPT}]})
        reply = json.loads(data)
        assert status == 200 and reply["bench"]["reply"] == "route" and reply["bench"]["alias"] == "steady"
        assert head["x-bench-model"] == "steady" and head["x-bench-conversation"] == reply["bench"]["conversation"]
    status, _, data = exchange(gw, "/v1/chat/completions", {"model": "bench/core:all",
                                                            "messages": [{"role": "user", "content": PROMPT}]})
    assert status == 200 and "panel" in json.loads(data)["bench"]


def test_rt2_rt5_refusals_before_any_member_is_asked(gw, routed):
    """RT-2 (no members, 503), RT-4/RT-5 (nobody left: 400 with each why, 413 when all are too small)."""
    collection()
    status, _, data = chat(gw)
    assert status == 503 and "no members to route to" in json.loads(data)["error"]["message"]
    collection("small")
    status, _, data = chat(gw, messages=[{"role": "user", "content": "word " * 400}])
    message = json.loads(data)["error"]["message"]
    assert status == 413 and "small its context window (100 tokens) is under this request" in message
    collection("plain", "small")
    status, _, data = chat(gw, tools=TOOLS, messages=[{"role": "user", "content": "word " * 400}])
    message = json.loads(data)["error"]["message"]
    assert status == 400 and message.startswith("no member of bench/core can take this request: plain does not call")
    assert "Tool calling" not in message.split(";")[0] and "small its context window" in message
    assert not [r for r in routed.requests if r["method"] == "POST"]


def test_rt4_eligibility_reasons_named_in_skipped(gw, routed):
    """RT-4, TEST-22: retired, ad hoc, vision specialist, no tools, non-chat API, unknown tool calling."""
    fileio.write_atomic(paths.file("config", "retired.json"), json.dumps({"backup": {"at": "2026-11-30"}}))
    fileio.write_atomic(paths.file("config", "model-roles.json"),
                        json.dumps({"ad_hoc": ["broken"], "models": {"eye": "vision"}}))
    registry.add_registration("vague", "unlisted-model", "demo")  # the listing says nothing of it
    catalog.warm(refresh=True)
    collection("backup", "broken", "eye", "plain", "vague", "steady", "ghost")
    status, _, data = chat(gw, tools=TOOLS)
    assert status == 200, data
    skipped = {s["alias"]: s["why"] for s in json.loads(data)["bench"]["skipped"]}
    assert skipped["backup"].startswith("retired from the bench on 2026-11-30")
    assert skipped["broken"] == "ad hoc (expensive or capped), never routed to automatically"
    assert skipped["eye"] == "a vision specialist; used only for requests that include images"
    assert skipped["plain"].startswith("does not call tools")
    assert skipped["ghost"] == "not registered on the bench"
    assert "no tool-calling information" in skipped["vague"] and "Tool calling" in skipped["vague"]
    assert json.loads(data)["bench"]["alias"] == "steady"
    status, _, data = chat(gw)  # without tools a member that cannot call them may answer (RT-5)
    collection("plain")
    status, _, data = chat(gw, messages=[{"role": "user", "content": "no tools this time"}])
    assert status == 200 and json.loads(data)["choices"][0]["message"]["content"] == "Plain: no tools here."


def test_rt4_non_chat_api_member_is_skipped(gw, routed):
    """RT-4 #4: a member on a native API is named, with its API."""
    demo.register(routed, endpoint="native", aliases={"steady-native": "steady"}, default=False, api="anthropic")
    catalog.warm(refresh=True)
    collection("steady-native", "backup")
    status, _, data = chat(gw)
    skipped = json.loads(data)["bench"]["skipped"]
    assert status == 200 and skipped == [{"alias": "steady-native", "why": "reached through the anthropic API; route "
                                                                             "mode passes requests to chat completions only"}]


# ---------------------------------------------------------------- the turn, failover (RT-11..17)


def test_rt11_request_forwarded_unaltered_with_the_budget_cut(gw, routed):
    """RT-11, TEST-11: messages, tools and sampling fields reach the member; max_tokens cut to max_output."""
    collection("steady")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
    status, _, _ = chat(gw, stream=True, messages=messages, tools=TOOLS, tool_choice="auto", parallel_tool_calls=False,
                        temperature=0.2, seed=7, response_format={"type": "text"}, max_tokens=50000)
    sent = routed.requests[-1]["body"]
    assert status == 200 and sent["messages"] == messages and sent["tools"] == TOOLS
    assert (sent["tool_choice"], sent["parallel_tool_calls"], sent["temperature"], sent["seed"]) == ("auto", False,
                                                                                                   0.2, 7)
    assert sent["response_format"] == {"type": "text"} and sent["max_tokens"] == 8192
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_rt15_a_429_member_fails_over_unseen_and_the_reply_names_who_answered(gw, routed):
    """RT-15, RT-26, TEST-11: the client sees the second member's answer; `failed_over` names the 429."""
    collection("limited", "steady")
    status, head, data = chat(gw, stream=True)
    chunks = events(data)
    assert status == 200 and head["x-bench-model"] == "steady"
    assert all(c["model"] == "bench/core" for c in chunks)
    bench = chunks[-1]["bench"]
    assert chunks[-1]["choices"] == [] and bench["alias"] == "steady" and bench["reply"] == "route"
    assert bench["failed_over"][0]["alias"] == "limited" and "429" in bench["failed_over"][0]["error"]
    assert head["x-bench-conversation"] == bench["conversation"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Steady: the test passes now."
    asked = [r["model"] for r in routed.requests if r["method"] == "POST"]
    assert asked == ["limited", "steady"]  # no retries before a failover (RT-12)


def test_rt17_every_member_rate_limited_is_429_with_retry_after(gw, routed):
    """RT-17: 429 + Retry-After when every member tried was rate-limited; the all-failed line is written."""
    collection("limited")
    status, head, data = chat(gw)
    message = json.loads(data)["error"]["message"]
    assert status == 429 and int(head["retry-after"]) >= 1
    assert message.startswith("no member of bench/core answered: limited: Error: Error code: 429")
    line = route_lines()[-1]
    assert (line["call"], line["alias"], line["status"], line["error"]) == ("", "", "error", "every member failed")
    assert line["tried"][0]["alias"] == "limited"


def test_rt17_members_down_is_502_streamed_and_not(gw, routed):
    """RT-17, TEST-21: upstream errors give 502 naming each member; streamed too, before any 200."""
    collection("broken")
    for stream in (False, True):
        status, head, data = chat(gw, stream=stream)
        assert status == 502 and "broken: Error: Error code: 500" in json.loads(data)["error"]["message"]
        assert "x-bench-model" not in head


def test_rt14_silent_member_fails_over_after_first_token(gw, routed, monkeypatch):
    """RT-14, TEST-13: a member silent past FIRST_TOKEN is tried no longer: `nothing in 1s`."""
    monkeypatch.setattr(route_mode, "FIRST_TOKEN", 1)
    collection("silent", "backup")
    status, _, data = chat(gw)
    reply = json.loads(data)
    assert status == 200 and reply["bench"]["alias"] == "backup"
    assert reply["bench"]["failed_over"] == [{"alias": "silent", "error": "nothing in 1s"}]


def test_rt14_reasoning_only_member_is_empty_and_fails_over(gw, routed):
    """RT-14, TEST-14: a member that only thinks has given an empty reply; the next answers."""
    collection("ponder", "steady")
    status, _, data = chat(gw, stream=True)
    chunks = events(data)
    assert status == 200 and chunks[-1]["bench"]["failed_over"] == [{"alias": "ponder", "error": "an empty reply"}]
    assert not any("reasoning_content" in (c["choices"][0]["delta"] if c["choices"] else {}) for c in chunks)


def test_rt15_the_last_member_empty_turn_is_relayed(gw, routed):
    """RT-15: when the final candidate says nothing, its empty turn is the answer (status `empty`)."""
    collection("ponder")
    status, head, data = chat(gw)
    reply = json.loads(data)
    assert status == 200 and reply["choices"][0]["message"]["content"] == ""
    assert reply["choices"][0]["message"]["reasoning_content"] == "Thinking it over at length."
    assert route_lines()[-1]["status"] == "empty"


def test_rt16_failure_after_going_live_is_final(gw, routed):
    """RT-16, TEST-20: a member that breaks off after its first piece ends the stream with an error naming it."""
    collection("dropper", "steady")
    status, head, data = chat(gw, stream=True)
    chunks = events(data)
    assert status == 200 and head["x-bench-model"] == "dropper"
    assert chunks[-1]["error"]["message"].startswith("dropper failed part way through the turn: Error: client failed")
    status, head, data = exchange(gw, "/v1/messages", {"model": "bench/core:route", "max_tokens": 100, "stream": True,
                                                       "messages": [{"role": "user", "content": "another"}]})
    assert status == 200 and data.decode().rstrip().splitlines()[-2] == "event: error"
    status, head, data = chat(gw, messages=[{"role": "user", "content": "a third"}])
    assert status == 502 and head["x-bench-model"] == "dropper" and "failed part way" in json.loads(data)["error"][
        "message"]
    assert route_lines()[-1]["status"] == "error" and [r["model"] for r in routed.requests].count("steady") == 0


def test_rt20_the_200_waits_for_the_grace_then_keep_alives_until_the_member_speaks(gw, routed, monkeypatch):
    """RT-20: past ROUTE_GRACE the 200 goes without X-Bench-Model; keep-alives hold the line until the answer."""
    from benchwarmers.server import gateway

    monkeypatch.setattr(route_mode, "ROUTE_GRACE", 0.1)
    monkeypatch.setattr(gateway, "KEEPALIVE", 0.15)
    collection("lagging")
    status, head, data = chat(gw, stream=True)
    text = data.decode()
    assert status == 200 and "x-bench-model" not in head and head["x-bench-conversation"]
    assert text.startswith(": keep-alive\n\n") and text.count(": keep-alive") >= 2
    assert "Lagging: " in text and events(data)[-1]["bench"]["alias"] == "lagging"
    status, head, data = exchange(gw, "/v1/messages", {"model": "bench/core:route", "max_tokens": 50, "stream": True,
                                                       "messages": [{"role": "user", "content": "again"}]})
    assert status == 200 and "event: ping" in data.decode() and data.decode().startswith("event: message_start")


# ---------------------------------------------------------------- stickiness (RT-7..10)


def test_rt12_next_turn_stays_on_the_member_and_counts_turns(storage, gw, routed):
    """RT-7..10, TEST-12: same system and first message → same conversation, same member, `turn` 2, call `.1`."""
    collection("steady", "backup")
    first = [{"role": "system", "content": "You fix tests."}, {"role": "user", "content": PROMPT}]
    reply = json.loads(chat(gw, messages=first)[2])["bench"]
    following = first + [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "And now?"}]
    again = json.loads(chat(gw, messages=following)[2])["bench"]
    assert again["conversation"] == reply["conversation"] and again["alias"] == reply["alias"]
    assert (again["turn"], again["call"]) == (2, reply["conversation"] + ".1") and "verdict" not in again
    other = json.loads(chat(gw, messages=[{"role": "user", "content": "Something else"}])[2])["bench"]
    assert other["conversation"] != reply["conversation"]
    via_anthropic = json.loads(exchange(gw, "/v1/messages", {"model": "bench/core:route", "max_tokens": 50,
                                                             "system": "You fix tests.", "messages": [
                                                                 {"role": "user", "content": PROMPT}]})[2])["bench"]
    assert via_anthropic["conversation"] == reply["conversation"] and via_anthropic["turn"] == 3  # RT-7: any API


def test_rt9_a_member_that_cannot_take_the_turn_is_replaced_keeping_the_conversation(storage, gw, routed):
    """RT-9: an image arrives; the conversation's member cannot see it: re-ranked, id and models kept."""
    collection("steady", "eye")
    first = json.loads(chat(gw)[2])["bench"]
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    later = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "ok"},
             {"role": "user", "content": [{"type": "text", "text": "see this"}, image]}]
    fileio.write_atomic(paths.file("config", "model-overrides.json"), json.dumps({"steady": {"vision": False}}))
    catalog.warm(refresh=True)
    status, _, data = chat(gw, messages=later)
    assert status == 200, data
    second = json.loads(data)["bench"]
    assert first["alias"] == "steady" and second["alias"] == "eye"
    assert second["conversation"] == first["conversation"] and second["call"] == first["conversation"] + ".2"
    assert second["skipped"][0]["alias"] == "steady" and "does not take images" in second["skipped"][0]["why"]


def test_rt8_idle_conversations_are_forgotten(storage, gw, routed, monkeypatch):
    """RT-8: a record idle past STICKY_TTL no longer holds the conversation."""
    collection("steady")
    first = json.loads(chat(gw)[2])["bench"]
    monkeypatch.setattr(conversations, "STICKY_TTL", 0)
    time.sleep(0.01)  # the record must be older than a TTL of 0: the clock must move
    second = json.loads(chat(gw)[2])["bench"]
    assert second["conversation"] != first["conversation"] and second["turn"] == 1


def test_rt6_ranking_by_useful_verdicts_then_rotation(routed, monkeypatch):
    """RT-6: most useful verdicts first; cooling members last; ROTATE puts the least recently used first."""
    offload.add("backup", "t (bench/core, general)", True, "good", call="p1.member1")
    offload.add("backup", "t (bench/core, general)", True, "good", call="p2.member1")
    offload.add("steady", "t (bench/core, general)", True, "good", call="p3.member1")
    assert route_mode.rank(["steady", "backup", "plain"]) == ["backup", "steady", "plain"]
    fileio.write_atomic(paths.file("runs", "gateway", "cooldowns.json"), "{}")
    from benchwarmers.models import learn
    learn.cool("backup", 60, "rate limited", "test")
    assert route_mode.rank(["steady", "backup", "plain"]) == ["steady", "plain", "backup"]
    monkeypatch.setattr(route_mode, "ROTATE", 1.0)
    assert route_mode.rank(["steady", "backup", "plain"])[0] == "plain"  # never offloaded counts as oldest


# ---------------------------------------------------------------- recording (RT-16, RT-22..24)


def test_rt22_rt24_routes_jsonl_one_offload_per_model_and_ledger_purpose(storage, gw, routed):
    """RT-16, RT-22..24, TEST-23: a line per turn without the prompt; one unjudged offload per model; no calls.jsonl."""
    collection("limited", "steady")
    first = json.loads(chat(gw)[2])["bench"]
    chat(gw, messages=[{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "ok"},
                       {"role": "user", "content": "secret follow-up words"}])
    lines = route_lines()
    assert [line["turn"] for line in lines] == [1, 2] and lines[0]["tried"][0]["alias"] == "limited"
    assert lines[0]["tokens_out"] > 0 and lines[0]["tool_calls"] == 0 and lines[0]["key"] == "local"
    assert all("secret" not in json.dumps(line) and "messages" not in line for line in lines)
    entries = [e for e in offload.entries() if e.call.startswith(first["conversation"])]
    assert len(entries) == 1 and entries[0].useful is None and entries[0].call == first["call"]
    assert entries[0].task == f"{PROMPT} (bench/core:route)"
    assert entries[0].note.startswith("route conversation; first turn ok in")
    assert not paths.file("runs", "gateway", "calls.jsonl").exists()
    rows = list(ledger.rows(0))
    assert {row["purpose"] for row in rows} == {"route"} and len(rows) == 3  # the 429 is a ledger line too (RT-23)
    status, _, data = exchange(gw, "/bench/verdict", {"call": first["call"], "useful": True})
    assert status == 200 and offload.record("bench/core")["steady"]["useful"] == 1


def test_rt22_the_task_is_cleaned_before_it_is_written(gw, routed):
    """RT-22, IMG-8: a user:password URL in the first message is in no record route mode writes."""
    collection("steady")
    status, _, _ = chat(gw, messages=[{"role": "user", "content": "clone https://ann:hunter2@git.example/x and fix"}])
    written = [route_mode.routes_path(), offload.log_path(), *conversations.folder().glob("*.json")]
    assert status == 200 and all("hunter2" not in path.read_text() for path in written)
    assert "git.example" in route_lines()[-1]["task"]


def test_route_refusal_carries_the_known_conversation(gw, routed):
    """Improvement 13: a refusal of a turn in a known conversation says which conversation it was."""
    collection("steady")
    first = json.loads(chat(gw)[2])["bench"]
    collection("limited")
    status, head, _ = chat(gw)
    assert status == 429 and head["x-bench-conversation"] == first["conversation"]


def test_route_write_failure_loses_no_answer(gw, routed):
    """Nothing lost: routes.jsonl refused (a folder where the file should be): the answer still comes, marked."""
    collection("steady")
    route_mode.routes_path().mkdir(parents=True)
    status, _, data = chat(gw)
    reply = json.loads(data)
    assert status == 200 and reply["choices"][0]["message"]["content"] == "Steady: the test passes now."
    assert reply["bench"]["logged"] is False and "routes.jsonl" in reply["bench"]["log_error"]


def test_route_conversation_store_refused_loses_no_answer(gw, routed):
    """Nothing lost: the conversations folder cannot be written: the turn is still answered, and says why."""
    collection("steady")
    conversations.folder().parent.mkdir(parents=True, exist_ok=True)
    conversations.folder().write_text("a file where the folder should be")
    status, _, data = chat(gw)
    reply = json.loads(data)
    assert status == 200 and reply["choices"][0]["message"]["content"] == "Steady: the test passes now."
    assert reply["bench"]["logged"] is False and reply["bench"]["call"].endswith(".1")


def test_test23_route_turns_on_the_dashboard_port_share_the_conversation_and_show_on_the_card(gw, routed):
    """TEST-23, RT-25, improvement 18: the dashboard's port answers route turns with the gateway's rules and the
    same conversations; the Gateway card lists the conversation, owes no verdict for it, and shows ✓ once judged."""
    from benchwarmers.dashboard import serve

    collection("steady", "backup")
    dashboard = serve.serve("127.0.0.1", 0)
    try:
        board = f"http://127.0.0.1:{dashboard.server_address[1]}"
        first = json.loads(chat(board, tools=TOOLS)[2])["bench"]
        later = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "ok"},
                 {"role": "user", "content": "next"}]
        second = json.loads(chat(gw, messages=later)[2])["bench"]
        assert second["conversation"] == first["conversation"] and second["turn"] == 2
        assert exchange(gw, "/bench/verdict", {"call": first["call"], "useful": True})[0] == 200
        host, port = board.split("//")[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("GET", "/api/gateway-card")
        card = json.loads(conn.getresponse().read())
        conn.close()
    finally:
        dashboard.shutdown()
        dashboard.server_close()
    row = card["conversations"][0]
    assert card["owed"] == 0 and row["conversation"] == first["conversation"] and row["turns"] == 2
    assert row["answered"] == [{"alias": first["alias"], "call": first["call"], "useful": True}]


# ---------------------------------------------------------------- across processes (improvement 18)


def start_gateway(port, workers=1):
    env = {**os.environ, "BENCH_GATEWAY_PORT": str(port), "BENCH_CLIENT": "builtin"}
    process = subprocess.Popen([sys.executable, "gateway.py", "--workers", str(workers)], env=env,
                               cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert "bench gateway on" in process.stdout.readline()
    return process


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(process):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=20)


def test_stickiness_survives_a_restart_and_holds_across_workers(storage, routed):
    """Beyond RT-8: a conversation stays on its model across a gateway restart and across `--workers 2`."""
    collection("steady", "backup")
    port = free_port()
    gw = f"http://127.0.0.1:{port}"
    process = start_gateway(port)
    try:
        first = json.loads(chat(gw)[2])["bench"]
    finally:
        stop(process)
    offload.add("backup", "t (bench/core, general)", True, "now the favourite", call="p9.member1")
    process = start_gateway(port, workers=2)
    try:
        turns = [json.loads(chat(gw, messages=[{"role": "user", "content": PROMPT}, {"role": "assistant",
                                                                                      "content": "ok"},
                                               {"role": "user", "content": f"turn {n}"}])[2])["bench"]
                 for n in range(6)]
    finally:
        stop(process)
    assert {t["conversation"] for t in turns} == {first["conversation"]}
    assert {t["alias"] for t in turns} == {first["alias"]} and [t["turn"] for t in turns] == list(range(2, 8))


def test_a_model_onboarded_by_another_process_is_routed_without_a_restart(routed):
    """Issue 30 item 3: a running gateway sees an endpoint, a model onboarded on it (its listing says it calls
    tools) and a collection made after it started, each by another process, at its next request."""
    port = free_port()
    gw = f"http://127.0.0.1:{port}"
    process = start_gateway(port)
    helper = {"latency": 0.01, "context_window": 32000,
              "tool_calls": [[{"name": "read_file", "arguments": {"path": "parser.py"}}]]}
    try:
        with demo.Upstream({"helper": helper}) as later:
            fileio.update(endpoints.path(), lambda data: data.__setitem__("later", {"base": later.base_url, "key": ""}))
            for command in (("scripts.onboard", "helper", "--endpoint", "later", "--skip-suite"),
                            ("scripts.collection", "add", "agents", "helper")):
                done = subprocess.run(paths.module_command(*command), capture_output=True, text=True, timeout=120)
                assert done.returncode == 0, done.stdout + done.stderr
            status, _, data = exchange(gw, "/v1/chat/completions", {
                "model": "bench/agents:route", "messages": [{"role": "user", "content": PROMPT}], "tools": TOOLS})
    finally:
        stop(process)
    assert status == 200, data
    call = json.loads(data)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call == {"name": "read_file", "arguments": '{"path": "parser.py"}'}
