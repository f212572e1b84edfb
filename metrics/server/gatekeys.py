"""Gateway keys: who may call the gateway, which collections, how often (security.md §9).

    python -m benchwarmers.server.gatekeys create NAME [--collections a,b] [--rpm 30]
    python -m benchwarmers.server.gatekeys list
    python -m benchwarmers.server.gatekeys revoke NAME

A key is `bwk_` + 43 URL-safe characters, shown once by `make()` and stored only as
the SHA-256 of the whole string in `<data>/config/gateway-keys.json` (KEY-1): 256
random bits need no slow hash. The file is the only state, so a revocation or a hand
edit holds on the next request in every process and on both ports; reads go through
`fileio.read_json`, which re-parses only when the file changed (improvement 22). On Postgres
(docs/replicas.md) the store keeps that object instead, read again when it changed, so a key made or
revoked on one replica holds on every replica's next request.

Decisions where the spec leaves room:
- A present but invalid `rpm` (`0`, `"5"`, `true`, `2.5`) caps the key at 1 request a
  minute instead of none (improvement 10), and `listing()` names the problem.
- The per-minute window is kept by the store (`store.rates` in the data folder, or Postgres for
  replicas: docs/replicas.md), so the dashboard port and the standalone gateway, in any number
  of processes, share one count (improvement 11). It holds key names and times, never a key.
- `last_used` is written with a single non-blocking lock attempt (improvement 22): a
  busy file skips the write, never delays the call.
- Making and revoking append the change-log line of MGMT-3 with the caller as `by`
  (improvement 20): `cli` from this command, the dashboard passes its caller.
- `/bench/*` calls are scoped too (improvement 12): `sees_call()` tells whether a call
  id's panel ran a collection the key may call.
"""

import argparse
import datetime
import hashlib
import hmac
import re
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core import fileio, paths
from ..core.errors import Invalid
from ..panel import collections, offload
from ..store import store

PREFIX = "bwk_"
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{1,31}$")
RESERVED = "local"
MAX_RPM = 10_000
LAST_USED_EVERY = 60

BAD_NAME = "name: 2-32 lower-case letters, digits or '-', e.g. open-webui"
BAD_LOCAL = "local is what a call without a key is recorded as; pick another name"
BAD_COLLECTIONS = "collections: names such as core, as they follow bench/"
BAD_RPM = "requests a minute: a whole number from 1 to 10000, or empty for no cap"
TAKEN = "there is already a key named {}: revoke it first, or pick another name"

def path() -> Path:
    return paths.file(*store.GATEWAY_KEYS)


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def entries() -> dict[str, Any]:
    """The key file as stored (KEY-2): `{name: entry}`; `{}` when missing or not an object. Do not mutate."""
    return store.current().read_json(store.GATEWAY_KEYS, comments=False)


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _valid_rpm(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_RPM


def make(name: object, collections: list[str] | None = None, rpm: object = None, by: str = "cli") -> str:
    """A new key named `name` (KEY-4, KEY-5): returns the key, which is never stored or shown again.

    Raises `Invalid` (a ValueError) with KEY-4's message for the first rule broken.
    """
    if not isinstance(name, str) or not NAME.match(name):
        raise Invalid(BAD_NAME)
    if name == RESERVED:
        raise Invalid(BAD_LOCAL)
    chosen = sorted(set(collections or []))
    if not all(isinstance(c, str) and NAME.match(c) for c in chosen):
        raise Invalid(BAD_COLLECTIONS)
    if rpm is not None and not _valid_rpm(rpm):
        raise Invalid(BAD_RPM)
    key = PREFIX + secrets.token_urlsafe(32)
    entry: dict[str, Any] = {"sha256": digest(key), "hint": key[-4:], "created": now_iso()}
    if chosen:
        entry["collections"] = chosen
    if rpm is not None:
        entry["rpm"] = rpm

    def add(data: dict[str, Any]) -> None:
        if name in data:
            raise Invalid(TAKEN.format(name))
        data[name] = entry

    store.current().update_json(store.GATEWAY_KEYS, add, mode=0o600)
    _log_change(by, None, {"name": name, "collections": chosen, "rpm": rpm})
    return key


def revoke(name: str, by: str = "cli") -> bool:
    """Remove the key named `name` (KEY-6); True when there was one. Effective on the next request."""
    existed = store.current().update_json(store.GATEWAY_KEYS, lambda data: data.pop(name, None) is not None,
                                          mode=0o600)
    if existed:
        _log_change(by, name, None)
    return existed


def _log_change(by: str, old: Any, new: Any) -> None:
    """MGMT-3/4's change-log line; it names the key, never holds it."""
    fileio.append_jsonl(paths.file("config", "changes.jsonl"),
                        {"at": now_iso(), "by": by, "alias": "", "field": "gateway key", "old": old, "new": new})


def lookup(value: object) -> str | None:
    """The name of the key `value`, or None (KEY-7).

    Every entry is compared in constant time, with no early exit, so the time taken does
    not tell how many entries there are before the match or how close a guess came.
    """
    if not isinstance(value, str) or not value:
        return None
    wanted = digest(value).encode("ascii")
    found = None
    for name, entry in entries().items():
        stored = entry.get("sha256") if isinstance(entry, dict) else None
        stored = stored.encode("utf-8", "surrogatepass") if isinstance(stored, str) else b""
        if hmac.compare_digest(wanted, stored) and found is None:
            found = name
    return found


def touch(name: str) -> None:
    """KEY-8: stamp `last_used` when missing, unparsable or a minute old; a busy or broken file skips it."""
    if _recent(entries().get(name)):
        return
    chosen = store.current()
    if chosen.kind != "folder":  # a row lock held for microseconds: nothing to skip
        chosen.update_json(store.GATEWAY_KEYS, lambda data: _stamp(data.get(name)))
        return
    try:
        with fileio.lock(path(), timeout=0):
            data = {k: dict(v) if isinstance(v, dict) else v for k, v in entries().items()}
            entry = data.get(name)
            if not isinstance(entry, dict) or _recent(entry):
                return
            entry["last_used"] = now_iso()
            fileio.write_atomic(path(), fileio.dumps(data), mode=0o600)
    except (OSError, TimeoutError):
        pass


def _stamp(entry: object) -> None:
    if isinstance(entry, dict) and not _recent(entry):
        entry["last_used"] = now_iso()


def _recent(entry: object) -> bool:
    if not isinstance(entry, dict):
        return True  # a vanished entry is skipped
    stamp = entry.get("last_used")
    if not isinstance(stamp, str):
        return False
    try:
        last = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return False
    if last.tzinfo is None:
        return False
    return abs(time.time() - last.timestamp()) < LAST_USED_EVERY


def scope(who: str) -> frozenset[str] | None:
    """SCOPE-1: the collections `who` may call as a frozenset, or None for all.

    A malformed `collections` (a string, a number, false, a list holding a non-string)
    allows none: a bad hand edit fails closed. `local` and names with no entry call all.
    """
    entry = entries().get(who)
    if not isinstance(entry, dict):
        return None
    value = entry.get("collections")
    if value is None or value == []:
        return None
    if isinstance(value, list) and all(isinstance(c, str) for c in value):
        return frozenset(value)
    return frozenset()


def may_call(who: str) -> Callable[[str], bool] | None:
    """A `name -> bool` filter for `collections.listed()` and `choose_message()`, or None for all."""
    allowed = scope(who)
    return None if allowed is None else allowed.__contains__


def rpm(who: str) -> int | None:
    """The requests-a-minute cap of `who`, or None (RATE-1; improvement 10 for a bad value)."""
    entry = entries().get(who)
    if not isinstance(entry, dict) or entry.get("rpm") is None:
        return None
    value = entry["rpm"]
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def admit(who: str, name: str) -> tuple[int, str] | tuple[int, str, dict[str, str]] | None:
    """DSP-2 then DSP-3 for a model-running request on collection `name`, once it has resolved.

    Returns None, or the refusal `(status, message[, headers])`: 403 naming what the key may
    call, or 429 with `Retry-After`. Only a permitted request is counted.
    """
    allowed = scope(who)
    if allowed is not None and name not in allowed:
        may = ", ".join(f"bench/{c}" for c in sorted(allowed)) or "none"
        return 403, f"the gateway key {who} may not call bench/{name}; it may call {may}"
    return charge(who)


def charge(who: str) -> tuple[int, str, dict[str, str]] | None:
    """One request of `who` counted against its cap (RATE-1): None, or the 429 refusal.

    Model-running routes are charged, and the `/bench/*` routes too (security review 4), so
    call ids cannot be guessed at the speed of the connection."""
    cap = rpm(who)
    wait = None if cap is None else spend(who, cap)
    if wait is None:
        return None
    return (429, f"the gateway key {who} may make {cap} requests a minute; try again in {wait}s",
            {"Retry-After": str(wait)})


def spend(who: str, cap: int) -> int | None:
    """Count one request of `who` against `cap` in the store every replica shares; seconds to wait when over it."""
    return store.current().charge(who, cap)


def sees_call(who: str, call: object) -> bool:
    """Improvement 12: may `who` judge or read call id `call`? Unknown ids say yes (the route answers 404)."""
    allowed = scope(who)
    if allowed is None or not isinstance(call, str):
        return True
    entry = offload.by_call(call)
    if entry is None:
        return True
    collection = entry.collection or ""  # never a collection named in the prompt (review 6)
    return collection.removeprefix("bench/") in allowed


def sees_collection(who: str, collection: str) -> bool:
    """Improvement 12 for `/bench/record`: `bench/<c>` or `<c>` is in the scope of `who`."""
    allowed = scope(who)
    return allowed is None or collection.removeprefix("bench/") in allowed


def problem(entry: dict[str, Any]) -> str:
    """What is wrong with a hand-edited entry, for listings; `""` when nothing is."""
    value = entry.get("collections")
    if value not in (None, []) and not (isinstance(value, list) and all(isinstance(c, str) for c in value)):
        return "collections is not a list of names, so this key may call nothing"
    if entry.get("rpm") is not None and not _valid_rpm(entry["rpm"]):
        return "rpm is not a whole number from 1 to 10000, so this key is capped at 1 request a minute"
    return ""


def listing() -> list[dict[str, Any]]:
    """MGMT-1's rows, sorted by name: never a digest, never a key. `problem` surfaces a bad hand edit."""
    rows = []
    for name, entry in sorted(entries().items()):
        if not isinstance(entry, dict):
            continue
        rows.append({"name": name, "hint": entry.get("hint"), "collections": entry.get("collections"),
                     "rpm": entry.get("rpm"), "created": entry.get("created"),
                     "last_used": entry.get("last_used"), "problem": problem(entry) or None})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.server.gatekeys", description="Gateway keys")
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", help="make a key (shown once)")
    create.add_argument("name")
    create.add_argument("--collections", default="", help="comma list, e.g. core,vision (default: all)")
    create.add_argument("--rpm", type=int, default=None, help="requests a minute (default: no cap)")
    commands.add_parser("list", help="list the keys (never their values)")
    remove = commands.add_parser("revoke", help="revoke a key at once")
    remove.add_argument("name")
    args = parser.parse_args(argv)
    if args.command == "create":
        chosen = [c.strip() for c in args.collections.split(",") if c.strip()]
        missing = [c for c in chosen if c not in collections.load()]
        if missing:
            sys.exit("no collection named " + ", ".join(missing))
        name = args.name.strip().lower()
        try:
            key = make(name, chosen, args.rpm)
        except Invalid as exc:
            sys.exit(str(exc))
        print(f"{key}\nThe key {name} is shown this once and kept only as a hash: copy it now.")
    elif args.command == "list":
        if not listing():
            print("no gateway keys yet: python -m benchwarmers.server.gatekeys create NAME")
        for row in listing():
            allowed = scope(row["name"])
            shown = "all" if allowed is None else ", ".join(sorted(allowed)) or "none"
            print(f"{row['name']}  bwk_…{row['hint']}  collections: {shown}  rpm: {rpm(row['name']) or '—'}"
                  f"  last used: {row['last_used'] or 'never'}" + (f"  ({row['problem']})" if row["problem"] else ""))
    elif not revoke(args.name):
        sys.exit(f"no gateway key named {args.name!r}")
    else:
        print(f"revoked {args.name}")


if __name__ == "__main__":
    main()
