"""The Benchmarks page's data (dashboard.md §8.2, BM-1, BM-2): what `charts-data` holds.

The page draws every chart and table from this one object, embedded in the page once
(`<script type="application/json" id="charts-data">`), so a chart and the table folded under it
can never disagree. It is read afresh per page load from the evidence files: the dated suite notes
(`runs/suite-*.md`), the suite's saved answers through the confidently-wrong count (`panel.wrong`),
the offload log (`panel.offload`) and the perf history (`benchview.perf_rows`).

Decisions where the spec is silent:
- Charts use registered chat models only (FILE-2); the tables under them (`tables`) hold every current
  model (registered ∪ retired) so "Show retired" has rows to show; decision models have no suite or perf.
- A suite note's seconds cell is read from its leading number: the runner writes `12.3 (x2)` when a task
  was retried (SU-31), and the time is still the time.
- `reliability` counts one outcome per perf row (a probe), not per sample: the row's `failure` names the
  worst class of its failed samples, not each one's.
- `overview`'s and `speed`'s recall is Σfound/Σof over the model's latest suite-note scores that are `n/m`
  (as At a glance's Suite column reads them); `hunt` rows also carry `tasks`, their sum, for the y label.
"""

import datetime
import glob
import os
import re

from ..core import paths
from ..models import aliases, registry
from ..panel import offload, roster, wrong
from . import benchview

FAMILIES = ["hand-built", "claims", "seeded, function", "seeded, whole file", "real bugs"]
PREFIXES = (("claim-", "claims"), ("seeded-hard-", "seeded, whole file"), ("seeded-", "seeded, function"),
            ("rebench-", "real bugs"))
RELIABILITY_DAYS = 14
TASK = re.compile(r"^[\w-]+$")
MODEL = re.compile(r"^`([^`]+)`$")
SECONDS = re.compile(r"^([\d.]+)")
SCORE = re.compile(r"^(\d+)/(\d+)$")
BLANK = " —-"


def family(task):
    """BM-1: a task's family from its id prefix; anything else is hand-built."""
    for prefix, name in PREFIXES:
        if task.startswith(prefix):
            return name
    return FAMILIES[0]


def _row(line):
    """A note line's five cells `(task, model, found, invented, seconds)` when it is a score row (BM-2), else None."""
    text = line.strip()
    if not (text.startswith("|") and text.endswith("|")):
        return None
    cells = [c.strip() for c in text[1:-1].split("|")]
    if len(cells) < 5:
        return None
    task, model, found, invented, seconds = cells[:5]
    named, timed = MODEL.match(model), SECONDS.match(seconds)
    if not (TASK.match(task) and named and found and timed):
        return None
    try:
        spent = float(timed.group(1))
    except ValueError:
        return None
    return task, named.group(1), found, invented.strip(BLANK), spent


def suite_scores(folder=None):
    """BM-2: `{(task, current alias): {found, invented, seconds}}` from `runs/suite-*.md` in name order, later wins."""
    where = folder or paths.file("runs")
    current = aliases.resolver()
    scores = {}
    for note in sorted(glob.glob(os.path.join(glob.escape(str(where)), "suite-*.md"))):
        try:
            with open(note, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            found = _row(line)
            if found:
                task, model, score, invented, seconds = found
                scores[(task, aliases.follow(current, model))] = {"found": score, "invented": invented,
                                                                  "seconds": seconds}
    return scores


def ratio(text):
    """`n/m` as a fraction, None for a non-score word (timeout, refused, error) or `m == 0`."""
    found = SCORE.match(text or "")
    return int(found.group(1)) / int(found.group(2)) if found and int(found.group(2)) else None


def recall(scores):
    """`{alias: (Σfound, Σof, tasks)}` over the `n/m` scores."""
    sums = {}
    for (_, alias), s in scores.items():
        found = SCORE.match(s["found"])
        if found:
            total = sums.setdefault(alias, [0, 0, 0])
            total[0] += int(found.group(1))
            total[1] += int(found.group(2))
            total[2] += 1
    return {a: tuple(t) for a, t in sums.items()}


def _upper_median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _heat(scores, models, text=False):
    """BM-1's heat cells for `models`; with `text`, the table's `inventedText` too."""
    return [{"model": alias, "task": task, "family": family(task), "label": s["found"], "rate": ratio(s["found"]),
             "invented": bool(s["invented"]), **({"inventedText": s["invented"]} if text else {})}
            for (task, alias), s in sorted(scores.items(), key=lambda kv: (FAMILIES.index(family(kv[0][0])), kv[0]))
            if alias in models]


def _work(models):
    """`{alias: {offloads, judged, useful, real, false}}` from the offload log (OFF-5) and its verified claims."""
    found = {}
    for alias, s in offload.summary().items():
        if alias in models:
            found[alias] = {"model": alias, "offloads": s["offloads"], "judged": s["judged"], "useful": s["useful"],
                            "real": 0, "false": 0}
    for alias, judged in offload.claims().items():
        if alias in found:
            found[alias]["real"], found[alias]["false"] = judged["real"], judged["false"]
    return found


def _wrong_rows(counts, models):
    rows = []
    for alias in models:
        r = counts.get(alias)
        if r is None or not (r["answers"] or r["reviews"]):
            continue
        rows.append({"model": alias, "wrong": r["wrong"], "answers": r["answers"],
                     "by": {k: r["by"][k] for k in wrong.KINDS}, "reviews": r["reviews"],
                     "review_false": r["review_false"]})
    return rows


def _outcome(row):
    return "answered" if _int(row.get("answered")) > 0 else (row.get("failure") or "").strip() or "error"


def _reliability(rows, models, today):
    since = (today - datetime.timedelta(days=RELIABILITY_DAYS)).isoformat()
    tally = {}
    for alias in models:
        for row in rows.get(alias, []):
            if str(row.get("timestamp") or "")[:10] >= since:
                key = (alias, _outcome(row))
                tally[key] = tally.get(key, 0) + 1
    return [{"model": m, "outcome": o, "count": n} for (m, o), n in tally.items()]


def _perf_table(rows, models):
    """BM-8's table: the latest row per (model, prompt)."""
    out = []
    for alias in models:
        latest = {}
        for row in rows.get(alias, []):
            latest[(row.get("prompt") or "").strip()] = row
        for prompt, row in latest.items():
            out.append({"model": alias, "prompt": prompt, "p50": _float(row.get("p50_s")),
                        "p95": _float(row.get("p95_s")),
                        "chars": _float(row.get("chars_per_s")), "tokens": _float(row.get("tokens_per_s")),
                        **{k: _int(row.get(k)) for k in ("answered", "refused", "error", "timeout")}})
    return out


def _int(value):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return 0


def _float(value):
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        return None


def charts_data(today=None):
    """BM-1's object, plus `tables` (every current model) for the folded tables."""
    today = today or datetime.date.today()
    registered = list(registry.registrations())
    current = registered + [a for a in roster.retired().models if a not in registered]
    scores = suite_scores()
    recalls = recall(scores)
    counts = wrong.counts()
    work = _work(set(current))
    perf = benchview.perf_rows()
    mine = set(registered)
    wrong_rows = _wrong_rows(counts, current)
    seconds = {}
    for (_, alias), s in scores.items():
        seconds.setdefault(alias, []).append(s["seconds"])
    hunt = [{"model": a, **counts[a]["hunt"], "tasks": sum(counts[a]["hunt"].values())}
            for a in current if a in counts and any(counts[a]["hunt"].values())]
    return {
        "overview": [{"model": a, "recall": recalls[a][0] / recalls[a][1], "wrong": r["wrong"] / r["answers"],
                      "found": f"{recalls[a][0]}/{recalls[a][1]}", "wrongN": f"{r['wrong']}/{r['answers']}"}
                     for a, r in ((r["model"], r) for r in wrong_rows)
                     if a in mine and a in recalls and recalls[a][1] > 0 and r["answers"]],
        "heat": _heat(scores, mine),
        "families": FAMILIES,
        "wrong": [{"model": r["model"], "kind": k, "rate": r["by"][k][0] / r["answers"],
                   "n": f"{r['by'][k][0]}/{r['by'][k][1]}"}
                  for r in wrong_rows if r["model"] in mine for k in wrong.KINDS if r["by"][k][0] > 0],
        "wrongTotals": {r["model"]: {"rate": r["wrong"] / r["answers"], "answers": r["answers"]}
                        for r in wrong_rows if r["model"] in mine and r["answers"]},
        "kinds": list(wrong.KINDS),
        "hunt": [r for r in hunt if r["model"] in mine],
        "work": [w for a, w in work.items() if a in mine and w["judged"] > 0],
        "reliability": _reliability(perf, registered, today),
        "speed": [{"model": a, "seconds": _upper_median(seconds[a]), "recall": recalls[a][0] / recalls[a][1],
                   "tasks": recalls[a][2]} for a in registered if a in recalls and recalls[a][1] > 0 and a in seconds],
        "tables": {"hunt": hunt, "work": [w for w in work.values() if w["judged"] > 0], "wrong": wrong_rows,
                   "heat": _heat(scores, set(current), text=True), "perf": _perf_table(perf, current)},
    }
