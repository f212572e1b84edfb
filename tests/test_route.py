"""metrics/panel/route.py: the explorer router (gateway.md §13 RTR-1..13, §16.1 ROL, §16.2 ALI-1, IMP-17)."""

import datetime
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import endpoints, history, learn, registry
from benchwarmers.panel import offload, route
from benchwarmers.demo.demo import Upstream

TODAY = datetime.date.today()
ENDPOINT = {"base": "http://127.0.0.1:9/v1", "key": "", "kind": "local", "default": True}


def days_ago(n):
    return (TODAY - datetime.timedelta(days=n)).isoformat()


def register(*models, endpoint=ENDPOINT):
    """Register `alias` or `(alias, served)` pairs, in this order (REG-1)."""
    text = ""
    for model in models:
        alias, served = (model, model) if isinstance(model, str) else model
        text += registry.block(alias, served, endpoints.record("main", endpoint))
    paths.file("config", registry.NAME).write_text(text, encoding="utf-8")


def write_json(*parts, data):
    fileio.write_atomic(paths.file(*parts), json.dumps(data))


def used(alias, ago, useful=None, task="a task (bench/core, general)"):
    fileio.append_jsonl(offload.log_path(), {"date": days_ago(ago), "model": alias, "task": task, "useful": useful,
                                             "note": ""})


def perf(*rows):
    """perf/history.csv rows as (model, prompt, answered), oldest first (PF-5 columns that matter here)."""
    lines = ["timestamp,model,prompt,n,answered"]
    lines += [f"2026-01-0{i % 9 + 1}T10:00:00,{m},{p},5,{a}" for i, (m, p, a) in enumerate(rows)]
    paths.file("perf", "history.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def task(name, answers, must_find=("alpha", "beta", "gamma", "delta"), **fields):
    """A suite task whose saved answers find the first `n` clauses: answers = {alias: n}."""
    folder = paths.file("suite", "tasks", name)
    (folder / "output").mkdir(parents=True, exist_ok=True)
    spec = {"title": name, "prompt": "find them", "must_find": list(must_find), **fields}
    (folder / "task.json").write_text(json.dumps(spec), encoding="utf-8")
    for alias, n in answers.items():
        text = n if isinstance(n, str) else "Findings: " + ", ".join(must_find[:n]) + ". " + "Reasoned at length. " * 3
        (folder / "output" / f"{alias}.md").write_text(text, encoding="utf-8")


def roles(models=None, ad_hoc=()):
    write_json("config", "model-roles.json", data={"models": models or {}, "ad_hoc": list(ad_hoc)})


def seated(result):
    return [r["model"] if r else None for r in (result["explorer"], result["explorer2"])]


# -- RTR-10 --------------------------------------------------------------------------------------

@pytest.mark.parametrize("served, fam", [
    ("vendor/inkling:free", "inkling"),
    ("Inkling", "inkling"),
    ("z-ai/glm-5.2", "glm52"),
    ("glm-5.3", "glm53"),
    ("org/sub/Big_Model.v2:beta", "bigmodelv2"),
])
def test_rtr10_family(served, fam):
    assert route.family(served) == fam


# -- RTR-6: staleness ----------------------------------------------------------------------------

def test_rtr6_stalest_first_and_ties_in_registration_order():
    register("a", "b", "c", "d")
    used("a", 1)
    used("b", 30)
    used("d", 30)
    # c never used (9999 days) beats b and d (30 days); b before d by registration order
    assert seated(route.pick_seats()) == ["c", "b"]


def test_rtr6_paid_then_lower_recall_break_ties(monkeypatch):
    monkeypatch.setattr(history, "SUITE_RECHECK", 0)  # tasks are written between two panels
    register(("a", "vendor/a"), ("b", "vendor/b"), ("c", "vendor/c"))
    write_json("config", "provider-tags.json", data={"vendor/a": "free", "vendor/b": "free", "vendor/c": "pro"})
    write_json("config", "connections.json", data={"preferred": ["pro"]})
    assert seated(route.pick_seats(members=[]))[0] == "c"  # all never used: the paid connection wins the tie
    write_json("config", "connections.json", data={})
    task("t1", {"a": 4, "b": 1})
    task("t2", {"a": 4, "b": 1})
    # equal staleness, no paid: unscored c (recall counts as 0) before b (0.25) before a (1.0)
    assert seated(route.pick_seats(members=[])) == ["c", "b"]


def test_rtr6_a_family_is_never_seated_twice():
    register(("ink", "vendor/inkling:free"), ("ink2", "Inkling"), ("glm52", "z-ai/glm-5.2"),
             ("glm53", "z-ai/glm-5.3"))
    result = route.pick_seats(members=["glm52"])
    assert seated(result) == ["ink", "glm53"]  # not ink2 (ink's family), not glm52 (sitting)
    only = route.pick_seats(members=["glm52", "glm53"])
    assert seated(only) == ["ink", None]
    assert any("no model left" in n for n in only["notes"])


def test_rtr6_avoid_is_skipped_but_nominees_ignore_it():
    register("a", "b", "c")
    assert seated(route.pick_seats(members=[], avoid={"a"})) == ["b", "c"]
    assert seated(route.pick_seats(members=[], nominees=["a"], avoid={"a"}))[0] == "a"


def test_rtr6_explorers_are_clamped_to_two_and_can_be_zero():
    register("a", "b", "c")
    assert seated(route.pick_seats(members=[], explorers=5)) == ["a", "b"]
    assert seated(route.pick_seats(members=[], explorers=1)) == ["a", None]
    assert seated(route.pick_seats(members=[], explorers=0)) == [None, None]


# -- RTR-3 / ROL: ad hoc, roles, size ------------------------------------------------------------

def test_rol4_ad_hoc_is_never_chosen_automatically():
    register("pricey", "a", "b")
    roles(ad_hoc=["pricey"])
    task("t1", {"pricey": 4, "a": 2, "b": 1})
    task("t2", {"pricey": 4, "a": 2, "b": 1})
    result = route.pick_seats()
    assert result["held_ad_hoc"] == ["pricey"]
    picked = [result[k]["model"] for k in ("primary", "second", "explorer", "explorer2", "reserve") if result[k]]
    assert "pricey" not in picked
    assert result["primary"]["model"] == "a"


def test_rtr5_a_named_ad_hoc_alias_is_seated_with_a_note():
    register("pricey", "a")
    roles(ad_hoc=["pricey"])
    result = route.pick_seats(members=[], nominees=["pricey"])
    assert result["explorer"]["model"] == "pricey" and result["explorer"]["nominated"] is True
    assert any("pricey" in n and "costly" in n for n in result["notes"])
    assert "nominated" not in result["explorer2"]


@pytest.mark.parametrize("shape, admitted", [
    ("general", {"gen"}),
    ("review", {"gen", "coder"}),
    ("enumeration", {"gen", "coder", "small"}),
    ("quick", {"gen", "small"}),
    ("vision", {"gen", "small", "eyes"}),
    ("image", {"painter"}),
])
def test_rol2_rtr3_roles_admitted_per_shape(shape, admitted):
    everyone = {"gen", "coder", "small", "eyes", "painter", "decider"}
    register(*sorted(everyone))
    roles({"coder": "code", "small": "light", "eyes": "vision", "painter": "image", "decider": "decision"})
    result = route.pick_seats(shape, members=[])
    assert set(result["considered"]) == admitted
    assert set(result["excluded_for_role"]) == everyone - admitted


def test_rol3_install_defined_shape_is_known():
    register("a", "b")
    write_json("config", "model-roles.json", data={"models": {"b": "code"}, "shapes": {"sql": ["code"]}})
    assert route.pick_seats("sql", members=[])["considered"] == ["b"]


def test_rtr3_unknown_shape_is_a_value_error_listing_the_known_ones():
    with pytest.raises(ValueError) as err:
        route.pick_seats("poetry")
    assert str(err.value) == ("unknown shape 'poetry'; known: code, design, enumeration, general, image, prose, "
                              "quick, review, vision")


def test_rtr3_large_prompts_skip_models_whose_latest_large_row_failed():
    register("a", "b", "c")
    perf(("a", "tiny", 5), ("a", "large", 0),
         ("b", "tiny", 5), ("b", "large", 0), ("b", "large", 3),  # IMP-17: the latest row wins
         ("c", "tiny", 5), ("c", "large", 2), ("c", "large", 0))
    big = route.pick_seats(large=True, members=[])
    assert big["excluded_for_size"] == ["a", "c"]
    assert seated(big) == ["b", None]
    small = route.pick_seats(large=False, members=[])
    assert small["excluded_for_size"] == [] and seated(small) == ["a", "b"]


# -- RTR-1: the pool -----------------------------------------------------------------------------

def test_rtr1_imp17_perf_history_latest_rows_decide_availability():
    register("fresh", "fixed", "broke", "tiny-only")
    perf(("fixed", "tiny", 0), ("fixed", "tiny", 5),
         ("broke", "tiny", 5), ("broke", "large", 2), ("broke", "tiny", 0), ("broke", "large", 0),
         ("tiny-only", "tiny", 3), ("tiny-only", "large", 0))
    assert route.available() == ["fresh", "fixed", "tiny-only"]


def _join_refresh():
    for thread in threading.enumerate():
        if thread.name == "route-served":
            thread.join(5)


def test_rtr1_served_names_filter_through_the_seam(monkeypatch):
    """TST-0: the served-names lookup is a seam; the default failing means no filtering at all."""
    write_json("config", "endpoints.json", data={"main": {"base": "http://127.0.0.1:9/v1", "default": True},
                                                 "other": {"base": "http://127.0.0.1:10/v1"}})
    main = endpoints.Endpoint("main", "http://127.0.0.1:9/v1")
    other = endpoints.Endpoint("other", "http://127.0.0.1:10/v1")


    text = registry.block("a", "m/a", main) + registry.block("gone", "m/gone", main) + registry.block("b", "o/b", other)
    paths.file("config", registry.NAME).write_text(text, encoding="utf-8")
    listings = {"main": {"m/a"}, "other": {"o/b"}}
    asked = []

    def lookup(name):
        asked.append(name)
        if listings[name] is None:
            raise OSError("refused")
        return listings[name]

    monkeypatch.setattr(route, "served_lookup", lookup)
    assert route.refresh_served() == {"m/a", "o/b"}
    assert route.available() == ["a", "b"]
    listings["other"] = None  # another endpoint failing drops only its models
    route.refresh_served()
    assert route.available() == ["a"]
    listings["main"] = None  # the default failing: no filtering at all
    route.refresh_served()
    assert route.available() == ["a", "gone", "b"]
    asked.clear()
    for _ in range(20):
        route.pick_seats(members=[])
    assert asked == []  # the listing is cached, never asked on the panel path


def test_rtr1_first_call_does_not_filter_and_refreshes_in_the_background(monkeypatch):
    register(("a", "m/a"), ("gone", "m/gone"))
    write_json("config", "endpoints.json", data={"main": ENDPOINT})
    release = threading.Event()

    def lookup(name):
        release.wait(5)
        return {"m/a"}

    monkeypatch.setattr(route, "served_lookup", lookup)
    assert route.available() == ["a", "gone"]  # nothing cached yet: not filtered, and no wait
    release.set()
    _join_refresh()
    assert route.available() == ["a"]


def test_rtr1_served_names_from_a_real_listing():
    """EP-12 over HTTP: a model the upstream no longer lists leaves the pool."""
    with Upstream({"m/a": {"answer": "hi"}, "m/gone": {"fail": "404"}}) as up:
        entry = {"base": up.base_url, "key": "", "kind": "local", "default": True}
        write_json("config", "endpoints.json", data={"demo": entry})
        register(("a", "m/a"), ("gone", "m/gone"), endpoint=entry)
        assert route.refresh_served() == {"m/a"}
    assert route.available() == ["a"]


def test_rtr1_unreachable_default_endpoint_does_not_filter():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    entry = {"base": f"http://127.0.0.1:{port}/v1", "key": "", "kind": "local", "default": True}
    write_json("config", "endpoints.json", data={"dead": entry})
    register(("a", "m/a"), endpoint=entry)
    assert route.refresh_served() is None
    assert route.available() == ["a"]


# -- RTR-5: nominees -----------------------------------------------------------------------------

def test_rtr5_nominees_take_seats_first_within_the_explorer_count():
    register("a", "b", "c", "d", "big", "coder")
    roles({"coder": "code"})
    perf(("big", "tiny", 5), ("big", "large", 0))
    used("a", 1)
    result = route.pick_seats(members=["d"], nominees=["a", "b", "c"])
    assert seated(result) == ["a", "b"]  # c is past the two slots
    assert all(result[k]["nominated"] for k in ("explorer", "explorer2"))

    result = route.pick_seats(large=True, members=["d"], nominees=["d", "big"])
    assert seated(result) == ["big", "b"]  # d's slot (already sitting) went to the stalest
    assert result["excluded_for_size"] == ["big"]
    assert any("d is already on the panel" in n for n in result["notes"])
    assert any(n.startswith("big failed the large prompt") for n in result["notes"])

    result = route.pick_seats("general", members=[], nominees=["coder"])
    assert result["explorer"]["model"] == "coder"
    assert any("coder has role code" in n for n in result["notes"])


def test_rtr5_an_unavailable_nominee_still_uses_its_slot_and_the_seat_goes_to_staleness():
    register("a", "b", "c")
    used("a", 5)
    used("b", 9)
    used("c", 1)
    result = route.pick_seats(members=[], nominees=["nobody", "c", "a"], explorers=2)
    assert seated(result) == ["c", "b"]  # a was third: never considered; nobody's seat went to b (stalest)
    assert any(n.startswith("nobody is not available") for n in result["notes"])
    assert result["explorer2"].get("nominated") is None


# -- RTR-7 / RTR-9: primary, second, reserve from suite recall ----------------------------------

def suite_bench():
    register(("top", "v/top"), ("top-twin", "w/top:free"), ("good", "v/good"), ("fair", "x/fair"),
             ("weak", "y/weak"), ("none", "z/none"))
    write_json("config", "provider-tags.json",
               data={"v/top": "alpha", "w/top:free": "beta", "v/good": "alpha", "x/fair": "gamma", "y/weak": "delta"})
    task("t1", {"top": 4, "top-twin": 4, "good": 4, "fair": 4, "weak": 1})
    task("t2", {"top": 4, "top-twin": 4, "good": 3, "fair": 4, "weak": 1})
    task("t3", {"top": 4, "top-twin": 4, "good": 4, "weak": 1})


def test_rtr7_primary_is_most_found_and_second_rotates_among_contenders():
    suite_bench()
    used("good", 3)
    used("fair", 10)
    result = route.pick_seats(explorers=0)
    assert result["primary"]["model"] == "top"  # 12 found (ties with top-twin: registration order)
    # contenders: another family, >= 2 tasks, recall >= 0.85 x 1.0; top-twin is top's family
    assert result["contenders"] == ["good", "fair"]
    assert result["second"]["model"] == "fair"  # stalest contender
    used("fair", 0)
    assert route.pick_seats(explorers=0)["second"]["model"] == "good"
    # the reserve: another family and connection than top and fair (top-twin is top's family)
    assert result["reserve"]["model"] == "weak"


def test_rtr7_second_falls_back_to_most_found_and_reserve_to_any_scored():
    register(("a", "v/a"), ("a2", "w/a"), ("b", "v/b"))
    task("t1", {"a": 4, "a2": 3, "b": 1})
    result = route.pick_seats(explorers=0)
    assert result["contenders"] == []  # one task each: nobody has two
    assert (result["primary"]["model"], result["second"]["model"]) == ("a", "a2")
    # every endpoint is the same connection: the reserve falls back to any scored model not chosen
    assert result["reserve"]["model"] == "b"


def test_rtr9_recall_counts_only_answered_outputs_of_counted_tasks():
    register("m", "other")
    task("plain", {"m": 2, "ghost": 4})  # ghost is not registered: not counted
    task("claim", {"m": 4}, shape="claim")
    task("seeded", {"m": 4}, shape="seeded")
    task("rebench", {"m": 4}, shape="rebench")
    task("draft", {"m": 4}, draft=True)
    task("failed", {"m": "Error: Error code: 429 - rate limit", "other": 1})
    task("short", {"m": "NO FAULT"}, must_find=("no fault",), min_answer_chars=8)
    recs = {r["model"]: r for r in route.records()}
    assert (recs["m"]["found"], recs["m"]["of"], recs["m"]["tasks"]) == (3, 5, 2)
    assert recs["m"]["recall"] == pytest.approx(0.6)
    assert (recs["other"]["found"], recs["other"]["of"], recs["other"]["tasks"]) == (1, 4, 1)


def test_rtr9_new_answers_count_after_the_recheck_window(monkeypatch):
    register("m")
    task("t1", {"m": 1})
    assert route.records()[0]["found"] == 1
    task("t2", {"m": 3})
    assert route.records()[0]["found"] == 1  # within SUITE_RECHECK: no walk
    monkeypatch.setattr(history, "SUITE_RECHECK", 0)
    assert route.records()[0]["found"] == 4


def test_rtr4_members_given_means_no_primary_or_second():
    suite_bench()
    result = route.pick_seats(members=["top", "fair"])
    assert result["primary"] is None and result["second"] is None and result["contenders"] == []
    # all never used: top-twin is top's family; then unscored before lower recall before higher (RTR-6)
    assert seated(result) == ["none", "weak"]
    # no scored model is apart in family and connection (good shares top's), so any scored one not seated
    assert result["reserve"]["model"] == "top-twin"


# -- RTR-2: records ------------------------------------------------------------------------------

def test_rtr2_record_fields():
    register(("m", "vendor/model-x:free"))
    write_json("config", "provider-tags.json", data={"vendor/model-x:free": "openrouter/deepinfra"})
    used("m", 2, useful=True)
    used("m", 4, useful=False)
    used("m", 3)
    task("t1", {"m": 2})
    record = route.records()[0]
    assert record == {"model": "m", "connection": "openrouter", "full_tag": "openrouter/deepinfra",
                      "family": "modelx", "found": 2, "of": 4, "tasks": 1, "recall": 0.5, "offloads": 3,
                      "helped": 1, "judged": 2, "stale_days": 2}
    register("unused")
    assert route.records()[0]["stale_days"] == route.NEVER


# -- ALI-1: renamed aliases ----------------------------------------------------------------------

def test_ali1_renamed_aliases_keep_their_records():
    register("new-name", "b", "c")
    write_json("config", "alias-history.json", data={"old-name": "new-name"})
    used("old-name", 0)
    used("b", 5)
    task("t1", {"old-name": 3})
    perf(("old-name", "tiny", 4), ("old-name", "large", 0))
    record = route.records()[0]
    assert (record["model"], record["found"], record["offloads"], record["stale_days"]) == ("new-name", 3, 1, 0)
    big = route.pick_seats(large=True, members=[])
    assert big["excluded_for_size"] == ["new-name"]
    result = route.pick_seats(members=[], nominees=["old-name"])
    assert result["explorer"]["model"] == "new-name" and result["explorer"]["nominated"]
    assert seated(route.pick_seats(members=["old-name"])) == ["c", "b"]


# -- RTR-13: cooling -----------------------------------------------------------------------------

def test_rtr13_cooling_is_retiring_alerts_and_cooldowns():
    write_json("metrics", "alerts.json", data={
        "model:pending:v/a": {"kind": "retiring", "message": "failing probes", "alias": "a"},
        "model:paid:v/b": {"kind": "went paid", "message": "priced", "alias": "b"},
        "connection:held:x": {"kind": "retiring", "message": "held", "aliases": ["c", "d"]},
    })
    learn.cool("e", 600, "429 rate limit", "gateway")
    assert route.cooling() == {"a", "c", "d", "e"}


def test_rtr13_unreadable_files_are_ignored():
    paths.file("metrics", "alerts.json").write_text("{not json", encoding="utf-8")
    paths.file("runs", "cooldowns.json").write_text("[1, 2]", encoding="utf-8")
    assert route.cooling() == set()


# -- RTR-8 / RTR-12 ------------------------------------------------------------------------------

def test_rtr8_result_keys():
    register("a")
    result = route.pick_seats()
    assert list(result) == ["primary", "second", "explorer", "explorer2", "reserve", "considered", "untried",
                            "contenders", "excluded_for_size", "excluded_for_role", "held_ad_hoc", "shape", "notes"]
    assert result["untried"] == ["a"] and result["shape"] == "general"


def test_rtr12_cli(capsys):
    suite_bench()
    roles(ad_hoc=["none"])
    route.main(["--shape", "review", "--small"])
    out = capsys.readouterr().out
    assert "shape review, small prompt" in out
    assert "primary    top  [alpha]  found 12/12 in 3 task(s) (recall 1.00)" in out
    assert "held back (ad hoc): none" in out
    assert "untried: 5 of 5 considered" in out
    with pytest.raises(SystemExit) as exit_:
        route.main(["--shape", "poetry"])
    assert str(exit_.value).startswith("unknown shape 'poetry'; known: ")


# -- cost ------------------------------------------------------------------------------------------

def test_panel_path_reads_nothing_twice(monkeypatch):
    """Performance: with 40 models and a long log, repeated panels re-read no file and ask no endpoint."""
    register(*(f"m{i:02d}" for i in range(40)))
    write_json("config", "endpoints.json", data={"main": ENDPOINT})
    monkeypatch.setattr(route, "served_lookup", lambda name: {f"m{i:02d}" for i in range(40)})
    route.refresh_served()
    lines = "".join(json.dumps({"date": days_ago(i % 300), "model": f"m{i % 40:02d}", "task": "t", "useful": None,
                                "note": ""}) + "\n" for i in range(20_000))
    offload.log_path().write_text(lines, encoding="utf-8")
    for i in range(10):
        task(f"t{i}", {f"m{j:02d}": j % 5 for j in range(40)})
    route.pick_seats(members=[])
    index = offload.index()
    bytes_read = index.bytes_read
    start = time.perf_counter()
    for _ in range(200):
        route.pick_seats(members=["m00"], nominees=["m01"], avoid={"m02"})
    per_call = (time.perf_counter() - start) / 200
    assert index.bytes_read == bytes_read
    assert per_call < 0.02


def test_rtr12_cli_as_a_module_exits_with_the_message():
    done = subprocess.run([sys.executable, "-m", "benchwarmers.panel.route", "--shape", "poetry"], capture_output=True,
                          text=True, env=dict(os.environ), cwd=str(paths.CODE), timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("unknown shape 'poetry'; known: code, design")
