"""The Collections page's data and writes (dashboard.md CO-2, CO-7, CO-8, CO-10).

Every validation collects all its errors before anything is written (RESP-1); a file that exists but
cannot be read is never written over (RESP-6). Writes go through `fileio.update` (locked, atomic) and
each is logged to the change log with the caller.
"""

import re

from ..core import changes, fileio, records
from ..core.errors import Invalid
from ..models import catalog, connections, registry
from ..panel import collections, policy, roles, roster

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{1,31}$")
TAG = re.compile(r"^[a-z0-9][a-z0-9-]{0,23}$")
MAX_TAGS = 8
MAX_DESCRIPTION = 300
LONG_CONTEXT = 128_000
SUGGESTED = ["second-opinion", "security", "long-context", "fast", "free", "tools", "json"]
BAD_NAME = ("name: 2-32 lower-case letters, digits or '-', saying what it is for, e.g. reviewers; "
            "callers ask for bench/<name>")
UNREADABLE = "config/collections.json is not valid JSON; fix it by hand first"


def chat_models():
    return sorted(registry.registrations())


def shapes():
    return [s for s in roles.load()["shapes"] if s != "image"]


def _facts(alias, model_roles):
    info = catalog.info(alias) or {}
    window = info.get("context_window")
    served = registry.names().get(alias, "")
    connection = connections.connection_of(alias)
    return {"caps": {cap: info.get(cap) if isinstance(info.get(cap), bool) else None
                     for cap in collections.CAPABILITIES},
            "context": window if isinstance(window, int) else None,
            "price": roster.price(alias, served, connection, info),
            "role": model_roles["models"].get(alias) or "general"}


def view():
    """CO-2: `GET /api/collections`."""
    s = collections.settings()
    found = collections.load()
    listed = [{"name": name, **collections.described(name, c, s)} for name, c in sorted(found.items())]
    in_use = [t for c in listed for t in c["tags"] if isinstance(t, str)]
    model_roles = roles.load()
    every = chat_models()
    return {"ok": True, "errors": [], "collections": listed,
            "settings": {"max_calls": s.max_calls, "max_explorers": s.max_explorers, "policy": s.policy,
                         "policies": list(policy.NAMES)},
            "shapes": shapes(), "models": every, "served": registry.names(),
            "tag_suggestions": list(dict.fromkeys(shapes() + SUGGESTED + in_use)),
            "facts": {a: _facts(a, model_roles) for a in every},
            "shape_roles": {k: v for k, v in model_roles["shapes"].items() if k != "image"},
            "long_context": LONG_CONTEXT}


def _unique(items):
    return list(dict.fromkeys(i for i in items if i))


def cleaned(body):
    """CO-7's normalising of the body's fields (null is "")."""
    name = records.text(body.get("name")).removeprefix("bench/")
    tags = body.get("tags")
    if isinstance(tags, str):
        tags = tags.split(",")
    tags = _unique(t.strip().lower() for t in tags if isinstance(t, str)) if isinstance(tags, list) else []
    members = body.get("members")
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        members = []
    return {"name": name, "members": _unique(m.strip() for m in members), "shape": records.text(body.get("shape")),
            "description": " ".join(records.text(body.get("description")).split()), "tags": tags,
            "reply": records.text(body.get("reply")) or "all", "merger": records.text(body.get("merger"))}


def save(body, who):
    """CO-7: `POST /api/collection` creates or replaces one collection."""
    c = cleaned(body)
    errors = []
    known = set(chat_models())
    max_calls = collections.settings().max_calls
    if not NAME.match(c["name"]):
        errors.append(BAD_NAME)
    if not c["members"]:
        errors.append("a collection needs at least one member")
    if len(c["members"]) > max_calls:
        errors.append(f"at most {max_calls} members (max calls per request, in settings)")
    strangers = [m for m in c["members"] if m not in known]
    if strangers:
        errors.append("not chat models on the bench: " + ", ".join(strangers))
    if c["shape"] and c["shape"] not in shapes():
        errors.append(f"shape must be one of {', '.join(shapes())}, or empty for automatic")
    if len(c["description"]) > MAX_DESCRIPTION:
        errors.append("description: at most 300 characters; say what the collection is for")
    bad = [t for t in c["tags"] if not TAG.match(t)]
    if bad:
        errors.append("tags are lower-case words joined by '-', up to 24 characters: " + ", ".join(bad))
    if len(c["tags"]) > MAX_TAGS:
        errors.append("at most 8 tags")
    errors += collections.reply_errors(c["reply"], c["merger"], known)
    if collections.collections_problem():
        errors.append("config/collections.json is not valid JSON; fix it by hand first, or this save would "
                      "replace every collection in it")
    if errors:
        raise Invalid(*errors)
    name = c.pop("name")

    def put(data):
        old = data.get(name)
        data[name] = c
        return old

    old = fileio.update(collections.collections_path(), put)
    changes.log(who, "", f"collection {name}", old, c)
    return {"ok": True, "errors": [], "changed": ["config/collections.json"]}


def remove(body, who):
    """CO-8: `POST /api/collection/remove`."""
    name = records.text(body.get("name")).removeprefix("bench/")
    if collections.collections_problem():
        raise Invalid(UNREADABLE)
    if name not in collections.load():
        raise Invalid(f"no collection '{name}'")
    old = fileio.update(collections.collections_path(), lambda data: data.pop(name, None))
    changes.log(who, "", f"collection {name}", old, None)
    return {"ok": True, "errors": [], "changed": ["config/collections.json"]}


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def gateway_settings(body, who):
    """CO-10: `POST /api/gateway-settings {max_calls, max_explorers[, policy]}`.

    `policy` (issue 20) is optional: absent or null leaves the file's choice as it is; given, it must name
    one of `panel.policy.NAMES` and is written and logged with the other two."""
    calls, explorers, chosen = body.get("max_calls"), body.get("max_explorers"), body.get("policy")
    errors = []
    if chosen is not None and chosen not in policy.NAMES:
        errors.append("policy must be " + " or ".join(policy.NAMES) + " (the merger choice and route mode's order)")
    if not (_whole(calls) and 1 <= calls <= 10):
        errors.append("max calls must be a whole number from 1 to 10")
    if not (_whole(explorers) and 0 <= explorers <= 2):
        errors.append("max explorers must be 0, 1 or 2 (route.py seats at most two)")
    if _whole(calls):
        over = sorted(n for n, c in collections.load().items() if len(c.members) > calls)
        if over:
            errors.append(f"these collections have more members than {calls}: {', '.join(over)}")
    if collections.settings_fault():
        errors.append("config/gateway.json is not valid JSON; fix it by hand first")
    if errors:
        raise Invalid(*errors)
    before = collections.settings()
    old = {"max_calls": before.max_calls, "max_explorers": before.max_explorers}
    new = {"max_calls": calls, "max_explorers": explorers}
    if chosen is not None:
        old["policy"], new["policy"] = before.policy, chosen

    def put(data):
        data.pop("default_collection", None)
        data.update(new)

    fileio.update(collections.settings_path(), put)
    changes.log(who, "", "gateway settings", old, new)
    return {"ok": True, "errors": [], "changed": ["config/gateway.json"]}
