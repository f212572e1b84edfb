"""LiteLLM proxy adapter: add a model to a connection the proxy already routes to (suite-cli-mcp.md HB-1, HB-3).

A connection is the host of a deployment's `api_base`, else its provider prefix (`groq` of `groq/llama-x`). Adding
needs the proxy's database mode (`/health/readiness` says `db: connected`): without it `/model/new` would live only
until the proxy restarts. The new deployment copies a sibling's connection-level params (never a masked `**`
value, which would be written back as the literal stars), and its `model_name` is the model id, which is the id
the bench is served it by.

Recorded shapes (checked against LiteLLM 1.7x): `GET /health/readiness` → `{"status", "db", "litellm_version"}`;
`GET /model/info` → `{"data": [{"model_name", "litellm_params": {"model", "api_base", …}, "model_info": {…}}]}`;
`POST /model/new` `{"model_name", "litellm_params", "model_info"}`.

    python -m benchwarmers.providers.litellm_hub CONNECTION MODEL     the plan as JSON; writes nothing
"""

import sys
from urllib.parse import urlsplit

from ..models import endpoints
from . import hubs

WHICH = "litellm"
LABEL = "LiteLLM"
SUPPORTS = {"allow_list": "", "tags": "", "logo": "", "access": "", "link": "model_name"}
CHECKED = ("1.72", "1.73", "1.74")
COPIED = ("api_base", "api_version", "custom_llm_provider", "litellm_credential_name", "organization",
          "extra_headers", "timeout", "stream_timeout", "max_retries")


def endpoint():
    return hubs.endpoint(WHICH)


def connection_of(deployment):
    """A deployment's connection: its `api_base` host, else its provider prefix."""
    params = deployment.get("litellm_params") or {}
    host = urlsplit(str(params.get("api_base") or "")).hostname
    return host or str(params.get("model") or "").partition("/")[0]


def _ask(method, path, body=None):
    return hubs.admin_call(WHICH, method, path, body, wants="adding models needs the master key or an admin user's key")


def deployments():
    reply = _ask("GET", "/model/info") or {}
    return [d for d in reply.get("data") or [] if isinstance(d, dict)]


def routes(model_id):
    """Discover's live routes: `[(connection, served id)]` for every connection the proxy routes to."""
    return [(c, model_id) for c in sorted({c for c in map(connection_of, deployments()) if c})]


def _masked(value):
    return isinstance(value, str) and "**" in value


def plan(connection, model_id):
    """HB-1: what adding `model_id` on `connection` would change; writes nothing; ValueError with the reason."""
    ready = _ask("GET", "/health/readiness") or {}
    if ready.get("db") != "connected":
        raise ValueError(f"{LABEL} keeps models only in memory (readiness says db: {ready.get('db') or 'none'}): "
                         "set DATABASE_URL and STORE_MODEL_IN_DB=True for the proxy, then restart it")
    found = deployments()
    same = [d for d in found if d.get("model_name") == model_id]
    elsewhere = sorted({connection_of(d) for d in same} - {connection})
    if elsewhere:
        raise ValueError(f"{model_id} is already deployed on {', '.join(elsewhere)} in {LABEL}; one model name "
                         "on two upstreams would be load-balanced between them")
    if same:
        return {"served": model_id, "endpoint": endpoint(), "connection": connection, "new": None,
                "steps": [f"{model_id} is already deployed on {connection}; nothing to add"]}
    sibling = next((d for d in found if connection_of(d) == connection), None)
    if sibling is None:
        raise ValueError(f"{LABEL} has no deployment on '{connection}' to copy; known: "
                         f"{', '.join(sorted({connection_of(d) for d in found})) or 'none'}")
    note = endpoints.version_note(WHICH, ready.get("litellm_version"), CHECKED)
    params = sibling.get("litellm_params") or {}
    prefix = str(params.get("model") or "").partition("/")[0] if "/" in str(params.get("model") or "") else ""
    new = {"model": f"{prefix}/{model_id}" if prefix else model_id}
    new.update({k: params[k] for k in COPIED if k in params and not _masked(params[k])})
    return {"served": model_id, "endpoint": endpoint(), "connection": connection,
            "new": {"model_name": model_id, "litellm_params": new, "model_info": {}},
            "steps": [f"deploy {model_id} on {connection} in {LABEL} (POST /model/new, copying {sibling.get('model_name')})"]
            + ([note] if note else [])}


def add(connection, model_id):
    """HB-1: `(served id, [what was done])`."""
    step = plan(connection, model_id)
    done = list(step["steps"])
    if step["new"] is not None:
        _ask("POST", "/model/new", step["new"])
        done.append(hubs.wait_listed(step["endpoint"], step["served"]))
    return step["served"], done


if __name__ == "__main__":
    sys.exit(hubs.main(plan, "litellm_hub"))
