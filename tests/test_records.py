"""The data folder's files each have one reader, in the module that owns the file, returning a frozen dataclass
(core/records.py): who opens which file is checked by reading the source with `ast`, and each reader on real
files, a good one and one edited by hand into every odd shape the reader must survive."""

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from benchwarmers.core import fileio, paths, records
from benchwarmers.core.errors import Broken
from benchwarmers.models import endpoints, registry
from benchwarmers.panel import collections, offload, roster
from benchwarmers.store import store

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("metrics", "suite", "scripts", "perf", "benchmarks")
# each file, the one module that names it, and the functions that module gives its path by
OWNERS = {
    "collections.json": ("metrics/panel/collections.py", "collections", {"collections_path"}),
    "gateway.json": ("metrics/panel/collections.py", "collections", {"settings_path"}),
    "offloads.jsonl": ("metrics/panel/offload.py", "offload", {"log_path"}),
    "endpoints.json": ("metrics/models/endpoints.py", "endpoints", {"path"}),
    "extra-openai-models.yaml": ("metrics/models/registry.py", "registry", {"path"}),
    "decision-models.json": ("metrics/models/registry.py", "registry", {"decisions_path"}),
    "retired.json": ("metrics/panel/roster.py", "roster", {"retired_path"}),
}
# the store names the logs that replicas share by their place in the data folder (store/logs.py); their owner
# still gives the path and reads them
STORE_NAMES = "metrics/store/logs.py"
SPELLED = {"offloads.jsonl": STORE_NAMES}  # the config files the store holds are named there too (store.CONFIG)
# the settings table (style.md): it names the config files whose keys it declares and shows their values as
# written (`bench settings`); it interprets none of them, so it is no second reader
TABLE = "metrics/core/settings.py"
# what opens a file for reading: a call of one of these with the owner's path among its arguments, or on it
READERS = {"open", "read_json", "read_jsonl", "json_problem", "read_text", "read_bytes", "load", "safe_load",
           "parse_lines", "unreadable"}


def sources():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "starter" not in path.relative_to(ROOT).parts:  # suite/starter holds task fixtures, not modules
                yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


def write(name, data):
    fileio.write_atomic(paths.file("config", name), data if isinstance(data, str) else json.dumps(data))


def test_each_file_is_named_by_its_owner_alone():
    """The file's name is spelled out in one module; every other one asks that module for the path."""
    found = {name: set() for name in OWNERS}
    for where, tree in sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in OWNERS and where != TABLE:
                found[node.value].add(where)
    stored = {place[-1] for place in store.CONFIG}
    assert found == {name: {SPELLED.get(name, owner)} | ({STORE_NAMES} if name in stored else set())
                     for name, (owner, _, _) in OWNERS.items()}


def _path_of(node, owners):
    """The owner module a node asks for a path (`roster.retired_path()`), or None."""
    for inner in ast.walk(node):
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                and isinstance(inner.func.value, ast.Name) and inner.func.value.id in owners
                and inner.func.attr in owners[inner.func.value.id]):
            return inner.func.value.id
    return None


def test_no_module_but_the_owner_opens_the_file_to_read_it():
    """Writers elsewhere (a locked read-change-write, an append) may take the owner's path; a reader may not."""
    by_module = {}
    for owner, module, functions in OWNERS.values():
        by_module.setdefault(module, (owner, set()))[1].update(functions)
    opened = []
    for where, tree in sources():
        owners = {module: functions for module, (owner, functions) in by_module.items() if owner != where}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in READERS:
                continue
            asked = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(func, ast.Attribute):
                asked.append(func.value)
            module = next((m for m in map(lambda a: _path_of(a, owners), asked) if m), None)
            if module:
                opened.append(f"{where}:{node.lineno} reads {module}'s file")
    assert opened == []


def test_every_record_is_a_frozen_dataclass_with_typed_fields_and_says_its_file():
    for record in (collections.Collection, collections.Settings, offload.Line, endpoints.Endpoint,
                   registry.Registration, registry.DecisionModel, roster.RetiredModel, roster.Retired):
        assert dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen
        assert all(field.type is not None for field in dataclasses.fields(record))
        assert record.__doc__ and ("{" in record.__doc__ or "config/" in record.__doc__)


def test_the_forms_coercer():
    assert records.text("  x ") == "x" and records.text(5) == "" and records.text(None, "full") == "full"
    assert (records.string(5), records.strings(["a", 1, "b"]), records.strings("ab")) == ("", ("a", "b"), ())
    assert records.mapping([1]) == {} and records.mapping({"a": 1}) == {"a": 1}


# -- collections.json ---------------------------------------------------------------------------------------------

def test_collections_a_good_file():
    write("collections.json", {"_why": "a comment", "core": {
        "members": ["alpha", "beta"], "description": "reviewers", "tags": ["fast"], "shape": "review",
        "reply": "merged", "merger": "alpha", "owner": "kept as written"}})
    found = collections.load()
    assert list(found) == ["core"] and collections.load() is found  # made again only when the file changes
    core = found["core"]
    assert (core.name, core.members, core.aliases, core.description, core.tags) == (
        "core", ("alpha", "beta"), ("alpha", "beta"), "reviewers", ("fast",))
    assert (core.shape, core.reply, core.merger, core.problems) == ("review", "merged", "alpha", ())
    assert core.stored["owner"] == "kept as written" and collections.get("core") is core


def test_collections_a_hand_edited_file():
    write("collections.json", {"odd": {"members": ["alpha", 7, "", None], "note": "legacy words", "shape": 5,
                                       "tags": ["x", 3], "reply": "both"},
                               "text": "not an object", "bare": {}})
    found = collections.load()
    assert list(found) == ["odd", "bare"]
    odd = found["odd"]
    assert odd.members == ("alpha", 7, "", None) and odd.aliases == ("alpha",)
    assert (odd.description, odd.shape, odd.reply, odd.tags) == ("legacy words", "", "both", ("x", 3))
    assert [p.split(" must")[0] for p in odd.problems] == ['"shape"', '"reply"', '"tags"']
    with pytest.raises(Broken, match=r'bench/odd: "shape" must be a shape name'):
        collections.get("odd")
    listed = collections.described("odd", odd, collections.Settings())
    assert (listed["shape"], listed["reply"], listed["members"]) == (5, "both", ["alpha", 7, "", None])
    bare = found["bare"]
    assert (bare.members, bare.description, bare.reply, bare.stored) == ((), "", "", {})
    write("collections.json", "{broken")
    assert collections.load() == {} and collections.collections_problem().startswith("config/collections.json is")


def test_collections_writers_keep_what_they_do_not_know():
    write("collections.json", {"_why": "a comment", "core": {"members": ["alpha"], "owner": "me"},
                               "other": {"members": ["beta"], "future": [1]}})
    from benchwarmers.demo import demo

    demo.set_collection("core", ["alpha", "beta"])
    written = json.loads(collections.collections_path().read_text())
    assert written["_why"] == "a comment" and written["other"] == {"members": ["beta"], "future": [1]}
    assert collections.load()["core"].members == ("alpha", "beta")


# -- gateway.json ------------------------------------------------------------------------------------------------

def test_settings_a_good_file():
    write("gateway.json", {"max_calls": 4, "max_explorers": 1, "first_byte_timeout": 2.5, "idle_timeout": 0,
                           "policy": "thompson", "calls_log_prompts": False, "_why": "x", "default_collection": "c"})
    found = collections.settings()
    assert found == collections.Settings(max_calls=4, max_explorers=1, first_byte_timeout=2.5, idle_timeout=0,
                                         policy="thompson", calls_log_prompts=False)
    assert collections.settings() is found and collections.settings_problems() == []


def test_settings_a_hand_edited_file():
    write("gateway.json", {"max_calls": "5", "max_explorers": 9, "stop_grace": -1, "calls_log_prompts": "no",
                           "idle_timeout": True, "policy": "greedy"})
    found = collections.settings()
    assert found.max_calls == 5 and found.max_explorers == 2 and found.stop_grace == 5
    assert (found.calls_log_prompts, found.idle_timeout, found.policy) == (True, 60, "counted")
    assert [p.split(" ")[0] for p in found.problems] == ["max_calls", "stop_grace", "calls_log_prompts",
                                                         "max_explorers", "idle_timeout", "policy"]
    write("gateway.json", "[1]")
    assert collections.settings() == collections.Settings()
    assert collections.settings_problems() == ["config/gateway.json is not a JSON object; using the defaults"]
    paths.file("config", "gateway.json").unlink()
    assert collections.settings() == collections.DEFAULTS and collections.settings_problems() == []


# -- metrics/offloads.jsonl --------------------------------------------------------------------------------------

def test_offload_lines_a_good_log():
    added = offload.add("alpha", "fix it (bench/core, review)", None, "member; ok in 1.0s", "p1.member1",
                        status="ok", seconds=1.0, collection="bench/core", shape="review")
    judged = offload.verdict("p1.member1", True, "right", ["a real bug"])
    assert (added.model, added.call, added.useful, added.status, added.seconds) == (
        "alpha", "p1.member1", None, "ok", 1.0)
    assert (judged.useful, judged.note, judged.real, judged.false) == (True, "right", ("a real bug",), ())
    assert (judged.collection, judged.shape) == ("bench/core", "review")
    assert offload.entries() == [judged] and offload.by_call("p1.member1") == judged
    assert [line.useful for line in offload.lines()] == [None, True]


def test_offload_lines_edited_by_hand():
    odd = {"date": 5, "model": "beta", "task": "old work (bench/core, code)", "useful": "yes", "note": None,
           "call": "p2.member1", "real": "not a list", "false": ["fine", 3], "seconds": "slow", "extra": 1}
    offload.log_path().write_text("\n".join(json.dumps(r) for r in (odd, {"model": 7}, [1])) + "\n")
    [line] = offload.lines()
    assert (line.date, line.task, line.useful, line.note) == ("", "old work (bench/core, code)", None, "")
    assert (line.real, line.false, line.status, line.seconds) == ((), ("fine",), "", None)
    assert (line.collection, line.shape) == ("bench/core", "code")  # the task's suffix, for lines before the fields
    assert line.stored["extra"] == 1 and offload.entries() == [line]
    assert offload.summary()["beta"]["judged"] == 1  # the index counts what is no null as judged, as it always has


# -- endpoints.json ----------------------------------------------------------------------------------------------

def test_endpoints_a_good_file():
    write("endpoints.json", {"_why": "a comment", "or": {
        "base": "https://openrouter.ai/api/v1", "key": "or", "kind": "aggregator", "default": True,
        "headers": {"X-Title": "bench"}, "unlisted_models": ["m"], "connect": {"provider": "p"}, "later": 1}})
    found = endpoints.load()
    assert list(found) == ["or"] and endpoints.load() is found
    entry = found["or"]
    assert (entry.base, entry.key, entry.kind, entry.hub, entry.api, entry.default) == (
        "https://openrouter.ai/api/v1", "or", "aggregator", "", "chat", True)
    assert (entry.headers, entry.unlisted_models, entry.connect) == ({"X-Title": "bench"}, ("m",), {"provider": "p"})
    assert entry.stored["later"] == 1 and endpoints.entry() is entry


def test_endpoints_a_hand_edited_file():
    write("endpoints.json", {"hub": {"base": "http://10.0.0.5:3000/api", "kind": "gizmo", "hub": "nope", "api": 5,
                                     "headers": ["x"], "unlisted_models": "abc", "connect": [], "default": 0},
                             "local": {"base": "http://127.0.0.1:11434/v1"}, "junk": "no object"})
    found = endpoints.load()
    assert list(found) == ["hub", "local"]
    hub = found["hub"]
    assert (hub.kind, hub.hub, hub.api, hub.headers, hub.unlisted_models) == ("hub", "openwebui", "5", {}, ())
    assert (hub.connect, hub.default, hub.key) == (None, False, "")
    assert found["local"].kind == "local" and endpoints.default() == "hub"
    assert endpoints.entry("missing") == endpoints.Endpoint("missing")
    write("endpoints.json", "{broken")
    with pytest.raises(RuntimeError, match="cannot be read"):
        endpoints.load()
    assert endpoints.readable() == {}


# -- extra-openai-models.yaml ------------------------------------------------------------------------------------

def test_registrations_a_good_file():
    write("endpoints.json", {"p": {"base": "https://p.example/v1", "key": "p", "headers": {"X-Title": "t"}}})
    registry.add_registration("m1", "vendor/one:free", "p")
    found = registry.registrations()
    assert found == {"m1": registry.Registration("m1", "vendor/one:free", "https://p.example/v1", "p",
                                                 {"X-Title": "t"})}
    assert registry.registrations() is found and registry.endpoint_of("m1") == "p"


def test_registrations_a_hand_edited_file():
    registry.path().write_text("- model_id: n\n  model_name: 3.5\n  headers: {A: 1}\n  can_stream: false\n"
                               "- model_name: no-id\n- 7\n- model_id: n\n  api_key_name: k\n", encoding="utf-8")
    assert registry.registrations() == {"n": registry.Registration("n", "3.5", "", "k", {"A": "1"},
                                                                   {"can_stream": False})}
    registry.path().write_text("- model_id: a\n  model_name: a: b\n", encoding="utf-8")
    assert registry.registrations() == {} and "is not valid YAML" in registry.problem()


# -- decision-models.json ----------------------------------------------------------------------------------------

def test_decision_models_good_and_hand_edited():
    write("decision-models.json", {
        "_why": "x", "picker": {"served": "pick", "endpoint": "e", "via": "e", "path": "decisions",
                                "question_types": ["choice", "score"], "onboarded": "2026-10-01", "later": 1},
        "odd": {"served": 5, "question_types": ["choice", 3], "via": None}, "junk": []})
    found = registry.decision_models()
    assert list(found) == ["picker", "odd"] and registry.decision_models() is found
    assert found["picker"] == registry.DecisionModel("picker", "pick", "e", "e", "decisions", ("choice", "score"),
                                                     "2026-10-01", found["picker"].stored)
    assert found["picker"].stored["later"] == 1
    odd = found["odd"]
    assert (odd.served, odd.via, odd.path, odd.question_types, odd.onboarded) == ("", "", "", ("choice",), "")


# -- retired.json ------------------------------------------------------------------------------------------------

def test_retired_good_and_hand_edited():
    write("retired.json", {
        "_why": "x",
        "old": {"served": "o", "tag": "t", "role": "general", "at": "2026-10-01T10:00", "by": "auto",
                "why": "auto: gone", "endpoint": "e", "ad_hoc": True, "options": {"temperature": 0.2},
                "collections": {"core": ["members"]}},
        "odd": {"served": 5, "options": [1], "decision": "no", "collections": "core"},
        "bare": True})
    gone = roster.retired()
    assert roster.retired() is gone
    assert list(gone.models) == ["old", "odd"] and gone.names == {"old", "odd", "bare"}
    old = gone.models["old"]
    assert (old.served, old.at, old.by, old.why, old.ad_hoc) == ("o", "2026-10-01T10:00", "auto", "auto: gone", True)
    assert (old.options, old.collections, old.decision) == ({"temperature": 0.2}, {"core": ["members"]}, None)
    odd = gone.models["odd"]
    assert (odd.served, odd.options, odd.decision, odd.collections, odd.ad_hoc) == ("", None, None, {}, False)
    write("retired.json", "{broken")
    assert roster.retired() == roster.Retired({}, frozenset())
