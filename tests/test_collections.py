"""Collections and the listing (gateway.md §2, §4 COL-1..10, §11 LST-1..3; IMP-8, IMP-9, TST-14).

COL-10's self-checks of COL-3..5 and COL-7 are the tests of those ids here, not code in the module.
"""

import os

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.panel import collections

DEFAULTS = {"max_calls": 5, "max_explorers": 2, "max_panels": 128, "max_panels_per_key": 32,
            "verdicts_per_key_day": 1000, "stop_grace": 5, "calls_log_max_mb": 64, "calls_log_keep": 3,
            "calls_log_prompts": True}


def settings():
    """COL-2's limits as `collections.settings()` reads them."""
    found = collections.settings()
    return {name: getattr(found, name) for name in DEFAULTS}


def write(name, data):
    fileio.write_atomic(paths.file("config", name), data if isinstance(data, str) else fileio.dumps(data))


def write_collections(data):
    write("collections.json", data)


def test_col2_settings_default_to_5_and_2():
    assert settings() == DEFAULTS  # the shipped gateway.json
    os.unlink(paths.file("config", "gateway.json"))
    assert settings() == DEFAULTS
    assert collections.settings_problems() == []


def test_col2_file_overlays_only_its_two_keys_and_edits_apply_to_the_next_call():
    write("gateway.json", {"max_calls": 3, "max_explorers": 1, "_why": "x", "extra": 9})
    assert settings() == {**DEFAULTS, "max_calls": 3, "max_explorers": 1}
    write("gateway.json", {"max_calls": 7})
    assert settings() == {**DEFAULTS, "max_calls": 7}


@pytest.mark.parametrize("bad", ["5", 5.0, True, -1, None, [5]])
def test_imp9_a_value_that_is_not_a_whole_number_keeps_its_default_and_says_why(bad):
    write("gateway.json", {"max_calls": bad, "max_explorers": bad})
    assert settings() == DEFAULTS
    problems = collections.settings_problems()
    assert len(problems) == 2
    assert problems[0].startswith("max_calls must be a whole number of 0 or more; got ")
    assert problems[0].endswith(", using 5")
    assert problems[1].endswith(", using 2")


def test_imp9_max_explorers_above_2_is_clamped_and_the_editor_is_told():
    write("gateway.json", {"max_calls": 10, "max_explorers": 4})
    assert settings() == {**DEFAULTS, "max_calls": 10}
    assert collections.settings_problems() == [
        "max_explorers 4 has no effect above 2 (the router seats at most 2 explorers); using 2"]
    assert collections.explorers_for(0) == 2


def test_imp9_zero_is_allowed():
    write("gateway.json", {"max_calls": 0, "max_explorers": 0})
    assert settings() == {**DEFAULTS, "max_calls": 0, "max_explorers": 0}
    assert collections.settings_problems() == []


def test_imp9_a_gateway_json_that_is_not_an_object_reads_as_defaults_with_a_problem():
    write("gateway.json", "[1, 2]")
    assert settings() == DEFAULTS
    assert collections.settings_problems() == ["config/gateway.json is not a JSON object; using the defaults"]


def test_col3_explorers_for_member_counts():
    assert [collections.explorers_for(n, collections.Settings()) for n in range(1, 7)] == [2, 2, 2, 1, 0, 0]
    assert collections.explorers_for(3, collections.Settings(max_calls=4, max_explorers=2)) == 1
    assert collections.explorers_for(0, collections.Settings()) == 2  # PNL-18: no members, explorers still sit
    assert [collections.explorers_for(n) for n in (1, 4, 5)] == [2, 1, 0]  # read from gateway.json


def test_col3_the_router_clamp_holds_for_hand_made_settings():
    assert collections.explorers_for(0, collections.Settings(max_calls=9, max_explorers=5)) == 2


def test_col4_resolve():
    write_collections({"core": {"members": ["a"]}, "vision": {"members": []}})
    assert collections.resolve("bench/core") == "core"
    assert collections.resolve("core") == "core"
    assert collections.resolve("  bench/vision ") == "vision"
    assert collections.resolve(" core ") == "core"
    for model in ("bench/", "", "bench/no-such", "Core", "bench/bench/core", None, 5):
        assert collections.resolve(model) is None


def test_col4_no_file_resolves_nothing():
    assert collections.load() == {}
    assert collections.resolve("bench/core") is None


def test_col5_split_reply_at_the_last_colon():
    assert collections.split_reply("bench/core:merged") == ("bench/core", "merged")
    assert collections.split_reply("bench/core:all") == ("bench/core", "all")
    assert collections.split_reply("core:route") == ("core", "route")
    assert collections.split_reply("a:b:all") == ("a:b", "all")
    assert collections.split_reply("a:b:route") == ("a:b", "route")
    assert collections.split_reply("bench/core:x") == ("bench/core:x", "")
    assert collections.split_reply("bench/core:both") == ("bench/core:both", "")
    assert collections.split_reply("bench/core") == ("bench/core", "")
    assert collections.split_reply("bench/core:route:x") == ("bench/core:route:x", "")


def test_fmt13_pnl6_reply_mode_asked_then_the_collections_then_all():
    write_collections({"core": {"members": ["a"], "reply": "merged"}, "plain": {"members": ["a"]}})
    assert collections.reply_mode("core") == "merged" == collections.reply_mode(collections.get("core"))
    assert collections.reply_mode("core", "all") == "all"  # asked in the body or the suffix wins
    assert collections.reply_mode("plain") == "all" == collections.reply_mode(collections.record("bare", {}))
    assert collections.reply_mode("no-such", "route") == "route"


def test_load_keeps_file_order_and_drops_entries_that_are_not_objects():
    write_collections({"zeta": {}, "alpha": {"members": ["a"]}, "broken": "oops", "_why": "comment"})
    assert list(collections.load()) == ["zeta", "alpha"]
    assert collections.resolve("broken") is None


def test_col6_described_defaults():
    assert collections.described("bare", collections.record("bare", {}), collections.Settings()) == {
        "description": "", "tags": [], "members": [], "shape": "", "explorers": 2, "reply": "all", "merger": "",
        "together": collections.together([])}


def test_col6_imp8_described_falls_back_to_the_legacy_note_and_keeps_members_raw():
    c = {"members": ["a", "a", "", "b", "c"], "note": "old wording", "tags": ["fast"], "shape": "code",
         "reply": "merged", "merger": "m"}
    row = collections.described("core", collections.record("core", c), collections.Settings())
    assert row["description"] == "old wording"
    assert row["members"] == ["a", "a", "", "b", "c"]
    assert row["explorers"] == 0  # len of the raw list: 5 of max_calls 5
    assert (row["tags"], row["shape"], row["reply"], row["merger"]) == (["fast"], "code", "merged", "m")
    fresh = collections.record("core", {"description": "new", "note": "old"})
    assert collections.described("core", fresh, collections.Settings())["description"] == "new"


def test_col6_group_summary_of_catalog_records():
    infos = {
        "a": {"context_window": 128000, "tools": True, "vision": True, "structured_output": True,
              "reasoning": None, "limits": {"rpm": 30, "rpd": None, "tpm": 6000, "tpd": 0}},
        "b": {"context_window": 32000, "tools": True, "vision": False, "structured_output": True,
              "reasoning": True, "limits": {"rpm": 10, "rpd": 1000}},
        "c": {"context_window": None, "tools": True, "vision": True, "structured_output": True},
    }
    assert collections.summary(infos, {"a": "groq", "b": "mistral", "c": "groq"}) == {
        "context_window": 32000,
        "context_unknown": ["c"],
        "capabilities": ["tools", "structured_output"],
        "connections": ["groq", "mistral"],
        "limits": {"rpm": 10, "rpd": 1000, "tpm": 6000, "tpd": None},
    }


def test_col6_group_summary_of_nobody_knows_nothing():
    assert collections.summary({}, {}) == {
        "context_window": None, "context_unknown": [], "capabilities": [], "connections": [],
        "limits": {"rpm": None, "rpd": None, "tpm": None, "tpd": None}}


def test_col6_together_reads_the_catalog_and_connections():
    write("model-overrides.json", {"a": {"context_window": 64000, "tools": True, "vision": True,
                                         "limits": {"rpm": 20}},
                                   "b": {"tools": True, "vision": False, "limits": {"rpm": 5, "tpd": 1000}}})
    write("provider-tags.json", {"a": "groq", "b": "mistral/large"})
    summary = collections.together(["a", "b", "a"])
    assert summary["context_window"] == 64000
    assert summary["context_unknown"] == ["b"]
    assert "tools" in summary["capabilities"] and "vision" not in summary["capabilities"]
    assert summary["connections"] == ["groq", "mistral"]
    assert set(summary["limits"]) == {"rpm", "rpd", "tpm", "tpd"}  # values only where the catalog keeps limits


def test_col7_reply_errors():
    assert collections.reply_errors("all", "", ["x"]) == []
    assert collections.reply_errors("route", "x", ["x"]) == []
    assert collections.reply_errors("both", "", []) == ["reply must be one of all, merged, route, council"]
    errors = collections.reply_errors("", "ghost", ["x"])
    assert errors[0] == "reply must be one of all, merged, route, council"
    assert errors[1] == "merger: 'ghost' is not a chat model on the bench; leave it empty to choose by verdicts"
    assert collections.reply_errors("all", "x", ["x"]) == []  # any chat model may merge, member or not
    assert "'ghost'" in collections.reply_errors("merged", "ghost", ["real"])[0]
    assert collections.reply_errors("merged", "real", ["real"]) == []


def test_col8_choose_message_exactly():
    write_collections({"vision": {"description": "reads photos", "tags": ["images", "ocr"]},
                       "core": {"members": ["a"]}, "legacy": {"note": "old note"}})
    assert collections.choose_message("bench/nope") == (
        "'bench/nope' is not a collection here. Set \"model\" to the collection that fits the task"
        " (GET /v1/models lists them with description and tags):\n"
        "- bench/core: no description\n"
        "- bench/legacy: old note\n"  # IMP-8: the same fallback as the listing
        "- bench/vision: reads photos [images, ocr]")


def test_col8_unnamed_and_no_collections_yet():
    assert collections.choose_message("") == (
        "No collection was named. Set \"model\" to the collection that fits the task"
        " (GET /v1/models lists them with description and tags):\n"
        "- none yet: create one with `python -m benchwarmers.scripts.collection add NAME MEMBER...`")
    assert collections.choose_message("it's").startswith('"it\'s" is not a collection here.')


def test_col8_a_scoped_caller_sees_only_what_it_may_call():
    write_collections({"core": {}, "secret": {"description": "private"}})
    message = collections.choose_message("x", may_call=lambda name: name == "core")
    assert message.endswith(":\n- bench/core: no description")
    assert "secret" not in message


def test_col9_unreadable():
    path = paths.file("config", "collections.json")
    assert not collections.unreadable(path)  # missing
    for text, expected in (("{}", False), ('{"a": {}}', False), ("[]", True), ("{oops", True), ("", True),
                           ('"text"', True), (b"\xff\xfe".decode("latin-1"), True)):
        write("collections.json", text)
        assert collections.unreadable(path) is expected, text
    assert collections.unreadable(paths.file("config"))  # a folder is no JSON object


def test_lst1_lst2_tst14_listing_of_a_merged_collection():
    write_collections({"core": {"members": ["a", "b"], "reply": "merged", "description": "d", "tags": ["t"]}})
    rows = collections.listed()
    assert [(r["id"], r["reply"]) for r in rows] == [
        ("bench/core", "merged"), ("bench/core:all", "all"), ("bench/core:route", "route"),
        ("bench/core:council", "council")]
    first = rows[0]
    assert (first["object"], first["owned_by"]) == ("model", "benchwarmers")
    assert {k: first[k] for k in ("description", "tags", "members", "explorers")} == {
        "description": "d", "tags": ["t"], "members": ["a", "b"], "explorers": 2}
    assert set(first) == {"id", "object", "owned_by", "description", "tags", "members", "shape", "explorers",
                          "reply", "merger", "together"}


def test_lst2_file_order_default_mode_and_an_invalid_stored_reply():
    write_collections({"zeta": {}, "alpha": {"reply": "both"}})
    assert [(r["id"], r["reply"]) for r in collections.listed()] == [
        ("bench/zeta", "all"), ("bench/zeta:merged", "merged"), ("bench/zeta:route", "route"),
        ("bench/zeta:council", "council"), ("bench/alpha", "both"), ("bench/alpha:all", "all"),
        ("bench/alpha:merged", "merged"), ("bench/alpha:route", "route"), ("bench/alpha:council", "council")]


def test_lst2_a_scoped_caller_lists_only_its_own():
    write_collections({"core": {}, "vision": {}})
    ids = [r["id"] for r in collections.listed(may_call=lambda name: name == "vision")]
    assert ids == ["bench/vision", "bench/vision:merged", "bench/vision:route",
                   "bench/vision:council"]
    assert collections.listed(may_call=lambda name: False) == []


def test_lst3_startup_names_have_no_variants():
    write_collections({"zeta": {"reply": "merged"}, "alpha": {}})
    assert collections.public_names() == ["bench/zeta", "bench/alpha"]
