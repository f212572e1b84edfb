"""The Endpoints page's and onboarding's routes through the real handler on a real socket (dashboard.md EP-4..15,
OB-6..20, TEST-4, TEST-6, TEST-11, TEST-12, TEST-13): every write and every refusal, against local upstreams
standing in for providers (one that needs a key, one that lists without one, one that refuses)."""

import json
import time

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import fileio, keys, paths
from benchwarmers.models import endpoints, registry
from benchwarmers.demo import demo
from benchwarmers.admin import onboarding
from conftest import TEST_MODELS
from test_serve import call, change_lines

SECRET = "sk-endpoints-page-0123456789"


@pytest.fixture
def dash(home):
    srv = serve.serve("127.0.0.1", 0)
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def keyed():
    with demo.Upstream(models={n: dict(s) for n, s in TEST_MODELS.items()}, key=SECRET) as up:
        yield up


@pytest.fixture
def open_up():
    with demo.Upstream(models={"alpha": dict(TEST_MODELS["alpha"]), "blank": dict(TEST_MODELS["blank"])}) as up:
        yield up


def post(port, path, body):
    status, _, answer = call(port, "POST", path, body)
    return status, answer


def get(port, path):
    return call(port, "GET", path)[2]


def wait_queue(port, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = get(port, "/api/onboard-queue")
        if not state["running"]:
            return state
        time.sleep(0.2)
    raise AssertionError("the onboarding queue did not finish")


def test_ep4_refusals_come_before_any_call_and_write_nothing(dash, keyed):
    status, body = post(dash, "/api/endpoint", {"name": "Bad Name!", "base": "ftp://x", "kind": "cloud",
                                                "api": "responses", "new": True})
    assert status == 400 and body["errors"] == [
        "api: one of chat, anthropic, gemini", "kind: one of provider, aggregator, hub, local",
        "name: 2-32 lower-case letters, digits or '-', e.g. openrouter",
        "base URL must start http:// or https://, e.g. https://openrouter.ai/api/v1"]
    assert post(dash, "/api/endpoint", {"name": "hubby", "base": keyed.base_url, "kind": "hub", "hub": "x"})[1][
        "errors"] == ["hub: which hub it is, one of openwebui, litellm, cliproxy"]
    status, body = post(dash, "/api/endpoint", {"name": "prov", "base": keyed.base_url, "key": "sk-wrong-key-0000"})
    assert status == 400 and body["errors"] == [f"{keyed.base_url}/models answered 401 — check the key; nothing saved"]
    assert not endpoints.path().exists() and not keys.stored() and change_lines() == []


def test_ep6_ep7_test_then_save_keeps_the_key_out_of_the_data_folder(dash, keyed, home, llmdir):
    sent = {"name": " Prov ", "base": keyed.base_url + "/", "key": SECRET, "new": True}
    status, body = post(dash, "/api/endpoint", {**sent, "test": True})
    assert status == 200 and body == {"ok": True, "errors": [], "served": len(keyed.listing()),
                                      "note": "The key was checked: the list needs it."}
    assert not endpoints.path().exists() and not keys.stored()
    status, body = post(dash, "/api/endpoint", sent)
    assert status == 200 and body["served"] == len(keyed.listing()) and SECRET not in json.dumps(body)
    assert {n: e.stored for n, e in endpoints.load().items()} == {
        "prov": {"key": "prov", "kind": "local", "base": keyed.base_url}}
    assert keys.stored() == {"prov": SECRET}
    assert not [p for p in home.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]
    assert change_lines()[-1]["field"] == "endpoint" and change_lines()[-1]["new"] == f"prov {keyed.base_url}"
    listing = get(dash, "/api/endpoints")
    row = listing["endpoints"][0]
    assert (row["name"], row["default"], row["key_set"], row["models"], row["connect"]) == ("prov", True, True, 0, None)
    assert SECRET not in json.dumps(listing)
    again = post(dash, "/api/endpoint", {**sent, "name": "prov"})[1]
    assert again["errors"] == ["there is already an endpoint named prov: give this one its own name, e.g. prov-2, "
                               "or use Change key on prov"]
    keys.set_key("other", "sk-someone-elses-000")
    clash = post(dash, "/api/endpoint", {"name": "other", "base": keyed.base_url, "key": "sk-typed-0000000",
                                         "new": True})[1]
    assert clash["errors"] == ["a key named other is already in the llm key store: leave the key blank to use it, "
                               "or give this endpoint another name, e.g. other-2"]


def test_ep5_change_key_and_a_listing_without_a_key(dash, keyed, open_up):
    assert post(dash, "/api/endpoint", {"name": "prov", "base": keyed.base_url, "key": SECRET, "new": True})[0] == 200
    wrong = post(dash, "/api/endpoint", {"name": "prov", "base": keyed.base_url, "key": "sk-not-it-000000"})
    assert wrong[0] == 400 and keys.stored()["prov"] == SECRET
    kept = post(dash, "/api/endpoint", {"name": "prov", "base": keyed.base_url, "key": ""})  # blank keeps the key
    assert kept[0] == 200 and keys.stored()["prov"] == SECRET
    status, body = post(dash, "/api/endpoint", {"name": "open", "base": open_up.base_url, "key": "sk-anything-123",
                                                "kind": "aggregator", "new": True})
    assert status == 200 and body["note"].startswith("It lists models without a key")
    assert endpoints.load()["open"].kind == "aggregator"
    local = post(dash, "/api/endpoint", {"name": "runtime", "base": open_up.base_url, "new": True})
    assert local[0] == 200 and endpoints.load()["runtime"].key == ""
    registry.add_registration("alpha", "alpha", "prov")
    moved = post(dash, "/api/endpoint", {"name": "prov", "base": open_up.base_url})[1]
    assert moved["errors"] == ["1 model(s) are registered on prov at its current URL; a new URL would strand them. "
                               "Add it under a new name instead"]


def test_ep8_ep9_remove_with_models_and_make_default_test6(dash, keyed, open_up):
    post(dash, "/api/endpoint", {"name": "prov", "base": keyed.base_url, "key": SECRET, "new": True})
    post(dash, "/api/endpoint", {"name": "open", "base": open_up.base_url, "new": True})
    registry.add_registration("alpha", "alpha", "open")
    fileio.write_atomic(paths.file("config", "dismissed.json"), '{"beta": {"at": "x", "by": "ui"}, '
                                                                 '"alpha@open": {"at": "x", "by": "ui"}}\n')
    assert post(dash, "/api/endpoint/remove", {"name": "nope"})[1]["errors"] == ["no endpoint 'nope'"]
    assert post(dash, "/api/endpoint/remove", {"name": "prov"})[1]["errors"] == [
        "the default endpoint cannot be removed: make another one the default first"]
    status, body = post(dash, "/api/endpoint/remove", {"name": "open"})
    assert status == 400 and "1 model(s) are on it (alpha)" in body["errors"][0]
    assert post(dash, "/api/endpoint/default", {"name": "prov"})[1]["note"] == "prov is already the default"
    status, body = post(dash, "/api/endpoint/default", {"name": "open"})
    assert status == 200 and body["note"] == "open is the default endpoint now (was prov)"
    assert endpoints.default() == "open" and endpoints.load()["open"].stored["default"] is True
    assert set(fileio.read_json(paths.file("config", "dismissed.json"))) == {"beta@prov", "alpha"}
    post(dash, "/api/endpoint/default", {"name": "prov"})
    status, body = post(dash, "/api/endpoint/remove", {"name": "open", "with_models": True})
    assert status == 200 and body["retired"] == ["alpha"]
    assert body["note"] == ("1 model(s) retired with it, restorable once an endpoint named open exists again; "
                            "its key stays in the llm key store; `llm keys` lists it")
    assert "open" not in endpoints.load() and "alpha" not in registry.registrations()
    assert post(dash, "/api/restore", {"alias": "alpha"})[1]["errors"][0].startswith("its endpoint open was removed")
    fields = [c["field"] for c in change_lines()]
    assert fields.count("default endpoint") == 2 and fields[-1] == "endpoint removed"


def test_ep13_ep15_rate_limits_per_connection(dash, bench):
    view = get(dash, "/api/connections")
    assert view["keys"] == ["rpm", "rpd", "tpm", "tpd", "rpmo"] and view["labels"]["rpmo"].startswith("requests per")
    local = [c for c in view["connections"] if c["name"] == "demo"][0]
    assert "alpha" in local["models"] and local["limits"] == {}
    bad = post(dash, "/api/connection-limits", {"connection": "nowhere", "limits": {"rpm": 0, "rpd": True,
                                                                                    "tpm": 1.5}})
    assert bad[0] == 400 and bad[1]["errors"] == [
        "'nowhere' is not a connection any model uses; known: demo", "rpm must be a positive whole number or blank",
        "rpd must be a positive whole number or blank", "tpm must be a positive whole number or blank"]
    ok = post(dash, "/api/connection-limits", {"connection": "demo", "limits": {"rpm": 30, "tpd": "", "rpd": None}})
    assert ok == (200, {"ok": True, "errors": [], "changed": ["config/connection-limits.json"]})
    assert fileio.read_json(paths.file("config", "connection-limits.json")) == {"demo": {"rpm": 30}}
    assert post(dash, "/api/connection-limits", {"connection": "demo", "limits": {}})[0] == 200
    assert fileio.read_json(paths.file("config", "connection-limits.json")) == {}
    assert [(c["field"], c["new"]) for c in change_lines()[-2:]] == [("limits demo", {"rpm": 30}),
                                                                     ("limits demo", None)]


def test_ob6_ob12_test13_a_fresh_install_then_candidates_and_dismiss(dash, open_up):
    assert get(dash, "/api/candidates") == {"ok": False, "errors": [onboarding.NO_ENDPOINT]}
    status, body = post(dash, "/api/onboard", {"served": "m1"})
    assert status == 400 and "no endpoints configured" in body["errors"][0] and "Endpoints page" in body["errors"][0]
    assert "config/endpoints.json" not in get(dash, "/api/candidates")["errors"][0]
    post(dash, "/api/endpoint", {"name": "local", "base": open_up.base_url, "new": True})
    found = get(dash, "/api/candidates")
    assert [(c["served"], c["key"], c["group"]) for c in found["candidates"]] == [
        ("alpha", "alpha", "local (direct)"), ("blank", "blank", "local (direct)")]
    for bad in ([], "", None, [3]):
        assert post(dash, "/api/dismiss", {"served": bad})[1]["errors"] == ["which model?"]
    assert post(dash, "/api/dismiss", {"served": ["blank", "alpha", " "]})[0] == 200
    assert post(dash, "/api/dismiss", {"served": "blank", "undo": True})[0] == 200
    found = get(dash, "/api/candidates")
    assert [c["served"] for c in found["candidates"]] == ["blank"] and [d["served"] for d in found["dismissed"]] == [
        "alpha"]
    assert [(c["field"], c["new"]) for c in change_lines()[-3:]] == [
        ("dismissed", "blank"), ("dismissed", "alpha"), ("undismissed", "blank")]
    registry.add_registration("blank", "blank", "local")
    assert [c["served"] for c in get(dash, "/api/candidates")["candidates"]] == []
    refusals = [("", "full"), ("a b", "full"), ('x"&y', "full"), ("blank", "full"), ("alpha", "later")]
    errors = [post(dash, "/api/onboard", {"served": s, "mode": m})[1]["errors"] for s, m in refusals]
    assert all(e and "log" not in e for e in errors)
    assert errors[0][0].startswith("the served name is the id the endpoint lists") and errors[1] == errors[0]
    assert errors[3] == ["blank is already registered as 'blank'"]
    assert errors[4] == ["mode must be one of full, quick, quick-adhoc; got 'later'"]
    assert post(dash, "/api/onboard", {"served": "alpha", "endpoint": "nope"})[1]["errors"] == [
        "'nope' is not an endpoint in config/endpoints.json"]
    assert get(dash, "/api/onboard?log=../etc/passwd") == {"ok": False, "errors": ["not an onboarding log name"]}


def test_ob13_ob16_the_queue_runs_the_real_script_one_at_a_time_test11(dash, open_up, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    post(dash, "/api/endpoint", {"name": "local", "base": open_up.base_url, "new": True})
    for bad in ([], "alpha", [{}] * 51):
        assert post(dash, "/api/onboard-queue", {"items": bad})[1]["errors"] == ["pick between 1 and 50 models"]
    twice = post(dash, "/api/onboard-queue", {"items": [{"served": "alpha"}, {"served": "alpha"}]})[1]
    assert twice["errors"] == ["a model is picked twice"]
    assert post(dash, "/api/onboard-queue/stop", {})[1]["errors"] == ["no onboarding is running"]
    status, state = post(dash, "/api/onboard-queue", {"items": [{"served": "alpha", "endpoint": "local",
                                                                 "mode": "quick"},
                                                                {"served": "blank", "mode": "quick-adhoc"}]})
    assert status == 200 and state["running"] and [i["served"] for i in state["items"]] == ["alpha", "blank"]
    assert post(dash, "/api/onboard-queue", {"items": [{"served": "alpha"}]})[1]["errors"] == [
        "alpha from local is already in the queue"]
    assert post(dash, "/api/onboard-queue/clear", {})[1]["errors"] == ["still running: Stop it first, or wait"]
    assert get(dash, "/api/status")["onboarding"] == {"running": True, "items": 2}
    while get(dash, "/api/onboard-queue")["items"][0]["state"] != "running":
        time.sleep(0.05)
    stopped = post(dash, "/api/onboard-queue/stop", {})[1]
    assert stopped["stopping"] and [i["state"] for i in stopped["items"]] == ["running", "skipped"]
    assert stopped["items"][1]["note"] == "stopped before its turn"
    after = post(dash, "/api/onboard-queue", {"items": [{"served": "blank", "mode": "quick-adhoc"}]})[1]
    assert not after["stopping"] and [i["state"] for i in after["items"]] == ["running", "skipped", "queued"]
    done = wait_queue(dash)
    assert [i["state"] for i in done["items"]] == ["done", "skipped", "no answer"]
    items = {i["served"]: i for i in done["items"] if i["state"] != "skipped"}
    assert (items["alpha"]["state"], items["alpha"]["alias"], items["alpha"]["exit"]) == ("done", "alpha", 0)
    assert items["blank"]["state"] == "no answer" and items["blank"]["note"].startswith("tiny: empty")
    assert registry.registration("alpha").model_name == "alpha"
    log = get(dash, "/api/onboard?log=" + items["alpha"]["log"])
    assert log["done"] and log["exit"] == 0 and "[4/5]" in log["tail"] and onboarding.EXIT_MARK not in log["tail"]
    assert onboarding.step_of(log["tail"]) == 5
    assert [c["new"] for c in change_lines() if c["field"].startswith("onboard")] == ["alpha", "blank"]
    assert [c["field"] for c in change_lines() if c["field"].startswith("onboard")] == [
        "onboard (quick)", "onboard (quick-adhoc)"]
    assert post(dash, "/api/onboard-queue/clear", {})[1]["items"] == []
    status, one = post(dash, "/api/onboard", {"served": "blank", "endpoint": "local", "mode": "quick"})
    assert status == 400 and one["errors"] == ["blank is already registered as 'blank'"]
