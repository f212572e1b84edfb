"""The catalog refresh: what the public catalogs and the endpoints say of each registered model, written to
`config/model-catalog.json` (models.md §14, CAT-6..11; the price watch AL-4).

`scripts/refresh_catalog.py` runs it (the scheduler's daily `catalog` job, metrics/admin/jobs.py); `metrics/models/catalog.py`
reads what it writes. Sources, later ones winning where they say something:

1. OpenRouter's public model list (CAT-7), read fresh each run (no key);
2. models.dev (CAT-8): it fills gaps, and an exact match on the alias's own provider also replaces what
   OpenRouter only said for the same model id elsewhere; prices come from that exact match only;
3. FreeLLMAPI (CAT-9): free-tier rate limits, a context window only when none is known, quirks;
4. the serving endpoint's own listing (CAT-10).

Decisions where the spec is silent or an improvement changes it:
- The went-paid guard stays up while the price stays (models.md improvement 1): a non-free price raises
  `model:paid:<served>` when the last refresh saw it free *or* the alert is already open, and the daily
  served check (scripts/check_deprecations.py) no longer sweeps `model:paid:` keys.
- The file is written whole and atomically (improvement 7), so the dashboard never reads half of it.
- `cost` is models.dev's object as listed (prices per million tokens); `limits` only FreeLLMAPI's
  non-zero ones, so a later layer's absence never clears what the person entered (CAT-2 reads overrides).
"""

import datetime
import json

from ..core import fileio, paths
from ..net import transport
from . import alerts, catalog, connections, endpoints, registry, sources

FIELDS = ("context_window", "max_output", "vision", "tools", "structured_output", "reasoning", "input_modalities",
          "output_modalities", "knowledge_cutoff", "release_date", "open_weights", "description")
WHY = "Written by the catalog refresh (scripts/refresh_catalog.py); edit config/model-overrides.json instead."
FREELLMAPI_OWN = ("groq", "mistral", "nvidia", "openrouter")  # CAT-9: platforms matched on their own connection
DESCRIPTION_CHARS = 240


def path():
    return paths.file("config", "model-catalog.json")


def openrouter_models():
    """CAT-6: OpenRouter's list `{id: row}`, uncached; raises on any failure (the refresh then stops)."""
    body = json.loads(transport.get(sources.url("openrouter"), None, sources.OPENROUTER_TIMEOUT))
    rows = body.get("data") if isinstance(body, dict) else None
    if not isinstance(rows, list):
        raise ValueError("the reply has no `data` list")
    return {row["id"]: row for row in rows if isinstance(row, dict) and isinstance(row.get("id"), str)}


def feed(name):
    """A feed, fetched when the cache is stale; a failure falls back to the cached copy (CAT-6)."""
    try:
        return sources.fetch(name)
    except Exception:
        return sources.cached(name)


def _list(value):
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


def _text(value):
    return value if isinstance(value, str) else None


def _facts(context, output, inputs, outputs, cutoff, **more):
    """What both feeds state, in CAT-7/8's names, then `more`; an unknown (None) value is left out."""
    facts = {"context_window": sources.positive(context), "max_output": sources.positive(output),
             "input_modalities": inputs, "output_modalities": outputs,
             "vision": "image" in inputs if inputs is not None else None,
             "knowledge_cutoff": _text(cutoff), **more}
    return {k: v for k, v in facts.items() if v is not None}


def openrouter_facts(row):
    """CAT-7's values from one OpenRouter row."""
    top = row.get("top_provider") if isinstance(row.get("top_provider"), dict) else {}
    arch = row.get("architecture") if isinstance(row.get("architecture"), dict) else {}
    params = _list(row.get("supported_parameters"))
    description = _text(row.get("description"))
    more = {"description": description[:DESCRIPTION_CHARS] if description is not None else None}
    if params is not None:
        more.update(tools="tools" in params,
                    structured_output="response_format" in params or "structured_outputs" in params,
                    reasoning="reasoning" in params or "include_reasoning" in params)
    return _facts(row.get("context_length"), top.get("max_completion_tokens"), _list(arch.get("input_modalities")),
                  _list(arch.get("output_modalities")), row.get("knowledge_cutoff"), **more)


def modelsdev_facts(entry):
    """CAT-8's values from one models.dev model."""
    limit = entry.get("limit") if isinstance(entry.get("limit"), dict) else {}
    mods = entry.get("modalities") if isinstance(entry.get("modalities"), dict) else {}
    more = {mine: entry[theirs] for mine, theirs in (("tools", "tool_call"), ("reasoning", "reasoning"),
                                                     ("open_weights", "open_weights"))
            if isinstance(entry.get(theirs), bool)}
    return _facts(limit.get("context"), limit.get("output"), _list(mods.get("input")), _list(mods.get("output")),
                  entry.get("knowledge"), release_date=_text(entry.get("release_date")), **more)


def find_modelsdev(feed_data, provider, served):
    """CAT-8: `(entry, provider, exact)`: the alias's provider by exact id then by norm, else any provider by norm."""
    norm = catalog.norm_model(served)
    providers = {p: v for p, v in feed_data.items() if isinstance(v, dict) and isinstance(v.get("models"), dict)}
    own = providers.get(provider, {}).get("models", {}) if provider else {}
    if isinstance(own.get(served), dict):
        return own[served], provider, True
    for model_id, entry in own.items():
        if isinstance(entry, dict) and catalog.norm_model(model_id) == norm:
            return entry, provider, True
    for other, data in providers.items():
        for model_id, entry in data["models"].items():
            if isinstance(entry, dict) and catalog.norm_model(model_id) == norm:
                return entry, other, False
    return None, None, False


def find_freellmapi(rows, connection, served):
    """CAT-9: the row with the same normalised name, on the connection's own platform when it has one."""
    norm = catalog.norm_model(served)
    platform = next((p for p in FREELLMAPI_OWN if sources.PLATFORM_CONNECTION.get(p) == connection), None)
    return next((r for r in rows if catalog.norm_model(r["id"]) == norm
                 and (platform is None or r["platform"] == platform)), None)


def listing_layer(row):
    """CAT-10: what the endpoint's own listing states."""
    facts = dict(catalog.listing_facts(row))
    for field, key in (("input_modalities", "input_modalities"), ("output_modalities", "output_modalities")):
        if _list(row.get(key)) is not None:
            facts[field] = _list(row[key])
    features = _list(row.get("supported_features"))
    if features is not None:
        facts["structured_output"] = "json_mode" in features or "structured_outputs" in features
    return facts


def record_for(served, connection, endpoint, listed, openrouter, modelsdev, freellmapi, overrides):
    """One alias's refresh record `{fields..., cost?, limits?, quirks?, sources}` (CAT-7..10)."""
    record, said = {}, {}

    def put(facts, source, only_gaps=False, replace_from=None):
        for field, value in facts.items():
            if field not in record or (not only_gaps) or (replace_from and said.get(field, "").endswith(replace_from)):
                record[field], said[field] = value, source

    row = openrouter.get(served)
    slug = listed.get("openrouter", {}).get("slug") if isinstance(listed.get("openrouter"), dict) else None
    row = row or openrouter.get(slug) or openrouter.get(served.replace(":free", ""))
    if row:
        put(openrouter_facts(row), "openrouter" if connection == "openrouter" else "openrouter (same model id)")

    entry, provider, exact = find_modelsdev(modelsdev, sources.provider_of(connection, overrides), served)
    if entry:
        put(modelsdev_facts(entry), f"models.dev {provider}" + ("" if exact else " (same model)"), only_gaps=True,
            replace_from="(same model id)" if exact else None)
        if exact and isinstance(entry.get("cost"), dict):
            record["cost"], said["cost"] = entry["cost"], f"models.dev {provider}"

    free = find_freellmapi(freellmapi, connection, served)
    if free:
        where = f"freellmapi {free['platform']}"
        if free["limits"]:
            record["limits"], said["limits"] = free["limits"], where
        if free["context"]:
            if "context_window" not in record:
                record["context_window"], said["context_window"] = free["context"], where
            elif record["context_window"] != free["context"]:
                said["context_window_note"] = f"freellmapi says {free['context']:,}"
        if free["quirks"]:
            record["quirks"] = free["quirks"]

    put(listing_layer(listed), f"{endpoint} listing")
    return {**{f: record[f] for f in FIELDS if f in record},
            **{k: record[k] for k in ("cost", "limits", "quirks") if k in record}, "sources": said}


def price_watch(alias, served, connection, old_cost, new_cost, paid):
    """AL-4 (with improvement 1): went paid → the guard's alert, free again → cleared; paid connections skipped."""
    if connection in paid:
        return
    key = f"model:paid:{served}"
    now_free = sources.is_free(new_cost)
    if now_free:
        alerts.clear(key)
    elif now_free is False and (sources.is_free(old_cost) or key in alerts.active()):
        alerts.raise_alert(
            key, "went paid",
            f"{alias} is listed with a price now (models.dev): input {new_cost.get('input')}, "
            f"output {new_cost.get('output')} per million tokens",
            "check the provider's page: if the free tier is gone, retire the model or point it at a free route",
            alias=alias)


def refresh():
    """CAT-6..11: every registered alias's record, written whole; `{alias: record}`. Raises when OpenRouter
    cannot be read (the caller says so and exits)."""
    modelsdev, freellmapi = feed("modelsdev"), sources.freellmapi_rows(feed("freellmapi"))
    openrouter = openrouter_models()
    names = list(endpoints.readable())
    catalog.warm(names, refresh=True)  # CAT-6: every endpoint listed; one that fails lists nothing
    facts = connections.facts()
    old = fileio.read_json(path()).get("models")
    old = old if isinstance(old, dict) else {}
    try:
        fallback = endpoints.default()
    except RuntimeError:
        fallback = None
    models = {}
    for alias, reg in registry.registrations().items():
        served = reg.model_name or alias
        endpoint = endpoints.endpoint_name(reg) or fallback
        listed = catalog.cached(endpoint).get(served) if endpoint else None
        connection = connections.connection_of(alias)
        record = record_for(served, connection, endpoint, listed if isinstance(listed, dict) else {}, openrouter,
                            modelsdev, freellmapi, facts["models_dev"])
        models[alias] = record
        before = old.get(alias) if isinstance(old.get(alias), dict) else {}
        price_watch(alias, served, connection, before.get("cost"), record.get("cost"), facts["paid"])
    stamp = datetime.datetime.now().astimezone().replace(microsecond=0).isoformat()
    where = path()
    fileio.make_folder(where.parent)
    fileio.write_atomic(where, fileio.dumps({"_why": WHY, "refreshed": stamp, "models": models}))
    return models


def summary(models):
    """CAT-11's lines: the count, then one row per alias."""
    known = sum(1 for r in models.values() if r.get("context_window"))
    lines = [f"{len(models)} models; context window known for {known}. "
             "Overrides: config/model-overrides.json; rate limits per connection: config/connection-limits.json."]
    for alias, record in models.items():
        window = record.get("context_window")
        caps = [c for c in ("tools", "vision", "reasoning") if record.get(c)]
        lines.append(f"  {alias:<28} {f'{window:,}' if window else '?':>10}  {' '.join(caps) or '-'}"
                     f"{'  ' + record['sources'].get('context_window', '') if window else ''}")
    return lines
