"""The Benchmarks page in real headless Chromium (dashboard.md §8.2 BM-3…BM-10; issue 19's chart rules and its
"see a probe on the Performance chart" scenario).

The bench is filled by real runs (tests/benchdata.py). Every chart is drawn in every shipped theme and
screenshotted under /tmp/benchwarmers-charts/ to be looked at; the checks here pin what a screenshot shows:
the theme's colours on the marks after a switch without reload, labels that do not overlap, a folded table
under every chart holding the numbers, and each chart's empty state on an empty bench.
"""

import subprocess
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchdata import filled, populated  # noqa: F401 (fixtures)
from benchwarmers.core import paths, themes
from benchwarmers.models import registry
from conftest import watched_page


SHOTS = Path("/tmp/benchwarmers-charts")
CHARTS = ["chart-trust", "chart-hunt", "chart-work", "chart-wrong", "chart-heat", "chart-probes", "chart-speed"]
PANELS = ["bm-trust", "bm-hunt", "bm-work", "bm-wrong", "bm-heat", "bm-perf"]
EMPTY = {"chart-trust": "No model has both suite scores and answers yet.",
         "chart-work": "No judged offloads yet.",
         "chart-heat": "No suite runs recorded yet.",
         "chart-probes": "No probes in the last 14 days.",
         "chart-speed": "No suite timings yet."}




@pytest.fixture
def board(browser):
    """`open(path)`: a dashboard on this test's data folder in a fresh page at 1440 px that fails its test on any
    console error or uncaught exception."""
    srv = serve.serve("127.0.0.1", 0)
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    context, page = watched_page(browser)
    problems = page.problems
    page.base = base
    yield page
    context.close()
    srv.shutdown()
    srv.server_close()
    assert problems == []


def benchmarks_tab(page):
    page.goto(page.base + "/")
    page.click("[role=tab][data-tab=suite]")
    page.wait_for_selector("#tab-suite:not([hidden]) #bm-external")


def token(page, name):
    return page.evaluate(f"getComputedStyle(document.documentElement).getPropertyValue('--{name}').trim()")


def fills(page, selector):
    return page.eval_on_selector_all(selector, "els => els.map(e => e.getAttribute('fill'))")


def overlapping(page, selector):
    """Pairs of SVG texts matched by `selector` whose boxes intersect."""
    return page.evaluate("""sel => {
      const boxes = Array.from(document.querySelectorAll(sel)).map(e => [e.textContent, e.getBoundingClientRect()]);
      const out = [];
      boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
        if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom) out.push([a, b]);
      }));
      return out; }""", selector)


def cells(page, table):
    """A folded table's rows as `[model, cell text…]`."""
    return page.eval_on_selector_all(
        f"{table} tbody tr",
        "rs => rs.map(r => [r.dataset.model].concat(Array.from(r.cells).slice(1).map(c => c.textContent)))")


def test_bm3_bm10_every_chart_in_every_theme_redrawn_on_switch(board, filled):
    page = board
    SHOTS.mkdir(exist_ok=True)
    benchmarks_tab(page)
    assert page.get_attribute("#t-suite", "aria-selected") == "true"
    assert page.evaluate("document.querySelector('#t-glance').nextElementSibling.id") == "t-suite"  # SHELL-10
    for chart in CHARTS:
        assert page.locator(f"#{chart} svg").count() == 1, chart
        width = page.evaluate(f"document.querySelector('#{chart} svg').getAttribute('width')")
        column = page.evaluate(f"document.querySelector('#{chart}').parentNode.clientWidth")
        assert int(width) == max(520, column - 50)  # BM-10
    names = themes.names()
    assert len(names) >= 3
    for name in names:
        page.evaluate(f"document.documentElement.setAttribute('data-theme', '{name}')")  # what Settings does
        page.wait_for_function(f"document.documentElement.dataset.theme === '{name}'")
        ok, err = token(page, "ok"), token(page, "err")
        # BM-4: found is the theme's ok, false alarm its err; BM-5: useful share >= 0.5 is ok, else err
        page.wait_for_function("([ok]) => Array.from(document.querySelectorAll('#chart-hunt rect')).some("
                               "r => r.getAttribute('fill') === ok)", arg=[ok])
        assert err in fills(page, "#chart-hunt rect") and ok in fills(page, "#chart-work rect")
        assert page.get_attribute("#chart-trust circle[data-model=sage]", "fill") == token(page, "brand")
        for panel in PANELS:
            page.locator(f"#{panel}").screenshot(path=str(SHOTS / f"{name}-{panel}.png"))
        assert overlapping(page, "#chart-trust text[data-label]") == []
        assert overlapping(page, "#chart-speed text[data-label]") == []
        assert overlapping(page, "#chart-heat text.family") == []
    page.screenshot(path=str(SHOTS / "benchmarks-page.png"), full_page=True)
    # the real Settings switch: no reload, and the charts take the new theme when the tab is shown again
    page.click("[role=tab][data-tab=settings]")
    page.wait_for_selector("#theme-rainforest")
    page.evaluate("window.__same = 1")
    page.click("label[for=theme-rainforest]")
    page.wait_for_function("document.documentElement.dataset.theme === 'rainforest'")
    page.click("[role=tab][data-tab=suite]")
    assert page.evaluate("window.__same") == 1  # the same document: no reload
    assert token(page, "ok") in fills(page, "#chart-hunt rect")


def test_bm4_bm8_every_chart_has_its_folded_table_with_the_numbers(board, filled):
    page = board
    benchmarks_tab(page)
    for chart in CHARTS:
        table = page.locator(f"#{chart} + details.chart-table")
        assert table.count() == 1, chart
        assert table.get_attribute("open") is None  # folded
    page.click("#wrong-table summary")
    rows = cells(page, "#wrong-table")
    assert [r[0] for r in rows] == ["bold", "fair", "sage"]  # worst rate first (BM-6)
    assert rows[0][1:] == ["8/8", "3/3", "3/3", "1/1", "1/1", "1 in 2"]
    assert rows[1][1:] == ["1/8", "1/3", "0/3", "0/1", "0/1", "1 in 2"]
    page.click("#hunt-table summary")
    hunt = cells(page, "#hunt-table")
    assert [r[0] for r in hunt] == ["sage", "fair", "bold"]
    assert hunt[0][1:] == ["3/3", "0/3", "0/3", "3/3", "0/3"] and hunt[1][1:] == ["2/3", "0/3", "1/3", "2/3", "1/3"]
    page.click("#heat-table summary")
    heat = page.locator("#heat-table tbody tr[data-model=mute] td.err")
    assert heat.count() == 9 and heat.first.text_content() == "refused"
    assert "hand-cache-review: the cache is thread-safe" in page.text_content("#heat-table tbody tr[data-model=bold]")
    page.click("#perf-table summary")
    down = page.locator("#perf-table tbody tr[data-model=down]").first
    assert "0a / 0r / 2e / 0t" in down.text_content() and down.locator("td.err").count() == 1
    page.fill("#perf-table input[type=search]", "sage")  # each table has its own filter (BM chart panel)
    assert page.locator("#perf-table tbody tr:visible").count() == 2
    links = page.eval_on_selector_all("#bm-external a", "as => as.map(a => [a.href, a.target, a.rel])")
    assert links == [["https://livebench.ai/", "_blank", "noopener"], ["https://models.dev/", "_blank", "noopener"],
                     ["https://petergpt.github.io/bullshit-benchmark/viewer/index.next.html", "_blank", "noopener"]]


def test_bm3_bm8_empty_bench_says_so_in_each_chart(board, bench):
    page = board
    benchmarks_tab(page)
    for chart, text in EMPTY.items():
        assert page.text_content(f"#{chart}") == text
    assert page.text_content("#chart-hunt") == "No seeded or real-bug answers yet."
    assert page.text_content("#chart-wrong") == "No answered suite tasks yet."
    page.click("#perf-table summary")
    assert page.text_content("#perf-table tbody") == "No perf runs recorded yet."
    page.screenshot(path=str(SHOTS / "benchmarks-empty.png"), full_page=True)


def test_issue19_a_probed_model_shows_on_the_performance_chart_after_reload(board, filled):
    """Onboard a model the endpoint serves (scripts/onboard.py: register, sync, the perf/run.py probe; no suite),
    then reload: its probe is a bar on "Did it answer?" and a row in the table. The same scenario from Discover's
    Add via this is the end of tests/test_discover_browser.py."""
    page = board
    filled.set_model("newbie", answer="Newbie: ready.", latency=0.01)
    benchmarks_tab(page)
    assert page.locator("#chart-probes text[data-row=newbie]").count() == 0
    done = subprocess.run([*paths.module_command("scripts.onboard"), "newbie", "--skip-suite"],
                          capture_output=True, text=True, cwd=paths.CODE, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    alias = {served: a for a, served in registry.names().items()}["newbie"]
    page.reload()
    page.wait_for_selector("#tab-suite:not([hidden]) #chart-probes svg")  # the remembered tab (UI-2)
    bar = page.locator(f"#chart-probes text[data-row={alias}]")
    assert bar.count() == 1 and bar.text_content().startswith(alias)
    assert token(page, "ok") in page.eval_on_selector_all(
        "#chart-probes rect title", f"ts => ts.filter(t => t.textContent.startsWith('{alias}: answered'))"
                                    ".map(t => t.parentNode.getAttribute('fill'))")
    page.click("#perf-table summary")
    assert page.locator(f"#perf-table tbody tr[data-model={alias}]").count() >= 1
    page.locator("#bm-perf").screenshot(path=str(SHOTS / "performance-after-probe.png"))
