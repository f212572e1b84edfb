"""The leaderboard's second source (issue 32, CNC-10): the peer rankings council panels keep in the offload log.

A council's ranking orders the other seats' answers to one prompt, best first, so it is a comparison on equal
terms as a panel's verdicts are: every answer it put above another beat that one (one pair each). The pairs of
every ranking of one panel are fitted as that panel's prompt, beside the verdicts' pairs of the same panel when
both are asked for, by the same Bradley–Terry fit and bootstrap (`leaderboard.board`).

- `source`: `verdicts` (the people's, the default), `peers` (the rankings alone) or `both`.
- No self-preference: a pair is dropped when either answer is the ranker's own model's (a ranker never sees its
  own answer, but one model may sit twice across a collection's history under a rename).
- Unreadable rankings (`ranked: []`) add nothing.
- `rankers`: each ranking model's agreement with the people on the same panels: of the pairs it ordered whose two
  answers got different verdicts (one useful, one not), the share where it put the useful one first. A judge
  the people disagree with shows here before its pairs move the board much.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from . import leaderboard, offload

VERDICTS, PEERS, BOTH = "verdicts", "peers", "both"
SOURCES = (VERDICTS, PEERS, BOTH)
BAD_SOURCE = '"source" must be verdicts, peers or both'


def _panel(call: str) -> str:
    return call.rsplit(".", 1)[0]


def models_of(rankings: Iterable[offload.Line]) -> dict[str, str]:
    """`{call: model}` of every call the rankings ranked, under today's aliases (one look each in the index)."""
    found: dict[str, str] = {}
    for ranking in rankings:
        for call in ranking.ranked or ():
            if call not in found:
                entry = offload.by_call(call)
                if entry is not None:
                    found[call] = entry.model
    return found


def pairs(ranking: offload.Line, models: Mapping[str, str]) -> list[leaderboard.Pair]:
    """One ranking's `(winner, loser)` pairs by model: each answer over every one ranked below it, none of
    the ranker's own model."""
    ranked = [models[c] for c in ranking.ranked or () if c in models and models[c] != ranking.model]
    return [(w, ranked[j]) for i, w in enumerate(ranked) for j in range(i + 1, len(ranked)) if w != ranked[j]]


def comparisons(rankings: Iterable[offload.Line], models: Mapping[str, str],
                shape: str = "") -> dict[str, list[leaderboard.Pair]]:
    """`{panel id: pairs}` of the readable rankings (of `shape`, when given), oldest panel first."""
    found: dict[str, list[leaderboard.Pair]] = {}
    for ranking in rankings:
        if ranking.ranked and (not shape or ranking.shape == shape):
            found.setdefault(_panel(ranking.call), []).extend(pairs(ranking, models))
    return found


def agreement(rankings: Iterable[offload.Line], verdicts: Iterable[offload.Line]) -> list[dict[str, Any]]:
    """Per ranking model, best agreeing first: `{model, rankings, pairs, agree, agreement}` over the pairs its
    rankings ordered whose answers the people judged differently; `agreement` None when there were none."""
    useful = {e.call: e.useful for e in verdicts if e.useful is not None}
    rows: dict[str, dict[str, Any]] = {}
    for ranking in rankings:
        if not ranking.ranked:
            continue
        row = rows.setdefault(ranking.model, {"model": ranking.model, "rankings": 0, "pairs": 0, "agree": 0})
        row["rankings"] += 1
        judged = [c for c in ranking.ranked if c in useful]
        for i, above in enumerate(judged):
            for below in judged[i + 1:]:
                if useful[above] != useful[below]:
                    row["pairs"] += 1
                    row["agree"] += bool(useful[above])
    for row in rows.values():
        row["agreement"] = round(row["agree"] / row["pairs"], 3) if row["pairs"] else None
    return sorted(rows.values(), key=lambda r: (-(r["agreement"] if r["agreement"] is not None else -1), r["model"]))


def board(collection: str, shape: str = "", source: str = VERDICTS, entries: list[offload.Line] | None = None,
          rankings: list[offload.Line] | None = None, resamples: int = leaderboard.RESAMPLES) -> dict[str, Any]:
    """The leaderboard of `collection` from `source`, with the rankers' agreement with the people; `entries` and
    `rankings` stand for the log's judged entries and peer rankings when given (a scoped key's `[]`)."""
    judged = offload.judged(collection) if entries is None else entries
    found = offload.rankings(collection) if rankings is None else rankings
    peer = comparisons(found, models_of(found), shape) if source != VERDICTS else None
    answer = leaderboard.board(collection, shape, judged, resamples, peer=peer, verdicts=source != PEERS)
    return {**answer, "source": source, "rankers": agreement(found, judged)}
