"""The MCP server's four tools: their schemas and descriptions (MCP §11.2) and what each does (MCP-8..14).

Every tool is a client of a Benchwarmers server's own routes (`net.remote`), never of the panel
itself: over stdio the server is wherever `BENCHWARMERS_URL` points, over HTTP it is the very server
the agent reached, called back over loopback with the agent's own credentials. So a gateway key's
scope and rate cap bind an agent exactly as they bind any other client, and one code path serves both
transports. A tool returns its texts, or raises `ToolError` (or a `remote.Problem`) for a tool error.
"""

import collections
import json
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..net import remote

PREFIX = "bench/"
SEAT_KEYS = ("call", "seat", "alias", "status", "seconds", "error")
ERROR_KEPT = 300
TAIL_BYTES = 8 * 1024 * 1024
SESSIONS_KEPT = 1000
# MCP-12 names `[0-9a-f]{4}`, which matches only the old 4-digit panel ids; the gateway now hands out
# 16 (GATEWAY.md, "Panel ids": match `p\d{8}-\d{6}-[0-9a-f]{4,}`), so this reads both.
CALL_ID = re.compile(r"\bp\d{8}-\d{6}-[0-9a-f]{4,}\.[a-z]+\d*\b")


class Context(Protocol):
    """What a tool knows of the session it runs for (`mcp_server.Conn`)."""

    reads_transcripts: bool
    reminders: "Reminders"


class ToolError(Exception):
    """A tool's refusal, shown to the agent as `isError: true` with this message (MCP-6)."""


def _schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


STRING_LIST = {"type": "array", "items": {"type": "string"}}

TOOLS = [
    {
        "name": "list_collections",
        "title": "List collections",
        "description": (
            "List the collections (panels of models) this Benchwarmers server offers. Each row gives the name, "
            "its purpose (description) and tags, its members, its explorer seats, its reply mode, and what the "
            "members handle together: the smallest context window, the capabilities they share and the "
            "tightest rate limits. Pick the collection whose purpose fits the task, not a favourite model."),
        "inputSchema": _schema({}),
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "ask",
        "title": "Ask a collection",
        "description": (
            "Put a prompt to every seat of a collection (its members plus explorer seats) and get every "
            "answer back, each labelled with its seat, model and call id. A panel can take minutes. The "
            "prompt must contain the real text (code, diff, logs): the seats cannot read your files. Verify "
            "every claim against the code before acting on it (seats fail together; agreement is not "
            "evidence), name every seat that answered (errors and empty replies too), then send a verdict "
            "per judged seat."),
        "inputSchema": _schema({
            "collection": {"type": "string", "description": "a name from list_collections: core or bench/core"},
            "prompt": {"type": "string", "description": "the whole question, with the text it is about"},
            "system": {"type": "string", "description": "optional system message for every seat"},
            "merged": {"type": "boolean", "description": (
                "true: one reconciled answer (every seat is still called and listed); false: every answer; "
                "omitted: the collection's own reply mode")},
            "with": {**STRING_LIST, "description": "model aliases to seat as explorers for this request"},
        }, ["collection", "prompt"]),
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True},
    },
    {
        "name": "verdict",
        "title": "Record a verdict",
        "description": (
            "Record whether one seat's answer was useful, after checking it against the code. Send one "
            "verdict per judged seat, by its call id from ask. List the seat's true claims in `real` and its "
            "untrue ones in `false`: the claim lists feed routing and the confidently-wrong record, so a note "
            "alone is not enough."),
        "inputSchema": _schema({
            "call": {"type": "string", "description": "the seat's call id, e.g. p20261022-101500-ab12.member1"},
            "useful": {"type": "boolean", "description": "was the answer useful once checked"},
            "note": {"type": "string", "description": "one line on why"},
            "real": {**STRING_LIST, "description": "claims of the answer that proved true, one sentence each"},
            "false": {**STRING_LIST, "description": "claims of the answer that proved untrue, one sentence each"},
        }, ["call", "useful"]),
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                        "openWorldHint": False},
    },
    {
        "name": "pending_verdicts",
        "title": "Seats still to judge",
        "description": (
            "For the agent plugin's end-of-turn Stop hook: the seats of this session's panels that have no "
            "verdict yet, as a reminder. You need not call it yourself."),
        "inputSchema": _schema({
            "session": {"type": "string", "description": "the agent session's id"},
            "transcript": {"type": "string", "description": "path of the session's .jsonl transcript"},
            "active": {"description": "the hook's stop_hook_active flag"},
        }),
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
]


class Reminders:
    """MCP-13: which seats each session was already reminded of, in memory, at most SESSIONS_KEPT
    sessions (a new one beyond that evicts the oldest)."""

    def __init__(self) -> None:
        self.sessions: collections.OrderedDict[str, set[str]] = collections.OrderedDict()
        self.lock = threading.Lock()

    def due(self, session: str, pending: list[str]) -> list[str]:
        """The ids of `pending` not yet reminded in `session`; they count as reminded from now on."""
        with self.lock:
            seen = self.sessions.setdefault(session, set())
            while len(self.sessions) > SESSIONS_KEPT:
                self.sessions.popitem(last=False)
            due = [call for call in pending if call not in seen]
            seen.update(due)
            return due


def list_collections(server: remote.Server, arguments: dict[str, Any], context: Context) -> list[str]:
    """MCP-8: one row per collection (the `:<mode>` twins folded), as JSON."""
    reply = remote.call(server, "GET", "/v1/models")
    rows = []
    for entry in reply.get("data") or []:
        if not isinstance(entry, dict) or ":" in str(entry.get("id", "")):
            continue
        together: dict[str, Any] = entry["together"] if isinstance(entry.get("together"), dict) else {}
        rows.append({"name": entry.get("id"), **{k: entry.get(k) for k in (
            "description", "tags", "members", "explorers", "shape", "reply", "merger")},
            **{k: together.get(k) for k in ("context_window", "capabilities", "limits")}})
    if not rows:
        return ["There are no collections on this server (or none this gateway key may call). Make one on "
                "the dashboard's Collections page."]
    return [json.dumps(rows, indent=1, ensure_ascii=False)]


def _text(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    return value.strip() if isinstance(value, str) else ""


def ask(server: remote.Server, arguments: dict[str, Any], context: Context) -> list[str]:
    """MCP-9, MCP-10: the panel's answer, then its seats for the verdicts."""
    collection = _text(arguments, "collection")
    if not collection:
        raise ToolError("`collection` is required: a name from list_collections, e.g. core")
    prompt = arguments.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ToolError("`prompt` is required")
    messages = [{"role": "user", "content": prompt}]
    if _text(arguments, "system"):
        messages.insert(0, {"role": "system", "content": arguments["system"]})
    model = collection if collection.startswith(PREFIX) else PREFIX + collection
    body: dict[str, Any] = {"model": model, "messages": messages}
    if isinstance(arguments.get("merged"), bool):
        body["bench"] = {"reply": "merged" if arguments["merged"] else "all"}
    if arguments.get("with"):
        body["with"] = arguments["with"]
    reply = remote.call(server, "POST", "/v1/chat/completions", body)
    content = reply["choices"][0]["message"]["content"]
    return [content, "Name each seat in your answer, and send a verdict per judged seat by its call id.\n"
            + json.dumps(seats_summary(reply.get("bench") or {}), indent=1, ensure_ascii=False)]


def seats_summary(bench: dict[str, Any]) -> dict[str, Any]:
    """MCP-10's second text: the panel and its seats, without what text 1 already holds."""
    keep = SEAT_KEYS + (("answer",) if bench.get("reply") == "merged" else ())
    seats = []
    for seat in bench.get("seats") or []:
        row = {k: seat.get(k) for k in keep if seat.get(k) not in (None, "")}
        if isinstance(row.get("error"), str):
            row["error"] = row["error"][-ERROR_KEPT:]
        seats.append(row)
    summary = {"panel": bench.get("panel"), "collection": bench.get("collection"), "shape": bench.get("shape"),
               "seats": seats}
    summary.update({k: bench[k] for k in ("merger", "skipped", "note") if bench.get(k)})
    return summary


def verdict(server: remote.Server, arguments: dict[str, Any], context: Context) -> list[str]:
    """MCP-11."""
    call = _text(arguments, "call")
    if not call:
        raise ToolError("`call` is required: the seat's call id from ask")
    useful = arguments.get("useful")
    if not isinstance(useful, bool):
        raise ToolError("`useful` must be true or false")
    real, untrue = arguments.get("real") or [], arguments.get("false") or []
    remote.call(server, "POST", "/bench/verdict", {"call": call, "useful": useful,
                                                   "note": arguments.get("note") or "", "real": real,
                                                   "false": untrue})
    return [f"Recorded {call}: {'useful' if useful else 'not useful'}, {len(real)} real, {len(untrue)} false."]


def pending_verdicts(server: remote.Server, arguments: dict[str, Any], context: Context) -> list[str]:
    """MCP-12, MCP-13, improvement 18: only a server on the agent's own machine (stdio) reads a transcript;
    over HTTP a caller could otherwise make the server open any `.jsonl` path, so it says nothing."""
    session, transcript = arguments.get("session"), arguments.get("transcript")
    if str(arguments.get("active")).lower() == "true" or not context.reads_transcripts:
        return [""]
    if not isinstance(session, str) or not isinstance(transcript, str) or not transcript.endswith(".jsonl"):
        return [""]
    try:
        with open(Path(transcript).expanduser(), "rb") as f:
            f.seek(max(0, f.seek(0, 2) - TAIL_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return [""]
    calls = list(dict.fromkeys(CALL_ID.findall(text)))
    if not calls:
        return [""]
    pending = remote.call(server, "POST", "/bench/pending", {"calls": calls}).get("pending") or []
    due = context.reminders.due(session, pending)
    if not due:
        return [""]
    seats = f"{len(due)} seat has" if len(due) == 1 else f"{len(due)} seats have"
    text = (f"Benchwarmers: {seats} from this session's panels no verdict yet: {', '.join(due)}. Send a "
            "verdict per judged seat (true claims in `real`, untrue ones in `false`), or say in one line why not.")
    return [json.dumps({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": text}})]


Tool = Callable[[remote.Server, dict[str, Any], Context], list[str]]
RUN: dict[str, Tool] = {"list_collections": list_collections, "ask": ask, "verdict": verdict,
                        "pending_verdicts": pending_verdicts}
