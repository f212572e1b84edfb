"""The learning loop, measured (issue 20 part 1): does the bench learn who to ask?

A simulated bench with hidden truths, run through the real gateway (`python gateway.py`) and the local
upstream (`python -m benchwarmers.demo.demo --models FILE`) on 127.0.0.1, nothing mocked:

- twelve models with a hidden chance of a useful answer per shape (`TRUTH`): generalists, specialists
  strong on one shape, one that is confidently wrong, one that degrades at 40% of the run (prompt 800
  of 2,000), one registered at 50% (prompt 1,000);
- prompts of five shapes, each sent as a panel, a merged panel or a route turn, one at a time so a
  seeded run is repeatable (the panel's seats still run in parallel in the gateway);
- the gateway's own shape picker chooses each panel's shape: the upstream's decision model `picker`
  reads the prompt (`decides` in metrics/demo/demo.py) and names the shape the prompt was written for;
- a simulated judge posts a verdict (`POST /bench/verdict`) on 30% of the calls (seats, mergers, route
  turns), useful with the model's hidden chance on the prompt's shape, then flipped one time in five.

Each policy (`counted`, the contract's rule, and `thompson`) runs on its own gateway and data folder, in
its own process, at once. The figures, per policy:

- Kendall τ (τ-b) between the record's ranking and the truth, per shape, every `--every` prompts. The
  record per shape is the useful/judged counts of the panel seats of that shape, as
  `GET /bench/leaderboard?shape=` returns them beside the Bradley–Terry fit (`/bench/record` has no
  shape filter). Three rankings of the same record: the counted rule's (most useful verdicts, then the
  ratio: MRG-3), the posterior mean the Thompson policy samples around, and the leaderboard's fit.
- The share of the gap between the best single model and the per-shape oracle that the merger's and
  route mode's choices close, on the chosen model's hidden chance (not the noisy verdict), with a
  bootstrap 95% interval over prompts; per phase (before the degradation, between, after the newcomer).
- Panels until every model has been seated; how soon after the degradation the degrading model stops
  being chosen; how soon after it joins the newcomer is seated, chosen and ranked first on its shape.

    python -m benchmarks.learning                 the full run: 2,000 prompts (about 2 minutes)
    python -m benchmarks.learning --prompts 300   a short run (the test's)
    python -m benchmarks.learning --seed 7 --out DIR
    python -m benchmarks.learning --peers [--readme]   the peer-ranking study (issue 32), about a minute

Issue 32's question, `--peers`: do a council's peer rankings, as a second source beside the people's verdicts,
make the leaderboard's τ against the truth rise faster at the same 30% judged, and does position-bias control
(each ranker seeing the answers in two orders) matter? The study runs on the same hidden world (TRUTH, the shape
mix, the judge's 30% judged and one flip in five), without the degradation and the newcomer, offline: the demo
upstream's judges rank by length, so through the gateway a ranking would measure the answers' length, not their
hidden usefulness. What is the product's own is the fitting: each ranking's pairs are `panel.peers.pairs`, the
verdicts' `leaderboard.comparisons`, fitted by `leaderboard.fit` exactly as `?source=verdicts|peers|both` fits
them. Each model ranks with a behaviour (`JUDGES`): a strong judge orders the answers it is shown by their hidden
chance on the prompt's shape plus a little noise, a weak one with much noise, and a first-preferrer puts the first
answer shown on top (the rest as a weak judge). Scenarios vary who judges how, including judges whose taste has
nothing to do with usefulness, where peers must not help.

Writes `<out>/learning-<stamp>.json` (every figure and the raw choices), `<out>/learning-<stamp>.svg`
(the curves, drawn here, no plotting library) and, with `--readme`, the table and picture into
benchmarks/README.md's "Learning loop" section.
"""

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import math
import multiprocessing
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import gateway as rig
from benchwarmers.core import fileio
from benchwarmers.models import endpoints, registry
from benchwarmers.panel import collections

HERE = Path(__file__).resolve().parent
SHAPES = ("code", "review", "prose", "design", "enumeration")
MIX = (0.25, 0.25, 0.2, 0.15, 0.15)  # how often each shape is asked
KINDS = (("panel", 0.4), ("merged", 0.3), ("route", 0.3))
JUDGED, FLIPPED = 0.3, 0.2
DEGRADES, DEGRADE_AT, DEGRADED = "fader", 0.4, 0.1
NEWCOMER, JOINS_AT = "late-star", 0.5
POLICIES = ("counted", "thompson")
PANEL, ROUTE = "sim", "simroute"

# The hidden truth: each model's chance of a useful answer per shape (SHAPES order).
TRUTH = {
    "gen-alpha": (0.70, 0.65, 0.60, 0.62, 0.66),   # the best generalist
    "code-ace": (0.92, 0.60, 0.25, 0.40, 0.35),    # a code specialist
    "prose-ace": (0.25, 0.35, 0.92, 0.55, 0.40),   # a prose specialist
    "wrong-way": (0.08, 0.10, 0.12, 0.06, 0.10),   # confidently wrong: sure of itself, rarely right
    DEGRADES: (0.55, 0.88, 0.50, 0.85, 0.45),      # a reviewer and designer until it degrades
    "gen-beta": (0.58, 0.55, 0.52, 0.50, 0.56),
    "gen-gamma": (0.45, 0.48, 0.44, 0.46, 0.42),
    "review-ace": (0.50, 0.94, 0.30, 0.45, 0.30),
    "design-ace": (0.40, 0.50, 0.45, 0.93, 0.33),
    "list-ace": (0.35, 0.30, 0.40, 0.30, 0.94),
    "mid-kappa": (0.30, 0.28, 0.33, 0.26, 0.31),
    NEWCOMER: (0.38, 0.62, 0.47, 0.95, 0.96),      # joins half way: the best designer and lister
}
MEMBERS = ["gen-alpha", "code-ace", "prose-ace", "wrong-way", DEGRADES]  # bench/sim's sitting members
SEAT = {"context_window": 128000, "max_output": 8192, "vision": False, "tools": True, "latency": 0.002}
MARK = "task kind: {}"  # what the decision model reads in a prompt
TOPICS = ("the retry loop", "the cache layer", "the release notes", "the queue worker", "the parser",
          "the onboarding guide", "the schema migration", "the rate limiter", "the test fixtures", "the API docs")
ASKS = {"code": "Write a function for {} that handles the empty case.",
        "review": "Review this change to {} for bugs.",
        "prose": "Rewrite the paragraph about {} so a newcomer follows it.",
        "design": "Which architecture suits {}, and why?",
        "enumeration": "List every failure mode of {}."}
TIMEOUT = 60
CEILING_DRAWS = 40


# -------------------------------------------------------------------------------- the hidden world


def truth(model, shape, at, prompts):
    """The model's chance of a useful answer on `shape` at prompt `at` of `prompts`."""
    if model == DEGRADES and at >= int(DEGRADE_AT * prompts):
        return DEGRADED
    return TRUTH[model][SHAPES.index(shape)]


def present(at, prompts):
    """The models registered on the bench at prompt `at`."""
    return [m for m in TRUTH if m != NEWCOMER or at >= int(JOINS_AT * prompts)]


def members(at, prompts):
    """bench/sim's members at prompt `at`: the newcomer joins them when it is registered."""
    return MEMBERS + ([NEWCOMER] if at >= int(JOINS_AT * prompts) else [])


def script(prompts, seed):
    """`[(shape, kind, text)]`: the run's prompts, the same for every policy."""
    draw = random.Random(seed)
    out = []
    for i in range(prompts):
        shape = draw.choices(SHAPES, MIX)[0]
        kind = draw.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
        text = f"Prompt {i} ({MARK.format(shape)}). " + ASKS[shape].format(draw.choice(TOPICS))
        out.append((shape, kind, text))
    return out


def judge_draws(seed, at, model, role):
    """`(judged, useful draw, flip draw)` for one call: the same numbers for a model in the same place on the
    same prompt whatever the policy (common random numbers, so the policies differ by their choices only)."""
    digest = hashlib.sha256(f"{seed}:{at}:{model}:{role}".encode()).digest()
    draw = random.Random(int.from_bytes(digest[:8], "big"))
    return draw.random() < JUDGED, draw.random(), draw.random() < FLIPPED


def upstream_models():
    """The upstream's models: every simulated model, and the decision model that names a prompt's shape."""
    models = {name: dict(SEAT, answer=f"{name} answers.") for name in TRUTH}
    models["picker"] = {"latency": 0.001, "decides": {"shape": {MARK.format(s): {"choice": s, "confidence": 0.95}
                                                                for s in SHAPES}}}
    return models


# -------------------------------------------------------------------------------- one policy's run


def make_data(folder, base, policy, prompts):
    """A data folder whose endpoint is the upstream: the models present at the start, the decision model,
    bench/sim (five members, two explorer seats) and bench/simroute (every model, routed)."""
    rig.use_folder(folder)
    fileio.update(endpoints.path(), lambda found: found.__setitem__(
        "sim", {"base": base, "key": "", "kind": "local", "default": True, "decisions": base + "/{path}"}))
    for alias in present(0, prompts):
        registry.add_registration(alias, alias, "sim")
    fileio.write_atomic(registry.decisions_path(), json.dumps(
        {"picker": {"via": "sim", "served": "picker", "question_types": ["choice"]}}))
    fileio.write_atomic(collections.settings_path(), json.dumps(
        {"max_calls": len(MEMBERS) + 3, "max_explorers": 2, "policy": policy}))
    fileio.update(collections.collections_path(), lambda found: found.update({
        PANEL: {"members": list(MEMBERS), "description": "simulated bench: five members, two explorers"},
        ROUTE: {"members": present(0, prompts), "description": "simulated bench: every model, routed"}}))
    registry.sync_to_llm()
    return folder / "data"


def join_newcomer():
    """The newcomer is registered and joins both collections (the gateway reads the files again)."""
    registry.add_registration(NEWCOMER, NEWCOMER, "sim")
    registry.sync_to_llm()

    def add(found):
        for name in (PANEL, ROUTE):
            found[name]["members"].append(NEWCOMER)
    fileio.update(collections.collections_path(), add)


def call(port, method, path, body=None):
    """One request to the gateway: `(status, parsed reply)`."""
    return rig.request(port, method, path, json.dumps(body).encode() if body is not None else None, TIMEOUT)


def ask(port, kind, text):
    """Send one prompt as `kind`; returns the reply's `bench`."""
    model = {"panel": f"bench/{PANEL}", "merged": f"bench/{PANEL}:merged", "route": f"bench/{ROUTE}:route"}[kind]
    status, reply = call(port, "POST", "/v1/chat/completions",
                         {"model": model, "messages": [{"role": "user", "content": text}]})
    if status != 200:
        raise RuntimeError(f"{model} answered {status}: {json.dumps(reply)[:300]}")
    return reply["bench"]


def judge(port, seed, at, shape, prompts, calls):
    """The simulated judge on `calls` (`[(call id, alias, role)]`): a verdict on about JUDGED of them."""
    for call_id, alias, role in calls:
        judged, useful_draw, flip = judge_draws(seed, at, alias, role)
        if not judged:
            continue
        useful = (useful_draw < truth(alias, shape, at, prompts)) != flip
        status, reply = call(port, "POST", "/bench/verdict", {"call": call_id, "useful": useful})
        if status != 200:
            raise RuntimeError(f"verdict on {call_id} answered {status}: {reply}")


def snapshot(port):
    """The record per shape: `{shape: {"counts": {alias: [useful, judged]}, "fit": [aliases by BT score]}}`."""
    out = {}
    for shape in SHAPES:
        status, board = call(port, "GET", f"/bench/leaderboard?collection=bench/{PANEL}&shape={shape}")
        if status != 200:
            raise RuntimeError(f"leaderboard answered {status}: {board}")
        counts = {row["model"]: [row["useful"], row["judged"]] for row in board["models"] + board["unranked"]}
        out[shape] = {"counts": counts, "fit": [row["model"] for row in board["models"]]}
    return out


def run_policy(policy, base, prompts, seed, every, folder):
    """One policy's whole run on its own gateway: what it chose and what its record said, as plain data."""
    folder = Path(folder)
    data = make_data(folder, base, policy, prompts)
    proc, port = rig.start_gateway(folder, data, policy, BENCH_POLICY_SEED=str(seed))
    events, checkpoints = [], []
    started = time.monotonic()
    try:
        for at, (shape, kind, text) in enumerate(script(prompts, seed)):
            if at == int(JOINS_AT * prompts):
                join_newcomer()
            bench = ask(port, kind, text)
            event = {"at": at, "shape": shape, "kind": kind}
            if kind == "route":
                event.update(picked=shape, choice=bench["alias"])
                calls = [(bench["call"], bench["alias"], "route")]
            else:
                seats = [s for s in bench["seats"] if s["status"] == "ok"]
                event.update(picked=bench["shape"],  # the members always sit: only the explorers are kept
                             explorers=[s["alias"] for s in bench["seats"] if s["seat"].startswith("explorer")])
                calls = [(s["call"], s["alias"], s["seat"]) for s in seats]
                merger = bench.get("merger")
                if kind == "merged" and merger:
                    event["choice"] = merger["alias"]
                    calls.append((merger["call"], merger["alias"], "merger"))
            judge(port, seed, at, shape, prompts, calls)
            events.append(event)
            if (at + 1) % every == 0 or at + 1 == prompts:
                checkpoints.append({"at": at + 1, "record": snapshot(port)})
    finally:
        rig.stop(proc)
    return {"policy": policy, "events": events, "checkpoints": checkpoints,
            "seconds": round(time.monotonic() - started, 1)}


# -------------------------------------------------------------------------------- figures


def kendall(order, truth_of):
    """Kendall τ-b between a ranking (`{model: rank}`, lower is better, ties allowed) and the truth
    (`{model: chance}`, higher is better)."""
    models = list(truth_of)
    concordant = discordant = tied_a = tied_b = 0
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            x = order[b] - order[a]  # > 0: a ranked above b
            y = truth_of[a] - truth_of[b]
            if x == 0 and y == 0:
                continue
            if x == 0:
                tied_a += 1
            elif y == 0:
                tied_b += 1
            elif (x > 0) == (y > 0):
                concordant += 1
            else:
                discordant += 1
    total = concordant + discordant
    denominator = math.sqrt((total + tied_a) * (total + tied_b))
    return (concordant - discordant) / denominator if denominator else 0.0


def ranks(models, key):
    """`{model: rank}` sorting by `key` (higher first); equal keys share a rank."""
    out, previous, rank = {}, None, 0
    for i, m in enumerate(sorted(models, key=key, reverse=True)):
        if key(m) != previous:
            rank, previous = i, key(m)
        out[m] = rank
    return out


def rankings(record, models):
    """The three rankings of one shape's record: counted (MRG-3), posterior mean, leaderboard fit."""
    counts = record["counts"]

    def got(m):
        return counts.get(m, [0, 0])

    counted = ranks(models, lambda m: (got(m)[0], got(m)[0] / got(m)[1] if got(m)[1] else -1.0))
    mean = ranks(models, lambda m: (got(m)[0] + 1) / (got(m)[1] + 2))
    fitted = {m: i for i, m in enumerate(record["fit"])}
    fit = {m: fitted.get(m, len(fitted)) for m in models}
    return {"counted": counted, "posterior": mean, "leaderboard": fit}


def ceiling(counts, real, seed, draws=CEILING_DRAWS):
    """The τ an ideal ranking of a record with these judged counts can expect: each model's verdicts drawn
    afresh from its truth (flipped as the judge flips them) and ranked by their posterior mean. What the
    counts allow, whatever the policy: few verdicts on close models cannot order them."""
    draw = random.Random(seed)
    total = 0.0
    for _ in range(draws):
        means = {}
        for m, chance in real.items():
            n = counts.get(m, [0, 0])[1]
            seen = FLIPPED + (1 - 2 * FLIPPED) * chance
            means[m] = (sum(draw.random() < seen for _ in range(n)) + 1) / (n + 2)
        total += kendall(ranks(real, means.get), real)
    return total / draws


def tau_curves(run, prompts):
    """`{ranking: [(prompts, mean τ over shapes, {shape: τ})]}` from the run's checkpoints; `ceiling` is
    what an ideal ranking of the same counts could expect (see `ceiling`)."""
    curves = {"counted": [], "posterior": [], "leaderboard": [], "ceiling": []}
    for point in run["checkpoints"]:
        at = point["at"] - 1
        models = present(at, prompts)
        per = {name: {} for name in curves}
        for shape in SHAPES:
            real = {m: truth(m, shape, at, prompts) for m in models}
            for name, order in rankings(point["record"][shape], models).items():
                per[name][shape] = round(kendall(order, real), 3)
            per["ceiling"][shape] = round(ceiling(point["record"][shape]["counts"], real, point["at"]), 3)
        for name in curves:
            curves[name].append((point["at"], round(sum(per[name].values()) / len(SHAPES), 3), per[name]))
    return curves


BARS = (0.5, 0.7, 0.9)


def first_reach(curve, bar):
    """Prompts until the mean τ first reaches `bar` (at the checkpoints), else None."""
    for at, tau, _ in curve:
        if tau >= bar:
            return at
    return None


def gap_share(rows, boot=1000, seed=0):
    """Share of the best-single-to-oracle gap closed by the choices in `rows` (`(chosen, {model: chance})`),
    with a bootstrap 95% interval over prompts: `(share, low, high, n)`. The best single model is the one
    with the highest mean chance over these prompts among those present at all of them."""
    if len(rows) < 2:
        return None
    always = set.intersection(*(set(real) for _, real in rows))

    def share(sample):
        best = max(always, key=lambda m: sum(real[m] for _, real in sample))
        single = sum(real[best] for _, real in sample)
        oracle = sum(max(real.values()) for _, real in sample)
        chosen = sum(real[c] for c, real in sample)
        return (chosen - single) / (oracle - single) if oracle > single else 0.0

    if not boot:
        return round(share(rows), 3), None, None, len(rows)
    draw = random.Random(seed)
    shares = sorted(share(draw.choices(rows, k=len(rows))) for _ in range(boot))
    return (round(share(rows), 3), round(shares[int(0.025 * boot)], 3), round(shares[int(0.975 * boot) - 1], 3),
            len(rows))


def phases(prompts):
    degrade, join = int(DEGRADE_AT * prompts), int(JOINS_AT * prompts)
    return {"whole run": (0, prompts), f"before the degradation (0-{degrade})": (0, degrade),
            f"degraded, before the newcomer ({degrade}-{join})": (degrade, join),
            f"after the newcomer ({join}-{prompts})": (join, prompts),
            f"last quarter ({prompts - prompts // 4}-{prompts})": (prompts - prompts // 4, prompts)}


def choice_rows(run, kind, prompts, start=0, end=None):
    """`[(chosen, {candidate: chance})]` of the merger's (among bench/sim's members) or route mode's (among
    every model present) choices on prompts `start` to `end`."""
    end = prompts if end is None else end
    wanted, among = ("merged", members) if kind == "merger" else ("route", present)
    return [(e["choice"], {m: truth(m, e["shape"], e["at"], prompts) for m in among(e["at"], prompts)})
            for e in run["events"] if e["kind"] == wanted and "choice" in e and start <= e["at"] < end]


def gap_curve(run, kind, prompts, window):
    """The gap share over a sliding window of `window` prompts, every window/2 prompts."""
    out = []
    step = max(1, window // 2)
    for end in range(window, prompts + 1, step):
        found = gap_share(choice_rows(run, kind, prompts, end - window, end), boot=0)
        if found:
            out.append((end, found[0]))
    return out


def seated_all(run, prompts):
    """Panels (plain or merged) until every model present from the start has sat at least once."""
    wanted, seen, panels = set(present(0, prompts)), set(), 0
    for e in run["events"]:
        if "explorers" in e:
            panels += 1
            seen.update(members(e["at"], prompts) + e["explorers"])
            if wanted <= seen:
                return panels
    return None


def after(run, prompts, start, test):
    """Prompts after `start` until the first event that passes `test`, else None."""
    for e in run["events"]:
        if e["at"] >= start and test(e):
            return e["at"] - start
    return None


def drop_and_find(run, prompts):
    """How the degrading model is dropped and the newcomer found, in prompts after each event."""
    degrade, join = int(DEGRADE_AT * prompts), int(JOINS_AT * prompts)
    chosen_after = [e for e in run["events"] if e["at"] >= degrade and e.get("choice") == DEGRADES]
    before = [e for e in run["events"] if e["at"] < degrade and "choice" in e]
    between = [e for e in run["events"] if degrade <= e["at"] and "choice" in e]
    best = {s: max(TRUTH, key=lambda m: TRUTH[m][SHAPES.index(s)]) for s in SHAPES}
    newcomer_shapes = [s for s in SHAPES if best[s] == NEWCOMER]
    top = None
    for point in run["checkpoints"]:
        if point["at"] > join:
            orders = [rankings(point["record"][s], present(point["at"] - 1, prompts))["posterior"]
                      for s in newcomer_shapes]
            if orders and all(o.get(NEWCOMER) == 0 for o in orders):
                top = point["at"] - join
                break
    return {
        "degrader chosen before (share of choices)": round(
            sum(e["choice"] == DEGRADES for e in before) / len(before), 3) if before else None,
        "degrader chosen after (share of choices)": round(len(chosen_after) / len(between), 3) if between else None,
        "degrader last chosen (prompts after)": chosen_after[-1]["at"] - degrade if chosen_after else 0,
        "newcomer first seated (prompts after)": after(run, prompts, join, lambda e: "explorers" in e),
        "newcomer first chosen (prompts after)": after(run, prompts, join, lambda e: e.get("choice") == NEWCOMER),
        "newcomer first on its shapes' record (prompts after)": top,
    }


def figures(run, prompts, every):
    curves = tau_curves(run, prompts)
    own = "counted" if run["policy"] == "counted" else "posterior"
    gaps = {kind: {label: gap_share(choice_rows(run, kind, prompts, a, b), seed=len(label))
                   for label, (a, b) in phases(prompts).items()} for kind in ("merger", "route")}
    window = max(2 * every, prompts // 10)
    return {"policy": run["policy"], "seconds": run["seconds"], "ranking": own, "tau": curves,
            "tau reached at": {name: {str(bar): first_reach(c, bar) for bar in BARS} for name, c in curves.items()},
            "gap": gaps, "gap curve": {k: gap_curve(run, k, prompts, window) for k in ("merger", "route")},
            "panels until every model seated": seated_all(run, prompts), "events": drop_and_find(run, prompts),
            "shape picked right": round(sum(e["picked"] == e["shape"] for e in run["events"]) / len(run["events"]), 3)}


# -------------------------------------------------------------------------------- peer rankings (issue 32)


STRONG, WEAK, FIRST, TASTE = "strong", "weak", "first", "taste"
NOISE = {STRONG: 0.08, WEAK: 0.3, FIRST: 0.3, TASTE: 0.08}
MIXED = {m: WEAK for m in TRUTH} | {"gen-alpha": STRONG, "review-ace": STRONG, "design-ace": STRONG,
                                     "gen-beta": STRONG, "wrong-way": FIRST}
SCENARIOS = {
    "mixed judges (4 strong, 6 weak, 1 prefers the first shown)": MIXED,
    "weak judges only": {m: WEAK for m in TRUTH},
    "half prefer the first shown": {m: FIRST if i % 2 else WEAK for i, m in enumerate(TRUTH)},
    "judges with a taste unrelated to usefulness": {m: TASTE for m in TRUTH},
}
SOURCES = ("verdicts", "peers, 1 order", "peers, 2 orders", "both, 1 order", "both, 2 orders")
AGREEMENT = "rankers' agreement with the people"
PEER_SEEDS = 5
PEER_CHECKPOINTS = (50, 100, 200, 400, 800)


def peer_world():
    """The study's models (no newcomer, no degradation) and each one's hidden taste: a value per model that a
    TASTE judge ranks by instead of usefulness (style, length, confidence: anything but being right)."""
    models = [m for m in TRUTH if m != NEWCOMER]
    draw = random.Random(32)
    return models, {m: draw.random() for m in models}


def judge_order(behaviour, shown, shape, taste, draw):
    """One ranking of `shown` (models, in the order shown) by a judge with `behaviour`, best first."""
    noise = NOISE[behaviour]
    if behaviour == TASTE:
        score = {m: taste[m] + draw.gauss(0, noise) for m in shown}
    else:
        score = {m: TRUTH[m][SHAPES.index(shape)] + draw.gauss(0, noise) for m in shown}
    if behaviour == FIRST:
        return [shown[0]] + sorted(shown[1:], key=score.get, reverse=True)
    return sorted(shown, key=score.get, reverse=True)


def peer_panel(draw, judges, models, taste):
    """One council panel: `(shape, verdict pairs, pairs of the first orders, pairs of both orders, (agree,
    pairs))`, the last the rankings' pairs whose answers the people judged apart, and how many put the useful one
    first (the leaderboard's `rankers` agreement, over every ranker)."""
    from benchwarmers.panel import leaderboard, offload, peers

    shape = draw.choices(SHAPES, MIX)[0]
    seats = list(MEMBERS) + draw.sample([m for m in models if m not in MEMBERS], 2)
    verdicts = {}
    for m in seats:
        useful = draw.random() < TRUTH[m][SHAPES.index(shape)]
        if draw.random() < JUDGED:
            verdicts[m] = useful != (draw.random() < FLIPPED)
    calls = {f"p.{m}": m for m in seats}
    one, two = [], []
    agree = apart = 0
    for ranker in seats:
        shown = [m for m in seats if m != ranker]
        draw.shuffle(shown)
        for order, listed in enumerate((shown, shown[::-1])):
            ranked = judge_order(judges[ranker], listed, shape, taste, draw)
            line = offload.line({"model": ranker, "call": f"p.rank-{ranker}", "ranked": [f"p.{m}" for m in ranked]})
            pairs = peers.pairs(line, calls)
            two += pairs
            if order == 0:
                one += pairs
            judged_apart = [(w, b) for w, b in pairs if w in verdicts and b in verdicts and verdicts[w] != verdicts[b]]
            apart += len(judged_apart)
            agree += sum(verdicts[w] for w, _ in judged_apart)
    return shape, leaderboard.comparisons(verdicts), one, two, (agree, apart)


def peer_taus(groups, models, shape):
    """τ of each source's fit against the truth on `shape`."""
    from benchwarmers.panel import leaderboard

    real = {m: TRUTH[m][SHAPES.index(shape)] for m in models}
    verdicts, one, two = ([p for g in groups for p in g[i]] for i in range(3))
    chosen = {"verdicts": verdicts, "peers, 1 order": one, "peers, 2 orders": two, "both, 1 order": verdicts + one,
              "both, 2 orders": verdicts + two}
    out = {}
    for source, pairs in chosen.items():
        score = leaderboard.fit(pairs, models) if pairs else {m: 0.0 for m in models}
        out[source] = kendall(ranks(models, score.get), real)
    return out


def peer_run(judges, seed, prompts):
    """One seeded run of one scenario: `{checkpoint: {source: mean τ over shapes, AGREEMENT: share}}`."""
    models, taste = peer_world()
    draw = random.Random(seed)
    by_shape = {s: [] for s in SHAPES}
    out = {}
    agree = apart = 0
    for at in range(1, prompts + 1):
        shape, verdicts, one, two, (agreed, judged_apart) = peer_panel(draw, judges, models, taste)
        by_shape[shape].append((verdicts, one, two))
        agree, apart = agree + agreed, apart + judged_apart
        if at in PEER_CHECKPOINTS:
            per = [peer_taus(by_shape[s], models, s) for s in SHAPES]
            out[at] = {source: sum(p[source] for p in per) / len(SHAPES) for source in SOURCES}
            out[at][AGREEMENT] = agree / apart if apart else 0.0
    return out


def peer_study(seeds=PEER_SEEDS, prompts=max(PEER_CHECKPOINTS)):
    """Every scenario over `seeds` seeds: `{scenario: {checkpoint: {source: (mean τ, sd)}}}`."""
    found = {}
    for name, judges in SCENARIOS.items():
        runs = [peer_run(judges, seed, prompts) for seed in range(1, seeds + 1)]
        found[name] = {at: {source: _mean_sd([r[at][source] for r in runs]) for source in SOURCES + (AGREEMENT,)}
                       for at in PEER_CHECKPOINTS if at <= prompts}
    return found


def _mean_sd(values):
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return round(mean, 3), round(sd, 3)


def peer_table(found, seeds=PEER_SEEDS):
    """The README's markdown: per scenario, each source's mean τ (± sd over seeds) at each checkpoint."""
    checkpoints = list(next(iter(found.values())))
    head = ("| Judges | Source | " + " | ".join(f"τ at {at}" for at in checkpoints) + " |\n|---|---|"
            + "---|" * len(checkpoints))
    rows = []
    for name, points in found.items():
        for source in SOURCES + (AGREEMENT,):
            cells = " | ".join(f"{points[at][source][0]:.2f} ± {points[at][source][1]:.2f}" for at in checkpoints)
            rows.append(f"| {name} | {source} | {cells} |")
    return (f"Council panels of 7 seats (bench/sim's 5 members and 2 others at random), {int(100 * JUDGED)}% of "
            f"seats judged, {int(100 * FLIPPED)}% of verdicts flipped, {seeds} seeds; τ is the mean over the five "
            f"shapes of Kendall τ-b between the fit and the truth.\n\n{head}\n" + "\n".join(rows) + "\n")


def write_block(text, name):
    """Replace the README's block between `<!-- name:start -->` and `<!-- name:end -->` with `text`."""
    readme = HERE / "README.md"
    found = readme.read_text(encoding="utf-8")
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{text}{end}"
    if start in found:
        found = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, found, flags=re.S)
    else:
        found = found.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(found, encoding="utf-8")


# -------------------------------------------------------------------------------- the picture


COLOURS = {"counted": "#c0392b", "thompson": "#2471a3"}
OTHER = "#1e8449"  # a policy this version does not run, read back by --again (the half-life prototype)
DASHES = {"counted": "", "posterior": "", "leaderboard": "5,3", "ceiling": "1,3", "merger": "", "route": "5,3"}


def svg(results, prompts):
    """Two plots side by side: mean τ over shapes, and the gap share over a sliding window; both against
    prompts, with the degradation and the newcomer marked."""
    width, height, pad = 460, 300, 48
    parts = []

    def plot(x0, title, low, high, series, ylabel):
        def px(at):
            return x0 + pad + (width - 2 * pad) * at / prompts

        def py(v):
            return height - pad - (height - 2 * pad) * (max(low, min(high, v)) - low) / (high - low)

        parts.append(f'<text x="{x0 + width / 2}" y="20" text-anchor="middle" font-weight="bold">{title}</text>')
        parts.append(f'<rect x="{px(0)}" y="{py(high)}" width="{px(prompts) - px(0)}" height="{py(low) - py(high)}" '
                     'fill="none" stroke="#888"/>')
        for tick in range(5):
            v = low + (high - low) * tick / 4
            parts.append(f'<line x1="{px(0)}" x2="{px(prompts)}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#eee"/>')
            parts.append(f'<text x="{px(0) - 4}" y="{py(v) + 4:.1f}" text-anchor="end" font-size="10">{v:.2f}</text>')
        for tick in range(5):
            at = prompts * tick / 4
            parts.append(f'<text x="{px(at):.1f}" y="{height - pad + 14}" text-anchor="middle" '
                         f'font-size="10">{at:.0f}</text>')
        parts.append(f'<text x="{x0 + width / 2}" y="{height - 10}" text-anchor="middle" font-size="11">prompts</text>')
        parts.append(f'<text x="{x0 + 12}" y="{height / 2}" font-size="11" transform="rotate(-90 {x0 + 12} '
                     f'{height / 2})" text-anchor="middle">{ylabel}</text>')
        for n, (frac, label) in enumerate(((DEGRADE_AT, "degrades"), (JOINS_AT, "newcomer"))):
            x = px(prompts * frac)
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{py(high)}" y2="{py(low)}" stroke="#999" '
                         'stroke-dasharray="2,2"/>')
            parts.append(f'<text x="{x + 2:.1f}" y="{py(high) + 10 + 11 * n}" font-size="9" fill="#666">{label}</text>')
        if low < 0 < high:
            parts.append(f'<line x1="{px(0)}" x2="{px(prompts)}" y1="{py(0):.1f}" y2="{py(0):.1f}" stroke="#888"/>')
        for i, (label, colour, dash, points) in enumerate(series):
            if points:
                line = " ".join(f"{px(a):.1f},{py(v):.1f}" for a, v in points)
                parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.8" '
                             f'stroke-dasharray="{dash}"/>')
            x, y = px(0) + (width - 2 * pad) / 2 * (i % 2), height + 8 + 14 * (i // 2)  # the legend, under the plot
            parts.append(f'<line x1="{x}" x2="{x + 20}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" '
                         f'stroke-width="1.8" stroke-dasharray="{dash}"/>')
            parts.append(f'<text x="{x + 24}" y="{y}" font-size="10">{label}</text>')

    taus, gaps = [], []
    for result in results:
        policy, colour = result["policy"], COLOURS.get(result["policy"], OTHER)
        own = result["ranking"]
        taus.append((f"{policy}: {own} ranking", colour, "", [(a, t) for a, t, _ in result["tau"][own]]))
        taus.append((f"{policy}: leaderboard", colour, DASHES["leaderboard"],
                     [(a, t) for a, t, _ in result["tau"]["leaderboard"]]))
        taus.append((f"{policy}: ceiling of its counts", colour, DASHES["ceiling"],
                     [(a, t) for a, t, _ in result["tau"]["ceiling"]]))
        for kind in ("merger", "route"):
            gaps.append((f"{policy}: {kind}", colour, DASHES[kind], result["gap curve"][kind]))
    plot(0, "Kendall τ, record vs truth (mean of shapes)", -0.2, 1.0, taus, "τ")
    plot(width, "Gap closed, best single → oracle", -1.0, 1.0, gaps, "share of the gap")
    body = "\n".join(parts)
    legend = 14 * ((max(len(taus), len(gaps)) + 1) // 2)  # two entries a row, as many rows as the policies need
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * width}" height="{height + legend + 8}" '
            f'font-family="sans-serif" font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n{body}\n</svg>\n')


# -------------------------------------------------------------------------------- the report


def fmt_gap(found):
    if not found:
        return "—"
    share, low, high, n = found
    return f"{100 * share:.0f}% [{100 * low:.0f}, {100 * high:.0f}] (n={n})"


def table(results, prompts, seed, picture):
    """The README's markdown: one column per policy."""
    head = "| Figure | " + " | ".join(r["policy"] for r in results) + " |\n|---|" + "---|" * len(results)
    rows = []

    def row(label, values):
        rows.append(f"| {label} | " + " | ".join(str(v) for v in values) + " |")

    row("the policy's own ranking of the record", [r["ranking"] for r in results])
    for name in ("counted", "posterior", "leaderboard", "ceiling"):
        row(f"prompts until mean τ ≥ {' / '.join(map(str, BARS))}, {name} ranking",
            [" / ".join(str(v or "never") for v in r["tau reached at"][name].values()) for r in results])
        row(f"mean τ at the end, {name} ranking", [r["tau"][name][-1][1] for r in results])
    for kind in ("merger", "route"):
        for label in phases(prompts):
            row(f"gap closed by the {kind}, {label}", [fmt_gap(r["gap"][kind][label]) for r in results])
    row("panels until every model was seated", [r["panels until every model seated"] for r in results])
    for key in results[0]["events"]:
        row(key, [r["events"][key] if r["events"][key] is not None else "never" for r in results])
    row("shape picked as written", [r["shape picked right"] for r in results])
    row("run time (s)", [r["seconds"] for r in results])
    return (f"{prompts} prompts, seed {seed}, {int(100 * JUDGED)}% of calls judged, {int(100 * FLIPPED)}% of "
            f"verdicts flipped.\n\n{head}\n" + "\n".join(rows) + f"\n\n![learning curves]({picture})\n")


def write_readme(text):
    """Replace the README's "Learning loop" results block (between its markers) with `text`."""
    write_block(text, "learning")


def start_upstream(run):
    spec = run / "models.json"
    spec.write_text(json.dumps(upstream_models()), encoding="utf-8")
    out = run / "upstream.out"
    proc = subprocess.Popen([sys.executable, "-m", "benchwarmers.demo.demo", "--port", "0", "--models", str(spec)],
                                cwd=rig.CODE, stdout=out.open("w"), stderr=subprocess.STDOUT, env=rig.clean_env())
    base = rig.wait_for_line(out, r"(http://127\.0\.0\.1:\d+/v1)", proc).group(1)
    return proc, base


def simulate(prompts, seed, every, out, readme=False, say=print, runs=None):
    """Run every policy at once (a process each), then write the JSON, the SVG and (with `readme`) the table.
    `runs` (a saved JSON's) skips the running: the figures are worked out again from them."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if runs is None:
        runs = run_all(prompts, seed, every)
    results = [figures(r, prompts, every) for r in runs]
    name = f"learning-{stamp}-seed{seed}" + ("" if prompts >= 2000 else f"-{prompts}")
    picture = out / f"{name}.svg"
    picture.write_text(svg(results, prompts), encoding="utf-8")
    (out / f"{name}.json").write_text(json.dumps({"prompts": prompts, "seed": seed, "every": every,
                                                  "results": results, "runs": runs}, separators=(",", ":")),
                                      encoding="utf-8")
    text = table(results, prompts, seed, picture.relative_to(HERE) if picture.is_relative_to(HERE) else picture)
    say(text)
    if readme:
        write_readme(text)
    return {"json": out / f"{name}.json", "svg": picture, "results": results}


def run_all(prompts, seed, every):
    """Every policy's run, at once, a process and a gateway each, on one upstream."""
    with tempfile.TemporaryDirectory(prefix="bench-learning-") as tmp:
        run = Path(tmp)
        upstream, base = start_upstream(run)
        try:
            context = multiprocessing.get_context("spawn")
            with concurrent.futures.ProcessPoolExecutor(len(POLICIES), mp_context=context) as pool:
                runs = list(pool.map(run_policy, POLICIES, [base] * len(POLICIES), [prompts] * len(POLICIES),
                                     [seed] * len(POLICIES), [every] * len(POLICIES),
                                     [str(run / p) for p in POLICIES]))
        finally:
            rig.stop(upstream)
    return runs


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.learning", description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=2000, help="prompts per policy (default 2000)")
    parser.add_argument("--seed", type=int, default=20, help="the run's seed (default 20)")
    parser.add_argument("--every", type=int, default=100, help="prompts between two looks at the record")
    parser.add_argument("--out", default=str(HERE / "results"), help="where the JSON and SVG go")
    parser.add_argument("--readme", action="store_true", help="write the table into benchmarks/README.md")
    parser.add_argument("--again", metavar="JSON", help="work the figures out again from a saved run, run nothing")
    parser.add_argument("--peers", action="store_true", help="the peer-ranking study (issue 32), offline")
    args = parser.parse_args(argv)
    if args.peers:
        found = peer_study()
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"peers-{stamp}.json").write_text(json.dumps(found), encoding="utf-8")
        text = peer_table(found)
        print(text)
        if args.readme:
            write_block(text, "peers")
        return 0
    if args.again:
        saved = json.loads(Path(args.again).read_text(encoding="utf-8"))
        simulate(saved["prompts"], saved["seed"], saved.get("every", args.every), args.out, args.readme,
                 runs=saved["runs"])
        return 0
    simulate(args.prompts, args.seed, args.every, args.out, args.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
