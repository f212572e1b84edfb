"""The model popup's facts and call options (dashboard.md MP-20..23, IMP-5).

A person's own facts (`config/model-overrides.json`) beat the catalog's sources; their call options
(`config/model-options.json`) are sent with every call to the model. Both are checked in full before
anything is written, and logged with the caller.

Decision (IMP-5 wins over MP-21's "replaced"): a save merges into the model's existing entry, so fields
the popup does not show (a hand-set `modalities`, say) survive; a field sent blank (or a capability sent
as null, "auto") is cleared, handing it back to the sources.
"""

import shutil
import subprocess

from ..core import changes, fileio, paths
from ..core.errors import Invalid
from ..models import catalog, registry

NUMBERS = ("context_window", "max_output")
CAPABILITIES = ("tools", "vision", "structured_output", "reasoning")
TEXTS = {"knowledge_cutoff": 20, "description": 300}
LIMITS = ("rpm", "rpd", "tpm", "tpd")
MAX_TOKENS = 1_000_000
LLM_SECONDS = 30


def overrides_path():
    return paths.file("config", "model-overrides.json")


def _blank(value):
    return value is None or (isinstance(value, str) and not value.strip())


def _positive(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def not_chat(alias):
    if isinstance(alias, str) and alias in registry.registrations():
        return ""
    return f"'{alias}' is not a chat model on the bench"


def save_facts(body, who):
    """MP-21: `POST /api/model-facts {alias, facts}`."""
    alias = body.get("alias")
    problem = not_chat(alias)
    if problem:
        raise Invalid(problem)
    facts = body.get("facts") if isinstance(body.get("facts"), dict) else {}
    errors, put, clear = [], {}, set()
    for key in NUMBERS:
        if key not in facts:
            continue
        if _blank(facts[key]):
            clear.add(key)
        elif _positive(facts[key]):
            put[key] = facts[key]
        else:
            errors.append(f"{key} must be a positive whole number of tokens, or blank")
    for key in CAPABILITIES:
        if isinstance(facts.get(key), bool):
            put[key] = facts[key]
        elif key in facts and facts[key] is None:
            clear.add(key)
    for key, limit in TEXTS.items():
        if key not in facts or not isinstance(facts[key], (str, type(None))):
            continue
        text = " ".join((facts[key] or "").split())
        if not text:
            clear.add(key)
        elif len(text) > limit:
            errors.append(f"{key}: at most {limit} characters")
        else:
            put[key] = text
    if "limits" in facts and facts["limits"] is not None and not isinstance(facts["limits"], dict):
        errors.append("limits must be an object of rpm, rpd, tpm and tpd")  # IMP-2: said, never ignored
    limits = facts.get("limits") if isinstance(facts.get("limits"), dict) else None
    kept_limits = {}
    for key in LIMITS if limits is not None else ():
        value = limits.get(key)
        if _blank(value):
            continue
        if _positive(value):
            kept_limits[key] = value
        else:
            errors.append(f"{key} must be a positive whole number or blank")
    if errors:
        raise Invalid(*errors)

    def merge(data):
        old = data.get(alias) if isinstance(data.get(alias), dict) else None
        entry = {k: v for k, v in (old or {}).items() if k not in clear}
        entry.update(put)
        if limits is not None:
            entry.pop("limits", None)
            if kept_limits:
                entry["limits"] = kept_limits
        if entry:
            data[alias] = entry
        else:
            data.pop(alias, None)
        return old, entry or None

    old, new = fileio.update(overrides_path(), merge)
    if old == new:  # LOG-4: nothing changed, nothing is logged or said changed
        return {"ok": True, "errors": [], "changed": []}
    changes.log(who, alias, "facts", old, new)
    return {"ok": True, "errors": [], "changed": ["config/model-overrides.json"]}


def save_options(body, who):
    """MP-23: `POST /api/model-options {alias, max_tokens}`."""
    alias = body.get("alias")
    problem = not_chat(alias)
    if problem:
        raise Invalid(problem)
    value = body.get("max_tokens")
    if _blank(value):
        value = None
    elif not (_positive(value) and value <= MAX_TOKENS):
        raise Invalid("max tokens: a whole number from 1 to 1,000,000, or blank")
    ceiling = catalog.max_output(alias)
    if value is not None and _positive(ceiling) and value > ceiling:
        raise Invalid(f"max tokens: at most this model's max output, {ceiling:,}")
    old = fileio.read_json(registry.options_path()).get(alias)
    old = old if isinstance(old, dict) else None
    if (old or {}).get("max_tokens") == value:
        return {"ok": True, "errors": [], "note": "no change"}

    def put(data):
        entry = dict(data.get(alias) or {}) if isinstance(data.get(alias), dict) else {}
        if value is None:
            entry.pop("max_tokens", None)
        else:
            entry["max_tokens"] = value
        if entry:
            data[alias] = entry
        else:
            data.pop(alias, None)
        return entry or None

    new = fileio.update(registry.options_path(), put)
    changes.log(who, alias, "options", old, new)
    return {"ok": True, "errors": [], "changed": ["config/model-options.json"], "note": tell_llm(alias, value)}


def tell_llm(alias, value):
    """MP-23's note: the llm CLI is told the same option when it is installed here."""
    if not shutil.which("llm"):
        return "no llm CLI on this machine's PATH, so only the built-in client uses it"
    command = ["llm", "models", "options"] + (["clear", "--", alias, "max_tokens"] if value is None
                                               else ["set", "--", alias, "max_tokens", str(value)])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=LLM_SECONDS)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the llm CLI was not told ({exc}): run python -m benchwarmers.scripts.sync_config"
    if done.returncode == 0:
        return "the llm CLI has it too"
    return f"llm models options exited {done.returncode}: {(done.stderr or done.stdout).strip()[:200]}"
