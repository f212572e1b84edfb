"""The model popup's writes: role, ad hoc, question types and alias; retire; restore; retry
(dashboard.md MP-6..18, TEST-1..3).

Every rule is checked before anything is written (MP-7, IMP-4: the registry line a rename rewrites is
counted first), each file is written atomically under its lock, and each change is logged with the
caller. Evidence (offloads, perf history, suite outputs, notes) is never deleted: a retired model keeps
its record, and a rename is followed by every alias-keyed reader through alias-history.json.

Decisions where the spec leaves room or where this build stops short:
- Adding a question type to a decision model asks it one fixed question of that type (`PROBES`, MP-7)
  through the Decisions API (`shape.decide`); an answer that is no object, or says `error`, is no answer.
- IMP-9: restore refuses only when the same served name is registered again on the same endpoint.
"""

import csv
import datetime
import io
import json
import re
import subprocess

from ..core import changes, fileio, keys, paths, records
from ..core.errors import Invalid, Unusable
from ..models import aliases, endpoints, registry, scoring
from ..calling import client
from ..panel import collections, roles, roster, shape

ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,63}$")
QUESTION_TYPES = ("noul", "choice", "score")
RETRY_PROMPT = "Reply with exactly one word: ready"
RETRY_SECONDS = 90
SYNC_SECONDS = 120
SYNC_BY_HAND = "python -m benchwarmers.scripts.sync_config"
PERF_COLUMNS = ("timestamp", "model", "prompt", "n", "p50_s", "p95_s", "min_s", "max_s", "chars_per_s", "answered",
                "refused", "error", "timeout", "failure", "detail", "tokens_per_s")
F = {"roles": ("config", "model-roles.json"), "yaml": ("config", registry.NAME),
     "history": ("config", "alias-history.json"), "options": ("config", "model-options.json"),
     "decision": ("config", registry.DECISIONS), "retired": ("config", roster.RETIRED),
     "collections": ("config", collections.COLLECTIONS), "alerts": ("metrics", "alerts.json")}


def shown(name):
    return "/".join(F[name])


def where(name):
    return paths.file(*F[name])


UNCHANGED = {"changed": [], "sync": ""}  # what a refused edit's reply says beside its errors


def sync():
    """MP-9: run the registry sync script; the write is not undone when it fails."""
    try:
        done = subprocess.run(paths.module_command("scripts.sync_config"), capture_output=True, text=True, timeout=SYNC_SECONDS,
                              cwd=str(paths.CODE))
    except (OSError, subprocess.SubprocessError) as exc:
        return f"could not run the registry sync ({exc}); run {SYNC_BY_HAND} by hand"
    if done.returncode == 0:
        return "synced to the llm CLI"
    said = (done.stderr or done.stdout).strip()[:300]
    return f"the registry sync exited {done.returncode}: {said} — run {SYNC_BY_HAND} by hand"


# -- POST /api/model ------------------------------------------------------------------------------

def _rename_errors(alias, new, found):
    if not ALIAS.match(new):
        return ["alias must be letters, digits, '.', '-' or '_', start with a letter or digit, 2-64 characters, "
                "no spaces"]
    if new in found:
        return [f"'{new}' is already the alias of {found[new]['served']}"]
    history = aliases.history()
    if new in history:
        return [f"'{new}' is a retired alias (it became '{aliases.follow(aliases.resolver(), new)}'); a retired name "
                "is never reused, because the run notes still say it"]
    if new in roster.retired().models:
        return [f"'{new}' was removed from the bench; a retired name is never reused, because the run notes still "
                "say it"]
    if any(a.lower() == new.lower() and a != alias for a in found):
        return [f"'{new}' differs from an existing alias only by case; the CLI is case-sensitive, people are not"]
    return []


# MP-7: one fixed question per type, about one fixed state, that a decision model taking the type answers.
PROBE_STATE = "A pull request renames a variable in utils.py and adds a test; every check passed."
PROBES = {
    "noul": {"type": "noul", "instructions": "Does this change need a human reviewer's attention?"},
    "choice": {"type": "choice", "instructions": "What kind of change is this?",
               "criteria": {"refactor": "code reorganised, behaviour kept", "feature": "new behaviour"}},
    "score": {"type": "score", "instructions": "How risky is this change, from 0 (none) to 1 (very)?"},
}


def question_probe(alias, kind):
    """Why `alias` did not answer the `kind` probe question, or "" when it did (MP-7)."""
    entry = registry.decision_models().get(alias)
    if entry is None:
        return "it is not in config/decision-models.json"
    try:
        answers = shape.decide(alias, entry, PROBE_STATE, {f"probe_{kind}": PROBES[kind]})
    except Exception as exc:
        return shape.error_text(exc)
    answer = answers.get(f"probe_{kind}")
    if not isinstance(answer, dict) or answer.get("error"):
        return f"its reply held no answer to it ({keys.cut(json.dumps(answer), 120)})"
    return ""


def registered(body):
    """`(model directory, the body's alias, its entry or None)`: MP-6's and MP-10's first check, one place."""
    found = roster.directory()
    alias = body.get("alias")
    return found, alias, found.get(alias) if isinstance(alias, str) else None


def change(body, who):
    """MP-6..8: `POST /api/model`."""
    found, alias, entry = registered(body)
    if entry is None:
        raise Invalid(f"'{alias}' is not a registered alias", **UNCHANGED)
    decision = entry.get("kind") == "decision"
    new_alias, new_role = records.text(body.get("new_alias")), records.text(body.get("new_role"))
    ad_hoc = body.get("new_ad_hoc")
    errors = []
    if ad_hoc is not None and not isinstance(ad_hoc, bool):
        errors.append(f"ad_hoc must be true or false; got {ad_hoc!r}")
    types = None
    if decision and body.get("new_question_types") is not None:
        asked = body["new_question_types"]
        asked = asked if isinstance(asked, list) else [asked]
        types = [t for t in QUESTION_TYPES if t in asked]
        if not types or any(t not in QUESTION_TYPES for t in asked):
            errors.append("question types must be one or more of noul, choice, score")
        for added in (t for t in types if t not in entry["question_types"]):
            failure = question_probe(alias, added)
            if failure:
                errors.append(f"{alias} did not answer a {added} question: {failure}; not added")
        if types == entry["question_types"]:
            types = None
    role_change = bool(new_role) and new_role != entry["role"]
    if role_change:
        if "decision" in (new_role, entry["role"]):
            errors.append("the decision role is fixed: a decision model cannot answer chat, and a chat model cannot "
                          "answer typed questions")
        elif new_role not in roles.load()["roles"]:
            errors.append(f"role must be one of {', '.join(sorted(roles.load()['roles']))}; got '{new_role}'. "
                          "New roles are added in config/model-roles.json, not here")
    rename = bool(new_alias) and new_alias != alias
    if rename:
        errors += _rename_errors(alias, new_alias, found)
        count = registry.blocks_of(alias)
        if not decision and not errors and count != 1:
            errors.append(f"expected exactly one 'model_id: {alias}' line in extra-openai-models.yaml, found {count}; "
                          "nothing renamed")
    ad_change = isinstance(ad_hoc, bool) and ad_hoc != entry["ad_hoc"]
    if not errors and not (rename or role_change or ad_change or types is not None):
        errors.append("nothing to change")
    if errors:
        raise Invalid(*errors, **UNCHANGED)
    changed = []
    if role_change:
        fileio.update(where("roles"), lambda d: _models(d).__setitem__(alias, new_role))
        changes.log(who, alias, "role", entry["role"], new_role)
        changed.append(shown("roles"))
    if ad_change:
        fileio.update(where("roles"), lambda d: _set_ad_hoc(d, alias, ad_hoc))
        changes.log(who, alias, "ad_hoc", entry["ad_hoc"], ad_hoc)
        changed.append(shown("roles"))
    if types is not None:
        fileio.update(where("decision"), lambda d: d[alias].__setitem__("question_types", types))
        changes.log(who, alias, "question_types", entry["question_types"], types)
        changed.append(shown("decision"))
    report = ""
    if rename:
        changed += _rename(alias, new_alias, decision)
        changes.log(who, alias, "alias", alias, new_alias)
        report = "" if decision else sync()
    return {"ok": True, "errors": [], "changed": list(dict.fromkeys(changed)), "sync": report}


def _models(data):
    if not isinstance(data.get("models"), dict):
        data["models"] = {}
    return data["models"]


def _set_ad_hoc(data, alias, on):
    listed = {a for a in data.get("ad_hoc") or [] if isinstance(a, str)} - {alias}
    data["ad_hoc"] = sorted(listed | ({alias} if on else set()))


def _rename(old, new, decision):
    """MP-8's rename steps 1-4; returns the files written."""
    changed = []
    if decision:
        fileio.update(where("decision"), lambda d: d.__setitem__(new, d.pop(old)))
        changed.append(shown("decision"))
    else:
        registry.rename(old, new)
        changed.append(shown("yaml"))
    fileio.update(where("history"), lambda d: d.__setitem__(old, new))
    changed.append(shown("history"))

    def move_role(data):
        moved = False
        models = data.get("models")
        if isinstance(models, dict) and old in models:
            models[new] = models.pop(old)
            moved = True
        if old in (data.get("ad_hoc") or []):
            _set_ad_hoc(data, old, False)
            _set_ad_hoc(data, new, True)
            moved = True
        return moved

    if fileio.update(where("roles"), move_role):
        changed.append(shown("roles"))
    def move_options(data):
        if old not in data:
            return False
        data[new] = data.pop(old)
        return True

    if fileio.update(where("options"), move_options):
        changed.append(shown("options"))
    return changed


# -- POST /api/remove -----------------------------------------------------------------------------

def _drop_from_collections(alias, who):
    """MP-13: `{collection: fields}` it was dropped from; nothing when collections.json is unreadable."""
    if collections.collections_problem():
        return {}
    dropped = {}

    def drop(data):
        for name, c in data.items():
            if not isinstance(c, dict):
                continue
            members = c.get("members") if isinstance(c.get("members"), list) else []
            fields = (["members"] if alias in members else []) + (["merger"] if c.get("merger") == alias else [])
            if fields:
                old = dict(c)
                if "members" in fields:
                    c["members"] = [m for m in members if m != alias]
                if "merger" in fields:
                    c["merger"] = ""
                dropped[name] = (fields, old, dict(c))

    fileio.update(where("collections"), drop)
    for name, (_, old, new) in dropped.items():
        changes.log(who, alias, f"collection {name}", old, new)
    return {name: fields for name, (fields, _, _) in dropped.items()}


def remove(body, who):
    """MP-10..13: retire a model; no evidence is deleted."""
    _, alias, entry = registered(body)
    if entry is None:
        raise Invalid(f"'{alias}' is not a registered alias", **UNCHANGED)
    decision = entry.get("kind") == "decision"
    reason = records.text(body.get("reason")) or "retired by hand"
    if not decision:
        count = registry.blocks_of(alias)
        if count != 1:
            raise Invalid(f"expected one registry block for '{alias}', found {count}; nothing removed", **UNCHANGED)
    changed = []
    record = {"served": entry["served"], "tag": entry.get("tag", ""), "role": entry["role"],
              "at": changes.now_iso(), "by": who, "why": reason,
              "endpoint": entry.get("endpoint") or "?"}
    if entry["ad_hoc"]:
        record["ad_hoc"] = True
    options = None if decision else fileio.read_json(where("options")).get(alias)
    if decision:
        record["decision"] = dict(registry.decision_models()[alias].stored)
    elif isinstance(options, dict):
        record["options"] = options
    # the retired record first: whatever fails after it, Restore can still bring the model back whole
    fileio.update(where("retired"), lambda d: d.__setitem__(alias, record))
    changed.append(shown("retired"))
    if decision:
        fileio.update(where("decision"), lambda d: d.pop(alias, None))
        changed.append(shown("decision"))
    else:
        registry.remove_registration(alias)
        changed.append(shown("yaml"))
        if isinstance(options, dict):
            fileio.update(where("options"), lambda d: d.pop(alias, None))
            changed.append(shown("options"))
    dropped = _drop_from_collections(alias, who)
    if dropped:
        fileio.update(where("retired"), lambda d: d[alias].__setitem__("collections", dropped))
        changed.append(shown("collections"))

    def forget(data):
        had = alias in (data.get("models") or {}) or alias in (data.get("ad_hoc") or [])
        if isinstance(data.get("models"), dict):
            data["models"].pop(alias, None)
        if isinstance(data.get("ad_hoc"), list):
            data["ad_hoc"] = [a for a in data["ad_hoc"] if a != alias]
        return had

    if fileio.update(where("roles"), forget) or decision:
        changed.append(shown("roles"))
    cleared = _clear_alerts(lambda key, alert: key.startswith("model:") and key.endswith(f":{entry['served']}"))
    changed += [f"alert {key}" for key in cleared]
    changes.log(who, alias, "removed", entry["served"], reason)
    return {"ok": True, "errors": [], "changed": list(dict.fromkeys(changed)), "sync": "" if decision else sync()}


def _clear_alerts(matches):
    def clear(data):
        gone = [k for k, v in data.items() if matches(k, v if isinstance(v, dict) else {})]
        for k in gone:
            del data[k]
        return gone
    if not fileio.exists(where("alerts")):
        return []
    return fileio.update(where("alerts"), clear)


# -- POST /api/restore ----------------------------------------------------------------------------

def _return_to_collections(alias, recorded, who):
    """MP-17: back into the collections that still exist and have room; returns whether any changed."""
    if not recorded or collections.collections_problem():
        return False
    limit = collections.settings().max_calls
    back = {}

    def put(data):
        for name, fields in recorded.items():
            c = data.get(name)
            if not isinstance(c, dict) or not isinstance(fields, list):
                continue
            old = dict(c)
            members = c.get("members") if isinstance(c.get("members"), list) else []
            if "members" in fields and alias not in members and len(members) < limit:
                c["members"] = members + [alias]
            if "merger" in fields and not c.get("merger"):
                c["merger"] = alias
            if c != old:
                back[name] = (old, dict(c))

    fileio.update(where("collections"), put)
    for name, (old, new) in back.items():
        changes.log(who, alias, f"collection {name}", old, new)
    return bool(back)


def restore(body, who):
    """MP-14..17: put a retired model back exactly as it was."""
    alias = body.get("alias")
    gone = roster.retired().models
    if not isinstance(alias, str) or alias not in gone:
        raise Invalid(f"'{alias}' is not a retired alias", **UNCHANGED)
    entry = gone[alias]
    endpoint = entry.endpoint or "?"
    try:
        known = endpoints.load()
    except Unusable as exc:
        raise Invalid(str(exc), **UNCHANGED) from exc
    if endpoint != "?" and endpoint not in known:
        raise Invalid(f"its endpoint {endpoint} was removed; add an endpoint named {endpoint} again, then restore",
                      **UNCHANGED)
    found = roster.directory()
    served = entry.served
    changed = []
    decision = entry.decision is not None
    if decision:
        if alias in found or any(e.get("kind") == "decision" and e["served"] == served and e["endpoint"] == endpoint
                                 for e in found.values()):
            raise Invalid(f"{served} is on the bench again; nothing to restore", **UNCHANGED)
        fileio.update(where("decision"), lambda d: d.__setitem__(alias, dict(entry.decision)))
        changed.append(shown("decision"))
    else:
        target = endpoint if endpoint in known else roster.default_endpoint()
        again = [a for a, e in found.items() if e["served"] == served and e.get("endpoint") == target]
        if alias in found or again:
            raise Invalid(f"{served} is registered again as '{(again or [alias])[0]}'; nothing to restore",
                          **UNCHANGED)
        registry.add_registration(alias, served, target)
        changed.append(shown("yaml"))
        if entry.options is not None:
            fileio.update(where("options"), lambda d: d.__setitem__(alias, dict(entry.options)))
            changed.append(shown("options"))
    role, ad_hoc = entry.role or "general", entry.ad_hoc
    if decision or role != "general" or ad_hoc:
        def put_role(data):
            if role != "general":
                _models(data)[alias] = role
            if ad_hoc:
                _set_ad_hoc(data, alias, True)
        fileio.update(where("roles"), put_role)
        changed.append(shown("roles"))
    if _return_to_collections(alias, entry.collections, who):
        changed.append(shown("collections"))
    fileio.update(where("retired"), lambda d: d.pop(alias, None))
    changed.append(shown("retired"))
    changes.log(who, alias, "restored", None, served)
    return {"ok": True, "errors": [], "changed": changed, "sync": "" if decision else sync()}


# -- POST /api/retry ------------------------------------------------------------------------------

def retry(body, who):
    """MP-18: one call now; an answer is evidence, so the retirement countdown resets."""
    alias = body.get("alias")
    if not isinstance(alias, str) or alias not in registry.registrations():
        raise Invalid(f"'{alias}' is not registered", **UNCHANGED)
    reply = client.chat(alias, RETRY_PROMPT, timeout=RETRY_SECONDS, purpose="retry")
    text = client.output(reply, RETRY_SECONDS)
    failure = scoring.failure_class(text, 1)
    if failure:
        said = " ".join(text.split())[:200]
        raise Invalid(f"{alias} still fails ({failure}): {said}", **UNCHANGED)
    seconds = float(reply.get("seconds") or 0.0)
    stamp = datetime.datetime.now().astimezone().isoformat(timespec="seconds")  # IMP-13: with its offset
    row = (stamp, alias, "retry", 1, seconds, seconds, seconds, seconds, round(len(reply.get("text", "")) / seconds, 2)
           if seconds else 0.0, 1, 0, 0, 0, "", "retry from the dashboard", "")
    _append_perf(row)
    served = registry.names().get(alias, "")
    cleared = _clear_alerts(lambda key, alert: alert.get("kind") == "retiring" and
                            (alert.get("alias") == alias or key == f"model:pending:{served}"))
    changes.log(who, alias, "retried", None, f"answered in {seconds:.1f}s")
    return {"ok": True, "errors": [], "sync": "",
            "changed": [f"{alias} answered in {seconds:.1f}s"] + [f"cleared {key}" for key in cleared]}


def _append_perf(row):
    path = paths.file("perf", "history.csv")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if not path.exists() or path.stat().st_size == 0:
        writer.writerow(PERF_COLUMNS)
    writer.writerow(row)
    fileio.append_bytes(path, out.getvalue().encode("utf-8"))
