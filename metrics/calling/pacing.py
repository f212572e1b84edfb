"""Pacing: a built-in call that would break a connection's or a model's limit waits, or is refused unsent (PACE-1..11).

Limits come from what the user entered (`config/connection-limits.json` per connection,
`config/model-overrides.json` `limits` per model), from what a provider stated and learn kept
(`config/model-learned.json`), and from the live quota records (metrics/models/quota.py). What was used is
read from the usage ledger (requests as `attempts`, the requests the provider saw; tokens as
`tokens_in + tokens_out`) plus the calls still in flight, which `runs/inflight.json` holds from
admission until their ledger line is written. Check and reserve happen under one lock,
`runs/pacing.lock`, so threads and processes sharing a data folder never overshoot together. On Postgres
(docs/replicas.md) the ledger, the calls in flight and the lock are the store's, so replicas never do either.

The client runs `pace(call)` in its PREFLIGHT after the free-tier guard: a call waits (in steps of at
most 5 s) while a window is full, and is refused when the wait would end within 2 s of its deadline.
A call that must wait waits on its own thread (`call.waits`, run before its first request), not in
`client.begin()`: a panel sends every seat's request from one thread, and one paced seat must not hold
the others' requests back.
The refusal text says which limit and when to try again, in words the classifiers file as capacity
and learn reads back as a cooldown (ERR-3, ERR-4).

Decisions where the spec is silent:
- A quota record counts what this model sent after the record was observed, in-flight calls admitted
  after it included; calls in flight before it are the provider's to count (its `remaining` was said
  after they went out, or as they did).
- `input-tokens` and `output-tokens` records count `tokens_in` and `tokens_out`; `tokens` both.
- A refusal names the blocker that frees last (the one that decides the wait).
- When the server is stopping (`transport.STOP`), a waiting call stops waiting and goes on to end as
  timed out, as every other wait in the client does.

    python -m benchwarmers.calling.pacing ALIAS      each rule pacing ALIAS with used/limit, or that nothing paces it
"""

import functools
import json
import math
import os
import sys
import time
import uuid

from ..core import fileio, paths
from ..store import store
from ..net import transport
from ..models import connections, learn, quota
from . import ledger

MARGIN = 2.0
POLL = 5.0
MIN_WAIT = 0.05
GRACE = 60
DAY = 86_400
# axis -> (what it counts, window seconds or None for the calendar month, how the refusal reads it)
AXES = {"rpm": ("requests", 60, "requests per minute"), "rpd": ("requests", DAY, "requests per day"),
        "tpm": ("tokens", 60, "tokens per minute"), "tpd": ("tokens", DAY, "tokens per day"),
        "rpmo": ("requests", None, "requests a calendar month (UTC)")}
MODEL_AXES = ("rpm", "rpd", "tpm", "tpd")
REFUSED = "Error: client failed: rate limit (not sent; paced by the bench): "


def _positive(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def rules(alias, connection):
    """PACE-1: `[{scope, axis, limit, source}]` for this alias and connection."""
    found = []
    entered = fileio.read_json(paths.file("config", "connection-limits.json")).get(connection)
    for axis in AXES:
        value = entered.get(axis) if isinstance(entered, dict) else None
        if _positive(value):
            found.append({"scope": "connection", "axis": axis, "limit": value,
                          "source": f"you, for {connection} (config/connection-limits.json)"})
    own = fileio.read_json(paths.file("config", "model-overrides.json")).get(alias)
    own = own.get("limits") if isinstance(own, dict) else None
    own = own if isinstance(own, dict) else {}
    learned = learn.learned(alias).get("limits") if alias else None
    learned = learned if isinstance(learned, dict) else {}
    for axis in MODEL_AXES:
        ev = learned.get(axis) if isinstance(learned.get(axis), dict) else {}
        if _positive(own.get(axis)):
            found.append({"scope": "alias", "axis": axis, "limit": own[axis],
                          "source": "you, for this model (config/model-overrides.json)"})
        elif _positive(ev.get("value")):
            found.append({"scope": "alias", "axis": axis, "limit": ev["value"],
                          "source": f"learned {str(ev.get('at') or '')[:10]} from the provider"})
    return found


def _text_of(content):
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p.get("text") or "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return 0


def estimate(prompt="", system="", messages=None, body=None):
    """PACE-5: the tokens a request will take, characters / 4 + 1."""
    if messages is None:
        tokens = (len(prompt or "") + len(system or "")) // 4 + 1
    else:
        tokens = sum(_text_of(m.get("content")) for m in messages if isinstance(m, dict)) // 4 + 1
    if body:
        try:
            tokens += len(json.dumps(body)) // 4
        except (TypeError, ValueError):
            pass
    return tokens


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


INFLIGHT = ("runs", "inflight.json")


def _read_inflight(now):
    """The in-flight entries still within their `until` (read straight from the store: another process may have
    written it a moment ago, and a stat snapshot of this thread would not know)."""
    try:
        data = json.loads(store.current().read_text(INFLIGHT) or "{}")
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict) and isinstance(v.get("until"), (int, float))
            and v["until"] > now}


def _write_inflight(entries):
    store.current().write_text(INFLIGHT, json.dumps(entries, indent=1) + "\n")


def _event(row):
    tin, tout = _int(row.get("tokens_in")), _int(row.get("tokens_out"))
    return {"t": row["t"], "alias": row.get("alias"), "connection": row.get("connection"),
            "requests": _int(row.get("attempts")), "tokens": tin + tout, "in": tin, "out": tout}


class _Tail:
    """One month file of the ledger, read once and then only for what was appended since.

    Every admission of a paced call needs the last day of the ledger; parsing a whole month file each
    time (1 s for 100,000 lines) under the pacing lock would pace everything to that. The file is only
    ever appended to, so the bytes read stay read: kept are the events of the last day (and a little)
    and each connection's requests this month (for rpmo); a line still being written is read next time.
    """

    def __init__(self, path):
        self.path = path
        self.identity = None
        self.offset = 0
        self.events = []
        self.month = {}

    def refresh(self, now):
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        identity = (st.st_dev, st.st_ino) if st else None
        if identity != self.identity or (st and st.st_size < self.offset):
            self.__init__(self.path)  # a new or replaced file: start again
            self.identity = identity
        if st and st.st_size > self.offset:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                blob = f.read(st.st_size - self.offset)
            whole = blob.rfind(b"\n") + 1  # a line still being written waits for the next look
            self.offset += whole
            self._take(fileio.parse_lines(blob[:whole], self.path))
        self._trim(now)
        return self

    def _take(self, rows):
        for row in rows:
            if isinstance(row.get("t"), (int, float)) and not isinstance(row.get("t"), bool):
                event = _event(row)
                self.events.append(event)
                connection = event["connection"] or "?"
                self.month[connection] = self.month.get(connection, 0) + event["requests"]

    def _trim(self, now):
        keep = now - DAY - 60
        if self.events and self.events[0]["t"] < keep:
            self.events = [e for e in self.events if e["t"] >= keep]


class _StoredTail(_Tail):
    """A month of the ledger in the Postgres store, read as `_Tail` reads its file: the lines after the last id
    taken, asked for only when the store says the month changed."""

    def __init__(self, log, shared):
        super().__init__("/".join(log))
        self.log, self.shared, self.mark = log, shared, None

    def refresh(self, now):
        mark = self.shared.mark(self.log)
        if mark is None or mark != self.mark:
            generation, rows = self.shared.since(self.log, self.offset)
            if generation != self.identity:
                self.__init__(self.log, self.shared)
                self.identity = generation
                generation, rows = self.shared.since(self.log, 0)
            for line_id, body in rows:
                self.offset = line_id
                self._take(fileio.parse_lines(body, self.path))
            self.mark = mark
        self._trim(now)
        return self


_tails = {}  # month file path -> _Tail; used under the pacing lock


def _tail(t, now):
    log = ledger.month_log(t)
    path = str(paths.file(*log))
    chosen = store.current()
    found = _tails.get(path)
    if found is None or getattr(found, "shared", chosen) is not chosen:
        if len(_tails) >= 4:
            _tails.clear()
        found = _tails[path] = _Tail(path) if chosen.kind == "folder" else _StoredTail(log, chosen)
    return found.refresh(now)


def _events(since, inflight, now):
    """Ledger rows since `since` and in-flight entries as `{t, alias, connection, requests, tokens, in, out}`."""
    if since >= now - DAY:  # this month's file and last month's (a call sent before midnight may end after)
        found = [e for t in (ledger.month_start(now) - 1, now) for e in _tail(t, now).events if e["t"] >= since]
    else:  # a quota record observed more than a day ago: rare, read the long way
        found = [_event(row) for row in ledger.rows(since)]
    for entry in inflight.values():
        tokens = _int(entry.get("tokens"))
        found.append({"t": entry.get("t") or 0, "alias": entry.get("alias"), "connection": entry.get("connection"),
                      "requests": 1, "tokens": tokens, "in": tokens, "out": 0, "flying": True})
    found.sort(key=lambda e: e["t"])
    return found


def _wait_text(seconds):
    """PACE-9: whole seconds under 2 minutes, minutes under 2 hours, else hours (rounded up)."""
    if seconds < 120:
        return f"{math.ceil(seconds)}s"
    if seconds < 7200:
        return f"{math.ceil(seconds / 60)}m"
    return f"{math.ceil(seconds / 3600)}h"


def _ago(seconds):
    if seconds < 60:
        return "just now"
    if seconds < 7200:
        return f"{int(seconds // 60)} min ago"
    return f"{int(seconds // 3600)} h ago"


def _rule_block(rule, alias, connection, need, events, now):
    """`(free time, why)` when `rule` blocks a call needing `need`, else None (PACE-6, PACE-9)."""
    counts, window, reads = AXES[rule["axis"]]
    key, who = ("connection", connection) if rule["scope"] == "connection" else ("alias", alias)
    if window is None:  # the month's requests as the ledger's tail counted them, plus the calls in flight
        mine = []
        used = (_tail(now, now).month.get(connection or "?", 0)
                + sum(e["requests"] for e in events if e.get("flying") and e["connection"] == connection
                      and e["t"] >= ledger.month_start(now)))
    else:
        mine = [e for e in events if e[key] == who and e["t"] >= now - window]
        used = sum(e[counts] for e in mine)
    need = 1 if counts == "requests" else min(max(need, 1), rule["limit"])
    if used + need <= rule["limit"]:
        return None
    if window is None:
        free = ledger.next_month(now)
    else:
        free, aged, excess = now, 0, used + need - rule["limit"]
        for e in mine:
            aged += e[counts]
            if aged >= excess:
                free = e["t"] + window
                break
    spent = f"{used:,} tokens were used" if counts == "tokens" else f"{used:,} were used"
    month = " this month" if window is None else ""
    return free, f"{who} allows {rule['limit']:,} {reads} ({rule['source']}) and {spent}{month}"


def _record_block(rec, alias, connection, events, now):
    """`(free time, why)` when a live quota record says nothing is left, else None (PACE-6, PACE-9)."""
    seen, free = quota.epoch_of(rec.get("observed_at")), quota.epoch_of(rec.get("reset_at"))
    remaining = rec.get("remaining")
    if seen is None or free is None or not isinstance(remaining, int) or isinstance(remaining, bool):
        return None
    field = {"requests": "requests", "input-tokens": "in", "output-tokens": "out"}.get(rec.get("metric"), "tokens")
    spent = sum(e[field] for e in events if e["alias"] == alias and e["t"] >= seen)
    if remaining - spent > 0:
        return None
    of = f" of {rec['limit']:,}" if _positive(rec.get("limit")) else ""
    window = "" if rec.get("window") in ("unknown", "retry-after", None) else f" a {rec['window']}"
    return free, (f"{connection} said {max(remaining, 0):,}{of} {rec.get('metric')}{window} were left for {alias} "
                  f"({rec.get('source')}, {_ago(now - seen)})")


def blocker(alias, connection, need, found_rules, records, inflight, now):
    """The latest-freeing `(free time, why)` among every rule and record that blocks now, or None."""
    since = min([now - (AXES[r["axis"]][1] or 0) for r in found_rules]  # rpmo reads the month's totals
                + [quota.epoch_of(r.get("observed_at")) or now for r in records])
    events = _events(since, inflight, now)
    blocks = [b for b in ([_rule_block(r, alias, connection, need, events, now) for r in found_rules]
                          + [_record_block(r, alias, connection, events, now) for r in records]) if b]
    return max(blocks, key=lambda b: b[0]) if blocks else None


WAIT = object()  # what `admit(..., wait=False)` answers for a call that would have to wait


def admit(alias, connection, need, left, wait=True):
    """PACE-7: `(ticket, "")` once the call may go (ticket None when nothing paces it), or `(None, why + wait)`
    when it would have to wait past its deadline less 2 s. `left`: the call's remaining seconds. With `wait`
    False, a call that would have to wait (and could) gets `(None, WAIT)` at once."""
    deadline = time.monotonic() + left
    while True:
        found_rules = rules(alias, connection)
        records = [r for r in quota.live(connection, alias) if isinstance(r.get("remaining"), int)]
        if not found_rules and not records:
            return None, ""
        with store.current().locked("pacing"):
            now = time.time()
            inflight = _read_inflight(now)
            blocked = blocker(alias, connection, need, found_rules, records, inflight, now)
            if blocked is None:
                ticket = uuid.uuid4().hex
                inflight[ticket] = {"alias": alias, "connection": connection, "t": round(now, 3), "tokens": need,
                                    "until": round(now + (deadline - time.monotonic()) + GRACE, 3),
                                    "pid": os.getpid()}
                _write_inflight(inflight)
                return ticket, ""
        free, why = blocked
        pause = max(free - now, MIN_WAIT)
        if time.monotonic() + pause > deadline - MARGIN:
            return None, f"{why}; try again in {_wait_text(pause)}"
        if not wait:
            return None, WAIT
        if transport.STOP.wait(min(pause, POLL)):
            return None, ""


def release(ticket):
    """Take a call out of flight once its ledger line is written (LED-8); a no-op for None."""
    if ticket is None:
        return
    with store.current().locked("pacing"):
        inflight = _read_inflight(time.time())
        inflight.pop(ticket, None)
        _write_inflight(inflight)


def pace(call, wait=False):
    """The client's PREFLIGHT step: room now, or the refusal text; a call that must wait for room is put off
    to its own thread (`call.waits`), where this runs again and waits. A broken limit or pacing file, or a
    lock that stays taken, paces nothing (CL-6): bookkeeping never fails a call."""
    try:
        ticket, why = admit(call.alias, call.connection, estimate(*call.asked), call.left(), wait)
    except Exception:
        return ""
    if why is WAIT:
        call.waits.append(functools.partial(pace, wait=True))
        return ""
    if why:
        return REFUSED + why
    if ticket is not None:
        call.releases.append(functools.partial(release, ticket))
    return ""


def main(argv=None):
    """PACE-11."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m benchwarmers.calling.pacing ALIAS   (the rules pacing ALIAS, with what was used)")
        return 2
    alias = argv[0]
    try:
        connection = connections.connection_of(alias)
    except Exception:
        connection = "?"
    found = rules(alias, connection)
    if not found:
        print(f"nothing paces {alias} (connection {connection})")
        return 0
    now = time.time()
    events = _events(ledger.month_start(now), _read_inflight(now), now)
    for rule in found:
        counts, window, reads = AXES[rule["axis"]]
        start = ledger.month_start(now) if window is None else now - window
        key, who = ("connection", connection) if rule["scope"] == "connection" else ("alias", alias)
        used = sum(e[counts] for e in events if e[key] == who and e["t"] >= start)
        print(f"{rule['axis']:<5} {used:,}/{rule['limit']:,} {reads}  ({rule['source']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
