"""The Review page's routes on a real dashboard (dashboard.md §8.13, REV-2..5; issue 31 item 4): the queue's filters
and both orders, one panel in full, a later verdict superseding an earlier one, and the vendored scripts served."""

import datetime
import http.client
import json

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.dashboard import review
from benchwarmers.panel import leaderboard, offload
from reviewbench import FIVE, ask, call, dashboard


@pytest.fixture
def dash(home, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with dashboard() as port:
        yield port


def queue(port, **query):
    path = "/api/review?" + "&".join(f"{k}={v}" for k, v in query.items())
    status, body = call(port, "GET", path)
    assert status == 200, body
    return body


def judge(port, call_id, useful, **more):
    status, body = call(port, "POST", "/bench/verdict", {"call": call_id, "useful": useful, **more})
    assert status == 200 and body["ok"], body
    return body


def test_the_queue_lists_owed_panels_oldest_first_and_filters_them_rev2(dash):
    first, second = ask(dash, "core", "Review x = 1"), ask(dash, "core", "Review y = 2")
    third = ask(dash, "pair", "Review z = 3")
    body = queue(dash)
    assert [p["panel"] for p in body["panels"]] == [first["panel"], second["panel"], third["panel"]]
    assert body["owed"] == body["shown"] == 12 and body["order"] == "oldest"
    row = body["panels"][0]
    assert (row["collection"], row["seats"], row["owed"], row["models"]) == ("bench/core", 5, 5, sorted(FIVE))
    assert row["why"].startswith("owed since ") and row["why"].endswith("the oldest owed first")
    assert body["choices"] == {"collection": ["bench/core", "bench/pair"], "shape": ["general", "review"], "model": sorted(FIVE)}

    assert [p["panel"] for p in queue(dash, collection="pair")["panels"]] == [third["panel"]]  # `core` reads bench/core
    assert len(queue(dash, collection="bench/core")["panels"]) == 2
    assert [p["panel"] for p in queue(dash, shape="review")["panels"]] == [third["panel"]]
    kept = queue(dash, model="gamma")
    assert [p["panel"] for p in kept["panels"]] == [first["panel"], second["panel"]]
    assert (kept["owed"], kept["shown"]) == (12, 10)  # the badge counts everything owed, `shown` what is kept
    today = datetime.date.today()
    assert len(queue(dash, since=today.isoformat(), until=today.isoformat())["panels"]) == 3
    assert queue(dash, since=(today + datetime.timedelta(days=1)).isoformat())["panels"] == []
    assert queue(dash, until=(today - datetime.timedelta(days=1)).isoformat())["panels"] == []
    status, body = call(dash, "GET", "/api/review?since=yesterday")
    assert status == 400 and body["errors"] == ["since must be a date as YYYY-MM-DD"]
    status, body = call(dash, "GET", "/api/review?order=newest")
    assert status == 400 and body["errors"] == ["order must be oldest or teaches"]

    for seat in first["seats"]:  # a judged panel leaves the queue; an errored seat would owe nothing (VRD-3)
        judge(dash, seat["call"], True)
    assert [p["panel"] for p in queue(dash)["panels"]] == [second["panel"], third["panel"]]
    judge(dash, second["seats"][0]["call"], False)
    assert queue(dash)["panels"][0]["owed"] == 4 and queue(dash)["owed"] == 6


def test_teaches_most_puts_the_panel_that_would_narrow_the_leaderboard_first_rev3(dash):
    older, newer = ask(dash, "core", "Review a"), ask(dash, "core", "Review b")
    for seat in older["seats"][1:]:  # one seat left owing: nothing to compare it with
        judge(dash, seat["call"], seat["alias"] in ("alpha", "gamma"))
    oldest = queue(dash, order="oldest")["panels"]
    assert [p["panel"] for p in oldest] == [older["panel"], newer["panel"]]
    taught = queue(dash, order="teaches")
    assert [p["panel"] for p in taught["panels"]] == [newer["panel"], older["panel"]]
    top, last = taught["panels"]
    assert top["teaches"] > 0 and top["why"] == "alpha is not ranked on bench/core yet: verdicts here place it"
    assert last["teaches"] == 0 and last["why"] == "only alpha owes a verdict here: nothing to compare it with"


def test_teaching_weighs_overlapping_intervals_and_unranked_models_rev3():
    board = {"models": [{"model": "a", "low": -1.0, "high": 1.0}, {"model": "b", "low": 0.0, "high": 2.0},
                        {"model": "c", "low": 3.0, "high": 4.0}]}
    row = {"collection": "bench/core", "owed_models": ["a", "b"]}
    assert review.teaching(row, board) == (1.0, "a and b overlap by 1.00 on bench/core's leaderboard: "
                                                "this prompt can tell them apart")
    apart = review.teaching({**row, "owed_models": ["a", "c"]}, board)
    assert apart == (0.0, "the intervals of a, c on bench/core are already apart")
    new = review.teaching({**row, "owed_models": ["a", "z"]}, board)
    assert new == (review.UNRANKED_OVERLAP, "z is not ranked on bench/core yet: verdicts here place it")
    assert review.teaching({**row, "owed_models": ["a", "b", "z"]}, board)[0] > new[0]


def test_one_panel_in_full_with_each_seat_and_its_verdict_rev4(dash):
    fileio.write_atomic(paths.file("config", "model-overrides.json"),  # a list price for alpha only
                        json.dumps({"alpha": {"cost": {"input": 3.0, "output": 15.0}}}))
    bench = ask(dash, "pair", "# Title\n\nReview `x = 1`")
    status, body = call(dash, "GET", "/api/review-panel?panel=" + bench["panel"])
    assert status == 200 and body["ok"]
    assert (body["collection"], body["shape"], body["key"]) == ("bench/pair", "review", "local")
    assert body["prompt"] == "# Title\n\nReview `x = 1`"
    seats = body["seats"]
    assert [(s["alias"], s["seat"], s["kind"], s["status"]) for s in seats] == [
        ("alpha", "member", "member", "ok"), ("beta", "member", "member", "ok")]
    assert seats[0]["answer"].startswith("The loop skips the **first** item") and seats[0]["owes"] is True
    usage = seats[0]["usage"]
    assert seats[0]["cost"] == round((usage["prompt_tokens"] * 3 + usage["completion_tokens"] * 15) / 1e6, 6) > 0
    assert seats[1]["usage"] and seats[1]["cost"] is None  # no price known for beta
    assert (seats[0]["useful"], seats[0]["real"], seats[0]["false"]) == (None, [], [])
    assert seats[0]["note"].startswith("member; ok in ")  # the seat's own note until a verdict says more
    judge(dash, seats[1]["call"], True, real=["the bounds hold"])
    again = call(dash, "GET", "/api/review-panel?panel=" + bench["panel"])[1]["seats"][1]
    assert (again["useful"], again["real"], again["owes"]) == (True, ["the bounds hold"], False)
    status, body = call(dash, "GET", "/api/review-panel?panel=p-nope")
    assert status == 404 and body["errors"] == ["no gateway panel with id 'p-nope'"]
    assert "window.BENCH" in _get(dash, "/api/review-panel")[1]  # RT-6: without a query the path is the page


def test_a_later_verdict_supersedes_the_earlier_one_everywhere_rev5(dash):
    bench = ask(dash, "pair", "Review x")
    alpha, beta = (s["call"] for s in bench["seats"])
    judge(dash, alpha, True, real=["skips the first item"])
    judge(dash, beta, False)
    judge(dash, alpha, False)  # changed mind: k back to the panel, then n
    lines = [json.loads(line) for line in paths.file("metrics", "offloads.jsonl").read_text().splitlines()]
    assert [(line["call"], line["useful"]) for line in lines if line.get("call") == alpha] == \
        [(alpha, None), (alpha, True), (alpha, False)]
    assert offload.by_call(alpha).useful is False and offload.by_call(alpha).real == ("skips the first item",)
    assert offload.record("pair")["alpha"] == {"useful": 0, "notUseful": 1, "judged": 1, "lastAt": offload.by_call(alpha).date}
    seat = call(dash, "GET", "/api/review-panel?panel=" + bench["panel"])[1]["seats"][0]
    assert seat["useful"] is False and seat["real"] == ["skips the first item"]
    board = leaderboard.board("bench/pair", resamples=10)
    assert board["unranked"] == [{"model": "alpha", "judged": 1, "useful": 0}, {"model": "beta", "judged": 1, "useful": 0}]
    assert queue(dash)["owed"] == 0


def test_the_page_carries_the_owed_count_and_the_vendored_scripts_rev1(dash):
    ask(dash, "core", "Review x")
    conn_status, page = _get(dash, "/")
    assert conn_status == 200 and '"owed": 5' in page and 'id="t-review"' in page
    assert page.index('<script src="/ui/vendor/marked.umd.js">') < page.index("window.Bench = ")
    for name, marker in (("marked.umd.js", b"marked v18.3.0"), ("purify.min.js", b"DOMPurify 3.5.0")):
        status, body = _get(dash, "/ui/vendor/" + name, text=False)
        assert status == 200 and marker in body[:400]
    assert _get(dash, "/ui/vendor/README.md")[0] == 404  # only the named files


def _get(port, path, text=True):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    return resp.status, raw.decode("utf-8") if text else raw
