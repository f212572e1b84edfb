"""The free-tier guard: no call to a model the catalog now lists with a price (AL-5).

The catalog refresh's price watch (AL-4) raises `model:paid:<served>`, kind `went paid`, when a model
that was free is listed with a price. From then on the client sends it nothing: a call may be billed,
so payment required is assumed. The refusal names the two ways through: the alias in `allow_paid` of
`config/connections.json` (for good), or `BENCH_ALLOW_PAID=1` in the environment (for one run).

The client runs `hold(call)` in its PREFLIGHT, before pacing: a held call takes no pacing ticket.
Reading the alerts is bookkeeping: any failure there holds nothing.
"""

from ..core import settings
from . import alerts, connections

EXCERPT = 160


def held(alias, served):
    """The `went paid` alert holding `alias` (served as `served`), or None."""
    if settings.env("BENCH_ALLOW_PAID") == "1":
        return None
    try:
        alert = alerts.active().get(f"model:paid:{served}")
        if not isinstance(alert, dict) or alert.get("kind") != "went paid":
            return None
        if alias in connections.facts()["allow_paid"]:
            return None
    except Exception:
        return None
    return alert


def refusal(alias, alert):
    """The ERR table's free-tier guard text."""
    message = " ".join(str(alert.get("message") or "").split())[:EXCERPT]
    return (f"Error: client failed: not sent: the free-tier guard holds {alias}, which is listed with a price now "
            f"({message}), so a call may be billed: payment required is assumed. Allow it by adding '{alias}' to "
            f"allow_paid in config/connections.json, or for one run with BENCH_ALLOW_PAID=1.")


def hold(call):
    """The client's PREFLIGHT step: the refusal text when the guard holds the call's model, else ""."""
    served = call.registration.model_name or call.alias
    alert = held(call.alias, served)
    return refusal(call.alias, alert) if alert else ""
