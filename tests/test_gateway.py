"""The panel through the real gateway (gateway.md): real server, real upstream, real OpenAI SDK.

Each test names the statement ids it pins.
"""

import base64
import concurrent.futures
import contextlib
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

import openai
import pytest

from benchwarmers.calling import ledger
from benchwarmers.core import fileio, paths
from benchwarmers.panel import offload, panel
from benchwarmers.demo import demo
from benchwarmers.store import store
from conftest import hang_up_after_200

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 60).decode()


def sdk(gateway):
    return openai.OpenAI(base_url=gateway + "/v1", api_key="unused", max_retries=0)


def post(gateway, path, body, headers=None, raw=None):
    """A raw POST (curl-shaped): `(status, headers, parsed body)`."""
    host, port = gateway.rsplit(":", 1)
    conn = http.client.HTTPConnection(host.split("//")[1], int(port), timeout=30)
    data = raw if raw is not None else json.dumps(body).encode()
    conn.request("POST", path, data, {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    text = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), json.loads(text) if text else None


def get(gateway, path, headers=None):
    host, port = gateway.rsplit(":", 1)
    conn = http.client.HTTPConnection(host.split("//")[1], int(port), timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    text = response.read()
    conn.close()
    return response.status, json.loads(text) if text else None


def ask(members, **fields):
    demo.set_collection("core", members, **fields)


def seats_logged():
    return [e.stored for e in offload.entries()]


def call_log():
    return store.current().records(store.CALLS)


def test_rpl_openai_sdk_plain_panel_every_seat_labelled_and_logged(storage, gateway, bench):
    """RPL-1..3, TST-5, TST-8, PNL-20, OFF-1, CLG-1, STR-11."""
    ask(["alpha", "beta"], description="two reviewers")
    reply = sdk(gateway).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": PROMPT}])
    content = reply.choices[0].message.content
    bench_field = reply.model_extra["bench"]
    assert reply.model == "bench/core"
    assert list(bench_field) == ["panel", "collection", "shape", "shape_by", "seats", "verdict"]
    assert content.startswith(f"Bench bench/core {bench_field['panel']} · 2 members + 0 explorers · "
                              "explorer shape general (no explorer seats to fill)\n")
    seats = bench_field["seats"]
    assert [s["alias"] for s in seats] == ["alpha", "beta"]
    assert [s["call"] for s in seats] == [f"{bench_field['panel']}.member1", f"{bench_field['panel']}.member2"]
    for seat in seats:
        # `usage` follows when the upstream counted the seat's tokens (issue 16), as the local one does
        assert list(seat) == [*panel.SEAT_KEYS, "usage"] and seat["status"] == "ok"
        assert seat["call"] in content and seat["answer"] in content
        assert f"## member — {seat['alias']}\n`{seat['call']}` · ok · " in content
    assert "POST /bench/verdict" in content and PROMPT not in json.dumps(bench_field)
    logged = {e["call"]: e for e in seats_logged()}
    assert set(logged) == {s["call"] for s in seats}
    first = logged[seats[0]["call"]]
    assert first["model"] == "alpha" and first["useful"] is None and first["status"] == "ok"
    assert first["task"] == " ".join(PROMPT.split())[:90] + " (bench/core, general)"
    assert first["note"].startswith("member; ok in ")
    # each seat's ledger line, written with its offload line (one round trip on Postgres)
    assert sorted(row["alias"] for row in ledger.rows() if row["purpose"] == "gateway") == ["alpha", "beta"]
    [line] = call_log()
    assert line["panel"] == bench_field["panel"] and line["key"] == "local" and line["prompt"] == PROMPT
    assert [s["call"] for s in line["seats"]] == [s["call"] for s in seats]


def test_str5_stream_sends_each_section_as_its_seat_finishes(gateway, bench):
    """STR-3, STR-5, STR-10, TST-6: the fast seat's section arrives before the slow seat's, whatever the seat order."""
    ask(["slow", "alpha"])
    stream = sdk(gateway).chat.completions.create(model="bench/core", stream=True,
                                                  messages=[{"role": "user", "content": PROMPT}])
    chunks = list(stream)
    pieces = [c.choices[0].delta.content or "" for c in chunks]
    text = "".join(pieces)
    assert chunks[0].choices[0].delta.role == "assistant"
    alpha_at = next(i for i, p in enumerate(pieces) if "Alpha: the loop" in p)
    slow_at = next(i for i, p in enumerate(pieces) if "Slow: I agree" in p)
    assert alpha_at < slow_at
    assert chunks[-1].choices[0].finish_reason == "stop"
    bench_field = chunks[-1].model_extra["bench"]
    assert all("bench" not in (c.model_extra or {}) for c in chunks[:-1])
    assert [s["alias"] for s in bench_field["seats"]] == ["slow", "alpha"]  # the final field keeps seat order
    for seat in bench_field["seats"]:
        assert seat["call"] in text


def test_seat_failures_are_reported_not_raised(gateway, bench, monkeypatch):
    """SEAT-1, SEAT-2, SEAT-5, RPL-1 bodies: an error, an empty reply, a provider notice, a timeout."""
    monkeypatch.setattr(panel, "SEAT_TIMEOUT", 0.3)
    bench.set_model("stuck", fail="slow", delay=5)
    demo.register(bench, aliases={"stuck": "stuck"})
    ask(["alpha", "gone", "blank", "noticer", "stuck"])
    status, _, reply = post(gateway, "/v1/chat/completions",
                            {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    assert status == 200
    seats = {s["alias"]: s for s in reply["bench"]["seats"]}
    assert seats["alpha"]["status"] == "ok"
    assert seats["gone"]["status"] == "error" and "Error code: 404" in seats["gone"]["error"]
    assert seats["blank"]["status"] == "empty"
    assert seats["noticer"]["status"] == "error"
    assert seats["noticer"]["error"].startswith("provider notice in a success reply (insufficient credits)")
    assert seats["stuck"]["status"] == "error" and seats["stuck"]["error"] == "no answer in 0.3s"
    content = reply["choices"][0]["message"]["content"]
    assert "_empty reply — usually a token budget, not incapacity_" in content
    assert "_error: Error: Error code: 404" in content
    pending = post(gateway, "/bench/pending", {"calls": [s["call"] for s in reply["bench"]["seats"]] + ["nope"]})[2]
    assert pending["pending"] == [seats["alpha"]["call"], seats["blank"]["call"]]  # VRD-3


@pytest.mark.parametrize("body, status, words", [
    ({"messages": [{"role": "user", "content": "hi"}]}, 400, "No collection was named."),
    ({"model": "bench/nope", "messages": [{"role": "user", "content": "hi"}]}, 404, "'bench/nope' is not a collection here."),
    ({"model": "bench/core:both", "messages": [{"role": "user", "content": "hi"}]}, 404, "is not a collection"),
    ({"model": "bench/core", "messages": "hi"}, 400, '"messages" must be a list of message objects'),
    ({"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "functions": []}, 400, "legacy"),
    ({"model": 3, "messages": []}, 400, '"model" must be a collection name'),
    ({"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "with": "alpha"}, 400,
     '"with" must be a list'),
    ({"model": "bench/core", "messages": [{"role": "user", "content": "hi"}], "bench": {"reply": "both"}}, 400,
     '"bench" must be an object'),
    ({"model": "bench/core", "messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"name": "f"}}]}, 400, ":route"),
    ({"model": "bench/core", "messages": [{"role": "user", "content": "  "}]}, 400, "no user message"),
    ({"model": "bench/core", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}, {"type": "text", "text": "hi"}]}]}, 400,
     "an image_url must be an http(s) URL"),
    ({"model": "bench/core", "messages": [{"role": "user", "content": [{"type": "input_image"}]}]}, 400,
     "another API's shape"),
])
def test_dsp_ask_refusals_call_no_model(gateway, bench, body, status, words):
    """ASK-1, DSP-1, DSP-6, COL-5, PNL-2, IMG-2/3, TST-12, TST-23, TST-26, PNL-21."""
    ask(["alpha"], description="the core")
    got, _, reply = post(gateway, "/v1/chat/completions", body)
    assert got == status
    assert words in reply["error"]["message"]
    assert reply["error"]["type"] == "bench_gateway" and reply["error"]["code"] == status
    assert not [r for r in bench.requests if r["method"] == "POST"]
    assert not paths.file("metrics", "offloads.jsonl").exists()


def test_col8_refusal_lists_every_collection(gateway, bench):
    ask(["alpha"], description="the core reviewers", tags=["code"])
    demo.set_collection("docs", ["beta"])
    _, _, reply = post(gateway, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    assert reply["error"]["message"] == (
        'No collection was named. Set "model" to the collection that fits the task (GET /v1/models lists them '
        "with description and tags):\n- bench/core: the core reviewers [code]\n- bench/docs: no description")


def test_gw3_transport_refusals(gateway, bench):
    """GW-3, TST-4, TST-24: Host, content type, body, size; the body is never read past the cap."""
    ask(["alpha"])
    body = {"model": "bench/core", "messages": [{"role": "user", "content": "hi"}]}
    assert post(gateway, "/v1/chat/completions", body, {"Host": "evil.example"})[0] == 403
    assert post(gateway, "/v1/chat/completions", body, {"Content-Type": "text/plain"})[0] == 415
    assert post(gateway, "/v1/chat/completions", None, raw=b"{nope")[2]["error"]["message"] == "body is not JSON"
    assert post(gateway, "/v1/chat/completions", None, raw=b"[1]")[2]["error"]["message"] == \
        "body must be a JSON object"
    host, port = gateway.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.0\r\nHost: " + f"{host}:{port}".encode() +
                     b"\r\nContent-Type: application/json\r\nContent-Length: 25000000\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        answer = answer.decode()
    assert answer.startswith("HTTP/1.0 413")
    assert "body is 25,000,000 bytes; the limit is 20,000,000" in answer and "http(s) URLs" in answer
    status, reply = get(gateway, "/nowhere")
    assert status == 404 and "GET /v1/models" in reply["error"]["message"]
    assert not [r for r in bench.requests if r["method"] == "POST"]


def test_pnl4_retired_member_is_skipped_and_frees_its_seat(gateway, bench):
    """PNL-4, PNL-8, PNL-22, TST-16."""
    fileio.write_atomic(paths.file("config", "retired.json"),
                        json.dumps({"beta": {"at": "2026-10-20T10:00:00", "why": "gone", "served": "beta"}}))
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 2, "max_explorers": 0}')
    ask(["beta", "alpha", "gamma", "slow"])
    _, _, reply = post(gateway, "/v1/chat/completions",
                       {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    assert [s["alias"] for s in reply["bench"]["seats"]] == ["alpha", "gamma"]
    skipped = reply["bench"]["skipped"]
    assert skipped[0]["seat"] == "member" and skipped[0]["alias"] == "beta"
    assert "retired from the bench on 2026-10-20" in skipped[0]["why"]
    assert {"seat": "member", "alias": "slow", "why": "past max_calls (2) in config/gateway.json"} in skipped  # IMP-3
    assert "Not asked: beta (retired from the bench" in reply["choices"][0]["message"]["content"]
    assert "beta" not in {r["model"] for r in bench.requests if r["method"] == "POST"}


def test_pnl13_member_too_small_is_413(gateway, bench):
    """PNL-13: the refusal names each member too small, smallest window first."""
    ask(["tiny", "alpha"])
    status, _, reply = post(gateway, "/v1/chat/completions",
                            {"model": "bench/core", "messages": [{"role": "user", "content": "x " * 6000}]})
    assert status == 413
    assert reply["error"]["message"].startswith("prompt is about 3,299 tokens; too large for tiny 3,000 "
                                                "(context windows) in bench/core. Trim it under 3,000 tokens")


def image_messages(url=PNG):
    return [{"role": "user", "content": [{"type": "text", "text": "What does this show? https://u:pw@h.example/p?sig=SECRET123"},
                                         {"type": "image_url", "image_url": {"url": url}}]}]


def test_pnl10_images_go_only_to_seats_that_can_see(gateway, bench):
    """PNL-10, PNL-14, TST-17, TST-18, IMG-8: the seeing seat gets the messages verbatim; nothing is written down."""
    ask(["alpha", "seer"])
    status, _, reply = post(gateway, "/v1/chat/completions", {"model": "bench/core", "messages": image_messages()})
    assert status == 200
    assert [s["alias"] for s in reply["bench"]["seats"]] == ["seer"]
    assert reply["bench"]["shape"] == "vision" and reply["bench"]["shape_by"] == "the request carries images"
    assert reply["bench"]["skipped"][0]["alias"] == "alpha"
    assert "does not take images" in reply["bench"]["skipped"][0]["why"]
    [sent] = [r for r in bench.requests if r["method"] == "POST"]
    assert sent["body"]["messages"] == image_messages()
    [line] = call_log()
    assert "[image: data URL, 1 KB]" in line["prompt"] and line["skipped"] == reply["bench"]["skipped"]
    secret_bits = [PNG.split(",")[1][:40], "SECRET123", "u:pw"]
    for path in paths.data().rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [s for s in secret_bits if s in text], path


def test_pnl16_no_seat_can_see_is_400(gateway, bench):
    """PNL-16, TST-21."""
    ask(["alpha", "beta"])
    status, _, reply = post(gateway, "/v1/chat/completions", {"model": "bench/core", "messages": image_messages()})
    assert status == 400
    message = reply["error"]["message"]
    assert "no seat in bench/core can see images" in message and "alpha" in message and "beta" in message
    assert not [r for r in bench.requests if r["method"] == "POST"]


def test_mrg_merged_reply_and_its_own_call(gateway, bench):
    """MRG-2, MRG-5, MRG-7, TST-9, DSP-4."""
    ask(["alpha", "beta"], merger="merger")
    reply = sdk(gateway).chat.completions.create(model="bench/core:merged",
                                                 messages=[{"role": "user", "content": PROMPT}])
    bench_field = reply.model_extra["bench"]
    content = reply.choices[0].message.content
    assert bench_field["reply"] == "merged" and bench_field["merger"]["call"] == bench_field["panel"] + ".merger"
    assert content.startswith("Merged: alpha and gamma agree")
    assert f"Merged by merger (`{bench_field['panel']}.merger`) from: alpha ok, beta ok." in content
    merge_request = [r for r in bench.requests if r.get("model") == "merger"][0]["body"]
    assert merge_request["messages"][0] == {"role": "system", "content": panel.MERGE_SYSTEM}
    user = merge_request["messages"][1]["content"]
    assert user.startswith("THE REQUEST\n\n" + PROMPT + "\n\nTHE ANSWERS\n\n## member — alpha\n\n")
    assert "Beta: the code looks correct" in user
    assert bench_field["panel"] + ".merger" in {e["call"] for e in seats_logged()}
    assert call_log()[0]["seats"][-1]["seat"] == "merger"
    all_reply = sdk(gateway).chat.completions.create(model="bench/core:merged", extra_body={"bench": {"reply": "all"}},
                                                     messages=[{"role": "user", "content": PROMPT}])
    assert "reply" not in all_reply.model_extra["bench"]  # MRG-9: body beats suffix


def test_mrg8_failing_merger_falls_back_to_every_answer(gateway, bench):
    """MRG-6, MRG-8, TST-10."""
    ask(["alpha", "beta"], merger="gone", reply="merged")
    _, _, reply = post(gateway, "/v1/chat/completions",
                       {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    bench_field = reply["bench"]
    assert bench_field["reply"] == "all" and bench_field["merger"]["status"] == "error"
    assert bench_field["note"].startswith("the merger gone came back error: ")
    assert reply["choices"][0]["message"]["content"].startswith("_Merged reply unavailable: the merger gone")


def test_merged_stream_relays_the_mergers_words_as_written(gateway, bench):
    """Beyond the reference: a merged stream carries the merger's answer token by token, no seat sections."""
    bench.set_model("merger", answer="Merged: " + " ".join(f"point{i}" for i in range(12)), latency=0.1,
                    context_window=128000)
    ask(["alpha", "beta"], merger="merger")
    chunks = list(sdk(gateway).chat.completions.create(model="bench/core:merged", stream=True,
                                                       messages=[{"role": "user", "content": PROMPT}]))
    pieces = [c.choices[0].delta.content for c in chunks[1:-1]]
    assert len(pieces) > 10
    text = "".join(pieces)
    assert text.startswith("Merged: point0 point1") and "## member" not in text
    assert chunks[-1].model_extra["bench"]["reply"] == "merged"


def test_str9_caller_hanging_up_loses_no_seat(gateway, bench):
    """STR-9, PNL-20: every seat and the call log are recorded after the client is gone."""
    ask(["alpha", "slow"])
    hang_up_after_200(gateway, "bench/core", PROMPT)
    deadline = time.monotonic() + 10
    while not call_log() and time.monotonic() < deadline:
        time.sleep(0.05)
    [line] = call_log()
    assert {s["alias"]: s["status"] for s in line["seats"]} == {"alpha": "ok", "slow": "ok"}
    assert len(seats_logged()) == 2


def test_vrd_verdicts_record_and_pending(storage, gateway, bench):
    """VRD-1..3, OFF-4, TST-1, TST-7."""
    ask(["alpha", "beta"])
    _, _, reply = post(gateway, "/v1/chat/completions",
                       {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    first, second = [s["call"] for s in reply["bench"]["seats"]]
    status, _, judged = post(gateway, "/bench/verdict", {"call": first, "useful": True, "note": "found the bug",
                                                          "real": ["the loop skips xs[0]"]})
    assert status == 200 and judged["recorded"]["useful"] is True and judged["recorded"]["call"] == first
    lines = len(store.current().records(store.OFFLOADS))
    assert post(gateway, "/bench/verdict", {"call": first, "useful": True, "note": "found the bug",
                                            "real": ["the loop skips xs[0]"]})[0] == 200
    assert len(store.current().records(store.OFFLOADS)) == lines  # same verdict: nothing written
    assert post(gateway, "/bench/verdict", {"call": first, "useful": "yes"})[2]["error"]["message"] == \
        '"useful" must be true or false'
    assert post(gateway, "/bench/verdict", {"call": first, "useful": True, "real": "x"})[0] == 400
    status, _, unknown = post(gateway, "/bench/verdict", {"call": "p20260101-000000-abcd.member1", "useful": True})
    assert status == 404 and unknown["error"]["message"].startswith("no offload with call id 'p20260101")
    assert post(gateway, "/bench/pending", {"calls": [first, second, second]})[2] == {"pending": [second, second]}
    assert post(gateway, "/bench/pending", {"calls": "x"})[0] == 400
    status, record = get(gateway, "/bench/record?collection=bench/core&task=bug")
    assert status == 200 and record["aliases"]["alpha"]["useful"] == 1 and "beta" not in record["aliases"]
    assert get(gateway, "/bench/record")[0] == 400


def test_lst_listing_and_retrieve(gateway, bench):
    """LST-1, LST-2, TST-14, IMP-21."""
    ask(["alpha"], reply="merged", description="core")
    status, listing = get(gateway, "/v1/models")
    assert status == 200 and [m["id"] for m in listing["data"]] == ["bench/core", "bench/core:all", "bench/core:route",
                                                                    "bench/core:council"]
    assert listing["data"][0]["reply"] == "merged" and listing["data"][0]["owned_by"] == "benchwarmers"
    ids = [m.id for m in sdk(gateway).models.list()]
    assert ids[0] == "bench/core"
    assert get(gateway, "/v1/models/bench/core:all")[1]["reply"] == "all"
    assert get(gateway, "/v1/models/bench/nope")[0] == 404


def test_pnl15_explorers_fill_the_free_seats_stalest_first(gateway, bench):
    """PNL-9, PNL-15, RTR-6: one member leaves two explorer seats, filled from the registered pool."""
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 2}')
    fileio.write_atomic(paths.file("config", "retired.json"),
                        json.dumps({a: {"at": "2026-10-01"} for a in ("gone", "blank", "noticer", "slow", "tiny")}))
    ask(["alpha"], shape="review")
    _, _, reply = post(gateway, "/v1/chat/completions",
                       {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    seats = reply["bench"]["seats"]
    assert [s["seat"] for s in seats] == ["member", "explorer", "explorer 2"]
    assert seats[0]["alias"] == "alpha" and {s["alias"] for s in seats[1:]} <= {"beta", "gamma", "seer", "merger"}
    assert all(s["call"].endswith((".member1", ".explorer", ".explorer2")) for s in seats)
    assert reply["bench"]["shape"] == "review" and reply["bench"]["shape_by"] == "set on the collection"


def test_shp_shape_picker_asks_the_decision_model(gateway, bench):
    """SHP-3..6: the picker is a decision model on the local upstream's Decisions API."""
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 2}')
    fileio.write_atomic(paths.file("config", "decision-models.json"),
                        json.dumps({"picker": {"via": "demo", "served": "picker", "question_types": ["choice"]}}))
    ask(["alpha"])
    _, _, reply = post(gateway, "/v1/chat/completions",
                       {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    assert (reply["bench"]["shape"], reply["bench"]["shape_by"]) == ("review", "picker, 0.90")
    asked = [r for r in bench.requests if r["path"].endswith("/decisions")][0]["body"]
    assert asked["questions"]["shape"]["type"] == "choice" and asked["state"] == PROMPT
    bench.set_model("picker", decisions={"shape": {"choice": "review", "confidence": None}})
    _, _, reply = post(gateway, "/v1/chat/completions",
                       {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    assert reply["bench"]["shape_by"] == "picker unsure (review at 0.00)"  # IMP-10


def test_seat1_llm_backend_panel(gateway, bench, monkeypatch):
    """SEAT-1, BK-2: with BENCH_CLIENT=llm the seats go through llm, with llm's own registry."""
    from benchwarmers.models import registry

    registry.sync_to_llm()
    monkeypatch.setenv("BENCH_CLIENT", "llm")
    ask(["alpha", "gone"])
    _, _, reply = post(gateway, "/v1/chat/completions",
                       {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})
    seats = {s["alias"]: s for s in reply["bench"]["seats"]}
    assert seats["alpha"]["status"] == "ok" and seats["alpha"]["answer"] == "Alpha: the loop skips the first item."
    assert seats["gone"]["status"] == "error" and "404" in seats["gone"]["error"]


def children_of(pid):
    """Live child processes of `pid` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if entry.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


@contextlib.contextmanager
def paused(pid):
    """SIGSTOP `pid` for the block: the other process sharing the socket takes every connection meanwhile."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_serve_one_port_from_one_data_folder_and_stop_with_the_parent(bench):
    """`gateway.py --workers 2`: a forked copy accepts on the same socket; panels and verdicts land in the one
    data folder whichever process takes them; the copy ends when the parent does."""
    ask(["alpha", "gamma"])
    process = subprocess.Popen([sys.executable, "gateway.py", "--port", "0", "--workers", "2"], cwd=paths.CODE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        banner = process.stdout.readline()
        assert " (2 processes) — models: bench/core" in banner
        gateway = banner.split(" on ")[1].split("/v1")[0]
        [worker] = children_of(process.pid)
        body = {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]}
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            replies = list(pool.map(lambda _: post(gateway, "/v1/chat/completions", body), range(12)))
            calls = [seat["call"] for status, _, reply in replies for seat in reply["bench"]["seats"]]
            assert all(status == 200 for status, _, _ in replies) and len(calls) == 24
            judged = list(pool.map(lambda call: post(gateway, "/bench/verdict", {"call": call, "useful": True}),
                                   calls))
        assert all(status == 200 for status, _, _ in judged)
        assert sorted(e["call"] for e in seats_logged() if e.get("useful")) == sorted(calls)
        # whichever took those, each process answers alone: paused while idle, so no file lock is held
        with paused(process.pid):  # only the worker can take this panel
            status, _, reply = post(gateway, "/v1/chat/completions", body)
        assert status == 200
        with paused(worker):  # only the parent: it judges a call the worker logged
            status, _, judged = post(gateway, "/bench/verdict", {"call": reply["bench"]["seats"][0]["call"],
                                                                 "useful": False})
        assert status == 200 and judged["recorded"]["useful"] is False
        assert len(call_log()) == 13
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(15)
    assert process.returncode == 0 and not os.path.exists(f"/proc/{worker}")  # reaped before the parent ended


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on a pidfd (Linux)")
def test_a_worker_stops_when_its_parent_is_killed(bench):
    process = subprocess.Popen([sys.executable, "gateway.py", "--port", "0", "--workers", "2"], cwd=paths.CODE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    process.stdout.readline()
    [worker] = children_of(process.pid)
    exited = os.pidfd_open(worker)
    try:
        process.kill()
        process.wait(15)
        assert select.select([exited], [], [], 15)[0] == [exited]  # readable once the worker has exited
    finally:
        os.close(exited)


def test_workers_above_one_are_refused_with_the_demo():
    done = subprocess.run([sys.executable, "gateway.py", "--demo", "--workers", "2"], cwd=paths.CODE,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--workers above 1 needs fork" in done.stderr


def test_run1_demo_command_serves_a_panel(tmp_path):
    """RUN-1 and the README's first command: `python gateway.py --demo` answers the demo collection."""
    env = {**os.environ, "BENCHWARMERS_HOME": str(tmp_path / "ignored")}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([sys.executable, "gateway.py", "--demo", "--port", str(port)], cwd=paths.CODE,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        banner = process.stdout.readline()
        assert banner.startswith(f"bench gateway on http://127.0.0.1:{port}/v1 — models: bench/demo")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
        reply = client.chat.completions.create(model="bench/demo", messages=[{"role": "user", "content": PROMPT}])
        seats = reply.model_extra["bench"]["seats"]
        assert [s["alias"] for s in seats][:3] == ["terse", "verbose", "contrarian"]
        assert all(s["status"] == "ok" for s in seats)
    finally:
        process.terminate()
        process.wait(10)
