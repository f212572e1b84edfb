"""Sign-in providers: the shipped table, its check, and this install's own app registrations (CN-1, CN-2, CN-5).

The table is `config/connect-providers.json` in the checkout, overlaid field by field by the JSON file named in
`BENCH_CONNECT_PROVIDERS` (a provider there may also be new). That file is how tests point every provider URL
(authorize, token, device, base) at a fake provider on 127.0.0.1 (CN-7, OFF-4), and how an operator fixes a URL a
provider moved before a release does. `config/connect.json` in the data folder holds `host_id` (made once) and
`client_ids` (own app registrations); the dashboard writes it, under its lock.

Decisions where the spec leaves room:
- Shipped: OpenRouter (key), Hugging Face (oauth, register your own app), GitHub Models (device, register your
  own app) and Ollama (local). NanoGPT, Pollinations and the ChatGPT plan, which the reference offered, are not
  shipped: their third-party flows could not be checked against published documentation here, and CN-1 allows
  only published flows. A provider entry in the override file adds one.
- `device_json`: the device and token requests of a device flow are sent as JSON instead of a form.
- URLs must be https, except on a loopback host (a local runtime, a test's fake provider).
"""

import json
import re
import uuid
from urllib.parse import urlsplit

from ..core import fileio, paths, settings
from ..core.errors import Unusable
from ..models import endpoints

OVERRIDE_ENV = "BENCH_CONNECT_PROVIDERS"
FLOWS = ("key", "oauth", "device", "local")
URLS = {"key": ("base", "authorize", "token"), "oauth": ("base", "authorize", "token"),
        "device": ("base", "device", "token"), "local": ("base",)}
LOOPBACKS = ("127.0.0.1", "localhost")
DICT_FIELDS = ("params", "token_params", "entry")
ENTRY_KINDS = ("provider", "aggregator", "local")
CLIENT_ID_RULE = re.compile(r"^[A-Za-z0-9._~:-]{3,200}$")


def shipped_path():
    return paths.SHIPPED / "connect-providers.json"


def _read(where):
    try:
        data = json.loads(open(where, encoding="utf-8").read())
    except (OSError, ValueError) as exc:
        raise Unusable(f"{where} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise Unusable(f"{where} is not a JSON object of providers")
    return {k: v for k, v in data.items() if not k.startswith("_") and isinstance(v, dict)}


def table():
    """`{id: entry}`: the shipped providers overlaid by `BENCH_CONNECT_PROVIDERS` (field by field)."""
    found = _read(shipped_path())
    override = settings.env(OVERRIDE_ENV).strip()
    if override:
        for pid, fields in _read(override).items():
            found[pid] = {**found.get(pid, {}), **fields}
    return found


def _url_problem(pid, field, url):
    parts = urlsplit(url) if isinstance(url, str) else None
    if not url or not parts.hostname:
        return f"{pid}: {field} URL missing"
    if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in endpoints.LOCAL_HOSTS):
        return f"{pid}: {field} must be https ({url})"
    return ""


def problems(found):
    """CN-2's check of a provider table: every problem, `[]` when it is sound."""
    out = []
    for pid, entry in found.items():
        flow = entry.get("flow")
        if not endpoints.valid_name(pid):
            out.append(f"{pid}: the id must follow the endpoint-name rule (2-32 of a-z, 0-9, -)")
        if flow not in FLOWS:
            out.append(f"{pid}: flow must be one of {', '.join(FLOWS)}")
            continue
        needed = URLS[flow] + (("device",) if entry.get("device") and flow != "device" else ())
        out += [p for p in (_url_problem(pid, f, entry.get(f)) for f in needed) if p]
        if flow in ("oauth", "device") and not (entry.get("client_id") or entry.get("register")):
            out.append(f"{pid}: flow {flow} needs a client_id or a register hint")
        if entry.get("client_id") and not CLIENT_ID_RULE.match(str(entry["client_id"])):
            out.append(f"{pid}: client_id is 3-200 of letters, digits or . _ ~ : -")
        if entry.get("loopback", "127.0.0.1") not in LOOPBACKS:
            out.append(f"{pid}: loopback is 127.0.0.1 or localhost")
        out += [f"{pid}: {f} must be an object" for f in DICT_FIELDS if not isinstance(entry.get(f, {}), dict)]
        shape = entry.get("entry") if isinstance(entry.get("entry"), dict) else {}
        if shape.get("kind", "provider") not in ENTRY_KINDS:
            out.append(f"{pid}: entry kind is one of {', '.join(ENTRY_KINDS)}")
        if not entry.get("label"):
            out.append(f"{pid}: label missing")
    return out


def connect_path():
    return paths.file("config", "connect.json")


def own_ids():
    """`{provider: client id}` this install registered (CN-5)."""
    ids = fileio.read_json(connect_path()).get("client_ids")
    return {k: v for k, v in ids.items() if isinstance(v, str) and v} if isinstance(ids, dict) else {}


def client_id(pid, entry):
    """The client id a sign-in sends: this install's own app, else the shipped public one, else `""`."""
    return own_ids().get(pid) or str(entry.get("client_id") or "")


def host_id():
    """This install's `urn:uuid:` id (CN-5), made once under the file's lock; providers' `{host_id}` param."""
    def make(data):
        if not isinstance(data.get("host_id"), str) or not data["host_id"]:
            data["host_id"] = f"urn:uuid:{uuid.uuid4()}"
        return data["host_id"]

    return fileio.update(connect_path(), make)
