"""Learning from errors and cooldowns (LRN-1..11, models.md improvements 2 and 9, KEY-7)."""

import datetime
import json
import re
import subprocess
import sys
import threading
import time

import pytest

from benchwarmers.core import fileio, paths
from benchwarmers.models import learn

ISO_LOCAL = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")

# LRN-10's anchors, with improvement 2's single quotes and improvement 9's stated 0
ANCHORS = [
    ("maximum context length is 131,072 tokens", {"context_window": 131072, "rate_limited": False}),
    (
        "Limit 30, Used 30, Requested 1. Please try again in 2.5s (requests per minute)",
        {"limits": {"rpm": 30}, "retry_after_s": 2.5, "rate_limited": True},
    ),
    ('{"retryDelay":"17s"}', {"retry_after_s": 17, "rate_limited": True}),
    ("{'retryDelay': '17s'}", {"retry_after_s": 17, "rate_limited": True}),
    ("Try again in 3 minutes", {"retry_after_s": 180, "rate_limited": True}),
    ("model not found", {"rate_limited": False}),
    ("context length of 8k", {"rate_limited": False}),
    ("Retry-After: 0", {"retry_after_s": 0, "rate_limited": True}),
]


def learned_file():
    return fileio.read_json(paths.file("config", "model-learned.json"), comments=False)


def cooldown_file():
    return fileio.read_json(paths.file("runs", "cooldowns.json"))


def until_in(entry):
    return datetime.datetime.fromisoformat(entry["until"]).timestamp() - time.time()


@pytest.mark.parametrize("text, expected", ANCHORS)
def test_lrn10_anchors(text, expected):
    assert learn.parse(text) == expected


@pytest.mark.parametrize(
    "text, window",
    [
        ("This model's maximum context length is 32768 tokens", 32768),
        ("prompt exceeds the context length of 65,536 tokens", 65536),
        ("the context window is 200000", 200000),
        ("max_model_len (16384) exceeded", 16384),
        ("max_model_len=4096", 4096),
        ("Maximum input length is 1,000,000", 1000000),
        ("maximum prompt tokens 8192", 8192),
        ("maximum context length is 256 tokens", None),
    ],
)
def test_lrn1_context_windows(text, window):
    assert learn.parse(text).get("context_window") == window


@pytest.mark.parametrize(
    "text, limits",
    [
        ("Rate limit reached: Limit 30, Used 30 (requests per minute)", {"rpm": 30}),
        ("limit: 14,400 requests per day", {"rpd": 14400}),
        ("TPM limit=6000", {"tpm": 6000}),
        ("limit 500000 tokens per day", {"tpd": 500000}),
        ("limit 30 requests per minute and 1000 requests per day", None),
        ("requests per minute exceeded", None),
    ],
)
def test_lrn2_limits_need_exactly_one_axis(text, limits):
    assert learn.parse(text).get("limits") == limits


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("Error code: 429 Retry-After: 7", 7),
        ("{'error': {'details': [{'retryDelay': '41s'}]}}", 41),  # improvement 2: a Python repr body
        ('{"retry_delay": "5s"}', 5),
        ('{"retry_after": 12}', 12),
        ("{'retry_after': 12}", 12),
        ("Please try again in 1 hour", 3600),
        ("retry again in 90 sec", 90),
        ("please retry in 2m", 120),
        ("try again in 40 hours", learn.MAX_WAIT),
        ("try again in 20ms", None),
    ],
)
def test_lrn3_stated_waits(text, seconds):
    assert learn.parse(text).get("retry_after_s") == seconds


@pytest.mark.parametrize(
    "text, limited",
    [("Rate-limit hit", True), ("429 Too Many Requests", True), ("Quota exceeded for metric", True),
     ("RESOURCE_EXHAUSTED", True), ("error 4290", False), ("internal server error", False)],
)
def test_lrn4_rate_limited(text, limited):
    assert learn.parse(text)["rate_limited"] is limited


def test_lrn6_record_keeps_figures_with_evidence_and_a_default_cooldown():
    text = "Error: Error code: 400 -   {'error': {'message': \"maximum context length is 131,072 tokens\"}}"
    assert learn.record("m", text, "gateway") == {"context_window": 131072, "cooldown_s": 0}
    ev = learn.learned("m")["context_window"]
    assert ev["value"] == 131072 and ev["where"] == "gateway" and ISO_LOCAL.match(ev["at"])
    assert ev["evidence"] == " ".join(text.split())[:200]
    assert learned_file()["_why"]

    result = learn.record("m", "Error: Error code: 429 - rate limit exceeded", "suite")
    assert result == {"cooldown_s": learn.DEFAULT_COOLDOWN}
    entry = cooldown_file()["m"]
    assert entry["stated"] is False and entry["where"] == "suite" and ISO_LOCAL.match(entry["until"])
    assert learn.DEFAULT_COOLDOWN - 5 < until_in(entry) <= learn.DEFAULT_COOLDOWN + 1


def test_lrn6_a_stated_wait_wins_up_to_a_day():
    assert learn.record("m", "Limit 30, Used 30. Try again in 3 minutes (rpm)", "gateway") == {
        "limits": {"rpm": 30}, "cooldown_s": 180}
    entry = cooldown_file()["m"]
    assert entry["stated"] is True and 175 < until_in(entry) <= 181
    assert learn.learned("m")["limits"]["rpm"]["value"] == 30
    assert learn.record("m", "quota exceeded, retry-after: 999999", "gateway")["cooldown_s"] == learn.MAX_WAIT


def test_improvement9_a_stated_zero_means_no_cooldown():
    learn.record("m", "429 Too Many Requests", "gateway")
    assert "m" in learn.cooling()
    assert learn.record("m", "429 Too Many Requests Retry-After: 0", "gateway")["cooldown_s"] == 0
    assert "m" not in learn.cooling() and "m" not in cooldown_file()


def test_lrn5_only_ever_tighter():
    learn.record("m", "maximum context length is 32768", "gateway")
    learn.record("m", "maximum context length is 65536", "gateway")
    assert learn.learned("m")["context_window"]["value"] == 32768
    learn.record("m", "maximum context length is 16384", "suite")
    ev = learn.learned("m")["context_window"]
    assert (ev["value"], ev["where"]) == (16384, "suite")
    learn.record("m", "limit 30 requests per minute", "gateway")
    assert learn.record("m", "limit 60 requests per minute", "gateway") == {"cooldown_s": 0}
    assert learn.learned("m")["limits"]["rpm"]["value"] == 30


def test_lrn5_catalog_window_and_connection_limits_bound_what_is_learned():
    catalog = {"models": {"m": {"context_window": 8192}}}
    fileio.update(paths.file("config", "model-catalog.json"), lambda d: d.update(catalog))
    fileio.update(paths.file("config", "provider-tags.json"), lambda d: d.update(m="groq/llama"))
    fileio.update(paths.file("config", "connection-limits.json"), lambda d: d.update(groq={"rpm": 20}))
    assert learn.record("m", "maximum context length is 32768", "gateway") == {"cooldown_s": 0}
    assert learn.record("m", "limit 30 requests per minute", "gateway") == {"cooldown_s": 0}
    assert "m" not in learned_file()  # nothing tighter: no empty entry either
    assert learn.record("m", "limit 10 requests per minute", "gateway") == {"limits": {"rpm": 10}, "cooldown_s": 0}


def test_lrn5_concurrent_seats_both_count():
    """Eight seats learning at once: every alias keeps its figure and the shared one ends at the minimum."""
    start = threading.Barrier(8)

    def seat(i):
        start.wait()
        learn.record(f"m{i}", f"limit {10 + i} requests per minute", "gateway")
        learn.record("shared", f"maximum context length is {4096 * (i + 1)}", "gateway")

    threads = [threading.Thread(target=seat, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {f"m{i}": learn.learned(f"m{i}")["limits"]["rpm"]["value"] for i in range(8)} == {
        f"m{i}": 10 + i for i in range(8)}
    assert learn.learned("shared")["context_window"]["value"] == 4096


def test_lrn7_cooldowns_only_future_and_well_formed():
    now = datetime.datetime.now().astimezone()
    fileio.write_atomic(paths.file("runs", "cooldowns.json"), json.dumps({
        "_why": "comment",
        "soon": {"until": (now + datetime.timedelta(minutes=5)).isoformat(timespec="seconds"), "stated": True},
        "past": {"until": (now - datetime.timedelta(minutes=5)).isoformat(timespec="seconds")},
        "bad": {"until": "tomorrow"},
        "worse": "x",
    }))
    assert learn.cooling() == {"soon"}
    assert set(learn.cooldowns()) == {"soon"}


def test_cooling_follows_the_file(storage):
    """The parse is cached by stat (on Postgres, until the store says it changed), so a new cooldown (another
    process's) shows on the next call."""
    assert learn.cooling() == set()
    learn.cool("a", 60, "rate limit", "gateway")
    assert learn.cooling() == {"a"}
    learn.cool("b", None, "rate limit", "gateway")
    assert learn.cooling() == {"a", "b"}
    learn.cool("a", 0, "rate limit", "gateway")
    assert learn.cooling() == {"b"}


def test_learned_returns_a_copy():
    learn.record("m", "maximum context length is 32768", "gateway")
    learn.learned("m")["context_window"]["value"] = 1
    assert learn.learned("m")["context_window"]["value"] == 32768
    assert learn.learned("nobody") == {}


def test_lrn8_note_limits():
    assert learn.note_limits("m", {"rpd": 50, "rpmo": 3, "tpm": 0}, "quota", "quota body") == {"rpd": 50}
    assert learn.note_limits("m", {"rpd": 80}, "quota") == {}
    ev = learn.learned("m")["limits"]["rpd"]
    assert (ev["value"], ev["where"], ev["evidence"]) == (50, "quota", "quota body")


def test_lrn9_capabilities_positive_only_and_served_as_overwrites():
    learn.note_capability("m", "tools", "a tool call came back")
    learn.note_capability("m", "telepathy", "no")
    caps = learn.learned("m")["capabilities"]
    assert set(caps) == {"tools"} and caps["tools"]["value"] is True
    learn.note_served_as("m", "vendor/x:free", "vendor/y")
    learn.note_served_as("m", "vendor/x:free", "vendor/z")
    served = learn.learned("m")["served_as"]
    assert (served["requested"], served["served"]) == ("vendor/x:free", "vendor/z")


def test_key7_evidence_never_holds_a_key(llmdir, monkeypatch):
    (llmdir / "keys.json").write_text(json.dumps({"groq": "stored-secret-value-1234"}))
    monkeypatch.setenv("BENCHWARMERS_KEY_HUB", "env-secret-value-5678")
    text = ("429 rate limit for key stored-secret-value-1234 (env-secret-value-5678); "
            "sent Authorization: Bearer sk-or-v1-abcdef0123456789abcdef, url ?key=AIzaSyA1234567890abcdefghijk "
            "maximum context length is 8192")
    learn.record("m", text, "gateway")
    learn.note_capability("m", "tools", text)
    learn.note_limits("m", {"rpm": 5}, "quota", text)
    blob = paths.file("config", "model-learned.json").read_text() + paths.file("runs", "cooldowns.json").read_text()
    for secret in ("stored-secret-value-1234", "env-secret-value-5678", "sk-or-v1-abcdef", "AIzaSyA123"):
        assert secret not in blob
    assert "Bearer ***" in blob and "?key=***" in blob


def test_lrn11_cli(home, capsys):
    learn.record("m", "limit 30 requests per minute; maximum context length is 8192; try again in 2 minutes", "suite")
    assert learn.main() == 0
    out = capsys.readouterr().out
    assert "m  context window 8192  (suite, " in out and "m  rpm 30" in out
    assert re.search(r"m  cooling until \S+ \(stated by the provider\)", out)
    assert "limit 30 requests" not in out  # the provider's own words are not shown (they can carry an account id)
    done = subprocess.run([sys.executable, "-m", "benchwarmers.models.learn"], capture_output=True, text=True, cwd=paths.CODE)
    assert done.returncode == 0 and "m  rpm 30" in done.stdout  # the data folder named by BENCHWARMERS_HOME
