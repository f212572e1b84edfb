"""Endpoints: where models are served and which key opens them (EP-1..16).

`DATA/config/endpoints.json` maps a name to an entry (`base`, `key` NAME,
`default`, `kind`, `hub`, `api`, `headers`, `unlisted_models`, `models_url`,
`decisions`, `admin_key`, `connect`). The file holds key names, never secrets.
`load()` is its one reader: `{name: Endpoint}`.

`load()` raises on a damaged file (EP-1) so no writer mistakes it for an empty
one. The lookups used by pages and naming (`readable`, `endpoint_name`,
`find_hub`, and `registry.entry_of`) treat a damaged file as "no endpoints"
instead: a half-edited file must not crash a panel, and `load()` still says what
is wrong to whoever asks. Which endpoint an alias is on is the registry's to say
(`registry.endpoint_of`, `registry.entry_of`): registrations name endpoints, not
the other way round.

Model listings go through the transport's connection pool (metrics/net/transport.py), which never
follows a redirect, so a key never reaches another host (models.md improvement 4).

    python -m benchwarmers.models.endpoints             each endpoint: base, key set or missing, models served
"""

import dataclasses
import datetime
import json
import re
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..core import console, fileio, keys, paths, records
from ..core.errors import Invalid, Unusable
from ..net import transport

KINDS = ("provider", "aggregator", "hub", "local")
HUBS = ("openwebui", "litellm", "cliproxy")
HUB_LABELS = {"openwebui": "Open WebUI", "litellm": "LiteLLM", "cliproxy": "CLI Proxy API"}
APIS = ("chat", "responses", "anthropic", "gemini")
NAME_RULE = re.compile(r"^[a-z0-9][a-z0-9-]{1,31}$")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
ANTHROPIC_VERSION = "2023-06-01"
GEMINI_PAGE_SIZE = 1000
LIST_TIMEOUT = 30

NO_ENDPOINTS = (
    "no endpoints configured: add one on the dashboard's Endpoints page (Add an endpoint), or run "
    "`python -m benchwarmers.scripts.init --endpoint NAME BASE_URL --key` "
    "(docs/getting-started.md, \"Use a real provider\"); endpoints are kept in {path}"
)


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One entry of config/endpoints.json: `{name: {base, key, kind?, hub?, api?, default?: true, headers?,
    models_url?, unlisted_models?: [id...], decisions?, admin_key?, connect?: {provider, at, expires?, client_id?,
    refreshes?}}}`. Keys starting `_` are comments, and an entry that is no object is no endpoint.

    `key` and `admin_key` name keys in llm's key store, never secrets. Text fields read a number as its digits
    and anything empty as "". `kind` is the stated one when valid, else inferred from the base URL (EP-3);
    `hub` is a hub endpoint's hub (`openwebui` unless stated), `""` for any other (EP-4); `api` is `chat`
    unless stated. `headers` is `{}` and `connect` None unless objects. `stored` is the entry as written: the
    writers build on it, so no field they do not know is dropped."""

    name: str
    base: str = ""
    key: str = ""
    kind: str = "provider"
    hub: str = ""
    api: str = "chat"
    default: bool = False
    headers: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    models_url: str = ""
    unlisted_models: tuple[str, ...] = ()
    decisions: str = ""
    admin_key: str = ""
    connect: Mapping[str, Any] | None = None
    stored: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _text(value: object) -> str:
    return str(value) if value else ""


def record(name: str, entry: Mapping[str, Any]) -> Endpoint:
    """The `Endpoint` an entry of the file (or one about to be written) stands for."""
    base = _text(entry.get("base"))
    stated = entry.get("kind")
    kind = stated if stated in KINDS else inferred_kind(base)
    hub = (entry.get("hub") if entry.get("hub") in HUBS else "openwebui") if kind == "hub" else ""
    connect = entry.get("connect")
    return Endpoint(name, base, _text(entry.get("key")), kind, hub, _text(entry.get("api")) or "chat",
                    bool(entry.get("default")), records.mapping(entry.get("headers")), _text(entry.get("models_url")),
                    records.strings(entry.get("unlisted_models")), _text(entry.get("decisions")),
                    _text(entry.get("admin_key")), connect if isinstance(connect, dict) else None, entry)


def path():
    return paths.file("config", "endpoints.json")


_cache: tuple[object, dict[str, Endpoint]] = (None, {})  # ((path, mtime_ns, size, inode), endpoints)


def load() -> dict[str, Endpoint]:
    """`{name: Endpoint}` in file order (EP-1): `{}` when missing; `Unusable` (a RuntimeError) when unreadable or
    not an object.

    Cached by the file's stat (the store's mark on Postgres); callers must not mutate the result.
    """
    global _cache
    where = str(path())
    try:
        key = (where, *fileio.mark(where))  # on Postgres, the store's mark (docs/replicas.md)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise Unusable(f"{where} cannot be read: {exc}") from exc
    if _cache[0] == key:
        return _cache[1]
    try:
        data = json.loads(fileio.read_text(where))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested past the parser's depth
        raise Unusable(f"{where} cannot be read: {exc}") from exc
    if not isinstance(data, dict):
        raise Unusable(f"{where} is not a JSON object of endpoints")
    found = {name: record(name, entry) for name, entry in data.items()
             if not name.startswith("_") and isinstance(entry, dict)}
    _cache = (key, found)
    return found


def readable() -> dict[str, Endpoint]:
    """`load()`, or `{}` when the file is damaged: for lookups that must not fail a request."""
    try:
        return load()
    except RuntimeError:
        return {}


def default():
    """The default endpoint's name (EP-2): the first marked `default`, else the first; `Unusable` with none."""
    found = load()
    if not found:
        raise Unusable(NO_ENDPOINTS.format(path=path()))
    for name, entry in found.items():
        if entry.default:
            return name
    return next(iter(found))


def entry(name=None):
    """The endpoint `name` (the default when None); an empty `Endpoint` of that name when there is none."""
    wanted = name or default()
    return load().get(wanted) or Endpoint(wanted)


def base(name=None):
    """The endpoint's base URL without a trailing `/` (EP-13)."""
    return entry(name).base.rstrip("/")


def key(name=None):
    """The secret for the endpoint's key name, or `""` (EP-13)."""
    return keys.key(entry(name).key)


def inferred_kind(url):
    """EP-3's kind of an endpoint at `url` that states none: a hub by its `/api` path, local by its host."""
    parts = urlsplit(str(url or ""))
    if parts.path.rstrip("/").endswith("/api"):
        return "hub"
    if (parts.hostname or "") in LOCAL_HOSTS:
        return "local"
    return "provider"


def kind(name):
    """`provider`, `aggregator`, `hub` or `local` for endpoint `name` (EP-3); a name no endpoint has is a provider,
    as an entry stating nothing at no URL is."""
    found = load().get(name)
    return found.kind if found else "provider"


def hub(name):
    """For a hub endpoint its hub (`openwebui` unless stated), else `""` (EP-4)."""
    found = load().get(name)
    return found.hub if found else ""


def find_hub(which):
    """The endpoint name whose hub is `which`, default first; None when none (EP-5). Never raises.
    Callers: `scripts/reprefix.py`, the hub adapters (`providers.hubs`) and Discover's live hub routes."""
    found = readable()
    if not found:
        return None
    first = default()
    for name in [first] + [n for n in found if n != first]:
        if hub(name) == which:
            return name
    return None


def recorded_whole(name):
    """Whether the served check records this endpoint's whole listing (EP-6): the default hub or local runtime
    (`scripts/check_deprecations.py`, DP-2)."""
    try:
        return name == default() and kind(name) in ("hub", "local")
    except RuntimeError:
        return False


def auth_headers(api, secret):
    """The header carrying `secret` for `api` (EP-7)."""
    if api == "anthropic":
        return {"x-api-key": secret}
    if api == "gemini":
        return {"x-goog-api-key": secret}
    return {"Authorization": f"Bearer {secret}"}


def valid_name(name):
    """Endpoint names: 2-32 of lower-case letters, digits and `-`, not starting with `-` (EP-8)."""
    return bool(NAME_RULE.match(name or ""))


def endpoint_name(reg):
    """The endpoint a registration is on (EP-9): same base and key name, else same base; else None."""
    if not reg:
        return None
    wanted = reg.api_base.rstrip("/")
    key_name = reg.api_key_name
    same_base = [(name, e) for name, e in readable().items() if e.base.rstrip("/") == wanted]
    for name, found in same_base:
        if found.key == key_name:
            return name
    return same_base[0][0] if same_base else None


def listing_url(found):
    """Where an endpoint's model list is read (EP-11)."""
    if found.models_url:
        return found.models_url
    url = found.base.rstrip("/") + "/models"
    return url + f"?pageSize={GEMINI_PAGE_SIZE}" if found.api == "gemini" else url


def listing_headers(found, secret=""):
    headers = dict(found.headers)
    api = found.api
    if api == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
    if secret:
        headers.update(auth_headers(api, secret))
    return headers


def rows_of(found, body):
    """`{id: row}` from a parsed listing body (EP-11)."""
    if found.api == "gemini":
        rows = {}
        for row in (body.get("models") if isinstance(body, dict) else None) or []:
            if isinstance(row, dict) and "generateContent" in (row.get("supportedGenerationMethods") or []):
                name = str(row.get("name") or "").removeprefix("models/")
                if name:
                    rows[name] = {**row, "id": name}
        return rows
    items = body.get("data") if isinstance(body, dict) else body
    return {
        row["id"]: row
        for row in items or []
        if isinstance(row, dict) and row.get("id") and row.get("visibility", "list") == "list"
    }


def list_models(found, secret="", timeout=LIST_TIMEOUT):
    """GET an entry's model list: `{id: row}` (EP-11). HTTP and network errors propagate; redirects are errors."""
    blob = transport.get(listing_url(found), listing_headers(found, secret), timeout)
    return rows_of(found, json.loads(blob))


def models(name=None, timeout=LIST_TIMEOUT):
    """`{id: row}` an endpoint serves: its `unlisted_models` overlaid by the live listing (EP-12). Raises if unreachable."""
    found = entry(name)
    served = {model: {"id": model} for model in found.unlisted_models}
    served.update(list_models(found, keys.key(found.key), timeout))
    return served


def snapshot_key(served, endpoint):
    """How the served snapshot names a model (EP-14): bare on the default endpoint, else `served@endpoint`
    (`scripts/check_deprecations.py`, `metrics/admin/retire.py`, DP-1)."""
    try:
        on_default = endpoint == default()
    except RuntimeError:
        on_default = False
    return served if on_default else f"{served}@{endpoint}"


def version_note(which, version, checked):
    """Advice when a hub's release is not one the bench was checked against (EP-15); `""` when it is."""
    label = HUB_LABELS.get(which, which)
    tried = ", ".join(checked)
    if not version:
        return f"{label} did not report a version; the bench was checked against {tried}."
    release = str(version).strip().removeprefix("v")
    if any(release == prefix or release.startswith(prefix + ".") for prefix in checked):
        return ""
    return f"{label} {release} is not a release the bench was checked against ({tried}); most things should still work."


def describe(name, found, default_name):
    """One line of the listing command (EP-16)."""
    mark = " (default)" if name == default_name else ""
    key_name = found.key
    # EP-16 names only `key set` / `key MISSING`; an entry naming no key (a local runtime) needs none,
    # so it says `no key` rather than reporting a key as missing.
    key_state = ("key set" if keys.key(key_name) else "key MISSING") if key_name else "no key"
    try:
        served = f"{len(models(name))} served"
    except Exception as exc:
        served = f"unreachable ({type(exc).__name__})"
    return f"{name}{mark}  {found.base.rstrip('/')}  {key_state}  {served}"


BASE_RULE = re.compile(r"^https?://[^\s\"'<>]+$")
KEYLESS_TIMEOUT = 15


def free_name(name, taken):
    """The first of `name`, `name-2` … `name-999` that no endpoint and no stored key uses (EP-4)."""
    for candidate in [name] + [f"{name}-{i}" for i in range(2, 1000)]:
        if candidate not in taken:
            return candidate
    return name


def add_problems(name, base):
    """EP-4's checks of a new endpoint's name and base URL, all of them, before anything is asked."""
    problems = []
    if not valid_name(name):
        problems.append("name: 2-32 lower-case letters, digits or '-', e.g. openrouter")
    elif name in load():
        taken = set(load()) | set(keys.stored())
        problems.append(f"there is already an endpoint named {name}: give this one its own name, "
                        f"e.g. {free_name(name, taken)}, or change its key with `llm keys set {name}`")
    if not BASE_RULE.match(base):
        problems.append("base URL must start http:// or https://, e.g. https://openrouter.ai/api/v1")
    return problems


def listing_test(found, secret):
    """EP-6: `(count, note)` when the entry's listing answers, else `(None, why)`; a listing that also answers
    without the key proves the URL, not the key, and the note says so."""
    url = listing_url(found)
    try:
        count = len(list_models(found, secret))
    except transport.HTTPError as exc:
        check = " — check the key" if exc.code in (401, 403) else ""
        return None, f"{url} answered {exc.code}{check}; nothing saved"
    except Exception as exc:
        return None, f"could not list {url} ({type(exc).__name__}: {exc}); nothing saved"
    if not secret:
        return count, ""
    try:
        list_models(found, "", KEYLESS_TIMEOUT)
    except Exception:
        return count, "The key was checked: the list needs it."
    return count, "It lists models without a key, so the key itself is only checked by the first call to one of its models."


def add(name, base, secret="", who="cli"):
    """Add a new endpoint by the dashboard's rule (EP-4..7): `{"ok", "errors", "served", "note"}`, or `Invalid`
    with every reason it was not.

    Saved only when its model list answers. The key, when there is one, goes to the key store under the
    endpoint's name (never into endpoints.json). Decision: with no add form to choose a kind, the kind is
    the one EP-3 infers from the URL (an Ollama on localhost is `local`), and an endpoint added without any
    key names none (a local runtime needs none) rather than naming a key that is not there.
    """
    name, base = name.strip().lower(), base.strip().rstrip("/")
    errors = add_problems(name, base)  # `Unusable` for a damaged endpoints.json, never written over (EP-1)
    if errors:
        raise Invalid(*errors)
    written = {"base": base, "key": name if secret else "", "kind": inferred_kind(base)}
    count, note = listing_test(record(name, written), secret)
    if count is None:
        raise Invalid(note)
    if secret and keys.stored().get(name) != secret:
        keys.set_key(name, secret)

    def put(data):
        if name in data:  # added meanwhile, by another process
            raise Invalid(f"there is already an endpoint named {name}")
        data[name] = written

    fileio.update(path(), put)
    fileio.append_jsonl(paths.file("config", "changes.jsonl"),
                        {"at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "by": who, "alias": "", "field": "endpoint", "old": None,
                         "new": {"name": name, **written}})
    return {"ok": True, "errors": [], "served": count, "note": note}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        found = load()
        default_name = default()
    except RuntimeError as exc:
        console.say(exc)
        return 1
    for name, each in found.items():
        print(describe(name, each, default_name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
