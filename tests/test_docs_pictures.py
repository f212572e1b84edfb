"""The dashboard's pictures in the documentation (issue 36 item 3), taken from the real product: the demo bench
(`tests/demobench.py`) in real headless Chromium, every page in the light theme (Hardwood, the default) and the
dark one, at a desktop's 1440x900 and a phone's 390x844. They are written into docs/img/, so a page that changes
changes its picture in the same commit; the README and docs/dashboard/index.md show them."""

import json
import urllib.request
from pathlib import Path

import pytest

from conftest import watched_page
from demobench import running_demo

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
PAGES = ["glance", "suite", "quotas", "logs", "endpoints", "models", "collections", "discover", "settings", "info"]
THEMES = {"light": "hardwood", "dark": "dark"}
SIZES = [(1440, 900), (390, 844)]


def ask(url, model, prompt):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}]}).encode()
    request = urllib.request.Request(url + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=60))


def judge(url, call, useful):
    body = json.dumps({"call": call, "useful": useful}).encode()
    request = urllib.request.Request(url + "/bench/verdict", data=body, headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=60).read()


def lived_in(url):
    """A few panels and verdicts, so the Gateway card, the record and the leaderboard have something to show."""
    for prompt in ("Is this loop off by one? for i in range(1, len(xs)): total += xs[i]", "Review: x = x++",
                   "Why does my test pass alone and fail in the suite?"):
        seats = ask(url, "bench/demo", prompt)["bench"]["seats"]
        judge(url, seats[0]["call"], True)
        judge(url, seats[1]["call"], False)


def test_every_dashboard_page_pictured_in_both_themes_and_sizes(browser):
    IMG.mkdir(parents=True, exist_ok=True)
    with running_demo() as demo:
        lived_in(demo.url)
        for width, height in SIZES:
            for shade, theme in THEMES.items():
                context, page = watched_page(browser, width=width, height=height)
                try:
                    page.goto(f"{demo.url}/?theme={theme}")
                    for key in PAGES:
                        page.click(f"[role=tab][data-tab={key}]")
                        page.wait_for_selector(f"#tab-{key}:not([hidden]) .card")
                        if key == "collections":
                            page.wait_for_selector("#gw-body button.chip.seat")
                        page.evaluate("window.scrollTo(0, 0)")
                        page.screenshot(path=str(IMG / f"{key}-{width}x{height}-{shade}.png"))
                    assert page.problems == []
                finally:
                    context.close()
    for key in PAGES:
        for width, height in SIZES:
            for shade in THEMES:
                assert (IMG / f"{key}-{width}x{height}-{shade}.png").stat().st_size > 10_000
