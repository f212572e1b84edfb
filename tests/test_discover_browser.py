"""Discover in real headless Chromium (dashboard.md DS-1..5, OB-23): the page's rows from cached feeds, a popup,
and "Add via this" on a direct route, which queues the onboarding and follows it in the step view. Screenshots
land in tests/artifacts/ (gitignored) to be looked at."""

import json
import os
import signal
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import fileio
from benchwarmers.models import sources
from benchwarmers.admin import onboarding
from conftest import wait_for, watched_page

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "feeds"




@pytest.fixture
def lab(bench):
    """The test bench plus `fresh`, served by its upstream but not registered, and cached feeds in which the
    upstream is a provider (its `api` is the endpoint's base URL: a direct route)."""
    bench.set_model("fresh", answer="Fresh: a new model.", context_window=64000)
    feed = json.loads((FIXTURES / "modelsdev.json").read_text())
    feed["local-lab"] = {"id": "local-lab", "name": "Local lab", "npm": "@ai-sdk/openai-compatible",
                         "api": bench.base_url, "models": {
                             name: {"id": name, "name": name.title(), "tool_call": True,
                                    "modalities": {"input": ["text"], "output": ["text"]},
                                    "cost": {"input": 0, "output": 0}, "limit": {"context": 64000, "output": 8192}}
                             for name in ("alpha", "fresh", "pricey")}}
    feed["local-lab"]["models"]["pricey"]["cost"] = {"input": 1.5, "output": 6}  # paid, and connected
    fileio.write_atomic(sources.cache_path("modelsdev"), json.dumps(feed))
    fileio.write_atomic(sources.cache_path("freellmapi"), (FIXTURES / "freellmapi.json").read_text())
    srv = serve.serve("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()
    for item in fileio.read_json(onboarding.queue_path()).get("items", []):
        if item.get("pid"):  # the onboarding this test started, in its own session: end it, by its id
            try:
                os.killpg(item["pid"], signal.SIGTERM)
            except ProcessLookupError:
                pass


def test_ds1_to_ds5_ob23_discover_rows_popup_and_add_via_a_direct_route_then_its_probe_charted(browser, lab):
    context, page = watched_page(browser)
    problems = page.problems
    page.goto(lab + "/")
    page.click("[role=tab][data-tab=discover]")
    page.wait_for_selector("#tab-discover tbody tr[data-row]")
    nav = page.eval_on_selector_all("[role=tab]", "els => els.map(e => e.dataset.tab)")
    assert nav.index("discover") == nav.index("collections") + 1  # SHELL-10
    assert "free models from models.dev and FreeLLMAPI, deduped" in page.inner_text("#ds-sub")
    paid = page.locator("#tab-discover tr.paid")
    assert paid.count() == 1 and paid.is_hidden()  # paid rows only with Show paid
    page.check("#ds-paid")
    assert paid.is_visible() and "$1.5 / $6" in paid.inner_text()
    page.fill("#tab-discover input[type=search]", "fresh")
    row = page.locator("#tab-discover tbody tr[data-row]:visible")
    assert row.count() == 1 and "connected" in row.inner_text() and "Add…" in row.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.fill("#tab-discover input[type=search]", "")
    page.screenshot(path=str(ARTIFACTS / "discover.png"), full_page=True)

    page.fill("#tab-discover input[type=search]", "alpha")
    page.click("#tab-discover tbody tr[data-row]:visible")
    page.wait_for_selector("#discover-dialog .ds-route")
    assert "on the bench as alpha" in page.inner_text("#discover-dialog .ds-route")
    page.click("#discover-dialog button:has-text('Close')")

    page.fill("#tab-discover input[type=search]", "fresh")
    page.click("#tab-discover tbody tr[data-row]:visible")
    page.wait_for_selector("#discover-dialog .ds-add")
    assert "Local lab · fresh · listed by models.dev" in page.inner_text("#discover-dialog")
    page.screenshot(path=str(ARTIFACTS / "discover-popup.png"))
    page.click("#discover-dialog .ds-add")
    assert "register it on demo" in page.inner_text("#confirm-text")
    page.click("#confirm-yes")
    page.wait_for_selector("#onboard-dialog[data-view=steps] #os-steps li.step.done[data-step='2']", timeout=60_000)
    assert page.inner_text("#onboard-dialog h2") == "Onboarding fresh"
    assert "registered as fresh" in page.inner_text("#os-steps li[data-step='2']")
    assert page.locator("#os-log").get_attribute("open") is not None  # the log opened once it had text
    assert page.is_visible("#oq-text")
    page.screenshot(path=str(ARTIFACTS / "discover-steps.png"))
    queued = fileio.read_json(onboarding.queue_path())["items"]
    assert [(i["served"], i["endpoint"]) for i in queued] == [("fresh", "demo")]

    # issue 19's scenario: the model added from Discover is probed by its onboarding, and after a reload its
    # probe is on the Benchmarks page's Performance chart
    assert wait_for(lambda: fileio.read_json(onboarding.queue_path())["items"][0]["state"] not in
                    ("queued", "running"), 120)
    page.reload()
    page.click("[role=tab][data-tab=suite]")
    bar = page.wait_for_selector("#chart-probes text[data-row=fresh]")
    assert bar.text_content().startswith("fresh")
    page.locator("#bm-perf").screenshot(path=str(ARTIFACTS / "discover-then-performance.png"))
    context.close()
    assert problems == []
