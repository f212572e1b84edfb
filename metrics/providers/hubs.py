"""What the three hub adapters share (suite-cli-mcp.md HB-1): the hub's endpoint, its admin root and key, one
admin call, the wait for an added model to be listed, and the command line that prints a plan.

An admin call goes through the transport (redirects never followed, so an admin key reaches only the hub's own
host) with the endpoint's admin key; nothing here prints or logs a key, and an error text that might echo one
passes `keys.hide` first. Refusals the operator can act on are ValueErrors whose message is the advice.
"""

import json
import sys
import time

from ..core import console, keys
from ..net import transport
from ..models import endpoints
from . import renewal

ADMIN_TIMEOUT = 30
LISTED_TRIES = 10
LISTED_PAUSE = 2.0  # seconds between two looks at the endpoint's /models after an add (HB-1)


def endpoint(which):
    """The name of the hub endpoint of kind `which`; ValueError saying to add one as kind hub when none."""
    name = endpoints.find_hub(which)
    if not name:
        label = endpoints.HUB_LABELS[which]
        raise ValueError(f"no {label} endpoint: add one on the Endpoints page as kind hub ({label}), "
                         "with its admin key")
    return name


def root(name):
    """The hub's own address: the endpoint's base without its `/v1` or `/api` tail (admin routes sit at the root)."""
    base = endpoints.base(name)
    for tail in ("/v1", "/api"):
        if base.endswith(tail):
            return base[: -len(tail)]
    return base


def admin_secret(name, fallback=True):
    """The endpoint's admin key (KEY-8); with `fallback=False` never its ordinary key (CLI Proxy API)."""
    found = endpoints.entry(name)
    return keys.admin_key(found.key, found.admin_key, fallback=fallback)


def call(method, url, secret, body=None, headers=None):
    """One admin request: the reply's parsed JSON (None for an empty body). HTTPError and OSError propagate."""
    sent = {"Accept": "application/json", **(headers or {})}
    if secret:
        sent["Authorization"] = f"Bearer {secret}"
    data = None
    if body is not None:
        sent["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    blob = transport.request(method, url, sent, data, ADMIN_TIMEOUT)
    return json.loads(blob) if blob.strip() else None


def admin_call(which, method, path, body=None, wants="an admin key"):
    """One admin call to the hub endpoint of kind `which` (its root + `path`, its admin key); a 401 or 403 becomes
    a ValueError saying the hub refused the key and that it wants `wants`."""
    name = endpoint(which)
    try:
        return call(method, root(name) + path, admin_secret(name), body)
    except transport.HTTPError as exc:
        if exc.code in (401, 403):
            raise ValueError(f"{endpoints.HUB_LABELS[which]} ({name}) refused the admin key ({exc.code}): {wants}; "
                             "set it as the endpoint's admin key") from None
        raise


def said(exc):
    """An exception as a sentence fit to show: its type and text with every known key hidden."""
    return f"{type(exc).__name__}: {keys.hide(str(exc))[:300]}"


def wait_listed(name, served, tries=LISTED_TRIES, pause=LISTED_PAUSE):
    """HB-1: look for `served` in the endpoint's `/models` up to `tries` times; the step that says how it went."""
    for attempt in range(tries):
        try:
            if served in renewal.models(name):
                return f"{name} lists {served}"
        except Exception:  # a hub restarting its model list answers again on a later look
            pass
        if attempt + 1 < tries:
            time.sleep(pause)
    return f"{name} does not list {served} yet; onboard it once it does"


def main(plan, module, argv=None):
    """`python -m metrics.<module> CONNECTION MODEL`: the plan as JSON (exit 0), or the reason (exit 1)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(f"usage: python -m metrics.{module} CONNECTION MODEL", file=sys.stderr)
        return 2
    try:
        print(json.dumps(plan(*argv), indent=2))
    except (ValueError, OSError, RuntimeError) as exc:
        console.say(f"{module}: {keys.hide(str(exc))}")
        return 1
    return 0
