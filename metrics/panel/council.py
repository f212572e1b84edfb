"""A council (issue 32; GATEWAY.md "Council replies", CNC-1..9): the panel's seats rank each other's answers
blind, then a chairman writes the answer, and every ranking is kept as evidence the bench learns from.

Stage 1 is the panel as `panel.run` asks it, every section streamed as its seat finishes. `finish()` is the
rest, handed to `panel.run` as its `finish`:

- Stage 2, peer ranking (CNC-2..4): every seat that answered `ok` is shown the request and the *other* ok
  answers as `Response A`, `Response B`, … in a shuffled order, each model's and seat's name taken out, and
  asked for a ranking: a JSON schema (`response_format`) where the catalog says the model takes one and the
  built-in client sends it chat completions, else a plain-text `FINAL RANKING:` list. With `council.orders` 2
  (the default) it ranks a second time with the order reversed, so a judge that favours a position shows it.
  A reply that is not a whole ranking of the labels shown is `unreadable`: logged, counted missing, never
  guessed. Each ranking is its own call (`<panel>.rank-<seat>`, `-rev` for the reversed order), written to the
  offload log the moment it comes back with the calls it ranked, best first (CNC-7).
- Stage 3, chairman (CNC-5, CNC-6): `council.chairman`, else the merger's rule (MRG-3), reads the request, the
  answers under their seats and models, and the aggregate ranking, and writes the answer. No readable ranking:
  a merger writes from the answers alone (a merged reply). The chairman fails: the same, with the next model.
  That fails too: every answer, as a plain panel. Each step down says why in the reply and `bench.council`.

Decisions: a ranker needs two answers besides its own to order, so fewer than three ok answers skip stage 2;
the aggregate's mean rank is over every readable ranking (both orders count), `rankers` counts the distinct
models behind them, and `agreement` is the share of the pairs a ranking ordered that agree with the aggregate;
the streamed reply follows the stages (sections, a line per ranking, the table, the chairman's words), while
the whole reply puts the chairman's answer first.
"""

import concurrent.futures
import json
import random
import re
import string
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..core import images
from ..wire import common
from ..models import catalog, registry
from ..calling import client
from . import offload, panel

Seat = panel.Seat
OnPart = panel.OnPart

RANK_SYSTEM = (
    "You judge answers to a request. The responses that follow are anonymous, each under its label, in no "
    "particular order. Judge each on whether it is correct and useful for the request: not on its length, "
    "its style, or where it stands in the list."
)
RANK_TEXT = (
    "Say briefly what each response gets right and wrong. Then end your reply with the line FINAL RANKING: "
    "followed by every label, best first, one a line, numbered:\nFINAL RANKING:\n1. Response C\n2. Response A"
)
RANK_JSON = 'Answer with a JSON object whose "ranking" lists every label ("Response A", ...), best first.'
CHAIR_SYSTEM = (
    "Several models answered the same request; their answers follow, each under its seat and model name. Then "
    "the models ranked each other's answers without knowing whose they were; the aggregate follows. Write the "
    "final answer to the request. Weigh the ranking as evidence, not as a vote: say where the answers agreed "
    "and disagreed and who said what, and keep every dissent, attributed."
)
STRUCTURED = "structured"  # how a ranking was asked: a JSON schema, else the plain-text list
NAMELESS = "[a model]"  # what a model's name in an answer becomes before a ranker reads it
LABEL = re.compile(r"(?:response\s+)?([A-Z]{1,2})", re.I)
LISTED = re.compile(r"\bresponse\s+([A-Z]{1,2})\b", re.I)
MIN_ANSWERS = 3  # a ranker orders the others' answers: two at least
_draw = random.SystemRandom()  # the shown order: unguessable, so no seat's place is ever the same


def finish(plan: panel.Plan, seats: list[Seat], bench: dict[str, Any], every: str, on_part: OnPart | None,
           gone: threading.Event | None) -> tuple[str, list[Seat]]:
    """Stages 2 and 3 after the seats (`panel.Finish`): `(content, the calls made)`, each already logged."""
    answered = [s for s in seats if s["status"] == "ok"]
    spent: dict[str, int] = {}  # call id -> its prompt's estimate, for calls whose upstream counted nothing
    council: dict[str, Any] = {"orders": plan.collection.council_orders, "notes": []}
    bench["council"] = council
    rankings = rank(plan, answered, on_part, gone, spent, council["notes"])
    rows = aggregate(rankings, answered)
    council.update(rankings=rankings, aggregate=rows, orders_agree=orders_agree(rankings), chairman=None)
    table = table_text(rows) if rows else ""
    if table and on_part:
        on_part("\n" + table)
    chair: Seat | None = None
    answer, streamed = "", False
    if rows:
        (chair, answer, note), streamed = _chair(plan, answered, rows, on_part, gone, spent)
        council["chairman"] = chair
        if not answer:
            council["notes"].append(note)
    elif rankings:
        council["notes"].append("no peer ranking could be read")
    after = rankings + ([chair] if chair else [])
    if answer and chair:
        bench["reply"] = "council"
        content = answer + f"\n\n---\n{_signed(chair, rankings)}\n\n" + table + "\n" + every
    else:
        content, merger = _fallback(plan, seats, bench, every, table, on_part, gone, streamed)
        after += [merger] if merger else []
    if on_part:
        on_part("\n\n" + panel.footer())
    council["stages"] = stages(plan, seats, rankings, chair, bench.get("merger"), spent)
    if not council["notes"]:
        del council["notes"]
    return content, after


# ---------------------------------------------------------------- stage 2: peer ranking


def rank(plan: panel.Plan, answered: list[Seat], on_part: OnPart | None, gone: threading.Event | None,
         spent: dict[str, int], notes: list[str]) -> list[Seat]:
    """Every ranker's ranking (one per order), in the rankers' seat order; each logged and streamed as it comes."""
    if len(answered) < MIN_ANSWERS:
        notes.append(f"{len(answered)} seats answered ok; a peer ranking needs {MIN_ANSWERS}, so none was asked")
        return []
    if panel.STOPPED.done() or (gone is not None and gone.is_set()):
        notes.append("the caller hung up or the gateway stopped before the peer ranking, so none was asked")
        return []
    hide = nameless(plan)
    asked: dict[concurrent.futures.Future[Seat], int] = {}
    waits = []
    for ranker in answered:
        shown = [s for s in answered if s is not ranker]
        _draw.shuffle(shown)
        for order, listed in enumerate((shown, shown[::-1])[:plan.collection.council_orders], 1):
            waits.append(_ask_ranking(plan, ranker, listed, order, hide, spent))
    if on_part:
        on_part(f"\n---\n**Peer ranking**: {len(answered)} rankers, "
                f"{plan.collection.council_orders} order(s) each, the answers unnamed\n\n")
    for i, wait in enumerate(waits):
        asked[panel.pool.submit(wait)] = i
    done: dict[int, Seat] = {}
    for future in concurrent.futures.as_completed(asked):
        ranking = future.result()
        done[asked[future]] = ranking
        if on_part:
            on_part(ranking_line(ranking) + "\n")
    return [done[i] for i in range(len(waits))]


def nameless(plan: panel.Plan) -> Callable[[str], str]:
    """A function taking every seat's model name (alias and served name) out of a text, whole words only."""
    regs = registry.registrations()
    names = {alias for _, alias in plan.seats}
    names |= {regs[a].model_name for a in list(names) if a in regs and regs[a].model_name}
    if not names:
        return lambda text: text
    pattern = re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                         + r")(?![\w-])", re.I)
    return lambda text: pattern.sub(NAMELESS, text)


def label(i: int) -> str:
    """The i-th label: A..Z, then AA, AB, ..."""
    letters = string.ascii_uppercase
    return letters[i] if i < len(letters) else letters[i // len(letters) - 1] + letters[i % len(letters)]


def structured(alias: str) -> bool:
    """Whether `alias` is asked for its ranking as a JSON schema: the catalog says it takes one, and the built-in
    client sends it chat completions (a request's own fields go nowhere else)."""
    known = catalog.table()
    return known[alias].get("structured_output") is True and known.api(alias) == "chat" \
        and client.backend(alias) == "builtin"


def schema(labels: list[str]) -> dict[str, Any]:
    """The `response_format` of a structured ranking: every label shown, once each, best first."""
    shown = [f"Response {x}" for x in labels]
    return {"type": "json_schema", "json_schema": {"name": "ranking", "strict": True, "schema": {
        "type": "object", "additionalProperties": False, "required": ["ranking"],
        "properties": {"ranking": {"type": "array", "items": {"type": "string", "enum": shown},
                                   "minItems": len(shown), "maxItems": len(shown)}}}}}


def ranking_prompt(plan: panel.Plan, shown: list[Seat], hide: Callable[[str], str], as_json: bool) -> str:
    """What a ranker reads: the request, then the others' answers under their labels, never a name."""
    blocks = [f"## Response {label(i)}\n\n{hide(s['answer'])}" for i, s in enumerate(shown)]
    return ("THE REQUEST\n\n" + images.redact(plan.whole) + "\n\nTHE RESPONSES\n\n" + "\n\n".join(blocks)
            + "\n\n" + (RANK_JSON if as_json else RANK_TEXT))


def _ask_ranking(plan: panel.Plan, ranker: Seat, shown: list[Seat], order: int, hide: Callable[[str], str],
                 spent: dict[str, int]) -> Callable[[], Seat]:
    """Send one ranking request now; the function returned waits, reads, logs and returns the ranking."""
    key = "rank-" + ranker["call"].rsplit(".", 1)[1] + ("-rev" if order == 2 else "")
    labels = [label(i) for i in range(len(shown))]
    as_json = structured(ranker["alias"])
    text = ranking_prompt(plan, shown, hide, as_json)
    call = panel.call_id(plan.panel, key)
    spent[call] = images.estimate(RANK_SYSTEM + "\n\n" + text)
    wait = panel.begin_seat(ranker["alias"], RANK_SYSTEM, text, body={"response_format": schema(labels)}
                            if as_json else None, limits=plan.settings, known=plan.secrets)

    def settle() -> Seat:
        result = wait()
        mapping = {x: s["call"] for x, s in zip(labels, shown)}
        ranking = read_ranking(result["answer"], labels) if result["status"] == "ok" else None
        record = panel.seat_record(call, "ranking", ranker["alias"], result)
        if result["status"] == "ok" and ranking is None:
            record["status"] = "unreadable"
        record.update(ranker=ranker["call"], order=order, asked=STRUCTURED if as_json else "text",
                      labels=mapping, ranking=ranking or [], ranked=[mapping[x] for x in ranking or []])
        log_ranking(record, plan)
        return record
    return settle


def read_ranking(text: str, labels: list[str]) -> list[str] | None:
    """The labels in the order `text` ranks them (a JSON object's `ranking`, else the list after the last
    `FINAL RANKING:`), or None unless that is every label shown exactly once (CNC-4: never guessed)."""
    found = _json_ranking(text)
    if found is None:
        at = text.upper().rfind("FINAL RANKING")
        found = [m.upper() for m in LISTED.findall(text[at:])] if at >= 0 else None
    return found if found is not None and sorted(found) == sorted(labels) else None


def _json_ranking(text: str) -> list[str] | None:
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        found = json.loads(body)
    except ValueError:
        return None
    listed = found.get("ranking") if isinstance(found, dict) else None
    if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
        return None
    matched = [LABEL.fullmatch(x.strip()) for x in listed]
    return [m.group(1).upper() for m in matched if m] if all(matched) else None


def log_ranking(ranking: Seat, plan: panel.Plan) -> None:
    """Write one ranking to the offload log the moment it is read (CNC-7): its own call id, the ranker, the
    calls it ranked best first (`[]` when unreadable); a line that cannot be written is said, as for a seat."""
    note = offload.note_for(f"ranking by {ranking['ranker'].rsplit('.', 1)[1]}, order {ranking['order']}",
                            ranking["status"], ranking["seconds"], ranking["error"])
    try:
        offload.add(ranking["alias"], plan.task, None, note, call=ranking["call"], status=ranking["status"],
                    seconds=ranking["seconds"], collection=f"bench/{plan.name}", shape=plan.shape,
                    ranked=ranking["ranked"])
    except OSError as exc:
        ranking["logged"], ranking["log_error"] = False, str(exc)


def _seat_key(call: str) -> str:
    return call.rsplit(".", 1)[1]


def ranking_line(ranking: Seat) -> str:
    """One streamed line as a ranking comes back: its call, ranker and order, seats best first (or why not)."""
    head = f"- `{ranking['call']}` {ranking['alias']} (order {ranking['order']}): "
    if ranking["status"] != "ok":
        why = f": {ranking['error'][:panel.SECTION_ERROR]}" if ranking["error"] else ""
        return head + f"_{ranking['status']}{why}_"
    return head + " > ".join(_seat_key(c) for c in ranking["ranked"])


# ---------------------------------------------------------------- the aggregate


def aggregate(rankings: list[Seat], answered: list[Seat]) -> list[dict[str, Any]]:
    """CNC-8: per answer, its mean place over the readable rankings that showed it (1 is best), the rankers
    behind them, and the share of the pairs those rankings ordered that agree with the aggregate's order;
    best first, `[]` when no ranking was readable."""
    readable = [r for r in rankings if r["status"] == "ok"]
    if not readable:
        return []
    places: dict[str, list[int]] = {s["call"]: [] for s in answered}
    rankers: dict[str, set[str]] = {s["call"]: set() for s in answered}
    for r in readable:
        for place, call in enumerate(r["ranked"], 1):
            places[call].append(place)
            rankers[call].add(r["alias"])
    mean = {c: sum(p) / len(p) for c, p in places.items() if p}
    rows = []
    for s in sorted(answered, key=lambda s: mean.get(s["call"], float("inf"))):
        call = s["call"]
        rows.append({"call": call, "seat": _seat_key(call), "alias": s["alias"],
                     "mean_rank": round(mean[call], 2) if call in mean else None, "rankings": len(places[call]),
                     "rankers": len(rankers[call]), "agreement": _agreement(call, readable, mean)})
    return rows


def _agreement(call: str, readable: list[Seat], mean: dict[str, float]) -> float | None:
    agree = pairs = 0
    for r in readable:
        if call not in r["ranked"]:
            continue
        mine = r["ranked"].index(call)
        for other_place, other in enumerate(r["ranked"]):
            if other == call or mean[other] == mean[call]:
                continue
            pairs += 1
            agree += (mine < other_place) == (mean[call] < mean[other])
    return round(agree / pairs, 2) if pairs else None


def orders_agree(rankings: list[Seat]) -> dict[str, int]:
    """Position bias in sight (CNC-3): of the rankers read in both orders, how many ranked the same both times."""
    by_ranker: dict[str, list[list[str]]] = {}
    for r in rankings:
        if r["status"] == "ok":
            by_ranker.setdefault(r["ranker"], []).append(r["ranked"])
    both = [pair for pair in by_ranker.values() if len(pair) == 2]
    return {"rankers": len(both), "same": sum(1 for a, b in both if a == b)}


def table_text(rows: list[dict[str, Any]]) -> str:
    """The aggregate as a compact markdown table."""
    lines = ["| place | seat | model | mean rank | rankers | agreement |", "|---|---|---|---|---|---|"]
    for i, row in enumerate(rows, 1):
        mean = "–" if row["mean_rank"] is None else f"{row['mean_rank']:.2f}"
        agree = "–" if row["agreement"] is None else f"{row['agreement']:.0%}"
        lines.append(f"| {i} | {row['seat']} | {row['alias']} | {mean} | {row['rankers']} | {agree} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- stage 3: the chairman, and the fallbacks


def chair_candidates(plan: panel.Plan) -> list[str]:
    """CNC-5: the collection's `council.chairman` alone (unless retired), else the merger's rule (MRG-3)."""
    return [plan.chairman] if plan.chairman else panel.merger_candidates(plan)


def chair_prompt(plan: panel.Plan, answered: list[Seat], rows: list[dict[str, Any]]) -> str:
    listed = "\n".join(f"{i}. {r['seat']} — {r['alias']}: mean rank {r['mean_rank']} from {r['rankers']} rankers"
                       for i, r in enumerate(rows, 1) if r["mean_rank"] is not None)
    return panel.merge_prompt(plan, answered) + "\n\nTHE PEERS' RANKING (best first)\n\n" + listed


def _chair(plan: panel.Plan, answered: list[Seat], rows: list[dict[str, Any]], on_part: OnPart | None,
           gone: threading.Event | None, spent: dict[str, int]) -> tuple[panel.Written, bool]:
    """Stage 3: `((the chairman's seat or None, its answer, why none), whether any of it was streamed)`."""
    text = chair_prompt(plan, answered, rows)
    spent[panel.call_id(plan.panel, "chairman")] = images.estimate(CHAIR_SYSTEM + "\n\n" + text)
    if on_part:
        on_part("\n**Chairman's answer**\n\n")
    return panel.relayed(on_part, lambda relay: panel.write_one(
        plan, "chairman", "chairman's answer", CHAIR_SYSTEM, text, chair_candidates(plan), relay, gone),
        "chairman's answer")


def _fallback(plan: panel.Plan, seats: list[Seat], bench: dict[str, Any], every: str, table: str,
              on_part: OnPart | None, gone: threading.Event | None, streamed: bool) -> tuple[str, Seat | None]:
    """CNC-6: no ranking, or no chairman's answer: a merged reply (the next model when the chairman failed),
    else every answer; each step's note heads the reply."""
    notes = bench["council"]["notes"]
    failed = bench["council"].get("chairman")
    tried = {failed["alias"]} if failed else set()
    candidates = [a for a in dict.fromkeys(chair_candidates(plan) + panel.merger_candidates(plan))
                  if a not in tried]
    head = f"_Council: {'; '.join(notes)}; a merged reply follows._\n\n"
    if on_part:
        on_part(("\n\n" if streamed else "\n") + head)
    (merger, answer, note), _ = panel.relayed(
        on_part, lambda relay: panel.merge(plan, seats, relay, gone, candidates), "merge")
    if merger:
        bench["merger"] = merger
    if answer and merger:
        bench["reply"] = "merged"
        tail = f"\n\n---\nMerged by {merger['alias']} (`{merger['call']}`).\n\n"
        if on_part:
            on_part(tail)
        return head + answer + tail + table + "\n" + every, merger
    notes.append(note)
    bench["reply"] = "all"
    bench["note"] = "; ".join(notes)
    text = f"_Council reply unavailable: {bench['note']}. Every answer follows._\n\n"
    if on_part:
        on_part("\n\n" + text)
    return text + table + "\n" + every, merger


def _signed(chair: Seat, rankings: list[Seat]) -> str:
    readable = sum(1 for r in rankings if r["status"] == "ok")
    return (f"Council chairman {chair['alias']} (`{chair['call']}`) wrote this from the answers below and "
            f"{readable} of {len(rankings)} peer rankings, whose aggregate follows. Every seat's answer, ranking "
            "and call id is in the response's `bench` field.")


# ---------------------------------------------------------------- costs


def stages(plan: panel.Plan, seats: list[Seat], rankings: list[Seat], chair: Seat | None, merger: object,
           spent: dict[str, int]) -> dict[str, dict[str, int]]:
    """CNC-9: calls and tokens per stage, each call's own counts where its upstream gave them, else estimates
    (the seats' as `panel_tokens` counts them)."""
    tokens_in = common.prompt_tokens(plan.messages)
    prompt, completion = common.panel_tokens({"seats": seats}, tokens_in)
    found = {"answers": {"calls": len(seats), "prompt_tokens": prompt, "completion_tokens": completion},
             "ranking": _spent(rankings, spent), "chairman": _spent([chair] if chair else [], spent)}
    if isinstance(merger, dict):
        found["merger"] = {"calls": 1, **dict(zip(("prompt_tokens", "completion_tokens"),
                                                  common.panel_tokens({"merger": merger}, tokens_in +
                                                                      _answers(seats))))}
    return found


def _answers(seats: Iterable[Seat]) -> int:
    return sum(images.estimate(s.get("answer") or "") for s in seats)


def _spent(calls: list[Seat], spent: dict[str, int]) -> dict[str, int]:
    prompt = completion = 0
    for call in calls:
        given = call.get("usage") or {}
        prompt += given.get("prompt_tokens", 0 if call["status"] == "error" else spent.get(call["call"], 0))
        completion += given.get("completion_tokens", images.estimate(call.get("answer") or ""))
    return {"calls": len(calls), "prompt_tokens": prompt, "completion_tokens": completion}

