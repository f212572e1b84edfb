"""Discover: models the public feeds know that this bench could use (models.md DISC-1..5; dashboard.md DS-1..3).

`build()` reads only the two cached feeds (`runs/cache/`, metrics/models/sources.py) and local files, never the
network: the page must open at once whatever the internet does (DS-1, OFF-9). Its rows are kept in memory
and built again when either cache, the registry, endpoints.json or connections.json changes, or the day
does (the "new" window moves).

Routes (DISC-4) are made by `routes_for(row, place)` from what this install has: an Open WebUI hub that
serves bench models from the row's connection, and non-hub endpoints that reach the row's provider. The
live hub routes of DS-3 (LiteLLM, CLI Proxy API, asked per popup) are added by `live_routes()` through the
hub adapters (`metrics/dashboard/hubroutes.py`).

Decisions where the spec is silent:
- `GET /api/discover` (our addition) answers the page's rows: the shown ones (free, or connected, or on
  the bench) with the hidden count; paid rows go out with `paid: true` and the page shows them only when
  "Show paid" is ticked.
- "Which connections the Open WebUI hub serves bench models from" is read from `config/provider-tags.json`
  (the connection part of every tag), the record the hub's served check keeps; no hub is asked in `build()`.
- A direct route's endpoint maps to a provider by its name (SRC-3, `connections.json models_dev` first) or
  by its base URL equal to the provider's models.dev `api` (trailing `/` ignored).
- `discover-seen.json` is written under the file lock (models.md improvement 7).
"""

import datetime
import threading

from ..core import fileio, paths
from ..core.errors import NotFound
from ..models import catalog, connections, endpoints, registry, sources
from . import hubroutes

NEW_DAYS = 7
REACH = ("connected", "easy to add", "on bench", "other")  # DISC-5's sort order
SHARED_QUOTA = "; these routes share one quota when the account is the same"
OPENAI_COMPATIBLE = "@ai-sdk/openai-compatible"

_memo = {}  # data folder -> (state, result)
_memo_lock = threading.Lock()


def seen_path():
    return paths.file("runs", "discover-seen.json")


def _strings(value, default):
    found = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    return found or list(default)


def modelsdev_rows(feed, reverse):
    """DISC-1: one row per text-producing, non-deprecated model of every provider, keyed (provider, norm)."""
    rows = {}
    for provider, data in sorted(feed.items()):
        if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
            continue
        api = data.get("api") if isinstance(data.get("api"), str) else ""
        openai_like = bool(api) or data.get("npm") == OPENAI_COMPATIBLE
        for model_id, entry in sorted(data["models"].items()):
            if not isinstance(entry, dict) or entry.get("status") == "deprecated":
                continue
            mods = entry.get("modalities") if isinstance(entry.get("modalities"), dict) else {}
            ins, outs = _strings(mods.get("input"), ["text"]), _strings(mods.get("output"), ["text"])
            if "text" not in outs:
                continue
            limit = entry.get("limit") if isinstance(entry.get("limit"), dict) else {}
            cost = entry.get("cost") if isinstance(entry.get("cost"), dict) else None
            key = (provider, catalog.norm_model(model_id))
            rows.setdefault(key, {
                "provider": provider, "provider_name": data.get("name") or provider, "model": model_id,
                "name": entry.get("name") or model_id, "sources": ["models.dev"],
                "free": model_id.endswith(":free") or sources.is_free(cost) is True, "cost": cost,
                "context": sources.positive(limit.get("context")), "output": sources.positive(limit.get("output")),
                "tools": entry.get("tool_call") is True, "reasoning": entry.get("reasoning") is True,
                "vision": "image" in ins, "in_mods": ins, "out_mods": outs,
                "released": entry.get("release_date") if isinstance(entry.get("release_date"), str) else "",
                "knowledge": entry.get("knowledge") if isinstance(entry.get("knowledge"), str) else "",
                "open_weights": entry.get("open_weights") if isinstance(entry.get("open_weights"), bool) else None,
                "api": api, "openai_like": openai_like, "connection": reverse.get(provider), "limits": None})
    return rows


def merge_freellmapi(rows, feed_rows):
    """DISC-2: FreeLLMAPI rows join the models.dev row of the same key, or become rows of their own."""
    for free in feed_rows:
        provider = sources.platform_provider(free["platform"])
        key = (provider, catalog.norm_model(free["id"]))
        row = rows.get(key)
        if row is not None:
            if "freellmapi" not in row["sources"]:
                row["sources"].append("freellmapi")
            row["free"] = True
            row["limits"] = free["limits"] or row["limits"]
            row["context"] = row["context"] or free["context"]
            row["tools"] = row["tools"] or free["tools"] is True
            continue
        ins = ["text", "image"] if free["vision"] else ["text"]
        rows[key] = {
            "provider": provider, "provider_name": provider, "model": free["id"], "name": free["name"],
            "sources": ["freellmapi"], "free": True, "cost": None, "context": free["context"], "output": None,
            "tools": free["tools"] is True, "reasoning": False, "vision": free["vision"], "in_mods": ins,
            "out_mods": ["text"], "released": "", "knowledge": "", "open_weights": None, "api": "",
            "openai_like": False, "connection": sources.PLATFORM_CONNECTION.get(free["platform"]),
            "limits": free["limits"]}
    return rows


def bench_models():
    """`[{alias, served, norm, endpoint, connection}]` of every registered chat model."""
    try:
        fallback = endpoints.default()
    except RuntimeError:
        fallback = None
    found = []
    for alias, reg in registry.registrations().items():
        served = reg.model_name or alias
        found.append({"alias": alias, "served": served, "norm": catalog.norm_model(served),
                      "endpoint": endpoints.endpoint_name(reg) or fallback,
                      "connection": connections.connection_of(alias)})
    return found


class Place:
    """What this install has that a route can go through: its endpoints, its hub, its bench models."""

    def __init__(self):
        facts = connections.facts()
        self.overrides = facts["models_dev"]
        self.endpoints = endpoints.readable()
        self.hub = endpoints.find_hub("openwebui")
        tags = fileio.read_json(paths.file("config", "provider-tags.json"))
        self.hub_connections = {t.split("/", 1)[0] for t in tags.values() if isinstance(t, str) and t} \
            if self.hub else set()
        self.models = bench_models()
        self.own_client = sources.own_client_only(facts["free_in_own_client_only"])
        self.reverse = {}
        for connection in list(sources.MODELS_DEV) + list(self.overrides):
            provider = sources.provider_of(connection, self.overrides)
            if provider:
                self.reverse[provider] = connection

    def alias_on(self, endpoint, model, prefixed=False):
        """The alias registered with exactly `model` on `endpoint` (an Open WebUI hub may add `<prefix>.`)."""
        for m in self.models:
            if m["endpoint"] == endpoint and (m["served"] == model or (prefixed and m["served"].endswith("." + model))):
                return m["alias"]
        return None


def routes_for(row, place):
    """DISC-4: the routes this install has to `row`, without asking anyone (no live hub routes)."""
    found = []
    if place.hub and row["connection"] and row["connection"] in place.hub_connections:
        found.append({"via": "openwebui", "connection": row["connection"], "endpoint": place.hub,
                      "label": f"Open WebUI ({place.hub}) · {row['connection']}",
                      "note": f"through the hub's {row['connection']} connection, with its key",
                      "on_bench_as": place.alias_on(place.hub, row["model"], prefixed=True)})
    api = row["api"].rstrip("/")
    for name, entry in place.endpoints.items():
        if entry.kind == "hub":
            continue
        base = entry.base.rstrip("/")
        if sources.provider_of(name, place.overrides) == row["provider"] or (api and base == api):
            found.append({"via": "direct", "connection": name, "endpoint": name, "label": f"{name} (direct)",
                          "note": f"straight to {base}", "on_bench_as": place.alias_on(name, row["model"])})
    if len(found) > 1:
        for route in found:
            route["note"] += SHARED_QUOTA
    return found


def live_routes(rows):
    """DS-3's live hub routes (LiteLLM, CLI Proxy API) for these rows (the popup's row first, then the same model
    on other providers), and the hubs that could not be asked: `(routes, errors)`. The hub adapters are asked
    once per distinct model id (`metrics/dashboard/hubroutes.py`), and each route carries its row's facts like the
    routes this install has."""
    routes, errors = [], []
    for model_id in dict.fromkeys(r["model"] for r in rows):
        row = next(r for r in rows if r["model"] == model_id)
        found, failed = hubroutes.live_routes(model_id)
        routes += [_extended(row, route) for route in found]
        errors += [e for e in failed if e not in errors]
    return routes, errors


def _mark_seen(rows, today):
    """DISC-3: the first build marks everything `baseline`; a key never seen before gets today's date."""
    keys = [f"{r['provider']}|{catalog.norm_model(r['model'])}" for r in rows]

    def change(data):
        first = not data
        for key in keys:
            if key not in data:
                data[key] = "baseline" if first else today.isoformat()
        return dict(data)

    return fileio.update(seen_path(), change)


def _first_seen(value, today):
    """`(new, first_seen)` of a seen-file value."""
    try:
        day = datetime.date.fromisoformat(value)
    except (TypeError, ValueError):
        return False, "" if value != "baseline" else "baseline"
    return 0 <= (today - day).days < NEW_DAYS, value


def _compose(today):
    place = Place()
    rows = merge_freellmapi(modelsdev_rows(sources.cached("modelsdev"), place.reverse),
                            sources.freellmapi_rows(sources.cached("freellmapi")))
    seen = _mark_seen(rows.values(), today)
    found = []
    for row in rows.values():
        if row["free"] and row["provider"] in place.own_client:
            continue  # DISC-3: free only in the provider's own app, recorded as seen all the same
        norm = catalog.norm_model(row["model"])
        row["new"], row["first_seen"] = _first_seen(seen.get(f"{row['provider']}|{norm}"), today)
        row["routes"] = routes_for(row, place)
        on_bench = next((r["on_bench_as"] for r in row["routes"] if r["on_bench_as"]), None) if row["routes"] else \
            next((m["alias"] for m in place.models if m["connection"] == row["connection"] and m["norm"] == norm), None)
        row["on_bench_as"] = on_bench
        row["also_on"] = [f"{m['alias']} via {m['connection']}" for m in place.models
                          if m["norm"] == norm and m["alias"] != on_bench]
        row["reach"] = "on bench" if on_bench else "connected" if row["routes"] else \
            "easy to add" if row["openai_like"] else "other"
        found.append(row)
    found.sort(key=lambda r: (not r["free"], not r["new"], REACH.index(r["reach"]), r["provider"], r["model"]))
    return found


def _state():
    files = (sources.cache_path("modelsdev"), sources.cache_path("freellmapi"), registry.path(), endpoints.path(),
             connections.path(), paths.file("config", "provider-tags.json"))
    return tuple(fileio.stamp(str(f)) for f in files)


def build(today=None):
    """DISC-1..5: every row, sorted; memoised until a source file changes (DS-1). Never touches the network."""
    today = today or datetime.date.today()
    key = str(paths.data())
    state = (_state(), today)
    with _memo_lock:
        memo = _memo.get(key)
        if memo and memo[0] == state:
            return memo[1]
        rows = _compose(today)
        _memo[key] = (state, rows)
        return rows


def page(today=None):
    """What the Discover page draws (our `GET /api/discover`): shown rows, and how many were left out."""
    rows = build(today)
    shown = [dict(r, paid=not r["free"]) for r in rows if r["free"] or r["reach"] in ("connected", "on bench")]
    return {"ok": True, "errors": [], "rows": shown, "free": sum(1 for r in rows if r["free"]),
            "hidden": len(rows) - len(shown), "cached": {n: fileio.stamp(str(sources.cache_path(n))) is not None
                                                          for n in sources.FEEDS}}


def _extended(row, route):
    return {**route, "provider": row["provider_name"], "model": row["model"], "free": row["free"],
            "cost": row["cost"], "limits": row["limits"]}


def model(provider, model_id, today=None):
    """DS-3: one row's reply: its routes and those of every row with the same normalised model; `NotFound` for
    a row Discover does not have."""
    rows = build(today)
    row = next((r for r in rows if r["provider"] == provider and r["model"] == model_id), None)
    if row is None:
        raise NotFound(f"Discover has no '{model_id}' from '{provider}'; reload the page")
    norm = catalog.norm_model(model_id)
    kin = [row] + [r for r in rows if r is not row and catalog.norm_model(r["model"]) == norm]
    routes = [_extended(r, route) for r in kin for route in r["routes"]]
    live, errors = live_routes(kin)
    return {"ok": True, "errors": errors, "model": row, "routes": routes + live}
