"""The Endpoints page: its views and writes (dashboard.md EP-1..15; the sign-in flows of §8.6 are
`admin.connect`, which saves through `save()` here).

`view()` is `GET /api/endpoints` with what each endpoint block shows; `save()` adds an endpoint, changes its
key, or only tests it (`POST /api/endpoint`); `remove()` and `make_default()` are the row actions;
`connections_view()` and `save_limits()` are the "Rate limits per connection" panel. Every rule is checked
before the network is asked or a file is written, and a key goes to llm's key store (`core.keys`), never
into the data folder and never into a reply.

Decisions where the spec leaves room:
- A new endpoint's kind, when the form leaves it out, is the one EP-11 infers from the URL (as `scripts/init.py`
  does); an endpoint saved without any key (a local runtime) names none, so it shows "no key needed" rather than
  a missing key.
- A new endpoint whose name is already a key in llm's key store may use that key (leave the key blank); typing a
  different one is refused rather than overwriting a key this install did not make (CN-2's rule, applied here).
- Removing an endpoint with its models checks every model's registry block first and retires nothing unless all
  can be retired (IMP-10); the key is never deleted.
- The served lists come from the daily served check's snapshot (`config/served-snapshot.json`); until that check
  has run, each block lists the models on the bench and says the rest are in the onboarding picker.
"""

from ..core import changes, fileio, keys, paths, records
from ..core.errors import Invalid
from ..models import connections, endpoints, registry
from ..providers import renewal
from ..panel import roster
from . import modeledit

LIMIT_KEYS = ("rpm", "rpd", "tpm", "tpd", "rpmo")
LIMIT_LABELS = {"rpm": "requests per minute", "rpd": "requests per day", "tpm": "tokens per minute",
                "tpd": "tokens per day", "rpmo": "requests per calendar month (UTC)"}
DIALOG_APIS = ("chat", "anthropic", "gemini")  # `responses` is reserved to Connect (EP-4)


def models_on(name):
    """Aliases (chat and decision) whose endpoint is `name`, sorted."""
    return sorted(a for a, e in roster.directory().items() if e.get("endpoint") == name)


def snapshot():
    data = fileio.read_json(paths.file("config", "served-snapshot.json"))
    return {"updated": str(data.get("updated") or ""),
            "last_seen": data.get("last_seen") if isinstance(data.get("last_seen"), dict) else {},
            "first_missing": data.get("first_missing") if isinstance(data.get("first_missing"), dict) else {}}


def _served_by(found, default_name, seen):
    """EP-3: `{endpoint: {served: last-seen day}}` from the snapshot's keys (`served@ep`, or bare on the default)."""
    out = {name: {} for name in found}
    for key, day in seen.items():
        served, mark, ep = key.rpartition("@")
        if not (mark and ep in found):
            served, ep = key, default_name
        if ep in out:
            out[ep][served] = str(day)
    return out


def view():
    """EP-11 `GET /api/endpoints`, each row with its EP-3 table; never a key. Raises on an unreadable file."""
    found = endpoints.load()
    default_name = endpoints.default() if found else None
    directory = roster.directory()
    snap = snapshot()
    served = _served_by(found, default_name, snap["last_seen"])
    rows = []
    for name, entry in found.items():
        on_bench = sorted(({"alias": a, "served": e["served"], "decision": e.get("kind") == "decision",
                            "connection": "decision" if e.get("kind") == "decision" else e["tag"].split("/", 1)[0]}
                           for a, e in directory.items() if e.get("endpoint") == name),
                          key=lambda r: r["served"].lower())
        benched = {r["served"] for r in on_bench}
        more = sorted(({"served": s, "day": day, "current": day == snap["updated"]}
                       for s, day in served[name].items() if s not in benched), key=lambda r: r["served"].lower())
        rows.append({"name": name, "base": entry.base.rstrip("/"), "default": name == default_name,
                     "kind": entry.kind, "hub": entry.hub, "api": entry.api, "key_name": entry.key,
                     "key_set": bool(keys.key(entry.key)), "models": len(on_bench),
                     "connect": renewal.signed_in(entry.connect), "bench": on_bench, "served": more})
    return {"ok": True, "errors": [], "endpoints": rows, "updated": snap["updated"]}


def _body(body):
    fields = {k: records.text(body.get(k)) for k in ("name", "base", "key", "kind", "hub", "admin", "api")}
    fields["name"] = fields["name"].lower()
    fields["base"] = fields["base"].rstrip("/")
    return fields


def _problems(f, new, found):
    """EP-4's checks, all of them, before any call."""
    errors = []
    if f["api"] and f["api"] not in DIALOG_APIS:
        errors.append("api: one of " + ", ".join(DIALOG_APIS))
    if f["kind"] and f["kind"] not in endpoints.KINDS:
        errors.append("kind: one of " + ", ".join(endpoints.KINDS))
    elif f["kind"] == "hub" and f["hub"] not in endpoints.HUBS:
        errors.append("hub: which hub it is, one of " + ", ".join(endpoints.HUBS))
    name = f["name"]
    taken = set(found) | set(keys.stored())
    if not endpoints.valid_name(name):
        errors.append("name: 2-32 lower-case letters, digits or '-', e.g. openrouter")
    elif new and name in found:
        errors.append(f"there is already an endpoint named {name}: give this one its own name, "
                      f"e.g. {endpoints.free_name(name, taken)}, or use Change key on {name}")
    elif new and f["key"] and keys.stored().get(name) not in (None, f["key"]):
        errors.append(f"a key named {name} is already in the llm key store: leave the key blank to use it, "
                      f"or give this endpoint another name, e.g. {endpoints.free_name(name, taken)}")
    if not endpoints.BASE_RULE.match(f["base"]):
        errors.append("base URL must start http:// or https://, e.g. https://openrouter.ai/api/v1")
    old = found.get(name)
    if old and not errors and old.base.rstrip("/") != f["base"]:
        count = len(models_on(name))
        if count:
            errors.append(f"{count} model(s) are registered on {name} at its current URL; a new URL would strand "
                          "them. Add it under a new name instead")
    return errors


def _entry(f, old, new, extra=None):
    """EP-5: the entry as it will be written (built on the old one's stored fields, so none it does not know is
    dropped), and the secret the test uses. `extra` is a sign-in's (CN-4): the provider's entry fields and the
    `connect` record; headers an entry already has are never rewritten."""
    entry = dict(old.stored) if old else {"key": f["name"], "kind": f["kind"] or endpoints.inferred_kind(f["base"])}
    if f["key"]:
        entry.pop("connect", None)  # a typed key replaces a sign-in
        entry["key"] = entry.get("key") or f["name"]
    for field, value in (extra or {}).items():
        if not (field == "headers" and entry.get("headers")):
            entry[field] = value
    entry["base"] = f["base"]
    if new and f["api"]:
        if f["api"] == "chat":
            entry.pop("api", None)
        else:
            entry["api"] = f["api"]
    if f["kind"]:
        entry["kind"] = f["kind"]
        if f["kind"] == "hub":
            entry["hub"] = f["hub"]
        else:
            entry.pop("hub", None)
    secret = f["key"] or keys.key(entry.get("key") or "")
    if new and not secret:
        entry["key"] = ""  # a runtime that needs no key names none (module docstring)
    return entry, secret


def save(body, who, extra=None):
    """EP-4..7: `POST /api/endpoint` — test, add, or change a key; a sign-in's save (CN-4) passes `extra`."""
    f = _body(body)
    found = endpoints.load()
    new = bool(body.get("new")) or f["name"] not in found
    errors = _problems(f, new, found)
    if errors:
        raise Invalid(*errors)
    entry, secret = _entry(f, found.get(f["name"]), new, extra)
    count, note = endpoints.listing_test(endpoints.record(f["name"], entry), secret)
    if count is None:
        raise Invalid(note)
    if body.get("test") is True:
        return {"ok": True, "errors": [], "served": count, "note": note}
    if f["key"] and keys.stored().get(entry["key"]) != f["key"]:
        keys.set_key(entry["key"], f["key"])
    if f["admin"] and endpoints.record(f["name"], entry).kind == "hub":
        admin_name = entry.get("admin_key") or f"{entry['key'] or f['name']}-admin"
        keys.set_key(admin_name, f["admin"])
        note = (note + f" The admin key is kept as {admin_name}.").strip()

    def put(data):
        if new and f["name"] in data:  # added meanwhile, by another process
            raise Invalid(f"there is already an endpoint named {f['name']}")
        data[f["name"]] = entry

    fileio.update(endpoints.path(), put)
    changes.log(who, "", "endpoint", None, f"{f['name']} {f['base']}")
    return {"ok": True, "errors": [], "served": count, "note": note}


def remove(body, who):
    """EP-8: `POST /api/endpoint/remove {name, with_models}`; the key stays in the key store."""
    name = records.text(body.get("name")).lower()
    found = endpoints.load()
    if name not in found:
        raise Invalid(f"no endpoint '{name}'")
    if name == endpoints.default():
        raise Invalid("the default endpoint cannot be removed: make another one the default first")
    on_it = models_on(name)
    if on_it and body.get("with_models") is not True:
        raise Invalid(f"{len(on_it)} model(s) are on it ({', '.join(on_it)}): remove it with them, "
                      "or retire them first")
    chat = [a for a in on_it if a in registry.registrations()]
    stuck = [a for a in chat if registry.blocks_of(a) != 1]
    if stuck:  # IMP-10: checked for all before the first retirement
        raise Invalid(f"{', '.join(stuck)} cannot be retired from the dashboard (not exactly one registry block); "
                      f"nothing retired and {name} is still there")
    retired = []
    for alias in on_it:
        try:
            modeledit.remove({"alias": alias, "reason": f"its endpoint {name} was removed"}, who)
        except Invalid as exc:
            raise Invalid(f"stopped at {alias} after retiring {len(retired)} of {len(on_it)}; {name} is still there",
                          *exc.messages) from exc
        retired.append(alias)
    fileio.update(endpoints.path(), lambda data: data.pop(name, None))
    changes.log(who, "", "endpoint removed", name, f"with {len(retired)} model(s)" if retired else None)
    note = (f"{len(retired)} model(s) retired with it, restorable once an endpoint named {name} exists again; "
            if retired else "") + "its key stays in the llm key store; `llm keys` lists it"
    return {"ok": True, "errors": [], "retired": retired, "note": note}


def _rekey(key, old, new, known):
    """EP-9: a default-endpoint key (bare, or with an unknown `@` suffix) gains `@old`; `served@new` loses it."""
    served, mark, ep = key.rpartition("@")
    if not mark or ep not in known:
        return f"{key}@{old}"
    return served if ep == new else key


def make_default(body, who):
    """EP-9: `POST /api/endpoint/default {name}`."""
    name = records.text(body.get("name")).lower()
    found = endpoints.load()
    if name not in found:
        raise Invalid(f"no endpoint '{name}'")
    old = endpoints.default()
    if name == old:
        return {"ok": True, "errors": [], "note": f"{name} is already the default"}
    known = set(found)

    def rekey_snapshot(data):
        for part in ("last_seen", "first_missing"):
            if isinstance(data.get(part), dict):
                data[part] = {_rekey(k, old, name, known): v for k, v in data[part].items()}

    for where, change in ((paths.file("config", "served-snapshot.json"), rekey_snapshot),
                          (paths.file("config", "dismissed.json"),
                           lambda data: [data.__setitem__(_rekey(k, old, name, known), data.pop(k))
                                         for k in list(data)])):
        if fileio.exists(where):
            fileio.update(where, change)

    def flag(data):
        for ep, entry in data.items():
            if isinstance(entry, dict):
                entry.pop("default", None)
                if ep == name:
                    entry["default"] = True

    fileio.update(endpoints.path(), flag)
    changes.log(who, "", "default endpoint", old, name)
    return {"ok": True, "errors": [], "note": f"{name} is the default endpoint now (was {old})"}


def limits_file():
    return paths.file("config", "connection-limits.json")


def connections_view():
    """EP-13 `GET /api/connections`: chat models grouped by connection, with the limits entered for each."""
    grouped = {}
    for alias in registry.registrations():
        grouped.setdefault(connections.connection_of(alias), []).append(alias)
    saved = fileio.read_json(limits_file())
    rows = [{"name": c, "models": sorted(aliases),
             "limits": {k: v for k, v in (saved.get(c) or {}).items() if k in LIMIT_KEYS}
             if isinstance(saved.get(c), dict) else {}}
            for c, aliases in sorted(grouped.items())]
    return {"ok": True, "errors": [], "keys": list(LIMIT_KEYS), "labels": LIMIT_LABELS, "connections": rows}


def save_limits(body, who):
    """EP-15: `POST /api/connection-limits {connection, limits}`."""
    connection = records.text(body.get("connection"))
    known = sorted({connections.connection_of(a) for a in registry.registrations()})
    limits = body.get("limits")
    if not isinstance(limits, dict):
        limits = {}
    errors = []
    if connection not in known:
        errors.append(f"'{connection}' is not a connection any model uses; known: {', '.join(known) or 'none yet'}")
    clean = {}
    for k in LIMIT_KEYS:
        value = limits.get(k)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            errors.append(f"{k} must be a positive whole number or blank")
        else:
            clean[k] = value
    if errors:
        raise Invalid(*errors)
    before = {}

    def put(data):
        before["old"] = data.get(connection)
        if clean:
            data[connection] = clean
        else:
            data.pop(connection, None)

    fileio.update(limits_file(), put)
    changes.log(who, "", f"limits {connection}", before["old"], clean or None)
    return {"ok": True, "errors": [], "changed": ["config/connection-limits.json"]}
