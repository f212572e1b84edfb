"""Quota records: what providers say is left of a limit, read from every built-in call's response (QUO-1..10).

The client hands each response (success headers before the body, error replies with their parsed JSON
body) to `observe()` through its OBSERVERS list (RET-7). Rate-limit headers, a 429's Retry-After and
the quota details some providers put in a 429 body become records in `DATA/runs/quotas.json`:

    {"<connection>": {"<alias>": {"<metric>/<window>": record}}, "_why": "..."}

Pacing (metrics/calling/pacing.py) holds a call back while a live record says nothing is left; the
dashboard's Quotas page lists the live ones. A 429 that states a per-minute or per-day figure
also teaches learn the limit (LRN-8), so pacing keeps to it after the record expires.

Decisions where the spec is silent:
- Header values that are not whole numbers (`"99.5"`) are read as their integer part; anything
  else is no figure. A record needs a limit or a remaining to exist (QUO-2).
- A reset header counts only for a (metric, window) that also has a limit or a remaining.
- Gemini's quota violations are read from any 429 body of that shape, whatever the host: a
  gateway in front of Gemini passes the body on unchanged.

    python -m benchwarmers.models.quota        live records, or `no quota record in force (<file>)`
"""

import datetime
import math
import re
import sys
import time
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from ..core import paths
from ..store import store as shared  # `store` is this module's own word: QUO-6's
from . import learn

PRUNE_AFTER_RESET = 86_400
KEEP_WITHOUT_RESET = 7 * 86_400
WHY = ("What providers said is left of each rate limit, per connection and model, from the rate-limit headers "
       "and 429 replies of the built-in client's calls. Pacing holds a call while a live record says nothing is "
       "left. Written by metrics/models/quota.py; safe to delete.")

# QUO-1: host (exact or a subdomain) -> (profile, {metric: default window})
PROFILES = (
    ("api.openai.com", "openai", {"requests": "minute", "tokens": "minute"}),
    ("api.groq.com", "groq", {"requests": "day", "tokens": "minute"}),
    ("api.cerebras.ai", "cerebras", {}),
    ("openrouter.ai", "openrouter", {}),
    ("api.anthropic.com", "anthropic", {}),
    ("api.sambanova.ai", "sambanova", {"requests": "minute", "tokens": "minute"}),
    ("generativelanguage.googleapis.com", "gemini", {}),
)
OPENAI_SHAPE = re.compile(r"x-ratelimit-(limit|remaining|reset)-(requests|tokens)(?:-(minute|hour|day))?")
BARE = re.compile(r"x-ratelimit-(limit|remaining|reset)")
ANTHROPIC_SHAPE = re.compile(r"anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens)-(limit|remaining|reset)")
DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?")
AXES = {("requests", "minute"): "rpm", ("requests", "day"): "rpd", ("tokens", "minute"): "tpm",
        ("tokens", "day"): "tpd"}


QUOTAS = ("runs", "quotas.json")  # in the store: a provider's stated quota is every replica's


def path():
    return paths.file(*QUOTAS)


def iso_utc(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).isoformat(timespec="seconds")


def epoch_of(text):
    """Epoch seconds of an ISO time (`Z` allowed; no offset reads as UTC), None when it is not one."""
    try:
        moment = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def profile(base):
    """QUO-1: `(name, default windows)` for the base URL's host; `generic` for any other host."""
    host = (urlsplit(base or "").hostname or "").lower()
    for known, name, windows in PROFILES:
        if host == known or host.endswith("." + known):
            return name, windows
    return "generic", {}


def _number(value):
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _int(value):
    number = _number(value)
    return int(number) if number is not None and math.isfinite(number) else None


def reset_at(value, now):
    """QUO-4: a reset spelling as an absolute epoch time at observation, None when unreadable."""
    text = str(value).strip()
    if not text:
        return None
    if "T" in text and text[:4].isdigit():
        return epoch_of(text)
    number = _number(text)
    if number is not None:
        if number >= 1e12:
            return number / 1000
        if number >= 1e9:
            return number
        return now + number
    match = DURATION.fullmatch(text)
    if match and any(match.groups()):
        hours, minutes, seconds, millis = (float(g) if g else 0.0 for g in match.groups())
        return now + hours * 3600 + minutes * 60 + seconds + millis / 1000
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def _window_hint(hint):
    hint = (hint or "").lower()
    if "per-day" in hint or "per day" in hint:
        return "day"
    if "per-min" in hint or "per min" in hint:
        return "minute"
    return "unknown"


def from_headers(headers, name, windows, hint, source, now):
    """QUO-2: one record per (metric, window) with a limit or a remaining. `headers`: (name, value) pairs."""
    found = {}
    for key, value in headers:
        key = key.lower().strip()
        match = OPENAI_SHAPE.fullmatch(key)
        if match:
            field, metric, window = match.groups()
            window = window or windows.get(metric) or "unknown"
        elif BARE.fullmatch(key):
            field, metric, window = key.rsplit("-", 1)[1], "requests", _window_hint(hint)
        elif ANTHROPIC_SHAPE.fullmatch(key):
            metric, field = ANTHROPIC_SHAPE.fullmatch(key).groups()
            window = "minute"
        else:
            continue
        found.setdefault((metric, window), {})[field] = value
    records = []
    for (metric, window), fields in found.items():
        limit, remaining = _int(fields.get("limit")), _int(fields.get("remaining"))
        if limit is None and remaining is None:
            continue
        reset = reset_at(fields["reset"], now) if "reset" in fields else None
        records.append(_record(metric, window, limit, remaining, reset, source, now))
    return records


def _record(metric, window, limit, remaining, reset, source, now, **extra):
    return {"metric": metric, "window": window, "limit": limit, "remaining": remaining,
            "reset_at": iso_utc(reset) if reset is not None else None, "source": source,
            "observed_at": iso_utc(now), **extra}


def retry_record(headers, name, now):
    """QUO-3 (a 429 only): the wait it states, as a `requests/retry-after` record with nothing left."""
    lower = {k.lower(): v for k, v in headers}
    wait = None
    if "retry-after-ms" in lower and _number(lower["retry-after-ms"]) is not None:
        wait = _number(lower["retry-after-ms"]) / 1000
    elif "retry-after" in lower:
        raw = lower["retry-after"]
        wait = _number(raw)
        if wait is None:
            try:
                wait = parsedate_to_datetime(raw).timestamp() - now
            except (TypeError, ValueError, IndexError):
                wait = None
    if wait is None or wait <= 0:
        return []
    return [_record("requests", "retry-after", None, 0, now + wait, f"retry-after ({name})", now)]


def _gemini_records(error, name, now):
    details = error.get("details") if isinstance(error.get("details"), list) else []
    delay = None
    for detail in details:
        if isinstance(detail, dict) and detail.get("retryDelay") is not None:
            delay = reset_at(detail["retryDelay"], now)
    records = []
    for detail in details:
        violations = detail.get("violations") if isinstance(detail, dict) else None
        for v in violations if isinstance(violations, list) else []:
            if not isinstance(v, dict) or not v.get("quotaId"):
                continue
            quota_id = str(v["quotaId"])
            lowered = quota_id.lower()
            window = next((w for key, w in (("perday", "day"), ("perhour", "hour"), ("perminute", "minute"))
                           if key in lowered), "unknown")
            metric = "tokens" if "token" in (quota_id + str(v.get("quotaMetric") or "")).lower() else "requests"
            reset = delay if delay is not None else now + 60 if window == "minute" else None
            records.append(_record(metric, window, _int(v.get("quotaValue")), 0, reset, f"429 body ({name})", now,
                                   quota=quota_id))
    return records


def from_body(body, name, now):
    """QUO-5: OpenRouter's passed-on headers and Gemini's quota violations in a 429 body."""
    items = body if isinstance(body, list) else [body]
    records = []
    for item in items:
        error = item.get("error") if isinstance(item, dict) else None
        if not isinstance(error, dict):
            continue
        meta = error.get("metadata")
        passed = meta.get("headers") if isinstance(meta, dict) else None
        if isinstance(passed, dict):
            windows = next((w for _, n, w in PROFILES if n == name), {})
            records += from_headers(list(passed.items()), name, windows, str(error.get("message") or ""),
                                    f"429 body ({name})", now)
        records += _gemini_records(error, name, now)
    return records


def _prune(data, now):
    for connection in [c for c in data if not c.startswith("_")]:
        aliases = data[connection] if isinstance(data[connection], dict) else {}
        for alias in list(aliases):
            kept = {}
            for key, rec in (aliases[alias] if isinstance(aliases[alias], dict) else {}).items():
                if not isinstance(rec, dict):
                    continue
                reset, seen = epoch_of(rec.get("reset_at")), epoch_of(rec.get("observed_at"))
                if reset is not None and reset < now - PRUNE_AFTER_RESET:
                    continue
                if reset is None and (seen is None or seen < now - KEEP_WITHOUT_RESET):
                    continue
                kept[key] = rec
            if kept:
                aliases[alias] = kept
            else:
                del aliases[alias]
        if aliases:
            data[connection] = aliases
        else:
            del data[connection]


def store(connection, alias, records, now=None):
    """QUO-6: the newest record per metric/window replaces the old; stale ones are pruned, under the lock."""
    now = time.time() if now is None else now
    connection = connection or "?"

    def change(data):
        place = data.get(connection) if isinstance(data.get(connection), dict) else {}
        mine = place.get(alias) if isinstance(place.get(alias), dict) else {}
        for rec in records:
            mine[f"{rec['metric']}/{rec['window']}"] = {"connection": connection, "alias": alias, **rec}
        place[alias] = mine
        data[connection] = place
        _prune(data, now)
        data["_why"] = WHY

    shared.current().update_json(QUOTAS, change)


def records(connection=None, alias=None):
    """Every stored record (optionally of one connection and alias), each a dict with connection and alias."""
    found = []
    for conn, aliases in shared.current().read_json(QUOTAS).items():
        if connection is not None and conn != connection or not isinstance(aliases, dict):
            continue
        for name, recs in aliases.items():
            if alias is not None and name != alias or not isinstance(recs, dict):
                continue
            found += [{"connection": conn, "alias": name, **r} for r in recs.values() if isinstance(r, dict)]
    return found


def live(connection=None, alias=None, now=None):
    """QUO-7: records whose reset is still ahead (one without a reset is shown, never enforced)."""
    now = time.time() if now is None else now
    return [r for r in records(connection, alias) if (epoch_of(r.get("reset_at")) or 0) > now]


def observe(alias, connection, base, status, headers, body):
    """QUO-8, the client's observer: store what this response says; on a 429, learn the limits it states."""
    now = time.time()
    name, windows = profile(base)
    pairs = list(headers.items()) if hasattr(headers, "items") else list(headers or ())
    hint = ""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        hint = str(body["error"].get("message") or "")
    found = from_headers(pairs, name, windows, hint, f"headers ({name})", now)
    if status == 429:
        found += retry_record(pairs, name, now)
        if body is not None:
            found += from_body(body, name, now)
    if not found:
        return []
    store(connection, alias, found, now)
    if status == 429:
        limits = {AXES[(r["metric"], r["window"])]: r["limit"] for r in found
                  if (r["metric"], r["window"]) in AXES and isinstance(r["limit"], int) and r["limit"] > 0}
        if limits:
            learn.note_limits(alias, limits, "quota", hint or f"429 from {name}")
    return found


def main():
    """QUO-10."""
    found = sorted(live(), key=lambda r: (r["connection"], r["alias"], r["metric"], r["window"]))
    if not found:
        print(f"no quota record in force ({path()})")
        return 0
    for r in found:
        of = f" of {r['limit']:,}" if isinstance(r.get("limit"), int) else ""
        print(f"{r['connection']}  {r['alias']}  {r['metric']}/{r['window']}: {r.get('remaining')}{of} left, "
              f"resets {r.get('reset_at')}  ({r.get('source')}, seen {r.get('observed_at')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
