"""Route mode: one member of a collection answers an agent's turn, tools and all (formats.md §11).

A panel answers with several models' prose; an agent needs one answer it can act on, tool calls
included, token by token. `bench/<collection>:route` (or `"bench": {"reply": "route"}`, or a
collection whose `reply` is `route`) sends each conversation to one member, chosen by the bench's
record, and keeps it there:

- `plan()` decides who may answer this turn (RT-2..5) and ranks them (RT-6);
- `panel.conversations` keeps each conversation on its member (RT-7..10), in the data folder;
- `start()` runs the turn on its own thread (RT-11..18): the member's chunks are held until it
  says something (text or a tool call), then relayed as `Chunk` events; a member that fails before
  that is replaced by the next, unseen by the client, up to ROUTE_TRIES; after it, no one can
  take over a half-written answer;
- every turn is recorded (RT-16, RT-22..24): a `routes.jsonl` line, a ledger line per member call
  (purpose `route`), one unjudged offload per model per conversation.

The gateway turns the events into each API's reply (`Format.route_writer`, `Format.route_reply`).
The constants are read at call time, so tests may set them.

Decisions where the spec is silent or improved (formats.md §15):
- 1: the size check counts each image once (the reference counted it twice).
- 6: a member that streamed only reasoning until the deadline fails with `timed out after reasoning only`.
- 13: refusals carry `X-Bench-Conversation` whenever the conversation is already known (see `known()`).
- 17: a non-streamed turn is bounded by the members' deadlines: at most ROUTE_TRIES × ROUTE_TIMEOUT.
- 18: conversations live in the data folder (`panel.conversations`).
- a member no registration answers to is skipped up front (`not registered on the bench`), rather than
  tried and failed over.
- route turns count as panels in flight (`max_panels`, `max_panels_per_key`), so a stopping gateway
  waits for them and ends their member calls as it does a panel's seats.
- a line the data folder refuses (routes.jsonl, the offload) loses no answer: the turn is relayed and its
  `bench` says `"logged": false` with why, as a panel's seats do.
- issue 20: with gateway.json's policy `"thompson"` a new conversation's first user message is put to the
  shape picker (`panel.shape`, one Decisions call, as a panel's prompt is), the members are drawn from
  their verdicts on that shape (panels' and route turns' alike), and the conversation's offload line
  carries the shape, so its verdict teaches that shape's record. The contract's policy asks no picker
  and ranks on the whole log (RT-6).
- ROTATE's coin comes from `rotation`, a `random.Random` seeded from `BENCH_POLICY_SEED` when set (a
  simulation's run is then repeatable), as `panel.policy`'s draws are.
- issue 29 item 2: a member's chunks pass through a `Shield` before anything reads them, so the relay, the
  assembled turn (every format's reply) and the records hold no known secret, even one an upstream echoes
  split across two chunks. Tool-call pieces without an `index` are hidden piece by piece only.
"""

import concurrent.futures
import dataclasses
import datetime
import math
import queue
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from ..core import console, images, keys, paths, settings
from ..models import catalog, connections, history, learn
from ..calling import client
from ..store import store
from . import collections, conversations, offload, panel, policy, roles, roster, route, shape as shapes
from ..core.errors import NoMembers, PromptTooLarge, TurnFailed, Unsupported, UnknownCollection
from ..wire import common
from ..wire.common import Ask
from ..wire.turn import Turn

T = TypeVar("T")

ROUTE_TIMEOUT = 600
FIRST_TOKEN = 90
ROUTE_TRIES = 3
ROUTE_GRACE = 15.0
ROTATE = 0.25
ERROR_KEPT = 300
MESSAGE_KEPT = 200
RETRY_FALLBACK = 60
VERDICT_HINT = 'optional, once per conversation: POST /bench/verdict {"call", "useful": true|false, "note"}'
RATE_LIMITED = ("error code: 429", "rate limit")
rotation = random.Random(settings.env("BENCH_POLICY_SEED") or None)


# Turns run on reused threads: starting one per turn cost more than the turn's whole plan.
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=512, thread_name_prefix="route")


# ---------------------------------------------------------------- the plan (RT-2..6)


@dataclasses.dataclass
class Plan:
    """A turn's plan: who may answer it (in collection order), who may not and why, its conversation's key."""

    name: str
    caller: str
    eligible: list
    skipped: list
    key: str
    shape: str = ""


def _members(collection: collections.Collection) -> list[str]:
    return list(dict.fromkeys(collection.aliases))


class Reasons:
    """What a turn is checked against (RT-4), read once per turn: who is retired, ad hoc or unregistered, and
    the catalog. `why_not(alias)` gives the first reason `alias` may not answer, or ""; the size check is
    the planner's, as only it can tell "nobody fits" (413) from "nobody may" (400)."""

    def __init__(self, ask: Ask, members: list[str], image_count: int) -> None:
        self.ask = ask
        self.image_count = image_count
        self.retired = roster.retired()
        self.ad_hoc = set(roles.ad_hoc())
        self.unknown = set(panel.unregistered(members))
        self.known = catalog.table()

    def why_not(self, alias: str) -> str:
        if alias in self.retired.names:
            return panel.retired_why(self.retired, alias)
        if alias in self.unknown:
            return "not registered on the bench"
        if alias in self.ad_hoc:
            return "ad hoc (expensive or capped), never routed to automatically"
        if roles.role_of(alias) == "vision" and not self.image_count:
            return "a vision specialist; used only for requests that include images"
        api = self.known.api(alias)
        if api != "chat":
            return f"reached through the {api} API; route mode passes requests to chat completions only"
        if self.ask.tools and catalog.cannot_call_tools(alias, self.known):
            return catalog.cannot_call_tools(alias, self.known)
        if self.image_count:
            return catalog.cannot_see(alias, self.known)
        return ""


def plan(name: str, ask: Ask, caller: str) -> Plan:
    """Who may answer this turn, best first (RT-2..6); refusals raise before any member is asked."""
    collection = collections.get(name)
    if collection is None:
        raise UnknownCollection(collections.choose_message(name))
    members = _members(collection)
    if not members:
        raise NoMembers(f"bench/{name} has no members to route to; add one in config/collections.json")
    image_count = images.validate(ask.messages)
    if not any(isinstance(m, dict) and m.get("role") == "user" for m in ask.messages):
        raise Unsupported(f"no user message to put to bench/{name}")
    needed = common.prompt_tokens(ask.messages)  # improvement 1: each image counted once
    reasons = Reasons(ask, members, image_count)
    eligible, skipped, small = [], [], 0
    for alias in members:
        why = reasons.why_not(alias)
        size = None if why else catalog.too_small(alias, needed, reasons.known)
        if size:
            why = f"its context window ({size:,} tokens) is under this request (about {needed:,})"
            small += 1
        if why:
            skipped.append({"alias": alias, "why": why})
        else:
            eligible.append(alias)
    if not eligible:
        listed = "; ".join(f"{s['alias']} {s['why']}" for s in skipped)
        if small == len(skipped):
            raise PromptTooLarge(f"no member can read this request: {listed}. Trim it, or choose a collection "
                                 "whose members have larger windows (GET /v1/models lists each one's)")
        raise Unsupported(f"no member of bench/{name} can take this request: {listed}")
    return Plan(name, caller, eligible, skipped, conversations.key(name, caller, ask.messages))


def rank(eligible: list[str], shape: str | None = None) -> list[str]:
    """RT-6: most useful verdicts, then verified suite findings, then a preferred connection; members cooling
    down last; one time in four (ROTATE) the least recently used member first. Evidence that cannot be read
    counts as none.

    With gateway.json's policy `"thompson"` (issue 20, `panel.policy`) the first step is a Thompson draw
    instead, from each member's useful/judged verdicts over the whole log (RT-6's evidence: a route turn has
    no shape, and its own verdicts carry none), or from their verdicts on `shape` when one is given (`start()`
    picks it under that policy); cooling members still go last and the rotation still runs."""
    def evidence(read: Callable[[], T]) -> T | dict[str, Any]:
        try:
            return read()
        except Exception:
            return {}

    useful = evidence(offload.summary)
    found = evidence(lambda: history.suite_recall(str(paths.data())))
    preferred = set(evidence(connections.facts).get("preferred") or [])

    def score(alias: str) -> tuple[int, int, bool]:
        verdicts = (useful.get(alias) or {}).get("useful") or 0
        findings = (found.get(alias) or (0,))[0]
        return verdicts, findings, connections.full_tag_of(alias) in preferred

    if collections.settings().policy == policy.THOMPSON:
        record = useful if shape is None else evidence(lambda: offload.shape_record(shape))
        ranked = policy.thompson(eligible, record)  # issue 20: a draw from each member's posterior on its verdicts
    else:
        ranked = sorted(eligible, key=score, reverse=True)
    cooling = evidence(route.cooling) or set()
    ready = [a for a in ranked if a not in cooling]
    ranked = ready + [a for a in ranked if a in cooling]
    if len(ready) >= 2 and rotation.random() < ROTATE:
        last = evidence(offload.last_used)
        oldest = min(ready, key=lambda a: (last.get(a) or "", ready.index(a)))  # never used sorts first
        ranked.remove(oldest)
        ranked.insert(0, oldest)
    return ranked


def try_order(record: conversations.Record, eligible: list[str]) -> list[str]:
    """RT-10: the conversation's member, its stored order, then anyone else eligible; ROUTE_TRIES of them."""
    order = [record["alias"]] + [a for a in record.get("order") or [] if a != record["alias"]] + eligible
    return [a for a in dict.fromkeys(order) if a in eligible][:ROUTE_TRIES]


def known(name: str, ask: Ask, caller: str) -> str:
    """The live conversation id this request belongs to, or "" (the refusal header, improvement 13)."""
    record = conversations.find(conversations.key(name, caller, ask.messages))
    return record["conv"] if record else ""


# ---------------------------------------------------------------- the turn (RT-11..18)


@dataclasses.dataclass(frozen=True, slots=True)
class Live:
    """The member began to answer: its held chunks follow, and no other member will be asked."""

    alias: str


@dataclasses.dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of the member's, as it sent it, and the answer text it added."""

    chunk: dict
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Done:
    """The turn is answered and recorded: the member's whole turn and the route `bench` (RT-26)."""

    turn: Turn
    bench: dict


Failed = panel.Failed  # the turn failed with `exc` (a refusal before any `Live`; after it, the stream's error)


@dataclasses.dataclass(frozen=True, slots=True)
class Started:
    """A turn under way: its conversation's id (the `X-Bench-Conversation` header) and its events."""

    conversation: str
    events: queue.Queue


def upstream_body(alias: str, ask: Ask) -> dict[str, Any]:
    """RT-11: the request's own fields for the member (the client adds its options under them), with the
    output budget cut to the member's known max_output."""
    body = dict(ask.passthrough)
    if ask.tools:
        body["tools"] = ask.tools
    if ask.tool_choice is not None:
        body["tool_choice"] = ask.tool_choice
    cap = catalog.max_output(alias)
    for field in ("max_tokens", "max_completion_tokens"):
        value = body.get(field)
        if cap and isinstance(value, int) and not isinstance(value, bool) and value > cap:
            body[field] = cap
    return body


STREAMED = ("content", "reasoning_content", "reasoning", "refusal")  # a delta's text fields, sent in pieces


class Shield:
    """A member's chunks with every known secret hidden (`keys.hide_all`), made before anything reads them. The
    text a delta streams (each choice's STREAMED fields, each tool call's arguments by its index) goes through a
    `keys.Hider` of its own, which holds back an end that could begin a secret: what it holds goes out with its
    choice's finish, or in `rest()` once the member stops without one."""

    def __init__(self) -> None:
        self.known = keys.secrets()
        self.streams: dict[tuple[int, str | int], keys.Hider] = {}  # (choice number, field name or tool-call index): its Hider

    def chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """`chunk` as it may go out: a new object, the one given untouched."""
        shown = keys.hide_all(chunk, self.known)
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for i, choice in enumerate(choices if isinstance(choices, list) else ()):
            if not isinstance(choice, dict):
                continue
            number = choice["index"] if isinstance(choice.get("index"), int) else i
            # a plain reply's one chunk carries a `message` (STR-12), as `Turn.feed` reads it
            field = "message" if isinstance(choice.get("message"), dict) and not isinstance(choice.get("delta"), dict) \
                else "delta"
            if isinstance(choice.get(field), dict):
                self._stream(number, choice[field], shown["choices"][i][field])
            if choice.get("finish_reason"):
                self._end(number, shown["choices"][i].setdefault(field, {}))
        return shown

    def _stream(self, number: int, delta: dict[str, Any], out: dict[str, Any]) -> None:
        for name in STREAMED:
            if isinstance(delta.get(name), str):
                out[name] = self._hider(number, name).feed(delta[name])
        pieces = common.items(delta.get("tool_calls"))
        for piece, copy in zip(pieces, common.items(out.get("tool_calls"))):
            function = piece.get("function") if isinstance(piece, dict) else None
            if isinstance(function, dict) and isinstance(piece.get("index"), int) \
                    and isinstance(function.get("arguments"), str):
                copy["function"]["arguments"] = self._hider(number, piece["index"]).feed(function["arguments"])

    def _hider(self, number: int, name: str | int) -> keys.Hider:
        found = self.streams.get((number, name))
        if found is None:
            found = self.streams[(number, name)] = keys.Hider(self.known)
        return found

    def _end(self, number: int, out: dict[str, Any]) -> None:
        """What choice `number`'s streams hold, added to its last delta `out`."""
        for key in [key for key in self.streams if key[0] == number]:
            held = self.streams.pop(key).end()
            if not held:
                continue
            if isinstance(key[1], str):
                out[key[1]] = common.string(out.get(key[1])) + held
            else:
                calls = common.items(out.get("tool_calls"))
                out["tool_calls"] = [*calls, {"index": key[1], "function": {"arguments": held}}]

    def rest(self) -> list[dict[str, Any]]:
        """A chunk per choice whose streams still hold text (the member stopped without a finish)."""
        numbers = sorted({key[0] for key in self.streams})
        chunks = []
        for number in numbers:
            delta: dict[str, Any] = {}
            self._end(number, delta)
            if delta:
                chunks.append({"choices": [{"index": number, "delta": delta}]})
        return chunks


class Member:
    """One member's try at the turn: its chunks hidden (`Shield`) and held until it goes live (RT-13), then
    passed on."""

    def __init__(self, alias: str, events: queue.Queue[Any]) -> None:
        self.alias = alias
        self.events = events
        self.turn = Turn()
        self.shield = Shield()
        self.held: list[Chunk] = []
        self.live = False
        self.started = time.monotonic()
        self.reply: dict[str, Any] = {}

    def on_chunk(self, chunk: dict[str, Any]) -> None:
        self.take(self.shield.chunk(chunk))

    def take(self, chunk: dict[str, Any]) -> None:
        text, adds = self.turn.feed(chunk)
        if self.live:
            self.events.put(Chunk(chunk, text))
            return
        self.held.append(Chunk(chunk, text))
        if adds:
            self.live = True
            self.events.put(Live(self.alias))
            self.release()

    def release(self) -> None:
        for held in self.held:
            self.events.put(held)
        self.held = []

    def ask(self, ask: Ask, last: bool) -> str:
        limits = collections.settings()
        self.reply = client.chat(self.alias, "", messages=ask.messages, body=upstream_body(self.alias, ask),
                                 on_chunk=self.on_chunk, first_token=FIRST_TOKEN, timeout=ROUTE_TIMEOUT,
                                 retries=None if last else 0, purpose="route",
                                 first_byte=limits.first_byte_timeout, idle=limits.idle_timeout)
        for rest in self.shield.rest():
            self.take(rest)
        return self.error(last)

    def error(self, last: bool) -> str:
        """RT-14: what went wrong with this member's try, or "" when it answered (or was the last, empty)."""
        reply = self.reply
        if reply.get("timed_out"):
            if client.STOP.is_set():
                error = panel.GATEWAY_STOPPED
            elif self.live:
                error = "timed out part way"
            elif self.turn.reasoning:
                error = "timed out after reasoning only"
            else:
                error = f"nothing in {FIRST_TOKEN:g}s"
        else:
            error = reply.get("error") or ""
        if not error and not self.live and not last:
            error = "an empty reply"
        if error:
            error = keys.clean(error)  # no key, image or URL query reaches a log or the learner
            try:
                learn.record(self.alias, error, "route")
            except Exception:
                pass
        return error

    @property
    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 1)


def start(name: str, ask: Ask, caller: str) -> "Started":
    """Plan the turn, find its conversation and run it on its own thread; returns `Started` (the conversation
    id and a queue of `Live`, `Chunk`, then `Done` or `Failed` events). Refusals raise before anything runs;
    the member call runs to its end even if the client hangs up (RT-18)."""
    planned = plan(name, ask, caller)

    def ranked() -> list[str]:
        if collections.settings().policy == policy.THOMPSON:  # issue 20: a new conversation's shape
            planned.shape = shapes.pick(conversations.first_user_text(ask.messages))[0]
            return rank(planned.eligible, planned.shape)
        return rank(planned.eligible)

    try:
        record = conversations.claim(planned.key, planned.eligible, ranked, ask.messages)
    except OSError as exc:  # the turn is still answered; only its stickiness is not kept
        console.say(f"route mode: {exc}")
        record = conversations.unstored(ask.messages, ranked())
    panel.admit(caller)
    events: queue.Queue[Any] = queue.Queue()

    def work() -> None:
        try:
            events.put(run(planned, record, ask, events))
        except Exception as exc:
            events.put(Failed(exc))
        finally:
            panel.flight.leave(caller)

    _pool.submit(work)
    return Started(record["conv"], events)


def run(planned: Plan, record: conversations.Record, ask: Ask, events: queue.Queue[Any]) -> "Done":
    """RT-10..17: try the members in order; returns the `Done` event, or raises `TurnFailed`."""
    order = try_order(record, planned.eligible)
    tried = []
    for i, alias in enumerate(order):
        if client.STOP.is_set():
            break  # a stopping gateway asks no one else
        last = i == len(order) - 1
        member = Member(alias, events)
        error = member.ask(ask, last)
        if error and not member.live:
            tried.append({"alias": alias, "error": keys.cut(error, ERROR_KEPT, last=True)})
            continue
        if not member.live:
            member.release()  # the last member's empty turn is the answer (RT-15)
        return finish(planned, record, member, error, tried, ask.notes)
    return give_up(planned, record, tried)


def finish(planned: Plan, record: conversations.Record, member: Member, error: str,
           tried: list[dict[str, str]], notes: Iterable[str] = ()) -> "Done":
    """RT-16: record the turn of the member that answered (or failed part way), then its event; `notes` are the
    reader's about fields it took but the gateway does not honour (issue 30: Responses' `store: true`)."""
    status = "error" if error else ("ok" if member.turn.answered else "empty")
    problems = []
    try:
        call, turn, new = conversations.finish(planned.key, record, member.alias)
    except OSError as exc:
        console.say(f"route mode: {exc}")
        problems.append(str(exc))
        call, turn, new = conversations.unstored_finish(record, member.alias)
    bench = {"collection": f"bench/{planned.name}", "reply": "route", "conversation": record["conv"], "call": call,
             "alias": member.alias, "turn": turn}
    if tried:
        bench["failed_over"] = tried
    if planned.skipped:
        bench["skipped"] = planned.skipped
    if notes:
        bench["notes"] = list(notes)
    if new:
        bench["verdict"] = VERDICT_HINT
        note = f"route conversation; first turn {status} in {member.seconds}s"
        problems += _written(lambda: offload.add(member.alias, f"{record['task']} (bench/{planned.name}:route)",
                                                 None, note, call=call, status=status, seconds=member.seconds,
                                                 collection=f"bench/{planned.name}", shape=planned.shape or None))
    problems += _written(lambda: write_line(planned, record, call, member, turn, status, tried, error))
    if problems:
        bench["logged"], bench["log_error"] = False, problems[0]
    if error:
        upstream = member.reply.get("status") or 0
        raise TurnFailed(f"{member.alias} failed part way through the turn: {keys.cut(error, ERROR_KEPT, last=True)}",
                         upstream if upstream >= 400 else 502, alias=member.alias)
    return Done(member.turn, bench)


def give_up(planned: Plan, record: conversations.Record, tried: list[dict[str, str]]) -> NoReturn:
    """RT-17: every member tried failed before saying anything."""
    _written(lambda: write_line(planned, record, "", None, record.get("turns") or 0, "error", tried,
                                "every member failed"))
    listed = "; ".join(f"{t['alias']}: {keys.cut(t['error'], MESSAGE_KEPT)}" for t in tried)
    message = f"no member of bench/{planned.name} answered: {listed}"
    if tried and all(any(mark in t["error"].lower() for mark in RATE_LIMITED) for t in tried):
        raise TurnFailed(message, 429, retry_after=_retry_after([t["alias"] for t in tried]))
    raise TurnFailed(message, 502)


def _retry_after(aliases: list[str]) -> int:
    """Seconds until the first of the rate-limited members is free again, as learned from its errors."""
    now = time.time()
    waits = []
    for alias, entry in learn.cooldowns().items():
        if alias in aliases:
            try:
                waits.append(datetime.datetime.fromisoformat(entry["until"]).timestamp() - now)
            except (KeyError, TypeError, ValueError):
                pass
    return max(1, math.ceil(min(waits))) if waits else RETRY_FALLBACK


def _written(write: Callable[[], object]) -> list[str]:
    """Run one write of the turn's records: `[]`, or `[why]` when the data folder refused it (the answer
    still goes out; nothing-lost item 4)."""
    try:
        write()
    except OSError as exc:
        console.say(f"route mode: {exc}")
        return [str(exc)]
    return []


def routes_path() -> Path:
    return paths.file(*store.ROUTES)


def write_line(planned: Plan, record: conversations.Record, call: str, member: Member | None, turn: int, status: str,
               tried: list[dict[str, str]], error: str) -> None:
    """RT-22: one line per turn; never the prompt or the messages (the task is the first message's first words,
    cleaned as the offload's is)."""
    line = {"conversation": record["conv"], "call": call, "at": panel.local_iso(), "model": f"bench/{planned.name}",
            "key": planned.caller, "alias": member.alias if member else "", "turn": turn, "task": record["task"],
            "status": status}
    if member:
        reply, answer = member.reply, member.turn
        line.update(seconds=member.seconds, first_token_s=reply.get("first_token_s"), tool_calls=len(answer.calls),
                    finish=answer.finish or reply.get("finish") or "")
        usage = answer.usage
        for field, names in (("tokens_in", ("prompt_tokens", "input_tokens")),
                             ("tokens_out", ("completion_tokens", "output_tokens"))):
            value = next((usage[n] for n in names if isinstance(usage.get(n), int)), None)
            if value is not None:
                line[field] = value
        if answer.reasoning_tokens() is not None:
            line["reasoning"] = answer.reasoning_tokens()
    if tried:
        line["tried"] = tried
    if error:
        line["error"] = keys.cut(error, ERROR_KEPT, last=True)
    settings = collections.settings()  # rotated as the calls log is (security review 9)
    store.current().append_log(store.ROUTES, line, settings.calls_log_max_mb * 1_000_000, settings.calls_log_keep)
