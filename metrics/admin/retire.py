"""Auto-retire: retire what is clearly gone, and only that (suite-cli-mcp.md §3.5, AR-1..7; alerts models.md §16).

`scripts/check_deprecations.py` runs `run()` after each listing check (daily 08:00) with the live set it just
read; `scripts/auto_retire.py` runs it alone, where the live set is what the last check recorded
(`config/served-snapshot.json`: the keys seen on its `updated` day), so no endpoint is listed. A dry run calls
nothing and writes nothing. (A module here, not in the script, so both scripts import it however they are run.)

Evidence (AR-1): perf rows (aliases followed through renames), the last non-perf answer per alias (useful
offloads, saved suite answers that are real answers, dated by file time), and restores from the change log.
A model is retired only when the evidence says it is gone: not served for 3 days; a structural, paywalled or
entitlement failure today that one fresh confirmation call repeats; an unrecognised failure on 3 days; or no
answer for 7 days on 3 days of trying. Rate limits, timeouts, sign-in failures and account-wide quotas alone
never retire anything. When every model on one connection is down at once the connection is the likely
problem: its candidates are held under one `connection:held:` alert instead (AR-4).

Retiring goes through the dashboard's own remove (`admin.modeledit.remove`, `who="auto"`): the retired
record is written first, then the registration leaves the registry, and the reason says why.

Decisions where the spec is silent:
- "Latest fail `other` on ≥ 3 distinct days" counts the distinct days of `other` failures since the floor.
- A model with no failure since its floor and not missing gets no line and no alert, unless it was
  restored and its latest perf row failed before that: then it is pending for the full backstop, 7 days.
- The confirmation call answered with a non-IMMEDIATE failure (a 429, a timeout) also counts as "answered
  the confirmation call": an outage is not evidence of a model being gone.
- AL-2 ("transient trouble, one 429 or a timeout, is never an alert"): a countdown whose only evidence is
  rate limits or timeouts on one day is said (`retires in 7d unless it answers`) but raises no `retiring`
  alert, which would keep the model from explorer seats over one bad morning. A second day of them, or
  any other failure, raises it as AR-6 says.
"""

import csv
import datetime

from ..core import changes, fileio, paths
from ..models import aliases, alerts, connections, endpoints, registry, scoring
from ..calling import client
from ..panel import offload
from ..core.errors import Refusal
from . import modeledit

IMMEDIATE = {"structural", "paywalled", "entitlement"}
MISSING_DAYS = 3
OTHER_DAYS = 3
BACKSTOP_DAYS = 7
CONFIRM_PROMPT = modeledit.RETRY_PROMPT
CONFIRM_SECONDS = 90
QUOTA_MARKERS = ("free-models-per-day", "usage_limit_exceeded")
REASON_CHARS = 400
ALERT_ERRORS = (OSError, ValueError, RuntimeError)  # a locked, unreadable or unwritable alerts.json
TRANSIENT = {"capacity", "timeout"}  # AL-2: trouble that says nothing of the model on its own


def _date(text):
    try:
        return datetime.date.fromisoformat(str(text or "")[:10])
    except ValueError:
        return None


def _int(value):
    try:
        return int(str(value).strip() or 0)
    except ValueError:
        return 0


def _failure(row):
    """An unanswered perf row's class: its `failure`, else `timeout` when it only timed out, else `other`."""
    return (row.get("failure") or "").strip() or ("timeout" if _int(row.get("timeout")) else "other")


def evidence():
    """AR-1: `(rows, last_answer, restored)`; rows are `(alias, date, answered, failure, detail)` by date (an
    answered row's failure is "")."""
    rows = []
    current = aliases.resolver()
    try:
        with open(paths.file("perf", "history.csv"), encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                alias, day = (row.get("model") or "").strip(), _date(row.get("timestamp"))
                if alias and day:
                    ok = _int(row.get("answered")) > 0
                    rows.append((aliases.follow(current, alias), day, ok, "" if ok else _failure(row),
                                 (row.get("detail") or "").strip()))
    except OSError:
        pass
    rows.sort(key=lambda r: r[1])
    last_answer = {}

    def answered(alias, day):
        if day and (alias not in last_answer or day > last_answer[alias]):
            last_answer[alias] = day

    for entry in offload.entries():
        if entry.useful is True:
            answered(entry.model, _date(entry.date))
    for saved in paths.file("suite", "tasks").glob("*/output/*.md"):
        try:
            text, stamp = saved.read_text(encoding="utf-8", errors="replace"), saved.stat().st_mtime
        except OSError:
            continue
        if scoring.outcome(text) is None:
            answered(aliases.follow(current, saved.stem), datetime.date.fromtimestamp(stamp))
    restored = {}
    for line in fileio.read_jsonl(changes.path()):
        if isinstance(line, dict) and line.get("field") == "restored" and _date(line.get("at")):
            alias, day = aliases.follow(current, str(line.get("alias") or "")), _date(line.get("at"))
            restored[alias] = max(day, restored.get(alias, day))
    return rows, last_answer, restored


def state(alias, rows, last_answer, restored, missing_since):
    """AR-2: `{fails, down, missing_since, evidence}` for one alias; `rows` are its own, oldest first."""
    oks = [day for _, day, ok, _, _ in rows if ok] + ([last_answer[alias]] if alias in last_answer else [])
    floor = max(oks + ([restored[alias]] if alias in restored else []), default=None)
    fails = [(day, failure, detail) for _, day, ok, failure, detail in rows
             if not ok and (floor is None or day > floor) and failure != "signin"
             and not any(marker in detail for marker in QUOTA_MARKERS)]
    if missing_since and alias in restored:
        missing_since = max(missing_since, restored[alias])
    latest = rows[-1] if rows else None
    return {"fails": fails, "missing_since": missing_since, "evidence": bool(rows), "restored": restored.get(alias),
            "latest": f"{latest[3]}: {latest[4]}" if latest and latest[4] else (latest[3] if latest else ""),
            "down": bool(missing_since) or (bool(latest) and not latest[2])}


def decide(alias, info, today, where, renamed=""):
    """AR-3: `(action, days, why)`; action is `retire`, `candidate`, `confirm`, `pending` or None.

    `where` names what no longer serves it (`Open WebUI` or its endpoint); `renamed` is the live name that
    ends with `.<served>` on an Open WebUI hub, when there is one."""
    fails, missing = info["fails"], info["missing_since"]
    if missing and renamed:
        return "pending", 1, f"served as {renamed} now — run reprefix, not a retirement"
    clocks = []
    if missing:
        gone_for = (today - missing).days
        if gone_for >= MISSING_DAYS:
            return "retire", 0, f"not served by {where} since {missing.isoformat()}"
        clocks.append((MISSING_DAYS - gone_for, f"not served by {where} since {missing.isoformat()}"))
    if fails:
        day, failure, detail = fails[-1]
        why = f"{failure}: {detail}" if detail else failure
        if failure in IMMEDIATE and (today - day).days <= 1:
            return "confirm", 0, why
        other_days = len({d for d, f, _ in fails if f == "other"})
        if failure == "other":
            if other_days >= OTHER_DAYS:
                return "candidate", 0, f"unrecognised failure on {other_days} days — {why}"
            clocks.append((OTHER_DAYS - other_days, why))
        span, days = (today - fails[0][0]).days, len({d for d, _, _ in fails})
        if span >= BACKSTOP_DAYS and days >= 3:
            return "candidate", 0, f"no answer for {span} days — {why}"
        clocks.append((BACKSTOP_DAYS - span, why))
    if not clocks and info["down"] and info["restored"]:  # every failure predates its restore: the clocks restart
        return "pending", BACKSTOP_DAYS, f"{info['latest']} (counted again from {info['restored'].isoformat()})"
    if not clocks:
        return None, 0, ""
    left, why = min(clocks)
    return "pending", max(left, 1), why


def transient(info):
    """AL-2: whether a countdown rests on one day of rate limits or timeouts alone (no alert for it)."""
    fails = info["fails"]
    return (not info["missing_since"] and bool(fails) and all(failure in TRANSIENT for _, failure, _ in fails)
            and len({day for day, _, _ in fails}) == 1)


def held(decisions, states, tags):
    """AR-4: `{connection: [aliases held]}`: a tagged connection with candidates whose models with evidence
    (two or more) are all down."""
    found = {}
    for alias, (action, _, _) in decisions.items():
        conn = tags.get(alias, "?").split("/", 1)[0]
        if action not in ("candidate", "confirm") or conn == "?":
            continue
        group = [a for a, s in states.items() if tags.get(a, "?").split("/", 1)[0] == conn and s["evidence"]]
        if len(group) >= 2 and all(states[a]["down"] for a in group):
            found.setdefault(conn, []).append(alias)
    return found


def confirm(alias, today):
    """AR-5: one fresh call; the IMMEDIATE class it fails with, and what it said, or `("", "")`."""
    reply = client.chat(alias, CONFIRM_PROMPT, timeout=CONFIRM_SECONDS, purpose="auto-retire")
    text = client.output(reply, CONFIRM_SECONDS)
    failure = scoring.failure_class(text, 1)
    if failure in IMMEDIATE:
        return failure, f"— confirmed {today.isoformat()}: {failure}: {' '.join(text.split())[:200]}"
    return "", ""


def live_from_snapshot():
    """The keys the last listing check saw, and its `first_missing` map."""
    snap = fileio.read_json(paths.file("config", "served-snapshot.json"))
    seen = snap.get("last_seen") if isinstance(snap.get("last_seen"), dict) else {}
    missing = snap.get("first_missing") if isinstance(snap.get("first_missing"), dict) else {}
    return {k for k, d in seen.items() if d == snap.get("updated")}, missing


def run(live=None, first_missing=None, dry_run=False, today=None):
    """Decide and (unless `dry_run`) act: `(lines, keys of the pending alerts)`; `([], set())` on an empty data
    folder."""
    today = today or datetime.date.today()
    if live is None:
        live, first_missing = live_from_snapshot()
    first_missing = first_missing or {}
    models = {a: r for a, r in registry.registrations().items() if r.model_name}
    if not models:
        return [], set()
    rows, last_answer, restored = evidence()
    default = endpoints.default() if endpoints.readable() else None
    by_alias, states, decisions, keys, tags = {}, {}, {}, {}, {}
    for row in rows:
        by_alias.setdefault(row[0], []).append(row)
    for alias, reg in models.items():
        served, ep = reg.model_name, endpoints.endpoint_name(reg) or default
        keys[alias] = endpoints.snapshot_key(served, ep)
        tags[alias] = connections.full_tag_of(alias)
        missing = _date(first_missing.get(keys[alias])) if keys[alias] not in live else None
        states[alias] = state(alias, by_alias.get(alias, []), last_answer, restored, missing)
        openwebui = bool(ep) and endpoints.hub(ep) == "openwebui"
        renamed = next((k for k in sorted(live) if openwebui and k.endswith("." + served)), "")
        decisions[alias] = decide(alias, states[alias], today, "Open WebUI" if openwebui else ep, renamed)
    holds = held(decisions, states, tags)
    on_hold = {a for group in holds.values() for a in group}
    lines, pending = [], {}
    for alias, (action, days, why) in decisions.items():
        if alias in on_hold or action is None:
            continue
        if action == "pending":
            lines.append(f"  {alias} retires in {days}d unless it answers — {why}")
            pending[alias] = (days, why)
            continue
        if action == "confirm":
            if dry_run:
                why += " (would confirm with one call)"
            else:
                failure, said = confirm(alias, today)
                if not failure:
                    why = "failed the 5am probe, answered the confirmation call"
                    lines.append(f"  {alias} retires in 1d unless it answers — {why}")
                    pending[alias] = (1, why)
                    continue
                why = f"{why} {said}"
        if dry_run:
            lines.append(f"  would retire {alias}: {why}")
            continue
        try:
            modeledit.remove({"alias": alias, "reason": f"auto: {why}"[:REASON_CHARS]}, who="auto")
            lines.append(f"  retired {alias}: {why}")
        except Refusal as exc:
            lines.append(f"  could not retire {alias}: {'; '.join(exc.messages)}")
    for conn, group in sorted(holds.items()):
        lines.append(f"  HELD on {conn}: every model on it is down at once, so the connection is the likely "
                     f"problem; not retiring {', '.join(group)}")
    alerted = {alias: said for alias, said in pending.items() if not transient(states[alias])}
    if not dry_run:
        try:
            for alias, (days, why) in alerted.items():
                alerts.raise_alert(f"model:pending:{keys[alias]}", "retiring",
                                   f"{alias} retires in {days} day{'s' if days != 1 else ''} unless it answers",
                                   f"{why}. Retry it from the dashboard's Models page, or retire it now", alias=alias)
            for conn, group in holds.items():
                alerts.raise_alert(f"connection:held:{conn}", "connection",
                                   f"every model on {conn} is down at once: {', '.join(group)}",
                                   f"check the {conn} connection (key, credit, outage); if the models are really gone, "
                                   "retire them all from the dashboard", aliases=group)
            alerts.sweep("connection:", {f"connection:held:{conn}" for conn in holds})
        except ALERT_ERRORS as exc:  # alerting is never fatal (DP-6)
            lines.append(f"  could not update alerts: {exc}")
    return lines, {f"model:pending:{keys[a]}" for a in alerted}
