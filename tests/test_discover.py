"""The public feeds, the catalog refresh and Discover (models.md §14 CAT-6..11, §15 SRC/DISC, AL-4; dashboard.md
DS-1..3), every network source a fake on 127.0.0.1 answering the recorded shapes in tests/fixtures/feeds/."""

import datetime
import http.server
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import fileio, paths
from benchwarmers.models import alerts, catalog, endpoints, registry, sources
from benchwarmers.demo import demo
from benchwarmers.admin import jobs, scheduler
from benchwarmers.dashboard import discover

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "feeds"
CODE = Path(__file__).resolve().parent.parent
ROUTES = {"/api.json": "modelsdev", "/v1/latest": "freellmapi", "/api/v1/models": "openrouter",
          "/v1/models": "listing"}
LISTING = {"data": [{"id": "google/gemma-3-27b-it:free", "object": "model"}, {"id": "kimi-x", "object": "model"}]}


class Feeds(http.server.ThreadingHTTPServer):
    """models.dev, FreeLLMAPI and OpenRouter on one port: `bodies[name]` is what each answers (an int: that
    status), `hits` every path asked, with the User-Agent it came with."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), FeedHandler)
        self.hits = []
        self.reset()

    def reset(self):
        self.bodies = {name: json.loads((FIXTURES / f"{name}.json").read_text()) for name in list(ROUTES.values())[:3]}
        self.bodies["listing"] = LISTING  # a provider's plain /models: ids only, no modalities
        self.hits.clear()

    def url(self, name):
        return f"http://127.0.0.1:{self.server_address[1]}" + next(p for p, n in ROUTES.items() if n == name)


class FeedHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.hits.append((self.path, self.headers.get("User-Agent")))
        body = self.server.bodies.get(ROUTES.get(self.path))
        if body is None or isinstance(body, int):
            self.send_response(body or 404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def feeds():
    srv = Feeds()
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def pointed(feeds, monkeypatch):
    """Every feed address moved to the fake (the variables a child process inherits too)."""
    feeds.reset()
    for name, setting in {**sources.FEEDS, "openrouter": sources.OPENROUTER}.items():
        monkeypatch.setenv(setting, feeds.url(name))
    return feeds


@pytest.fixture
def providers(pointed, monkeypatch):
    """Two providers on fake upstreams: `groq` serving llama (with its own listing facts) and `openrouter`
    serving the free gpt-oss; one alias registered on each."""
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with demo.Upstream({"llama-3.3-70b-versatile": {"context_window": 120000}}) as groq, \
            demo.Upstream({"openai/gpt-oss-120b:free": {}}) as router:
        demo.register(groq, "groq", {"llama": "llama-3.3-70b-versatile"})
        demo.register(router, "openrouter", {"oss": "openai/gpt-oss-120b:free"}, default=False)
        yield pointed


def refresh_script(*args):
    return subprocess.run([*paths.module_command("scripts.refresh_catalog"), *args], cwd=CODE,
                          capture_output=True, text=True, timeout=120, env={**os.environ})


def stale(name):
    old = time.time() - sources.MAX_AGE_S - 60
    os.utime(sources.cache_path(name), (old, old))


def test_src1_src2_fetch_caches_for_20_hours_and_cached_never_fetches(pointed):
    assert sources.cached("modelsdev") == {} and pointed.hits == []
    data = sources.fetch("modelsdev")
    assert "groq" in data and pointed.hits == [("/api.json", "benchwarmers")]
    assert sources.fetch("modelsdev") == data and len(pointed.hits) == 1  # fresh: the cache answers
    stale("modelsdev")
    pointed.bodies["modelsdev"] = 500
    with pytest.raises(OSError):
        sources.fetch("modelsdev")
    assert sources.cached("modelsdev") == data  # a failed download keeps the cached copy
    pointed.bodies["modelsdev"] = ["not", "a", "feed"]
    with pytest.raises(ValueError):
        sources.fetch("modelsdev", force=True)
    assert sources.cached("modelsdev") == data and not list(sources.cache_path("modelsdev").parent.glob(".*part"))
    done = subprocess.run(paths.module_command("models.sources"), capture_output=True, text=True,
                          env={**os.environ}, timeout=60)
    assert done.stdout.splitlines() == [
        "modelsdev: could not fetch (ValueError: modelsdev answered something that is not its feed); keeping the "
        "cached copy", "freellmapi: 4 models"]


def test_src3_to_src7_maps_norms_and_prices():
    assert sources.provider_of("nvidia-api") == "nvidia" and sources.provider_of("groq", {"groq": "groq-x"}) == "groq-x"
    assert sources.platform_provider("radeon") == "amd" and sources.PLATFORM_CONNECTION["llm7"] == "llm7-api"
    assert sources.own_client_only({"opencode": False, "chutes": True, "x": "yes"}) == {"opencode-go", "chutes"}
    assert sources.own_client_only(["opencode"]) == {"opencode", "opencode-go"}
    assert [catalog.norm_model(m) for m in ("openai/gpt-oss-120b:free", "gemini-3.8-flash-high", "llm7.codestral",
                                            "mistral-small-latest", "claude-x@20250101", "m-2025-01-31")] == [
        "gpt-oss-120b", "gemini-3.8-flash", "codestral", "mistral-small", "claude-x", "m"]
    costs = (None, {"input": None, "output": None}, {"input": 0}, {"input": 0, "output": 1})
    assert [sources.is_free(c) for c in costs] == [None, None, True, False]


def test_cat6_to_cat11_the_refresh_script_writes_every_layer_with_its_source(providers):
    done = refresh_script()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("2 models; context window known for 2.") and len(lines) == 3
    assert {p for p, _ in providers.hits} == {"/api.json", "/v1/latest", "/api/v1/models"}
    written = fileio.read_json(paths.file("config", "model-catalog.json"), comments=False)
    assert written["_why"].startswith("Written by the catalog refresh") and written["refreshed"][:4].isdigit()
    llama, oss = written["models"]["llama"], written["models"]["oss"]
    # groq's own listing wins its window (CAT-10); models.dev fills the rest and prices it (CAT-8)
    assert llama["context_window"] == 120000 and llama["sources"]["context_window"] == "groq listing"
    assert llama["sources"]["context_window_note"] == "freellmapi says 128,000"
    assert (llama["max_output"], llama["sources"]["max_output"]) == (32768, "models.dev groq")
    assert llama["cost"] == {"input": 0.59, "output": 0.79} and llama["knowledge_cutoff"] == "2023-12"
    assert llama["limits"] == {"rpm": 30, "rpd": 1000, "tpm": 12000, "tpd": 100000}  # CAT-9
    assert llama["sources"]["limits"] == "freellmapi groq"
    assert llama["quirks"] == ["tool calls sometimes come back as text"]
    # OpenRouter on its own connection (CAT-7), zero limits dropped
    assert (oss["structured_output"], oss["sources"]["structured_output"]) == (True, "openrouter")
    assert (oss["reasoning"], oss["sources"]["reasoning"]) == (True, "openrouter")
    assert oss["description"].startswith("gpt-oss-120b is an open-weight") and len(oss["description"]) <= 240
    assert oss["limits"] == {"rpm": 20, "rpd": 50} and oss["cost"] == {"input": 0, "output": 0}
    assert (oss["open_weights"], oss["sources"]["open_weights"]) == (True, "models.dev openrouter")
    # what catalog.info reads, and the CLI's alias form
    info = catalog.info("llama")  # CAT-1, CAT-2: what the refresh found, as every reader sees it
    assert (info["max_output"], info["cost"], info["quirks"]) == (32768, llama["cost"], llama["quirks"])
    assert (info["limits"]["rpd"], info["sources"]["limits"]) == (1000, "freellmapi groq")
    shown = json.loads(refresh_script("oss").stdout)
    assert shown["sources"]["context_window"] in ("openrouter", "openrouter listing")


def test_cat7_cat8_same_model_id_elsewhere_is_replaced_by_the_exact_provider(providers):
    """A model on groq that OpenRouter lists under the same id: models.dev's groq entry replaces OpenRouter's
    `(same model id)` values; the window stays the listing's."""
    providers.bodies["openrouter"]["data"].append(
        {"id": "llama-3.3-70b-versatile", "context_length": 999999, "top_provider": {"max_completion_tokens": 1},
         "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["text"]},
         "supported_parameters": ["tools"]})
    from benchwarmers.models import catalogrefresh

    llama = catalogrefresh.refresh()["llama"]
    assert (llama["max_output"], llama["sources"]["max_output"]) == (32768, "models.dev groq")
    assert (llama["reasoning"], llama["sources"]["reasoning"]) == (False, "models.dev groq")
    assert (llama["vision"], llama["sources"]["vision"]) == (False, "groq listing")  # the listing wins last
    assert llama["context_window"] == 120000


def test_al4_price_watch_raises_keeps_and_clears_the_went_paid_guard(providers):
    from benchwarmers.models import catalogrefresh

    catalogrefresh.refresh()
    key = "model:paid:openai/gpt-oss-120b:free"
    assert key not in alerts.active()
    providers.bodies["modelsdev"]["openrouter"]["models"]["openai/gpt-oss-120b:free"]["cost"] = {"input": 0.1,
                                                                                                "output": 0.5}
    stale("modelsdev")
    catalogrefresh.refresh()
    alert = alerts.active()[key]
    assert (alert["kind"], alert["alias"]) == ("went paid", "oss")
    assert alert["message"] == ("oss is listed with a price now (models.dev): input 0.1, output 0.5 per million "
                                "tokens")
    catalogrefresh.refresh()  # still paid: the guard stays up (improvement 1)
    assert key in alerts.active()
    providers.bodies["modelsdev"]["openrouter"]["models"]["openai/gpt-oss-120b:free"]["cost"] = {"input": 0,
                                                                                                "output": 0}
    stale("modelsdev")
    catalogrefresh.refresh()
    assert key not in alerts.active()
    # a connection the person pays for is never watched
    fileio.write_atomic(paths.file("config", "connections.json"), '{"paid": ["openrouter"]}\n')
    providers.bodies["modelsdev"]["openrouter"]["models"]["openai/gpt-oss-120b:free"]["cost"] = {"input": 2,
                                                                                                "output": 4}
    stale("modelsdev")
    catalogrefresh.refresh()
    assert key not in alerts.active()


def test_cat6_openrouter_down_exits_1_and_writes_nothing_feeds_down_only_leave_their_layer(providers):
    providers.bodies.update(openrouter=503, freellmapi=500, modelsdev=500)
    done = refresh_script()
    assert done.returncode == 1 and done.stderr.startswith("cannot read OpenRouter's catalog: HTTPError")
    assert not paths.file("config", "model-catalog.json").exists()
    providers.bodies["openrouter"] = json.loads((FIXTURES / "openrouter.json").read_text())
    done = refresh_script()
    assert done.returncode == 0, done.stderr
    llama = fileio.read_json(paths.file("config", "model-catalog.json"))["models"]["llama"]
    assert "limits" not in llama and "cost" not in llama and llama["sources"]["context_window"] == "groq listing"


def test_catalog_job_runs_the_refresh_script_from_the_scheduler(providers):
    assert jobs.JOBS["catalog"][3] == "scripts.refresh_catalog"
    runner = scheduler.Scheduler()
    runner.running["catalog"] = None
    runner.run_job("catalog", "06:00")
    log = paths.file("runs", "scheduler.log").read_text()
    assert "ran catalog (due 06:00): exit 0" in log and "not part of this install" not in log
    assert set(fileio.read_json(paths.file("config", "model-catalog.json"))["models"]) == {"llama", "oss"}
    assert runner.running == {}


# -- Discover -------------------------------------------------------------------------------------------------

def cache_fixtures():
    for name in ("modelsdev", "freellmapi"):
        fileio.write_atomic(sources.cache_path(name), (FIXTURES / f"{name}.json").read_text())


@pytest.fixture
def install(pointed, monkeypatch):
    """Cached feeds, and an install with: a `groq` endpoint (name maps to models.dev's groq) with llama on the bench,
    an endpoint on chutes' base URL, and an Open WebUI hub that serves openrouter models (provider tags)."""
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    cache_fixtures()
    fileio.write_atomic(endpoints.path(), json.dumps({
        "groq": {"base": "https://api.groq.com/openai/v1", "key": "groq", "kind": "provider", "default": True},
        "chutes-box": {"base": "https://llm.chutes.ai/v1/", "key": "chutes", "kind": "provider"},
        "hub": {"base": "https://owui.example/api", "key": "owui", "kind": "hub", "hub": "openwebui"}}))
    registry.add_registration("llama", "llama-3.3-70b-versatile", "groq")
    registry.add_registration("oss-hub", "openrouter.openai/gpt-oss-120b:free", "hub")
    fileio.write_atomic(paths.file("config", "provider-tags.json"),
                        '{"openrouter.openai/gpt-oss-120b:free": "openrouter/openai"}\n')
    return pointed


def by_key(rows):
    return {(r["provider"], r["model"]): r for r in rows}


def test_disc1_to_disc5_rows_routes_reach_and_order_from_the_caches_only(install):
    today = datetime.date(2026, 12, 5)
    rows = discover.build(today)
    assert install.hits == []  # DS-1: nothing fetched
    found = by_key(rows)
    assert ("groq", "mixtral-8x7b-32768") not in found  # deprecated
    assert ("opencode", "grok-code") not in found  # free only in its own client (DISC-3)
    llama = found[("groq", "llama-3.3-70b-versatile")]
    assert llama["sources"] == ["models.dev", "freellmapi"] and llama["free"] and llama["limits"]["rpm"] == 30
    assert (llama["reach"], llama["on_bench_as"], llama["connection"]) == ("on bench", "llama", "groq")
    assert [(r["via"], r["endpoint"], r["on_bench_as"]) for r in llama["routes"]] == [("direct", "groq", "llama")]
    assert found[("groq", "whisper-large-v3")]["in_mods"] == ["audio"]
    oss = found[("openrouter", "openai/gpt-oss-120b:free")]
    assert [(r["via"], r["endpoint"], r["on_bench_as"]) for r in oss["routes"]] == [("openwebui", "hub", "oss-hub")]
    assert oss["reach"] == "on bench" and oss["also_on"] == []
    paid = found[("groq", "openai/gpt-oss-120b")]  # the paid twin stays addable while the free one is on the bench
    assert not paid["free"] and paid["reach"] == "connected" and paid["on_bench_as"] is None
    assert paid["also_on"] == ["oss-hub via openrouter"]
    glm = found[("chutes", "zai-org/GLM-4.5-Air")]
    assert [(r["via"], r["endpoint"]) for r in glm["routes"]] == [("direct", "chutes-box")]  # by base URL
    assert found[("deepinfra", "meta-llama/Llama-3.3-70B-Instruct-Turbo")]["reach"] == "other"
    claude = found[("openrouter", "anthropic/claude-sonnet-4")]  # paid, but the hub reaches openrouter: shown
    assert (claude["reach"], claude["routes"][0]["on_bench_as"]) == ("connected", None)
    codestral = found[("llm7", "llm7.codestral-2501")]  # a FreeLLMAPI-only row (DISC-2)
    assert (codestral["free"], codestral["connection"], codestral["openai_like"]) == (True, "llm7-api", False)
    assert found[("cloudflare-workers-ai", "@cf/meta/llama-4-scout-17b-16e-instruct")]["in_mods"] == ["text", "image"]
    assert all(not r["new"] and r["first_seen"] == "baseline" for r in rows)
    order = [(not r["free"], discover.REACH.index(r["reach"])) for r in rows]
    assert order == sorted(order)
    page = discover.page(today)
    assert page["hidden"] == 2 and page["free"] == sum(r["free"] for r in rows)
    assert sorted(r["model"] for r in page["rows"] if r["paid"]) == ["anthropic/claude-sonnet-4", "openai/gpt-oss-120b"]


def test_disc3_ds1_new_rows_and_the_memo_follows_its_files(install):
    day = datetime.date(2026, 12, 5)
    first = discover.build(day)
    assert discover.build(day) is first  # memoised
    feed = json.loads(sources.cache_path("modelsdev").read_text())
    feed["groq"]["models"]["kimi-k2"] = {"id": "kimi-k2", "name": "Kimi K2", "modalities": {"input": ["text"],
                                                                                             "output": ["text"]}}
    fileio.write_atomic(sources.cache_path("modelsdev"), json.dumps(feed))
    kimi = by_key(discover.build(day))[("groq", "kimi-k2")]
    assert (kimi["new"], kimi["first_seen"]) == (True, "2026-12-05")
    assert fileio.read_json(discover.seen_path())["groq|kimi-k2"] == "2026-12-05"
    assert by_key(discover.build(day + datetime.timedelta(days=7)))[("groq", "kimi-k2")]["new"] is False
    fileio.write_atomic(paths.file("config", "connections.json"), '{"free_in_own_client_only": {"opencode": false}}\n')
    assert ("opencode", "grok-code") in by_key(discover.build(day))  # connections.json changed: rebuilt


def test_ds3_discover_model_and_the_page_over_the_real_handler(install):
    srv = serve.serve("127.0.0.1", 0)
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        with urllib.request.urlopen(base + "/api/discover") as r:
            page = json.load(r)
        assert page["ok"] and page["cached"] == {"modelsdev": True, "freellmapi": True} and page["rows"]
        query = "/api/discover-model?provider=openrouter&model=" + urllib.request.quote("openai/gpt-oss-120b:free")
        with urllib.request.urlopen(base + query) as r:
            found = json.load(r)
        assert found["ok"] and found["errors"] == [] and found["model"]["model"] == "openai/gpt-oss-120b:free"
        assert [(r["via"], r["endpoint"], r["provider"], r["model"], r["free"]) for r in found["routes"]] == [
            ("openwebui", "hub", "OpenRouter", "openai/gpt-oss-120b:free", True),
            ("direct", "groq", "Groq", "openai/gpt-oss-120b", False)]  # its kin on groq, with its price
        assert found["routes"][1]["cost"] == {"input": 0.15, "output": 0.75}
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "/api/discover-model?provider=groq&model=nope")
        assert refused.value.code == 404 and json.load(refused.value) == {
            "ok": False, "errors": ["Discover has no 'nope' from 'groq'; reload the page"]}
        with urllib.request.urlopen(base + "/api/discover-model") as r:  # RT-6: no query, the page
            assert r.headers["Content-Type"].startswith("text/html")
        assert install.hits == []
    finally:
        srv.shutdown()
        srv.server_close()


def test_ds1_no_cache_is_an_empty_page_and_still_no_fetch(pointed):
    assert discover.page() == {"ok": True, "errors": [], "rows": [], "free": 0, "hidden": 0,
                               "cached": {"modelsdev": False, "freellmapi": False}}
    assert pointed.hits == []


def test_ob9_the_picker_takes_modalities_from_the_cached_feed_when_the_listing_has_none(pointed):
    from benchwarmers.admin import onboarding

    cache_fixtures()
    fileio.write_atomic(endpoints.path(), json.dumps({"plain": {"base": pointed.url("listing")[:-len("/models")],
                                                                "key": "", "kind": "provider"}}))
    found = {c["served"]: (c["inputs"], c["outputs"]) for c in onboarding.candidates()["candidates"]}
    assert found == {"google/gemma-3-27b-it:free": (["text", "image"], ["text"]), "kimi-x": ([], [])}
    assert [p for p, _ in pointed.hits] == ["/v1/models"]  # the endpoint asked, the feed only read


def test_demo_seeds_feed_caches_so_discover_has_rows_offline(pointed, monkeypatch):
    for name in ("BENCHWARMERS_HOME", "BENCH_CLIENT", "BENCHWARMERS_DEMO"):  # start_demo sets them: undone after
        monkeypatch.setenv(name, os.environ.get(name, ""))
    up = demo.start_demo()
    try:
        rows = by_key(discover.build())
        scout = rows[("benchwarmers-demo", "scout")]
        assert scout["new"] and scout["reach"] == "connected" and scout["routes"][0]["endpoint"] == "demo"
        assert rows[("benchwarmers-demo", "terse")]["on_bench_as"] == "terse"
        assert rows[("openrouter", "google/gemma-3-27b-it:free")]["reach"] == "easy to add"
        assert "scout" not in registry.registrations() and pointed.hits == []
    finally:
        demo.stop_demo(up)
