"""Issue 31 part 5 in real headless Chromium: what was measured, fixed and measured again.

At 1440x900 and 390x844: tables use the content width (no table scrolls sideways, its last column on screen)
and keep their telling columns on a phone (At a glance's Helped, the Gateway card's seat chips); the Real work
chart fits its card and draws an interval per bar; Settings tells the truth about the scheduler and the ports;
the Gateway card has a prompt column, a filter and relative times; the leaderboard shares ranks, draws an axis
and lists the models it could not fit. The dashboard runs on the test's bench (conftest's `bench`: the local
upstream's models), with real panels asked through its own gateway routes.
"""

import json
import urllib.request

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.demo import demo
from benchwarmers.panel import leaderboard, offload
from benchdata import post
from conftest import running_gateway, watched_page

SIZES = [(1440, 900), (390, 844)]
PROMPTS = ["Is this loop off by one? for i in range(1, len(xs)): total += xs[i]", "Review: x = x++",
           "What does git rebase -i do?", "Explain this regex: ^a+$"]


@pytest.fixture
def dash(bench):
    """A dashboard whose bench/core (alpha, beta, gamma) answered four panels, seats judged with split verdicts;
    the merger judged as a merger only (unfitted) and one route-conversation verdict (left out)."""
    demo.set_collection("core", ["alpha", "beta", "gamma"], description="three reviewers", tags=["review"])
    srv = serve.serve("127.0.0.1", 0)
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    for n, prompt in enumerate(PROMPTS):
        post(base, "/v1/chat/completions", {"model": "bench/core", "messages": [{"role": "user", "content": prompt}]})
    card = json.load(urllib.request.urlopen(base + "/api/gateway-card", timeout=30))
    for p, panel in enumerate(card["panels"][1:]):  # the newest panel stays owed
        for seat in panel["seats"]:
            post(base, "/bench/verdict", {"call": seat["call"], "useful": (seat["alias"] == "alpha") != (p == 2)})
    offload.add("merger", "Merge (bench/core, review)", True, "merged", call="pm.merger", collection="bench/core",
                shape="review")
    offload.add("beta", "fix it (bench/core:route)", False, "conversation", call="r9.1", collection="bench/core")
    yield base
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def open_page(browser):
    """`open(base, width, height)`: a watched page; every one must end without a console error."""
    opened = []

    def open_(base, width, height, query=""):
        context, page = watched_page(browser, width=width, height=height, timeout=10_000)
        opened.append((context, page))
        page.goto(base + "/" + query)
        return page
    yield open_
    for context, page in opened:
        problems = page.problems
        context.close()
        assert problems == []


def tab(page, key):
    page.click(f"[role=tab][data-tab={key}]")
    page.wait_for_selector(f"#tab-{key}:not([hidden]) .card")


def scrolled_tables(page, key):
    """The tables of a page that scroll sideways (their wrapper wider inside than out)."""
    return page.evaluate("""key => Array.from(document.querySelectorAll('#tab-' + key + ' .scroll'))
      .filter(s => s.offsetParent !== null && s.scrollWidth > s.clientWidth + 1)
      .map(s => [(s.closest(".card") || s).id, s.scrollWidth, s.clientWidth, s.innerText.slice(0, 200)])""", key)


def on_screen(page, selector):
    """Whether the element's box lies within the viewport's width (left edge and right edge)."""
    box = page.locator(selector).first.bounding_box()
    width = page.viewport_size["width"]
    return box is not None and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= width


def header(table_scope, title):
    return f"{table_scope} thead th:text-is('{title}')"


@pytest.mark.parametrize("width,height", SIZES)
def test_issue31_tables_use_the_width_and_keep_their_telling_columns(dash, open_page, width, height):
    """No page scrolls sideways; At a glance's and the Gateway card's tables do not either; on a phone At a
    glance shows Model, Status and Helped and the Gateway card its seat chips, inside the viewport; at 1440 px
    every column is on screen (Last answer included); Settings does not overflow."""
    page = open_page(dash, width, height)
    phone = width < 600
    for key in ("glance", "collections", "discover", "settings", "quotas"):
        tab(page, key)
        if key == "collections":
            page.wait_for_selector("#gw-body button.chip.seat")
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"{key} scrolls sideways at {width} px"
        if key in ("glance", "collections", "discover", "settings"):
            assert scrolled_tables(page, key) == [], f"a table on {key} scrolls sideways at {width} px"
    tab(page, "glance")
    for title in ("Model", "Status", "Helped"):
        assert on_screen(page, header("#glance-card", title)), f"{title} is off-screen at {width} px"
    assert page.is_visible(header("#glance-card", "Last answer")) is not phone
    if not phone:
        assert on_screen(page, header("#glance-card", "Last answer"))
    tab(page, "collections")
    page.wait_for_selector("#gw-body button.chip.seat")
    chips = page.locator("#gw-body button.chip.seat")
    assert all(on_screen(page, f"#gw-body tbody tr:nth-child({n + 1}) button.chip.seat") for n in range(4))
    assert chips.first.bounding_box()["height"] >= 18  # a chip is a tap target, not clipped away
    assert on_screen(page, header("#gateway-card", "Prompt"))
    tab(page, "settings")
    assert on_screen(page, "#sch-mode") and on_screen(page, "#client")


@pytest.mark.parametrize("width,height", SIZES)
def test_issue31_the_real_work_chart_fits_and_shows_intervals(dash, open_page, width, height):
    """The Real work chart is as wide as its card allows (no sideways scroll, no clipping), one interval whisker
    per bar, the interval in its folded table too."""
    page = open_page(dash, width, height)
    tab(page, "suite")
    page.wait_for_selector("#chart-work svg")
    fit = page.evaluate("""() => { const a = document.querySelector('#chart-work'), s = a.querySelector('svg');
      return [s.getBoundingClientRect().width, a.clientWidth, a.scrollWidth, window.innerWidth,
              s.querySelectorAll('g.interval').length, s.querySelectorAll('text[data-row]').length]; }""")
    drawn, room, inner, viewport, whiskers, bars = fit
    assert drawn <= room and inner <= room + 1 and drawn <= viewport
    assert drawn >= room - 60  # it takes the card's width, not a fixed 520 px
    assert whiskers == bars >= 3  # alpha, beta, gamma (and the merger, judged as one)
    page.click("#work-table summary")
    assert "% to " in page.inner_text("#work-table tbody tr:first-child td:nth-child(5)")


def test_issue31_settings_tells_the_truth_about_the_scheduler_and_ports(dash, open_page, monkeypatch):
    """Off: the card says no job runs and no job shows a Next time; choosing Run shows them. Listening names
    gateway.py's port only when a server answers there."""
    monkeypatch.setenv("BENCH_GATEWAY_PORT", "9")  # the discard port: nothing answers
    page = open_page(dash, 1440, 900)
    tab(page, "settings")
    assert "The scheduler is off: no job runs" in page.inner_text("#sch-now")
    nexts = page.eval_on_selector_all("#scheduler-card td[data-next]", "cs => cs.map(c => c.textContent)")
    assert nexts and set(nexts) == {"— (scheduler off)"}
    page.select_option("#sch-mode", "run")
    nexts = page.eval_on_selector_all("#scheduler-card td[data-next]", "cs => cs.map(c => [c.textContent, c.dataset.next])")
    assert all(text == planned for text, planned in nexts)
    assert "(Not saved yet.)" in page.inner_text("#sch-now")
    listening = page.inner_text("#tab-settings tr:has(td:text-is('Listening on')) td:nth-child(2)")
    assert "nothing answers on 9, gateway.py's port" in listening and "(gateway.py)" not in listening
    with running_gateway() as gateway:
        monkeypatch.setenv("BENCH_GATEWAY_PORT", str(gateway.server_address[1]))
        page = open_page(dash, 1440, 900)
        tab(page, "settings")
        listening = page.inner_text("#tab-settings tr:has(td:text-is('Listening on')) td:nth-child(2)")
        assert f":{gateway.server_address[1]} (gateway.py)" in listening


def test_issue31_gateway_card_prompt_filter_and_relative_times(dash, open_page):
    """Each panel's row shows the start of its prompt, a relative time with the absolute one in its title, and
    the filter narrows by prompt text or to panels that still owe verdicts."""
    page = open_page(dash, 1440, 900)
    tab(page, "collections")
    page.wait_for_selector("#gw-body button.chip.seat")
    rows = "#gw-body > div.scroll:first-child tbody tr"
    previews = page.eval_on_selector_all(f"{rows} .preview", "ps => ps.map(p => p.textContent)")
    assert sorted(previews) == sorted(PROMPTS)
    stamp = page.locator(f"{rows} time").first
    assert stamp.inner_text() in ("just now", "1 min ago") and stamp.get_attribute("title").endswith(" UTC")
    visible = f"() => Array.from(document.querySelectorAll('{rows}')).filter(r => r.style.display !== 'none').length"
    page.fill("#gw-filter", "rebase")
    assert page.evaluate(visible) == 1
    page.fill("#gw-filter", "")
    page.check("#gw-owed")
    assert page.evaluate(visible) == 1 and PROMPTS[-1] in page.inner_text(rows + ":not([style*='none'])")
    page.wait_for_timeout(3500)  # a refresh keeps the filter
    assert page.evaluate(visible) == 1


def test_issue31_leaderboard_shares_ranks_draws_an_axis_and_lists_the_unfitted(dash, open_page):
    """Overlapping intervals share a rank (as the reply's rank says); the axis has ticks; the merger, judged only
    as a merger, is listed with why; the counts line says the route and merger verdicts are left out."""
    board = leaderboard.board("bench/core")
    page = open_page(dash, 1440, 900)
    tab(page, "glance")
    page.wait_for_selector("#leaderboard .lb-lines li")
    ranks = page.eval_on_selector_all("#leaderboard .lb-lines li", "ls => ls.map(l => [l.dataset.model, l.dataset.rank])")
    assert ranks == [[r["model"], str(r["rank"])] for r in board["models"]]
    assert [r["rank"] for r in board["models"]] == leaderboard.shared_ranks(board["models"])
    assert page.locator("#leaderboard .lb-axis .lb-tick").count() >= 3
    assert page.locator("#leaderboard .lb-lines li:first-child .lb-grid").count() >= 3
    unfitted = page.inner_text("#lb-unfitted")
    assert "merger" in unfitted and "only verdicts the leaderboard leaves out (1 as the merger)" in unfitted
    counts = page.inner_text("#lb-counts")
    assert "1 merger verdict and 1 route-conversation verdict are left out here" in counts
