"""Which model the bench's record puts forward, by policy (issue 20): the merger (MRG-3) and route mode's order (RT-6).

`config/gateway.json`'s `"policy"` chooses (`collections.settings()` reads and checks it):

- `"counted"` (the default): the contract's rule. A candidate with verdicts comes first, most useful
  verdicts first, then the higher useful ratio (MRG-3: one lucky verdict must not outrank a long record);
  route mode keeps RT-6's tuple. Exactly the reference's choices.
- `"thompson"`: Thompson sampling. Each candidate's chance of a useful answer is a Beta posterior,
  `Beta(1 + useful, 1 + judged - useful)` (a uniform prior updated by its verdicts), and one draw from
  each orders them, highest first. A model with a long good record usually wins; one with few
  verdicts still gets picked now and then, in proportion to how plausibly it is the best, so the bench
  keeps learning about it instead of freezing on the first model that got lucky.

Explorer seats are not chosen here: they keep RTR-6's staleness rule whatever the policy, so every
model on the bench still gets seen and judged (under Thompson, `panel.route` breaks whole-day ties towards
the least seen, and route mode draws on a new conversation's picked shape: benchmarks/learning.py found both).

Draws come from the module-level `rng` (a `random.Random`), under a lock so concurrent panels never
interleave one draw's calls. `BENCH_POLICY_SEED` in the environment seeds it when the module is
imported (a run that must be repeatable: a simulation, a demo); a test calls `seed(n)`. A caller that
needs its own stream (the offline replay) passes its own `random.Random` as `draw`.
"""

import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Record = Mapping[str, Mapping[str, Any]]  # `{alias: {"useful", "judged", ...}}`, as `offload` counts verdicts

from ..core import settings

COUNTED, THOMPSON = "counted", "thompson"
NAMES = (COUNTED, THOMPSON)
DEFAULT = COUNTED

rng = random.Random(settings.env("BENCH_POLICY_SEED") or None)
_rng_lock = threading.Lock()


def seed(value: int | str | None) -> None:
    """Start the module's draws over from `value`: the same seed, the same draws."""
    with _rng_lock:
        rng.seed(value)


def _counts(record: Record, alias: str) -> tuple[int, int]:
    """`(useful, judged)` of `alias` in `record` (`{alias: {"useful", "judged", ...}}`), 0 when absent."""
    row = record.get(alias) or {}
    return row.get("useful") or 0, row.get("judged") or 0


def counted(candidates: Sequence[str], record: Record) -> list[str]:
    """MRG-3: the candidates with verdicts, most useful first, then the higher useful ratio; ties keep
    the candidates' order. Candidates without a verdict are left out: the caller's fallbacks follow."""
    rows = {a: _counts(record, a) for a in candidates}
    judged = [a for a in candidates if rows[a][1]]
    return sorted(judged, key=lambda a: (-rows[a][0], -rows[a][0] / rows[a][1]))


def posterior(record: Record, alias: str) -> tuple[int, int]:
    """The Beta posterior's `(alpha, beta)` of `alias`: a uniform prior plus its useful and not-useful verdicts."""
    useful, judged = _counts(record, alias)
    useful = max(0, useful)
    return 1 + useful, 1 + max(0, judged - useful)


def thompson(candidates: Iterable[str], record: Record, draw: random.Random | None = None) -> list[str]:
    """Every candidate (duplicates once), ordered by one draw each from its Beta posterior, highest first.

    `draw` is a `random.Random`; without one the module's `rng` is used."""
    unique = list(dict.fromkeys(candidates))
    if draw is None:
        with _rng_lock:
            values = {a: rng.betavariate(*posterior(record, a)) for a in unique}
    else:
        values = {a: draw.betavariate(*posterior(record, a)) for a in unique}
    return sorted(unique, key=lambda a: -values[a])


def ranked(name: str, candidates: Sequence[str], record: Record, draw: random.Random | None = None) -> list[str]:
    """The candidates policy `name` puts forward, best first (counted: only those with verdicts)."""
    if name == THOMPSON:
        return thompson(candidates, record, draw)
    return counted(candidates, record)


def pick(name: str, candidates: Sequence[str], record: Record, draw: random.Random | None = None) -> str | None:
    """The one candidate policy `name` chooses: its first, else the first candidate (nothing judged yet)."""
    order = ranked(name, candidates, record, draw) or list(candidates)
    return order[0] if order else None
