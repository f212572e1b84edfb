"""Offline replay: how a policy would have done on the judged panels already in the offload log (issue 20 part 4).

    python -m benchwarmers.panel.replay --policy thompson [--collection bench/core] [--shape review] [--seed 0] [--json]

Before a policy goes live (`config/gateway.json`'s `"policy"`, `panel.policy`), replay it on your own
history. For each panel with at least two judged seats, the policy picks one of those seats as it would
pick the merger (MRG-3: on the verdicts for the panel's shape), and the pick scores what its seat was
judged. The same is done for the counted rule (the contract's, the default) and for a seat picked at
random (its expectation: the share of the panel's judged seats that were useful), so the three rates
sit side by side; each rate has a 95% Wilson interval, and the policy's edge over the counted rule a
95% interval from the panels' paired differences.

No peeking: a panel's pick sees only the verdicts whose lines were written before the panel's first
seat line (the log is read line by line, in the order written; a verdict changed later counts as it
stood then). Its score is the verdict its seat carries now.

Limits, said so the numbers are read right: only judged seats can be scored, so a pick is among them
(the live rule may have picked an unjudged member or the router's primary, which a replay cannot
judge); the counted rule's fallback with nothing judged is the first seat in seat order; and what a
different merger would have changed downstream (later verdicts) is not simulated. Thompson's draws
come from `--seed`, so a replay is repeatable.
"""

import argparse
import json
import math
import random
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from ..models import aliases
from . import offload, policy, roles

# (panel, the policy's pick, its verdict, the counted rule's pick, its verdict)
Pick = tuple[str, str | None, bool, str | None, bool]

SEAT = re.compile(r"(member|explorer)(\d*)")
Z = 1.959964  # the normal quantile of a 95% interval


def seat_order(call: str) -> tuple[int, int]:
    """Sort key of a panel seat's call: members by number, then `explorer`, `explorer2`."""
    seat = SEAT.fullmatch(call.rsplit(".", 1)[1])
    if seat is None:
        raise ValueError(f"{call} is no panel seat's call id")
    kind, number = seat.groups()
    return (0 if kind == "member" else 1, int(number or 1))


def panel_of(call: str) -> str | None:
    """The panel id of a panel seat's call id (`<panel>.member1` → `<panel>`), else None (mergers, route turns)."""
    if "." not in call:
        return None
    panel, seat = call.rsplit(".", 1)
    return panel if SEAT.fullmatch(seat) else None


class Evidence:
    """Verdicts in force as the log is read line by line: `{shape: {alias: [useful, judged]}}`, as
    `offload.shape_record` counts them (every judged line of the shape, any collection)."""

    def __init__(self, resolve: Callable[[str], str]) -> None:
        self.resolve = resolve
        self.counts: dict[str, dict[str, list[int]]] = {}
        self.in_force: dict[str, tuple[str, str, bool]] = {}  # call -> (shape, alias, useful) its latest line counted

    def take(self, line: offload.Line) -> None:
        call = line.call
        if call in self.in_force:
            self._count(*self.in_force.pop(call), -1)
        useful, shape = line.useful, line.shape
        if useful is not None and shape is not None:
            counted = (shape, aliases.follow(self.resolve, line.model), useful)
            self._count(*counted, 1)
            if call:
                self.in_force[call] = counted

    def _count(self, shape: str, alias: str, useful: bool, sign: int) -> None:
        row = self.counts.setdefault(shape, {}).setdefault(alias, [0, 0])
        row[0] += sign if useful else 0
        row[1] += sign

    def record(self, shape: str, candidates: Iterable[str]) -> dict[str, dict[str, int]]:
        """`{alias: {useful, judged}}` of the candidates on `shape` as things stand now."""
        rows = self.counts.get(shape, {})
        return {a: {"useful": rows[a][0], "judged": rows[a][1]} for a in candidates if a in rows}


def judged_panels(lines: Iterable[offload.Line], resolve: Callable[[str], str], collection: str,
                  shape: str) -> tuple[dict[str, dict[str, Any]], int]:
    """`{panel: {"shape", "seats": [(alias, useful)] in seat order}}` of panels in scope with two or more
    judged seats (their verdicts as they stand at the end), and how many in scope had fewer."""
    final = {}
    for line in lines:
        if panel_of(line.call):
            final[line.call] = line  # OFF-2: the latest line of a call is in force
    grouped: dict[str, list[tuple[str, offload.Line]]] = {}
    for call, line in final.items():
        panel = panel_of(call)
        if panel is None or collection and line.collection != collection or shape and line.shape != shape:
            continue
        grouped.setdefault(panel, []).append((call, line))
    found, short = {}, 0
    for panel, seats in grouped.items():
        judged = sorted(((call, line) for call, line in seats if line.useful is not None),
                        key=lambda item: seat_order(item[0]))
        if len(judged) < 2:
            short += 1 if judged else 0
            continue
        found[panel] = {"shape": judged[0][1].shape or "general",
                        "seats": [(aliases.follow(resolve, line.model), line.useful) for _, line in judged]}
    return found, short


def replay(name: str, lines: list[offload.Line] | None = None, collection: str = "", shape: str = "",
           seed: int = 0) -> dict[str, Any]:
    """Replay policy `name` on the log's judged panels (or on `lines`, in the order written): the counts
    `report()` reads. `picks` lists each panel's `(panel, policy's pick, its verdict, counted pick, its verdict)`."""
    lines = offload.lines() if lines is None else lines
    resolve = aliases.resolver()
    panels, short = judged_panels(lines, resolve, collection, shape)
    evidence, draw = Evidence(resolve), random.Random(seed)
    seen: set[str] = set()
    picks: list[Pick] = []
    chance = 0.0
    for line in lines:
        panel = panel_of(line.call)
        if panel is not None and panel in panels and panel not in seen:
            seen.add(panel)  # the panel's first line: decide on what was judged before it
            seats = panels[panel]["seats"]
            verdicts = dict(seats)
            candidates = [alias for alias, _ in seats]
            record = evidence.record(panels[panel]["shape"], candidates)
            mine = policy.pick(name, candidates, record, draw)
            counted = policy.pick(policy.COUNTED, candidates, record)
            picks.append((panel, mine, verdicts[mine], counted, verdicts[counted]))
            chance += sum(verdicts.values()) / len(verdicts)
        evidence.take(line)
    return {"policy": name, "collection": collection, "shape": shape, "seed": seed, "panels": len(picks),
            "skipped": short, "useful": sum(p[2] for p in picks), "counted_useful": sum(p[4] for p in picks),
            "random_useful": round(chance, 6), "picks": picks}


def wilson(hits: float, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a rate of `hits` in `n`, as `(low, high)`; `(0, 1)` with no trials."""
    if not n:
        return 0.0, 1.0
    centre = (hits + Z * Z / 2) / (n + Z * Z)
    half = Z / (n + Z * Z) * math.sqrt(hits * (n - hits) / n + Z * Z / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def paired(picks: list[Pick]) -> tuple[float, float, float] | None:
    """The policy's edge over the counted rule, per panel (useful 1 / not 0), with a 95% normal interval
    on the paired differences: `(mean, low, high)`, or None with fewer than two panels."""
    diffs = [int(p[2]) - int(p[4]) for p in picks]
    if len(diffs) < 2:
        return None
    mean = sum(diffs) / len(diffs)
    spread = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs))
    return mean, mean - Z * spread, mean + Z * spread


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """`result` with its rates and intervals, for `--json`."""
    n = result["panels"]
    edge = paired(result["picks"])
    return {**{k: v for k, v in result.items() if k != "picks"},
            "rate": result["useful"] / n if n else None, "interval": wilson(result["useful"], n),
            "counted_rate": result["counted_useful"] / n if n else None,
            "counted_interval": wilson(result["counted_useful"], n),
            "random_rate": result["random_useful"] / n if n else None,
            "edge": None if edge is None else {"mean": edge[0], "low": edge[1], "high": edge[2]},
            "picks": [{"panel": p[0], "pick": p[1], "useful": p[2], "counted": p[3], "counted_useful": p[4]}
                      for p in result["picks"]]}


def _pct(rate: float) -> str:
    return f"{100 * rate:.0f}%"


def report(result: dict[str, Any]) -> str:
    """What `python -m benchwarmers.panel.replay` prints."""
    n = result["panels"]
    scope = f"{result['collection'] or 'every collection'}, {result['shape'] or 'every shape'}"
    if not n:
        return (f"No judged panel to replay ({scope}): a panel counts once two or more of its seats have a verdict. "
                f"Judge seats with POST /bench/verdict or `python -m benchwarmers.panel.offload verdict`.")
    seeded = f", seed {result['seed']}" if result["policy"] == policy.THOMPSON else ""
    lines = [f"Replayed {n} judged panel{'s' if n != 1 else ''} ({scope}) with the {result['policy']} policy{seeded}: "
             "each picks one of the panel's judged seats, on the verdicts given before the panel.",
             _row(result["policy"], result["useful"], n),
             _row("counted (the contract's rule)", result["counted_useful"], n),
             f"  a seat at random: {result['random_useful']:.1f} of {n} expected ({_pct(result['random_useful'] / n)})"]
    edge = paired(result["picks"])
    if edge is not None and result["policy"] != policy.COUNTED:
        lines.append(f"  {result['policy']} − counted: {100 * edge[0]:+.0f} points "
                     f"(95% interval {100 * edge[1]:+.0f} to {100 * edge[2]:+.0f})")
    if result["skipped"]:
        lines.append(f"Not replayed: {result['skipped']} panel{'s' if result['skipped'] != 1 else ''} "
                     "with a single judged seat (nothing to choose between).")
    return "\n".join(lines)


def _row(label: str, hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"  {label}: {hits} of {n} picks judged useful ({_pct(hits / n)}; 95% interval {_pct(low)} to {_pct(high)})"


def main(argv: list[str] | None = None) -> int:
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.panel.replay",
                                     description="Score a merger/route policy on the judged panels in the offload log.")
    parser.add_argument("--policy", required=True, choices=policy.NAMES, help="the policy to replay")
    parser.add_argument("--collection", default="", metavar="bench/NAME", help="only this collection's panels")
    parser.add_argument("--shape", default="", help="only panels of this shape")
    parser.add_argument("--seed", type=int, default=0, help="seed of Thompson's draws (default 0)")
    parser.add_argument("--json", action="store_true", help="the figures and each panel's picks as JSON")
    args = parser.parse_args(argv)
    known = sorted(roles.load()["shapes"])
    if args.shape and args.shape not in known:
        parser.error(f"unknown shape '{args.shape}'; known: {', '.join(known)}")
    collection = args.collection
    if collection and not collection.startswith("bench/"):
        collection = f"bench/{collection}"
    result = replay(args.policy, collection=collection, shape=args.shape, seed=args.seed)
    print(json.dumps(summary(result), indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
