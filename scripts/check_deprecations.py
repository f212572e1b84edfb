"""Notice models going away (suite-cli-mcp.md §3.4, DP-1..8; alerts models.md §16). Daily 08:00.

    python -m benchwarmers.scripts.check_deprecations [--quiet] [--dry-run]

Reads every endpoint's `/models`, records what is served in `config/served-snapshot.json` (`last_seen` per
key, `first_missing` from a key's first miss), runs auto-retire (`metrics/admin/retire.py`) on that evidence,
then reports on the registry as auto-retire left it and keeps the `model:` alerts in step with it.
`--quiet` prints problems only; `--dry-run` says what auto-retire would do and writes nothing, calls no model.

Exit 0 with no problems, 1 with problems (structural, paywalled, never served, registered but gone), 2 when
the default endpoint cannot be listed (an outage is not evidence: nothing is written).

Decisions where the spec is silent:
- "New since last check" is reported only when there was a last check: on the first run everything is new.
- "Unregistered that disappeared" lists unregistered keys whose first miss is today (each is said once).
- A model's latest failure class is read from its newest perf row (followed through renames): an answered
  row clears it, an unanswered row without a class is `other` (a timeout-only row is `timeout`).
- An alert that cannot be written prints `could not update alerts: ...` and the run goes on (DP-6).
- The free-tier guard's `model:paid:` alerts are left alone by the `model:` sweep (models.md improvement 1):
  the catalog refresh's price watch raises and clears them.
"""

import datetime
import json
import sys

from ..core import console, fileio, paths
from ..models import alerts, endpoints, registry
from ..providers import renewal
from ..admin import retire

PAID_PREFIX = "model:paid:"  # AL-3/AL-5: the free-tier guard's alerts, never swept here
ALERTS = {  # DP-6: kind of problem -> (alert kind, message, action)
    "never-served": ("registration", "{alias} is registered but {where} has never served {served}",
                     "check the served name for a typo, or add the model to the endpoint"),
    "gone": ("retired", "{alias} is registered but {where} no longer serves {served}",
             "retire it, or re-point it to the name it is served under now{hub}"),
    "structural": ("retired", "{alias} is listed but fails as if it did not exist (structural)",
                   "retire it: the provider has no model behind the name"),
    "entitlement": ("plan", "{alias} is served but this account may not use it (entitlement)",
                    "keep it and watch: a plan or credit change may let it answer"),
    "unclassified": ("registration", "{alias} fails with an error nothing here recognises",
                     "call it once from the dashboard, then add a marker for its error to metrics/models/scoring.py"),
    "paywalled": ("retired", "{alias}'s free tier moved behind a paid slug (paywalled)",
                  "retire it, or register the paid slug if you mean to pay"),
}


def today():
    return datetime.date.today().isoformat()


def registered():
    """`{alias: (served, endpoint, key)}` for every chat registration (DP-1 keys)."""
    default = endpoints.default()
    found = {}
    for alias, reg in registry.registrations().items():
        served = reg.model_name
        if served:
            ep = endpoints.endpoint_name(reg) or default
            found[alias] = (served, ep, endpoints.snapshot_key(served, ep))
    return found


def live_keys(models):
    """DP-2: `(live keys, notes)`; raises the default endpoint's listing error."""
    default = endpoints.default()
    live, notes = set(), []
    for name in endpoints.load():
        mine = {served for served, ep, _ in models.values() if ep == name}
        try:
            listed = set(renewal.models(name))
        except Exception as exc:  # any failure to list is "unreachable"
            if name == default:
                raise
            notes.append(f"cannot reach {name} ({type(exc).__name__}); its models are left as they were")
            listed = mine
        kept = listed if endpoints.recorded_whole(name) else listed & mine
        live.update(endpoints.snapshot_key(served, name) for served in kept)
    return live, notes


def snapshot(previous, live, day):
    """DP-3: the next snapshot from the previous one and the live keys."""
    seen = dict(previous.get("last_seen") or {})
    missing = dict(previous.get("first_missing") or {})
    for key in live:
        seen[key] = day
        missing.pop(key, None)
    for key in seen:
        if key not in live:
            missing.setdefault(key, day)
    return {"updated": day, "last_seen": seen, "first_missing": missing}


def latest_failures(rows):
    """DP-5: `{alias: failure class}` from each alias's newest perf row; answered rows clear it."""
    latest = {}
    for alias, _, ok, failure, _ in rows:
        latest[alias] = "" if ok else failure
    return {a: f for a, f in latest.items() if f}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    unknown = [a for a in argv if a not in ("--quiet", "--dry-run")]
    if unknown:
        print("usage: python -m benchwarmers.scripts.check_deprecations [--quiet] [--dry-run]", file=sys.stderr)
        return 2
    quiet, dry_run = "--quiet" in argv, "--dry-run" in argv
    try:
        default = endpoints.default()
        before = registered()
    except RuntimeError as exc:
        console.say(exc)
        return 1
    try:
        live, notes = live_keys(before)
    except Exception as exc:  # the default endpoint could not be listed
        print(f"cannot reach {endpoints.base(default)}: {exc}")
        print("no snapshot written: an outage is not evidence that anything has gone")
        return 2
    for note in notes:
        print(note)
    where = paths.file("config", "served-snapshot.json")
    previous = fileio.read_json(where)
    day = today()
    snap = snapshot(previous, live, day)
    if not dry_run:
        fileio.write_atomic(where, json.dumps(snap, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    seen_before = previous.get("last_seen") if isinstance(previous.get("last_seen"), dict) else {}
    keys_registered = {key for _, _, key in before.values()}
    gone_other = sorted(k for k, d in snap["first_missing"].items() if d == day and k not in keys_registered)
    new = sorted(live - set(seen_before)) if seen_before else []

    retire_lines, pending = retire.run(live, snap["first_missing"], dry_run=dry_run)
    after = registered()
    key_alias = {key: alias for alias, (_, _, key) in after.items()}
    gone = sorted(k for k in key_alias if k not in live and k in snap["last_seen"])
    never = sorted(k for k in key_alias if k not in live and k not in snap["last_seen"])
    unregistered = sorted(live - set(key_alias))
    rows, _, _ = retire.evidence()
    failing = latest_failures(rows)
    kinds = {"structural": [], "entitlement": [], "paywalled": [], "other": []}
    for key, alias in sorted(key_alias.items()):
        if key in live and failing.get(alias) in kinds:
            kinds[failing[alias]].append(key)

    if not dry_run:
        wrong = set(pending)
        raise_for = [("never-served", k) for k in never] + [("gone", k) for k in gone]
        raise_for += [(name if name != "other" else "unclassified", k) for name in kinds for k in kinds[name]]
        try:
            for kind, key in raise_for:
                if f"model:pending:{key}" in pending:
                    continue
                alias = key_alias[key]
                served, ep, _ = after[alias]
                hub = endpoints.hub(ep) == "openwebui"
                what, message, action = ALERTS[kind]
                text = dict(alias=alias, served=served, where="Open WebUI" if hub else ep,
                            hub=" (in Open WebUI: check the connection still lists it)" if hub else "")
                alerts.raise_alert(f"model:{kind}:{key}", what, message.format(**text), action.format(**text),
                                   alias=alias)
                wrong.add(f"model:{kind}:{key}")
            # models.md improvement 1: the free-tier guard's `model:paid:` alerts are the price watch's to clear,
            # not this sweep's (it would lift the guard a day after it was raised)
            wrong |= {key for key in alerts.active() if key.startswith(PAID_PREFIX)}
            alerts.sweep("model:", wrong)
        except retire.ALERT_ERRORS as exc:
            print(f"could not update alerts: {exc}")

    problems = len(kinds["structural"]) + len(kinds["paywalled"]) + len(never) + len(gone)
    sections = [
        (True, f"AUTO-RETIRE{' (dry run)' if dry_run else ''}:", retire_lines),
        (True, "Listed but failing structurally (no model behind the name):",
         [f"  {key_alias[k]} ({k})" for k in kinds["structural"]]),
        (True, "Free tier retired behind a paid slug:", [f"  {key_alias[k]} ({k})" for k in kinds["paywalled"]]),
        (False, "Unrecognised failure (info):", [f"  {key_alias[k]} ({k})" for k in kinds["other"]]),
        (False, "Served but not permitted for this account (info):",
         [f"  {key_alias[k]} ({k})" for k in kinds["entitlement"]]),
        (True, "Registered but never served:", [f"  {key_alias[k]} ({k})" for k in never]),
        (True, "Registered but no longer served:", [gone_line(k, key_alias[k], snap, day) for k in gone]),
        (False, "Unregistered models that disappeared (info):", [f"  {k}" for k in gone_other]),
        (False, "New since the last check (info):", [f"  {k}" for k in new]),
    ]
    for problem, title, lines in sections:
        if lines and (problem or not quiet):
            print(title)
            for line in lines:
                print(line)
    if not quiet or problems:
        print(f"{len(live)} served, {len(key_alias)} registered, {len(unregistered)} served-but-unregistered")
    if not problems and not quiet:
        print("no registered model has gone missing")
    return 1 if problems else 0


def gone_line(key, alias, snap, day):
    seen, first = snap["last_seen"].get(key, "?"), snap["first_missing"].get(key, day)
    days = (datetime.date.fromisoformat(day) - datetime.date.fromisoformat(first)).days
    hedge = " (could still be a blip)" if days < 1 else ""
    return f"  {alias} ({key}): last seen {seen}, missing {days}d{hedge}"


if __name__ == "__main__":
    sys.exit(main())
