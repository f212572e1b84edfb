"""What the bench knows about each model: context window, output cap, vision, tools (CAT, the core).

One record per alias, built from layers where a later one wins:

1. the last catalog refresh, `config/model-catalog.json` (written only by the refresh job);
2. the serving endpoint's own model listing (CAT-10): the facts of the last one fetched by any process,
   kept in `runs/cache/listings.json` (this process's own fetch in memory when that file cannot be written);
3. what providers taught us, `config/model-learned.json` (CAT-1): a context window
   only when it is smaller, a capability only when it was seen working;
4. the user's `config/model-overrides.json`, which always wins (an override of
   false beats a probe's true, CAT-4).

`sources` says where each value came from. `vision` and `tools` are tri-state:
true, false, or None for unknown.

A listing is fetched only by `listing()` or `warm()`, at most once per endpoint
per process unless asked to refresh. `info()` reads what is already known
and never waits on the network, so the gateway's hot path cannot stall on a
model list; a server calls `warm()` once at start. Each fetch writes its facts
to the listings file, so a running gateway learns what another process fetched
(onboarding a model on a new endpoint, a catalog refresh) at its next request,
without a restart (issue 30 item 3).

`table()` is what `info()` reads: every registered alias's record, kept until
one of the files it comes from changes (their stats are checked on each
`table()` call) or a listing in memory does. A panel asks about every
registered alias, so after the first panel each costs a dict lookup rather
than a stat of every file it comes from.
"""

import re
import threading

from ..core import fileio, paths
from . import endpoints, registry

FIELDS = ("context_window", "max_output", "vision", "tools")
CAPABILITIES = ("vision", "tools")
LIMIT_AXES = ("rpm", "rpd", "tpm", "tpd")
# what else the refresh writes (CAT-6..9, metrics/models/catalogrefresh.py): in a record only when it was found
REFRESHED = ("structured_output", "reasoning", "input_modalities", "output_modalities", "knowledge_cutoff",
             "release_date", "open_weights", "description", "cost", "quirks")

_listings = {}  # (endpoint name, listing url) -> {id: row}
_generation = 0  # bumped whenever _listings changes, so a table built before it is dropped
_locks = {}
_locks_guard = threading.Lock()


def _positive(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _first_positive(*values):
    return next((v for v in map(_positive, values) if v is not None), None)


def listing_facts(row):
    """The fields an endpoint's listing row states (CAT-10, and the OpenRouter names of CAT-7)."""
    if not isinstance(row, dict):
        return {}
    top = row.get("top_provider") if isinstance(row.get("top_provider"), dict) else {}
    arch = row.get("architecture") if isinstance(row.get("architecture"), dict) else {}
    facts = {
        "context_window": _first_positive(row.get("context_length"), row.get("context_window"),
                                          top.get("context_length")),
        "max_output": _first_positive(row.get("max_output_length"), row.get("max_output_tokens"),
                                      top.get("max_completion_tokens")),
    }
    inputs = row.get("input_modalities") or arch.get("input_modalities")
    if isinstance(inputs, list):
        facts["vision"] = "image" in inputs
    features = row.get("supported_features")
    parameters = row.get("supported_parameters")
    if isinstance(features, list):
        facts["tools"] = "tools" in features
    elif isinstance(parameters, list):
        facts["tools"] = "tools" in parameters
    if isinstance(parameters, list) and ("response_format" in parameters or "structured_outputs" in parameters):
        facts["structured_output"] = True  # a council asks such a model for its ranking as a JSON schema (CNC-4)
    return {name: value for name, value in facts.items() if value is not None}


def _lock_for(key):
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _changed():
    global _generation
    with _locks_guard:
        _generation += 1


def listings_path():
    return paths.file("runs", "cache", "listings.json")


def _keep(key, rows):
    """Write a fetched listing's facts for every process; a data folder that refuses keeps them in memory only."""
    facts = {model: found for model, row in rows.items() if (found := listing_facts(row))}
    try:
        fileio.update(listings_path(), lambda data: data.__setitem__(key[0], {"url": key[1], "models": facts}))
    except (OSError, TimeoutError, fileio.Unreadable):
        pass


def _kept(key):
    """`{model id: facts}` of the last listing of `key` any process fetched, or None when none is kept."""
    found = fileio.read_json(listings_path()).get(key[0])
    if isinstance(found, dict) and found.get("url") == key[1] and isinstance(found.get("models"), dict):
        return found["models"]
    return None


def _key(name):
    found = endpoints.load().get(name)
    return (name, endpoints.listing_url(found)) if found else None


def listing(name, refresh=False, timeout=endpoints.LIST_TIMEOUT):
    """Endpoint `name`'s models `{id: row}`, fetched once per process (again only with `refresh`).

    An endpoint that cannot be asked lists nothing until the next refresh.
    """
    key = _key(name)
    if key is None:
        return {}
    with _lock_for(key):
        if refresh or key not in _listings:
            try:
                _listings[key] = endpoints.models(name, timeout)
            except Exception:
                _listings[key] = {}
            _keep(key, _listings[key])
            _changed()
        return _listings[key]


def cached(name):
    """What `listing()` already holds for `name`; never fetches."""
    try:
        key = _key(name)
    except RuntimeError:
        return {}
    return _listings.get(key, {}) if key else {}


def forget():
    """Drop every listing held in memory or kept in the listings file. Only the tests call it: a changed endpoint
    needs no call, since listings are held by endpoint name and listing URL (`_key`), so a new base is a new entry."""
    listings_path().unlink(missing_ok=True)
    _listings.clear()
    _changed()


def warm(names=None, timeout=endpoints.LIST_TIMEOUT, refresh=False):
    """Fetch every endpoint's listing at once, in parallel; `{name: models listed}`."""
    names = list(endpoints.load()) if names is None else list(names)
    counts = {}

    def fetch(name):
        counts[name] = len(listing(name, refresh=refresh, timeout=timeout))

    threads = [threading.Thread(target=fetch, args=(name,), daemon=True) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return counts


def _date(ev):
    at = ev.get("at") if isinstance(ev, dict) else None
    return at[:10] if isinstance(at, str) else "?"


def _listed(name, model):
    """What endpoint `name`'s last listing says of `model`: the kept facts, else this process's fetch."""
    try:
        key = _key(name)
    except RuntimeError:
        return {}
    kept = _kept(key) if key else None
    if kept is not None:
        found = kept.get(model)
        return found if isinstance(found, dict) else {}
    return listing_facts(cached(name).get(model))


def _record(alias):
    """`alias`'s record worked out afresh from the layers (CAT-1, CAT-4, CAT-10)."""
    record = dict.fromkeys(FIELDS)
    sources = {}
    refreshed = fileio.read_json(paths.file("config", "model-catalog.json")).get("models")
    entry = refreshed.get(alias) if isinstance(refreshed, dict) else None
    if isinstance(entry, dict):
        said = entry.get("sources") if isinstance(entry.get("sources"), dict) else {}
        for field in FIELDS + REFRESHED:  # CAT-1: the refresh's fields, prices and quirks, when it found them
            if entry.get(field) is not None:
                record[field] = entry[field]
                sources[field] = said.get(field, "catalog")
        listed = entry.get("limits") if isinstance(entry.get("limits"), dict) else {}
        listed = {axis: n for axis, n in listed.items() if axis in LIMIT_AXES and _positive(n)}
        if listed:  # CAT-2's last layer: the limits a feed lists (FreeLLMAPI), under anything a person entered
            record["limits"], sources["limits"] = listed, said.get("limits", "catalog")

    reg = registry.registration(alias)
    name = endpoints.endpoint_name(reg)
    if name:
        for field, value in _listed(name, reg.model_name or alias).items():
            record[field] = value
            sources[field] = f"{name} listing"

    learned = fileio.read_json(paths.file("config", "model-learned.json")).get(alias)
    learned = learned if isinstance(learned, dict) else {}
    ev = learned.get("context_window")
    window = _positive(ev.get("value")) if isinstance(ev, dict) else None
    current = _positive(record["context_window"])
    if window is not None and (current is None or window < current):
        record["context_window"] = window
        sources["context_window"] = f"learned {_date(ev)}"
    caps = learned.get("capabilities") if isinstance(learned.get("capabilities"), dict) else {}
    for cap in CAPABILITIES:
        if isinstance(caps.get(cap), dict) and caps[cap].get("value") is True:
            record[cap] = True
            sources[cap] = f"probe {_date(caps[cap])}"

    overrides = fileio.read_json(paths.file("config", "model-overrides.json")).get(alias)
    for field, value in (overrides.items() if isinstance(overrides, dict) else ()):
        if field == "limits":  # CAT-2's model half: the rate limits a person entered, shown and kept by the popup
            entered = {axis: n for axis, n in value.items() if axis in LIMIT_AXES and _positive(n)} \
                if isinstance(value, dict) else {}
            if entered:
                record["limits"], sources["limits"] = entered, "you (this model)"
        elif value is not None:
            record[field] = value
            sources[field] = "you"
    record["sources"] = sources
    return record


class Table(dict):
    """`{alias: info record}` as of one look at the sources; an alias's record is made the first time it is asked.

    Only registered aliases are kept (a request may name anything). Shared between callers: never mutate
    a record. `api(alias)` is the API of the endpoint the alias is served on.
    """

    def __init__(self, state):
        super().__init__()
        self.state = state
        self._apis = {}

    def __missing__(self, alias):
        record = _record(alias)
        if alias in registry.registrations():
            self[alias] = record
        return record

    def api(self, alias):
        found = self._apis.get(alias)
        if found is None:
            found = registry.entry_of(alias).api
            if alias in registry.registrations():
                self._apis[alias] = found
        return found


_sources = {}  # data folder -> the files a record is made from
_table = Table(None)


def table():
    """Every alias's record (see `Table`), rebuilt when a source file's stat or a listing in memory changes."""
    global _table
    folder = paths.data()
    files = _sources.get(folder)
    if files is None:
        files = _sources[folder] = tuple(str(f) for f in (
            paths.file("config", "model-catalog.json"), paths.file("config", "model-learned.json"),
            paths.file("config", "model-overrides.json"), registry.path(), endpoints.path(), listings_path()))
    state = (folder, _generation) + tuple(fileio.stamp(f) for f in files)
    found = _table
    if found.state != state:
        found = _table = Table(state)
    return found


def info(alias, fetch=False):
    """`{context_window, max_output, vision, tools, ..., sources}` for `alias` (CAT-1, CAT-4, CAT-10).

    With `fetch`, the endpoint's listing is read first if it is not in memory yet.
    """
    if fetch:
        name = registry.endpoint_of(alias)
        if name:
            listing(name)
    record = table()[alias]
    return {**record, "sources": dict(record["sources"])}


def window(alias, known=None):
    """The known context window in tokens, or None.

    `known` is a `table()` already in hand (a panel asks about every registered alias).
    """
    return _positive((table() if known is None else known)[alias]["context_window"])


def too_small(alias, needed, known=None):
    """The alias's known window when it is below `needed`, else None (unknown windows never refuse; IMP-4)."""
    size = window(alias, known)
    return size if size is not None and size < needed else None


def max_output(alias):
    """The known output cap in tokens, or None."""
    return _positive(table()[alias]["max_output"])


def cannot_see(alias, known=None):
    """`""` when an image may be put to `alias` (CAT-4, GWC-3, IMG-5), else why not: vision must be known
    true (unknown counts as cannot), and the alias not on the Responses API. `known` as for `window()`."""
    known = table() if known is None else known
    if known.api(alias) == "responses":
        return "is reached through the Responses API, to which the gateway sends no images yet"
    info = known[alias]
    vision = info.get("vision")
    if vision is True:
        return ""
    if vision is None:
        return "the catalog does not say whether it takes images; tick Vision / OCR in its model popup"
    source = (info.get("sources") or {}).get("vision") or "the catalog"
    return f"does not take images (says {source})"


def cannot_call_tools(alias, known=None):
    """`""` when a request with tools may go to `alias` (CAT-4, RT-4): tools must be known true; else why not.
    `known` as for `window()`."""
    info = (table() if known is None else known)[alias]
    if info.get("tools") is True:
        return ""
    if info.get("tools") is None:
        return "the catalog has no tool-calling information; tick Tool calling in its model popup if it calls tools"
    source = (info.get("sources") or {}).get("tools") or "the catalog"
    return f"does not call tools (says {source})"


REGION_PREFIX = re.compile(r"^(?:llm7|us|eu|apac|global)\.")
TAILS = re.compile(r"(?:@[\w.]+|-v\d+:\d+|-\d{4}-\d{2}-\d{2}|-\d{8}|-latest|-high|-medium|-low|-minimal)$")


def norm_model(model_id):
    """A model id without vendor, `:free`, region prefix, date, version or effort tails (SRC-6).

    `openai/gpt-oss-120b:free` → `gpt-oss-120b`; `gemini-3.8-flash-high` → `gemini-3.8-flash`.
    One function for every swap check and catalog match (models.md improvement 6).
    """
    name = str(model_id or "").lower().rsplit("/", 1)[-1].replace(":free", "")
    name = REGION_PREFIX.sub("", name)
    while True:
        shorter = TAILS.sub("", name)
        if shorter == name:
            return name
        name = shorter
