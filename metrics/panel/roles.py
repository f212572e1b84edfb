"""Roles and shapes (gateway.md §16.1, §9.1): which kinds of model may sit for which kinds of task.

A role is a kind of model, a shape a kind of task; a shape admits some roles,
and the explorer router seats only models whose role the shape admits. The
roles and shapes ship here in code; `config/model-roles.json` assigns roles to
aliases, names the ad hoc aliases (never chosen automatically, ROL-4) and may
override or add roles and shapes name by name. Read through `fileio.read_json`
and cached on its result, so asking per alias costs a stat, not a parse.
Results are shared: callers must not mutate them.
"""

from pathlib import Path
from typing import Any

from ..core import fileio, paths
from . import collections

SHIPPED_ROLES = {
    "general": "answers anything; sits for every shape",
    "code": "writes and edits code (completion, edits); sits for review, code and enumeration",
    "light": "a small, fast instruct model; sits for enumeration and quick tasks, and for images",
    "image": "generates images; never a reviewer, sits only for image generation",
    "vision": "reads images; sits only when a request carries images",
    "decision": "answers typed questions through a Decisions API; no shape admits it",
}

SHIPPED_SHAPES = {
    "general": ["general"],
    "design": ["general"],
    "prose": ["general"],
    "review": ["general", "code"],
    "code": ["general", "code"],
    "enumeration": ["general", "code", "light"],
    "quick": ["general", "light"],
    "vision": ["general", "light", "vision"],
    "image": ["image"],
}

# SHP-1: what the shape picker is told each option means (bare names mislead it).
# Never `vision` or `image`: those follow from the request, not from its text.
SHAPE_DESCRIPTIONS = {
    "general": "fits no other kind",
    "design": "architecture, process or approach decisions",
    "prose": "writing or editing text",
    "review": "judging whether given code is correct",
    "code": "writing or changing code",
    "enumeration": "listing every place something happens",
    "quick": "a short, bounded task: classify, extract or summarise",
}

_cached: tuple[object, dict[str, Any]] = (None, {})  # (the file's parsed object, what load() made of it)


def path() -> Path:
    return paths.file("config", "model-roles.json")


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _merge(data: dict[str, Any]) -> dict[str, Any]:
    roles = dict(SHIPPED_ROLES)
    extra = data.get("roles")
    if isinstance(extra, dict):
        roles.update({name: text for name, text in extra.items() if isinstance(text, str)})
    shapes = {name: list(admitted) for name, admitted in SHIPPED_SHAPES.items()}
    extra = data.get("shapes")
    if isinstance(extra, dict):
        shapes.update({name: _strings(admitted) for name, admitted in extra.items() if isinstance(admitted, list)})
    models = data.get("models")
    models = {alias: role for alias, role in models.items() if isinstance(role, str)} if isinstance(models, dict) else {}
    return {"roles": roles, "shapes": shapes, "models": models, "ad_hoc": _strings(data.get("ad_hoc")),
            "_ad_hoc": frozenset(_strings(data.get("ad_hoc")))}


def _loaded() -> dict[str, Any]:
    global _cached
    data = fileio.read_json(path(), comments=False)
    raw, merged = _cached
    if raw is not data:  # read_json hands back the same object until the file changes
        merged = _merge(data)
        _cached = (data, merged)
    return merged


def load() -> dict[str, Any]:
    """`{roles, shapes, models, ad_hoc}` (ROL-3): the file's `roles`/`shapes` override the shipped
    ones name by name (a shipped name the file does not define stays; none can be removed);
    `models` (`{alias: role}`) and `ad_hoc` (`[alias]`) come from the file alone."""
    merged = _loaded()
    return {key: merged[key] for key in ("roles", "shapes", "models", "ad_hoc")}


def role_of(alias: str) -> str:
    """`alias`'s role; an unlisted alias is `general` (ROL-1)."""
    return _loaded()["models"].get(alias) or "general"


def ad_hoc() -> frozenset[str]:
    """Aliases never chosen automatically, only when named (ROL-4)."""
    return _loaded()["_ad_hoc"]


def status() -> str:
    """`""` when model-roles.json reads as a JSON object, else `"missing"` or `"unreadable"`
    (SHP-2; IMP-10: a missing file says so rather than "unreadable")."""
    if fileio.read_json(path(), comments=False):
        return ""
    if not fileio.exists(path()):
        return "missing"
    return "unreadable" if collections.unreadable(path()) else ""
