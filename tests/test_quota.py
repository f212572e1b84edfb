"""Quota records (models.md §11, QUO-1..10) from real upstream responses: the demo upstream's `ratelimit` and
`quota_body` models answer the built-in client, whose observer files what they said; then pacing keeps to it."""

import json
import time
import urllib.request

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import learn, quota, scoring
from benchwarmers.calling import client
from benchwarmers.demo import demo
from benchwarmers.store import store

GEMINI_BODY = {"error": {"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED",
                         "details": [
                             {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                                 {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                  "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quotaValue": "50"}]},
                             {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}]}}
OPENROUTER_BODY = {"error": {"code": 429, "message": "Rate limit exceeded: free-models-per-day",
                             "metadata": {"headers": {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0",
                                                      "X-RateLimit-Reset": "1999999999000"}}}}
MODELS = {
    "hundred": {"answer": "fine", "ratelimit": 100, "ratelimit_reset": "6m0s"},
    "three": {"answer": "fine", "ratelimit": 3, "ratelimit_reset": "2s", "retry_after": 0.1},
    "gemini": {"fail": "429", "quota_body": GEMINI_BODY, "retry_after": 0.1},
    "router": {"fail": "429", "quota_body": OPENROUTER_BODY, "retry_after": 0.1},
}


@pytest.fixture(scope="module")
def up():
    with demo.Upstream(MODELS) as server:
        yield server


@pytest.fixture
def bench(up):
    up.clear()
    demo.register(up)
    return up


def stored():
    return store.current().read_json(quota.QUOTAS, comments=False)


def test_quo9_a_success_with_headers_leaves_one_live_record(storage, bench):
    res = client.chat("hundred", "hi", timeout=20)
    assert res["error"] == "" and res["text"] == "fine"
    live = quota.live("demo", "hundred")
    assert len(live) == 1
    rec = live[0]
    assert (rec["metric"], rec["window"], rec["remaining"], rec["limit"]) == ("requests", "unknown", 99, 100)
    assert rec["source"] == "headers (generic)" and rec["connection"] == "demo" and rec["alias"] == "hundred"
    reset = quota.epoch_of(rec["reset_at"])
    assert 350 < reset - time.time() <= 360  # 6m0s from the observation
    assert stored()["_why"].startswith("What providers said")


def test_quo9_a_generic_429_leaves_the_counted_record_and_the_retry_after_one(bench):
    request = json.dumps({"model": "three", "messages": [{"role": "user", "content": "x"}]}).encode()
    for _ in range(3):  # the provider's three, spent by someone else: the bench has no record of them
        urllib.request.urlopen(urllib.request.Request(bench.base_url + "/chat/completions", request,
                                                      {"Content-Type": "application/json"}), timeout=10).read()
    res = client.chat("three", "hi", timeout=20, retries=0)
    assert res["status"] == 429 and "Error code: 429" in res["error"]
    recs = {f"{r['metric']}/{r['window']}": r for r in quota.records("demo", "three")}
    assert set(recs) == {"requests/unknown", "requests/retry-after"}
    assert (recs["requests/unknown"]["remaining"], recs["requests/unknown"]["limit"]) == (0, 3)
    assert recs["requests/retry-after"]["remaining"] == 0 and recs["requests/retry-after"]["limit"] is None
    assert recs["requests/retry-after"]["source"] == "retry-after (generic)"
    assert learn.learned("three") == {}  # no window named: nothing to learn as rpm or rpd


def test_quo9_a_gemini_quota_body_teaches_rpd_and_paces_the_next_call_pace9(storage, bench):
    res = client.chat("gemini", "hi", timeout=20, retries=0)
    assert res["status"] == 429
    limits = learn.learned("gemini")["limits"]
    assert limits["rpd"]["value"] == 50 and limits["rpd"]["where"] == "quota"
    rec = {f"{r['metric']}/{r['window']}": r for r in quota.live("demo", "gemini")}["requests/day"]
    assert rec["quota"] == "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    assert (rec["limit"], rec["remaining"], rec["source"]) == (50, 0, "429 body (generic)")
    assert 15 < quota.epoch_of(rec["reset_at"]) - time.time() <= 17  # the retryDelay, not a day
    sent = len(bench.requests)
    again = client.chat("gemini", "hi", timeout=10)  # 17 s to wait does not fit in 10 s less the 2 s margin
    assert len(bench.requests) == sent
    assert again["error"] == ("Error: client failed: rate limit (not sent; paced by the bench): demo said 0 of 50 "
                              "requests a day were left for gemini (429 body (generic), just now); try again in 17s")
    assert scoring.failure_class(client.output(again, 10)) == "capacity"


def test_quo5_openrouter_passes_its_headers_in_the_body(bench):
    client.chat("router", "hi", timeout=20, retries=0)
    recs = {f"{r['metric']}/{r['window']}": r for r in quota.records("demo", "router")}
    rec = recs["requests/day"]  # bare headers: the window from the message's hint (per-day)
    assert (rec["limit"], rec["remaining"], rec["source"]) == (50, 0, "429 body (generic)")
    assert rec["reset_at"] == quota.iso_utc(1999999999)
    assert learn.learned("router")["limits"]["rpd"]["value"] == 50


def test_quo1_quo2_profiles_and_header_shapes():
    now = 1_800_000_000.0
    assert quota.profile("https://api.groq.com/openai/v1")[0] == "groq"
    assert quota.profile("https://eu.api.openai.com/v1")[0] == "openai"  # a subdomain
    assert quota.profile("https://notapi.openai.com.evil/v1")[0] == "generic"
    name, windows = quota.profile("https://api.groq.com/openai/v1")
    headers = [("X-RateLimit-Limit-Requests", "1000"), ("x-ratelimit-remaining-requests", "998"),
               ("x-ratelimit-limit-tokens", "6000"), ("x-ratelimit-remaining-tokens", "5500"),
               ("x-ratelimit-reset-tokens", "2m59.56s"), ("x-ratelimit-reset-requests", "20ms")]
    recs = {f"{r['metric']}/{r['window']}": r for r in quota.from_headers(headers, name, windows, "", "headers (groq)", now)}
    assert set(recs) == {"requests/day", "tokens/minute"}  # groq's defaults: requests a day, tokens a minute
    assert recs["tokens/minute"]["reset_at"] == quota.iso_utc(now + 179.56)
    anthropic = [("anthropic-ratelimit-input-tokens-limit", "40000"), ("anthropic-ratelimit-input-tokens-remaining", "39000"),
                 ("anthropic-ratelimit-input-tokens-reset", "2026-10-23T19:00:30Z"), ("retry-after", "5")]
    (rec,) = quota.from_headers(anthropic, "anthropic", {}, "", "headers (anthropic)", now)
    assert (rec["metric"], rec["window"], rec["remaining"]) == ("input-tokens", "minute", 39000)
    assert rec["reset_at"] == "2026-10-23T19:00:30+00:00"
    assert quota.from_headers([("x-ratelimit-reset-requests", "1s")], "generic", {}, "", "s", now) == []


def test_quo4_reset_spellings():
    now = 1_800_000_000.0
    assert quota.reset_at("6m0s", now) == now + 360
    assert quota.reset_at("1h2m3s", now) == now + 3723
    assert quota.reset_at("17s", now) == now + 17
    assert quota.reset_at("1999999999000", now) == 1999999999
    assert quota.reset_at("1999999999", now) == 1999999999
    assert quota.reset_at("33011.38", now) == pytest.approx(now + 33011.38)
    assert quota.reset_at("Wed, 21 Oct 2026 07:28:00 GMT", now) == 1792567680
    assert quota.reset_at("soon", now) is None


def test_quo3_retry_after_counts_only_on_a_429():
    now = 1_800_000_000.0
    (rec,) = quota.retry_record([("Retry-After-Ms", "1500")], "generic", now)
    assert rec["reset_at"] == quota.iso_utc(now + 1.5) and rec["window"] == "retry-after"
    assert quota.retry_record([("Retry-After", "0")], "generic", now) == []
    assert quota.observe("m", "demo", "http://127.0.0.1:9/v1", 503, {"Retry-After": "5"}, None) == []
    assert not paths.file("runs", "quotas.json").exists()


def test_quo6_quo7_newest_replaces_stale_records_are_pruned_quo10(capsys):
    now = time.time()
    old = {"metric": "requests", "window": "day", "limit": 5, "remaining": 1, "source": "headers (generic)",
           "reset_at": quota.iso_utc(now - 2 * 86_400), "observed_at": quota.iso_utc(now - 3 * 86_400)}
    quota.store("c", "gone", [old])
    assert quota.records("c") == []  # reset more than a day past: pruned at once, the empty alias dropped
    keep = {**old, "reset_at": None, "observed_at": quota.iso_utc(now - 6 * 86_400)}
    quota.store("c", "m", [keep])
    quota.store("c", "m", [{**keep, "remaining": 0, "observed_at": quota.iso_utc(now)}])
    (rec,) = quota.records("c", "m")
    assert rec["remaining"] == 0  # the newest of one metric/window replaces the old
    assert quota.live("c") == []  # no reset: shown, never in force
    quota.main()
    assert capsys.readouterr().out.startswith("no quota record in force (")
    quota.store("c", "m", [{**keep, "window": "minute", "reset_at": quota.iso_utc(now + 30)}])
    quota.main()
    assert "c  m  requests/minute: 1 of 5 left" in capsys.readouterr().out
    fileio.write_atomic(paths.file("runs", "quotas.json"), "not json")
    assert quota.live() == []
