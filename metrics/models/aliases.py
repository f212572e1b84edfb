"""Alias renames (ALI-1): `config/alias-history.json` maps an old alias to its new one.

Records are never rewritten when a model is renamed; every reader keyed by alias
(offloads, suite outputs, perf history) maps names through `current()` instead,
so a renamed model keeps its record.

The file is read through `fileio.read_json`, which re-parses only when the file's
stat changes, and resolved chains are remembered for that parse: a call costs a
stat and a dict lookup. `resolver()` takes one snapshot for a loop over many names.
"""

from ..core import fileio, paths

_snapshot = (None, {}, {})  # (read_json's object, {old: new}, {alias: resolved})


def _load():
    global _snapshot
    # read_json returns the very same object while the file is unchanged (comments=False
    # skips its per-call copy), so identity says whether our links are still fresh.
    raw = fileio.read_json(paths.file("config", "alias-history.json"), comments=False)
    snapshot = _snapshot
    if snapshot[0] is not raw:
        links = {
            old: new
            for old, new in raw.items()
            if not old.startswith("_") and isinstance(new, str) and new
        }
        snapshot = _snapshot = (raw, links, {})
    return snapshot


def history():
    """`{old alias: new alias}` as the file says (comment keys and non-string values dropped).
    The dashboard's model rename reads it to refuse an old name (`admin.modeledit`, TEST-1)."""
    return dict(_load()[1])


def resolver():
    """`current` bound to one read of the file, for mapping many names in one pass."""
    _, links, resolved = _load()

    def resolve(alias):
        if alias in resolved:
            return resolved[alias]
        name, seen = alias, set()
        while name in links:
            if name in seen:
                raise ValueError(f"alias history loops at '{name}'")
            seen.add(name)
            name = links[name]
        resolved[alias] = name
        return name

    return resolve


def follow(current, alias):
    """`current(alias)` (a `resolver()`), or `alias` as written when alias-history.json loops there: a
    reader keyed by alias (the router, its evidence) keeps working on a broken history."""
    try:
        return current(alias)
    except ValueError:
        return alias


def current(alias):
    """The name `alias` goes by now, following old→new links to the end.

    A cycle raises ValueError `alias history loops at '<alias>'`.
    """
    return resolver()(alias)
