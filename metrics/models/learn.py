"""Learning from errors: stated context windows, rate limits and waits; cooldowns (LRN-1..11).

Providers say useful things in their error text ("maximum context length is
131,072 tokens", "Limit 30 ... (requests per minute)", "try again in 3 minutes").
`record()` keeps those figures in `config/model-learned.json`, only ever tighter,
and a rate limit rests the model in `runs/cooldowns.json` so the explorer router
skips it for a while (default 30 minutes; a stated wait wins, up to a day).

Both files change under their lock (LOCK-2), so concurrent seats both count.
Evidence is the whitespace-collapsed error text, first 200 characters, with any
secret taken out (KEY-7): an error may echo a key or a URL carrying one.

Improvements over the reference (models.md, "Improvements worth making"):
- 2: the `retryDelay` / `retry_after` patterns accept single quotes too, because
  the client shows JSON error bodies as a Python repr.
- 9: a stated wait of 0 means "no cooldown" (an existing one is lifted), not the
  30-minute default.

    python -m benchwarmers.models.learn             lists learned facts and active cooldowns

The parser's anchors (LRN-10) are checked in tests/test_learn.py.
"""

import copy
import datetime
import math
import re
import sys
import time

from ..core import fileio, keys, paths
from ..store import store
from . import connections

DEFAULT_COOLDOWN = 1800
MAX_WAIT = 86_400
MIN_CONTEXT = 512
EVIDENCE_CHARS = 200
AXES = ("rpm", "rpd", "tpm", "tpd")
CAPABILITIES = ("tools", "vision", "structured_output", "reasoning")

LEARNED_WHY = (
    "Learned by metrics/models/learn.py from what providers said (error text, quota bodies, probes). "
    "Figures only ever get tighter. To correct one, use config/model-overrides.json, which wins."
)

NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+)"
SECONDS = r"(\d+(?:\.\d+)?)"
UNIT = r"(s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b"

CONTEXT_PATTERNS = [
    re.compile(r"maximum context length is " + NUMBER),
    re.compile(r"context length (?:of|is) " + NUMBER),
    re.compile(r"context window (?:of|is) " + NUMBER),
    re.compile(r"max_model_len\D{0,20}?" + NUMBER),
    re.compile(r"maximum (?:input|prompt) (?:length|tokens?) (?:is )?" + NUMBER),
]

AXIS_PATTERNS = {
    "rpm": re.compile(r"requests? per minute|\brpm\b"),
    "rpd": re.compile(r"requests? per day|\brpd\b"),
    "tpm": re.compile(r"tokens? per minute|\btpm\b"),
    "tpd": re.compile(r"tokens? per day|\btpd\b"),
}
LIMIT_NUMBER = re.compile(r"\blimit[\s:=]*" + NUMBER)

# Each gives seconds, or (number, unit) to convert by the unit's first letter.
RETRY_PATTERNS = [
    re.compile(r"retry-after[\"'\s:]*" + SECONDS),
    re.compile(r"[\"']retry_?delay[\"']\s*:\s*[\"']" + SECONDS + r"s[\"']"),
    re.compile(r"[\"']retry_after[\"']\s*:\s*" + SECONDS),
    re.compile(r"\b(?:re)?try again in " + SECONDS + r"\s*" + UNIT),
    re.compile(r"please retry in " + SECONDS + r"\s*" + UNIT),
]
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}

RATE_LIMITED = re.compile(r"rate.?limit|too many requests|\b429\b|quota exceeded|resource_exhausted")

# Secret-shaped text an upstream may echo: bearer tokens, `key=` query values, common key prefixes.
SECRET_SHAPES = re.compile(
    r"(?i)(bearer\s+)[^\s'\",]+"
    r"|([?&](?:key|api_key|apikey|access_token)=)[^&\s'\"]+"
    r"|\b(?:sk|pk|rk|gsk|xai|csk|nvapi)-[A-Za-z0-9_\-]{12,}"
    r"|\bAIza[0-9A-Za-z_\-]{20,}"
)


def learned_path():
    return paths.file("config", "model-learned.json")


COOLDOWNS = ("runs", "cooldowns.json")  # in the store: every replica rests a model another one saw limited



def now_local():
    """iso-local, seconds precision: `2026-10-23T19:00:00-05:00`."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def _local(epoch):
    return datetime.datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="seconds")


def _int(number):
    return int(number.replace(",", ""))


def parse(text):
    """What an error text states (LRN-1..4): `{context_window?, limits?, retry_after_s?, rate_limited}`."""
    text = (text or "").lower()
    found = {}
    for pattern in CONTEXT_PATTERNS:
        match = pattern.search(text)
        if match:
            window = _int(match.group(1))
            if window >= MIN_CONTEXT:
                found["context_window"] = window
            break
    named = [axis for axis, pattern in AXIS_PATTERNS.items() if pattern.search(text)]
    if len(named) == 1:
        match = LIMIT_NUMBER.search(text)
        if match and _int(match.group(1)) > 0:
            found["limits"] = {named[0]: _int(match.group(1))}
    for pattern in RETRY_PATTERNS:
        match = pattern.search(text)
        if match:
            seconds = float(match.group(1))
            if pattern.groups == 2:
                seconds *= UNIT_SECONDS[match.group(2)[0]]
            seconds = min(seconds, MAX_WAIT)
            found["retry_after_s"] = int(seconds) if seconds == int(seconds) else seconds
            break
    found["rate_limited"] = bool(RATE_LIMITED.search(text)) or "retry_after_s" in found
    return found


def _shape_hidden(match):
    return (match.group(1) or match.group(2) or "") + "***"


def redact(text):
    """`text` as written down (`keys.clean`), then anything else secret-shaped replaced by `***` (KEY-7):
    evidence is kept for good, so keys no one registered are taken out too."""
    return SECRET_SHAPES.sub(_shape_hidden, keys.clean(text))


def excerpt(text):
    """Whitespace-collapsed, secrets out, first 200 characters."""
    return redact(" ".join(str(text or "").split()))[:EVIDENCE_CHARS]


def _catalog_window(alias):
    entry = fileio.read_json(paths.file("config", "model-catalog.json")).get("models", {})
    value = entry.get(alias, {}).get("context_window") if isinstance(entry, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _connection_limits(alias):
    """The user's limits for this alias's connection (`config/connection-limits.json`), `{}` if unknown."""
    try:
        connection = connections.connection_of(alias)
    except Exception:  # naming the connection is bookkeeping; it never stops learning
        return {}
    limits = fileio.read_json(paths.file("config", "connection-limits.json")).get(connection)
    return limits if isinstance(limits, dict) else {}


def _value(ev):
    value = ev.get("value") if isinstance(ev, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tighter(new, *known):
    """Whether `new` is lower than every known figure (None = not known)."""
    known = [k for k in known if isinstance(k, int) and not isinstance(k, bool) and k > 0]
    return not known or new < min(known)


def _store_limits(entry, limits, where, ev, connection_limits):
    """Write each tighter limit into `entry` (inside the lock); returns what was stored."""
    stored = {}
    current = entry.get("limits") if isinstance(entry.get("limits"), dict) else {}
    for axis, value in limits.items():
        if axis not in AXES or not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            continue
        if _tighter(value, _value(current.get(axis)), connection_limits.get(axis)):
            current[axis] = {"value": value, "at": now_local(), "where": where, "evidence": ev}
            stored[axis] = value
    if current:
        entry["limits"] = current
    return stored


def _update_entry(alias, change):
    """A locked change of one alias's learned entry; returns what `change(entry)` returns. Empty entries go."""

    def wrapped(data):
        data["_why"] = LEARNED_WHY
        entry = data.get(alias) if isinstance(data.get(alias), dict) else {}
        result = change(entry)
        if entry:
            data[alias] = entry
        else:
            data.pop(alias, None)
        return result

    return fileio.update(learned_path(), wrapped)


def record(alias, text, where):
    """Learn from one error text (LRN-6): tighter figures stored, a rate limit cools the alias.

    Returns `{"context_window"?: n, "limits"?: {axis: n}, "cooldown_s": seconds or 0}`.
    """
    stated = parse(text)
    result = {"cooldown_s": 0}
    if not alias or not text:
        return result
    ev = excerpt(text)
    window = stated.get("context_window")
    limits = stated.get("limits") or {}
    if window or limits:
        catalog_window = _catalog_window(alias) if window else None
        connection_limits = _connection_limits(alias) if limits else {}

        def change(entry):
            kept = {}
            if window and _tighter(window, _value(entry.get("context_window")), catalog_window):
                entry["context_window"] = {"value": window, "at": now_local(), "where": where, "evidence": ev}
                kept["context_window"] = window
            tighter = _store_limits(entry, limits, where, ev, connection_limits)
            if tighter:
                kept["limits"] = tighter
            return kept

        result.update(_update_entry(alias, change))
    if stated["rate_limited"]:
        result["cooldown_s"] = cool(alias, stated.get("retry_after_s"), ev, where)
    return result


def cool(alias, wait, why, where):
    """Rest `alias` for `wait` seconds (None: the default); a stated 0 lifts any cooldown. Returns the wait."""
    stated = wait is not None
    seconds = min(wait, MAX_WAIT) if stated else DEFAULT_COOLDOWN

    def change(data):
        if seconds <= 0:
            data.pop(alias, None)
            return
        until = _local(math.ceil(time.time() + seconds))
        data[alias] = {"until": until, "why": why, "where": where, "stated": stated}

    store.current().update_json(COOLDOWNS, change)
    return seconds


_until_cache = (None, {})


def _untils():
    """`{alias: (until epoch, entry)}` for well-formed entries, re-parsed only when the file changes."""
    global _until_cache
    raw = store.current().read_json(COOLDOWNS, comments=False)
    cached_raw, parsed = _until_cache
    if raw is cached_raw:
        return parsed
    parsed = {}
    for alias, entry in raw.items():
        if alias.startswith("_") or not isinstance(entry, dict):
            continue
        try:
            until = datetime.datetime.fromisoformat(entry["until"])
        except (KeyError, TypeError, ValueError):
            continue
        if until.tzinfo is None:
            until = until.astimezone()
        parsed[alias] = (until.timestamp(), entry)
    _until_cache = (raw, parsed)
    return parsed


def cooldowns():
    """Active cooldowns only (LRN-7): `{alias: {"until", "why", "where", "stated"}}`."""
    now = time.time()
    return {alias: dict(entry) for alias, (until, entry) in _untils().items() if until > now}


def cooling():
    """Aliases resting after a rate limit; cheap enough for every panel (the parse is cached by stat)."""
    now = time.time()
    return {alias for alias, (until, _) in _untils().items() if until > now}


def learned(alias=None):
    """What was learned about `alias` (a copy), or about every alias when none is given."""
    data = fileio.read_json(learned_path())
    if alias is None:
        return copy.deepcopy(data)
    entry = data.get(alias)
    return copy.deepcopy(entry) if isinstance(entry, dict) else {}


def note_limits(alias, limits, where, evidence=""):
    """Limits stated outside message text, e.g. quota bodies (LRN-8): rpm/rpd/tpm/tpd, only tighter.
    The quota observer calls it with the limits a 429 states (`quota.observe`, QUO-8)."""
    limits = {axis: value for axis, value in (limits or {}).items() if axis in AXES}
    if not alias or not limits:
        return {}
    ev = excerpt(evidence)
    connection_limits = _connection_limits(alias)
    return _update_entry(alias, lambda entry: _store_limits(entry, limits, where, ev, connection_limits))


def note_capability(alias, cap, evidence=""):
    """A capability seen working (LRN-9); failures prove nothing and are never stored.
    The capability probe (`metrics/admin/probe_caps.py`, PROBE-3) calls it."""
    if not alias or cap not in CAPABILITIES:
        return

    def change(entry):
        caps = entry.get("capabilities") if isinstance(entry.get("capabilities"), dict) else {}
        caps[cap] = {"value": True, "at": now_local(), "evidence": excerpt(evidence)}
        entry["capabilities"] = caps

    _update_entry(alias, change)


def note_served_as(alias, requested, served):
    """The model a reply named when it was not the one asked for (LRN-9, SWAP-2); overwrites."""
    if not alias:
        return

    def change(entry):
        entry["served_as"] = {"requested": requested, "served": served, "at": now_local()}

    _update_entry(alias, change)


def main():
    """LRN-11: what was learned and which models are cooling down."""
    facts = learned()
    if not facts:
        print(f"nothing learned yet ({learned_path()})")
    for alias, entry in sorted(facts.items()):
        if not isinstance(entry, dict):
            continue
        window = entry.get("context_window")
        if isinstance(window, dict):
            print(f"{alias}  context window {window.get('value')}  ({window.get('where')}, {window.get('at')})")
        for axis, ev in sorted((entry.get("limits") or {}).items()):
            print(f"{alias}  {axis} {ev.get('value')}  ({ev.get('where')}, {ev.get('at')})")
        for cap in sorted(entry.get("capabilities") or {}):
            print(f"{alias}  {cap}: yes")
        served = entry.get("served_as")
        if isinstance(served, dict):
            print(f"{alias}  asked for {served.get('requested')}, served {served.get('served')}")
    active = cooldowns()
    if not active:
        print("no model is cooling down")
    for alias, entry in sorted(active.items(), key=lambda item: item[1]["until"]):
        how = "stated by the provider" if entry.get("stated") else "default wait"
        print(f"{alias}  cooling until {entry['until']} ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
