"""The shape picker (gateway.md §9.1, SHP-1..7): which kind of task a prompt asks for.

The first onboarded decision model that answers `choice` questions is asked
through its endpoint's Decisions API. Anything that goes wrong falls back to
`general` with a reason, so a panel never fails because the picker did.

`pick(text)` returns `(shape, shape_by)`.
"""

import json
import time
import urllib.error
import urllib.request
from typing import Any

from ..core import keys
from ..models import endpoints, registry
from . import roles

CONFIDENT = 0.6
INPUT_CAP = 20000
TIMEOUT = 60
RATE_LIMIT_WAITS = (5, 15)
OPTIONS = ("general", "design", "prose", "review", "code", "enumeration", "quick")
INSTRUCTIONS = ("What kind of task does this prompt ask for? Choose the one option whose description fits best; "
                "general when none does.")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A key is sent: never follow a redirect to another host with it."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def picker() -> tuple[str, registry.DecisionModel] | None:
    """`(alias, entry)` of the first decision model taking `choice` questions that is not ad hoc, else None."""
    held = set(roles.load().get("ad_hoc") or [])
    for alias, entry in registry.decision_models().items():
        if alias not in held and "choice" in entry.question_types:  # IMP-10: no question_types → skip the entry
            return alias, entry
    return None


def error_text(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        try:
            body = json.loads(exc.read() or b"{}")
        except ValueError:
            body = {}
        message = ""
        if isinstance(body, dict):
            error = body.get("error")
            if isinstance(error, dict):
                message = str(error.get("message") or "")
            elif isinstance(error, str):
                message = error
            elif "detail" in body:
                message = str(body["detail"])
        return f"{exc.code} {keys.clean(message, 160)}".strip()
    return keys.clean(f"{type(exc).__name__}: {exc}")


def decide(alias: str, entry: registry.DecisionModel, state: str, questions: dict[str, Any]) -> dict[str, Any]:
    """One Decisions API call to the decision model `alias` (its `decision-models.json` entry): `questions`
    ({name: {type, instructions, ...}}) about `state`; returns the reply's `answers` ({} when it sent none).
    A 429 waits and tries again (RATE_LIMIT_WAITS); any other failure raises."""
    endpoint = endpoints.load().get(entry.via) or endpoints.Endpoint(entry.via)
    url = endpoint.decisions.replace("{path}", entry.path or "decisions")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"endpoint '{entry.via}' has no Decisions API URL")
    body = {"model": entry.served or alias, "state": state[:INPUT_CAP], "questions": questions}
    headers = {"Content-Type": "application/json", **endpoint.headers}
    secret = keys.key(endpoint.key)
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    waits = list(RATE_LIMIT_WAITS)
    while True:
        try:
            with _opener.open(request, timeout=TIMEOUT) as response:
                reply = json.loads(response.read())
            break
        except urllib.error.HTTPError as exc:
            if exc.code != 429 or not waits:
                raise
            time.sleep(waits.pop(0))
    answers = reply.get("answers") if isinstance(reply, dict) else None
    return answers if isinstance(answers, dict) else {}


def ask(alias: str, entry: registry.DecisionModel, text: str) -> Any:
    """The shape question (SHP-4) put to a decision model; returns `answers.shape` as sent."""
    criteria = {name: roles.SHAPE_DESCRIPTIONS[name] for name in OPTIONS}
    answers = decide(alias, entry, text, {"shape": {"type": "choice", "instructions": INSTRUCTIONS,
                                                    "criteria": criteria}})
    return answers.get("shape") or {}


def pick(text: str) -> tuple[str, str]:
    """`(shape, shape_by)` for a prompt (SHP-2..6)."""
    if roles.status():
        return "general", f"config/model-roles.json {roles.status()}"
    found = picker()
    if not found:
        return "general", "no decision model onboarded"
    alias, entry = found
    try:
        answer = ask(alias, entry, text)
    except Exception as exc:
        return "general", f"{alias} failed ({keys.cut(error_text(exc), 80)})"
    choice = answer.get("choice") if isinstance(answer, dict) else None
    confidence = answer.get("confidence") if isinstance(answer, dict) else None
    if not isinstance(confidence, (int, float)) or isinstance(confidence, bool):
        confidence = 0.0  # IMP-10: a null confidence is "unsure", not a crash
    if choice not in OPTIONS or confidence < CONFIDENT:
        return "general", f"{alias} unsure ({choice} at {confidence:.2f})"
    return choice, f"{alias}, {confidence:.2f}"
