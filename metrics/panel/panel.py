"""The panel: one request asked of every seat at once (gateway.md §7, §9).

`run()` seats the collection's members plus explorer seats, asks them all in
parallel, writes each seat to the offload log the moment it answers, merges when
asked, and returns `(content, bench)`. It is format-blind: the gateway's routes
turn requests into `run()` arguments and the result into each API's reply.

Every seat's request is sent from the thread that plans the panel (`begin_seat`), the
members' before the router is asked for explorers; the seats' own threads start once all
are out and only wait for the answers. Sending from one thread keeps the last seat's
request from queuing behind the others' preparation for the GIL (5 ms at worst).

Streaming callers pass `on_part`, which hears the reply piece by piece: the
heading once the seats are decided, each seat's section the moment that seat
finishes, then the footer. A merged reply streams the merger's own words as it
writes them (beyond the reference, which sent the merged answer in one piece);
if the merger breaks off part way, the every-answer fallback follows its partial
text in the stream, while the non-streamed reply carries the fallback alone.

Refusals raise before any seat is called: `Invalid` (400), `PromptTooLarge` (413),
`UnknownCollection` (404), `Broken` and `NoSeat` (503), `Busy` (503); `core.errors` says how each
is answered.

Decisions where the spec is silent or improved (gateway.md §20):
- IMP-3: members past `max_calls` are named in `skipped` (why says the cap).
- IMP-2: nominees that cannot sit because the collection leaves no explorer seat
  are named in `skipped`; the router's notes about nominees go to `bench.notes`.
- IMP-4: a nominee whose known context window is too small is skipped with why.
- Issue 21: nominees no registration answers to are one `skipped` entry (`alias`
  lists them, `why` counts them), found before any catalog look at a name.
- IMP-5: the explorer count is fixed before the vision skips (the reference's
  vision behaviour); a skipped blind member does not free an explorer seat.
- IMP-15: every seat error is redacted, not only those of image requests.
- Issue 29 item 2: every answer is hidden (`keys.hide`: the endpoints' keys, sign-in tokens, the admin
  token, gateway keys) the moment its seat comes back, so no section, `bench` field, merger prompt or log
  line holds one; the merger's streamed words go through a `keys.Hider`, which hides a key split across
  two pieces too. An upstream that echoes its Authorization header hands its key to no caller.
"""

import concurrent.futures
import contextlib
import ctypes
import dataclasses
import datetime
import functools
import json
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..core import console, fileio, images, keys, paths, settings, threads
from ..wire import notices
from ..models import aliases, catalog, learn, registry
from ..calling import client, ledger, llm_backend
from ..store import store
from . import collections, offload, policy, roles, roster, route, shape as shapes
from ..core.errors import Busy, Invalid, NoSeat, PromptTooLarge, UnknownCollection

Seat = dict[str, Any]  # a seat's result, then as `bench.seats` lists it: call, seat, alias, status, answer, ...
OnDelta = Callable[[str, str], None]  # `on_delta(kind, piece)`: a seat's answer ("text") or reasoning as it comes
# each seat's answer to come: (its plan, key, alias, when it was asked)
Asked = dict[concurrent.futures.Future[Seat], tuple["Plan", str, str, float]]
OnPart = Callable[[str], object]
# what follows the seats in a reply mode of its own (a council, CNC-1): `finish(plan, seats, bench, every, on_part,
# gone)` gives the content and the calls it made after the seats, each already in the offload log
Finish = Callable[["Plan", list[Seat], dict[str, Any], str, OnPart | None, threading.Event | None],
                  tuple[str, list[Seat]]]

SEAT_TIMEOUT = 420
LARGE = 8000
SEAT_ERROR_KEPT = 500
SECTION_ERROR = 300
TASK_CHARS = 90
SEAT_KEYS = ("call", "seat", "alias", "status", "seconds", "answer", "error")
VERDICT_HINT = 'POST /bench/verdict {"call", "useful": true|false, "note", "real": [...], "false": [...]}'

MERGE_SYSTEM = (
    "Several models answered the same request; their answers follow, each under its label and model name. "
    "Write one answer from theirs. Say where they agreed, where they disagreed and who said what, naming "
    "the models as they are labelled. Keep every dissent: a point one model made against the others stays "
    "in, attributed. Do not treat a claim as settled because several models made it."
)

# One pool for every panel's seats: threads are reused instead of started per seat.
pool = concurrent.futures.ThreadPoolExecutor(max_workers=512, thread_name_prefix="seat")
# a streamed panel's own daemon thread (STR-2), kept for the next panel: starting one cost the plan 0.5 ms
panels = threads.Threads("panel")


BUSY_RETRY = Busy.retry_after
# done once the server stops waiting for panels: seats left are ended
STOPPED: concurrent.futures.Future[None] = concurrent.futures.Future()
STOP_SETTLE = 1.0  # after a stop, how long seats get to come back ended before they are logged as stopped
GATEWAY_STOPPED = "gateway stopped"


class Flight:
    """The panels in flight in this process (security review 2, nothing-lost item 7).

    A cap on panels at once, in all and per gateway key, bounds what a burst of abandoned
    streams can hold (prompts, seat threads); the count lets a stopping server wait for them.
    `local` (this machine, no key) is held by the process cap alone.
    """

    def __init__(self) -> None:
        self.idle = threading.Condition()
        self.count = 0
        self.by_key: dict[str, int] = {}
        self.heavy = False  # a large prompt was in flight since the heap was last handed back

    def enter(self, caller: str, cap: int, key_cap: int) -> None:
        with self.idle:
            if STOPPED.done():  # a stopping gateway asks no new seat, even of a request it took before
                raise Busy(f"the gateway is stopping; try again in {BUSY_RETRY}s")
            if self.count >= cap:
                raise Busy(f"the gateway has {cap} panels in flight (max_panels in config/gateway.json); "
                           f"try again in {BUSY_RETRY}s")
            if caller != "local" and self.by_key.get(caller, 0) >= key_cap:
                raise Busy(f"the gateway key {caller} has {key_cap} panels in flight (max_panels_per_key in "
                           f"config/gateway.json); try again in {BUSY_RETRY}s")
            self.count += 1
            self.by_key[caller] = self.by_key.get(caller, 0) + 1

    def leave(self, caller: str) -> None:
        with self.idle:
            self.count -= 1
            left = self.by_key[caller] - 1
            if left:
                self.by_key[caller] = left
            else:
                del self.by_key[caller]
            self.idle.notify_all()
            if self.count == 0 and self.heavy:
                self.heavy = False
                _give_back_memory()

    def wait_idle(self, timeout: float | None) -> bool:
        """True once no panel is in flight, False when `timeout` seconds passed first."""
        with self.idle:
            return self.idle.wait_for(lambda: self.count == 0, timeout)


flight = Flight()
HEAVY = 1_000_000  # a prompt of this many characters makes the process hand its freed heap back once idle


def _trimmer() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None elsewhere."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


_malloc_trim = _trimmer()


def _give_back_memory() -> None:
    """Return freed heap to the system: glibc keeps what a burst of large prompts freed in its arenas,
    so without this a gateway would stay at its peak size for good (security review 2)."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def stop_seats() -> None:
    """End every seat still asked (the server is stopping): calls in flight end at once and are
    logged `error` "gateway stopped" with their real seconds; no new seat or merger is asked."""
    client.STOP.set()
    with contextlib.suppress(concurrent.futures.InvalidStateError):  # a second signal may race the drain here
        STOPPED.set_result(None)


def panel_id() -> str:
    """`pYYYYMMDD-HHMMSS-<16 hex>`: 64 random bits, so ids neither collide across processes and
    machines nor can be guessed (nothing-lost item 8, security review 4; older ids had 4 hex)."""
    return "p" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(8)


def call_id(panel: str, key: str) -> str:
    """A seat's call id: its panel's id, a dot, the seat's key (`member1`, `explorer2`, `merger`; GW-ID-1)."""
    return f"{panel}.{key}"


def local_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def retired_why(gone: roster.Retired, alias: str) -> str:
    """Why `alias`, named in retired.json, is not asked: with the day it was retired when its entry says it."""
    why = "retired from the bench"
    record = gone.models.get(alias)
    if record is not None and record.at:
        why += f" on {record.at[:10]}"
    return why + "; take it out of the collection (Restore in its model popup brings it back)"


def unregistered(names: Iterable[str]) -> list[str]:
    """The names no registration answers to, directly or through a rename (ALI-1)."""
    regs = registry.registrations()
    current = aliases.resolver()
    return [name for name in names if name not in regs and aliases.follow(current, name) not in regs]


def seat_label(key: str) -> str:
    return "explorer 2" if key == "explorer2" else "".join(c for c in key if not c.isdigit())


def ask_seat(alias: str, system: str, prompt: str, messages: list[Any] | None = None,
             on_delta: OnDelta | None = None, body: dict[str, Any] | None = None) -> Seat:
    """Ask one seat (SEAT-1..5); a model failure never raises, it comes back as status `error`."""
    return begin_seat(alias, system, prompt, messages, on_delta, body)()


def begin_seat(alias: str, system: str, prompt: str, messages: list[Any] | None = None,
               on_delta: OnDelta | None = None, body: dict[str, Any] | None = None,
               limits: collections.Settings | None = None, known: list[str] | None = None) -> Callable[[], Seat]:
    """`ask_seat()` in two halves: the seat's request is sent now, on the caller's thread (the built-in
    client); the function returned waits for the answer and returns the seat's result. `body` holds request
    fields of the caller's own (a council's `response_format`): the built-in client sends them to chat
    completions only, so a caller gives them only for such a model. A panel passes the `limits`
    (config/gateway.json) and `known` secrets it looked up once for all its seats."""
    started = time.monotonic()
    try:
        if messages is not None or body is not None or client.backend(alias) == "builtin":
            limits = limits or collections.settings()  # a stalled upstream ends the seat long before SEAT_TIMEOUT
            answer = client.begin(alias, prompt, system=system, timeout=SEAT_TIMEOUT, messages=messages,
                                  on_delta=on_delta, purpose="gateway", first_byte=limits.first_byte_timeout,
                                  idle=limits.idle_timeout, body=body)
        else:
            answer = functools.partial(llm_backend.ask, alias, prompt, system=system, timeout=SEAT_TIMEOUT,
                                       on_delta=on_delta)
    except Exception as exc:  # one seat failing must not lose the others
        answer = exc
    return functools.partial(_seat_result, alias, started, answer, known)


def counted(usage: object) -> dict[str, int]:
    """The upstream's own token counts of one call, `{prompt_tokens?, completion_tokens?}` (whole numbers only)."""
    usage = usage if isinstance(usage, dict) else {}
    return {k: usage[k] for k in ("prompt_tokens", "completion_tokens")
            if isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)}


def _seat_result(alias: str, started: float, answer: Callable[[], dict[str, Any]] | Exception,
                 known: list[str] | None = None) -> Seat:
    text, error, usage = "", "", {}
    try:
        if isinstance(answer, Exception):
            raise answer
        result = answer()
        text = result.get("text") or ""
        error = result.get("error") or ""
        usage = counted(result.get("usage"))
        if result.get("timed_out"):
            error = GATEWAY_STOPPED if client.STOP.is_set() else f"no answer in {SEAT_TIMEOUT:g}s"
    except Exception as exc:  # one seat failing must not lose the others
        text, error = "", f"{type(exc).__name__}: {exc}"
    if not error:
        error = notices.as_error(text)  # PN-3: a notice is no answer
    if known is None:
        known = keys.secrets()
    if error:
        error = keys.clean(error, known=known)  # every seat error, not only an image request's (IMP-15)
        try:
            learn.record(alias, error, "gateway")
        except Exception:
            pass
    status = "error" if error else ("empty" if not text.strip() else "ok")
    if error:
        text = ""
    seat = {"status": status, "answer": keys.hide(text, known=known),
            "error": keys.cut(error, SEAT_ERROR_KEPT, last=True), "seconds": round(time.monotonic() - started, 1)}
    if usage:
        seat["usage"] = usage
    return seat


def section(seat: Seat) -> str:
    if seat["answer"]:
        body = seat["answer"]
    elif seat["error"]:
        body = f"_error: {seat['error'][:SECTION_ERROR]}_"
    else:
        body = "_empty reply — usually a token budget, not incapacity_"
    label = seat["seat"]
    unlogged = f" · not in the offload log ({seat['log_error']})" if seat.get("logged") is False else ""
    return (f"## {label} — {seat['alias']}\n`{seat['call']}` · {seat['status']} · {seat['seconds']}s{unlogged}"
            f"\n\n{body}\n")


DEMO = "BENCHWARMERS_DEMO"  # set by the demo (`serve.py --demo`, `gateway.py --demo`) for its throwaway folder


def footer() -> str:
    """The reply's last lines. In the demo the data folder is a throwaway one another terminal does not know,
    so the verdict command carries it (issue 16: the footer's command must work from another terminal). The
    command is the module's (RPL-1's `python metrics/offload.py` is a checkout path an install does not have)."""
    home = f"BENCHWARMERS_HOME={paths.data()} " if settings.env(DEMO) == "1" else ""
    return ("---\n"
            "Once you have checked an answer against the code, record a verdict for its seat, useful or not.\n"
            "Send `POST /bench/verdict` to this same server (see `bench.verdict`), or run "
            f'`{home}python -m benchwarmers.panel.offload verdict <call id> --useful|--not-useful --note "..."`.')


SHAPE_WORDS = {"no decision model onboarded": "the default: no decision model is onboarded to choose a shape for "
                                              "each prompt, so explorers take the general angle"}


def heading(name: str, panel: str, members: int, explorers: int, shape: str, shape_by: str,
            skipped: list[dict[str, str]]) -> str:
    """The reply's first line; `shape_by` in words a newcomer reads (the fact itself stays in `bench.shape_by`)."""
    top = (f"Bench bench/{name} {panel} · {members} members + {explorers} explorers · "
           f"explorer shape {shape} ({SHAPE_WORDS.get(shape_by, shape_by)})\n")
    if skipped:
        top += "\nNot asked: " + "; ".join(f"{s['alias']} ({s['why']})" for s in skipped) + "\n"
    return top


def seat_record(call: str, label: str, alias: str, result: Seat) -> Seat:
    """A seat as the reply's `bench.seats` lists it; `usage` only when the upstream counted its tokens."""
    record = {"call": call, "seat": label, "alias": alias, "status": result["status"],
              "seconds": result["seconds"], "answer": result["answer"], "error": result["error"]}
    if "usage" in result:
        record["usage"] = result["usage"]
    return record


def log_seat(seat: Seat, plan: "Plan", held: ledger.Held | None = None) -> None:
    """Write one seat to the offload log (PNL-20): called the moment the seat finishes; with the ledger line
    its call `held` back, in one append (one round trip on Postgres).

    A line that cannot be written never loses the answer (nothing-lost item 4): the seat says
    `"logged": false` with the reason, and the reply goes on with every other seat.
    """
    note = offload.note_for(seat["seat"], seat["status"], seat["seconds"], seat["error"])
    try:
        offload.add(seat["alias"], plan.task, None, note, call=seat["call"], status=seat["status"],
                    seconds=seat["seconds"], collection=f"bench/{plan.name}", shape=plan.shape,
                    write=held.write if held is not None else None)
    except OSError as exc:
        seat["logged"], seat["log_error"] = False, str(exc)


class Plan:
    """Everything decided before a model is asked: who sits, the shape, the texts.

    `on_seat(plan, key, alias)` hears each seat the moment it is certain: the members once every
    refusal has been checked, before the router is asked for explorers, so they can start at once.
    """

    def __init__(self, name: str, messages: list[Any], nominees: Iterable[str] = (), reply: str = "",
                 caller: str = "local", on_seat: Callable[["Plan", str, str], None] | None = None) -> None:
        self.name = name
        self.caller = caller
        self.messages = messages
        self.logged: set[str] = set()  # the seats claimed for the offload log (`_claim`)
        self.image_count = images.validate(messages)
        self.system, self.prompt = images.flatten(messages)
        if not self.prompt.strip():
            raise Invalid("no user message to put to the collection")
        collection = collections.get(name)  # collections.Broken (503) when the file or this entry is broken
        if collection is None:
            raise UnknownCollection(collections.choose_message(name))
        self.collection = collection
        self.settings = collections.settings()
        self.secrets = keys.secrets()  # one look at the key store for every seat's answer and the call log
        self.known = catalog.table()  # one look at the catalog's files for the whole plan
        self.whole = (self.system + "\n\n" + self.prompt).strip()
        self.needed = images.request_estimate(self.system, self.prompt, self.image_count)
        self.skipped: list[dict[str, str]] = []
        self.notes: list[str] = []
        self._seat_members(collection.members, nominees)
        self.mode = collections.reply_mode(collection, reply)
        self.merged = self.mode == "merged"
        self._merger_choice()
        self._shape()
        self.panel = panel_id()
        # cleaned before the cut, which drops the word it splits: no URL's user:password is ever half-kept (IMG-8)
        self.task = keys.clean(" ".join(self.prompt.split()), TASK_CHARS, known=self.secrets) + f" (bench/{name}, {self.shape})"
        self._seats(on_seat)

    def skip(self, seat: str, alias: str, why: str) -> None:
        self.skipped.append({"seat": seat, "alias": alias, "why": why})

    def _seat_members(self, raw: Iterable[object], nominees: Iterable[str]) -> None:
        gone = roster.retired()
        members = list(dict.fromkeys(a for a in raw if isinstance(a, str) and a))
        for alias in members:
            if alias in gone.names:
                self.skip("member", alias, retired_why(gone, alias))
        members = [a for a in members if a not in gone.names]
        cap = self.settings.max_calls
        for alias in members[cap:]:
            self.skip("member", alias, f"past max_calls ({cap}) in config/gateway.json")
        members = members[:cap]
        self.members_before_vision = members

        wanted = list(dict.fromkeys(a for a in nominees if a not in members))
        skipped_aliases = {s["alias"] for s in self.skipped}
        for alias in wanted:
            if alias in gone.names and alias not in skipped_aliases:
                self.skip("with", alias, retired_why(gone, alias))
        wanted = [a for a in wanted if a not in gone.names]
        unknown = unregistered(wanted)
        if unknown:  # one entry for them all, and no catalog look at a name no model answers to
            count = f"{len(unknown)} names " if len(unknown) > 1 else ""
            self.skip("with", ", ".join(unknown), count + "not registered on the bench")
            wanted = [a for a in wanted if a not in unknown]

        self.explorer_count = collections.explorers_for(len(members), self.settings)
        if self.image_count:
            for seat, group in (("member", members), ("with", wanted)):
                for alias in group:
                    why = catalog.cannot_see(alias, self.known)
                    if why:
                        self.skip(seat, alias, why)
            blind = {s["alias"] for s in self.skipped}
            members = [a for a in members if a not in blind]
            wanted = [a for a in wanted if a not in blind]
        else:
            specialists = [a for a in members if roles.role_of(a) == "vision"]
            for alias in specialists:
                self.skip("member", alias,
                          "a vision specialist: sits only when the request carries images")
            members = [a for a in members if a not in specialists]
        self.members = members

        sizes = {a: catalog.too_small(a, self.needed, self.known) for a in members + wanted}
        small = sorted((sizes[a], a) for a in members if sizes[a])
        if small:
            raise PromptTooLarge(self._too_large_message(small))
        for alias in wanted:
            if sizes[alias]:
                self.skip("with", alias, f"its context window ({sizes[alias]:,} tokens) is below this prompt's "
                                         f"{self.needed:,}")
        wanted = [a for a in wanted if not sizes[a]]
        if wanted and not self.explorer_count:
            for alias in wanted:
                self.skip("with", alias, f"bench/{self.name} leaves no explorer seat "
                                         "(max_calls and max_explorers in config/gateway.json)")
            wanted = []
        self.nominees = wanted
        for entry in raw:
            if not (isinstance(entry, str) and entry):  # PNL-3 keeps the aliases; the rest is named, not lost
                self.skip("member", json.dumps(entry)[:60],
                          'no model alias: "members" in config/collections.json must hold aliases (strings)')

    def _too_large_message(self, small: list[tuple[int, str]]) -> str:
        images_clause = " (each image counted as 2,500)" if self.image_count else ""
        listed = ", ".join(f"{alias} {size:,}" for size, alias in small)
        return (f"prompt is about {self.needed:,} tokens{images_clause}; too large for {listed} (context windows) "
                f"in bench/{self.name}. Trim it under {small[0][0]:,} tokens, or choose a collection whose "
                "members have larger windows (GET /v1/models lists each collection's context_window).")

    def _merger_choice(self) -> None:
        merger = self.collection.merger
        gone = roster.retired()
        if merger in gone.names:
            if self.mode in ("merged", "council"):
                self.skip("merger", merger, retired_why(gone, merger) + "; the merger is chosen by verdicts")
            merger = ""
        self.merger = merger
        chairman = self.collection.council_chairman  # CNC-5: a retired chairman is skipped as a retired merger is
        if chairman in gone.names:
            if self.mode == "council":
                self.skip("chairman", chairman, retired_why(gone, chairman) + "; the merger's rule chooses one")
            chairman = ""
        self.chairman = chairman

    def _shape(self) -> None:
        own = self.collection.shape
        if self.image_count and not own:
            self.shape, self.shape_by = "vision", "the request carries images"
        elif self.explorer_count == 0:
            self.shape, self.shape_by = own or "general", "no explorer seats to fill"
        elif own:
            self.shape, self.shape_by = own, "set on the collection"
        else:
            self.shape, self.shape_by = shapes.pick(self.whole)

    def avoid(self) -> set[str]:
        avoid = set(route.cooling())
        for alias in registry.registrations():
            if catalog.too_small(alias, self.needed, self.known):
                avoid.add(alias)
            elif self.image_count and catalog.cannot_see(alias, self.known):
                avoid.add(alias)
        return avoid

    def _seats(self, on_seat: Callable[["Plan", str, str], None] | None) -> None:
        self.seats: list[tuple[str, str]] = []
        self.router: dict[str, Any] | None = None
        if self.explorer_count > 0:
            route.check_shape(self.shape)  # the last refusal that can follow a sitting member

        def sit(key: str, alias: str) -> None:
            self.seats.append((key, alias))
            if on_seat is not None:
                on_seat(self, key, alias)

        for i, alias in enumerate(self.members, 1):
            sit(f"member{i}", alias)
        if self.explorer_count > 0:
            self.router = route.pick_seats(shape=self.shape, large=len(self.whole) > LARGE, nominees=self.nominees,
                                      members=self.members, explorers=self.explorer_count, avoid=self.avoid())
            for key in ("explorer", "explorer2"):
                pick = self.router.get(key)
                if pick:
                    sit(key, pick["model"])
            self.notes = [n for n in self.router.get("notes") or []
                          if any(a in n for a in self.nominees)]
        if not self.seats:
            if self.image_count:
                raise Invalid(self._blind_message())
            raise NoSeat(f"collection '{self.name}' has no members and no explorer could be seated"
                              + "".join(f"; {s['alias']} not asked: {s['why']}" for s in self.skipped))

    def _blind_message(self) -> str:
        listed = "; ".join(f"{s['alias']} {s['why']}" for s in self.skipped) or "no members"
        return (f"no seat in bench/{self.name} can see images, and none is asked rather than answer blind: "
                f"{listed}. No model that takes images was free for an explorer seat. Add one to the collection, "
                "or call a collection whose together.capabilities on GET /v1/models lists vision.")

    def explorers_seated(self) -> int:
        return sum(1 for key, _ in self.seats if key.startswith("explorer"))


def merge_prompt(plan: Plan, answered: list[Seat]) -> str:
    """What the merger reads: the request redacted, every answer (hidden as its seat came back: an answer that
    echoed the key of its own endpoint must not carry it to the merger's)."""
    request = images.redact(plan.whole)
    blocks = [f"## {s['seat']} — {s['alias']}\n\n{s['answer']}" for s in answered]
    return "THE REQUEST\n\n" + request + "\n\nTHE ANSWERS\n\n" + "\n\n".join(blocks)


def merger_candidates(plan: Plan) -> list[str]:
    """MRG-3: the collection's merger alone, else the members the policy puts forward on this shape's
    verdicts (`panel.policy`: by default the counted rule, which ranks only members with verdicts), then
    the router's primary, then the members in order."""
    if plan.merger:
        return [plan.merger]
    record = offload.shape_record(plan.shape)
    candidates = policy.ranked(collections.settings().policy, plan.members_before_vision, record)
    try:
        primary = route.pick_seats(shape=plan.shape, large=len(plan.whole) > LARGE).get("primary")
        if primary:
            candidates.append(primary["model"])
    except Exception:
        pass
    candidates += plan.members_before_vision
    return list(dict.fromkeys(candidates))


def _text_to(on_part: Callable[[str], object]) -> OnDelta:
    """An `on_delta` that passes the answer's text (not its reasoning) to `on_part`."""
    def on_delta(kind: str, piece: str) -> None:
        if kind == "text":
            on_part(piece)
    return on_delta


def merge(plan: Plan, seats: list[Seat], on_part: Callable[[str], object] | None = None,
          gone: threading.Event | None = None, candidates: list[str] | None = None) -> tuple[Seat | None, str, str]:
    """Ask one more model to write a single answer (MRG-1..8): `(merger seat or None, answer, note)`.
    `candidates` replaces MRG-3's (a council's fallback: CNC-6)."""
    answered = [s for s in seats if s["status"] == "ok"]
    if not answered:
        return None, "", "no seat answered"
    chosen = merger_candidates(plan) if candidates is None else candidates
    return write_one(plan, "merger", "merge", MERGE_SYSTEM, merge_prompt(plan, answered), chosen, on_part, gone)


def write_one(plan: Plan, key: str, work: str, system: str, text: str, candidates: list[str],
              on_part: Callable[[str], object] | None, gone: threading.Event | None) -> tuple[Seat | None, str, str]:
    """Ask the first of `candidates` whose window fits to write one answer from the seats' (the merger, a
    council's chairman), logged as seat `key`: `(its seat or None, answer, note)`; `work` names the task in notes."""
    need = images.estimate(system + "\n\n" + text)
    known = catalog.table()  # afresh: a seat's failure may have taught a smaller window meanwhile
    fits = [a for a in candidates if not catalog.too_small(a, need, known)]
    if not fits:
        return None, "", f"no {key} has the context window for the {work} (about {need:,} tokens)"
    alias = fits[0]
    if STOPPED.done():
        return None, "", GATEWAY_STOPPED
    if gone is not None and gone.is_set():
        return None, "", f"the caller hung up before the {work}, so no {key} was asked"
    with ledger.Held() as held:
        result = ask_seat(alias, system, text, on_delta=_text_to(on_part) if on_part is not None else None)
        seat = seat_record(call_id(plan.panel, key), key, alias, result)
        log_seat(seat, plan, held)
    if seat["status"] != "ok":
        note = f"the {key} {alias} came back {seat['status']}"
        if seat["error"]:
            note += f": {seat['error'][:120]}"
        return seat, "", note
    return seat, seat["answer"], ""


def run(name: str, messages: list[Any], nominees: Iterable[str] = (), reply: str = "", caller: str = "local",
        on_part: Callable[[str], object] | None = None, on_seated: Callable[[], object] | None = None,
        gone: threading.Event | None = None, finish: Finish | None = None) -> tuple[str, dict[str, Any]]:
    """Seat, ask, log and merge one panel; returns `(content, bench)` (PNL-1..22, MRG-*, RPL-*).

    `on_seated()` hears, once, that no refusal can follow: just before the first seat is asked.
    `gone` (an Event) is set once the caller has hung up: the seats asked are still waited for and
    logged, but no merger is asked. `finish` writes what follows the seats, which are streamed as
    they come (`council.finish`). Raises `Busy` (503) when the process or the key already has
    its cap of panels in flight."""
    admit(caller)
    try:
        return _run(name, messages, nominees, reply, caller, on_part, on_seated, gone, finish)
    finally:
        flight.leave(caller)


def admit(caller: str) -> None:
    """Count a panel in flight for `caller`, or raise `Busy` (the caps, or a stopping gateway)."""
    settings = collections.settings()
    flight.enter(caller, settings.max_panels, settings.max_panels_per_key)


def _run(name: str, messages: list[Any], nominees: Iterable[str], reply: str, caller: str,
         on_part: Callable[[str], object] | None, on_seated: Callable[[], object] | None,
         gone: threading.Event | None, finish: Finish | None = None) -> tuple[str, dict[str, Any]]:
    begun: list[tuple[Callable[[], Seat], tuple[Plan, str, str], float]] = []
    futures: Asked = {}

    def start(plan: Plan, key: str, alias: str) -> None:
        if not begun and on_seated is not None:
            on_seated()  # a stream's 200 can leave while the seats' requests go out
        # each seat's request leaves the moment the plan is sure of it (members before the router has been
        # asked), sent from this thread; the seats' own threads, which only wait for the answers, start
        # once every request is out, so none of them competes with this thread for the GIL meanwhile
        seat_messages = messages if plan.image_count else None
        begun.append((begin_seat(alias, plan.system, plan.prompt, seat_messages, limits=plan.settings,
                                 known=plan.secrets), (plan, key, alias),
                      time.monotonic()))

    try:
        with fileio.snapshot():  # one look at each config file for the whole plan, however many seats ask
            plan = Plan(name, messages, nominees, reply, caller, on_seat=start)
    except Exception:
        # refusals all come before the first seat starts; after an unexpected failure the seats already
        # asked are still waited for and written to the offload log when they finish (PNL-20)
        for answer, (half_made, key, alias), _ in begun:
            pool.submit(_asked, half_made, key, alias, answer)
        raise
    if len(plan.whole) >= HEAVY:
        flight.heavy = True
    top = heading(name, plan.panel, len(plan.members), plan.explorers_seated(), plan.shape, plan.shape_by,
                  plan.skipped)
    relay_all = on_part if not plan.merged else None  # every answer streamed as it comes
    try:
        if relay_all is not None:
            relay_all(top)  # before the seat threads start, so the caller's 200 and heading leave at once
    finally:
        for answer, (planned, key, alias), started in begun:
            futures[pool.submit(_asked, planned, key, alias, answer)] = (planned, key, alias, started)

    finished: dict[str, Seat] = {}
    for key, done in _answers(plan, futures):
        finished[key] = done
        if relay_all is not None:
            relay_all("\n" + section(done))
    seats = [finished[key] for key, _ in plan.seats]
    every = top + "\n" + "\n".join(section(s) for s in seats) + "\n" + footer()

    bench: dict[str, Any] = {"panel": plan.panel, "collection": f"bench/{name}", "shape": plan.shape,
                             "shape_by": plan.shape_by, "seats": seats, "verdict": VERDICT_HINT}
    if plan.skipped:
        bench["skipped"] = plan.skipped
    if plan.notes:
        bench["notes"] = plan.notes
    after: list[Seat] = []
    if plan.merged:
        content, merger = merged_content(plan, seats, bench, every, on_part, gone)
        after = [merger] if merger else []
    elif finish is not None:
        content, after = finish(plan, seats, bench, every, on_part, gone)
    else:
        content = every
        if relay_all is not None:
            relay_all("\n" + footer())
    problems = [f"{s['call']}: {s['log_error']}" for s in seats + after if s.get("logged") is False]
    try:
        write_call_log(plan, seats, after)
    except OSError as exc:
        problems.append(f"calls log: {exc}")
    if problems:
        bench["log"] = ("the data folder could not be written, so some of this panel is not on record "
                        "(seats marked logged: false): " + "; ".join(problems))
    return content, bench


def _answers(plan: Plan, futures: Asked) -> Iterator[tuple[str, Seat]]:
    """`(key, seat)` as each seat finishes, logged by its own thread the moment it does (PNL-20, `_asked`).

    A stopping server (`stop_seats`) ends the calls in flight; a seat whose call does not come back
    within STOP_SETTLE (a backend that cannot be interrupted) is logged `error` "gateway stopped"
    with its real seconds, so every seat asked is on record before the process exits.
    """
    pending: set[concurrent.futures.Future[Any]] = set(futures)
    while pending:
        done, _ = concurrent.futures.wait(pending | {STOPPED}, return_when=concurrent.futures.FIRST_COMPLETED)
        if STOPPED in done:
            done, _ = concurrent.futures.wait(pending, timeout=STOP_SETTLE)
        for future in done - {STOPPED}:
            pending.discard(future)
            _, key, _, _ = futures[future]
            yield key, future.result()
        if STOPPED.done():
            for future in pending:
                _, key, alias, started = futures[future]
                future.cancel()
                if not _claim(plan, key):  # its own thread came back meanwhile and is writing its line
                    yield key, future.result()
                    continue
                stopped = {"status": "error", "answer": "", "error": GATEWAY_STOPPED,
                           "seconds": round(time.monotonic() - started, 1)}
                yield key, _logged(plan, key, alias, stopped)
            return


def _logged(plan: Plan, key: str, alias: str, result: Seat, held: ledger.Held | None = None) -> Seat:
    seat = seat_record(call_id(plan.panel, key), seat_label(key), alias, result)
    log_seat(seat, plan, held)
    return seat


def _asked(plan: Plan, key: str, alias: str, answer: Callable[[], Seat]) -> Seat:
    """A seat's own thread: waits for its answer, then writes its offload line with its call's ledger line in
    one append, before the panel hears of it (PNL-20). A seat the panel has already logged as stopped
    (`_answers`) writes only its ledger line."""
    with ledger.Held() as held:
        result = answer()
        if not _claim(plan, key):
            return seat_record(call_id(plan.panel, key), seat_label(key), alias, result)
        return _logged(plan, key, alias, result, held)


_claiming = threading.Lock()


def _claim(plan: Plan, key: str) -> bool:
    """Whether seat `key` is still to be logged, claiming it: by its own thread as it answers, or by the panel
    as stopped when it did not come back in time; never both."""
    with _claiming:
        if key in plan.logged:
            return False
        plan.logged.add(key)
        return True


Written = tuple[Seat | None, str, str]  # what `write_one` gives: the writer's seat or None, its answer, a note


def relayed(on_part: OnPart | None, write: Callable[[OnPart | None], Written], work: str) -> tuple[Written, bool]:
    """`write(relay)` with the writer's words passed on as they come, each known secret hidden (issue 29 item 2:
    its upstream may echo its key), and an unexpected failure made a note; gives back what it wrote and whether
    any word was streamed (a fallback that follows must start on a new line)."""
    streamed: list[str] = []
    hider = keys.Hider()
    relay = functools.partial(_relayed, streamed, hider, on_part) if on_part else None
    try:
        written = write(relay)
    except Exception as exc:
        written = None, "", f"the {work} failed ({type(exc).__name__}: {exc})"
    rest = hider.end()  # what it held back, now that the writer has said all
    if rest and on_part:
        streamed.append(rest)
        on_part(rest)
    return written, bool(streamed)


def merged_content(plan: Plan, seats: list[Seat], bench: dict[str, Any], every: str,
                   on_part: Callable[[str], object] | None,
                   gone: threading.Event | None = None) -> tuple[str, Seat | None]:
    """The merged reply, or every answer with a one-line note when the merge cannot be had (MRG-6..8)."""
    (merger, answer, note), streamed = relayed(
        on_part, lambda relay: merge(plan, seats, relay, gone), "merge")
    if merger:
        bench["merger"] = merger
    if answer and merger is not None:  # an answer is its merger's
        bench["reply"] = "merged"
        listed = ", ".join(f"{s['alias']} {s['status']}" for s in seats)
        tail = (f"\n\n---\nMerged by {merger['alias']} (`{merger['call']}`) from: {listed}. "
                + "".join(f"Not asked: {s['alias']} ({s['why']}). " for s in plan.skipped)
                + "Every seat's answer and call id is in the response's `bench` field.")
        if on_part:
            on_part(tail)
        return answer + tail, merger
    bench["reply"] = "all"
    bench["note"] = note
    content = f"_Merged reply unavailable: {note}. Every answer follows._\n\n" + every
    if on_part:
        on_part(("\n\n" if streamed else "") + content)
    return content, merger


def _relayed(streamed: list[str], hider: keys.Hider, on_part: Callable[[str], object], piece: str) -> None:
    """A merger's words as they come, each known secret hidden: kept (the fallback knows it must start on a new
    line) and passed on."""
    shown = hider.feed(piece)
    if shown:
        streamed.append(shown)
        on_part(shown)


def write_call_log(plan: Plan, seats: list[Seat], after: list[Seat]) -> None:
    """One line per panel in runs/gateway/calls.jsonl (CLG-1), after seats and merge (`after`: the merger, or a
    council's rankings and chairman).

    Answers are written as cleaned as prompts (IMG-8, KEY-7): one may quote a user:password URL,
    or the key its upstream was sent. The caller got them with the keys hidden only. Security review 9:
    `calls_log_prompts: false` keeps the prompt out of it (its length stays), and the log is rotated
    once it reaches `calls_log_max_mb` (`calls.jsonl.1` … `.N`, `calls_log_keep` of them; on Postgres its oldest
    lines past as many bytes are deleted, docs/replicas.md). A seat's `usage`
    (its tokens, when the upstream counted them) is kept too, for the Review page's tokens and cost.
    """
    known = plan.secrets
    order = ("call", "seat", "alias", "status", "answer", "error", "seconds", "usage")  # usage when counted
    logged = [{k: keys.clean(s[k], known=known) if k in ("answer", "error") else s[k] for k in order if k in s}
              for s in seats + after]
    line = {"panel": plan.panel, "at": local_iso(), "model": f"bench/{plan.name}", "shape": plan.shape,
            "shape_by": keys.clean(plan.shape_by, known=known), "key": plan.caller,
            "system": logged_text(plan.system, plan.settings, known),
            "prompt": logged_text(plan.prompt, plan.settings, known), "seats": logged}
    if plan.skipped:
        line["skipped"] = plan.skipped
    store.current().append_log(store.CALLS, line, plan.settings.calls_log_max_mb * 1_000_000,
                               plan.settings.calls_log_keep)


def logged_text(text: str, settings: collections.Settings, known: list[str]) -> str:
    """A prompt as the calls log keeps it: cleaned, or only its length when prompts are not kept."""
    if not settings.calls_log_prompts:
        return f"[not kept: {len(text):,} characters]" if text else ""
    return keys.clean(text, known=known)


def warm_up() -> None:
    """What a server does once at start, so the first panel pays no one-off cost:
    the endpoints' model listings (catalog), the offload index, the router's records."""
    for step in (catalog.warm, offload.index().refresh, route.records):
        try:
            step()
        except Exception as exc:
            console.say(f"warning: warming up {step.__qualname__} failed ({type(exc).__name__}: {exc})")


@dataclasses.dataclass(frozen=True, slots=True)
class Seated:
    """No refusal can follow: the first seat is about to be asked, so a stream's 200 may leave."""


@dataclasses.dataclass(frozen=True, slots=True)
class Part:
    """A piece of the reply: the heading, a seat's section, the merger's words, the footer."""

    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Done:
    """The panel's whole reply and its `bench` object, as `run()` returns them."""

    content: str
    bench: dict


@dataclasses.dataclass(frozen=True, slots=True)
class Failed:
    """The panel failed with `exc`; before any `Seated` it is a refusal (`core.errors.planned` gives its status)."""

    exc: Exception


def start(name: str, messages: list[Any], nominees: Iterable[str] = (), reply: str = "", caller: str = "local",
          gone: threading.Event | None = None, finish: Finish | None = None) -> queue.Queue[Any]:
    """Run a panel on its own thread (STR-2); returns a queue of events. `gone` and `finish` as for `run()`.

    Events: `Seated()` once no refusal can follow, `Part(text)`s, then `Done(content, bench)` or
    `Failed(exc)`; a refusal is a `Failed` before any `Seated`.
    """
    admit(caller)  # here, not on the panel's thread: a Busy refusal is a plain 503 before any 200
    events: queue.Queue[Any] = queue.Queue()

    def work() -> None:
        try:
            events.put(Done(*_run(name, messages, nominees, reply, caller, lambda text: events.put(Part(text)),
                                  lambda: events.put(Seated()), gone, finish)))
        except Exception as exc:
            events.put(Failed(exc))
        finally:
            flight.leave(caller)

    panels.run(work)
    return events
