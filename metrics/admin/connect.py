"""Sign-in flows: key, OAuth with PKCE, device code, local (suite-cli-mcp.md CN-1..7; dashboard.md CN-1..9).

The Endpoints page asks `view()` which providers there are (`GET /api/connect`), `start()`s a sign-in
(`POST /api/connect/start`), and `poll()`s it (`POST /api/connect/poll`) until the provider's redirect reached
`callback()` (`GET /connect/callback…`, no login: the single-use state is the secret) or the device code was
entered. A finished sign-in is saved as an endpoint by the Endpoints page's own rules (`endpointedit.save`, EP-4..7)
with the token as its key, `who = connect`, the provider's entry fields and a `connect` record that never holds a
secret; a refresh token goes to the key store as `<key>.refresh`. `app()` keeps this install's own app
registration (`POST /api/connect/app`). The providers are `providers.providers`'; renewal is `providers.renewal`'s.

Pending sign-ins live at most 900 s in `runs/connect-pending.json` (0600, under its lock), not in memory: a
callback is claimed and marked used under that lock before any code exchange, so a doubled callback exchanges
once even when two processes of this install answer it, and a poll may reach another process than the start.
What the file holds is short-lived and useless alone (a PKCE verifier without the code; a device code only until
its user code is entered); tokens never touch it, and a settled sign-in's reply is forgotten once polled.

Decisions where the spec leaves room:
- A sign-in by code (`code: true`) of a key or OAuth provider uses its device URL; one without a device URL is
  refused with CN-6's sentence, so a page on another machine never opens a redirect it cannot receive.
- A device token request is sent by one poll at a time: the poll that takes it marks the record busy (60 s)
  under the lock, so two pages polling the same id do not both ask.
"""

import base64
import hashlib
import html
import secrets
import time
import urllib.parse

from ..core import changes, fileio, keys, paths, records
from ..core.errors import Invalid
from ..models import endpoints
from ..providers import providers, renewal
from . import endpointedit

LIFE = 900
DEVICE_INTERVAL = 5
SLOW_DOWN = 5
BUSY = 60
CALLBACK = "/connect/callback"
EXPIRED = "this sign-in is unknown or has expired; start it again"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


# ---------------------------------------------------------------- PKCE (CN-3)


def verifier():
    """64 random url-safe bytes."""
    return secrets.token_urlsafe(64)


def challenge(code_verifier):
    """base64url(SHA-256(verifier)) without padding: the S256 challenge."""
    digest = hashlib.sha256(code_verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_state():
    """24 random url-safe bytes (32 characters): the sign-in's id and its single-use secret."""
    return secrets.token_urlsafe(24)


# ---------------------------------------------------------------- the providers as the page sees them (CN-1)


def missing(pid, entry):
    """Why a provider cannot be used yet, or `""`."""
    if entry.get("flow") in ("oauth", "device") and not providers.client_id(pid, entry):
        return (f"{entry.get('label') or pid} needs an app of your own: register one at {entry.get('register')}, "
                "then enter its client id under Use your own app")
    return ""


def by_code(entry):
    """Whether the provider can sign in by typing a code (a dashboard reached from another machine)."""
    return entry.get("flow") in ("device", "local") or bool(entry.get("device"))


def _signed_in_by(endpoint, pid):
    """Whether `endpoint` (or None) holds a sign-in to provider `pid`."""
    return endpoint is not None and endpoint.connect is not None and endpoint.connect.get("provider") == pid


def _taken(found):
    return set(found) | set(keys.stored())


def suggest(pid, entry, found):
    """The name a new endpoint would get: a local provider already added under its own id keeps it."""
    if entry.get("flow") == "local" and _signed_in_by(found.get(pid), pid):
        return pid
    return endpoints.free_name(pid, _taken(found))


def view():
    """CN-1 `GET /api/connect`."""
    table, found, own = providers.table(), endpoints.load(), providers.own_ids()
    rows = []
    for pid, entry in table.items():
        row = {"id": pid, "label": entry.get("label") or pid, "flow": entry.get("flow"), "missing": missing(pid, entry),
               "suggest": suggest(pid, entry, found), "code": by_code(entry)}
        if entry.get("register"):
            row.update(register=entry["register"], own_id=own.get(pid, ""), shipped=bool(entry.get("client_id")))
        rows.append(row)
    return {"ok": True, "errors": [], "providers": rows}


# ---------------------------------------------------------------- pending sign-ins


def pending_path():
    return paths.file("runs", "connect-pending.json")


def _live(data, now):
    """Drop sign-ins older than LIFE seconds (CN-4)."""
    for sid in [s for s, r in data.items() if not isinstance(r, dict) or now - r.get("created", 0) > LIFE]:
        data.pop(sid)


def _change(change):
    def locked(data):
        _live(data, time.time())
        return change(data)

    return fileio.update(pending_path(), locked, mode=0o600)


def _remember(sid, record):
    _change(lambda data: data.__setitem__(sid, {**record, "created": time.time()}))


def _settle(sid, result):
    def put(data):
        if sid in data:
            data[sid].update(result=result, state="settled")

    _change(put)


# ---------------------------------------------------------------- start (CN-2)


def _name_problem(pid, entry, name, found):
    taken = _taken(found)
    if name in found:
        if not _signed_in_by(found[name], pid):
            return f"{name} is already an endpoint: give this one another name, e.g. {endpoints.free_name(name, taken)}"
        return ""
    if not endpoints.valid_name(name):
        return f"name: 2-32 lower-case letters, digits or '-', e.g. {endpoints.free_name(pid, taken)}"
    if name in keys.stored():
        return (f"a key named {name} is already in the llm key store: give this endpoint another name, "
                f"e.g. {endpoints.free_name(name, taken)}")
    return ""


def start(body, who, port):
    """CN-2 `POST /api/connect/start {provider, endpoint?, code?}`; `port` is the dashboard's (the redirect's)."""
    pid = records.text(body.get("provider"))
    entry = providers.table().get(pid)
    if entry is None:
        raise Invalid(f"no provider '{pid}'")
    found = endpoints.load()
    name = records.text(body.get("endpoint")).lower() or suggest(pid, entry, found)
    problem = _name_problem(pid, entry, name, found) or missing(pid, entry)
    if problem:
        raise Invalid(problem)
    label = entry.get("label") or pid
    if entry.get("flow") == "local":
        return {**save(pid, entry, name, pid), "note": ""}
    if body.get("code") is True and entry.get("flow") != "device" and not entry.get("device"):
        raise Invalid(f"{label} signs in only through a page on the machine the dashboard runs on; "
                      "open the dashboard there, or choose API key")
    try:
        if body.get("code") is True or entry.get("flow") == "device":
            return _start_device(pid, entry, name)
        return _start_redirect(pid, entry, name, port)
    except (OSError, ValueError) as exc:
        raise Invalid(f"could not start the sign-in to {label} ({type(exc).__name__}: {keys.hide(str(exc))[:200]})") \
            from exc


def _params(entry):
    """The provider's extra authorize parameters, `{host_id}` and `{nonce}` filled in."""
    fill = {}
    for k, v in (entry.get("params") or {}).items():
        text = str(v)
        if "{host_id}" in text:
            text = text.replace("{host_id}", providers.host_id())
        fill[k] = text.replace("{nonce}", secrets.token_urlsafe(16))
    return fill


def _start_redirect(pid, entry, name, port):
    sid, code_verifier = new_state(), verifier()
    flow = entry["flow"]
    redirect = f"http://{entry.get('loopback') or '127.0.0.1'}:{port}{CALLBACK}" + (f"/{sid}" if flow == "key" else "")
    cid = providers.client_id(pid, entry)
    if flow == "key":
        query = {"callback_url": redirect}
    else:
        query = {"response_type": "code", "client_id": cid, "redirect_uri": redirect, "state": sid}
        if entry.get("scope"):
            query["scope"] = entry["scope"]
    query.update(code_challenge=challenge(code_verifier), code_challenge_method="S256", **_params(entry))
    _remember(sid, {"provider": pid, "endpoint": name, "flow": flow, "verifier": code_verifier, "redirect": redirect,
                    "client_id": cid, "state": "pending"})
    url = entry["authorize"] + ("&" if "?" in entry["authorize"] else "?") + urllib.parse.urlencode(query)
    return {"ok": True, "errors": [], "id": sid, "url": url}


def _start_device(pid, entry, name):
    cid = providers.client_id(pid, entry)
    fields = {"client_id": cid, **({"scope": entry["scope"]} if entry.get("scope") else {})}
    reply = renewal.token_request(entry["device"], fields, bool(entry.get("device_json")))
    code, device_code = reply.get("user_code"), reply.get("device_code")
    if not (isinstance(code, str) and code and isinstance(device_code, str) and device_code):
        said = reply.get("error_description") or reply.get("error") or "no device code in the reply"
        raise ValueError(str(said)[:200])
    verify = str(reply.get("verification_uri") or reply.get("verification_url") or "")
    interval = reply.get("interval") if isinstance(reply.get("interval"), int) and reply["interval"] > 0 else DEVICE_INTERVAL
    sid = new_state()
    _remember(sid, {"provider": pid, "endpoint": name, "flow": "device", "device_code": device_code, "client_id": cid,
                    "interval": interval, "next_at": time.time() + interval, "state": "pending"})
    return {"ok": True, "errors": [], "id": sid, "code": code, "verify": verify}


# ---------------------------------------------------------------- the redirect's callback (CN-8)


def callback_id(raw):
    """CN-3: the sign-in id of a callback: its `state` query parameter, else the path's tail."""
    path, _, query = raw.partition("?")
    state = (urllib.parse.parse_qs(query).get("state") or [""])[0]
    return state or (path[len(CALLBACK) + 1:] if path.startswith(CALLBACK + "/") else "")


def _claim(sid):
    """The pending redirect sign-in `sid`, marked used in the same locked write; None when unknown, used or old."""
    def take(data):
        record = data.get(sid)
        if not sid or not record or record.get("state") != "pending" or record.get("flow") == "device":
            return None
        record["state"] = "used"
        return dict(record)

    return _change(take)


def callback(raw):
    """CN-8: finish a redirect sign-in from the callback's raw path: the save's reply (CN-4), or the body of
    the refusal saying why not; what it was is kept for the sign-in's next poll."""
    sid = callback_id(raw)
    record = _claim(sid)
    if record is None:
        return Invalid(EXPIRED[0].upper() + EXPIRED[1:] + ".", state="error", label="", endpoint="").body()
    try:
        result = _finish(record, raw)
    except Invalid as exc:
        result = exc.body()
    _settle(sid, result)
    return result


def _finish(record, raw):
    """The save's reply once the provider's code is exchanged for a token; `Invalid` when the provider said no."""
    pid = record["provider"]
    entry = providers.table().get(pid, {})
    label = entry.get("label") or pid
    query = urllib.parse.parse_qs(raw.partition("?")[2])

    def said(name):
        return (query.get(name) or [""])[0]

    if said("error"):
        raise _failed(entry, record["endpoint"], f"{label} said {said('error')}" +
                      (f": {said('error_description')}" if said("error_description") else ""))
    if not said("code"):
        raise _failed(entry, record["endpoint"], f"{label} sent no code back")
    return _exchange(pid, entry, record, said("code"))


def _exchange(pid, entry, record, code):
    label = entry.get("label") or pid
    try:
        if record["flow"] == "key":
            reply = renewal.token_request(entry["token"], {"code": code, "code_verifier": record["verifier"],
                                                           "code_challenge_method": "S256"}, as_json=True)
            token, refresh = reply.get("key"), ""
        else:
            reply = renewal.token_request(entry["token"], {
                "grant_type": "authorization_code", "code": code, "redirect_uri": record["redirect"],
                "client_id": record["client_id"], "code_verifier": record["verifier"],
                **(entry.get("token_params") or {})})
            token, refresh = reply.get("access_token"), reply.get("refresh_token")
    except (OSError, ValueError) as exc:
        raise _failed(entry, record["endpoint"], f"{label}'s token endpoint could not be read ({type(exc).__name__})") \
            from exc
    if not isinstance(token, str) or not token:
        why = str(reply.get("error_description") or reply.get("error") or "no token in its reply")[:200]
        raise _failed(entry, record["endpoint"], f"{label} gave no token: {keys.hide(why)}")
    return save(pid, entry, record["endpoint"], token, refresh if isinstance(refresh, str) else "",
                renewal.expires_at(reply), record.get("client_id") or "")


def _failed(entry, name, why):
    """A sign-in the provider refused: why, then the provider's hint."""
    hint = entry.get("hint")
    return Invalid(why, *([hint] if hint else []), state="error", endpoint=name, label=entry.get("label") or "")


def _outcome(result):
    """A settled sign-in's reply, polled once: its result, or its refusal raised again."""
    if result.get("ok"):
        return result
    raise Invalid(*result.get("errors") or [], **{k: v for k, v in result.items() if k not in ("ok", "errors")})


# ---------------------------------------------------------------- polling (CN-3, CN-4)


def poll(body, who):
    """CN-3 `POST /api/connect/poll {id}`: pending, error, or the save's reply once."""
    sid = records.text(body.get("id"))
    now = time.time()

    def look(data):
        record = data.get(sid)
        if not sid or record is None:
            return "gone", None
        if record.get("state") == "settled":
            data.pop(sid)
            return "settled", record["result"]
        if record.get("flow") != "device" or now < record.get("next_at", 0) or now < record.get("busy", 0):
            return "pending", None
        record["busy"] = now + BUSY  # one token request at a time (CN-4)
        return "ask", dict(record)

    what, found = _change(look)
    if what == "gone":
        raise Invalid(EXPIRED, state="error")
    if what == "settled":
        return _outcome(found)
    if what == "pending":
        return {"ok": True, "errors": [], "state": "pending"}
    return _ask_device(sid, found)


def _ask_device(sid, record):
    pid = record["provider"]
    entry = providers.table().get(pid, {})
    fields = {"client_id": record["client_id"], "device_code": record["device_code"], "grant_type": DEVICE_GRANT}
    try:
        reply = renewal.token_request(entry["token"], fields, bool(entry.get("device_json")))
    except (OSError, ValueError, KeyError):
        reply = {}  # a token endpoint that did not answer is asked again at the next interval
    error = reply.get("error")
    token = reply.get("access_token")
    if not error and isinstance(token, str) and token:
        _change(lambda data: data.pop(sid, None))
        refresh = reply.get("refresh_token") if isinstance(reply.get("refresh_token"), str) else ""
        return save(pid, entry, record["endpoint"], token, refresh, renewal.expires_at(reply), record["client_id"])
    if error in (None, "authorization_pending", "slow_down"):
        def wait(data):
            if sid in data:
                step = data[sid]["interval"] + (SLOW_DOWN if error == "slow_down" else 0)
                data[sid].update(interval=step, next_at=time.time() + step, busy=0)

        _change(wait)
        return {"ok": True, "errors": [], "state": "pending"}
    _change(lambda data: data.pop(sid, None))
    label = entry.get("label") or pid
    raise _failed(entry, record["endpoint"], f"{label} said {error}" + (
        f": {reply['error_description']}" if reply.get("error_description") else ""))


# ---------------------------------------------------------------- saving (CN-4, CN-5 of the suite spec)


def save(pid, entry, name, token, refresh="", expires=None, client_id=""):
    """A finished sign-in saved as endpoint `name` by EP-4..7 (`who = connect`), serialised with any renewal of
    the same key; the reply adds `state`, `endpoint` and `label`, and a failed save the provider's hint."""
    label = entry.get("label") or pid
    record = {"provider": pid, "at": changes.now_iso()}
    if expires:
        record["expires"] = expires
    if client_id and entry.get("flow") in ("oauth", "device"):
        record["client_id"] = client_id
    if refresh:
        record["refreshes"] = True
    extra = {**(entry.get("entry") or {}), "connect": record}
    found = endpoints.load()
    key_name = found[name].key if name in found and found[name].key else name
    try:
        with renewal.key_lock(key_name):
            result = endpointedit.save({"name": name, "base": entry.get("base") or "", "key": token,
                                        "new": name not in found}, "connect", extra)
            if refresh:
                keys.set_key(f"{key_name}.refresh", refresh)
    except Invalid as exc:
        hint = [entry["hint"]] if entry.get("hint") else []
        raise Invalid(*exc.messages, *hint, state="error", endpoint=name, label=label) from exc
    return {**result, "state": "done", "endpoint": name, "label": label}


def app(body, who):
    """CN-5 `POST /api/connect/app {provider, client_id}`: this install's own app registration, or back to the
    shipped one with an empty id."""
    pid = records.text(body.get("provider"))
    entry = providers.table().get(pid)
    if not entry or not entry.get("register"):
        raise Invalid(f"'{pid}' has no app to register")
    cid = records.text(body.get("client_id"))
    if cid and not providers.CLIENT_ID_RULE.match(cid):
        raise Invalid("a client id is 3-200 letters, digits or . _ ~ : - (a public id, never a secret)")

    def put(data):
        ids = data.get("client_ids") if isinstance(data.get("client_ids"), dict) else {}
        if cid:
            ids[pid] = cid
        else:
            ids.pop(pid, None)
        data["client_ids"] = ids

    fileio.update(providers.connect_path(), put)
    changes.log(who, "", "connect app", None, f"{pid} {'own' if cid else 'shipped'}")
    return {"ok": True, "errors": [], "changed": ["config/connect.json"]}


# ---------------------------------------------------------------- the callback's page (CN-8)


def page(result, home):
    """The small HTML page the provider's redirect lands on; every text escaped."""
    e = html.escape
    if result.get("ok"):
        body = (f"<h1>{e(result['label'])} is connected as {e(result['endpoint'])}</h1>"
                f"<p>It lists {result.get('served', 0):,} models. Back in Benchwarmers, onboard the ones you want.</p>")
    else:
        body = "<h1>Not connected</h1>" + "".join(f"<p>{e(str(m))}</p>" for m in result.get("errors") or [])
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Benchwarmers sign-in</title>"
            "<meta name=\"viewport\" content=\"width=device-width\"></head><body style=\"font-family:sans-serif;"
            f"max-width:40em;margin:3em auto\">{body}<p><a href=\"{e(home)}\">Back to Benchwarmers</a></p></body></html>")

