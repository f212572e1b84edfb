"""The hub adapters against fake hubs on 127.0.0.1 (suite-cli-mcp.md HB-1..5), Discover's live hub routes
(dashboard.md DS-3) and `POST /api/discover/add` through the real handler (DS-6)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import fileio, keys
from benchwarmers.models import endpoints, registry
from benchwarmers.providers import cliproxy, litellm_hub, owui
from benchwarmers.dashboard import discover, hubroutes
from fake_hubs import CPA_MANAGEMENT, LITELLM_MASTER, OWUI_ADMIN, CLIProxy, LiteLLM, OpenWebUI
from test_discover import cache_fixtures
from test_serve import call, change_lines

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def hubs():
    with OpenWebUI() as ow, LiteLLM() as ll, CLIProxy() as cp:
        yield {"owui": ow, "lite": ll, "cpa": cp}


@pytest.fixture
def bench(home, hubs):
    """Three hub endpoints (Open WebUI the default), their keys and admin keys; each hub back to its first state."""
    tails = {"owui": ("/api", "openwebui"), "lite": ("/v1", "litellm"), "cpa": ("/v1", "cliproxy")}
    found = {}
    for name, hub in hubs.items():
        hub.reset()
        hub.hits.clear()
        tail, which = tails[name]
        found[name] = {"base": hub.root + tail, "key": name, "kind": "hub", "hub": which}
        keys.set_key(name, f"{name}-user-key-0123")
    found["owui"]["default"] = True
    fileio.write_atomic(endpoints.path(), json.dumps(found))
    for name, secret in (("owui", OWUI_ADMIN), ("lite", LITELLM_MASTER), ("cpa", CPA_MANAGEMENT)):
        keys.set_key(f"{name}-admin", secret)
    return hubs


def test_hb1_each_adapter_says_what_it_supports_and_needs_a_hub_endpoint(home):
    for adapter in (owui, litellm_hub, cliproxy):
        assert set(adapter.SUPPORTS) == {"allow_list", "tags", "logo", "access", "link"} and adapter.CHECKED
        with pytest.raises(ValueError, match=f"no {adapter.LABEL} endpoint: add one on the Endpoints page as kind hub"):
            adapter.endpoint()


def test_hb1_the_command_prints_the_plan_and_never_a_key(bench):
    env = {**os.environ}
    done = subprocess.run([sys.executable, "-m", "benchwarmers.providers.owui", "groq", "llama-new"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    plan = json.loads(done.stdout)
    assert done.returncode == 0 and plan["served"] == "llama-new" and plan["model_ids"] == ["llama-old", "llama-new"]
    assert not any(k in done.stdout for k in ("gsk_real_key_one", OWUI_ADMIN))
    assert ("POST", "/openai/config/update") not in bench["owui"].hits  # a plan writes nothing
    done = subprocess.run([sys.executable, "-m", "benchwarmers.providers.litellm_hub", "nowhere", "m"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("litellm_hub: LiteLLM has no deployment on 'nowhere'")


def test_hb2_open_webui_adds_to_model_ids_and_a_public_tagged_record(bench):
    served, steps = owui.add("groq", "llama-new")
    hub = bench["owui"]
    assert served == "llama-new" and steps[-1] == "owui lists llama-new"
    assert hub.config["OPENAI_API_CONFIGS"]["0"]["model_ids"] == ["llama-old", "llama-new"]
    record = next(r for r in hub.records if r["id"] == "llama-new")
    assert record["access_control"] is None and record["meta"]["tags"] == [{"name": "groq"}]
    assert record["meta"]["profile_image_url"] == "/static/groq.png" and record["meta"]["defaultFeatureIds"] == ["web_search"]
    # a connection by index with a prefix and no Model IDs list in use: only the record, served as <prefix>.<model>
    served, steps = owui.add("1", "newer")
    assert served == "or.newer" and hub.config["OPENAI_API_CONFIGS"]["1"]["model_ids"] == []
    assert steps[0] == "create the public model record or.newer tagged openrouter"
    with pytest.raises(ValueError, match="connection 2 \\(off\\) is switched off in Open WebUI"):
        owui.plan("off", "x")
    with pytest.raises(ValueError, match="dup is already served by connection 1 in Open WebUI; give connection 0 a Prefix ID"):
        owui.plan("0", "dup")
    hub.config["OPENAI_API_KEYS"][0] = "gsk_****"
    with pytest.raises(ValueError, match="masked in /openai/config, so writing the config back would destroy them"):
        owui.plan("groq", "another")
    with pytest.raises(ValueError, match="Open WebUI has no connection 'nope'"):
        owui.plan("nope", "x")
    keys.set_key("owui-admin", "sk-wrong")
    with pytest.raises(ValueError, match=r"Open WebUI \(owui\) refused the admin key \(401\): connections and "
                                         "models are changed with an admin user's API key; set it as the endpoint"):
        owui.plan("groq", "x")


def test_hb3_litellm_needs_database_mode_and_copies_unmasked_params(bench):
    hub = bench["lite"]
    hub.db = "Not connected"
    with pytest.raises(ValueError, match="set DATABASE_URL and STORE_MODEL_IN_DB=True"):
        litellm_hub.plan("api.groq.com", "m")
    hub.db = "connected"
    served, steps = litellm_hub.add("api.groq.com", "qwen-new")
    assert served == "qwen-new" and steps[-1] == "lite lists qwen-new"
    new = hub.deployments[-1]
    assert new["litellm_params"] == {"model": "groq/qwen-new", "api_base": "https://api.groq.com/openai/v1",
                                     "timeout": 60, "max_retries": 2, "litellm_credential_name": "groq-cred"}
    with pytest.raises(ValueError, match="taken-model is already deployed on openrouter in LiteLLM"):
        litellm_hub.plan("api.groq.com", "taken-model")
    assert litellm_hub.plan("openrouter", "taken-model")["new"] is None
    hub.version = "2.0.1"  # HB-1's CHECKED: a release the bench was not checked against is said, not refused
    assert litellm_hub.plan("api.groq.com", "m2")["steps"][-1] == ("LiteLLM 2.0.1 is not a release the bench was "
                                                                   "checked against (1.72, 1.73, 1.74); most things "
                                                                   "should still work.")
    keys.set_key("lite-admin", "sk-wrong")
    with pytest.raises(ValueError, match=r"refused the admin key \(401\): adding models needs the master key"):
        litellm_hub.plan("api.groq.com", "m")


def test_hb4_cli_proxy_api_sends_only_models_with_its_management_key(bench):
    hub = bench["cpa"]
    keys.delete_key("cpa-admin")
    with pytest.raises(ValueError, match="needs its management key"):
        cliproxy.plan("chutes", "m")
    assert hub.hits == []  # no fallback to the ordinary key: nothing sent
    keys.set_key("cpa-admin", CPA_MANAGEMENT)
    served, steps = cliproxy.add("chutes", "kimi-k2")
    assert served == "ch/kimi-k2" and steps[-1] == "cpa lists ch/kimi-k2"
    assert hub.providers[0]["models"] == [{"name": "old", "alias": "old"}, {"name": "kimi-k2", "alias": "kimi-k2"}]
    assert hub.hits == [("GET", "/v0/management/openai-compatibility"), ("PATCH", "/v0/management/openai-compatibility"),
                        ("GET", "/v0/management/openai-compatibility")]  # read just before, write, read after
    hub.mode = "vanish"
    with pytest.raises(ValueError, match="changed plain's models meanwhile: glm vanished after the write"):
        cliproxy.add("plain", "glm")
    for mode, said in (("404", "management API is off"), ("403", "remote management is disabled")):
        hub.mode = mode
        with pytest.raises(ValueError, match=said):
            cliproxy.plan("chutes", "m")
    hub.mode = ""
    keys.set_key("cpa-admin", "wrong-key")
    hub.hits.clear()
    with pytest.raises(ValueError, match="refused the management key.*not retried"):
        cliproxy.plan("chutes", "m")
    assert len(hub.hits) == 1


def test_ds3_live_routes_from_litellm_and_cli_proxy_hubs(bench):
    registry.add_registration("kimi", "ch/kimi", "cpa")
    routes, errors = hubroutes.live_routes("kimi")
    assert errors == []
    assert [(r["hub"], r["connection"], r["endpoint"], r["on_bench_as"]) for r in routes] == [
        ("litellm", "api.groq.com", "lite", None), ("litellm", "openrouter", "lite", None),
        ("cliproxy", "chutes", "cpa", "kimi"), ("cliproxy", "plain", "cpa", None)]
    assert routes[0]["via"] == "hub" and routes[0]["label"] == "LiteLLM lite · api.groq.com" and routes[0]["steps"]
    keys.set_key("lite-admin", "sk-wrong")
    routes, errors = hubroutes.live_routes("kimi")
    assert [r["hub"] for r in routes] == ["cliproxy", "cliproxy"]
    assert errors == ["could not ask LiteLLM (lite) which connections it has: ValueError: LiteLLM (lite) refused the "
                      "admin key (401): adding models needs the master key or an admin user's key; set it as the "
                      "endpoint's admin key"]


def wait_queue(port, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = call(port, "GET", "/api/onboard-queue")[2]
        if not state["running"]:
            return state
        time.sleep(0.2)
    raise AssertionError("the onboarding queue did not finish")


def test_ds6_discover_add_through_the_handler(bench):
    srv = serve.serve("127.0.0.1", 0)
    port = srv.server_address[1]
    try:
        for sent, error in [({"model": "bad model", "connection": "groq"}, "the model id is the provider's id, e.g. vendor/model:free"),
                            ({"model": "m", "connection": ""}, "choose a connection"),
                            ({"model": "m", "connection": "groq", "endpoint": "nope"}, "no endpoint 'nope'"),
                            ({"model": "m", "connection": "groq", "endpoint": "lite"},
                             "LiteLLM has no deployment on 'groq' to copy; known: api.groq.com, openrouter")]:
            status, _, body = call(port, "POST", "/api/discover/add", sent)
            assert status == 400 and body["errors"] == [error], sent
        status, _, body = call(port, "POST", "/api/discover/add", {"model": "llama-new", "connection": "groq"})
        assert status == 200 and body["served"] == "llama-new" and body["endpoint"] == "owui"
        assert body["steps"][0] == "add llama-new to connection 0's Model IDs" and body["items"][0]["served"] == "llama-new"
        assert [(c["field"], c["new"]) for c in change_lines()][0] == ("openwebui-add", "llama-new on groq")
        wait_queue(port)
        registry.add_registration("kimi", "ch/kimi-k2", "cpa")
        status, _, body = call(port, "POST", "/api/discover/add", {"model": "kimi-k2", "connection": "chutes",
                                                                   "endpoint": "cpa"})
        assert status == 400 and body["served"] == "ch/kimi-k2"  # in the hub even so; the queue refused it
        assert body["errors"][-1] == "CLI Proxy API now has ch/kimi-k2; onboard it from the Onboard dialog"
        assert not any(s in json.dumps(change_lines()) for s in (OWUI_ADMIN, CPA_MANAGEMENT))
    finally:
        srv.shutdown()
        srv.server_close()


def test_ds3_discover_model_carries_the_live_hub_routes_with_its_row_facts(bench):
    """DS-3 end to end: Discover's popup data asks the LiteLLM and CLI Proxy API hubs (fake, on 127.0.0.1) once
    for the model id, each route extended with the row's provider, price and limits; a hub that refuses its
    admin key is an error beside the routes, never a failed popup."""
    cache_fixtures()
    reply = discover.model("openrouter", "openai/gpt-oss-120b:free")
    assert reply["errors"] == []
    live = [r for r in reply["routes"] if r["via"] == "hub"]
    hubs = [("litellm", "api.groq.com"), ("litellm", "openrouter"), ("cliproxy", "chutes"), ("cliproxy", "plain")]
    assert [(r["hub"], r["connection"]) for r in live] == hubs * 2  # the row's id, then its kin's on groq
    assert [(r["provider"], r["model"], r["free"]) for r in live] == (
        [("OpenRouter", "openai/gpt-oss-120b:free", True)] * 4 + [("Groq", "openai/gpt-oss-120b", False)] * 4)
    assert live[4]["cost"] == {"input": 0.15, "output": 0.75}
    keys.set_key("cpa-admin", "wrong")
    reply = discover.model("openrouter", "openai/gpt-oss-120b:free")
    assert [r["hub"] for r in reply["routes"] if r["via"] == "hub"] == ["litellm"] * 4
    assert len(reply["errors"]) == 1 and reply["errors"][0].startswith(
        "could not ask CLI Proxy API (cpa) which connections it has: ")
