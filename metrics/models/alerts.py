"""Alerts: what is wrong and what to do about it, in `metrics/alerts.json` (models.md §16, AL-1..3, AL-6).

    python -m benchwarmers.models.alerts        # `Nothing wrong.` or each open alert with its age

`{"<key>": {"kind", "message", "action", "first_seen", "last_seen", ...extra}}`, sorted keys, indent 2.
Every write is one locked read-change-write (LOCK-2), so the maintenance scripts, the dashboard and the
gateway never lose each other's alerts. The dashboard's reader is `benchview.alerts()`. On a shared store
(Postgres, docs/replicas.md) `fileio` reads and writes the file there: one replica's alert is every replica's,
and any of them clears it.
"""

import datetime
import sys

from ..core import fileio, paths


def path():
    return paths.file("metrics", "alerts.json")


def _today():
    return datetime.date.today().isoformat()


def raise_alert(key, kind, message, action="", **extra):
    """AL-1: upsert `key`, keeping its `first_seen`."""
    today = _today()

    def put(data):
        old = data.get(key) if isinstance(data.get(key), dict) else {}
        data[key] = {**extra, "kind": kind, "message": message, "action": action,
                     "first_seen": old.get("first_seen") or today, "last_seen": today}

    fileio.update(path(), put, sort_keys=True)


def clear(key):
    """AL-1: remove `key`; whether it existed."""
    if not fileio.exists(path()):
        return False
    return fileio.update(path(), lambda data: data.pop(key, None) is not None, sort_keys=True)


def sweep(prefix, still_wrong):
    """AL-1: delete every key starting with `prefix` that is not in `still_wrong`; the keys deleted."""
    if not fileio.exists(path()):
        return []

    def drop(data):
        gone = sorted(k for k in data if k.startswith(prefix) and k not in still_wrong)
        for k in gone:
            del data[k]
        return gone

    return fileio.update(path(), drop, sort_keys=True)


def active():
    """AL-1: every open alert."""
    return {k: v for k, v in fileio.read_json(path()).items() if isinstance(v, dict)}


def main():
    """AL-6."""
    found = active()
    if not found:
        print("Nothing wrong.")
        return 0
    today = datetime.date.today()
    for key, alert in sorted(found.items()):
        try:
            days = (today - datetime.date.fromisoformat(str(alert.get("first_seen")))).days
            age = f"{days}d" if days else "today"
        except ValueError:
            age = "?"
        print(f"[{alert.get('kind', '?')}] {key} (since {age}): {alert.get('message', '')}")
        if alert.get("action"):
            print(f"    {alert['action']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
