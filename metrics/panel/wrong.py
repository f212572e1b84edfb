"""The confidently-wrong count (gateway.md §16.3, WRG-1..3; suite-cli-mcp.md SU-20).

Recall says how much a model finds; this says how often it asserts something false with confidence,
which recall cannot see. It re-reads the suite's saved answers with today's scorer (nothing is stored,
as SU-21 has it for scores) and the judged offloads' false claims, so a model's record follows the
tasks and the verdicts as they are now.

    python -m benchwarmers.panel.wrong      every model, worst rate first, with per-kind figures and reviews

Kinds of opportunity, one per saved answer the scorer calls answered (drafts skipped, WRG-1):
- `control`: a seeded/rebench control (its key is `no fault`) answered with a FAULT line;
- `wrong line`: a seeded/rebench bug task answered with a FAULT line not in its key (a miss is not wrong);
- `false claim`: a claim task whose expected verdict is FALSE, answered TRUE (TRUE-expected claims do not count);
- `trap`: any other task with `must_not_claim`, the planted falsehood asserted (the scorer's `invented`).

Decisions where the spec is silent:
- A seeded/rebench task is a control when its first `must_find` clause names `no fault`, else a bug task;
  a bug task's line key is the digits of `must_find[0].label` (SU-20), and one without digits is skipped
  for both the wrong-line count and the hunt (WRG-2).
- A claim task "expects FALSE" when its first `must_find` clause names `verdict: false`; "answered TRUE"
  is the scorer's invention (its `must_not_claim` is `verdict: true`), read on the first line as it scores.
- Saved answers are keyed by the alias in their file name, followed through renames (ALI-1); models
  no longer registered keep their record (the caller picks whom to show).
"""

import argparse
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from ..core import fileio, paths
from ..models import aliases, scoring
from . import offload

KINDS = ("control", "wrong line", "false claim", "trap")
HUNT = ("found", "wrong line", "missed", "clean", "false alarm")
BUG_SHAPES = frozenset({"seeded", "rebench"})
FAULT_LINE = re.compile(r"^\W*fault:\s*line\s*(\d+)", re.IGNORECASE)


def named_line(text: str | None) -> int | None:
    """The line number a first non-blank line like `FAULT: line 12` names, else None (WRG-1)."""
    for line in (text or "").splitlines():
        if line.strip():
            found = FAULT_LINE.match(line.strip())
            return int(found.group(1)) if found else None
    return None


def _first_names(task: Mapping[str, Any], phrase: str) -> bool:
    """Whether the task's first must_find clause names `phrase` (its label or one of its alternatives)."""
    clauses = task.get("must_find") or []
    if not clauses:
        return False
    clause = clauses[0]
    words = [scoring.label(clause)] + (list(clause.get("any_of") or []) if isinstance(clause, dict) else [])
    return any(phrase in str(w).lower() for w in words)


def key_lines(task: Mapping[str, Any]) -> set[int]:
    """The lines a bug task's key accepts: the digits of `must_find[0].label` (SU-20); empty when none."""
    clauses = task.get("must_find") or []
    return {int(d) for d in re.findall(r"\d+", str(scoring.label(clauses[0])))} if clauses else set()


def task_kind(task: Mapping[str, Any]) -> str | None:
    """Which opportunity a task offers: `control`, `bug`, `false claim`, `trap`, or None (not counted)."""
    shape = task.get("shape")
    if shape in BUG_SHAPES:
        if _first_names(task, "no fault"):
            return "control"
        return "bug" if key_lines(task) else None
    if shape == "claim":
        return "false claim" if _first_names(task, "verdict: false") else None
    return "trap" if task.get("must_not_claim") else None


def judge(task: Mapping[str, Any], text: str) -> tuple[str | None, bool, str | None]:
    """One saved answer: `(kind, wrong, hunt)`, `kind` None when it is no opportunity (not answered, or a task
    that does not count); `hunt` is the WRG-2 outcome for seeded/rebench tasks, else None."""
    kind = task_kind(task)
    if kind is None or scoring.score(task, text)["kind"] != "answered":
        return None, False, None
    if kind in ("control", "bug"):
        line = named_line(text)
        if kind == "control":
            return "control", line is not None, "false alarm" if line is not None else "clean"
        if line is None:
            return "wrong line", False, "missed"
        right = line in key_lines(task)
        return "wrong line", not right, "found" if right else "wrong line"
    return kind, bool(scoring.score(task, text)["invented"]), None


def _blank() -> dict[str, Any]:
    return {"answers": 0, "wrong": 0, "by": {k: [0, 0] for k in KINDS}, "hunt": dict.fromkeys(HUNT, 0),
            "reviews": 0, "review_false": 0}


def saved_answers(tasks_folder: str | os.PathLike[str] | None = None) -> list[tuple[dict[str, Any], str, str]]:
    """`[(task, alias as saved, text)]` for every non-draft task's saved answers, tasks in folder order."""
    root = tasks_folder or paths.file("suite", "tasks")
    found: list[tuple[dict[str, Any], str, str]] = []
    try:
        folders = sorted(e.path for e in os.scandir(root) if e.is_dir())
    except OSError:
        return found
    for folder in folders:
        task = dict(fileio.read_json(os.path.join(folder, "task.json")))  # a copy: the parse is cached, shared
        if not task or task.get("draft"):
            continue
        task.setdefault("id", os.path.basename(folder))
        try:
            outputs = sorted(e for e in os.listdir(os.path.join(folder, "output")) if e.endswith(".md"))
        except OSError:
            continue
        for name in outputs:
            try:
                with open(os.path.join(folder, "output", name), encoding="utf-8", errors="replace") as f:
                    found.append((task, name[:-3], f.read()))
            except OSError:  # removed since the folder was listed
                continue
    return found


def counts(answers: Iterable[tuple[Mapping[str, Any], str, str]] | None = None) -> dict[str, dict[str, Any]]:
    """WRG-3: `{alias: {answers, wrong, by: {kind: [wrong, opportunities]}, hunt, reviews, review_false}}`.

    `answers` defaults to every saved suite answer (a parameter, so a test can hand crafted ones in); the
    reviews come from the offload index's tallies, so the count costs the same whatever the log's size."""
    current = aliases.resolver()
    found: dict[str, dict[str, Any]] = {}
    for task, alias, text in saved_answers() if answers is None else answers:
        kind, wrong, hunt = judge(task, text)
        if kind is None:
            continue
        record = found.setdefault(aliases.follow(current, alias), _blank())
        record["answers"] += 1
        record["wrong"] += int(wrong)
        record["by"][kind][0] += int(wrong)
        record["by"][kind][1] += 1
        if hunt:
            record["hunt"][hunt] += 1
    for alias, judged in offload.claims().items():
        record = found.setdefault(alias, _blank())
        record["reviews"] += judged["judged"]
        record["review_false"] += judged["false"]
    return found


def rate(record: Mapping[str, Any]) -> float | None:
    """Wrong per answered opportunity; None with no answers."""
    return record["wrong"] / record["answers"] if record["answers"] else None


def report(found: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """WRG-3's lines: worst rate first (models without answers last), per-kind figures, then reviews."""
    order = sorted(found, key=lambda a: (rate(found[a]) is None, -(rate(found[a]) or 0), -found[a]["answers"], a))
    lines = [f"{'model':<28} {'wrong':>9}  " + "  ".join(f"{k:>11}" for k in KINDS) + "  reviews"]
    for alias in order:
        r = found[alias]
        total = f"{r['wrong']}/{r['answers']}" if r["answers"] else "no tasks"
        kinds = "  ".join(f"{(f'{w}/{n}' if n else '—'):>11}" for w, n in (r["by"][k] for k in KINDS))
        reviews = f"{r['review_false']} false in {r['reviews']}" if r["reviews"] else "—"
        lines.append(f"{alias:<28} {total:>9}  {kinds}  {reviews}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.panel.wrong", description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    found = counts()
    if not found:
        print("no answered suite tasks and no judged offloads yet")
        return 0
    print("\n".join(report(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
