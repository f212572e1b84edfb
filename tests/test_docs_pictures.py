"""The dashboard's pictures in the documentation (issue 36 item 3), taken from the real product: the demo bench
(`tests/demobench.py`) in real headless Chromium, every page in the light theme (Hardwood, the default) and the
dark one, at a desktop's 1440x900 and a phone's 390x844. A picture is written into docs/img/ only when it differs
from the one there, so a page that changes changes its picture in the same commit and a run that changed no page
leaves the tree clean. What differs from run to run and not from page to page (today's date and time, the demo's
port, its data folder, the checkout's path, version and commit) is shown as fixed stand-ins, rewritten in the
page itself as it draws. The README and docs/dashboard/index.md show the pictures."""

import datetime
import json
import struct
import sys
import urllib.parse
import urllib.request
from pathlib import Path


from benchwarmers import __version__
from conftest import watched_page
from demobench import running_demo

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
PAGES = ["glance", "suite", "quotas", "logs", "endpoints", "models", "collections", "discover", "settings", "info"]
THEMES = {"light": "hardwood", "dark": "dark"}
SIZES = [(1440, 900), (390, 844)]
READY = {"collections": "#gw-body button.chip.seat", "discover": "#ds-sub"}  # what each page draws last
DAY, TIME = "2026-01-15", "09:41"
# Rewrites each text node as it is drawn or redrawn (the Gateway card redraws every few seconds), before it is
# painted: the volatile strings become their stand-ins, a date this run can fall on DAY, and its time TIME.
STEADY = """(() => {
  const pairs = %s, stamp = new RegExp(%s, "g");
  const steady = (text) => pairs.reduce((t, [was, is]) => t.split(was).join(is),
    text.replace(stamp, (_, day, time, seconds) => %s + (time ? " " + %s + (seconds ? ":00" : "") : "")));
  const fix = (root) => {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.currentNode; node; node = walk.nextNode()) {
      const text = node.nodeType === Node.TEXT_NODE && steady(node.nodeValue);
      if (text !== false && text !== node.nodeValue) node.nodeValue = text;
    }
  };
  new MutationObserver((changes) => changes.forEach((c) => fix(c.target)))
    .observe(document, {childList: true, subtree: true, characterData: true});
})();"""


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


def read(url):
    return json.load(urllib.request.urlopen(url, timeout=60))


def steadying_script(demo):
    """STEADY for this demo: the Info page's run-bound values, the demo's folder and ports (its own and its
    upstream's, both taken when it starts), longest first (the Python line holds the checkout's path), and the
    days this run can fall on in any time zone."""
    info = read(demo.url + "/api/settings")["info"]
    upstreams = [urllib.parse.urlsplit(e["base"]).port for e in read(demo.url + "/api/endpoints")["endpoints"]]
    folder = "/home/you/benchwarmers"
    pairs = [(info["python"], f"3.12 · {folder}/.venv/bin/python"), (info["folder"], folder),
             (demo.home, "/tmp/benchwarmers-demo"), (f":{demo.port}", ":8122"),
             *[(f":{port}", f":{40123 + n}") for n, port in enumerate(p for p in upstreams if p)],
             (info["version"], __version__), (info["commit"], "1a2b3c4")]
    now = datetime.datetime.now(datetime.timezone.utc)
    days = {(now + datetime.timedelta(days=d)).date().isoformat() for d in (-1, 0, 1)} | {info["date"]}
    pairs = [(was, steady) for was, steady in pairs if was != "unknown"]  # SRV-4's date and commit without git
    days.discard("unknown")
    stamp = "(" + "|".join(sorted(days)) + r")( \d\d:\d\d(:\d\d)?)?"
    return STEADY % (json.dumps(pairs), json.dumps(stamp), json.dumps(DAY), json.dumps(TIME))


def settled(page, tries=6):
    """The page's picture once two shots in a row are the same, so a section still drawing is never caught."""
    shots = [page.screenshot()]
    while len(shots) < tries and (len(shots) == 1 or shots[-1] != shots[-2]):
        page.wait_for_timeout(100)
        shots.append(page.screenshot())
    assert shots[-1] == shots[-2], f"the page kept changing over {tries} shots"
    return shots[-1]


def size(png):
    """A PNG's (width, height), from its header."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def keep(name, png):
    """Writes the picture only when it is not the one already there; says whether it wrote."""
    path = IMG / name
    if path.is_file() and path.read_bytes() == png:
        return False
    path.write_bytes(png)
    return True


def test_every_dashboard_page_pictured_in_both_themes_and_sizes(browser):
    IMG.mkdir(parents=True, exist_ok=True)
    written = []
    with running_demo() as demo:
        lived_in(demo.url)
        script = steadying_script(demo)
        for width, height in SIZES:
            for shade, theme in THEMES.items():
                context, page = watched_page(browser, width=width, height=height)
                try:
                    page.add_init_script(script)
                    page.goto(f"{demo.url}/?theme={theme}")
                    for key in PAGES:
                        page.click(f"[role=tab][data-tab={key}]")
                        page.wait_for_selector(f"#tab-{key}:not([hidden]) {READY.get(key, '.card')}")
                        page.evaluate("window.scrollTo(0, 0)")
                        png = settled(page)
                        assert size(png) == (width, height), key
                        name = f"{key}-{width}x{height}-{shade}.png"
                        written += [name] if keep(name, png) else []
                    assert page.problems == []
                finally:
                    context.close()
    print("pictures written:", ", ".join(written) or "none", file=sys.stderr)
