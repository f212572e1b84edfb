"""The leaderboard of issue 20 part 2: `metrics/panel/leaderboard.py` and `GET /bench/leaderboard`.

The Bradley–Terry fit is checked against cases solved by hand and against a known ranking recovered
from synthetic panels; the route through the real gateway (refusals, an empty log, CSV, scoped keys)
and the dashboard's `/api/leaderboard`. The browser scenario is in tests/test_browser.py.
"""

import csv
import http.client
import io
import json
import math
import random

import pytest

from benchwarmers.dashboard import serve
from conftest import running_gateway
from benchwarmers.panel import leaderboard, offload
from benchwarmers.server import gatekeys

HAND = math.log(2) / 2


def seat(panel, key, model, useful, collection="bench/core", shape="review"):
    """One panel seat's line in the offload log, judged when `useful` is a bool."""
    offload.add(model, f"Is this right? ({collection}, {shape})", useful, "seat", call=f"{panel}.{key}",
                collection=collection, shape=shape)


def crafted_log():
    """P1: alpha and gamma useful, beta not, the merger useful (left out); P2: everyone useful (agrees);
    P3 (code): beta first judged not useful, then useful, alpha not; P4 in bench/other; P5 unjudged;
    a route conversation judged on bench/core (left out)."""
    seat("p1", "member1", "alpha", True)
    seat("p1", "member2", "beta", False)
    seat("p1", "explorer", "gamma", True)
    seat("p1", "merger", "delta", True)
    seat("p2", "member1", "alpha", True)
    seat("p2", "member2", "beta", True)
    seat("p3", "member1", "alpha", False, shape="code")
    seat("p3", "member2", "beta", None, shape="code")
    offload.verdict("p3.member2", False)
    offload.verdict("p3.member2", True, replace=True)
    seat("p4", "member1", "alpha", True, collection="bench/other")
    seat("p4", "member2", "beta", False, collection="bench/other")
    seat("p5", "member1", "alpha", None)
    offload.add("beta", "fix it (bench/core:route)", False, "conversation", call="r1.1", collection="bench/core")


# -- the fit ---------------------------------------------------------------------------------------------------------

def test_issue20_bt_fit_matches_hand_solved_cases():
    """Without a prior the MLE has closed forms: 2 wins to 1 → ln 2 apart; a chain at 3:1 each → ln 3 steps;
    a cycle → all equal. With the prior, one win of A over B solves x²/(x²+1) + x/(x+1) = 1.5 for x = e^score."""
    assert leaderboard.fit([("A", "B"), ("A", "B"), ("B", "A")], prior=0) == pytest.approx({"A": HAND, "B": -HAND})
    chain = [("A", "B")] * 3 + [("B", "A")] + [("B", "C")] * 3 + [("C", "B")]
    assert leaderboard.fit(chain, prior=0) == pytest.approx({"A": math.log(3), "B": 0, "C": -math.log(3)}, abs=1e-9)
    cycle = [("A", "B"), ("B", "C"), ("C", "A")]
    assert leaderboard.fit(cycle) == pytest.approx({"A": 0, "B": 0, "C": 0}, abs=1e-9)
    one = leaderboard.fit([("A", "B")])
    x = math.exp(one["A"])
    assert one["B"] == pytest.approx(-one["A"]) and x * x / (x * x + 1) + x / (x + 1) == pytest.approx(1.5)
    assert 2.12 < x < 2.14
    assert leaderboard.fit([], models=["lonely"]) == {"lonely": 0.0}  # no comparison: the anchor
    with pytest.raises(ValueError, match="B never won or never lost"):
        leaderboard.fit([("A", "B")], prior=0)


def test_issue20_bt_recovers_a_known_ranking_from_synthetic_panels():
    """Six models with known strengths, 600 three-seat panels, each seat judged useful with chance
    σ(strength) (so a disagreeing pair is a Bradley–Terry comparison): the fitted order is the true one,
    each score within 0.35 of the truth (centred), and the intervals hold the truth."""
    truth = {f"m{i}": 0.6 * i - 1.5 for i in range(6)}
    draw = random.Random(7)
    entries = []
    for n in range(600):
        for i, model in enumerate(draw.sample(sorted(truth), 3)):
            useful = draw.random() < 1 / (1 + math.exp(-truth[model]))
            entries.append(offload.line({"model": model, "useful": useful, "call": f"p{n}.member{i + 1}",
                                         "collection": "bench/core", "shape": "review",
                                         "task": "t (bench/core, review)"}))
    answer = leaderboard.board("bench/core", entries=entries, resamples=60)
    assert [row["model"] for row in answer["models"]] == sorted(truth, key=truth.get, reverse=True)
    fitted = {row["model"]: row["score"] for row in answer["models"]}
    shift = sum(fitted.values()) / 6 - sum(truth.values()) / 6
    assert all(abs(fitted[m] - shift - truth[m]) < 0.35 for m in truth)
    held = [row["low"] - shift <= truth[row["model"]] <= row["high"] - shift for row in answer["models"]]
    assert sum(held) >= 5  # 95% intervals: one of six may miss (here m1, by 0.02)
    best, worst = answer["models"][0], answer["models"][-1]
    assert best["low"] > worst["high"]  # the verdicts tell the ends apart


def test_issue20_comparisons_come_only_from_disagreeing_panel_seats():
    """A useful and a not-useful seat on one prompt are one comparison; agreeing panels, mergers, route
    conversations, unjudged seats and other collections add nothing; the verdict in force counts."""
    crafted_log()
    found = dict(leaderboard.panels(offload.entries(), "bench/core"))
    assert found == {"p1": {"alpha": True, "beta": False, "gamma": True}, "p2": {"alpha": True, "beta": True},
                     "p3": {"alpha": False, "beta": True}}
    assert leaderboard.comparisons(found["p1"]) == [("alpha", "beta"), ("gamma", "beta")]
    assert leaderboard.comparisons(found["p2"]) == []
    answer = leaderboard.board("bench/core")
    pairs = [("alpha", "beta"), ("gamma", "beta"), ("beta", "alpha")]
    scores = leaderboard.fit(pairs)
    assert (answer["panels"], answer["comparisons"], answer["resamples"]) == (2, 3, 200)
    assert [(r["model"], r["score"], r["comparisons"], r["wins"], r["judged"], r["useful"]) for r in answer["models"]] == [
        ("gamma", round(scores["gamma"], 3), 1, 1, 1, 1), ("alpha", round(scores["alpha"], 3), 2, 1, 3, 2),
        ("beta", round(scores["beta"], 3), 3, 1, 3, 2)]
    assert all(r["low"] <= r["score"] <= r["high"] for r in answer["models"])
    assert leaderboard.board("bench/core") == answer  # seeded: the same log, the same reply
    review = leaderboard.board("bench/core", "review")
    assert [r["model"] for r in review["models"]] == ["alpha", "gamma", "beta"] and review["comparisons"] == 2


def test_issue31_overlapping_intervals_share_a_rank():
    """Chatbot Arena's rule: rank = 1 + the models whose low is above this one's high. Overlapping intervals
    share a rank; a model is ranked below only the models it is told apart from, and the synthetic board's
    ends (told apart above) get different ranks while the fitted order still decides the listing."""
    rows = [{"low": 1.0, "high": 2.0}, {"low": 0.5, "high": 1.2}, {"low": 0.0, "high": 0.6}, {"low": -2.0, "high": -1.0}]
    assert leaderboard.shared_ranks(rows) == [1, 1, 2, 4]
    overlapping = [{"low": -0.5, "high": 1.5}, {"low": -1.0, "high": 1.0}, {"low": -1.4, "high": 0.6}]
    assert leaderboard.shared_ranks(overlapping) == [1, 1, 1]
    assert leaderboard.shared_ranks([]) == []
    crafted_log()
    answer = leaderboard.board("bench/core")
    assert [r["rank"] for r in answer["models"]] == leaderboard.shared_ranks(answer["models"]) == [1, 1, 1]


def test_issue31_unfitted_models_are_listed_with_why_and_left_out_verdicts_counted():
    """The merger delta (judged only as the merger) and a model judged only in route conversations are
    listed as unfitted with why, as is a model judged only in agreeing panels; beta's route verdict is
    counted in `left_out`, not in its useful/judged."""
    crafted_log()
    seat("p6", "member1", "epsilon", True)
    seat("p6", "member2", "alpha", True)
    offload.add("zeta", "fix it (bench/core:route)", True, "conversation", call="r2.1", collection="bench/core")
    offload.add("zeta", "fix it (bench/core:route)", False, "conversation", call="r2.2", collection="bench/core")
    answer = leaderboard.board("bench/core")
    assert answer["unranked"] == [{"model": "epsilon", "judged": 1, "useful": 1}]
    assert answer["unfitted"] == [
        {"model": "delta", "judged": 1, "useful": 1, "why": "only verdicts the leaderboard leaves out (1 as the merger)"},
        {"model": "epsilon", "judged": 1, "useful": 1, "why": "judged only in panels whose judged seats all agreed"},
        {"model": "zeta", "judged": 2, "useful": 1,
         "why": "only verdicts the leaderboard leaves out (2 in route conversations)"}]
    assert answer["left_out"] == {"merger": 1, "route": 3}
    beta = next(r for r in answer["models"] if r["model"] == "beta")
    assert (beta["judged"], beta["useful"]) == (3, 2)  # its route verdict is not among them
    assert leaderboard.board("bench/core", "review")["left_out"] == {"merger": 1, "route": 0}  # routes have no shape


# -- the route -------------------------------------------------------------------------------------------------------

def get(port, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}", **(headers or {})})
    response = conn.getresponse()
    raw = response.read().decode()
    conn.close()
    kind = response.getheader("Content-Type") or ""
    return response.status, response, json.loads(raw) if kind.startswith("application/json") else raw


def message(body):
    return body["error"]["message"]


def test_issue20_leaderboard_route_refusals_empty_log_json_and_csv():
    """400s for no collection (as `/bench/record`), an unknown shape and another format; an empty board on an
    empty log and for an unknown collection; the board as JSON and as a CSV download."""
    with running_gateway() as srv:
        port = srv.server_address[1]
        status, _, body = get(port, "/bench/leaderboard")
        assert status == 400 and message(body) == ("name the collection: GET /bench/leaderboard?collection=bench/<name>"
                                                   "[&shape=<shape>][&format=json|csv]")
        status, _, body = get(port, "/bench/leaderboard?collection=bench/core&shape=poetry")
        assert status == 400 and message(body).startswith("unknown shape 'poetry'; known: code, design, enumeration")
        status, _, body = get(port, "/bench/leaderboard?collection=bench/core&format=xml")
        assert status == 400 and message(body) == '"format" must be json or csv'
        empty = {"collection": "bench/core", "shape": "", "panels": 0, "comparisons": 0, "resamples": 0,
                 "level": 0.95, "models": [], "unranked": [], "unfitted": [], "left_out": {"merger": 0, "route": 0},
                 "source": "verdicts", "rankers": []}
        status, _, body = get(port, "/bench/leaderboard?collection=bench/core")
        assert status == 200 and body == empty
        crafted_log()
        status, _, body = get(port, "/bench/leaderboard?collection=core")  # IMP-6: the bare name too
        assert status == 200 and body == {**leaderboard.board("bench/core"), "source": "verdicts", "rankers": []}
        assert get(port, "/bench/leaderboard?collection=bench/nothing")[2]["models"] == []
        status, response, text = get(port, "/bench/leaderboard?collection=bench/core&shape=review&format=csv")
        assert status == 200 and response.getheader("Content-Type") == "text/csv; charset=utf-8"
        assert response.getheader("Content-Disposition") == 'attachment; filename="leaderboard-core-review.csv"'
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0] == list(leaderboard.COLUMNS) and [r[1] for r in rows[1:]] == ["alpha", "gamma", "beta"]
        assert rows[3][5:] == ["2", "0", "2", "1"]  # beta on review: 2 comparisons, no win, 1 useful of 2 judged


def test_issue20_leaderboard_scoped_keys_see_only_their_collections(monkeypatch):
    """As `/bench/record` (improvement 12): a key scoped to bench/other reads an empty board for bench/core;
    a key for every collection reads both; no key is a 401."""
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    crafted_log()
    everyone = {"Authorization": f"Bearer {gatekeys.make('chat-ui')}"}
    other = {"Authorization": f"Bearer {gatekeys.make('other-only', ['other'])}"}
    with running_gateway() as srv:
        port = srv.server_address[1]
        assert get(port, "/bench/leaderboard?collection=bench/core")[0] == 401
        assert [r["model"] for r in get(port, "/bench/leaderboard?collection=bench/core", everyone)[2]["models"]] == [
            "gamma", "alpha", "beta"]
        assert get(port, "/bench/leaderboard?collection=bench/core", other)[2]["models"] == []
        seen = get(port, "/bench/leaderboard?collection=bench/other", other)[2]
        assert [(r["model"], r["wins"]) for r in seen["models"]] == [("alpha", 1), ("beta", 0)]


def test_issue20_dashboard_serves_the_board_and_the_gateway_route():
    """The dashboard's port answers `/api/leaderboard` (admin; every collection) with the same board, and the
    gateway's `/bench/leaderboard` too, since serve.py extends the one route table."""
    crafted_log()
    srv = serve.serve("127.0.0.1", 0)
    try:
        port = srv.server_address[1]
        status, _, body = get(port, "/api/leaderboard?collection=bench/core")
        board = {**leaderboard.board("bench/core"), "source": "verdicts", "rankers": []}  # issue 32's two fields
        assert status == 200 and body == {"ok": True, "errors": [], **board}
        assert get(port, "/bench/leaderboard?collection=bench/core")[2] == board
        status, _, body = get(port, "/api/leaderboard?collection=bench/core&format=pdf")
        assert status == 400 and body == {"ok": False, "errors": ['"format" must be json or csv']}
        status, response, text = get(port, "/api/leaderboard?collection=bench/core&format=csv")
        assert status == 200 and text.splitlines()[1].startswith("1,gamma,")
        assert response.getheader("Access-Control-Allow-Origin") is None
    finally:
        srv.shutdown()
        srv.server_close()
