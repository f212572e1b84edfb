"""The local upstream's scripted models (metrics/demo/demo.py): `replies`, `listed`, `serves_as`, `ratelimit`, `quota_body`;
what each answers, typos refused."""

import json
import urllib.error
import urllib.request

import pytest

from benchwarmers.demo import demo


def ask(up, model, prompt):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}]}).encode()
    request = urllib.request.Request(up.base_url + "/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.load(reply)["choices"][0]["message"]["content"]


def test_replies_pick_the_answer_by_the_first_substring_found():
    spec = {"replies": {"BUG-A": "FAULT: line 3", "A": "NO FAULT"}, "answer": "no idea"}
    with demo.Upstream(models={"finder": spec}) as up:
        assert ask(up, "finder", "look at BUG-A please") == "FAULT: line 3"  # spec order: BUG-A before A
        assert ask(up, "finder", "look at A") == "NO FAULT"
        assert ask(up, "finder", "nothing scripted") == "no idea"
        assert up.answer_for("finder", "BUG-A") == "FAULT: line 3"


def test_replies_must_be_a_table_of_texts():
    with pytest.raises(ValueError, match="replies is"):
        demo.Upstream(models={"m": {"replies": ["FAULT: line 3"]}})
    with pytest.raises(ValueError, match="replies is"):
        demo.Upstream(models={"m": {"replies": {"x": 3}}})


def test_a_404_model_is_unlisted_unless_its_spec_says_listed():
    models = {"gone": {"fail": "404"}, "ghost": {"fail": "404", "listed": True}, "alive": {"answer": "hi"}}
    with demo.Upstream(models=models) as up:
        with urllib.request.urlopen(up.base_url + "/models", timeout=10) as reply:
            listed = sorted(row["id"] for row in json.load(reply)["data"])
        up.set_model("alive", fail="404")
        with urllib.request.urlopen(up.base_url + "/models", timeout=10) as reply:
            after = sorted(row["id"] for row in json.load(reply)["data"])
    assert listed == ["alive", "ghost"] and after == ["ghost"]
    with pytest.raises(ValueError, match="listed is true or false"):
        demo.Upstream(models={"m": {"listed": "yes"}})


def test_serves_as_names_another_model_in_the_reply():
    """A provider that silently serves another model (SWAP, PROBE-3): the reply's `model` says so."""
    body = json.dumps({"model": "asked", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with demo.Upstream(models={"asked": {"answer": "hi", "serves_as": "vendor/other-model"}}) as up:
        request = urllib.request.Request(up.base_url + "/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert json.load(reply)["model"] == "vendor/other-model"
    with pytest.raises(ValueError, match="serves_as is a model name"):
        demo.Upstream(models={"m": {"serves_as": ""}})


def test_ratelimit_sends_the_headers_counting_down_then_429_with_the_quota_body():
    """Issue 19: a model that states its limit the way OpenAI-style providers do, then refuses past it."""
    quota = {"error": {"code": 429, "message": "quota", "details": [{"violations": [{"quotaId": "PerDay", "quotaValue": "2"}]}]}}
    body = json.dumps({"model": "capped", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with demo.Upstream(models={"capped": {"answer": "hi", "ratelimit": 2, "ratelimit_reset": "6m0s",
                                          "quota_body": quota}}) as up:
        seen = []
        for _ in range(2):
            request = urllib.request.Request(up.base_url + "/chat/completions", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as reply:
                seen.append((reply.headers["x-ratelimit-limit-requests"], reply.headers["x-ratelimit-remaining-requests"],
                             reply.headers["x-ratelimit-reset-requests"]))
        request = urllib.request.Request(up.base_url + "/chat/completions", body, {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
    assert seen == [("2", "1", "6m0s"), ("2", "0", "6m0s")]
    assert refused.value.code == 429 and refused.value.headers["Retry-After"] == "1"
    assert refused.value.headers["x-ratelimit-remaining-requests"] == "0"
    assert json.load(refused.value) == quota
    with pytest.raises(ValueError, match="ratelimit is a positive whole number"):
        demo.Upstream(models={"m": {"ratelimit": 0}})
