"""Reading a model's saved output: was it an answer, why not, and what did it find (SU-6..21, ERR-1..5).

Three plain functions, shared by everything that looks at model output (the
suite runner, the router's recall, perf, auto-retire, the client's parity
tests), so one reply is classified the same way everywhere. They live in
`metrics` because the router scores saved answers and the suite is built on
top of `metrics` (`suite/` imports `metrics`, never the other way round):

- `outcome(text, min_length)`: `None` for an answer, else `(kind, detail)`.
- `failure_class(text, min_length)`: why a non-answer happened (SU-11, SU-12).
- `score(spec, text)`: recall and inventions against a task's answer key.

Matching is case-insensitive on the first 400 characters of the stripped text.
Scoring is plain string and regex matching, never a model.

Decisions beyond the reference (suite-cli-mcp.md "Improvements worth making"):
- 4: the ERRORS and class markers (`502`, `rate limit`, `context length` ...)
  apply only to texts that look like failures: they start with `error` or are
  at most 400 characters (the classifier head) long. A long review that
  mentions a 502 early is an answer. Every error text the client and the `llm`
  backend produce starts with `Error:`, so their classification is unchanged.
- 5: `signin` is the first of `FAILURE_CLASSES`.
- ERR-3 ("429 → capacity") is guaranteed whatever the provider's body says:
  `error code: 429` is also a capacity marker.
"""

import re

from ..wire import notices

HEAD = 400
SHORT = 400  # at most this long (stripped), a text may be a failure whatever it starts with
DEFAULT_MIN = 40
TIMEOUT_MARK = "<<timed out"

# Order matters: upstream reasons first, client-side last (the first one found is reported).
ERRORS = (
    "service temporarily overloaded",
    "rate limit",
    "internal server error",
    "bad gateway",
    "connection reset",
    "502",
    "503",
    "error: error code:",
    "model not found",
    "not available in your subscription",
    "no endpoints found",
    "request too large",
    "insufficient_quota",
    "quota exceeded",
    "context length",
    "too many requests",
    "error: llm exited",
    "error: client failed",
    "codec can't encode",
    "request limit reached",
)

REFUSALS = (
    "blocked by gemini's filters",
    "i can't help with that",
    "i cannot help with that",
    "i'm not able to help",
    "against my guidelines",
    "unable to assist",
)

# Worst first; `signin` leads (improvement 5) and never counts toward retirement (SU-12).
FAILURE_CLASSES = ("signin", "structural", "paywalled", "entitlement", "capacity", "timeout", "empty", "other")

SIGNIN = ("error code: 401", "sign in again", "sharing_usage_unavailable")
STRUCTURAL = ("model not found", "no endpoints found", "does not exist", "unknown model", "invalid model",
              "model_not_found")
PAYWALLED = ("unavailable for free", "use this slug instead", "the paid version is available", "free launch period",
             "variant has been retired")
ENTITLEMENT = ("not available in your subscription", "not authorized", "unauthorized", "permission denied",
               "no access to model", "insufficient balance", "insufficient credit", "payment required",
               "only available on agentic harnesses", "only available on")
CAPACITY = ("rate limit", "quota exceeded", "insufficient_quota", "usage_limit_exceeded", "too many requests",
            "request too large", "context length", "service temporarily overloaded", "internal server error",
            "provider returned error", "bad gateway", "502", "503", "request limit reached", "resourceexhausted",
            "error code: 429")

NEGATIONS = frozenset({"no", "not", "never", "none", "without", "zero", "cannot", "can't", "isn't", "aren't",
                       "doesn't", "don't", "didn't", "false", "disproved", "neither", "nor"})
NEGATION_WINDOW = 60
WORDS = re.compile(r"[a-z]+(?:'[a-z]+)*")  # "can't" is one word; quotes around 'no' are not part of it
SENTENCE_END = re.compile(r"[.!?\n]")


def _read(text):
    """(stripped lower text, head, whether error markers apply to it)."""
    lowered = (text or "").strip().lower()
    head = lowered[:HEAD]
    return lowered, head, head.startswith("error") or len(lowered) <= SHORT


def _first(markers, head):
    for marker in markers:
        if marker in head:
            return marker
    return None


def provider_notice(text):
    """The first provider-notice phrase in a short reply (PN-1, SU-9), or None."""
    return notices.notice(text) or None


def outcome(text, min_length=DEFAULT_MIN):
    """`None` when `text` is an answer, else `(kind, detail)` with kind timeout / error / refused (ERR-1, §2.2)."""
    lowered, head, failure_like = _read(text)
    if TIMEOUT_MARK in head:
        return ("timeout", "no answer within the budget")
    marker = _first(ERRORS, head) if failure_like else None
    if marker:
        return ("error", marker)
    phrase = provider_notice(text)
    if phrase:
        return ("error", f"provider notice in a success reply: {phrase}")
    marker = _first(REFUSALS, head)
    if marker:
        return ("refused", marker)
    if len(lowered) < min_length:
        return ("error", "empty response")
    return None


def failure_class(text, min_length=DEFAULT_MIN):
    """Why a reply is not an answer, one of FAILURE_CLASSES, or None for an answer (ERR-2, §2.3).
    Callers: the suite's gap and pacing checks, perf's failure column, the dashboard's retry and auto-retire's
    confirmation call (SU-11, SU-12, AR-5)."""
    _, head, failure_like = _read(text)
    if TIMEOUT_MARK in head:
        return "timeout"
    if failure_like:
        for name, markers in (("signin", SIGNIN), ("structural", STRUCTURAL), ("paywalled", PAYWALLED),
                              ("entitlement", ENTITLEMENT)):
            if _first(markers, head):
                return name
    if provider_notice(text):
        return "entitlement"
    if failure_like and _first(CAPACITY, head):
        return "capacity"
    if not head:
        return "empty"
    return None if outcome(text, min_length) is None else "other"


def label(clause):
    """A clause's name in `missed` / `invented`: label, else regex, else any_of[0], else the string."""
    if isinstance(clause, dict):
        if clause.get("label"):
            return clause["label"]
        if clause.get("regex"):
            return clause["regex"]
        alternatives = clause.get("any_of") or [""]
        return alternatives[0]
    return clause


def _alternatives(clause):
    if isinstance(clause, dict):
        return [str(a).lower() for a in clause.get("any_of") or [] if str(a)]
    return [str(clause).lower()] if str(clause) else []


def _present(clause, text):
    if isinstance(clause, dict) and clause.get("regex"):
        return re.search(clause["regex"], text) is not None
    return any(alt in text for alt in _alternatives(clause))


def _negated(before):
    """Whether the context before an occurrence rules it out (SU-17)."""
    context = before[-NEGATION_WINDOW:].replace("\u2019", "'")
    ends = list(SENTENCE_END.finditer(context))
    if ends:
        context = context[ends[-1].end():]
    return any(word in NEGATIONS for word in WORDS.findall(context))


def asserted(phrase, text):
    """True when at least one occurrence of `phrase` in `text` has no negation just before it (SU-17)."""
    start = text.find(phrase)
    while start != -1:
        if not _negated(text[:start]):
            return True
        start = text.find(phrase, start + 1)
    return False


def _claimed(clause, text):
    if isinstance(clause, dict) and clause.get("regex"):
        return re.search(clause["regex"], text) is not None
    return any(asserted(alt, text) for alt in _alternatives(clause))


def _rows(text):
    return [line for line in text.split("\n") if line.lstrip().startswith("|")]


def format_check(fmt, text):
    """`(ok, why)` for a task's `format` object (SU-19); the first failure wins."""
    if not isinstance(fmt, dict) or not fmt:
        return True, ""
    stripped = (text or "").strip()
    if fmt.get("table"):
        rows = len(_rows(stripped))
        if rows < fmt.get("min_rows", 2):
            return False, f"expected a markdown table, found {rows} row(s)"
    least = fmt.get("min_chars", 0)
    if len(stripped) < least:
        return False, f"{len(stripped)} chars, under the {least} a real answer to this needs"
    lowered = stripped.lower()
    for entry in fmt.get("must_not_contain") or []:
        if str(entry).lower() in lowered:
            return False, f"contains '{entry}', which the prompt excluded"
    return True, ""


def score(spec, text):
    """Score one saved answer against a task (SU-14..19).

    `{"found", "of", "missed", "invented", "blocked", "kind", "format_ok", "format_why"}`.
    A non-answer has no score either way: found 0, nothing missed or invented.
    """
    must_find = spec.get("must_find") or []
    must_not = spec.get("must_not_claim") or []
    text = text or ""
    verdict = outcome(text, spec.get("min_answer_chars", DEFAULT_MIN))
    if verdict is not None:
        kind, detail = verdict
        return {"found": 0, "of": len(must_find), "missed": [], "invented": [], "blocked": f"{kind}: {detail}",
                "kind": kind, "format_ok": None, "format_why": ""}
    if spec.get("score_in") == "first_line":
        lines = [line.strip() for line in text.split("\n") if line.strip()]
        scored = lines[0].lower() if lines else ""
    else:
        scored = text.lower()
    missed = [label(c) for c in must_find if not _present(c, scored)]
    claims = "\n".join(_rows(scored)) if spec.get("must_not_claim_in") == "table" else scored
    invented = [label(c) for c in must_not if _claimed(c, claims)]
    ok, why = format_check(spec.get("format"), text)
    return {"found": len(must_find) - len(missed), "of": len(must_find), "missed": missed, "invented": invented,
            "blocked": None, "kind": "answered", "format_ok": ok, "format_why": why}
