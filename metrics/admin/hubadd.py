"""Discover's Add through a hub (dashboard.md DS-6): `POST /api/discover/add {connection, model, endpoint?}`.

The hub's adapter (`providers.owui`, `providers.litellm_hub`, `providers.cliproxy`) adds the model to the hub's
connection and says the served id and what it did; the add is logged as `<hub>-add` and the served id queued for
onboarding on the hub's endpoint (OB-13). When queueing is refused the model is in the hub even so, and the reply
says to onboard it from the Onboard dialog.

Decision where the spec leaves room: each adapter adds through one endpoint of its hub kind (`find_hub`, the
default first); an `endpoint` naming another endpoint of the same hub kind is refused, not silently replaced.
"""

import re

from ..core import changes, records
from ..core.errors import Invalid
from ..models import endpoints
from ..providers import cliproxy, hubs, litellm_hub, owui
from . import onboarding

ADAPTERS = {"openwebui": owui, "litellm": litellm_hub, "cliproxy": cliproxy}
MODEL_RULE = re.compile(r"^[\w./:@+-]{1,200}$")
CONNECTION_RULE = re.compile(r"^[\w.-]{1,80}$")


def _which(name, found):
    """`(hub, problem)` for the endpoint named (or the Open WebUI hub when none is)."""
    if not name:
        return "openwebui", ""
    if name not in found:
        return "", f"no endpoint '{name}'"
    which = endpoints.hub(name)
    if not which:
        return "", f"{name} is not a hub; add the model on it from the Onboard dialog"
    return which, ""


def add(body, who):
    """DS-6."""
    model, connection, name = (records.text(body.get(field)) for field in ("model", "connection", "endpoint"))
    errors = []
    if not MODEL_RULE.match(model):
        errors.append("the model id is the provider's id, e.g. vendor/model:free")
    if not CONNECTION_RULE.match(connection):
        errors.append("choose a connection")
    which, problem = _which(name, endpoints.load())
    if problem:
        errors.append(problem)
    if errors:
        raise Invalid(*errors)
    adapter, label = ADAPTERS[which], endpoints.HUB_LABELS[which]
    try:
        through = adapter.endpoint()
        if name and name != through:
            raise Invalid(f"{name} is not the {label} endpoint models are added through ({through})")
        served, steps = adapter.add(connection, model)
    except Invalid:
        raise
    except ValueError as exc:  # the adapter's own refusal (a connection it has not, a key it needs)
        raise Invalid(str(exc)) from exc
    except Exception as exc:
        raise Invalid(f"{label} refused: {hubs.said(exc)}") from exc
    changes.log(who, "", f"{which}-add", None, f"{served} on {connection}")
    added = {"served": served, "endpoint": through, "steps": steps}
    try:
        queued = onboarding.queue().add({"items": [{"served": served, "endpoint": through}]}, who)
    except Invalid as exc:  # the hub has it even so
        raise Invalid(*exc.messages, f"{label} now has {served}; onboard it from the Onboard dialog", **added) from exc
    return {**queued, **added}
