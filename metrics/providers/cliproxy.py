"""CLI Proxy API adapter: add a model to one of its `openai-compatibility` providers (suite-cli-mcp.md HB-1, HB-4).

A connection is a provider's `name`. The management key is the endpoint's admin key with **no** fallback to its
ordinary key: nothing is sent without it, and a refused call is never retried, because the hub bans an address
after five refusals. The management API's PATCH replaces a provider's `models` list whole, so the list is read
again just before the write, only `models` is sent, and it is read once more after: if any entry sent is missing
then, another writer raced us and the add fails saying so. The served id is `<prefix>/<model>` when the provider
has a prefix.

Recorded shapes (checked against CLI Proxy API 6.x): `GET /v0/management/openai-compatibility` →
`{"openai-compatibility": [{"name", "prefix"?, "base-url", "api-key-entries", "models": [{"name", "alias"}]}]}`;
`PATCH /v0/management/openai-compatibility` `{"name", "value": {"models": [...]}}`; the key as
`Authorization: Bearer`.

    python -m benchwarmers.providers.cliproxy CONNECTION MODEL     the plan as JSON; writes nothing
"""

import sys

from ..net import transport
from . import hubs

WHICH = "cliproxy"
LABEL = "CLI Proxy API"
SUPPORTS = {"allow_list": "models", "tags": "", "logo": "", "access": "", "link": "prefix"}
CHECKED = ("6.0", "6.1", "6.2")
PATH = "/v0/management/openai-compatibility"
REFUSALS = {
    404: "its management API is off: set remote-management.secret-key in its config.yaml and restart it",
    403: "remote management is disabled: set remote-management.allow-remote: true in its config.yaml, or run the "
         "bench on the hub's machine",
    401: "it refused the management key: check the endpoint's admin key (not retried: the hub bans an address "
         "after 5 refusals)",
}


def endpoint():
    return hubs.endpoint(WHICH)


def _ask(method, body=None):
    name = endpoint()
    secret = hubs.admin_secret(name, fallback=False)
    if not secret:
        raise ValueError(f"{LABEL} ({name}) needs its management key: set it as the endpoint's admin key on the "
                         "Endpoints page (Change key); nothing was sent")
    try:
        return hubs.call(method, hubs.root(name) + PATH, secret, body)
    except transport.HTTPError as exc:
        if exc.code in REFUSALS:
            raise ValueError(f"{LABEL} ({name}) answered {exc.code}: {REFUSALS[exc.code]}") from None
        raise


def providers():
    reply = _ask("GET") or {}
    return [p for p in reply.get("openai-compatibility") or [] if isinstance(p, dict)]


def routes(model_id):
    """Discover's live routes: `[(connection, served id)]` for every openai-compatibility provider."""
    return sorted((str(p["name"]), _served(p, model_id)) for p in providers() if p.get("name"))


def _served(provider, model_id):
    prefix = str(provider.get("prefix") or "").strip("/")
    return f"{prefix}/{model_id}" if prefix else model_id


def _find(connection):
    found = providers()
    provider = next((p for p in found if p.get("name") == connection), None)
    if provider is None:
        raise ValueError(f"{LABEL} has no openai-compatibility provider named '{connection}'; known: "
                         f"{', '.join(sorted(str(p.get('name')) for p in found)) or 'none'}")
    return provider


def plan(connection, model_id):
    """HB-1: what adding `model_id` to provider `connection` would change; writes nothing."""
    provider = _find(connection)
    models = [m for m in provider.get("models") or [] if isinstance(m, dict)]
    served = _served(provider, model_id)
    if any(m.get("name") == model_id or m.get("alias") == model_id for m in models):
        return {"served": served, "endpoint": endpoint(), "connection": connection, "models": None,
                "steps": [f"{connection} in {LABEL} already has {model_id}; nothing to add"]}
    return {"served": served, "endpoint": endpoint(), "connection": connection,
            "models": models + [{"name": model_id, "alias": model_id}],
            "steps": [f"add {model_id} to {connection}'s models in {LABEL} (served as {served})"]}


def add(connection, model_id):
    """HB-1/HB-4: `(served id, [what was done])`; re-read before and after the whole-list PATCH."""
    step = plan(connection, model_id)  # the re-read just before the write
    done = list(step["steps"])
    if step["models"] is None:
        return step["served"], done
    _ask("PATCH", {"name": connection, "value": {"models": step["models"]}})
    after = [(m.get("name"), m.get("alias")) for m in _find(connection).get("models") or [] if isinstance(m, dict)]
    lost = [m["name"] for m in step["models"] if (m.get("name"), m.get("alias")) not in after]
    if lost:
        raise ValueError(f"{LABEL} changed {connection}'s models meanwhile: {', '.join(lost)} vanished after the "
                         "write; look at its list and add the model again")
    done.append(hubs.wait_listed(step["endpoint"], step["served"]))
    return step["served"], done


if __name__ == "__main__":
    sys.exit(hubs.main(plan, "cliproxy"))
