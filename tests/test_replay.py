"""Offline replay, issue 20 part 4: `python -m benchwarmers.panel.replay` on a crafted offload log, numbers worked by hand.

The log (shape review, bench/core unless said; lines in the order written):

    P1 seats alpha, beta        verdicts alpha no, beta yes
    P2 seats alpha, beta, gamma verdicts alpha yes, beta yes, gamma no
    P3 seats alpha, beta
    P4 seats alpha, beta        (P3's verdicts come after P4's seats: P4 must not see them)
                                verdicts P3 alpha yes, beta no; P4 alpha yes, beta no
                                P1's alpha changed to yes
    P6 (code) alpha, beta       verdicts alpha no, beta yes
    P5 seats alpha, beta        verdicts alpha no, beta yes
    P7 seats alpha, beta        verdict alpha yes only (a single judged seat: not replayed)
    P8 (bench/other) alpha, beta  verdicts alpha yes, beta no

On bench/core, review, the verdicts each panel's pick may see (review verdicts, any collection, before it):
P1 none; P2 alpha 0/1, beta 1/1; P3 and P4 alpha 1/2, beta 2/2; P5 alpha 4/4, beta 2/4.
The counted rule picks P1 alpha (nothing judged: the first seat), P2 beta, P3 beta, P4 beta, P5 alpha,
judged now yes, yes, no, no, no: 2 of 5. Had P4 peeked at P3's verdicts (alpha 2/3, beta 2/3, a tie kept in
seat order) it would have picked alpha, judged yes. A seat at random: 2/2 + 2/3 + 1/2 + 1/2 + 1/2 = 3 1/6.
"""

import json
import os
import random
import subprocess
import sys

import pytest

from benchwarmers.core import paths
from benchwarmers.panel import offload, policy, replay

EVIDENCE = [  # what each bench/core review panel's pick may see, worked out above
    ("P1", ["alpha", "beta"], {}),
    ("P2", ["alpha", "beta", "gamma"], {"alpha": (0, 1), "beta": (1, 1)}),
    ("P3", ["alpha", "beta"], {"alpha": (1, 2), "beta": (2, 2)}),
    ("P4", ["alpha", "beta"], {"alpha": (1, 2), "beta": (2, 2)}),
    ("P5", ["alpha", "beta"], {"alpha": (4, 4), "beta": (2, 4)}),
]
FINAL = {"P1": {"alpha": True, "beta": True}, "P2": {"alpha": True, "beta": True, "gamma": False},
         "P3": {"alpha": True, "beta": False}, "P4": {"alpha": True, "beta": False},
         "P5": {"alpha": False, "beta": True}}


def seats(panel, *models, collection="bench/core", shape="review"):
    keys = ["member1", "member2", "explorer"]
    for key, model in zip(keys, models):
        offload.add(model, f"Check the parser ({collection}, {shape})", None, "member; ok in 1.0s",
                    call=f"{panel}.{key}", status="ok", seconds=1.0, collection=collection, shape=shape)


def judge(panel, *verdicts):
    keys = ["member1", "member2", "explorer"]
    for key, useful in zip(keys, verdicts):
        if useful is not None:
            offload.verdict(f"{panel}.{key}", useful, "checked")


@pytest.fixture
def crafted(home):
    seats("P1", "alpha", "beta")
    judge("P1", False, True)
    seats("P2", "alpha", "beta", "gamma")
    offload.add("delta", "Check the parser (bench/core, review)", True, "merger; ok", call="P2.merger",
                collection="bench/core", shape="review")  # a merger is evidence, never a candidate
    judge("P2", True, True, False)
    seats("P3", "alpha", "beta")
    seats("P4", "alpha", "beta")
    judge("P3", True, False)
    judge("P4", True, False)
    offload.verdict("P1.member1", True, "looked again")
    seats("P6", "alpha", "beta", shape="code")
    judge("P6", False, True)
    seats("P5", "alpha", "beta")
    judge("P5", False, True)
    seats("P7", "alpha", "beta")
    judge("P7", True, None)
    seats("P8", "alpha", "beta", collection="bench/other")
    judge("P8", True, False)


def test_issue20_replay_counted_rule_by_hand(crafted):
    """The counted rule's picks and scores, the random expectation, the single-seat panel left out, no peeking."""
    result = replay.replay("counted", collection="bench/core", shape="review")
    assert [(p[0], p[1], p[2]) for p in result["picks"]] == [
        ("P1", "alpha", True), ("P2", "beta", True), ("P3", "beta", False), ("P4", "beta", False),
        ("P5", "alpha", False)]
    assert (result["panels"], result["useful"], result["counted_useful"], result["skipped"]) == (5, 2, 2, 1)
    assert result["random_useful"] == pytest.approx(1 + 2 / 3 + 3 / 2)
    everything = replay.replay("counted")  # P6 (code: nothing judged before it, alpha, no) and P8 (alpha 5/6, yes)
    assert [(p[0], p[1], p[2]) for p in everything["picks"]][4:] == [
        ("P6", "alpha", False), ("P5", "alpha", False), ("P8", "alpha", True)]  # in the order the panels ran
    assert (everything["panels"], everything["useful"]) == (7, 3)
    assert everything["random_useful"] == pytest.approx(1 + 2 / 3 + 3 / 2 + 1)


def test_issue20_replay_thompson_sees_only_earlier_verdicts(crafted):
    """Thompson's picks are the draws from the hand-worked evidence, in panel order, from the seeded generator;
    each scores its seat's verdict, and the counted rule's column stays the same."""
    result = replay.replay("thompson", collection="bench/core", shape="review", seed=11)
    draw = random.Random(11)
    expected = []
    for panel, candidates, counts in EVIDENCE:
        record = {a: {"useful": u, "judged": j} for a, (u, j) in counts.items()}
        pick = policy.pick("thompson", candidates, record, draw)
        expected.append((panel, pick, FINAL[panel][pick]))
    assert [(p[0], p[1], p[2]) for p in result["picks"]] == expected
    assert result["useful"] == sum(e[2] for e in expected) and result["counted_useful"] == 2
    assert replay.replay("thompson", collection="bench/core", shape="review", seed=11) == result  # repeatable


def test_issue20_replay_intervals_by_hand():
    """Wilson's 95% interval: 2 of 4 → centre 1/2, half-width 1.96/7.8415 × √(1 + 0.9604) = 0.350; paired edge."""
    low, high = replay.wilson(2, 4)
    assert (round(low, 3), round(high, 3)) == (0.15, 0.85)
    assert replay.wilson(0, 0) == (0.0, 1.0) and replay.wilson(0, 5)[0] == 0.0
    picks = [("a", "x", True, "y", False), ("b", "x", True, "y", True), ("c", "x", False, "y", False),
             ("d", "x", True, "y", False)]
    mean, low, high = replay.paired(picks)  # differences 1, 0, 0, 1: mean 1/2, sd √(1/3), se √(1/12)
    assert mean == 0.5 and high - mean == pytest.approx(1.959964 * (1 / 12) ** 0.5)
    assert replay.paired(picks[:1]) is None


def test_issue20_replay_command_as_a_user_types_it(crafted, capsys):
    """`python -m benchwarmers.panel.replay` prints the three rates with intervals; `--json` the same figures; a bad
    shape or policy is refused (exit 2); an empty scope says how to get a panel judged."""
    done = subprocess.run([sys.executable, "-m", "benchwarmers.panel.replay", "--policy", "counted", "--collection", "core",
                           "--shape", "review"], cwd=paths.CODE, text=True, capture_output=True,
                          env=dict(os.environ), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Replayed 5 judged panels (bench/core, review) with the counted policy: each picks one of the panel's "
        "judged seats, on the verdicts given before the panel.",
        "  counted: 2 of 5 picks judged useful (40%; 95% interval 12% to 77%)",
        "  counted (the contract's rule): 2 of 5 picks judged useful (40%; 95% interval 12% to 77%)",
        "  a seat at random: 3.2 of 5 expected (63%)",
        "Not replayed: 1 panel with a single judged seat (nothing to choose between)."]

    def run(*args):
        capsys.readouterr()
        code = replay.main(list(args))
        return code, capsys.readouterr()

    code, said = run("--policy", "thompson", "--collection", "bench/core", "--shape", "review", "--seed", "11",
                     "--json")
    figures = json.loads(said.out)
    assert code == 0 and figures["panels"] == 5 and figures["counted_rate"] == 0.4 and figures["seed"] == 11
    assert [p["panel"] for p in figures["picks"]] == ["P1", "P2", "P3", "P4", "P5"] and "edge" in figures
    assert "thompson − counted:" in run("--policy", "thompson", "--collection", "core")[1].out
    for bad, said in ((["--shape", "poetry"], "unknown shape 'poetry'; known: code, design"),
                      (["--policy", "bandit"], "invalid choice: 'bandit'")):
        with pytest.raises(SystemExit) as stop:
            replay.main(["--policy", "thompson", *bad])
        assert stop.value.code == 2 and said in capsys.readouterr().err
    assert run("--policy", "counted", "--collection", "bench/none")[1].out.startswith(
        "No judged panel to replay (bench/none, every shape)")
