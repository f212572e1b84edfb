"""The dashboard end to end in real headless Chromium (dashboard.md §7-§9, §12-13; issue 15's scenarios).

Debian's `chromium` driven by Playwright's Python package (`executable_path` points at the system browser;
Playwright's own browser download is not used; the `browser` fixture is conftest's). One browser serves the
module; each test opens a fresh context on its own dashboard. Screenshots of every page land in
tests/artifacts/ (gitignored) to be looked at.
A test skips, saying why, only where no browser can be had.
"""

import datetime
import json
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import fileio, paths
from benchwarmers.demo import demo
from conftest import watched_page

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
PAGES = ["review", "glance", "suite", "quotas", "logs", "endpoints", "models", "collections", "discover", "settings", "info"]
TOKEN = "a-very-long-admin-token-0123456789"




@pytest.fixture
def dash(bench):
    demo.set_collection("core", ["alpha", "beta"], description="two reviewers", tags=["review"])
    srv = serve.serve("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def page(browser, dash):
    """A page at 1440 px that fails its test on any console error or uncaught exception."""
    context, found = watched_page(browser, timeout=10_000)
    problems = found.problems
    found.goto(dash + "/")
    found.refusals = 0  # a test that makes the server refuse a write says how many 400s Chromium will report
    yield found
    context.close()
    refused = [p for p in problems if "status of 400" in p]
    assert [p for p in problems if p not in refused] == [] and len(refused) == found.refusals


def tab(page, key):
    page.click(f"[role=tab][data-tab={key}]")
    page.wait_for_selector(f"#tab-{key}:not([hidden]) .card")


def shoot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def panel_owner(dash):
    from openai import OpenAI
    return OpenAI(base_url=dash + "/v1", api_key="unused", max_retries=0)


def test_every_page_at_two_widths_without_console_errors_shell10(page, dash):
    panel_owner(dash).chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "Review x=1"}])
    for width in (1440, 375):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(dash + "/")
        for key in PAGES:
            tab(page, key)
            assert page.get_attribute(f"#t-{key}", "aria-selected") == "true"
            if key == "collections":
                page.wait_for_selector("#gw-body button.chip.seat")
            shoot(page, f"{key}-{width}")
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 1, f"{key} scrolls sideways at {width} px"
    assert page.evaluate("localStorage.getItem('bench.tab')") == "info"
    page.goto(dash + "/")
    assert page.get_attribute("#t-info", "aria-selected") == "true"  # UI-2: the remembered tab
    page.evaluate("sessionStorage.clear()")  # a new visit: the verdicts owed open Review (REV-1)
    page.goto(dash + "/")
    assert page.get_attribute("#t-review", "aria-selected") == "true"


def test_controls_are_labelled_and_reachable_by_keyboard_ui1(page):
    for key in PAGES:
        tab(page, key)
        unnamed = page.evaluate("""() => Array.from(document.querySelectorAll(
            'section.tab:not([hidden]) button, section.tab:not([hidden]) input, section.tab:not([hidden]) select,' +
            ' section.tab:not([hidden]) textarea, section.tab:not([hidden]) a[href]'))
          .filter(el => el.offsetParent !== null && el.type !== 'hidden')
          .filter(el => !((el.labels && el.labels.length) || el.getAttribute('aria-label') || el.textContent.trim()
                          || el.getAttribute('aria-labelledby')))
          .map(el => el.outerHTML.slice(0, 80))""")
        assert unnamed == [], key
    page.reload()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.focus("#t-glance")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.id") == "t-suite"
    assert page.get_attribute("#t-suite", "aria-selected") == "true"
    assert page.evaluate("document.querySelectorAll('[role=tab]').length") == len(PAGES)
    assert page.evaluate("document.querySelectorAll('[role=tabpanel]').length") == len(PAGES)


def test_create_a_collection_ask_it_and_judge_by_keyboard_co7_gw1_gw5(page, dash):
    tab(page, "collections")
    page.click("#c-new")
    page.fill("#cd-name", "pair")
    page.fill("#cd-tags", "review")
    page.check("#collection-dialog input[value=gamma]")
    page.check("#collection-dialog input[value=beta]")
    assert "2 members" in page.text_content("#cd-count")
    shoot(page, "collection-editor")
    page.click("#cd-save")
    page.wait_for_selector("#c-list >> text=bench/pair")
    assert fileio.read_json(paths.file("config", "collections.json"))["pair"]["members"] == ["gamma", "beta"]
    reply = panel_owner(dash).chat.completions.create(model="bench/pair",
                                                      messages=[{"role": "user", "content": "Is x=x+1 right?"}])
    assert "Gamma" in reply.choices[0].message.content
    chip = page.wait_for_selector("#gw-body button.chip.seat[title*=gamma], #gw-body button.chip.seat >> text=gamma",
                                  timeout=10_000)  # the card refreshes without a reload
    assert "2 verdicts owed" in page.text_content("#gw-sub")
    chip.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#verdict-dialog[open] #vd-yes")
    shoot(page, "verdict-dialog")
    assert page.evaluate("document.activeElement.id") == "vd-yes"
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.keyboard.type("spotted the missing increment")
    for _ in range(3):
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Close"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_function("!document.querySelector('#verdict-dialog').open")
    page.wait_for_function("document.querySelector('#gw-sub').textContent.includes('1 verdict owed')")
    record = json.loads(page.evaluate("fetch('/bench/record?collection=pair').then(r => r.text())"))
    assert record["aliases"]["gamma"] == {"useful": 1, "judged": 1} or record["aliases"]["gamma"]["useful"] == 1


def test_make_use_and_revoke_a_gateway_key_st4(page, dash, monkeypatch):
    import openai
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    tab(page, "settings")
    page.fill("#k-name", "sdk")
    page.check("input[data-key-collection][value=core]")
    page.click("#k-make")
    key = page.wait_for_selector("#k-value").input_value()
    assert key.startswith("bwk_") and page.is_disabled("#k-make")
    shoot(page, "settings-key-made")
    sdk = openai.OpenAI(base_url=dash + "/v1", api_key=key, max_retries=0)
    assert sdk.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "hi"}]).choices
    page.reload()
    tab(page, "settings")
    assert "bwk_…" + key[-4:] in page.text_content("#keys-card")
    assert key not in page.content()
    page.click("button[aria-label='Revoke sdk']")
    page.click("#confirm-yes")
    page.wait_for_selector("#keys-card >> text=No keys yet.")
    with pytest.raises(openai.AuthenticationError):
        sdk.chat.completions.create(model="bench/core", messages=[{"role": "user", "content": "hi"}])


def test_retire_and_restore_from_the_popup_mp3_mp5(page, dash):
    page.click("#tab-glance a.model[data-alias=gamma]")
    page.wait_for_selector("#model-dialog[open] #md-alias")
    shoot(page, "model-popup")
    page.click("#model-dialog summary:has-text('Retire this model')")
    page.fill("#md-why", "too terse")
    page.click("#model-dialog .btn.danger")
    page.click("#confirm-yes")
    page.wait_for_load_state("load")
    page.wait_for_function("window.BENCH.retired.gamma !== undefined")
    assert fileio.read_json(paths.file("config", "retired.json"))["gamma"]["why"] == "too terse"
    page.check("#tab-glance input[data-retired]")
    page.click("#tab-glance a.model[data-alias=gamma]")
    page.click("#model-dialog button:has-text('Restore')")
    page.wait_for_selector("#model-dialog .done:has-text('Done:')")
    page.wait_for_function("window.BENCH.retired.gamma === undefined", timeout=10_000)
    assert "gamma" in fileio.read_json(paths.file("config", "extra-openai-models.yaml")) or \
        "model_id: gamma" in paths.file("config", "extra-openai-models.yaml").read_text(encoding="utf-8")


def test_the_popup_folds_an_onboarding_stop_and_its_log_mp19(page, dash):
    """MP-19: a stopped onboarding's note in the popup, with its log fetched only when unfolded."""
    log = "onboard-20261203T101500-gamma.log"
    paths.file("runs", log).write_text("onboarding gamma\n  [4/5] probing availability (4 calls)...\nSTOPPING: no answer\n",
                                       encoding="utf-8")
    fileio.write_atomic(paths.file("metrics", "onboard-issues.json"), json.dumps({"gamma": {
        "at": "2026-12-03T10:15:00+00:00", "step": "availability probe", "failure": "timeout", "detail": "no answer",
        "log": log}}))
    page.reload()
    page.click("#tab-glance a.model[data-alias=gamma]")
    page.wait_for_selector("#model-dialog[open] .onboard-log")
    assert "Onboarding stopped at the availability probe on 2026-12-03" in page.inner_text("#model-dialog")
    page.click("#model-dialog .onboard-log summary")
    page.wait_for_selector("#model-dialog .onboard-log pre:has-text('STOPPING: no answer')")
    shoot(page, "model-popup-onboard-stop")


def test_decision_rows_glance_cells_and_the_profile_gl1_gl4_md1_mp3(page, dash, bench):
    today = datetime.date.today().isoformat()
    fileio.write_atomic(paths.file("config", "decision-models.json"), json.dumps({"judge": {
        "served": "judge-1", "endpoint": "demo", "via": "demo", "path": "decisions", "question_types": ["noul"],
        "onboarded": today}}))
    fileio.write_atomic(paths.file("config", "model-overrides.json"), json.dumps({"alpha": {
        "context_window": 64000, "input_modalities": ["text", "image"], "output_modalities": ["text"],
        "release_date": "2025-06-01", "open_weights": True, "cost": {"input": 0.15, "output": 0.6}}}))
    page.reload()
    alpha = "#tab-glance tr:has(a[data-alias=alpha])"
    assert page.text_content(f"{alpha} td:nth-child(4)") == "64k*"
    assert page.get_attribute(f"{alpha} td:nth-child(4) span", "title") == "you"
    judge = "#tab-glance tr:has(a[data-alias=judge])"
    assert page.text_content(f"{judge} td:nth-child(3)") == "decision · noul"
    assert page.get_attribute(judge, "data-connection") == "demo"
    assert page.is_visible(f"{judge} .chip:has-text('new')")
    shoot(page, "glance-decision-row")
    tab(page, "models")
    headings = page.eval_on_selector_all("#tab-models h2", "hs => hs.map(h => h.textContent)")
    assert not [t for t in headings if t.startswith("decision")]  # MD-1: grouped under its connection
    assert page.is_visible("#tab-models .card:has(h2:has-text('demo ·')) a[data-alias=judge]")
    shoot(page, "models-grouped")
    page.click("#tab-models a.model[data-alias=alpha]")
    page.wait_for_selector("#model-dialog[open] #md-profile")
    assert page.eval_on_selector_all("#md-modalities .chip", "cs => cs.map(c => c.textContent)") == ["text", "image", "text"]
    assert "you" in page.text_content("#md-modalities")
    profile = page.text_content("#md-profile")
    assert "released 2025-06-01" in profile and "open weights" in profile
    assert "$0.15 in / $0.60 out per 1M tokens" in profile
    assert page.query_selector("#model-dialog input[data-question-type]") is None  # chat models have none
    shoot(page, "model-popup-profile")
    page.keyboard.press("Escape")
    page.click("#tab-models a.model[data-alias=judge]")
    page.wait_for_selector("#model-dialog[open] #md-types")
    assert page.is_checked("#md-qt-noul") and not page.is_checked("#md-qt-score")
    assert page.evaluate(UNNAMED, "#model-dialog") == []
    shoot(page, "model-popup-decision")
    bench.set_model("judge-1", decisions={"probe_score": {"score": 0.2}})
    page.focus("#md-qt-choice")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "md-qt-score"  # reachable by keyboard
    page.keyboard.press("Space")
    page.click("#model-dialog button:has-text('Save')")
    page.wait_for_selector("#model-dialog .done:has-text('Done:')")
    assert fileio.read_json(paths.file("config", "decision-models.json"))["judge"]["question_types"] == ["noul", "score"]


def test_switch_theme_without_reload_st1(page, dash):
    page.goto(dash + "/?theme=rainforest")  # a preview: the radio still marks the saved theme
    assert page.get_attribute("html", "data-theme") == "rainforest"
    tab(page, "settings")
    assert page.is_checked("#theme-hardwood") and not page.is_checked("#theme-rainforest")
    page.check("#theme-dark")
    page.wait_for_selector("text=Saved: Rainforest Dark is the theme from now on.")
    assert page.get_attribute("html", "data-theme") == "dark"
    assert fileio.read_json(paths.file("config", "ui.json")) == {"theme": "dark"}
    assert page.url == dash + "/"  # the ?theme preview left the address once a theme was saved
    shoot(page, "settings-dark")
    page.select_option("#sch-mode", "run")
    page.uncheck("#scheduler-card input[aria-label='Run perf']")
    page.click("#sch-save")
    page.click("#confirm-yes")  # switching to Run asks first (ST-8)
    page.wait_for_selector("#scheduler-card .done")
    assert fileio.read_json(paths.file("config", "scheduler.json")) == {"mode": "run", "jobs": {"perf": False}}
    for theme in ("rainforest", "hardwood"):
        page.check(f"#theme-{theme}")
        page.wait_for_function(f"document.documentElement.dataset.theme === '{theme}'")
        tab(page, "glance")
        shoot(page, f"glance-{theme}")
        tab(page, "settings")


def test_log_in_and_out_with_the_admin_token_auth6(browser, dash, monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    context = browser.new_context()
    page = context.new_page()
    page.goto(dash + "/")
    assert page.url.endswith("/login")
    shoot(page, "login")
    page.fill("#token", "wrong-token-wrong-token")
    page.click("button[type=submit]")
    page.wait_for_selector("text=That is not the admin token.")
    page.fill("#token", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_selector("#tab-glance .card")
    assert page.url == dash + "/" and page.is_visible("#logout")
    page.click("#logout")
    page.wait_for_url("**/login")
    page.goto(dash + "/")
    assert page.url.endswith("/login")
    context.close()


def test_a_login_on_one_port_opens_no_other_port_and_logout_ends_it_issue29(browser, dash, monkeypatch):
    """Issue 29 items 5, 6: Chromium signs in on one dashboard and carries its cookie to another port of the same
    host, which still asks for the login; the cookie copied out of the browser and replayed after Sign out is
    refused."""
    import http.client

    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    other = serve.serve("127.0.0.1", 0)
    elsewhere = f"http://127.0.0.1:{other.server_address[1]}"
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(dash + "/")
        page.fill("#token", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_selector("#tab-glance .card")
        [cookie] = context.cookies(elsewhere + "/")  # Chromium sends it to the other port too
        assert cookie["name"] == "bw_session_" + dash.rsplit(":", 1)[1]
        page.goto(elsewhere + "/")
        assert page.url == elsewhere + "/login"
        page.goto(dash + "/")
        page.wait_for_selector("#tab-glance .card")
        page.click("#logout")
        page.wait_for_url("**/login")
        conn = http.client.HTTPConnection("127.0.0.1", int(dash.rsplit(":", 1)[1]), timeout=15)
        conn.request("GET", "/api/stamp", headers={"Cookie": f"{cookie['name']}={cookie['value']}"})
        assert conn.getresponse().status == 401
        conn.close()
    finally:
        context.close()
        other.shutdown()
        other.server_close()


UNNAMED = """(scope) => Array.from(document.querySelectorAll(scope + ' :is(button, input, select, textarea, a[href])'))
  .filter(el => el.offsetParent !== null && el.type !== 'hidden')
  .filter(el => !((el.labels && el.labels.length) || el.getAttribute('aria-label') || el.textContent.trim()
                  || el.getAttribute('aria-labelledby')))
  .map(el => el.outerHTML.slice(0, 80))"""


def test_dialogs_label_every_control_and_sort_and_filter_ui4_ui5(page, dash):
    page.click("#tab-glance th:has-text('Context')")
    assert page.get_attribute("#tab-glance th:has-text('Context')", "aria-sort") == "descending"
    first = page.text_content("#tab-glance tbody tr:first-child a.model")
    assert first in ("seer", "merger")  # 128k, the largest
    page.focus("#tab-glance th:has-text('Context')")
    page.keyboard.press("Enter")
    assert page.get_attribute("#tab-glance th:has-text('Context')", "aria-sort") == "ascending"
    assert page.text_content("#tab-glance tbody tr:first-child a.model") == "gone"  # unknown sorts first (-1)
    page.fill("#tab-glance input[type=search]", "see")
    assert page.eval_on_selector_all("#tab-glance tbody tr", "rows => rows.filter(r => r.style.display !== 'none')"
                                     ".map(r => r.querySelector('a.model').textContent)") == ["seer"]
    page.fill("#tab-glance input[type=search]", "")
    page.click("#tab-glance a.model[data-alias=alpha]")
    page.click("#model-dialog summary:has-text('Model facts')")
    page.click("#model-dialog summary:has-text('Call options')")
    shoot(page, "model-popup-facts")
    assert page.evaluate(UNNAMED, "#model-dialog") == []
    page.fill("#mo-max", "4000")
    page.click("#model-dialog button:has-text('Save options')")
    page.wait_for_selector("#model-dialog .done:has-text('Saved')")
    assert fileio.read_json(paths.file("config", "model-options.json"))["alpha"] == {"max_tokens": 4000}
    page.wait_for_load_state("load")
    tab(page, "collections")
    page.click("#c-list button.list-row")
    page.wait_for_selector("#collection-dialog[open]")
    assert page.evaluate(UNNAMED, "#collection-dialog") == []
    assert page.is_hidden("#cd-merger")
    page.select_option("#cd-reply", "merged")
    assert page.is_visible("#cd-merger")


def test_action_needed_rows_and_hide_shell4_shell8(page, dash):
    fileio.write_atomic(paths.file("metrics", "alerts.json"), json.dumps(
        {"model:pending:gone": {"kind": "retiring", "message": "gone retires in 2 days without an answer",
                                "action": "retry it or retire it", "first_seen": "2026-11-30", "alias": "gone"}}))
    fileio.write_atomic(paths.file("metrics", "onboard-issues.json"), json.dumps(
        {"gone": {"at": "2026-12-01T05:00:00", "step": "probe", "failure": "structural", "detail": "404 model gone",
                  "log": "onboard-20261201T050000-gone.log"}}))
    page.reload()
    row = page.wait_for_selector("#actions .alert-row[data-key='model:pending:gone']")
    assert page.is_visible("#tab-glance tr:has(a[data-alias=gone]) .chip:has-text('onboard stopped')")
    assert "Action needed · 1" in page.text_content("#actions h2")
    assert [b.text_content() for b in row.query_selector_all("button")] == ["Retry", "Open", "Retire now"]
    shoot(page, "action-needed")
    page.click("#actions .alert-row button:has-text('Open')")
    page.wait_for_selector("#model-dialog[open] pre:has-text('404 model gone')")
    page.keyboard.press("Escape")
    page.refusals = 1
    page.click("#actions .alert-row button:has-text('Retry')")
    page.wait_for_selector("#actions .errors:has-text('gone still fails')")
    page.click("#actions button[aria-controls=actions-body]")
    assert page.is_hidden("#actions-body")
    page.reload()
    assert page.is_hidden("#actions-body") and page.text_content("#actions button[aria-controls=actions-body]") == "show"
    assert page.get_attribute("#actions button[aria-controls=actions-body]", "aria-expanded") == "false"


def test_first_run_banner_shell3(browser, bench):
    srv = serve.serve("127.0.0.1", 0)
    context = browser.new_context()
    try:
        tab_page = context.new_page()
        tab_page.goto(f"http://127.0.0.1:{srv.server_address[1]}/")
        assert tab_page.get_attribute("#first-run", "data-step") == "collection"
        tab_page.click("#first-go")
        tab_page.wait_for_selector("#collection-dialog[open] #cd-name")
        assert tab_page.get_attribute("#t-collections", "aria-selected") == "true"
        paths.file("config", "extra-openai-models.yaml").write_text("", encoding="utf-8")  # endpoints, no models
        tab_page.goto(f"http://127.0.0.1:{srv.server_address[1]}/")
        assert tab_page.get_attribute("#first-run", "data-step") == "onboard"
        assert tab_page.text_content("#first-title") == "Onboard your first model"
        paths.file("config", "endpoints.json").unlink()
        tab_page.goto(f"http://127.0.0.1:{srv.server_address[1]}/")
        assert tab_page.get_attribute("#first-run", "data-step") == "endpoint"
        tab_page.wait_for_selector("#endpoint-dialog[open] #ep-name")  # opened by itself: nothing else to do yet
        assert tab_page.get_attribute("#t-endpoints", "aria-selected") == "true"
    finally:
        context.close()
        srv.shutdown()
        srv.server_close()


def test_from_a_key_to_a_panel_in_the_browser_ep10_ob1_ob21_ob22(browser, home, monkeypatch):
    """Issue 16 item 2: a person with only a key adds an endpoint (Test, then Save), onboards two served models with
    the queue's live progress, makes a collection and asks it, never touching a file. The local upstream needs the
    key, as a provider does."""
    from benchwarmers.demo.demo import Upstream
    from conftest import TEST_MODELS

    secret = "sk-browser-first-hour-0123456789"
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    with Upstream(models={n: dict(s) for n, s in TEST_MODELS.items()}, key=secret) as up:
        srv = serve.serve("127.0.0.1", 0)
        dash = f"http://127.0.0.1:{srv.server_address[1]}"
        context, page = watched_page(browser, 1280, 900)
        problems = page.problems
        try:
            page.goto(dash + "/")
            page.wait_for_selector("#endpoint-dialog[open] #ep-name")
            page.fill("#ep-name", "myprov")
            page.fill("#ep-base", up.base_url)
            page.fill("#ep-key", "sk-wrong-0000000000")
            assert page.is_disabled("#ep-save")
            page.click("#ep-test")
            page.wait_for_selector("#endpoint-dialog .errors:has-text('check the key')")
            assert page.is_disabled("#ep-save")
            page.fill("#ep-key", secret)
            page.click("#ep-test")
            page.wait_for_selector("#ep-done:has-text('It answers')")
            assert f"{len(up.listing())} models listed. The key was checked: the list needs it." in page.text_content(
                "#ep-done")
            page.fill("#ep-base", up.base_url + "/")  # any edit takes Save away until the next Test
            assert page.is_disabled("#ep-save")
            page.click("#ep-test")
            page.wait_for_selector("#ep-save:not([disabled])")
            shoot(page, "endpoint-dialog-tested")
            page.click("#ep-save")
            page.wait_for_selector("#ep-done:has-text('Saved. myprov lists')")
            assert secret not in page.content()
            page.click("#ep-onboard")
            page.wait_for_selector("#onboard-dialog[open] label.pick")
            assert page.input_value("#ob-find") == "myprov"
            assert page.text_content("#ob-list summary").startswith("myprov (direct) · ")
            for served in ("alpha", "beta"):
                page.check(f"label.pick[data-key={served}] input")
            assert page.text_content("#ob-go") == "Onboard 2 models"
            page.select_option("#ob-mode", "quick")
            shoot(page, "onboard-picker")
            page.click("#ob-go")
            page.wait_for_selector("#oq:not([hidden]) #oq-text")
            assert page.text_content("#oq-text").startswith(("Onboarding 1 of 2", "Onboarding 2 of 2", "Onboarded"))
            page.click("#oq-details")
            page.wait_for_selector("#onboard-dialog[open][data-view=queue] .oq-item")
            page.wait_for_selector("#oq.done", timeout=60_000)
            assert page.text_content("#oq-text") == "Onboarded 2 of 2"
            page.wait_for_selector("#oq-items .oq-item:nth-child(2) .oq-as:has-text('as beta')")
            page.click("#oq-items .oq-item:first-child summary")
            page.wait_for_selector("#oq-items .oq-item:first-child pre:has-text('[4/5]')")
            shoot(page, "onboard-queue-done")
            page.keyboard.press("Escape")
            page.goto(dash + "/")
            assert page.get_attribute("#first-run", "data-step") == "collection"
            tab(page, "endpoints")
            assert "2 on the bench" in page.text_content(".ep-block summary")
            page.fill("#limits-card input[aria-label='myprov: requests per minute']", "30")
            page.click("#limits-card button[aria-label='Save limits for myprov']")
            page.wait_for_selector("#limits-said:has-text('Saved limits for myprov.')")
            shoot(page, "endpoints-page")
            page.click("#first-go")
            page.wait_for_selector("#collection-dialog[open] #cd-name")
            page.fill("#cd-name", "first")
            page.check("#collection-dialog input[value=alpha]")
            page.check("#collection-dialog input[value=beta]")
            page.click("#cd-save")
            page.wait_for_selector("#c-status:has-text('Saved bench/first.')")
            reply = panel_owner(dash).chat.completions.create(
                model="bench/first", messages=[{"role": "user", "content": "Is x = x + 1 right?"}])
            assert up.answer_for("alpha", "Is x = x + 1 right?") in reply.choices[0].message.content
            assert up.answer_for("beta", "Is x = x + 1 right?") in reply.choices[0].message.content
        finally:
            context.close()
            srv.shutdown()
            srv.server_close()
    refused = [p for p in problems if "status of 400" in p]
    assert [p for p in problems if p not in refused] == [] and len(refused) == 1


def test_issue20_leaderboard_on_at_a_glance(page, dash):
    """Issue 20: At a glance ranks bench/core's models by their verdicts inside judged panels, score and
    interval on one scale, the figures folded, a CSV download; another collection with none says so."""
    from benchwarmers.panel import leaderboard, offload

    demo.set_collection("vision", ["seer"])
    for panel, good, bad in (("p1", "alpha", "beta"), ("p2", "alpha", "beta"), ("p3", "beta", "alpha")):
        for key, model, useful in (("member1", good, True), ("member2", bad, False)):
            offload.add(model, "Review x (bench/core, review)", useful, "checked", call=f"{panel}.{key}",
                        collection="bench/core", shape="review")
    board = leaderboard.board("bench/core")
    page.goto(dash + "/")
    tab(page, "glance")
    page.wait_for_selector("#leaderboard .lb-lines li")
    assert page.eval_on_selector_all("#leaderboard .lb-lines li", "els => els.map(e => e.dataset.model)") == [
        "alpha", "beta"]
    top = board["models"][0]
    assert f"alpha +{top['score']:.2f} (" in page.text_content("#leaderboard .lb-lines li:first-child")
    assert not page.is_visible("#lb-figures table")
    page.click("#lb-figures summary")
    cells = page.eval_on_selector_all("#lb-figures tbody tr", "rs => rs.map(r => Array.from(r.cells, c => c.textContent))")
    assert cells[0] == ["1", "alpha", f"{top['score']:.2f}", f"{top['low']:.2f} to {top['high']:.2f}", "3", "2", "2/3"]
    shoot(page, "glance-leaderboard")
    download = page.request.get(dash + page.get_attribute("#lb-csv", "href"))
    assert download.ok and download.text().splitlines()[1].startswith("1,alpha,")
    page.select_option("#lb-collection", "vision")
    page.wait_for_selector("#lb-body:has-text('No ranking yet')")
    assert page.evaluate("localStorage.getItem('bench.leaderboard')") == "vision"
    # issue 32: a council's peer ranking, fitted alone, puts beta first; gamma's disagreement with the people shows
    offload.add("gamma", "Review x (bench/core, review)", None, "ranking", call="p1.rank-member3",
                collection="bench/core", shape="review", ranked=["p1.member2", "p1.member1"])
    page.select_option("#lb-collection", "core")
    page.select_option("#lb-source", "peers")
    page.wait_for_selector("#lb-counts:has-text('the peer rankings of')")  # the collection's reload came first
    page.wait_for_selector("#lb-rankers")
    assert page.eval_on_selector_all("#leaderboard .lb-lines li", "els => els.map(e => e.dataset.model)") == [
        "beta", "alpha"]
    assert page.text_content("#lb-rankers") == "Rankers' agreement with the people: gamma 0% of 1 pairs"
    assert page.evaluate("localStorage.getItem('bench.leaderboard.source')") == "peers"
