"""The Quotas page (dashboard.md §8.3, QT-1..5) from real data: the built-in client's calls to the demo upstream's
rate-limited model leave quota records and ledger lines, a stated wait rests a model, limits are entered and
learned; `GET /api/quotas` through the real dashboard handler, then the page in headless Chromium."""

import datetime
import json
import urllib.request
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import fileio, paths
from benchwarmers.models import learn
from benchwarmers.calling import client
from benchwarmers.demo import demo
from conftest import watched_page

SHOTS = Path("/tmp/benchwarmers-shots")
SECRETISH = "account acct_93817 on project p-4411"


@pytest.fixture(scope="module")
def up():
    with demo.Upstream({"capped": {"answer": "fine", "ratelimit": 10, "ratelimit_reset": "50m0s"},
                        "thinker": {"answer": "considered", "reasoning": "first this, then that"}}) as server:
        yield server


@pytest.fixture
def dash(up, monkeypatch):
    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    up.clear()
    demo.register(up)
    for alias in ("capped", "capped", "thinker"):
        assert client.chat(alias, "Review x = 1", timeout=20)["error"] == ""
    fileio.write_atomic(paths.file("config", "connection-limits.json"), json.dumps({"demo": {"rpm": 30, "rpmo": 5000}}))
    learn.note_limits("thinker", {"rpd": 200}, "gateway", f"Limit 200 requests per day for {SECRETISH}")
    learn.record("thinker", "429 Too Many Requests: try again in 10 minutes", "gateway")
    srv = serve.serve("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_qt2_qt5_the_api_from_real_calls(dash):
    with urllib.request.urlopen(dash + "/api/quotas", timeout=10) as reply:
        raw = reply.read().decode()
    found = json.loads(raw)
    assert found["ok"] is True and SECRETISH not in raw  # FILE-5: never the provider's message
    (said,) = found["said"]
    assert (said["connection"], said["alias"], said["counts"], said["left"], said["of"]) == (
        "demo", "capped", "requests / unknown", 8, 10)
    assert said["source"] == "headers (generic)" and said["age_min"] == 0
    (sent,) = found["sent"]
    assert (sent["connection"], sent["requests_24h"], sent["requests_month"]) == ("demo", 3, 3)
    assert sent["tokens_24h"] == sent["tokens_month"] > 0
    (resting,) = found["resting"]
    assert (resting["alias"], resting["connection"], resting["wait"]) == ("thinker", "demo", "stated by the provider")
    assert resting["back_in_min"] == 10
    today = datetime.date.today().isoformat()
    assert found["known"] == [{"connection": "demo", "alias": "", "limits": {"rpm": 30, "rpmo": 5000}, "from": "you"},
                              {"connection": "demo", "alias": "thinker", "limits": {"rpd": 200},
                               "from": f"learned {today} (gateway)"}]
    spent = {row["model"]: row for row in found["cost"]}
    assert spent["capped"]["calls"] == 2 and spent["thinker"]["reasoning"] > 0




def test_qt1_the_quotas_page_in_chromium_shell10(browser, dash):
    context, page = watched_page(browser, timeout=10_000)
    problems = page.problems
    page.goto(dash + "/")
    order = page.eval_on_selector_all("[role=tab]", "tabs => tabs.map(t => t.dataset.tab)")
    assert order.index("glance") < order.index("quotas") < order.index("logs")  # SHELL-10
    page.click("[role=tab][data-tab=quotas]")
    page.wait_for_selector("#qt-cost")
    said = page.inner_text("#qt-said")
    assert "What providers said is left · 1" in said and "requests / unknown" in said and "headers (generic), 0 min ago" in said
    assert page.inner_text("#qt-said tbody td:nth-child(2) a.model") == "capped"
    assert "Requests this month" in page.inner_text("#qt-sent") and "10 min" in page.inner_text("#qt-resting")
    assert "learned" in page.inner_text("#qt-known") and SECRETISH not in page.content()
    assert "Spent · 2" in page.inner_text("#qt-cost") and "Cost" in page.inner_text("#qt-cost thead")
    page.fill("#qt-intro input[type=search]", "nothing matches this")
    assert page.eval_on_selector_all("#tab-quotas tbody tr", "rows => rows.filter(r => r.style.display !== 'none').length") == 0
    page.fill("#qt-intro input[type=search]", "")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "quotas-1440.png"), full_page=True)
    page.set_viewport_size({"width": 375, "height": 900})
    page.screenshot(path=str(SHOTS / "quotas-375.png"), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    context.close()
    assert problems == [] and overflow <= 1
