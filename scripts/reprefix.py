"""A hub connection gained a prefix: repoint its registrations (suite-cli-mcp.md §3.7, RP-1..3).

    python -m benchwarmers.scripts.reprefix CONNECTION --prefix P [--apply]

Open WebUI can put a prefix before every model of one connection (`codestral-latest` becomes
`llm7.codestral-latest`). The models are the same; only their served ids changed, so auto-retire would see
them as gone. This repoints each registration whose served id the hub no longer lists but lists with the
prefix, keeping every alias (all history is keyed by alias). Dry run by default: it says what it would change.

`config/provider-tags.json` (written by `scripts/provider_tags.py`) is what the hub lists now and which
connection each id is on.

Decisions where the spec is silent:
- Only registrations on the Open WebUI endpoint are considered: another endpoint's served ids are not the hub's.
- "Its tag already is CONNECTION" compares the tag's connection (its first `/` segment), so `openrouter/acme`
  is on `openrouter`.
- A missing or empty provider-tags.json exits 1 saying to run provider_tags.py first (§13.15).
"""

import argparse
import sys

from ..core import fileio, paths
from ..models import endpoints, registry


def plan(connection, prefix, hub, tags):
    """RP-2: `[(alias, served, new served)]` in file order."""
    moves = []
    for alias, reg in registry.registrations().items():
        served = reg.model_name
        if not served or (endpoints.endpoint_name(reg) or endpoints.default()) != hub:
            continue
        if str(tags.get(served, "")).split("/", 1)[0] == connection:
            continue
        if prefix + served in tags and served not in tags:
            moves.append((alias, served, prefix + served))
    return moves


def migrate(moves, hub):
    """RP-3: move the snapshot's `last_seen` entries to the new keys, dropping their `first_missing`."""
    where = paths.file("config", "served-snapshot.json")
    keys = {endpoints.snapshot_key(old, hub): endpoints.snapshot_key(new, hub) for _, old, new in moves}

    def move(snap):
        seen = snap.setdefault("last_seen", {})
        missing = snap.setdefault("first_missing", {})
        moved = 0
        for old, new in keys.items():
            if old in seen:
                seen[new] = max(seen.pop(old), seen.get(new, ""))
                moved += 1
            missing.pop(old, None)
            missing.pop(new, None)
        return moved

    return fileio.update(where, move, sort_keys=True) if where.exists() else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.scripts.reprefix",
                                     description="Repoint registrations after a hub connection gained a prefix "
                                     "(dry run unless --apply).")
    parser.add_argument("connection")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--apply", action="store_true")
    args = parser.parse_args(argv)
    hub = endpoints.find_hub("openwebui")
    if hub is None:
        sys.exit("no Open WebUI endpoint: only Open WebUI prefixes a connection's model ids, so there is nothing "
                 "to repoint")
    tags = fileio.read_json(paths.file("config", "provider-tags.json"))
    if not tags:
        sys.exit("config/provider-tags.json is missing or empty: run python -m benchwarmers.scripts.provider_tags first")
    moves = plan(args.connection, args.prefix, hub, tags)
    if not moves:
        print(f"nothing to do: no registration on {hub} is served as {args.prefix}<its id> now")
        return 0
    for alias, old, new in moves:
        print(f"  {alias}: {old} -> {new}")
    if not args.apply:
        print(f"dry run: {len(moves)} registration(s) would be repointed; add --apply to write them")
        return 0
    done = registry.repoint({alias: new for alias, _, new in moves})
    moved = migrate([m for m in moves if m[0] in done], hub)
    print(f"repointed {len(done)} registration(s); moved {moved} served-snapshot entr{'y' if moved == 1 else 'ies'}")
    print("next: python -m benchwarmers.scripts.sync_config (the llm CLI's copy), then python -m benchwarmers.scripts.provider_tags")
    return 0


if __name__ == "__main__":
    sys.exit(main())
