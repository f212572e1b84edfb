"""The Review page in real headless Chromium (dashboard.md §8.13, REV-1..6; issue 31 items 1-3 and 6).

A real dashboard on 127.0.0.1 over the local upstream (tests/reviewbench.py), driven by Debian's chromium through
Playwright (conftest's `browser`). Judging is done with the keyboard alone and checked in the offload log on disk;
blind mode is checked by the page's text; a hostile answer must stay inert. The screenshots the README and
DASHBOARD.md shows are taken by the last test into tests/artifacts/; with UPDATE_SCREENSHOTS=1 they are written over
docs/img/review-*.png instead, to be looked at and committed when the page changes (a plain run leaves the checkout
as it was).
"""

import json
import os
from pathlib import Path

import pytest

from benchwarmers.core import paths
from benchwarmers.panel import offload
from conftest import watched_page
from reviewbench import FIVE, ask, dashboard

HERE = Path(__file__).resolve().parent
IMAGES = HERE.parent / "docs" / "img" if os.environ.get("UPDATE_SCREENSHOTS") == "1" else HERE / "artifacts"


@pytest.fixture
def dash(home, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with dashboard() as port:
        yield f"http://127.0.0.1:{port}", port


@pytest.fixture
def page(browser):
    """A page at 1440 px that fails its test on any console error or uncaught exception."""
    context, found = watched_page(browser, height=900)
    yield found
    context.close()
    assert found.problems == []


def owed_text(page):
    return page.text_content("#owed-nav")


def verdicts():
    """`{call: useful}` as the offload log on disk says now (the latest line per call wins)."""
    found = {}
    for line in paths.file("metrics", "offloads.jsonl").read_text().splitlines():
        entry = json.loads(line)
        found[entry["call"]] = entry["useful"]
    return found


def test_twenty_seats_across_four_panels_by_keyboard_alone_rev1_rev5(page, dash):
    url, port = dash
    panels = [ask(port, "core", f"Review change {i}:\n\n```python\nx = {i}\n```") for i in range(4)]
    page.goto(url + "/")
    assert page.get_attribute("#t-review", "aria-selected") == "true"  # REV-1: owed verdicts open Review
    assert owed_text(page) == "20" and page.text_content("#owed-top-count") == "20"
    assert page.evaluate("document.querySelector('#t-review').previousElementSibling.id") == "g-judge"
    page.wait_for_selector("#rv-seat-5")
    plan = []
    for n, bench in enumerate(panels):  # useful or not by a rule, so the log can be checked seat by seat
        plan += [(seat["call"], (n + i) % 3 != 0) for i, seat in enumerate(bench["seats"])]
    keys = 0
    for n, bench in enumerate(panels):
        page.wait_for_function(f"document.querySelector('#rv-panel h3') && "
                               f"document.querySelector('#rv-panel').textContent.includes('change {n}')")
        for i, _ in enumerate(bench["seats"]):
            page.keyboard.press("u" if (n + i) % 3 else "n")
            keys += 1
    page.wait_for_selector("#rv-panel >> text=No verdicts owed.")
    assert keys <= 2 * 20 + 4
    found = verdicts()
    assert [(call, found[call]) for call, _ in plan] == plan  # every seat, on disk, as pressed
    assert page.text_content("#owed-top-count") == "0" and page.is_hidden("#owed-nav")

    page.keyboard.press("k")  # a changed mind: back to the last panel, focus on its first seat, u
    page.wait_for_function("document.querySelector('#rv-panel').textContent.includes('change 3')")
    first = panels[3]["seats"][0]["call"]
    assert found[first] is False
    page.keyboard.press("u")
    page.wait_for_selector("#rv-seat-1 .chip.ok >> text=useful")
    assert verdicts()[first] is True and offload.by_call(first).useful is True  # the later verdict wins

    page.keyboard.press("2")
    page.keyboard.press("r")  # a claim it got right, saved with the seat's verdict
    page.wait_for_selector("#rv-claim-input:focus")
    page.keyboard.type("the loop skips the first item")
    page.keyboard.press("Enter")
    page.wait_for_selector("#rv-seat-2 .rv-claims >> text=the loop skips the first item")
    second = offload.by_call(panels[3]["seats"][1]["call"])
    assert second.real == ("the loop skips the first item",) and second.useful is True
    page.keyboard.press("f")
    page.wait_for_selector("#rv-claim-input:focus")
    page.keyboard.press("Escape")  # Esc leaves the input: nothing saved, keys act again
    assert page.is_hidden("#rv-claim")
    page.keyboard.press("?")
    assert page.is_visible("#rv-keys") and "blind mode on / off" in page.text_content("#rv-keys")


def test_blind_mode_hides_every_name_until_the_panel_is_judged_rev6(page, dash):
    url, port = dash
    bench = ask(port, "core", "Review the blind change")
    ask(port, "core", "Review the next change")
    page.goto(url + "/")
    page.wait_for_selector("#rv-seat-5")
    assert any(alias in page.text_content("#rv-panel") for alias in FIVE)

    def shown():
        return [page.text_content(f"#rv-seat-{i} .md").strip()[:12] for i in range(1, 6)]
    natural = shown()
    page.keyboard.press("b")
    page.wait_for_selector("#rv-panel >> text=Answer A")
    text = page.text_content("#rv-panel")
    assert not [word for word in FIVE + ["member", "explorer", "merger"] if word in text], text
    assert "names hidden until every verdict is saved" in text
    assert page.get_attribute("#rv-seat-1", "aria-current") == "true"  # focus on the first shown, not on its seat
    before = shown()
    assert sorted(before) == sorted(natural)  # every answer, shuffled
    page.reload()  # REV-6: the choice is kept per browser, and the panel's shuffle with it
    page.wait_for_selector("#rv-panel >> text=Answer E")
    assert page.is_checked("#rv-blind") and shown() == before
    for _ in range(5):
        page.keyboard.press("u")
    page.wait_for_function("document.querySelector('#rv-panel').textContent.includes('the next change')")
    said = page.text_content("#rv-said")
    assert all(alias in said for alias in FIVE)  # revealed once its verdicts are saved
    page.keyboard.press("k")
    page.wait_for_function("document.querySelector('#rv-panel').textContent.includes('revealed')")
    assert all(alias in page.text_content("#rv-panel") for alias in FIVE)
    assert all(offload.by_call(seat["call"]).useful is True for seat in bench["seats"])


def test_an_answer_holding_script_and_onerror_renders_inert(page, dash):
    url, port = dash
    ask(port, "core", "Review <b>this</b> and <script>window.pwned = 'prompt'</script>")
    page.goto(url + "/")
    page.wait_for_selector("#rv-panel >> text=Careful here.")
    page.wait_for_timeout(300)  # an onerror would have fired by now
    assert page.evaluate("window.pwned") is None
    found = page.evaluate("""() => ({
        scripts: document.querySelectorAll('#rv-panel script').length,
        handlers: Array.from(document.querySelectorAll('#rv-panel *')).filter(el =>
            Array.from(el.attributes).some(a => a.name.startsWith('on'))).length,
        js: Array.from(document.querySelectorAll('#rv-panel a')).filter(a => /^javascript:/i.test(a.getAttribute('href') || '')).length,
        bold: document.querySelectorAll('#rv-panel .md strong').length,
        code: document.querySelectorAll('#rv-panel .md pre code').length})""")
    assert found["scripts"] == found["handlers"] == found["js"] == 0
    assert found["bold"] >= 1 and found["code"] >= 1  # markdown still rendered: bold, and alpha's code block
    page.click("#rv-seat-5")
    page.click("#rv-seat-5 a")  # a link left in place goes nowhere harmful
    assert page.evaluate("window.pwned") is None


def test_with_keys_required_a_verdict_goes_through_the_dashboard_route_rev5(page, dash, monkeypatch):
    url, port = dash
    bench = ask(port, "pair", "Review with keys on")
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")  # /bench/verdict now wants a gateway key a browser lacks
    page.goto(url + "/")
    page.wait_for_selector("#rv-seat-2")
    page.keyboard.press("2")
    page.keyboard.press("r")
    page.wait_for_selector("#rv-claim-input:focus")
    page.keyboard.type("the types match")
    page.keyboard.press("Enter")  # held: the seat has no verdict yet
    page.wait_for_selector("#rv-seat-2 .rv-claims >> text=the types match (held)")
    page.keyboard.press("n")
    page.wait_for_selector("#rv-seat-2 .chip.err")
    beta = offload.by_call(bench["seats"][1]["call"])
    assert (beta.useful, beta.real, beta.note.startswith("member; ok in ")) == (False, ("the types match",), True)


def test_skip_fold_move_filter_and_order_the_queue_rev2_rev3(page, dash):
    url, port = dash
    ask(port, "pair", "Review pair one")
    ask(port, "core", "\n".join(f"line {i} of a long prompt" for i in range(1, 31)))
    ask(port, "pair", "Review pair two")
    page.goto(url + "/")
    page.wait_for_selector("#rv-panel >> text=Review pair one")
    assert page.text_content("#rv-queue") == "9 of 9 verdicts owed in 3 panels."
    page.keyboard.press("s")  # skip: the next owed panel
    page.wait_for_selector("#rv-panel >> text=line 1 of a long prompt")
    assert page.is_visible(".rv-prompt.folded") and page.text_content(".rv-prompt-card button") == "Show all 30 lines"
    folded = "(() => { const box = document.querySelector('.rv-prompt'); return box.scrollHeight - box.clientHeight; })()"
    assert page.evaluate(folded) > 100  # ten lines and more are folded away
    page.click(".rv-prompt-card button")
    assert not page.is_visible(".rv-prompt.folded") and page.evaluate(folded) == 0
    page.keyboard.press("j")
    page.wait_for_selector("#rv-panel >> text=Review pair two")
    page.keyboard.press("k")
    page.wait_for_selector("#rv-panel >> text=line 1 of a long prompt")
    page.click("#rv-bar summary")
    page.select_option("#rv-collection", "bench/pair")
    page.wait_for_selector("#rv-queue >> text=4 of 9 verdicts owed in 2 panels (filtered).")
    page.wait_for_selector("#rv-panel >> text=Review pair one")  # the filter starts afresh: skips forgotten
    page.select_option("#rv-order", "teaches")
    page.wait_for_selector("#rv-panel .rv-why >> text=not ranked on bench/pair yet")
    assert page.evaluate("localStorage.getItem('bench.review.order')") == "teaches"
    page.click("#rv-blind")  # a pointer on the controls: the keys still act afterwards
    page.keyboard.press("?")
    assert page.is_visible("#rv-keys") and page.text_content("#rv-seat-1 h3") == "1 Answer A"


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_screenshots_of_the_review_page_in_light_and_dark(browser, dash, width, height):
    url, port = dash
    ask(port, "core", "Is this loop right?\n\n```python\nfor i in range(1, n):\n    use(i)\n```\n\n[image: data URL, 34 KB]")
    context, page = watched_page(browser, width=width, height=height)
    for theme, name in (("rainforest", "light"), ("dark", "dark")):
        page.goto(f"{url}/?theme={theme}")
        page.wait_for_selector("#rv-seat-5")
        page.keyboard.press("u")
        page.wait_for_selector("#rv-seat-1 .chip.ok")
        # the header's badge and the queue line follow the verdict one after the other: wait until they agree
        page.wait_for_function("""() => { const n = document.querySelector('#owed-top-count').textContent;
            return document.querySelector('#rv-queue').textContent.startsWith(n + ' of ' + n + ' verdicts owed'); }""")
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"Review scrolls sideways at {width} px"
        if width < 1024:
            assert page.is_visible(".rv-tabs") and not page.is_visible("#rv-collection")  # filters folded
            page.evaluate("document.querySelector('#rv-seat-2').scrollIntoView()")  # the sticky strip over the answers
            assert page.evaluate("document.querySelector('.rv-tabs').getBoundingClientRect().top") == 0
            page.evaluate("document.querySelector('#rv-panel').scrollIntoView()")  # the picture: prompt, then answers
        else:
            tops = page.evaluate("[1, 2, 3, 4].map(i => document.querySelector('#rv-seat-' + i).getBoundingClientRect().top)")
            assert len(set(tops)) == 1  # side by side
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / f"review-{width}x{height}-{name}.png"))
    context.close()
    assert page.problems == []
