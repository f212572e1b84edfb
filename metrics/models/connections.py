"""Connections: what shares a rate limit, and the facts the user states about them (CONN-1..4).

A connection is the part of a model's tag before the first `/`: `groq`, or
`openrouter` for `openrouter/deepinfra`. The ledger, pacing, quota records and
connection limits are all keyed by it, so every one of them asks this module.

`DATA/config/connections.json` holds facts the bench cannot find out itself:
which connections are paid by subscription, which are preferred in a tie, which
aliases may call paid models, models.dev provider ids, providers free only in
their own client, and names for bare-IP hub hosts. Missing or invalid, it states
nothing (CONN-1).
"""

from ..core import fileio, paths
from . import endpoints, registry

LISTS = ("paid", "preferred", "allow_paid")
MAPS = ("models_dev", "free_in_own_client_only", "hosts")


def path():
    return paths.file("config", "connections.json")


def load():
    """The file as written (`{}` when missing or not an object). Do not mutate."""
    return fileio.read_json(path())


def facts():
    """Every CONN-1 key with its expected type: lists of strings, and objects; a wrong type reads as empty."""
    data = load()
    found = {}
    for name in LISTS:
        value = data.get(name)
        found[name] = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    for name in MAPS:
        value = data.get(name)
        found[name] = dict(value) if isinstance(value, dict) else {}
    return found


def served_name(alias):
    """The served id behind an alias: its registration, else its decision model, else the alias itself."""
    reg = registry.registration(alias)
    if reg and reg.model_name:
        return reg.model_name
    decision = registry.decision_models().get(alias)
    return decision.served if decision and decision.served else alias


def full_tag_of(alias):
    """The alias's tag (CONN-3): provider-tags.json for its served id, else its non-hub endpoint, else `?`."""
    tag = fileio.read_json(paths.file("config", "provider-tags.json")).get(served_name(alias))
    if isinstance(tag, str) and tag:
        return tag
    name = registry.endpoint_of(alias)
    if name and endpoints.kind(name) != "hub":
        return name
    return "?"


def connection_of(alias):
    """The connection `alias` is called through (CONN-2): its tag up to the first `/`."""
    return full_tag_of(alias).split("/", 1)[0]
