"""A collection's leaderboard: a Bradley–Terry fit to the verdicts inside judged panels (issue 20 part 2).

Counting useful verdicts ranks a model by how often it was asked as much as by how good it is. A panel
asks several models the same prompt, so its verdicts are comparisons on equal terms: within one panel,
every seat judged useful beat every seat judged not useful (one comparison per such pair); a panel
whose judged seats all agree says nothing about who is better and adds nothing. Only panel seats count
(`<panel>.member<i>`, `.explorer`, `.explorer2`): the merger read the others' answers, and a route
conversation asks one model at a time.

The fit is Bradley–Terry: model i beats model j with probability p_i / (p_i + p_j). Strengths are found
by a few rounds of the MM (Zermelo) iteration, p_i ← W_i / Σ_j n_ij / (p_i + p_j) (Hunter 2004), then
Newton's method on the same log-likelihood (stdlib only: a Cholesky solve), which ends in a handful of
steps where MM alone crawls along the common scale for thousands of rounds. With `prior` > 0 every
model also plays `prior` virtual comparisons against an anchor of strength 1, winning half of them: the
estimate then exists for any data (a model that never lost would otherwise run off to infinity) and is
pulled towards the anchor when it has few comparisons. A score is ln p: 0 is the anchor, +1 means
e ≈ 2.7 times the odds of being judged the better one against it. With `prior` 0 (tests, hand checks)
the plain maximum-likelihood fit is returned, scaled so the scores average 0.

Intervals come from the bootstrap over prompts: the judged panels are resampled with replacement
`RESAMPLES` times and refitted; a model's interval holds the middle 95% of its scores. The generator is
seeded (`SEED`), so the same log gives the same reply.

Ranks are shared as Chatbot Arena shares them: a model's rank is 1 + the number of models whose interval
lies wholly above its own, so models whose intervals overlap hold the same rank until the verdicts tell
them apart (`shared_ranks`). A judged model that could not be fitted is listed with the reason (`unfitted`),
and the verdicts left out (mergers, route conversations) are counted per kind (`left_out`).
"""

import collections
import csv
import io
import math
import operator
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import offload, roles

PRIOR = 1.0  # virtual comparisons against the anchor, per model
RESAMPLES = 200
SEED = 20  # the bootstrap's seed: a reply is repeatable
LEVEL = 0.95
TOLERANCE = 1e-9  # largest change in any ln p that ends the iteration
MM_ROUNDS = 3  # Zermelo rounds before Newton's steps
MAX_ROUNDS = 100
SEAT = re.compile(r"(member\d+|explorer\d*)")
COLUMNS = ("rank", "model", "score", "low", "high", "comparisons", "wins", "judged", "useful")
QUERY = "?collection=bench/<name>[&shape=<shape>][&format=json|csv]"
FORMATS = ("json", "csv")
Pair = tuple[str, str]  # (winner, loser): a useful seat over a not-useful one on the same prompt


def fit(comparisons: Iterable[Pair], models: Iterable[str] = (), prior: float = PRIOR,
        start: Mapping[str, float] | None = None, tolerance: float = TOLERANCE) -> dict[str, float]:
    """`{model: score}` for `(winner, loser)` pairs: ln of each Bradley–Terry strength.

    `models` adds models with no comparison (they score 0 with a prior). `start` is `{model: score}` to
    begin from (a bootstrap refit starts from the whole fit). With `prior` 0 every model must have won
    and lost at least once (else no finite fit exists): ValueError otherwise.
    """
    counted = collections.Counter(comparisons)  # a bootstrap refit passes thousands of pairs, few distinct
    names = sorted(set(models) | {m for pair in counted for m in pair})
    at = {m: i for i, m in enumerate(names)}
    wins = [0.0] * len(names)
    games: dict[tuple[int, int], int] = {}
    for (winner, loser), n in counted.items():
        wins[at[winner]] += n
        pair = (min(at[winner], at[loser]), max(at[winner], at[loser]))
        games[pair] = games.get(pair, 0) + n
    if not prior:
        played = [0] * len(names)
        for (i, j), n in games.items():
            played[i] += n
            played[j] += n
        stuck = [m for m in names if not wins[at[m]] or wins[at[m]] == played[at[m]]]
        if stuck:
            raise ValueError(f"no finite fit without a prior: {', '.join(stuck)} never won or never lost")
    problem = _Problem(wins, list(games.items()), prior)
    theta = [(start or {}).get(m, 0.0) for m in names]
    theta = problem.mm(theta, MM_ROUNDS)
    for _ in range(MAX_ROUNDS):
        step = problem.newton_step(theta)
        theta, moved = problem.ascend(theta, step)
        if moved < tolerance:
            break
    if not prior and names:  # no anchor: scale so the scores average 0
        middle = sum(theta) / len(theta)
        theta = [t - middle for t in theta]
    return dict(zip(names, theta))


def _log_sum(a: float, b: float) -> float:
    """ln(e^a + e^b) without overflow."""
    high, low = max(a, b), min(a, b)
    return high + math.log1p(math.exp(low - high))


def _beats(a: float, b: float) -> float:
    """P(strength e^a beats e^b) = 1 / (1 + e^(b - a)), without overflow."""
    d = b - a
    return 1 / (1 + math.exp(d)) if d < 0 else math.exp(-d) / (1 + math.exp(-d))


class _Problem:
    """One fit's log-likelihood in the scores θ = ln p: wins, pair counts and the anchor's prior."""

    def __init__(self, wins: list[float], games: list[tuple[tuple[int, int], int]], prior: float) -> None:
        self.wins, self.games, self.prior = wins, games, prior
        self.size = len(wins)
        # without the anchor the scores are fixed only up to a common shift: the last one stays put
        self.free = self.size if prior else self.size - 1

    def value(self, theta: list[float]) -> float:
        total = sum(w * t for w, t in zip(self.wins, theta))
        total -= sum(n * _log_sum(theta[i], theta[j]) for (i, j), n in self.games)
        if self.prior:
            total += sum(self.prior * (t / 2 - _log_sum(t, 0.0)) for t in theta)
        return total

    def mm(self, theta: list[float], rounds: int) -> list[float]:
        """Zermelo's MM iteration p_i ← (W_i + prior/2) / (Σ_j n_ij / (p_i + p_j) + prior / (p_i + 1)): every
        round raises the likelihood, so a few of them bring any start near the top before Newton's steps."""
        for _ in range(rounds):
            p = [math.exp(t) for t in theta]
            spread = [self.prior / (q + 1.0) for q in p]
            for (i, j), n in self.games:
                spread[i] += n / (p[i] + p[j])
                spread[j] += n / (p[i] + p[j])
            theta = [math.log((w + self.prior / 2) / s) if s and w + self.prior / 2 else t
                     for w, s, t in zip(self.wins, spread, theta)]
        return theta

    def newton_step(self, theta: list[float]) -> list[float]:
        """The Newton step on the free scores: solve (−Hessian) δ = gradient (positive definite)."""
        grad = [w + self.prior / 2 - self.prior * _beats(t, 0.0) for w, t in zip(self.wins, theta)]
        curve = [[0.0] * self.size for _ in range(self.size)]
        for i, t in enumerate(theta):
            chance = _beats(t, 0.0)
            curve[i][i] = self.prior * chance * (1 - chance)
        for (i, j), n in self.games:
            chance = _beats(theta[i], theta[j])
            grad[i] -= n * chance
            grad[j] -= n * (1 - chance)
            weight = n * chance * (1 - chance)
            curve[i][i] += weight
            curve[j][j] += weight
            curve[i][j] -= weight
            curve[j][i] -= weight
        free = range(self.free)
        step = _solve([[curve[i][j] for j in free] for i in free], [grad[i] for i in free])
        return step + [0.0] * (self.size - self.free)

    def ascend(self, theta: list[float], step: list[float]) -> tuple[list[float], float]:
        """`(new θ, largest change)`: the step, halved until the likelihood does not fall."""
        base, scale = self.value(theta), 1.0
        while True:
            trial = [t + scale * s for t, s in zip(theta, step)]
            if self.value(trial) >= base - 1e-12 or scale < 1e-9:
                return trial, max((abs(scale * s) for s in step), default=0.0)
            scale /= 2


def _dot(a: Iterable[float], b: Iterable[float]) -> float:
    return sum(map(operator.mul, a, b))


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """x with matrix · x = vector, matrix symmetric positive definite (Cholesky, stdlib only)."""
    size = len(vector)
    lower: list[list[float]] = [[] for _ in range(size)]  # row i holds its first i + 1 entries
    for i in range(size):
        row = lower[i]
        for j in range(i):
            row.append((matrix[i][j] - _dot(row, lower[j][:j])) / lower[j][j])
        row.append(math.sqrt(max(matrix[i][i] - _dot(row, row), 1e-300)))
    middle: list[float] = []
    for i in range(size):
        middle.append((vector[i] - _dot(lower[i], middle)) / lower[i][i])
    answer = [0.0] * size
    for i in reversed(range(size)):
        tail = sum(lower[k][i] * answer[k] for k in range(i + 1, size))
        answer[i] = (middle[i] - tail) / lower[i][i]
    return answer


def panels(entries: Iterable[offload.Line], collection: str, shape: str = "") -> list[tuple[str, dict[str, bool]]]:
    """Judged panels of `collection` (and `shape`, when given) as `[(panel id, {alias: useful})]`, oldest
    first: the judged seats of each (OFF-2's entries, aliases as they are called today)."""
    found: dict[str, dict[str, bool]] = {}
    for entry in entries:
        call, useful = entry.call, entry.useful
        if useful is None or "." not in call:
            continue
        panel, seat = call.rsplit(".", 1)
        if not SEAT.fullmatch(seat) or entry.collection != collection:
            continue
        if shape and entry.shape != shape:
            continue
        found.setdefault(panel, {})[entry.model] = useful
    return list(found.items())


def kind(call: str) -> str:
    """What a judged call is to the leaderboard: `seat` (counted), `merger` or `route` (left out)."""
    seat = call.rsplit(".", 1)[-1] if "." in call else ""
    if SEAT.fullmatch(seat):
        return "seat"
    return "merger" if seat == "merger" else "route"


def left_out(entries: Iterable[offload.Line], collection: str, shape: str = "") -> dict[str, dict[str, int]]:
    """`{model: {kind: verdicts, "useful": verdicts}}` for the judged verdicts of `collection` (and `shape`)
    no panel seat gave: the mergers' (they read the others' answers) and the route conversations' (one model
    asked), with how many of them were useful."""
    found: dict[str, dict[str, int]] = {}
    for entry in entries:
        if entry.useful is None or entry.collection != collection or (shape and entry.shape != shape):
            continue
        what = kind(entry.call)
        if what != "seat":
            counts = found.setdefault(entry.model, {})
            counts[what] = counts.get(what, 0) + 1
            counts["useful"] = counts.get("useful", 0) + entry.useful
    return found


def shared_ranks(rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """Each row's rank as Chatbot Arena gives it: 1 + the number of rows whose `low` is above this row's
    `high`. Models whose intervals overlap share a rank; a rank skips past the models sharing the one above."""
    return [1 + sum(other["low"] > row["high"] for other in rows) for row in rows]


def comparisons(judged: Mapping[str, bool]) -> list[Pair]:
    """One panel's `(winner, loser)` pairs: each useful seat over each not-useful one."""
    good = [m for m, useful in judged.items() if useful]
    bad = [m for m, useful in judged.items() if not useful]
    return [(g, b) for g in good for b in bad]


def _quantile(values: list[float], q: float) -> float:
    """The q-quantile of sorted `values`, interpolated between neighbours."""
    at = q * (len(values) - 1)
    low = math.floor(at)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (at - low)


def bootstrap(groups: list[list[Pair]], models: list[str], whole: Mapping[str, float], resamples: int = RESAMPLES,
              seed: int = SEED, prior: float = PRIOR) -> dict[str, tuple[float, float]]:
    """`{model: (low, high)}`: the middle LEVEL of each model's score over `resamples` refits, each on the
    prompts (`groups`, lists of comparisons) drawn with replacement."""
    draw = random.Random(seed)
    scores: dict[str, list[float]] = {m: [] for m in models}
    for _ in range(resamples):
        chosen = [pair for group in draw.choices(groups, k=len(groups)) for pair in group]
        for model, score in fit(chosen, models, prior, start=whole, tolerance=1e-4).items():
            scores[model].append(score)
    tail = (1 - LEVEL) / 2
    return {m: (_quantile(sorted(s), tail), _quantile(sorted(s), 1 - tail)) for m, s in scores.items()}


def problem(path: str, collection: str, shape: str, fmt: str) -> str:
    """Why a leaderboard query is refused (400), or `""`: no collection, an unknown shape, another format.
    The message for a missing collection is `/bench/record`'s, naming this route's query."""
    if not collection:
        return f"name the collection: GET {path}{QUERY}"
    if fmt not in FORMATS:
        return '"format" must be json or csv'
    known = sorted(roles.load()["shapes"])
    if shape and shape not in known:
        return f"unknown shape '{shape}'; known: {', '.join(known)}"
    return ""


def named(collection: str) -> str:
    """`bench/<name>` for `core` or `bench/core` (IMP-6, as `/bench/record` reads it)."""
    return collection if collection.startswith("bench/") else f"bench/{collection}"


def filename(answer: Mapping[str, Any]) -> str:
    """The CSV download's name: `leaderboard-<name>[-<shape>].csv`, letters, digits and `-` only."""
    stem = "-".join(filter(None, ("leaderboard", answer["collection"].removeprefix("bench/"), answer["shape"])))
    return re.sub(r"[^A-Za-z0-9.-]+", "-", stem) + ".csv"


def board(collection: str, shape: str = "", entries: Iterable[offload.Line] | None = None,
          resamples: int = RESAMPLES, peer: Mapping[str, list[Pair]] | None = None,
          verdicts: bool = True) -> dict[str, Any]:
    """The leaderboard of `collection` (`bench/<name>`) on the offload log, or on `entries` when given.

    `peer` adds `{panel id: [(winner, loser)]}` from the panels' peer rankings (issue 32, `panel.peers`), fitted
    with the verdicts' comparisons of the same panel as one prompt; `verdicts` False leaves the verdicts' out."""
    seen = list(offload.judged(collection) if entries is None else entries)
    found = panels(seen, collection, shape)
    judged: dict[str, int] = {}
    useful: dict[str, int] = {}
    wins: dict[str, int] = {}
    played: dict[str, int] = {}
    by_panel: dict[str, list[Pair]] = {}
    for panel, seats in found:
        for model, good in seats.items():
            judged[model] = judged.get(model, 0) + 1
            useful[model] = useful.get(model, 0) + good
        if verdicts:
            by_panel[panel] = comparisons(seats)
    for panel, pairs in (peer or {}).items():
        by_panel[panel] = by_panel.get(panel, []) + pairs
    groups = [pairs for pairs in by_panel.values() if pairs]
    for pairs in groups:
        for winner, loser in pairs:
            wins[winner] = wins.get(winner, 0) + 1
            for model in (winner, loser):
                played[model] = played.get(model, 0) + 1
    ranked = sorted(played)
    whole = fit([p for g in groups for p in g], ranked) if groups else {}
    spread = bootstrap(groups, ranked, whole, resamples) if groups else {}
    order = sorted(ranked, key=lambda m: (-whole[m], m))
    rows = [{"model": m, "score": round(whole[m], 3), "low": round(spread[m][0], 3),
             "high": round(spread[m][1], 3), "comparisons": played[m], "wins": wins.get(m, 0),
             "judged": judged.get(m, 0), "useful": useful.get(m, 0)} for m in order]
    rows = [{"rank": rank, **row} for rank, row in zip(shared_ranks(rows), rows)]
    unranked = [{"model": m, "judged": judged[m], "useful": useful[m]} for m in sorted(judged) if m not in played]
    outside = left_out(seen, collection, shape)
    return {"collection": collection, "shape": shape, "panels": len(groups),
            "comparisons": sum(len(g) for g in groups), "resamples": resamples if groups else 0,
            "level": LEVEL, "models": rows, "unranked": unranked, "unfitted": unfitted(unranked, outside, played),
            "left_out": {what: sum(c.get(what, 0) for c in outside.values()) for what in ("merger", "route")}}


def unfitted(unranked: list[dict[str, Any]], outside: Mapping[str, Mapping[str, int]],
             played: Mapping[str, int]) -> list[dict[str, Any]]:
    """Every judged model the fit has no score for, with why: judged only in panels whose seats agreed
    (no comparison), or judged only as a merger or in route conversations (not counted)."""
    rows = [{**row, "why": "judged only in panels whose judged seats all agreed"} for row in unranked]
    named = {row["model"] for row in unranked}
    for model in sorted(set(outside) - set(played) - named):
        counts = outside[model]
        parts = [f"{counts[k]} {label}" for k, label in (("merger", "as the merger"), ("route", "in route conversations"))
                 if counts.get(k)]
        rows.append({"model": model, "judged": counts.get("merger", 0) + counts.get("route", 0),
                     "useful": counts["useful"], "why": "only verdicts the leaderboard leaves out ("
                     + " and ".join(parts) + ")"})
    return sorted(rows, key=lambda row: row["model"])


def csv_text(answer: Mapping[str, Any]) -> str:
    """The ranked rows as CSV (COLUMNS), for a spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in answer["models"]:
        writer.writerow([row[c] for c in COLUMNS])
    return out.getvalue()
