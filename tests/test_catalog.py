"""The catalog's core (CAT-1, CAT-4, CAT-10): layers, their sources, and listings fetched only when asked."""

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import catalog, endpoints, registry
from benchwarmers.demo.demo import Upstream

MODELS = {
    "seer": {"answer": "x", "vision": True, "tools": False, "context_window": 128000, "max_output": 4096},
    "plain": {"answer": "y", "context_window": 32768},
    "bare": {"answer": "z"},
}


@pytest.fixture
def up():
    catalog.forget()
    with Upstream(MODELS) as server:
        fileio.write_atomic(endpoints.path(), fileio.dumps({"demo": {"base": server.base_url, "default": True}}))
        for name in MODELS:
            registry.add_registration(name, name, "demo")
        yield server
    catalog.forget()


def listings(up):
    return [r for r in up.requests if r["path"].endswith("/models")]


def write_json(name, data):
    fileio.write_atomic(paths.file("config", name), fileio.dumps(data))


def test_info_never_fetches_unless_asked(up):
    """The gateway's hot path reads only what is in memory."""
    assert catalog.info("seer") == {"context_window": None, "max_output": None, "vision": None, "tools": None,
                                    "sources": {}}
    assert catalog.cannot_see("seer").startswith("the catalog does not say") and catalog.window("seer") is None
    assert listings(up) == []
    info = catalog.info("seer", fetch=True)
    assert info == {"context_window": 128000, "max_output": 4096, "vision": True, "tools": False,
                    "sources": {f: "demo listing" for f in catalog.FIELDS}}
    for _ in range(3):
        catalog.info("plain", fetch=True)
        catalog.info("bare")
    assert len(listings(up)) == 1  # once per endpoint per process
    assert catalog.listing("demo", refresh=True) and len(listings(up)) == 2


def test_warm_fetches_every_endpoint_once_in_parallel(up):
    fileio.write_atomic(endpoints.path(), fileio.dumps({
        "demo": {"base": up.base_url, "default": True}, "dead": {"base": "http://127.0.0.1:9/v1"}}))
    assert catalog.warm() == {"demo": 3, "dead": 0}
    assert catalog.warm() == {"demo": 3, "dead": 0} and len(listings(up)) == 1
    assert catalog.info("plain")["context_window"] == 32768
    # A listing that names its supported parameters without `tools` says the model calls none.
    assert catalog.info("bare") == {"context_window": None, "max_output": None, "vision": False, "tools": False,
                                    "sources": {"vision": "demo listing", "tools": "demo listing"}}


def test_learned_window_only_tighter_and_capabilities_seen_working_cat1(up):
    catalog.warm()
    write_json("model-learned.json", {
        "plain": {"context_window": {"value": 16000, "at": "2026-10-23T19:00:00-05:00", "where": "gateway"}},
        "seer": {"context_window": {"value": 999999, "at": "2026-10-23T19:00:00-05:00"},
                 "capabilities": {"tools": {"value": True, "at": "2026-10-20T07:00:00+00:00"}}},
        "bare": {"context_window": {"value": 4096, "at": "2026-10-21T01:00:00+00:00"}},
    })
    plain = catalog.info("plain")
    assert plain["context_window"] == 16000 and plain["sources"]["context_window"] == "learned 2026-10-23"
    seer = catalog.info("seer")
    assert seer["context_window"] == 128000 and seer["sources"]["context_window"] == "demo listing"
    assert seer["tools"] is True and seer["sources"]["tools"] == "probe 2026-10-20"
    assert catalog.window("bare") == 4096
    assert catalog.too_small("bare", 4097) == 4096 and catalog.too_small("bare", 4096) is None
    assert catalog.too_small("nobody", 10**9) is None  # an unknown window never refuses


def test_overrides_always_win_cat1_cat4(up):
    catalog.warm()
    write_json("model-learned.json", {"seer": {"capabilities": {"vision": {"value": True, "at": "2026-10-20"}}}})
    write_json("model-overrides.json", {"seer": {"vision": False, "context_window": 1000, "limits": {"rpm": 3},
                                                 "tools": None},
                                        "bare": {"vision": True, "max_output": 512}})
    seer = catalog.info("seer")
    assert seer["vision"] is False and seer["sources"]["vision"] == "you"  # beats the probe's true
    assert seer["context_window"] == 1000 and seer["tools"] is False
    assert seer["limits"] == {"rpm": 3} and seer["sources"]["limits"] == "you (this model)"  # CAT-2
    assert catalog.cannot_see("seer") == "does not take images (says you)"
    assert catalog.cannot_see("bare") == "" and catalog.max_output("bare") == 512
    assert catalog.info("bare")["sources"] == {"vision": "you", "max_output": "you", "tools": "demo listing"}


def test_the_refresh_record_is_the_first_layer_cat10(up):
    write_json("model-catalog.json", {"refreshed": "2026-10-23T06:00:00-05:00", "models": {
        "bare": {"context_window": 65536, "tools": True, "sources": {"context_window": "openrouter",
                                                                     "tools": "models.dev groq"}},
        "plain": {"context_window": 50000, "max_output": 2048, "sources": {}}}})
    assert catalog.info("bare")["sources"] == {"context_window": "openrouter", "tools": "models.dev groq"}
    catalog.warm()
    plain = catalog.info("plain")
    assert plain["context_window"] == 32768 and plain["sources"]["context_window"] == "demo listing"
    assert plain["max_output"] == 2048 and plain["sources"]["max_output"] == "catalog"


def test_responses_api_models_cannot_see_gwc3(up):
    write_json("model-overrides.json", {"gpt": {"vision": True}})
    fileio.write_atomic(endpoints.path(), fileio.dumps({
        "demo": {"base": up.base_url}, "chatgpt": {"base": "https://chatgpt.example/v1", "api": "responses"}}))
    registry.add_registration("gpt", "gpt-x", "chatgpt")
    assert catalog.info("gpt")["vision"] is True
    assert catalog.cannot_see("gpt").startswith("is reached through the Responses API")


def test_records_are_kept_until_one_of_their_sources_changes(up):
    """Issue 7: a panel asks about every registered alias, so an unchanged catalog costs a few stats, not a
    rebuild; yet a change to any source (CAT-1's files, the registrations, the endpoints, a listing) shows at once."""
    catalog.warm()
    table = catalog.table()
    assert catalog.table() is table and table["plain"] is catalog.table()["plain"]
    assert catalog.info("plain") == table["plain"] and catalog.info("plain") is not table["plain"]
    assert catalog.window("nobody") is None and "nobody" not in table  # a request may name anything: not kept

    write_json("model-catalog.json", {"models": {"bare": {"context_window": 70000}}})
    assert catalog.table() is not table and catalog.window("bare") == 70000
    write_json("model-learned.json", {"bare": {"context_window": {"value": 6000, "at": "2026-10-23T01:00:00"}}})
    assert catalog.window("bare") == 6000
    write_json("model-overrides.json", {"bare": {"context_window": 5000}})
    assert catalog.info("bare")["sources"]["context_window"] == "you" and catalog.window("bare") == 5000

    registry.remove_registration("seer")
    registry.add_registration("seer", "plain", "demo")
    assert catalog.window("seer") == 32768 and catalog.max_output("seer") is None

    fileio.write_atomic(endpoints.path(), fileio.dumps({"moved": {"base": up.base_url, "default": True}}))
    assert catalog.window("plain") is None  # its endpoint is now "moved", whose listing is not in memory
    catalog.listing("moved")
    assert catalog.info("plain")["sources"]["context_window"] == "moved listing"
    catalog.forget()
    assert catalog.window("plain") is None


def test_listing_facts_cat7_cat10():
    assert catalog.listing_facts({"id": "x", "top_provider": {"context_length": 9000, "max_completion_tokens": 900},
                                  "architecture": {"input_modalities": ["text", "image"]},
                                  "supported_parameters": ["tools"]}) == {
        "context_window": 9000, "max_output": 900, "vision": True, "tools": True}
    assert catalog.listing_facts({"context_length": True, "supported_features": [],
                                  "supported_parameters": ["tools"]}) == {"tools": False}
    assert catalog.listing_facts(None) == {}


@pytest.mark.parametrize("model_id, norm", [
    ("openai/gpt-oss-120b:free", "gpt-oss-120b"),
    ("gemini-3.8-flash-high", "gemini-3.8-flash"),
    ("llm7.codestral", "codestral"),
    ("claude-x-20261001", "claude-x"),
    ("Vendor/Model-2026-10-01-latest", "model"),
    ("us.model-v1:0", "model"),
    ("m@2026.1", "m"),
])
def test_norm_model_src6(model_id, norm):
    assert catalog.norm_model(model_id) == norm
