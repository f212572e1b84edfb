"""Discover's live hub routes (dashboard.md DS-3, models.md DISC-4): the LiteLLM and CLI Proxy API hubs asked now.

`live_routes(model_id) -> (routes, errors)` is what `GET /api/discover-model` adds to a row's own routes. For
each hub kind in `ADAPTERS` that has an endpoint (the one its adapter adds through: `endpoints.find_hub`, the
default first), the hub is asked which connections it has, and every connection is one route:

    {"via": "hub", "hub": "litellm" | "cliproxy", "connection": <the hub's connection name>,
     "endpoint": <the hub endpoint's name>, "label": "<Hub label> <endpoint> · <connection>",
     "note": <one sentence for the popup>, "steps": [<what Add via this does, in order>],
     "on_bench_as": <alias registered with the id the hub would serve, on that endpoint> | None}

A hub that cannot be asked adds no route and one error, `could not ask <Hub label> (<endpoint>) which
connections it has: <ExceptionType>: <message, keys hidden>`; the others are still asked. It calls the hubs'
admin APIs (one request each), so it runs only on an explicit popup open, never while a page renders (OFF-9).
Open WebUI routes are not here: DISC-4 builds them from local files.
"""

from ..models import endpoints
from ..providers import cliproxy, hubs, litellm_hub
from ..panel import roster

ADAPTERS = {"litellm": litellm_hub, "cliproxy": cliproxy}


def _on_bench(served, endpoint, directory):
    return next((a for a, e in sorted(directory.items()) if e.get("served") == served and e.get("endpoint") == endpoint),
                None)


def live_routes(model_id):
    """`(routes, errors)` for `model_id` (the provider's id) from every LiteLLM and CLI Proxy API hub."""
    routes, errors = [], []
    directory = roster.directory()
    for which, adapter in ADAPTERS.items():
        endpoint = endpoints.find_hub(which)
        if not endpoint:
            continue
        label = endpoints.HUB_LABELS[which]
        try:
            found = adapter.routes(model_id)
        except Exception as exc:
            errors.append(f"could not ask {label} ({endpoint}) which connections it has: {hubs.said(exc)}")
            continue
        for connection, served in found:
            routes.append({
                "via": "hub", "hub": which, "connection": connection, "endpoint": endpoint,
                "label": f"{label} {endpoint} · {connection}",
                "note": f"{label} adds it to {connection} and serves it as {served}; the bench reaches it through {endpoint}.",
                "steps": [f"add {model_id} to {connection} in {label}", f"register {served} on {endpoint}",
                          "4-call probe", "suite"],
                "on_bench_as": _on_bench(served, endpoint, directory)})
    return routes, errors
