"""Broken config files are said, never fatal or invisible (issue 12, item 9; gateway.md §2, §4, COL-4, COL-6,
COL-9, IMP-9, PNL-3, OPEN-1): the gateway always starts, a request meets a 503 naming the file and the fault,
a wrong-typed field is refused by name (never a 500), and gateway.json read as the defaults shows on /health
and once on stderr. Real gateways, in-process and as `python gateway.py` processes, on real files.
"""

import http.client
import json
import subprocess
import sys

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.panel import collections
from benchwarmers.demo import demo

PROMPT = "Is this loop off by one? for i in range(1, len(xs)): total += xs[i]"
SYNTAX = '{\n  "core": {"members": ["alpha"]}\n    "x": 1\n}\n'
UNREADABLE = "; fix it or restore it — no collection can be read until then"
BROKEN = {  # each broken form of a whole file, with what json_problem says of it
    "syntax": (SYNTAX, "is not valid JSON (line 3, column 5: Expecting ',' delimiter)"),
    "empty": ("", "is empty"),
    "blank": ("  \n", "is empty"),
    "list": ('[{"members": ["alpha"]}]', "is not a JSON object"),
    "string": ('"core"', "is not a JSON object"),
    "deep": ("[" * 100000, "is nested too deeply to read as JSON"),
    "deep object": ('{"a": ' * 100000, "is nested too deeply to read as JSON"),
}


def config(name, text):
    fileio.write_atomic(paths.file("config", name), text)


def call(base, method, path, body=None):
    """One request to a gateway at `base`: `(status, parsed JSON body)`."""
    conn = http.client.HTTPConnection(base.split("//")[1], timeout=30)
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, data, {"Content-Type": "application/json"} if data else {})
    response = conn.getresponse()
    text = response.read()
    conn.close()
    return response.status, json.loads(text) if text else None


def chat(base, model="bench/core", **fields):
    return call(base, "POST", "/v1/chat/completions",
                {"model": model, "messages": [{"role": "user", "content": PROMPT}], **fields})


def message(reply):
    return reply["error"]["message"]


def seat_requests(up):
    return [r for r in up.requests if r["path"].endswith("/chat/completions")]


# -- fileio: why a file reads as {} ----------------------------------------------------------------

@pytest.mark.parametrize("form", BROKEN)
def test_every_broken_form_reads_as_empty_and_says_why(form):
    """fileio.read_json keeps its `{}` for a broken file (deep nesting included: RecursionError is no
    ValueError), json_problem says why, and COL-9's unreadable agrees."""
    text, why = BROKEN[form]
    config("collections.json", text)
    path = collections.collections_path()
    assert fileio.read_json(path) == {} and fileio.read_json(path, comments=False) == {}
    assert fileio.json_problem(path) == why
    assert collections.unreadable(path)
    assert collections.load() == {} and collections.public_names() == []


def test_json_problem_of_sound_missing_and_unreadable_files(tmp_path):
    sound = tmp_path / "sound.json"
    sound.write_text('{"a": 1}')
    assert fileio.json_problem(sound) == "" and fileio.json_problem(tmp_path / "missing.json") == ""
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "\xff"}')
    assert fileio.json_problem(latin) == "is not UTF-8 text"
    assert fileio.json_problem(tmp_path) == "cannot be read (Is a directory)"


def test_a_file_is_parsed_once_per_change_however_often_its_problem_is_asked(monkeypatch):
    """The hot path stays as it was: read_json and json_problem share one parse per change of the file."""
    parses = []
    real = fileio._parse
    monkeypatch.setattr(fileio, "_parse", lambda path: parses.append(path) or real(path))
    config("collections.json", SYNTAX)
    path = collections.collections_path()
    for _ in range(50):
        fileio.read_json(path)
        assert fileio.json_problem(path).startswith("is not valid JSON (line 3")
    assert len(parses) == 1
    config("collections.json", '{"core": {"members": ["alpha"]}}')
    assert fileio.json_problem(path) == "" and fileio.read_json(path) == {"core": {"members": ["alpha"]}}
    assert len(parses) == 2


def test_a_deeply_nested_jsonl_line_is_skipped_like_a_torn_one(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text('{"a": 1}\n' + "[" * 100000 + "\n" + '{"b": 2}\n')
    assert fileio.read_jsonl(log) == [{"a": 1}, {"b": 2}]
    assert "skipped a torn or corrupt line" in capsys.readouterr().err


# -- a broken collections.json, through the real gateway ------------------------------------------

@pytest.mark.parametrize("form", BROKEN)
def test_every_route_naming_a_collection_answers_503_naming_the_file(gateway, bench, form):
    """DSP-1's 404 "none yet" would hide the fault: every request that needs collections.json meets 503
    naming the file and what is wrong with it; /health stays ok but lists it; a fixed file serves at once."""
    demo.set_collection("core", ["alpha"])
    text, why = BROKEN[form]
    config("collections.json", text)
    expected = "config/collections.json " + why + UNREADABLE
    asks = [chat(gateway), chat(gateway, stream=True), chat(gateway, model="bench/core:merged"),
            call(gateway, "GET", "/v1/models"), call(gateway, "GET", "/v1/models/bench/core"),
            call(gateway, "GET", "/api/tags"), call(gateway, "GET", "/v1beta/models"),
            call(gateway, "POST", "/api/show", {"model": "bench/core"}),
            call(gateway, "POST", "/v1/messages/count_tokens",
                 {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]}),
            call(gateway, "POST", "/v1beta/models/bench/core:generateContent",
                 {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]})]
    for status, reply in asks:
        assert status == 503, reply
        assert expected in json.dumps(reply, ensure_ascii=False)
    assert not seat_requests(bench)
    assert call(gateway, "GET", "/health") == (200, {"ok": True, "problems": [expected]})
    if text.strip():  # RESP-6: no writer replaces a broken file that holds something; an empty one holds nothing
        with pytest.raises(fileio.Unreadable):
            demo.set_collection("core", ["alpha"])
        assert collections.collections_path().read_text() == text
        collections.collections_path().unlink()  # the person mends it (here: starts it afresh)
    demo.set_collection("core", ["alpha"])
    assert chat(gateway)[0] == 200
    assert call(gateway, "GET", "/health") == (200, {"ok": True})


def test_the_syntax_error_is_told_with_its_line_and_column(gateway):
    config("collections.json", SYNTAX)
    status, reply = chat(gateway)
    assert (status, message(reply)) == (503, "config/collections.json is not valid JSON (line 3, column 5: "
                                              "Expecting ',' delimiter); fix it or restore it — no collection "
                                              "can be read until then")


# -- wrong types in a collection --------------------------------------------------------------------

WRONG = {  # a collection's fields, and what the refusal says of them
    "members as a string": ({"members": "alpha"},
                            '"members" must be a list of model aliases (strings), else the collection has no '
                            'members; got "alpha"'),
    "members as an object": ({"members": {"alpha": 1}}, '"members" must be a list of model aliases'),
    "merger as a list": ({"members": ["alpha"], "merger": ["beta"]},
                         '"merger" must be a model alias (a string); got a list'),
    "reply as a number": ({"members": ["alpha"], "reply": 2},
                          '"reply" must be "all", "merged", "route" or "council"; got a number'),
    "reply of no mode": ({"members": ["alpha"], "reply": "both"},
                         '"reply" must be "all", "merged", "route" or "council"; got "both"'),
    "shape as a number": ({"members": ["alpha"], "shape": 5}, '"shape" must be a shape name (a string); got a number'),
    "description as an object": ({"members": ["alpha"], "description": {"en": "x"}},
                                 '"description" must be text (a string); got an object'),
    "note as a boolean": ({"members": ["alpha"], "note": True}, '"note" must be text (a string); got a boolean'),
    "tags as a string": ({"members": ["alpha"], "tags": "fast"},
                         '"tags" must be a list of words (strings); got "fast"'),
    "tags holding a number": ({"members": ["alpha"], "tags": ["fast", 3]},
                              '"tags" must be a list of words (strings); it holds a number'),
}


@pytest.mark.parametrize("case", WRONG)
def test_a_wrong_typed_field_is_refused_by_name_never_500(gateway, bench, case):
    """Every field of §2's layout is checked before anything reads it: a request naming the collection
    meets 503 naming the file, the collection and the field, streamed or not, and no model is asked;
    the listings still answer."""
    fields, said = WRONG[case]
    config("collections.json", json.dumps({"core": fields, "other": {"members": ["beta"]}}))
    for status, reply in (chat(gateway), chat(gateway, stream=True), chat(gateway, model="bench/core:merged"),
                          call(gateway, "POST", "/v1/messages/count_tokens",
                               {"model": "bench/core", "messages": [{"role": "user", "content": PROMPT}]})):
        assert status == 503, reply
        assert message(reply).startswith("config/collections.json: bench/core: ")
        assert said in message(reply) and message(reply).endswith(collections.FIX)
    assert not seat_requests(bench)
    for path in ("/v1/models", "/api/tags", "/v1beta/models", "/v1/models/bench/core"):
        assert call(gateway, "GET", path)[0] == 200  # COL-6 lists fields as stored, whatever their type
    assert chat(gateway, model="bench/other")[0] == 200  # one broken collection leaves the others serving


def test_members_that_are_no_alias_are_named_among_those_not_asked(gateway, bench):
    """PNL-3 keeps the non-empty strings and seats them; the rest is named in `skipped`, not lost."""
    config("collections.json", json.dumps({"core": {"members": ["alpha", 7, None, ["beta"], "", "gamma"]}}))
    status, reply = chat(gateway)
    assert status == 200
    assert [s["alias"] for s in reply["bench"]["seats"]] == ["alpha", "gamma"]
    skipped = reply["bench"]["skipped"]
    assert [s["alias"] for s in skipped] == ["7", "null", '["beta"]', '""']
    assert all(s["seat"] == "member" and '"members" in config/collections.json' in s["why"] for s in skipped)
    assert "Not asked: 7 (no model alias" in reply["choices"][0]["message"]["content"]


# -- a broken gateway.json --------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["syntax", "list", "deep"])
def test_a_broken_gateway_json_serves_the_defaults_and_shows_on_health(gateway, bench, form):
    """IMP-9 for the whole file: the defaults apply (2 explorers beside one member, where the fixture's
    file said 0), and /health lists the fault while it lasts."""
    demo.set_collection("core", ["alpha"])
    text, why = BROKEN[form]
    config("gateway.json", text)
    status, listing = call(gateway, "GET", "/v1/models")
    assert status == 200 and listing["data"][0]["explorers"] == 2
    expected = f"config/gateway.json {why}; using the defaults"
    assert call(gateway, "GET", "/health") == (200, {"ok": True, "problems": [expected]})
    assert collections.settings_problems() == [expected]


# -- the real process ---------------------------------------------------------------------------------

def start():
    """`python gateway.py --port 0` on this test's data folder: `(process, base URL, first stdout line)`."""
    process = subprocess.Popen([sys.executable, "gateway.py", "--port", "0"], cwd=paths.CODE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    line = process.stdout.readline()
    base = line.split(" on ")[1].split("/v1")[0] if " on " in line else ""
    return process, base, line


def stop(process):
    """Stop the process; its stderr."""
    process.terminate()
    return process.communicate(timeout=15)[1]


@pytest.mark.parametrize("form", ["syntax", "empty", "list", "string", "deep"])
def test_the_gateway_starts_on_any_broken_config(home, form):
    """The process prints its startup line (naming the broken file, not "none yet"), answers /health with
    both faults, refuses a panel with 503 naming the file, and says each fault once on stderr."""
    text, why = BROKEN[form]
    config("collections.json", text)
    config("gateway.json", text)
    process, base, line = start()
    try:
        assert line.startswith("bench gateway on http://127.0.0.1:"), line
        said = ["config/gateway.json " + why + "; using the defaults", "config/collections.json " + why + UNREADABLE]
        assert line.rstrip("\n").endswith(" — models: " + said[1])
        for _ in range(2):
            assert call(base, "GET", "/health") == (200, {"ok": True, "problems": said})
            status, reply = chat(base)
            assert status == 503 and message(reply) == said[1]
    finally:
        err = stop(process)
    assert [err.count("warning: " + s) for s in said] == [1, 1]


def test_a_broken_gateway_json_is_said_once_on_stderr_however_often_it_is_read(bench):
    """Every panel and listing reads gateway.json; its fault is said once, at startup, not per request."""
    five = ["alpha", "beta", "gamma", "seer", "merger"]  # the default max_calls: no explorer to route
    demo.set_collection("core", five)
    config("gateway.json", '{"max_calls": 5,}')
    said = "config/gateway.json is not valid JSON (line 1, column 17: Expecting property name enclosed in " \
           "double quotes); using the defaults"
    process, base, line = start()
    try:
        assert line.rstrip("\n").endswith(" — models: bench/core")
        for _ in range(2):
            assert call(base, "GET", "/health") == (200, {"ok": True, "problems": [said]})
            assert call(base, "GET", "/v1/models")[0] == 200
        status, reply = chat(base)
        assert status == 200 and [s["alias"] for s in reply["bench"]["seats"]] == five
    finally:
        err = stop(process)
    assert err.count(said) == 1 and err.count("warning: config/gateway.json") == 1
