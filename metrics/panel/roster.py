"""Who is on the bench: registered chat models, decision models and retired ones, as one directory.

The dashboard's views, its write operations and onboarding all ask this module, so each of these files is
read in one place: `config/retired.json` (`retired()`), `config/decision-models.json` (`decision_models()`).
"""

from ..core import fileio, paths
from ..models import connections, endpoints, registry
from . import roles


def retired():
    return {a: e for a, e in fileio.read_json(paths.file("config", "retired.json")).items() if isinstance(e, dict)}


def decision_models():
    return {a: e for a, e in fileio.read_json(paths.file("config", "decision-models.json")).items() if isinstance(e, dict)}


def tag_of(alias):
    tag = connections.full_tag_of(alias)
    return "" if tag == "?" else tag


def default_endpoint():
    try:
        return endpoints.default()
    except RuntimeError:
        return None


def directory():
    """FILE-3: `{alias: {served, tag, role, ad_hoc, endpoint[, kind, question_types]}}`, chat models first."""
    model_roles = roles.load()
    ad_hoc = set(model_roles["ad_hoc"])
    fallback = default_endpoint()
    found = {}
    for alias, reg in registry.registrations().items():
        found[alias] = {"served": reg.get("model_name") or "", "tag": tag_of(alias),
                        "role": model_roles["models"].get(alias) or "general", "ad_hoc": alias in ad_hoc,
                        "endpoint": endpoints.endpoint_name(reg) or fallback}
    for alias, entry in decision_models().items():
        types = [t for t in entry.get("question_types") or [] if isinstance(t, str)]
        found[alias] = {"served": entry.get("served") or "", "role": "decision", "kind": "decision",
                        "question_types": types, "tag": f"via {entry.get('via', '?')} · takes {', '.join(types)}",
                        "ad_hoc": alias in ad_hoc, "endpoint": entry.get("endpoint") or fallback}
    return found


def price(alias, served, connection, info):
    """GL-5's heuristic: free, paid or unknown, the surest evidence first. A model on an endpoint of kind
    `local` (a runtime on this machine) counts as free like the `local` connection, whatever its name."""
    if connection in connections.facts()["paid"]:
        return "paid"
    cost = info.get("cost") if isinstance(info.get("cost"), dict) else {}
    where = registry.endpoint_of(alias)
    on_machine = bool(where) and endpoints.kind_of(endpoints.readable().get(where, {})) == "local"
    if ":free" in served or connection == "local" or on_machine or (cost and not any(cost.values())):
        return "free"
    if cost and any(cost.values()):
        return "paid"
    return "unknown"
