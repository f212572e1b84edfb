"""Issue 31 part 6: axe-core finds no serious or critical violation on any dashboard page, in a light and a dark
theme, at 1440 px and on a phone.

axe-core is vendored for the tests only (tests/vendor/axe.min.js, version and licence in tests/vendor/README.md);
it is injected into the page, never shipped or served. The pages are the navigation's own tabs, read from the
page, so a page added later is checked without naming it here. The bench has panels, verdicts and a judged
leaderboard, so the tables, chips and charts are drawn rather than their empty states.
"""

import json
import urllib.request
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.demo import demo
from benchdata import post
from conftest import watched_page

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
SERIOUS = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
  .filter(v => v.impact === "serious" || v.impact === "critical")
  .map(v => v.id + " (" + v.impact + "): " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", "))"""


@pytest.fixture
def filled_dash(bench):
    """A dashboard on the test's bench (conftest's local upstream) with two judged panels and one owed."""
    demo.set_collection("core", ["alpha", "beta"], description="two reviewers", tags=["review"])
    srv = serve.serve("127.0.0.1", 0)
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    for prompt in ("Review x = x++", "Is this loop off by one?", "What does rebase do?"):
        post(base, "/v1/chat/completions", {"model": "bench/core", "messages": [{"role": "user", "content": prompt}]})
    card = json.load(urllib.request.urlopen(base + "/api/gateway-card", timeout=30))
    for n, panel in enumerate(card["panels"][1:]):
        for seat in panel["seats"]:
            post(base, "/bench/verdict", {"call": seat["call"], "useful": (seat["alias"] == "alpha") != bool(n)})
    yield base
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("theme", ["rainforest", "dark"])
@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_issue31_axe_finds_no_serious_violation_on_any_page(browser, filled_dash, theme, width, height):
    context, page = watched_page(browser, width=width, height=height)
    problems = page.problems
    page.goto(f"{filled_dash}/?theme={theme}")
    assert page.get_attribute("html", "data-theme") == theme
    page.add_script_tag(path=str(AXE))
    tabs = page.eval_on_selector_all("[role=tab]", "tabs => tabs.map(t => t.dataset.tab)")
    assert "glance" in tabs and "settings" in tabs
    found = {}
    for key in tabs:
        page.click(f"[role=tab][data-tab={key}]")
        page.wait_for_selector(f"#tab-{key}:not([hidden]) .card")
        page.wait_for_timeout(300)  # the cards a page fetches after it shows (the Gateway card, the leaderboard)
        serious = page.evaluate(SERIOUS)
        if serious:
            found[key] = serious
    context.close()
    assert found == {}
    assert problems == []
