"""A provider's token endpoint, and the renewal of an expiring sign-in before a call (CN-6, CL-2 d, LOCK-4).

`token_request()` is the one way the bench posts to a token or device endpoint (sign-ins and renewals alike):
through the transport (redirects never followed), a form or JSON body, and the reply's JSON whether the provider
answered 200 or an OAuth error status. `fresh(endpoint)` renews a sign-in that has `refreshes` and at most
`LEAD` seconds left, under the per-key lock `config/connect-<key>.lock` shared by threads and processes; the
entry is read again after taking the lock, so of two callers racing only the first renews and the second finds
the new expiry. The new refresh token is stored before the access token: a crash between the two leaves a
working refresh token, never a spent one. A failure is a sentence containing `sign in again`, which the suite
classifies `signin` (never a retirement).

`models(name)` is EP-12's listing with its renewal first. It lives here, not in `endpoints`, because renewal
sits a layer above the registry (tests/test_layers.py); every caller above that layer lists through it (the
picker, onboarding, the hubs' wait, the served check, the scripts, the suite). The catalog's cached listing,
in the registry layer, cannot: a listing it asks with an expired token comes back empty and is asked again at
its next refresh, after a call or the picker has renewed the sign-in.
"""

import datetime
import json
import urllib.parse

from ..core import fileio, keys, paths
from ..net import transport
from ..models import endpoints
from . import providers

LEAD = 300
TOKEN_TIMEOUT = 30
LOCK_TIMEOUT = 60


def key_lock(key_name):
    """The per-key lock a renewal and a sign-in's save of the same key share (LOCK-4)."""
    return fileio.lock(paths.file("config", f"connect-{key_name or '-'}"), timeout=LOCK_TIMEOUT)


def token_request(url, fields, as_json=False):
    """POST `fields` to a token/device endpoint: the reply's JSON object (an OAuth error reply included).
    Raises OSError/ValueError when there is no JSON object to read."""
    if as_json:
        data, kind = json.dumps(fields).encode(), "application/json"
    else:
        data, kind = urllib.parse.urlencode(fields).encode(), "application/x-www-form-urlencoded"
    headers = {"Content-Type": kind, "Accept": "application/json"}
    try:
        blob = transport.request("POST", url, headers, data, TOKEN_TIMEOUT)
    except transport.HTTPError as exc:
        blob = exc.body
        if not blob.strip():
            raise
    reply = json.loads(blob)
    if not isinstance(reply, dict):
        raise ValueError(f"{url} answered JSON that is not an object")
    return reply


def expires_at(reply, now=None):
    """The ISO expiry of a token reply's `expires_in`, or None when it gives none."""
    seconds = reply.get("expires_in")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        return None
    now = now or datetime.datetime.now().astimezone()
    return (now + datetime.timedelta(seconds=seconds)).isoformat(timespec="seconds")


def left(record, now=None):
    """Seconds before a `connect` record's expiry; None when it has none or it cannot be read."""
    try:
        until = datetime.datetime.fromisoformat(str(record.get("expires")))
    except ValueError:
        return None
    if until.tzinfo is None:
        until = until.astimezone()
    return (until - (now or datetime.datetime.now().astimezone())).total_seconds()


def due(record, now=None):
    """A sign-in that renews itself and has at most LEAD seconds left (CN-6)."""
    if not isinstance(record, dict) or not record.get("refreshes"):
        return False
    seconds = left(record, now)
    return seconds is not None and seconds <= LEAD


def fresh(endpoint):
    """Renew `endpoint`'s sign-in when due (CN-6): `""` when nothing was due or it was renewed, else why it failed
    (a sentence containing `sign in again`)."""
    entry = endpoints.readable().get(endpoint)
    if entry is None or not due(entry.connect):
        return ""
    key_name = entry.key or endpoint
    with key_lock(key_name):
        entry = endpoints.readable().get(endpoint)  # re-checked: another process may have renewed it
        record = entry.connect if entry else None
        if not due(record):
            return ""
        return _renew(endpoint, key_name, record)


def _renew(endpoint, key_name, record):
    pid = record.get("provider") or ""
    provider = providers.table().get(pid)
    refresh = keys.key(f"{key_name}.refresh")
    if not provider or not refresh:
        why = f"no provider '{pid}'" if not provider else "no refresh token is kept"
        return f"the sign-in to {pid or endpoint} for {endpoint} ran out ({why}); sign in again on the Endpoints page"
    fields = {"grant_type": "refresh_token", "refresh_token": refresh,
              "client_id": record.get("client_id") or providers.client_id(pid, provider),
              **(provider.get("token_params") or {})}
    label = provider.get("label") or pid
    try:
        reply = token_request(provider["token"], fields)
    except (OSError, ValueError) as exc:
        return f"{label} did not renew the sign-in for {endpoint} ({type(exc).__name__}); sign in again on the Endpoints page"
    token = reply.get("access_token")
    if not isinstance(token, str) or not token:
        said = str(reply.get("error_description") or reply.get("error") or "no access token in the reply")[:200]
        return f"{label} refused to renew the sign-in for {endpoint} ({keys.hide(said)}); sign in again on the Endpoints page"
    if isinstance(reply.get("refresh_token"), str) and reply["refresh_token"]:
        keys.set_key(f"{key_name}.refresh", reply["refresh_token"])  # first: a spent refresh token is never all we hold
    keys.set_key(key_name, token)
    now = datetime.datetime.now().astimezone()

    def put(data):
        found = data.get(endpoint)
        if isinstance(found, dict) and isinstance(found.get("connect"), dict):
            found["connect"]["expires"] = expires_at(reply, now)
            found["connect"]["renewed"] = now.isoformat(timespec="seconds")
            if not found["connect"]["expires"]:
                found["connect"].pop("expires")

    fileio.update(endpoints.path(), put)
    return ""


def models(name, timeout=endpoints.LIST_TIMEOUT):
    """EP-12: `endpoints.models(name)` after renewing an expiring sign-in first; a renewal that fails shows later
    as the listing's 401 (the picker then says "check the key", the row "sign in again")."""
    fresh(name)
    return endpoints.models(name, timeout)


def signed_in(record, now=None):
    """EP-11's `connect` of an endpoint row: the record plus `label`, `flow` and `expired` (ran out and does not
    renew itself: the row says "sign in again"); never a secret."""
    if not isinstance(record, dict):
        return None
    entry = providers.table().get(record.get("provider"), {})
    seconds = left(record, now)
    shown = {k: record[k] for k in ("provider", "at", "expires", "client_id", "refreshes") if k in record}
    return {**shown, "label": entry.get("label") or record.get("provider") or "", "flow": entry.get("flow") or "",
            "expired": seconds is not None and seconds <= 0 and not record.get("refreshes")}
