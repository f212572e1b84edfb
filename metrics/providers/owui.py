"""Open WebUI adapter: add a model to one of its OpenAI connections (suite-cli-mcp.md HB-1, HB-2).

A connection is named by its index in Open WebUI's connection list, or by a name: a tag of that connection, or the
bench's connection tag (`config/provider-tags.json`, `<connection>/<vendor>`) of the models served through it.
Refusals: a connection switched off; the id already served by another connection (two connections cannot serve
one id: give one a prefix); a connection whose Model IDs list is in use while `/openai/config` shows masked keys
(writing the config back would store the masks as the keys). The model record is made public, tagged with the
connection's tag, with the logo, capabilities and default features of a sibling carrying that tag.

Recorded shapes (checked against Open WebUI 0.5 and 0.6): `GET /api/version` → `{"version"}`;
`GET /openai/config` → `{"ENABLE_OPENAI_API", "OPENAI_API_BASE_URLS": [...], "OPENAI_API_KEYS": [...],
"OPENAI_API_CONFIGS": {"<i>": {"enable", "tags": [{"name"}], "prefix_id", "model_ids": [...]}}}` and
`POST /openai/config/update` with the same keys; `GET /api/models` → `{"data": [{"id", "urlIdx"}]}`;
`GET /api/v1/models/` → `[{"id", "name", "base_model_id", "meta": {"profile_image_url", "capabilities", "tags",
"defaultFeatureIds"}, "params", "access_control", "is_active"}]`; `POST /api/v1/models/create` and
`POST /api/v1/models/model/update?id=<id>` with a record. `access_control: null` is Open WebUI's public
(every user may read: `user:*`).

    python -m benchwarmers.providers.owui CONNECTION MODEL     the plan as JSON; writes nothing
"""

import sys
import urllib.parse

from ..core import fileio, paths
from ..models import endpoints
from . import hubs

WHICH = "openwebui"
LABEL = "Open WebUI"
SUPPORTS = {"allow_list": "model_ids", "tags": "meta.tags", "logo": "meta.profile_image_url",
            "access": "access_control", "link": "prefix_id"}
CHECKED = ("0.5", "0.6")
COPIED_META = ("profile_image_url", "capabilities", "defaultFeatureIds")


def endpoint():
    return hubs.endpoint(WHICH)


def _ask(method, path, body=None):
    return hubs.admin_call(WHICH, method, path, body,
                           wants="connections and models are changed with an admin user's API key")


def _tags(config):
    return [t.get("name") if isinstance(t, dict) else str(t) for t in config.get("tags") or []]


def _index(connection, config, listed):
    configs = config.get("OPENAI_API_CONFIGS") or {}
    count = len(config.get("OPENAI_API_BASE_URLS") or [])
    if connection.isdigit() and int(connection) < count:
        return int(connection)
    for i in range(count):
        if connection in _tags(configs.get(str(i)) or {}):
            return i
    tagged = fileio.read_json(paths.file("config", "provider-tags.json"))
    served = {s for s, tag in tagged.items() if isinstance(tag, str) and tag.split("/", 1)[0] == connection}
    found = {row.get("urlIdx") for row in listed if row.get("id") in served and isinstance(row.get("urlIdx"), int)}
    if len(found) == 1:
        return found.pop()
    raise ValueError(f"{LABEL} has no connection '{connection}': name it by its index (0-{count - 1}) or a tag")


def plan(connection, model_id):
    """HB-1/HB-2: what adding `model_id` to `connection` would change; writes nothing; ValueError with the reason."""
    config = _ask("GET", "/openai/config") or {}
    listed = [r for r in (_ask("GET", "/api/models") or {}).get("data") or [] if isinstance(r, dict)]
    index = _index(connection, config, listed)
    settings = (config.get("OPENAI_API_CONFIGS") or {}).get(str(index)) or {}
    if settings.get("enable") is False:
        raise ValueError(f"connection {index} ({connection}) is switched off in {LABEL}; switch it on first")
    prefix = str(settings.get("prefix_id") or "")
    served = f"{prefix}.{model_id}" if prefix else model_id
    other = next((r for r in listed if r.get("id") == served and r.get("urlIdx") not in (None, index)), None)
    if other is not None:
        raise ValueError(f"{served} is already served by connection {other['urlIdx']} in {LABEL}; give connection "
                         f"{index} a Prefix ID so the two ids differ")
    steps, ids = [], list(settings.get("model_ids") or [])
    write_config = bool(ids) and model_id not in ids
    if write_config:
        if any("*" in str(k) for k in config.get("OPENAI_API_KEYS") or []):
            raise ValueError(f"{LABEL} shows its connection keys masked in /openai/config, so writing the config back "
                             f"would destroy them: add {model_id} to connection {index}'s Model IDs by hand")
        steps.append(f"add {model_id} to connection {index}'s Model IDs")
    tag = (_tags(settings) or [connection])[0]
    records = [r for r in _ask("GET", "/api/v1/models/") or [] if isinstance(r, dict)]
    existing = next((r for r in records if r.get("id") == served), None)
    sibling = next((r for r in records if r.get("id") != served
                    and tag in _tags(r.get("meta") or {})), None)
    meta = {k: v for k, v in ((sibling or {}).get("meta") or {}).items() if k in COPIED_META}
    meta["tags"] = [{"name": tag}]
    record = {**(existing or {}), "id": served, "name": (existing or {}).get("name") or model_id,
              "base_model_id": None, "meta": {**((existing or {}).get("meta") or {}), **meta},
              "params": (existing or {}).get("params") or {}, "access_control": None, "is_active": True}
    steps.append(f"{'update' if existing else 'create'} the public model record {served} tagged {tag}"
                 + (f", with {sibling['id']}'s logo and capabilities" if sibling else ""))
    note = endpoints.version_note(WHICH, (_ask("GET", "/api/version") or {}).get("version"), CHECKED)
    steps += [note] if note else []
    return {"served": served, "endpoint": endpoint(), "connection": connection, "index": index,
            "model_ids": ids + [model_id] if write_config else None, "record": record,
            "update": existing is not None, "steps": steps}


def _write_ids(index, model_ids):
    """The connection's Model IDs written back; the config is read again here so the plan (which is printed)
    never holds the connection keys."""
    config = _ask("GET", "/openai/config") or {}
    configs = dict(config.get("OPENAI_API_CONFIGS") or {})
    configs[str(index)] = {**(configs.get(str(index)) or {}), "model_ids": model_ids}
    _ask("POST", "/openai/config/update", {**config, "OPENAI_API_CONFIGS": configs})


def add(connection, model_id):
    """HB-1: `(served id, [what was done])`."""
    step = plan(connection, model_id)
    if step["model_ids"] is not None:
        _write_ids(step["index"], step["model_ids"])
    if step["update"]:
        _ask("POST", "/api/v1/models/model/update?id=" + urllib.parse.quote(step["served"], safe=""), step["record"])
    else:
        _ask("POST", "/api/v1/models/create", step["record"])
    return step["served"], step["steps"] + [hubs.wait_listed(step["endpoint"], step["served"])]


if __name__ == "__main__":
    sys.exit(hubs.main(plan, "owui"))
