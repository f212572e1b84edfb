"""Who is on the bench: registered chat models, decision models and retired ones, as one directory.

The dashboard's views, its write operations, onboarding and the panel all ask this module, so
`config/retired.json` is read in one place (`retired()`); the decision models are the registry's
(`registry.decision_models()`), as the chat models are.
"""

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core import fileio, paths, records
from ..models import connections, endpoints, registry
from . import roles

RETIRED = "retired.json"


@dataclasses.dataclass(frozen=True)
class RetiredModel:
    """One entry of config/retired.json (MP-12): `{served, tag, role, at, by, why, endpoint, ad_hoc?: true,
    options?: <its model-options entry>, collections?: {collection: ["members"] | ["merger"] | both},
    decision?: <its whole decision-models.json entry>}`; enough to restore it exactly. A text field of the
    wrong type reads as ""; `options` and `decision` are None unless objects; `stored` is the entry as written."""

    alias: str
    served: str
    tag: str
    role: str
    at: str
    by: str
    why: str
    endpoint: str
    ad_hoc: bool
    options: Mapping[str, Any] | None
    collections: Mapping[str, Any]
    decision: Mapping[str, Any] | None
    stored: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Retired:
    """config/retired.json, `{alias: RetiredModel}` (keys starting `_` are comments). `models` holds the
    entries that are objects, in file order; `names` every alias the file names, whatever its entry holds:
    a member named there never sits (PNL-4), while only a whole entry can be shown or restored."""

    models: Mapping[str, RetiredModel]
    names: frozenset[str]


def retired_path() -> Path:
    return paths.file("config", RETIRED)


def _model(alias: str, entry: Mapping[str, Any]) -> RetiredModel:
    text = {field: records.string(entry.get(field)) for field in ("served", "tag", "role", "at", "by", "why",
                                                                  "endpoint")}
    options, decision = entry.get("options"), entry.get("decision")
    return RetiredModel(alias, **text, ad_hoc=bool(entry.get("ad_hoc")),
                        options=options if isinstance(options, dict) else None,
                        collections=records.mapping(entry.get("collections")),
                        decision=decision if isinstance(decision, dict) else None, stored=entry)


_retired: tuple[object, Retired] = (None, Retired({}, frozenset()))  # (the file's cached object, its record)


def retired() -> Retired:
    """The retired models; none when the file is missing or unreadable. Made again only when the file changed
    (the parse is `fileio.read_json`'s, cached by the file's stat)."""
    global _retired
    data = fileio.read_json(retired_path())
    if _retired[0] is not data:
        models = {alias: _model(alias, entry) for alias, entry in data.items() if isinstance(entry, dict)}
        _retired = (data, Retired(models, frozenset(data)))
    return _retired[1]


def tag_of(alias: str) -> str:
    tag = connections.full_tag_of(alias)
    return "" if tag == "?" else tag


def default_endpoint() -> str | None:
    try:
        return endpoints.default()
    except RuntimeError:
        return None


def directory() -> dict[str, dict[str, Any]]:
    """FILE-3: `{alias: {served, tag, role, ad_hoc, endpoint[, kind, question_types]}}`, chat models first."""
    model_roles = roles.load()
    ad_hoc = set(model_roles["ad_hoc"])
    fallback = default_endpoint()
    found = {}
    for alias, reg in registry.registrations().items():
        found[alias] = {"served": reg.model_name, "tag": tag_of(alias),
                        "role": model_roles["models"].get(alias) or "general", "ad_hoc": alias in ad_hoc,
                        "endpoint": endpoints.endpoint_name(reg) or fallback}
    for alias, entry in registry.decision_models().items():
        types = list(entry.question_types)
        found[alias] = {"served": entry.served, "role": "decision", "kind": "decision",
                        "question_types": types, "tag": f"via {entry.via or '?'} · takes {', '.join(types)}",
                        "ad_hoc": alias in ad_hoc, "endpoint": entry.endpoint or fallback}
    return found


def price(alias: str, served: str, connection: object, info: Mapping[str, Any]) -> str:
    """GL-5's heuristic: free, paid or unknown, the surest evidence first. A model on an endpoint of kind
    `local` (a runtime on this machine) counts as free like the `local` connection, whatever its name."""
    if connection in connections.facts()["paid"]:
        return "paid"
    cost = records.mapping(info.get("cost"))
    where = registry.endpoint_of(alias)
    found = endpoints.readable().get(where) if where else None
    on_machine = found is not None and found.kind == "local"
    if ":free" in served or connection == "local" or on_machine or (cost and not any(cost.values())):
        return "free"
    if cost and any(cost.values()):
        return "paid"
    return "unknown"
