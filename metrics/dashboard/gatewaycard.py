"""The Gateway card on Collections: recent panels with each seat's status and verdict, the verdicts
owed, route conversations, one seat for the verdict dialog, and the dialog's save
(dashboard.md GW-1..6, formats.md RT-22, RT-25).

Only the ends of the logs are read (IMP-12): the card reads the 30 newest panels from the end of
`runs/gateway/calls.jsonl`, route conversations the newest `ROUTE_LINES` turns of `routes.jsonl`, and
verdicts come from the offload log's in-memory index (`offload.by_call`), so the card's cost does not
grow with either log. Each log is read from the store (docs/replicas.md): the data folder, or Postgres.

Decision: route conversations are grouped from the newest `ROUTE_LINES` turns; a conversation whose
first turns are older than that shows its later turns only (its `When` is then its oldest turn read).
"""

import json

from ..core.errors import Invalid, UnknownCall
from ..panel import offload
from ..store import store

PANELS = 30
CONVERSATIONS = 30
ROUTE_LINES = 5000
PROMPT_CHARS = 20_000
PREVIEW_CHARS = 120  # the card's prompt column: the start of the prompt, on one line
NOTE_CHARS = 500
CLAIM_CHARS = 400
CLAIMS = 20


def _useful(call):
    entry = offload.by_call(call) if call else None
    return entry.useful if entry else None


def _seat(seat):
    call = str(seat.get("call") or "")
    return {"call": call, "seat": str(seat.get("seat", "")), "alias": str(seat.get("alias", "")),
            "status": str(seat.get("status", "")), "seconds": seat.get("seconds"), "useful": _useful(call)}


def panels():
    """GW-1/GW-2: the newest panels, newest first, each with its seats' verdicts and what is owed."""
    rows = []
    for record in store.current().tail(store.CALLS, PANELS):
        seats = [_seat(s) for s in record.get("seats") or [] if isinstance(s, dict)]
        skipped = [{"seat": str(s.get("seat", "")), "alias": str(s.get("alias", "")), "why": str(s.get("why", ""))}
                   for s in record.get("skipped") or [] if isinstance(s, dict)]
        rows.append({"panel": str(record.get("panel", "")), "at": str(record.get("at", "")),
                     "model": str(record.get("model", "")), "key": str(record.get("key") or "local"),
                     "shape": str(record.get("shape", "")), "shape_by": str(record.get("shape_by", "")),
                     "preview": _tidy(str(record.get("prompt") or ""), PREVIEW_CHARS), "seats": seats,
                     "skipped": skipped,
                     "owed": sum(1 for s in seats if s["useful"] is None and s["call"]
                                 and s["seat"] != "ranking")})  # a council's ranking is never owed (CNC-7)
    return rows


def conversations():
    """GW-3 / RT-25: one row per conversation, the 30 with the latest last turn first."""
    turns = {}
    for record in store.current().tail(store.ROUTES, ROUTE_LINES):
        conversation = record.get("conversation")
        if isinstance(conversation, str) and conversation:
            turns.setdefault(conversation, []).append(record)
    rows = []
    for conversation, newest_first in turns.items():
        lines = newest_first[::-1]
        first, last = lines[0], lines[-1]
        answered = {}
        for line in lines:
            alias = str(line.get("alias", ""))
            if alias and alias not in answered:
                answered[alias] = str(line.get("call", ""))
        rows.append({
            "conversation": conversation, "at": str(first.get("at", "")), "model": str(first.get("model", "")),
            "key": str(first.get("key") or "local"), "task": str(first.get("task", ""))[:60],
            "answered": [{"alias": a, "call": c, "useful": _useful(c)} for a, c in answered.items()],
            "turns": len(lines), "tool_calls": sum(_count(line.get("tool_calls")) for line in lines),
            "failovers": sum(len(line["tried"]) for line in lines if isinstance(line.get("tried"), list)),
            "last_at": str(last.get("at", "")), "status": str(last.get("status", "")),
            "error": str(last.get("error") or "")})
    rows.sort(key=lambda r: r["last_at"], reverse=True)
    return rows[:CONVERSATIONS]


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def card():
    """The whole card: panels, totals, route conversations."""
    rows = panels()
    return {"panels": rows, "seats": sum(len(r["seats"]) for r in rows), "owed": sum(r["owed"] for r in rows),
            "conversations": conversations()}


def seat(call):
    """GW-4: one seat of one panel for the verdict dialog, or None."""
    panel = call.rpartition(".")[0]
    if not panel:
        return None
    wanted = json.dumps(panel).encode("ascii")
    for record in store.current().each(store.CALLS, wanted):
        for s in record.get("seats") or []:
            if isinstance(s, dict) and s.get("call") == call:
                entry = offload.by_call(call)
                return {"ok": True, "call": call, "model": record.get("model", ""), "at": record.get("at", ""),
                        "prompt": str(record.get("prompt") or "")[:PROMPT_CHARS], "seat": s.get("seat", ""),
                        "alias": s.get("alias", ""), "status": s.get("status", ""), "seconds": s.get("seconds"),
                        "answer": s.get("answer", ""), "error": s.get("error", ""),
                        "useful": entry.useful if entry else None, "note": entry.note if entry else "",
                        "real": list(entry.real) if entry else [], "false": list(entry.false) if entry else []}
    return None


def _tidy(text, limit):
    return " ".join(text.split())[:limit]


def verdict(body):
    """GW-6: validate, then record in replace mode; the reply as the dashboard answers it."""
    errors = []
    useful = body.get("useful")
    if not isinstance(useful, bool):
        errors.append("choose useful or not useful")
    claims = {}
    for field in ("real", "false"):
        value = body.get(field)
        if value is not None and not (isinstance(value, list) and all(isinstance(c, str) for c in value)):
            errors.append(f"{field} claims must be a list of sentences")
            continue
        claims[field] = [c for c in (_tidy(c, CLAIM_CHARS) for c in value or []) if c][:CLAIMS]
    if errors:
        raise Invalid(*errors)
    note = body.get("note")
    note = _tidy(note, NOTE_CHARS) if isinstance(note, str) else ""
    call = body.get("call") if isinstance(body.get("call"), str) else ""
    try:
        entry = offload.verdict(call, useful, note, claims["real"], claims["false"], replace=True)
    except UnknownCall as exc:  # a refused write is a 400 on the dashboard (RESP-3), not the gateway's 404
        raise Invalid(exc.message) from exc
    return {"ok": True, "changed": [f"{entry.model} {'useful' if useful else 'not useful'}"], "sync": ""}
