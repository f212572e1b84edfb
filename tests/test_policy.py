"""The policy switch of issue 20 part 3: `config/gateway.json`'s `"policy"` and `metrics/panel/policy.py`.

The default (`"counted"`) must make exactly the contract's choices (MRG-3, RT-6); `"thompson"` must
change them in the way Thompson sampling does, from a generator a test can seed. The panels run
through the real gateway and the local upstream; route mode's order is `route_mode.rank` on a real
offload log.
"""

import collections as counters
import http.client
import json
import random

import pytest

from benchwarmers.core import changes, errors, fileio, paths
from benchwarmers.panel import collections, offload, policy, route_mode
from benchwarmers.demo import demo
from benchwarmers.admin import collectionedit

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"


def use_policy(name=None, **more):
    """gateway.json as the tests' bench has it (no explorers), with `policy` when given."""
    settings = {"max_calls": 5, "max_explorers": 0, **more}
    if name is not None:
        settings["policy"] = name
    fileio.write_atomic(paths.file("config", "gateway.json"), json.dumps(settings))


def merged_panel(gw):
    """One merged panel on bench/core: the merger's alias."""
    host, port = gw.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", "/v1/chat/completions",
                 json.dumps({"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]}).encode(),
                 {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read())
    conn.close()
    return reply["bench"]["merger"]["alias"]


def judged(model, useful, times, shape="general"):
    for i in range(times):
        offload.add(model, f"earlier work (bench/core, {shape})", useful, "checked",
                    call=f"old-{model}-{shape}-{useful}-{i}.member1", collection="bench/core", shape=shape)


# -- the setting ---------------------------------------------------------------------------------------------------

def test_issue20_policy_setting_defaults_to_counted_and_says_a_bad_value(capsys):
    """The key is read like the file's other values: absent → counted; a bad value keeps the default and is said."""
    assert collections.settings().policy == "counted"  # no gateway.json at all
    use_policy()
    assert collections.settings().policy == "counted" and collections.settings_problems() == []
    use_policy("thompson")
    assert collections.settings().policy == "thompson" and collections.settings_problems() == []
    for bad, shown in (("bandit", '"bandit"'), (3, "3"), (None, "null")):
        use_policy(max_calls=5, **{"policy": bad})
        assert collections.settings().policy == "counted"
        assert collections.settings_problems() == [
            f'policy must be "counted" or "thompson"; got {shown}, using "counted"']
    assert 'config/gateway.json: policy must be "counted" or "thompson"; got "bandit"' in capsys.readouterr().err


def test_co10_issue20_settings_editor_sets_the_policy():
    """CO-10 extended: `policy` optional (kept when absent), checked, written and logged with the limits."""
    use_policy()
    assert collectionedit.view()["settings"]["policy"] == "counted"
    with pytest.raises(errors.Invalid) as refused:
        collectionedit.gateway_settings({"max_calls": 5, "max_explorers": 2, "policy": "greedy"}, "admin")
    assert refused.value.body() == {"ok": False, "errors": [
        "policy must be counted or thompson (the merger choice and route mode's order)"]}
    assert collections.settings().policy == "counted"
    assert collectionedit.gateway_settings({"max_calls": 5, "max_explorers": 2, "policy": "thompson"}, "admin")["ok"]
    assert collections.settings().policy == "thompson"
    line = fileio.read_jsonl(changes.path())[-1]
    assert line["old"]["policy"] == "counted" and line["new"]["policy"] == "thompson"
    assert collectionedit.gateway_settings({"max_calls": 4, "max_explorers": 1}, "admin")["ok"]
    assert fileio.read_json(paths.file("config", "gateway.json"))["policy"] == "thompson"  # absent: kept
    assert "policy" not in fileio.read_jsonl(changes.path())[-1]["new"]


# -- the two rules ---------------------------------------------------------------------------------------------------

def test_mrg3_counted_rule_by_hand():
    """MRG-3: most useful verdicts first, then the higher ratio; unjudged left out; ties keep the order."""
    record = {"a": {"useful": 2, "judged": 4}, "b": {"useful": 2, "judged": 2}, "c": {"useful": 3, "judged": 9},
              "d": {"useful": 0, "judged": 0}, "e": {"useful": 0, "judged": 1}, "f": {"useful": 0, "judged": 3}}
    assert policy.counted(["a", "b", "c", "d", "e", "f", "g"], record) == ["c", "b", "a", "e", "f"]
    assert policy.ranked("counted", ["a", "b"], record) == ["b", "a"]
    assert policy.pick("counted", ["g", "d"], record) == "g"  # nothing judged: the first candidate
    assert policy.pick("thompson", [], record) is None


def test_issue20_thompson_draws_from_the_posterior_and_is_seedable():
    """Each candidate's draw is Beta(1 + useful, 1 + not useful); the same seed gives the same orders."""
    assert policy.posterior({"a": {"useful": 3, "judged": 5}}, "a") == (4, 3)
    assert policy.posterior({}, "new") == (1, 1)
    record = {"strong": {"useful": 40, "judged": 50}, "weak": {"useful": 2, "judged": 10}}
    policy.seed(20)
    first = [policy.thompson(["weak", "strong", "new"], record) for _ in range(300)]
    policy.seed(20)
    assert [policy.thompson(["weak", "strong", "new"], record) for _ in range(300)] == first
    leaders = counters.Counter(order[0] for order in first)
    # P(new's uniform draw beats strong's Beta(41, 11), about 0.79) ≈ 0.2; weak's Beta(3, 9) almost never does
    assert 0.7 * 300 < leaders["strong"] < 0.9 * 300
    assert 0.1 * 300 < leaders["new"] < 0.3 * 300
    assert leaders["weak"] < 0.02 * 300
    own = [policy.thompson(["a", "b"], {}, random.Random(5)) for _ in range(3)]
    assert own == [policy.thompson(["a", "b"], {}, random.Random(5)) for _ in range(3)]  # a caller's own stream


# -- the merger choice through the real gateway (MRG-3) ------------------------------------------------------------

def test_mrg3_issue20_default_merger_unchanged_thompson_changes_it(gateway):
    """alpha has the longer record (3 useful of 5), beta one lucky verdict: the counted rule (default or named)
    always merges with alpha; Thompson, seeded, sometimes tries beta (its posterior mean is higher)."""
    demo.set_collection("core", ["alpha", "beta"], reply="merged")
    judged("alpha", True, 3)
    judged("alpha", False, 2)
    judged("beta", True, 1)
    judged("beta", True, 5, shape="code")  # another shape's verdicts never count for this one
    assert offload.shape_record("general")["beta"] == {"useful": 1, "judged": 1}
    use_policy()
    assert {merged_panel(gateway) for _ in range(3)} == {"alpha"}
    use_policy("counted")
    assert {merged_panel(gateway) for _ in range(3)} == {"alpha"}
    use_policy("thompson")
    policy.seed(3)
    picks = [merged_panel(gateway) for _ in range(8)]
    policy.seed(3)
    expected = [policy.thompson(["alpha", "beta"], offload.shape_record("general"))[0] for _ in range(8)]
    assert picks == expected and set(picks) == {"alpha", "beta"}


# -- route mode's order (RT-6) ---------------------------------------------------------------------------------------

ROUTE_MODELS = {name: {"answer": f"{name} answers.", "context_window": 32000, "tools": True}
                for name in ("steady", "backup", "plain")}


@pytest.fixture
def route_models():
    return ROUTE_MODELS


def test_rt6_issue20_route_order_counted_by_default_thompson_when_chosen(routed):
    """RT-6's tuple under the default; Thompson's draws over the whole log's verdicts when chosen, cooling
    members still last."""
    offload.add("backup", "t (bench/core, general)", True, "good", call="p1.member1")
    offload.add("backup", "t (bench/core, general)", True, "good", call="p2.member1")
    offload.add("steady", "t (bench/core:route)", True, "good", call="r1.1", collection="bench/core")
    offload.add("plain", "t (bench/core, code)", False, "bad", call="p3.member1")
    members = ["steady", "backup", "plain"]
    assert {tuple(route_mode.rank(members)) for _ in range(5)} == {("backup", "steady", "plain")}
    fileio.update(paths.file("config", "gateway.json"), lambda d: d.update(policy="thompson"))
    policy.seed(6)
    orders = [route_mode.rank(members) for _ in range(40)]
    policy.seed(6)
    everyone = offload.summary()
    assert orders == [policy.thompson(members, everyone) for _ in range(40)]
    assert len({tuple(o) for o in orders}) > 1 and {o[0] for o in orders} >= {"backup", "steady"}
    from benchwarmers.models import learn
    learn.cool("backup", 60, "rate limited", "test")
    assert {route_mode.rank(members)[-1] for _ in range(10)} == {"backup"}


# -- issue 20's gateway fixes, found by the simulated bench (benchmarks/learning.py) --------------------------------

def route_turn(port, text):
    """One route turn on bench/core: its `bench`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps(
        {"model": "bench/core:route", "messages": [{"role": "user", "content": text}]}).encode(),
        {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read())
    conn.close()
    return reply["bench"]


def test_rt6_issue20_thompson_route_turn_draws_on_its_shape_and_logs_it(routed):
    """Under Thompson a new conversation's shape is picked (the upstream's `decides` reads the prompt) and the
    members are drawn from their verdicts on that shape; its offload line carries the shape. The default asks
    no picker and ranks on the whole log (RT-6)."""
    from conftest import running_gateway

    routed.set_model("picker", decides={"shape": {"[code]": {"choice": "code", "confidence": 0.9}}})
    fileio.write_atomic(paths.file("config", "decision-models.json"),
                        json.dumps({"picker": {"via": "demo", "served": "picker", "question_types": ["choice"]}}))
    demo.set_collection("core", ["steady", "backup", "plain"])
    judged("steady", True, 40)  # the whole log's favourite
    judged("steady", False, 30, shape="code")
    judged("backup", False, 30, shape="code")
    judged("plain", True, 30, shape="code")  # the coder
    with running_gateway() as srv:
        port = srv.server_address[1]
        assert route_turn(port, "[code] write the parser")["alias"] == "steady"  # counted: RT-6's tuple
        use_policy("thompson", idle_timeout=5)
        policy.seed(1)
        turns = [route_turn(port, f"[code] write parser {i}") for i in range(4)]
    assert {t["alias"] for t in turns} == {"plain"}
    lines = {e.call: e.stored for e in offload.entries() if e.call}
    assert [lines[t["call"]].get("shape") for t in turns] == ["code"] * 4
    assert lines[turns[0]["call"]]["collection"] == "bench/core"
    first = [e.stored for e in offload.entries() if "write the parser" in e.task]
    assert len(first) == 1 and "shape" not in first[0]  # the default's line is RT-22's, unchanged


def test_rtr6_issue20_thompson_explorer_ties_go_to_the_least_seen(home):
    """RTR-6 counts staleness in whole days: models used today all tie. The default seats the first in
    registration order (every time, all day); Thompson's policy breaks the tie towards the fewest offloads."""
    from benchwarmers.models import endpoints, registry
    from benchwarmers.panel import route

    endpoint = endpoints.Endpoint("local", "http://127.0.0.1:9/v1", kind="local", default=True)
    paths.file("config", registry.NAME).write_text(
        "".join(registry.block(a, a, endpoint) for a in ("ant", "bee", "cat", "dog")), encoding="utf-8")
    for alias, times in (("ant", 3), ("bee", 2), ("cat", 1), ("dog", 1)):  # all today
        for i in range(times):
            offload.add(alias, "work (bench/core, general)", None, "", call=f"p{i}-{alias}.member1")

    def explorers():
        picks = route.pick_seats("general", members=[], explorers=2)
        return [picks["explorer"]["model"], picks["explorer2"]["model"]]

    use_policy(max_explorers=2)
    assert explorers() == ["ant", "bee"]
    use_policy("thompson", max_explorers=2)
    assert explorers() == ["cat", "dog"]
