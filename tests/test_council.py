"""Council replies (issue 32, CNC-1..9): `bench/<name>:council` on the shipped upstream with scripted judges.

The seats rank each other's answers blind (never their own, never a model's name), in two orders by default;
a chairman answers from the answers and the aggregate; every stage falls back without losing a line; every
ranking is an offload line of its own that may be judged but is never owed; six client APIs, streamed or not.
"""

import json
import re

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import types

from benchwarmers.core import fileio, paths
from benchwarmers.demo import demo
from benchwarmers.models import catalog
from benchwarmers.panel import council, offload, peers

QUESTION = "Which loop bound is right, i < n or i <= n?"

JUDGES = {
    # answers of different lengths, each naming its own model, so a ranker that saw a name would be caught
    "judge-json": {"answer": "judge-json thinks: i < n, because the last index is n - 1 and n is past the end "
                             "of the array, so i <= n reads one element too many.",
                   "ranks": "longest", "schema": True, "context_window": 64000, "latency": 0.02},
    "judge-text": {"answer": "judge-text: use i < n; the array ends at n - 1.", "ranks": "longest",
                   "context_window": 64000, "latency": 0.02},
    "judge-first": {"answer": "judge-first: i < n.", "ranks": "first", "context_window": 64000, "latency": 0.02},
    "judge-junk": {"answer": "judge-junk: i <= n is fine in most languages.", "ranks": "garbage",
                   "context_window": 64000, "latency": 0.02},
    "chair": {"answer": "Chair: " + " ".join(f"word{i}" for i in range(12)), "context_window": 128000,
              "latency": 0.1},
    "writer": {"answer": "Writer: merged from the answers.", "context_window": 128000},
    "down": {"fail": "500", "context_window": 128000},
}
NAMES = [name for name in JUDGES]


@pytest.fixture
def upstream():
    with demo.Upstream(models={name: dict(spec) for name, spec in JUDGES.items()}) as up:
        yield up


@pytest.fixture
def bench(home, upstream, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    demo.register(upstream)
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 0}\n')
    catalog.warm(refresh=True)
    return upstream


def sdk(gateway):
    return openai.OpenAI(base_url=gateway + "/v1", api_key="unused", max_retries=0)


def convene(members, **fields):
    demo.set_collection("c", members, **{"council": {"chairman": "chair"}, **fields})


def ask(gateway, model="bench/c:council"):
    reply = sdk(gateway).chat.completions.create(model=model, messages=[{"role": "user", "content": QUESTION}])
    return reply.choices[0].message.content, reply.model_extra["bench"]


def ranking_requests(up):
    return [r for r in up.requests if r["path"].endswith("/chat/completions")
            and "## Response A" in r["body"]["messages"][-1]["content"]]


def logged():
    return {e.call: e for e in offload.entries()}


def test_a_council_ranks_blind_and_its_chairman_answers_first(gateway, bench):
    convene(["judge-json", "judge-text", "judge-first"])
    content, told = ask(gateway)
    assert told["reply"] == "council"
    assert content.startswith(bench.answer_for("chair", QUESTION))
    assert "| place | seat | model | mean rank | rankers | agreement |" in content
    assert content.index("| place |") < content.index("## member")  # then every seat's answer, as a panel
    seats = {s["call"]: s for s in told["seats"]}
    rankings = told["council"]["rankings"]
    assert len(rankings) == 6 and told["council"]["orders"] == 2
    for r in rankings:
        assert r["status"] == "ok" and r["ranker"] not in r["labels"].values()  # never its own answer
        assert set(r["labels"].values()) == set(seats) - {r["ranker"]}
        assert r["ranked"] == [r["labels"][x] for x in r["ranking"]]
    assert {r["asked"] for r in rankings if r["alias"] == "judge-json"} == {"structured"}
    assert {r["asked"] for r in rankings if r["alias"] != "judge-json"} == {"text"}
    # the two orders: the second shows the first's answers reversed
    for first, second in zip(rankings[::2], rankings[1::2]):
        assert (first["order"], second["order"]) == (1, 2) and first["ranker"] == second["ranker"]
        assert list(first["labels"].values()) == list(second["labels"].values())[::-1]
    # judges by length agree in both orders; the one that prefers the first shown does not
    assert all(a["ranked"] == b["ranked"] for a, b in zip(rankings[::2], rankings[1::2]) if a["alias"] != "judge-first")
    first_judge = [r for r in rankings if r["alias"] == "judge-first"]
    assert first_judge[0]["ranked"] == first_judge[1]["ranked"][::-1]
    assert told["council"]["orders_agree"] == {"rankers": 3, "same": 2}
    best = told["council"]["aggregate"][0]
    assert best["alias"] == "judge-json" and best["rankers"] == 2 and best["mean_rank"] == 1.25
    assert told["council"]["chairman"]["alias"] == "chair"
    stages = told["council"]["stages"]
    assert [stages[s]["calls"] for s in ("answers", "ranking", "chairman")] == [3, 6, 1]


def test_a_ranker_never_sees_its_own_answer_or_any_model_name(gateway, bench):
    convene(["judge-json", "judge-text", "judge-first"])
    ask(gateway)
    asked = ranking_requests(bench)
    assert len(asked) == 6
    for request in asked:
        text = json.dumps(request["body"]["messages"])
        assert not any(name in text for name in NAMES), text
        own = bench.answer_for(request["model"], QUESTION).split(":", 1)[1].strip()
        assert own not in text  # its own answer, even with its name taken out
        assert "[a model]" in text
    structured = [r for r in asked if r["model"] == "judge-json"]
    assert all(r["body"]["response_format"]["json_schema"]["name"] == "ranking" for r in structured)
    assert not any("response_format" in r["body"] for r in asked if r["model"] != "judge-json")


def test_one_order_halves_the_rankings(gateway, bench):
    convene(["judge-json", "judge-text", "judge-first"], council={"chairman": "chair", "orders": 1})
    _, told = ask(gateway)
    assert [r["order"] for r in told["council"]["rankings"]] == [1, 1, 1]
    assert told["council"]["orders_agree"] == {"rankers": 0, "same": 0}


def test_a_malformed_ranking_is_logged_unreadable_and_counted_missing(gateway, bench):
    convene(["judge-json", "judge-text", "judge-junk"])
    _, told = ask(gateway)
    junk = [r for r in told["council"]["rankings"] if r["alias"] == "judge-junk"]
    assert [r["status"] for r in junk] == ["unreadable", "unreadable"] and all(r["ranked"] == [] for r in junk)
    assert all(row["rankings"] == 2 and row["rankers"] == 1 for row in told["council"]["aggregate"]
               if row["alias"] != "judge-junk")
    lines = logged()
    assert all(lines[r["call"]].status == "unreadable" and lines[r["call"]].ranked == () for r in junk)


def test_no_readable_ranking_gives_a_merged_reply_with_a_note(gateway, bench):
    bench.set_model("judge-text", answer="judge-text: i < n.", ranks="garbage", context_window=64000)
    bench.set_model("judge-first", answer="judge-first: i < n.", ranks="garbage", context_window=64000)
    bench.set_model("judge-json", answer="judge-json: i < n.", ranks="garbage", context_window=64000)
    convene(["judge-json", "judge-text", "judge-first"])
    content, told = ask(gateway)
    assert told["reply"] == "merged" and told["merger"]["alias"] == "chair"  # the chairman, from the answers
    assert content.startswith("_Council: no peer ranking could be read; a merged reply follows._")
    assert told["council"]["aggregate"] == [] and told["council"]["chairman"] is None


def test_fewer_than_three_answers_skip_the_ranking(gateway, bench):
    convene(["judge-json", "judge-text", "down"])
    content, told = ask(gateway)
    assert told["council"]["rankings"] == [] and told["reply"] == "merged"
    assert "2 seats answered ok; a peer ranking needs 3" in content


def test_a_failed_chairman_falls_back_to_a_merger_then_to_the_panel(gateway, bench):
    convene(["judge-json", "judge-text", "judge-first"], council={"chairman": "down"}, merger="writer")
    content, told = ask(gateway)
    assert told["council"]["chairman"]["alias"] == "down" and told["council"]["chairman"]["status"] == "error"
    assert told["reply"] == "merged" and told["merger"]["alias"] == "writer"
    assert content.startswith("_Council: the chairman down came back error")
    assert "Writer: merged from the answers." in content and "| place |" in content
    bench.set_model("writer", fail="500", context_window=128000)
    content, told = ask(gateway)
    assert told["reply"] == "all" and "the merger writer came back error" in told["note"]
    assert content.startswith("_Council reply unavailable: the chairman down came back error")
    assert "## member" in content


def test_a_retired_chairman_is_skipped_and_the_mergers_rule_chooses(gateway, bench):
    """A `council.chairman` retired since the collection named it is not asked: `bench.skipped` says so and why,
    and the merger's rule picks the chairman instead (here the collection's fixed merger)."""
    convene(["judge-json", "judge-text", "judge-first"], council={"chairman": "down"}, merger="writer")
    fileio.write_atomic(paths.file("config", "retired.json"), '{"down": {"at": "2026-12-01"}}\n')
    content, told = ask(gateway)
    assert told["council"]["chairman"]["alias"] == "writer" and told["council"]["chairman"]["status"] == "ok"
    skipped = [s for s in told["skipped"] if s["seat"] == "chairman"]
    assert skipped == [{"seat": "chairman", "alias": "down",
                        "why": "retired from the bench on 2026-12-01; take it out of the collection (Restore in its "
                               "model popup brings it back); the merger's rule chooses one"}]
    assert not any(r["path"].endswith("/chat/completions") and r["body"].get("model") == "down"
                   for r in bench.requests)


def test_nothing_is_lost_when_a_stage_fails(gateway, bench):
    """Every seat, every ranking and every writer asked is an offload line and a calls-log entry."""
    convene(["judge-json", "judge-text", "judge-junk"], council={"chairman": "down"}, merger="writer")
    bench.set_model("writer", fail="500", context_window=128000)
    _, told = ask(gateway)
    calls = [s["call"] for s in told["seats"]] + [r["call"] for r in told["council"]["rankings"]] \
        + [told["council"]["chairman"]["call"], told["merger"]["call"]]
    lines = logged()
    assert len(calls) == 3 + 6 + 2 and all(c in lines for c in calls)
    [line] = fileio.read_jsonl(paths.file("runs", "gateway", "calls.jsonl"))
    assert [s["call"] for s in line["seats"]] == calls


def test_rankings_can_be_judged_but_are_never_owed(gateway, bench):
    convene(["judge-json", "judge-text", "judge-first"])
    _, told = ask(gateway)
    ranking = told["council"]["rankings"][0]["call"]
    seats = [s["call"] for s in told["seats"]]
    assert offload.pending(seats + [ranking]) == seats
    judged = offload.verdict(ranking, True, "a fair ranking")
    assert judged.useful is True and judged.ranked == tuple(told["council"]["rankings"][0]["ranked"])
    assert offload.pending([ranking]) == []
    assert "judge-json" not in offload.record("bench/c")  # a ranking counts towards no model's record
    assert sorted(r.call for r in offload.rankings("bench/c")) == sorted(r["call"] for r in told["council"]["rankings"])
    from benchwarmers.dashboard import gatewaycard

    [card] = gatewaycard.panels()
    assert len(card["seats"]) == 3 + 6 + 1 and card["owed"] == 3 + 1  # the seats and the chairman, no ranking


def test_the_council_streams_stage_by_stage(gateway, bench):
    convene(["judge-json", "judge-text", "judge-first"])
    chunks = list(sdk(gateway).chat.completions.create(model="bench/c:council", stream=True,
                                                       messages=[{"role": "user", "content": QUESTION}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    at = [text.index(mark) for mark in ("## member", "**Peer ranking**", "| place |", "**Chairman's answer**",
                                        bench.answer_for("chair", QUESTION), "record a verdict")]
    assert at == sorted(at)
    assert len(re.findall(r"^- `p[\w-]+\.rank-member\d(-rev)?` judge-", text, re.M)) == 6
    assert chunks[-1].model_extra["bench"]["reply"] == "council"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_council_in_every_client_api(gateway, bench, stream):
    convene(["judge-json", "judge-text", "judge-first"])
    said = [{"role": "user", "content": QUESTION}]
    model = "bench/c:council"
    chair = bench.answer_for("chair", QUESTION)
    openai_sdk = sdk(gateway)
    claude = anthropic.Anthropic(base_url=gateway, api_key="x", max_retries=0)
    google = genai.Client(api_key="x", http_options=types.HttpOptions(base_url=gateway))
    local = ollama.Client(host=gateway)
    if stream:
        texts = {
            "chat": "".join(c.choices[0].delta.content or "" for c in openai_sdk.chat.completions.create(
                model=model, messages=said, stream=True) if c.choices),
            "completions": "".join(c.choices[0].text for c in openai_sdk.completions.create(
                model=model, prompt=QUESTION, stream=True) if c.choices),
            "responses": "".join(e.delta for e in openai_sdk.responses.create(model=model, input=QUESTION, stream=True)
                                 if e.type == "response.output_text.delta"),
            "gemini": "".join(c.text or "" for c in google.models.generate_content_stream(model=model,
                                                                                        contents=QUESTION)),
            "ollama": "".join(p.message.content for p in local.chat(model=model, messages=said, stream=True)),
        }
        with claude.messages.stream(model=model, max_tokens=1024, messages=said) as running:
            texts["anthropic"] = "".join(running.text_stream)
    else:
        texts = {
            "chat": openai_sdk.chat.completions.create(model=model, messages=said).choices[0].message.content,
            "completions": openai_sdk.completions.create(model=model, prompt=QUESTION).choices[0].text,
            "responses": openai_sdk.responses.create(model=model, input=QUESTION).output_text,
            "anthropic": claude.messages.create(model=model, max_tokens=1024, messages=said).content[0].text,
            "gemini": google.models.generate_content(model=model, contents=QUESTION).text,
            "ollama": local.chat(model=model, messages=said).message.content,
        }
    for api, text in texts.items():
        assert chair in text and "| place |" in text and "## member" in text, api
        if not stream:
            assert text.startswith(chair), api


def test_read_ranking_takes_json_or_a_final_list_and_never_guesses():
    labels = ["A", "B", "C"]
    assert council.read_ranking('{"ranking": ["Response B", "C", "response a"]}', labels) == ["B", "C", "A"]
    assert council.read_ranking("A is good.\nFINAL RANKING:\n1. Response C\n2. Response A\n3. Response B",
                                labels) == ["C", "A", "B"]
    assert council.read_ranking("FINAL RANKING:\n1. Response C\n2. Response A", labels) is None  # one missing
    assert council.read_ranking("FINAL RANKING: Response A, Response A, Response B", labels) is None
    assert council.read_ranking('{"ranking": ["Response B", "Response Z", "Response A"]}', labels) is None
    assert council.read_ranking("I like B best.", labels) is None


def board(gateway, source):
    import http.client
    host, port = gateway.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", f"/bench/leaderboard?collection=bench/c&source={source}")
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    return response.status, answer


def test_the_leaderboard_fits_peer_rankings_verdicts_or_both(gateway, bench):
    convene(["judge-json", "judge-text", "judge-first"])
    _, told = ask(gateway)
    status, verdicts = board(gateway, "verdicts")
    assert status == 200 and verdicts["source"] == "verdicts" and verdicts["models"] == []
    _, peer = board(gateway, "peers")
    # the length judges put judge-first last both times; the first-preferring judge cancels itself out
    assert [m["model"] for m in peer["models"]][-1] == "judge-first" and peer["panels"] == 1
    assert peer["comparisons"] == 6 * 1  # six readable rankings of two answers: one pair each
    seat = {s["alias"]: s["call"] for s in told["seats"]}
    offload.verdict(seat["judge-first"], True, "short and right")
    offload.verdict(seat["judge-json"], False, "too long")
    _, people = board(gateway, "verdicts")
    assert [m["model"] for m in people["models"]] == ["judge-first", "judge-json"]
    _, both = board(gateway, "both")
    assert both["comparisons"] == 6 + 1 and both["panels"] == 1
    # judge-text ranked judge-json over judge-first twice; the people judged the other way
    assert {r["model"]: (r["pairs"], r["agreement"]) for r in both["rankers"]}["judge-text"] == (2, 0.0)
    status, refused = board(gateway, "gossip")
    assert status == 400 and refused["error"]["message"] == peers.BAD_SOURCE


def test_a_rankers_own_model_never_counts_for_itself():
    ranking = offload.line({"model": "m1", "call": "p1.rank-member1", "ranked": ["p1.member2", "p1.member3",
                                                                                "p1.member4"]})
    models = {"p1.member2": "m2", "p1.member3": "m1", "p1.member4": "m3"}  # m1 sat twice
    assert peers.pairs(ranking, models) == [("m2", "m3")]


def test_a_council_field_of_the_wrong_kind_is_named(home):
    from benchwarmers.panel import collections

    assert collections.field_problems({"council": {"orders": 3, "chairman": 7}}) == [
        '"council.orders" must be 1 or 2; got a number',
        '"council.chairman" must be a model alias (a string); got a number']
    assert collections.field_problems({"council": "yes"}) == [
        '"council" must be an object with "orders" and "chairman"; got "yes"']
    found = collections.record("c", {"members": ["a"], "council": {"orders": 1, "chairman": "b"}})
    assert (found.council_orders, found.council_chairman) == (1, "b")
    assert (collections.record("c", {}).council_orders, collections.record("c", {}).council_chairman) == (2, "")


def test_bench_settings_names_the_collections_that_set_council_keys(home):
    from benchwarmers.core import settings

    demo.set_collection("c", ["a"], council={"orders": 1})
    demo.set_collection("d", ["a"])
    rows = {s.label: (value, source) for s, value, source in settings.effective({}, paths.data())}
    assert rows["collections.json <name>.council.orders"] == ("c", "data folder")
    assert rows["collections.json <name>.council.chairman"] == ("none", "default")


def test_the_peer_study_runs_and_tables_every_source():
    """benchmarks/learning.py --peers in a short mode: it completes and tables every source and scenario (the
    figures are measured by the full run, benchmarks/README.md, never asserted here)."""
    from benchmarks import learning

    found = learning.peer_study(seeds=2, prompts=50)
    assert list(found) == list(learning.SCENARIOS) and all(list(points) == [50] for points in found.values())
    text = learning.peer_table(found, seeds=2)
    assert "| Judges | Source | τ at 50 |" in text and text.count("| peers, 2 orders |") == len(learning.SCENARIOS)


def test_a_caller_hanging_up_loses_no_seat_or_ranking(gateway, bench):
    """STR-9 for a council: every seat asked is logged after the client is gone, and every ranking asked too; once
    the gateway sees the caller gone it asks no more (no ranking, no chairman), as it asks no merger."""
    from conftest import hang_up_after_200, wait_for

    convene(["judge-json", "judge-text", "judge-first"])
    hang_up_after_200(gateway, "bench/c:council", QUESTION)
    calls = paths.file("runs", "gateway", "calls.jsonl")
    assert wait_for(lambda: calls.exists() and fileio.read_jsonl(calls))
    [line] = fileio.read_jsonl(calls)
    assert [s["seat"] for s in line["seats"]][:3] == ["member"] * 3
    asked = len(ranking_requests(bench))
    assert [s["seat"] for s in line["seats"]].count("ranking") == asked
    assert len([e for e in offload.entries() if e.ranked is not None]) == asked
