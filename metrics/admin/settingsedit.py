"""The Settings page's writes: gateway keys, the model client, the theme (dashboard.md ST-2, ST-5, ST-6, ST-11).

Keys are made and revoked by `server.gatekeys` (one place knows the key file); this module turns a
request body into its arguments (MGMT-2) and the result into the dashboard's reply. The key value
appears only in the reply that makes it (FILE-4).
"""

import re

from ..core import changes, fileio, paths, themes
from ..core.errors import Invalid
from ..models import connections
from ..calling import client
from ..panel import collections
from ..server import gatekeys

BUILT_IN_OWN_CLIENT = {"opencode": True, "opencode-go": True}  # providers free only in their own app (ST-12)


def make_key(body, who):
    """ST-5 / MGMT-2: `POST /api/gateway-key`."""
    name = body.get("name")
    name = name.strip().lower() if isinstance(name, str) else ""
    chosen = body.get("collections") or []
    if not isinstance(chosen, list) or not all(isinstance(c, str) for c in chosen):
        raise Invalid("collections must be a list of collection names")
    unknown = [c for c in chosen if c not in collections.load()]
    if unknown:
        raise Invalid("no collection named " + ", ".join(unknown))
    rpm = body.get("rpm")
    if rpm is None or (isinstance(rpm, str) and not rpm.strip()):
        rpm = None
    elif isinstance(rpm, str) and re.fullmatch(r"[0-9]+", rpm.strip()):
        rpm = int(rpm.strip())
    key = gatekeys.make(name, chosen, rpm, by=who)  # `Invalid` with KEY-4's message for a rule broken
    return {"ok": True, "errors": [], "name": name, "key": key}


def revoke_key(body, who):
    """ST-6 / MGMT-4: `POST /api/gateway-key/remove`; refused at once by the gateway on both ports."""
    name = body.get("name")
    if not isinstance(name, str) or not gatekeys.revoke(name, by=who):
        raise Invalid(f"no gateway key named '{name}'")
    return {"ok": True, "errors": []}


def choose_client(body, who):
    """ST-11: `POST /api/client {client}`; the choice applies from the next model call."""
    name = body.get("client")
    old = client.chosen()[0]
    problem = client.choose(name) if isinstance(name, str) else "client: one of llm, builtin"
    if problem:
        raise Invalid(problem)
    if old != name:  # LOG-4: a choice that changes nothing is not logged
        changes.log(who, "", "model client", old, name)
    return {"ok": True, "errors": []}


def choose_theme(body, who):
    """ST-2: `POST /api/theme {theme}`; logged (IMP-14)."""
    theme = body.get("theme")
    errors, old = themes.save(theme if isinstance(theme, str) else "")
    if errors:
        if not isinstance(theme, str):
            errors = [f"no theme called '{theme}'; there are {', '.join(themes.names())}"]
        raise Invalid(*errors)
    if old != theme:
        changes.log(who, "", "theme", old, theme)
    return {"ok": True, "errors": [], "theme": theme}


def own_client():
    """ST-12: every provider with its switch: the built-in ones overlaid by the install's, then added ones."""
    saved = connections.facts()["free_in_own_client_only"]
    merged = {**BUILT_IN_OWN_CLIENT, **{k: v for k, v in saved.items() if isinstance(v, bool)}}
    return [{"id": pid, "on": on, "built_in": pid in BUILT_IN_OWN_CLIENT} for pid, on in sorted(merged.items())]


def _excluded(rows):
    return sorted(r["id"] for r in rows if r["on"])


def feed_providers():
    """The provider ids of the cached models.dev feed (`runs/cache/modelsdev.json`); none when not cached."""
    return set(fileio.read_json(paths.file("runs", "cache", "modelsdev.json")))


def save_own_client(body, who):
    """ST-13: `POST /api/own-client-free {providers: {id: bool}}`; only differences from the built-in are kept."""
    sent = body.get("providers")
    if not isinstance(sent, dict) or not all(isinstance(v, bool) for v in sent.values()):
        raise Invalid("providers: a map of models.dev provider id to true or false")
    unknown = sorted(set(sent) - feed_providers() - set(BUILT_IN_OWN_CLIENT))
    if unknown:
        raise Invalid("not a models.dev provider id: " + ", ".join(unknown))
    before = _excluded(own_client())

    def put(data):
        kept = data.get("free_in_own_client_only") if isinstance(data.get("free_in_own_client_only"), dict) else {}
        kept = {**kept, **sent}
        kept = {k: v for k, v in kept.items() if v != BUILT_IN_OWN_CLIENT.get(k, False)}
        if kept:
            data["free_in_own_client_only"] = kept
        else:
            data.pop("free_in_own_client_only", None)

    fileio.update(connections.path(), put)
    after = _excluded(own_client())
    if after != before:
        changes.log(who, "", "free in own client only", before, after)
    return {"ok": True, "errors": []}
