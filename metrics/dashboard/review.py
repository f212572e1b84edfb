"""The Review page's data: the queue of panels that owe verdicts, and one panel in full (issue 31, REV-1..6).

Panels come from the end of `runs/gateway/calls.jsonl` (the newest `QUEUE_PANELS`, read backwards as the
Gateway card reads it); whether a seat still owes its verdict is the offload index's `pending` (VRD-3: a seat
that errored owes none), and a seat's verdict is `offload.by_call`, the latest line for its call, so a later
verdict supersedes an earlier one here as everywhere else (OFF-2). Nothing here parses the offload log.

The queue has two orders (REV-3): `oldest` (oldest owed panel first) and `teaches` (the panel whose verdicts
would most narrow its collection's leaderboard first). A panel teaches in proportion to how much the 95%
intervals of its owed seats' models overlap on that leaderboard: two models whose intervals overlap cannot
yet be told apart, and a verdict on the same prompt is a direct comparison of the two. A model the
leaderboard has not ranked counts as overlapping everything by `UNRANKED_OVERLAP`, since its place is wholly
unknown. Each panel says in one line why it stands where it does.

The queue's reading of the calls log is kept until the file changes (`summaries`): the badge is asked on every
page load, and each line holds a panel's whole prompt and answers.

Decisions: only the current calls log is read (not its rotated `.1` … `.N`), so a panel older than the last
rotation drops out of the queue; a route conversation is never owed (GW-3) and never queued; the merger's seat
is judged like any other seat, as the Gateway card lists it.
"""

import datetime
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..core import paths
from ..core.errors import Invalid, NotFound
from ..models import catalog
from ..panel import leaderboard, offload
from ..store import store

QUEUE_PANELS = 2000  # the newest panels of the calls log the queue looks through
PROMPT_CHARS = 100_000
ANSWER_CHARS = 200_000
UNRANKED_OVERLAP = 10.0  # in score units: wider than any interval a fitted model has
RESAMPLES = 50  # the teaching order needs intervals roughly, not to the third decimal
ORDERS = ("oldest", "teaches")
FILTERS = ("collection", "shape", "model", "since", "until")
BAD_ORDER = "order must be oldest or teaches"
BAD_DATE = "{} must be a date as YYYY-MM-DD"
NO_PANEL = "no gateway panel with id '{}'"


def _seats(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [s for s in record.get("seats") or [] if isinstance(s, dict)]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _date(value: str, name: str) -> str:
    if not value:
        return ""
    try:
        return datetime.date.fromisoformat(value).isoformat()
    except ValueError:
        raise Invalid(BAD_DATE.format(name)) from None


def _wanted(filters: Mapping[str, str]) -> Callable[[Mapping[str, Any]], bool]:
    """A test of a panel summary against the filters: exact collection (`core` reads `bench/core`), shape and
    model (any seat's alias), and the local date of `at` between `since` and `until`, both included."""
    collection = leaderboard.named(filters["collection"]) if filters.get("collection") else ""
    shape, model = filters.get("shape", ""), filters.get("model", "")
    since, until = _date(filters.get("since", ""), "since"), _date(filters.get("until", ""), "until")

    def wanted(row: Mapping[str, Any]) -> bool:
        day = row["at"][:10]
        return ((not collection or row["collection"] == collection) and (not shape or row["shape"] == shape)
                and (not model or model in row["models"]) and (not since or day >= since)
                and (not until or day <= until))
    return wanted


Summary = tuple[str, str, str, str, tuple[tuple[str, str], ...]]  # panel, at, collection, shape, (call, alias)...
_read: dict[str, tuple[Any, list[Summary]]] = {}  # data folder -> (the calls log's mark, its newest panels summed up)
_read_lock = threading.Lock()


def summaries() -> list[Summary]:
    """The newest `QUEUE_PANELS` panels of the calls log, newest first, without their texts: read again only when
    the log changes, since every page load asks (the badge) and the lines hold whole prompts and answers."""
    where = str(paths.data())
    with _read_lock:
        stamp = store.current().mark(store.CALLS)  # the file's stamp, or the shared store's count of changes
        kept = _read.get(where)
        if kept is None or kept[0] != stamp or stamp is None:
            found = [(_text(r.get("panel")), _text(r.get("at")), _text(r.get("model")), _text(r.get("shape")),
                      tuple((_text(s.get("call")), _text(s.get("alias"))) for s in _seats(r)))
                     for r in store.current().tail(store.CALLS, QUEUE_PANELS)]
            kept = _read[where] = (stamp, found)
        return kept[1]


def owed_panels() -> list[dict[str, Any]]:
    """Every panel in the newest `QUEUE_PANELS` with a verdict owed, newest first, as the queue lists it."""
    read = summaries()
    owing = set(offload.pending([call for *_, seats in read for call, _ in seats]))  # one look at the index
    rows = []
    for panel_id, at, collection, shape, seats in read:
        owed = {call for call, _ in seats if call in owing}
        if owed:
            rows.append({"panel": panel_id, "at": at, "collection": collection, "shape": shape,
                         "models": sorted({alias for _, alias in seats}), "seats": len(seats), "owed": len(owed),
                         "owed_models": [alias for call, alias in seats if call in owed]})
    return rows


def owed() -> int:
    """The verdicts owed over the queue, unfiltered: the badge in the navigation and the header."""
    return sum(row["owed"] for row in owed_panels())


def _overlap(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> float:
    if a is None or b is None:
        return UNRANKED_OVERLAP
    return max(0.0, min(a["high"], b["high"]) - max(a["low"], b["low"]))


def teaching(row: Mapping[str, Any], board: Mapping[str, Any]) -> tuple[float, str]:
    """How much `row`'s verdicts would narrow `board` (its collection's leaderboard), and the line saying why."""
    ranked = {m["model"]: m for m in board["models"]}
    models = sorted(set(row["owed_models"]))
    pairs = [(a, b, _overlap(ranked.get(a), ranked.get(b))) for i, a in enumerate(models) for b in models[i + 1:]]
    unranked = [m for m in models if m not in ranked]
    if not pairs:
        return 0.0, f"only {models[0] if models else 'one model'} owes a verdict here: nothing to compare it with"
    score = sum(p[2] for p in pairs)
    if unranked:
        return score, (f"{', '.join(unranked)} {'is' if len(unranked) == 1 else 'are'} not ranked on "
                       f"{row['collection']} yet: verdicts here place {'it' if len(unranked) == 1 else 'them'}")
    a, b, most = max(pairs, key=lambda p: p[2])
    if not most:
        return 0.0, f"the intervals of {', '.join(models)} on {row['collection']} are already apart"
    return score, f"{a} and {b} overlap by {most:.2f} on {row['collection']}'s leaderboard: this prompt can tell them apart"


def queue(filters: Mapping[str, str], order: str = "oldest") -> dict[str, Any]:
    """REV-2/REV-3: the owed panels the filters keep, in `order`, each with why it stands there; `owed` is the
    unfiltered total (the badge), `shown` what the filters keep."""
    if order not in ORDERS:
        raise Invalid(BAD_ORDER)
    every = owed_panels()
    wanted = _wanted(filters)
    rows = [dict(row) for row in reversed(every) if wanted(row)]  # the log's order: the oldest written first
    if order == "teaches":
        boards: dict[str, dict[str, Any]] = {}
        for row in rows:
            name = row["collection"]
            if name not in boards:
                boards[name] = leaderboard.board(name, resamples=RESAMPLES)
            row["teaches"], row["why"] = teaching(row, boards[name])
            row["teaches"] = round(row["teaches"], 3)
        rows.sort(key=lambda r: -r["teaches"])  # stable: equal ones stay oldest first
    else:
        for row in rows:
            row["why"] = f"owed since {row['at'][:16].replace('T', ' ')}: the oldest owed first"
    return {"ok": True, "errors": [], "order": order, "owed": sum(r["owed"] for r in every),
            "shown": sum(r["owed"] for r in rows), "panels": rows,
            "choices": {"collection": sorted({r["collection"] for r in every}),
                        "shape": sorted({r["shape"] for r in every if r["shape"]}),
                        "model": sorted({m for r in every for m in r["models"]})}}


def _kind(label: str) -> str:
    """A seat's kind from its label (`member 1`, `explorer 2`, `merger`): what blind mode hides with the name."""
    return label.split(" ")[0] if label else ""


def _cost(alias: str, usage: object) -> float | None:
    """Dollars for the seat's tokens at the catalog's list price (per million), when both are known."""
    price = catalog.info(alias).get("cost")
    if not isinstance(usage, dict) or not isinstance(price, dict):
        return None
    rates = (price.get("input"), price.get("output"))
    counts = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in rates + counts):
        return None
    return round((counts[0] * rates[0] + counts[1] * rates[1]) / 1_000_000, 6)


def _seat(seat: Mapping[str, Any]) -> dict[str, Any]:
    call, alias, label = _text(seat.get("call")), _text(seat.get("alias")), _text(seat.get("seat"))
    entry = offload.by_call(call) if call else None
    usage = seat.get("usage") if isinstance(seat.get("usage"), dict) else None
    return {"call": call, "seat": label, "kind": _kind(label), "alias": alias, "status": _text(seat.get("status")),
            "seconds": seat.get("seconds"), "answer": _text(seat.get("answer"))[:ANSWER_CHARS],
            "error": _text(seat.get("error")), "usage": usage, "cost": _cost(alias, usage),
            "useful": entry.useful if entry else None, "note": entry.note if entry else "",
            "real": list(entry.real) if entry else [], "false": list(entry.false) if entry else [],
            "owes": bool(call) and bool(offload.pending([call]))}


def panel(panel_id: str) -> dict[str, Any]:
    """REV-4: one panel in full: its prompt, and every seat's answer with its status, time, tokens, cost and the
    verdict now in force. A judged panel answers too (going back to change a verdict)."""
    if not panel_id:
        raise NotFound(NO_PANEL.format(""))
    wanted = json.dumps(panel_id).encode("ascii")
    for record in store.current().each(store.CALLS, wanted):
        if record.get("panel") == panel_id:
            return {"ok": True, "errors": [], "panel": panel_id, "at": _text(record.get("at")),
                    "collection": _text(record.get("model")), "shape": _text(record.get("shape")),
                    "key": _text(record.get("key")) or "local", "system": _text(record.get("system"))[:PROMPT_CHARS],
                    "prompt": _text(record.get("prompt"))[:PROMPT_CHARS], "seats": [_seat(s) for s in _seats(record)]}
    raise NotFound(NO_PANEL.format(panel_id))
