"""Feed caches for the offline demo, so Discover has rows with nothing fetched (`python serve.py --demo`).

The two caches Discover reads (`runs/cache/modelsdev.json`, `runs/cache/freellmapi.json`, metrics/models/sources.py)
are written in the feeds' own shapes: a few public providers as models.dev lists them, a FreeLLMAPI row or
two, and the demo upstream itself as a provider whose `api` is its base URL. That last one makes the demo
endpoint a direct route (DISC-4): the demo models show as on the bench, and `scout`, which the upstream
serves but the demo does not register, can be added from Discover and onboarded for real, offline.
"""

import datetime
import json

from ..core import fileio, paths
from ..models import catalog, sources

UNREGISTERED = "scout"  # served by the demo upstream, left off the bench for Discover's "Add via this"


def _model(name, context, output, *, tools=True, reasoning=False, vision=False, cost=(0, 0), released="2025-06-01",
           knowledge="2025-01", open_weights=True):
    return {"id": name, "name": name, "attachment": vision, "reasoning": reasoning, "tool_call": tools,
            "temperature": True, "knowledge": knowledge, "release_date": released, "last_updated": released,
            "modalities": {"input": ["text", "image"] if vision else ["text"], "output": ["text"]},
            "open_weights": open_weights, "cost": {"input": cost[0], "output": cost[1]},
            "limit": {"context": context, "output": output}}


def modelsdev(base_url):
    """A models.dev feed: the demo upstream as a provider, and a few public ones as the feed lists them."""
    demo = {"terse": _model("terse", 32768, 4096), "verbose": _model("verbose", 131072, 16384),
            "thinker": _model("thinker", 200000, 32000, reasoning=True),
            "seer": _model("seer", 128000, 4096, tools=False, vision=True),
            UNREGISTERED: _model(UNREGISTERED, 65536, 8192, released="2026-11-30")}
    return {
        "benchwarmers-demo": {"id": "benchwarmers-demo", "name": "Demo upstream (this machine)",
                              "npm": "@ai-sdk/openai-compatible", "api": base_url, "models": demo},
        "groq": {"id": "groq", "name": "Groq", "npm": "@ai-sdk/groq", "models": {
            "llama-3.3-70b-versatile": _model("llama-3.3-70b-versatile", 131072, 32768, cost=(0.59, 0.79),
                                              released="2024-12-06", knowledge="2023-12"),
            "openai/gpt-oss-120b": _model("openai/gpt-oss-120b", 131072, 32766, reasoning=True, cost=(0.15, 0.75),
                                          released="2025-08-05")}},
        "openrouter": {"id": "openrouter", "name": "OpenRouter", "npm": "@openrouter/ai-sdk-provider",
                       "api": "https://openrouter.ai/api/v1", "models": {
            "openai/gpt-oss-120b:free": _model("openai/gpt-oss-120b:free", 131072, 32768, reasoning=True,
                                               released="2025-08-05"),
            "google/gemma-3-27b-it:free": _model("google/gemma-3-27b-it:free", 96000, 8192, tools=False, vision=True,
                                                 released="2025-03-12")}},
        "mistral": {"id": "mistral", "name": "Mistral", "npm": "@ai-sdk/mistral", "models": {
            "mistral-small-latest": _model("mistral-small-latest", 128000, 16384, vision=True, cost=(0.1, 0.3),
                                           released="2025-03-17")}},
        "chutes": {"id": "chutes", "name": "Chutes", "npm": "@ai-sdk/openai-compatible",
                   "api": "https://llm.chutes.ai/v1", "models": {
            "zai-org/GLM-4.5-Air": _model("zai-org/GLM-4.5-Air", 131072, 98304, reasoning=True,
                                          released="2025-07-28")}}}


def freellmapi():
    """A FreeLLMAPI feed: free-tier limits for two of the public models."""
    return {"models": [
        {"platform": "groq", "modelId": "llama-3.3-70b-versatile", "name": "Llama 3.3 70B", "contextWindow": 131072,
         "supportsVision": False, "supportsTools": True, "limits": {"rpm": 30, "rpd": 1000, "tpm": 12000},
         "quirks": [{"title": "tool calls sometimes come back as text"}]},
        {"platform": "llm7", "modelId": "llm7.codestral-2501", "name": "Codestral", "contextWindow": 32000,
         "supportsVision": False, "supportsTools": False, "limits": {"rpm": 40}, "quirks": []}]}


def seed(base_url, today=None):
    """Write both caches, and mark `scout` as first seen today so the demo shows what "new" looks like."""
    for name, data in (("modelsdev", modelsdev(base_url)), ("freellmapi", freellmapi())):
        fileio.write_atomic(sources.cache_path(name), json.dumps(data))
    today = (today or datetime.date.today()).isoformat()
    seen = {f"{provider}|{catalog.norm_model(model)}": "baseline" for provider, data in modelsdev(base_url).items()
            for model in data["models"]}
    seen.update({f"{sources.platform_provider(r['platform'])}|{catalog.norm_model(r['id'])}": "baseline"
                 for r in sources.freellmapi_rows(freellmapi())})
    seen[f"benchwarmers-demo|{UNREGISTERED}"] = today
    fileio.write_atomic(paths.file("runs", "discover-seen.json"), fileio.dumps(seen))
