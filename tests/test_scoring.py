"""metrics/models/scoring.py: outcome(), failure_class(), score() (suite-cli-mcp.md §2.2-2.4, models.md ERR-1..4, PN-1)."""

import ast

import pytest

from benchwarmers.core import paths
from benchwarmers.models import scoring
from benchwarmers.models.scoring import failure_class, outcome, score

ANSWER = "The function returns early when the list is empty, so the caller never sees the error."

# Texts as the built-in client and the llm backend write them (models.md ERR table, RET-3/4, STR-8/9).
PACED = ("Error: client failed: rate limit (not sent; paced by the bench): groq allows 30 requests a minute "
         "and 30 went out in the last minute; try again in 12s")
GUARDED = ("Error: client failed: not sent: the free-tier guard holds glm-free, which is listed with a price now "
           "(glm-free is listed with a price now (models.dev): input 0.6, output 2.2 per million tokens), so a call "
           "may be billed: payment required is assumed. Allow it by adding 'glm-free' to allow_paid in "
           "config/connections.json, or for one run with BENCH_ALLOW_PAID=1.")


@pytest.mark.parametrize("text, expected", [
    (PACED, "capacity"),
    (GUARDED, "entitlement"),
    ("Error: Error code: 502", "capacity"),
    ("Error: Error code: 502 - <html><body><h1>502 Bad Gateway</h1>", "capacity"),
    ("Error: client failed: the reply had no choices: {'id': 'x', 'choices': []}", "other"),
    ("Error: client failed: the stream broke off before it finished (120 characters in)", "other"),
    ("Error: client failed: the reply broke off part way (IncompleteRead(10 bytes read))", "other"),
    ("", "empty"),
    ("Error: Error code: 404 - {'error': {'message': 'Model not found', 'code': 404}}", "structural"),
    ("Error: Error code: 429 - {'error': {'message': 'Rate limit exceeded', 'code': 429}}", "capacity"),
    ("Error: Error code: 429 - {'error': {'message': 'slow down'}}", "capacity"),
    ("<<TIMED OUT after 420s>>", "timeout"),
    ("Insufficient credits. Add more using https://example.invalid/credits", "entitlement"),
])
def test_err3_required_landings(text, expected):
    """ERR-3: each failure lands in its class, at the default minimum and at 1 (ERR-5)."""
    assert failure_class(text) == expected
    assert failure_class(text, min_length=1) == expected


def test_err3_pacing_refusal_is_an_outcome_error():
    """ERR-3: a pacing refusal is an error outcome (so the suite retries it), reported by its marker."""
    assert outcome(PACED) == ("error", "rate limit")


def test_err4_guard_and_pacing_texts_carry_no_structural_or_paywalled_marker():
    """ERR-4: neither text may look structural or paywalled (that would retire a model)."""
    for text in (PACED, GUARDED):
        head = text.lower()[:400]
        assert not any(m in head for m in scoring.STRUCTURAL + scoring.PAYWALLED)


@pytest.mark.parametrize("text, expected", [
    ("Error: Error code: 401 - {'error': 'invalid key'}", "signin"),
    ("Error: Error code: 403 - payment required", "entitlement"),
    ("Error: Error code: response.failed - {'code': 'subscription_sharing_usage_unavailable'}", "signin"),
])
def test_su13_examples(text, expected):
    assert failure_class(text) == expected


def test_err1_outcome_order():
    """ERR-1 / §2.2: timeout, ERRORS marker in order, provider notice, refusal, too short, answer."""
    assert outcome("<<TIMED OUT after 300s>>") == ("timeout", "no answer within the budget")
    # `rate limit` comes before `too many requests` in the list, whatever the text's order
    assert outcome("Error: too many requests (rate limit)") == ("error", "rate limit")
    assert outcome("Error: Error code: 400 - bad") == ("error", "error: error code:")
    assert outcome("You have run out of credits. Upgrade your plan to continue.") == (
        "error", "provider notice in a success reply: run out of credits")
    assert outcome("Sorry, I can't help with that request, it is against policy.") == (
        "refused", "i can't help with that")
    assert outcome("ok") == ("error", "empty response")
    assert outcome("   ") == ("error", "empty response")
    assert outcome(ANSWER) is None


def test_su10_min_length_is_the_question_s():
    assert outcome("NO FAULT", min_length=8) is None
    assert outcome("NO FAULT") == ("error", "empty response")
    assert failure_class("NO FAULT") == "other"
    assert failure_class("NO FAULT", min_length=8) is None


def test_matching_is_on_the_first_400_chars_of_the_stripped_text():
    late = "Error: " + "x" * 500 + " rate limit"
    assert outcome(late) is None
    assert outcome("   \n  <<timed out after 9s>>") == ("timeout", "no answer within the budget")


def test_improvement_4_markers_skip_long_answers_that_do_not_start_with_error():
    """suite-cli-mcp.md improvement 4: a long review that mentions a 502 early is an answer."""
    review = "The handler maps 502 and 503 to a retry, and a rate limit to a wait. " + "More detail. " * 40
    assert len(review) > 400
    assert outcome(review) is None
    assert failure_class(review) is None
    # the same words in a short reply, or after `Error`, still count
    assert outcome("The upstream said 502.") == ("error", "502")
    assert failure_class("Error: " + review) == "capacity"


def test_provider_notice_only_in_short_texts():
    """PN-1, PN-2: the first phrase in list order; longer texts are never notices."""
    assert scoring.provider_notice("Please add credits: you are out of credits") == "out of credits"
    assert scoring.provider_notice("out of credits " + "x" * 400) is None
    assert scoring.provider_notice(ANSWER) is None


def test_failure_classes_list_signin_first():
    """SU-11 with improvement 5: defined once, worst first, `signin` included."""
    assert scoring.FAILURE_CLASSES == ("signin", "structural", "paywalled", "entitlement", "capacity", "timeout",
                                       "empty", "other")


def test_answer_is_none_class():
    assert failure_class(ANSWER) is None
    assert failure_class("Sorry, I cannot help with that. " * 3) == "other"


TRAP = {"must_find": [{"any_of": ["NO DATABASE WRITES"]}], "must_not_claim": ["INSERT"], "min_answer_chars": 5}
CLAIM = {"score_in": "first_line", "must_find": [{"any_of": ["verdict: false"]}], "must_not_claim": ["verdict: true"],
         "min_answer_chars": 5}
SEEDED = {"score_in": "first_line", "must_find": [{"regex": r"^fault:\s*line\s*1\b", "label": "fault: line 1"}],
          "must_not_claim": ["no fault"], "min_answer_chars": 8}


@pytest.mark.parametrize("text, invented", [
    ("NO DATABASE WRITES: there are no INSERT or DELETE statements.", []),
    ("NO DATABASE WRITES. It does not INSERT anything.", []),
    ("Line 12 runs an INSERT into settings.", ["INSERT"]),
    ("No reads here. Line 12 runs an INSERT.", ["INSERT"]),
    ("NO DATABASE WRITES. It doesn\u2019t INSERT anything.", []),
    ("NO DATABASE WRITES. The answer is 'no' INSERT at all.", []),
    ("NO DATABASE WRITES. Nothing knows. Line 3: notable INSERT.", ["INSERT"]),
])
def test_su18_trap_negation_guard(text, invented):
    """SU-17, SU-18: ruling something out is not claiming it."""
    assert score(TRAP, text)["invented"] == invented


def test_su18_claim_first_line():
    assert score(CLAIM, "VERDICT: FALSE\nquoted from the file")["found"] == 1
    result = score(CLAIM, "VERDICT: FALSE\nOne might think VERDICT: TRUE, but no.")
    assert (result["found"], result["invented"]) == (1, [])
    assert score(CLAIM, "Let me think.\nVERDICT: FALSE")["found"] == 0


def test_su18_seeded():
    assert score(SEEDED, "FAULT: line 1\nthe loop is off by one")["found"] == 1
    result = score(SEEDED, "FAULT: line 12\nthe loop is off by one")
    assert (result["found"], result["missed"]) == (0, ["fault: line 1"])
    assert score(SEEDED, "NO FAULT")["invented"] == ["no fault"]


def test_su14_a_non_answer_has_no_score():
    result = score({"must_find": ["a", "b"], "must_not_claim": ["c"]}, "Error: Error code: 429 - rate limit")
    assert result == {"found": 0, "of": 2, "missed": [], "invented": [], "blocked": "error: rate limit",
                      "kind": "error", "format_ok": None, "format_why": ""}


def test_su15_clause_forms_and_labels():
    spec = {"must_find": ["Early Return", {"any_of": ["off by one", "off-by-one"], "label": "bounds"},
                          {"regex": r"line\s+4\d"}, "missing thing"]}
    result = score(spec, "There is an early return and an OFF-BY-ONE at line 42. " * 2)
    assert (result["found"], result["of"]) == (3, 4)
    assert result["missed"] == ["missing thing"]
    assert result["kind"] == "answered" and result["blocked"] is None
    assert (result["format_ok"], result["format_why"]) == (True, "")


def test_su16_inventions_only_in_table_rows():
    spec = {"must_find": [], "must_not_claim": ["sqlite", {"regex": r"\bredis\b", "label": "redis"}],
            "must_not_claim_in": "table"}
    text = "It uses sqlite and redis, the table says otherwise.\n| store | postgres |\n| cache | redis |\n"
    assert score(spec, text)["invented"] == ["redis"]


@pytest.mark.parametrize("fmt, text, why", [
    ({"table": True}, "| a | b |\nnot a table row, just prose long enough to count as an answer",
     "expected a markdown table, found 1 row(s)"),
    ({"min_chars": 500}, ANSWER, f"{len(ANSWER)} chars, under the 500 a real answer to this needs"),
    ({"must_not_contain": ["Early"]}, "The function returns EARLY when the list is empty, twice over.",
     "contains 'Early', which the prompt excluded"),
])
def test_su19_format_check(fmt, text, why):
    result = score({"must_find": [], "format": fmt}, text)
    assert (result["format_ok"], result["format_why"]) == (False, why)


def test_metrics_never_imports_the_suite():
    """Issue 13: the suite is built on top of `metrics`, so the dependency goes one way only."""
    found = []
    for path in sorted((paths.CODE / "metrics").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names if n == "suite" or n.startswith("suite.")]
    assert found == []
