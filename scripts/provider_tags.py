"""Which connection each model behind an Open WebUI hub is called through (suite-cli-mcp.md §3.8, PT-1..3).

    python -m benchwarmers.scripts.provider_tags

Writes `config/provider-tags.json`, `{served id: tag}`: the short name of the hub connection serving it
(`openrouter`, `groq`, `local`, ...), with the model's owner after a `/` when the listing names one
(`openrouter/mistralai`). The tags group models by connection for auto-retire's guard (AR-4), name the
connection in the dashboard, and tell `reprefix.py` what the hub lists now.

From the hub's connection settings only `OPENAI_API_BASE_URLS` is read: that answer also carries the hub's
provider keys, which are never kept, printed or written.

Decisions where the spec is silent:
- The hub root is the endpoint's base without its trailing `/api`; both calls send the endpoint's key (30 s).
- A hub that cannot be read exits 1 with `could not read <url>: <Type>: <msg>` and writes nothing.
- `urlIdx` that is missing or not a whole number is out of range (`?`).
"""

import collections
import ipaddress
import json
import sys
from urllib.parse import urlsplit

from ..core import console, fileio, paths
from ..net import transport
from ..models import connections, endpoints, registry

HOSTS = {"ollama.com": "ollama-cloud", "openrouter.ai": "openrouter", "api.groq.com": "groq",
         "api.cerebras.ai": "cerebras", "integrate.api.nvidia.com": "nvidia-api", "api.mistral.ai": "mistral",
         "api.llm7.io": "llm7-api", "api.openai.com": "openai", "api.anthropic.com": "anthropic"}
TIMEOUT = 30


def short_name(url, hosts):
    """PT-2: a connection URL's short name."""
    host = (urlsplit(url).hostname or "").lower()
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return HOSTS.get(host, host)
    return hosts.get(host) or "lan-proxy"


def tag(entry, names):
    """PT-3: one `/api/models` entry's tag."""
    if entry.get("connection_type") == "local":
        return "local"
    index = entry.get("urlIdx")
    found = names[index] if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(names) \
        else "?"
    owner = (entry.get("openai") or {}).get("owned_by") if isinstance(entry.get("openai"), dict) else None
    if owner and owner not in ("openai", found) and found != "?":
        return f"{found}/{owner}"
    return found


def fetch(url, secret):
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    return json.loads(transport.get(url, headers, TIMEOUT))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        print("usage: python -m benchwarmers.scripts.provider_tags", file=sys.stderr)
        return 2
    hub = endpoints.find_hub("openwebui")
    if hub is None:
        print("no Open WebUI endpoint: nothing to tag (each model's connection is its endpoint)")
        return 0
    root = endpoints.base(hub).removesuffix("/api")
    secret = endpoints.key(hub)
    try:
        config = fetch(root + "/openai/config", secret)
        listing = fetch(root + "/api/models", secret)
    except Exception as exc:  # any failure to read the hub
        console.say(f"could not read {root}: {type(exc).__name__}: {exc}")
        return 1
    urls = config.get("OPENAI_API_BASE_URLS") if isinstance(config, dict) else None
    hosts = connections.facts()["hosts"]
    names = [short_name(str(u), hosts) for u in urls or []]
    rows = listing.get("data") if isinstance(listing, dict) else listing
    tags = {str(e["id"]): tag(e, names) for e in rows or [] if isinstance(e, dict) and e.get("id")}
    for alias, reg in registry.registrations().items():
        where = endpoints.endpoint_name(reg)
        if where and where != hub and reg.model_name:
            tags[reg.model_name] = where
    fileio.write_atomic(paths.file("config", "provider-tags.json"),
                        json.dumps(tags, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    counts = collections.Counter(tags.values())
    print(f"wrote config/provider-tags.json: {len(tags)} model(s)")
    for name, count in sorted(counts.items()):
        print(f"  {count:4d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
