"""The two public model feeds, cached for a day (models.md §15, SRC-1..7).

    python -m benchwarmers.models.sources      force-fetch both feeds; one line each

`fetch(name)` downloads a feed at most every `MAX_AGE_S` (20 h, so a daily job always finds it stale:
models.md improvement 13) and keeps it in `runs/cache/<name>.json`, replaced atomically (improvement 7).
`cached(name)` reads that copy only: the dashboard (Discover, the picker's modalities) never waits on the
network (SRC-2, DS-1).

Every feed's address can be moved (OFF table, issue 19 rule 1): `BENCH_MODELSDEV_URL`,
`BENCH_FREELLMAPI_URL`, and for the catalog refresh `BENCH_OPENROUTER_MODELS_URL`; the tests point them at
fake servers on 127.0.0.1.

Decisions where the spec is silent:
- FreeLLMAPI's reply is read as a list of model objects, either the whole body or under `models`/`data`,
  each with `platform`, `modelId` (or `id`), `contextWindow`, `supportsVision`, `supportsTools`,
  `limits: {rpm, rpd, tpm, tpd}` and `quirks: [{title}]`; anything else in a row is ignored, and a row
  without a platform or an id is dropped. `tests/fixtures/feeds/freellmapi.json` is the recorded shape.
- A download that is not a JSON object (models.dev) or a list of rows (FreeLLMAPI) is a failed fetch:
  the cached copy stays.
"""

import json
import sys
import time

from ..core import fileio, paths, settings
from ..net import transport

# the variable holding each feed's address (its default is the public one, in metrics/core/settings.py)
FEEDS = {"modelsdev": "BENCH_MODELSDEV_URL", "freellmapi": "BENCH_FREELLMAPI_URL"}
OPENROUTER = "BENCH_OPENROUTER_MODELS_URL"
FEED_TIMEOUT = 90
OPENROUTER_TIMEOUT = 60
MAX_AGE_S = 20 * 3600

# SRC-3: connection -> models.dev provider
MODELS_DEV = {"nvidia-api": "nvidia", "ollama-cloud": "ollama-cloud", "mistral": "mistral", "groq": "groq",
              "openrouter": "openrouter", "api.inceptionlabs.ai": "inception", "api.reflection.ai": "reflection",
              "cerebras": "cerebras"}
# SRC-4: FreeLLMAPI platform -> models.dev provider, and -> bench connection
PLATFORM_PROVIDER = {"cloudflare": "cloudflare-workers-ai", "ollama": "ollama-cloud", "ovh": "ovhcloud",
                     "radeon": "amd", "zhipu": "zhipuai"}
PLATFORM_CONNECTION = {"groq": "groq", "nvidia": "nvidia-api", "mistral": "mistral", "openrouter": "openrouter",
                       "ollama": "ollama-cloud", "cerebras": "cerebras", "llm7": "llm7-api"}
OWN_CLIENT_FREE = {"opencode": True, "opencode-go": True}  # SRC-5's built-in list
LIMIT_AXES = ("rpm", "rpd", "tpm", "tpd")


def url(name):
    """Where feed `name` (or `openrouter`) is read: its environment variable, else the public address."""
    return settings.env(OPENROUTER if name == "openrouter" else FEEDS[name]).strip()


def cache_path(name):
    return paths.file("runs", "cache", f"{name}.json")


def _usable(name, data):
    return isinstance(data, dict) if name == "modelsdev" else bool(freellmapi_rows(data)) or data == []


def download(name, timeout=FEED_TIMEOUT):
    """The feed as parsed JSON, straight from the network (no cache); raises on any failure."""
    data = json.loads(transport.get(url(name), {"User-Agent": transport.USER_AGENT}, timeout))
    if not _usable(name, data):
        raise ValueError(f"{name} answered something that is not its feed")
    return data


def fresh(name, now=None):
    """Whether the cached copy is under 20 h old."""
    try:
        age = (now or time.time()) - cache_path(name).stat().st_mtime
    except OSError:
        return False
    return age < MAX_AGE_S


def fetch(name, force=False):
    """SRC-2: the cached copy when fresh, else a download that replaces it. A failed download raises."""
    if not force and fresh(name):
        return cached(name)
    data = download(name)
    where = cache_path(name)
    fileio.make_folder(where.parent)
    fileio.write_atomic(where, json.dumps(data))
    return data


def cached(name):
    """SRC-2: the cache only, `{}` when there is none (pages and Discover never wait on the network)."""
    try:
        with open(cache_path(name), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}


def freellmapi_rows(data):
    """FreeLLMAPI's rows as `[{platform, id, context, vision, tools, limits, quirks}]` (see the decisions)."""
    items = data.get("models", data.get("data")) if isinstance(data, dict) else data
    rows = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        platform, model = item.get("platform"), item.get("modelId") or item.get("id")
        if not isinstance(platform, str) or not platform or not isinstance(model, str) or not model:
            continue
        limits = item.get("limits") if isinstance(item.get("limits"), dict) else {}
        quirks = [q.get("title") for q in item.get("quirks") or []
                  if isinstance(q, dict) and isinstance(q.get("title"), str)]
        rows.append({"platform": platform.lower(), "id": model, "name": item.get("name") or model,
                     "context": positive(item.get("contextWindow")), "vision": item.get("supportsVision") is True,
                     "tools": item.get("supportsTools") if isinstance(item.get("supportsTools"), bool) else None,
                     "limits": {a: limits[a] for a in LIMIT_AXES if positive(limits.get(a))} or None,
                     "quirks": quirks[:5]})
    return rows


def positive(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def provider_of(connection, overrides=None):
    """SRC-3: the models.dev provider of a bench connection (`connections.json` `models_dev` wins)."""
    overrides = overrides or {}
    found = overrides.get(connection)
    return found if isinstance(found, str) and found else MODELS_DEV.get(connection)


def platform_provider(platform):
    return PLATFORM_PROVIDER.get(platform, platform)


def own_client_only(saved):
    """SRC-5: providers free only in their own client: the built-in list overlaid by the install's object."""
    found = dict(OWN_CLIENT_FREE)
    if isinstance(saved, dict):
        found.update({k: v for k, v in saved.items() if isinstance(v, bool)})
    return {k for k, on in found.items() if on}


def is_free(cost):
    """SRC-7: None for no cost (or both prices null); else whether both prices (null as 0) are 0."""
    if not isinstance(cost, dict) or (cost.get("input") is None and cost.get("output") is None):
        return None
    return all((cost.get(k) or 0) == 0 for k in ("input", "output"))


def count(name, data):
    if name == "modelsdev":
        return sum(len(p.get("models") or {}) for p in data.values() if isinstance(p, dict))
    return len(freellmapi_rows(data))


def main():
    """SRC-2's command: both feeds fetched now; a failure keeps the cached copy."""
    for name in FEEDS:
        try:
            data = fetch(name, force=True)
            print(f"{name}: {count(name, data)} models")
        except Exception as exc:
            print(f"{name}: could not fetch ({type(exc).__name__}: {exc}); keeping the cached copy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
