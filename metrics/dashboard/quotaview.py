"""The Quotas page's data (dashboard.md §8.3, QT-1..5), `GET /api/quotas`, plus what the bench's calls cost in tokens.

Four tables, each from its one source: what providers said is left (the quota records, metrics/models/quota.py),
what the bench sent (the usage ledger), which models rest after a rate limit (learn's cooldowns), and
the limits known (entered per connection, learned per model). Calls through the `llm` CLI are in neither
record (BK-6). The provider's raw message behind a learned limit is never sent to the page: it can
carry an account id (FILE-5).

Our addition: `cost`, the per-model token table of metrics/calling/cost.py (COST-2), so the ledger's figures
are seen where the quotas are; it is computed on request and not written (the command writes cost.json).
"""

import datetime
import time

from ..core import fileio, paths
from ..models import connections, learn, quota
from ..calling import cost, ledger

LIMIT_KEYS = ("rpm", "rpd", "tpm", "tpd", "rpmo")
DAY = 86_400


def said(now):
    """QT-2: records whose reset is still ahead, sorted by (connection, alias, metric); unparsable times skipped."""
    rows = []
    for rec in quota.records():
        seen, reset = quota.epoch_of(rec.get("observed_at")), quota.epoch_of(rec.get("reset_at"))
        if seen is None or reset is None or reset <= now:
            continue
        rows.append({"connection": rec["connection"], "alias": rec["alias"],
                     "counts": f"{rec.get('metric')} / {rec.get('window')}",
                     "left": rec.get("remaining"), "of": rec.get("limit"), "resets": rec["reset_at"],
                     "source": rec.get("source") or "", "age_min": max(int((now - seen) // 60), 0),
                     "metric": rec.get("metric") or ""})
    rows.sort(key=lambda r: (r["connection"], r["alias"], r["metric"]))
    return rows


def sent(now):
    """QT-3: per connection, requests (attempts) and tokens (in + out) in the last 24 h and this UTC month."""
    month_start = ledger.month_start(now)
    day, month = {}, {}
    for row in ledger.rows(min(now - DAY, month_start)):
        t = row["t"]
        requests = row.get("attempts") if isinstance(row.get("attempts"), int) else 0
        tokens = sum(v for v in (row.get("tokens_in"), row.get("tokens_out")) if isinstance(v, int))
        for span, start in ((day, now - DAY), (month, month_start)):
            if t >= start:
                each = span.setdefault(row.get("connection") or "?", [0, 0])
                each[0] += requests
                each[1] += tokens
    return [{"connection": c, "requests_24h": day.get(c, [0, 0])[0], "tokens_24h": day.get(c, [0, 0])[1],
             "requests_month": month.get(c, [0, 0])[0], "tokens_month": month.get(c, [0, 0])[1]}
            for c in sorted(set(day) | set(month))]


def _connection(alias):
    try:
        return connections.connection_of(alias)
    except Exception:
        return "?"


def resting(now):
    """QT-4: active cooldowns by `until`: model, connection, whole minutes until it is back, whose wait it is."""
    rows = []
    for alias, entry in learn.cooldowns().items():
        until = datetime.datetime.fromisoformat(entry["until"])
        until = until if until.tzinfo else until.astimezone()
        rows.append({"alias": alias, "connection": _connection(alias), "until": entry["until"],
                     "back_in_min": max(round((until.timestamp() - now) / 60), 0),
                     "wait": "stated by the provider" if entry.get("stated") else "default wait",
                     "epoch": until.timestamp()})
    rows.sort(key=lambda r: r.pop("epoch"))
    return rows


def known():
    """QT-5: a row per connection with an entered limit (from "you"), then a row per learned model limit."""
    rows = []
    entered = fileio.read_json(paths.file("config", "connection-limits.json"))
    for name, limits in sorted(entered.items()):
        if not isinstance(limits, dict):
            continue
        values = {k: limits[k] for k in LIMIT_KEYS
                  if isinstance(limits.get(k), int) and not isinstance(limits.get(k), bool) and limits[k] > 0}
        if values:
            rows.append({"connection": name, "alias": "", "limits": values, "from": "you"})
    for alias, entry in sorted(learn.learned().items()):
        limits = entry.get("limits") if isinstance(entry, dict) else None
        for axis, ev in sorted((limits or {}).items()):
            if isinstance(ev, dict) and isinstance(ev.get("value"), int):
                rows.append({"connection": _connection(alias), "alias": alias, "limits": {axis: ev["value"]},
                             "from": f"learned {str(ev.get('at') or '')[:10]} ({ev.get('where') or '?'})"})
    return rows


def view(now=None):
    """`GET /api/quotas`."""
    now = time.time() if now is None else now
    spent = cost.table()
    return {"ok": True, "errors": [], "said": said(now), "sent": sent(now), "resting": resting(now),
            "known": known(), "keys": list(LIMIT_KEYS),
            "cost": [{"model": name, **figures} for name, figures in sorted(spent.items())]}
