"""Mined claim tasks (suite-cli-mcp.md §2.7, MN-1..8): claims your verdicts checked become TRUE/FALSE tasks.

    python -m benchwarmers.suite.mine                 # list the panels with claims not mined yet
    python -m benchwarmers.suite.mine PANEL [--force] # draft one task per claim of that panel

A verdict on a panel seat (`bench verdict CALL --real "..." --false "..."`) records claims a person
checked against the code. The calls log (`DATA/runs/gateway/calls.jsonl`) holds the prompt the
models saw; its `===== FILE: <name> =====` sections are frozen into each task's `fixtures/`, so the
question is asked about the code exactly as it was. Tasks are drafts: read each `why` (and trim the
fixtures to what the claim needs) before removing `"draft": true`.

Decisions where the contract is silent:
- Rotated calls logs (`calls.jsonl.1` ... `.N`) are read too, oldest first, so a panel older than the
  last rotation can still be mined; a later record with the same `panel` wins (MN-1).
- §13.10: re-mining a panel whose tasks exist refuses, naming them, unless `--force` (a reviewed task
  must not be overwritten by accident); the message paths are absolute (DATA may be outside CODE).
- A panel whose prompt was not kept (`calls_log_prompts: false`) is refused with that reason.
- Two sections whose names clean to the same file name get `-2`, `-3` ... before the extension, so
  neither file is lost.
- The listing counts distinct claims (MN-4's de-duplication) and also names panels whose calls-log
  record is gone (rotated away), which cannot be mined.
"""

import argparse
import json
import re
import shutil
import sys

from ..core import fileio, paths
from ..panel import offload
from . import tasks as suite_tasks

HEADER = re.compile(r"^===== (?:FILE: )?(.+?)(?: =====)?$")
TOO_BIG = 40_000


def calls_log():
    return paths.file("runs", "gateway", "calls.jsonl")


def panels():
    """MN-1: `{panel: record}` from the calls log (rotated files first); unparsable lines skipped, later wins."""
    log = calls_log()
    rotated = [p for p in log.parent.glob(log.name + ".*") if p.suffix[1:].isdigit()]
    found = {}
    for path in sorted(rotated, key=lambda p: -int(p.suffix[1:])) + [log]:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("panel"), str):
                found[record["panel"]] = record
    return found


def sections(prompt):
    """MN-3: `[(file name, text)]` recovered from the prompt's `=====` headers."""
    out, name, body = [], None, []
    taken = set()

    def close():
        if name is None:
            return
        clean = re.sub(r"[^\w.-]+", "-", name).strip("-") or f"part{len(out) + 1}"
        if "." not in clean:
            clean += ".txt"
        stem, dot, ext = clean.rpartition(".")
        n, unique = 1, clean
        while unique in taken:
            n += 1
            unique = f"{stem}-{n}.{ext}" if stem else f"{clean}-{n}"
        taken.add(unique)
        out.append((unique, "\n".join(body).strip("\n") + "\n"))

    for line in str(prompt or "").split("\n"):
        match = HEADER.match(line)
        if match:
            close()
            name, body = match.group(1), []
        elif name is not None:
            body.append(line)
    close()
    return out


def claims(panel):
    """MN-4: `[(text, truth, seat call)]`, each seat's `real` then `false`, de-duplicated case-insensitively."""
    seen, out = set(), []
    for entry in offload.entries():
        call = entry.call
        if not call.startswith(panel + "."):
            continue
        for truth, said in ((True, entry.real), (False, entry.false)):
            for text in said:
                if text.strip() and text.strip().lower() not in seen:
                    seen.add(text.strip().lower())
                    out.append((text.strip(), truth, call))
    return out


def mined_panels(loaded):
    """MN-2: the panels some task was mined from (its `mined_from` minus the last `.segment`)."""
    return {str(t["mined_from"]).rsplit(".", 1)[0] for t in loaded if t.get("mined_from")}


def question(claim):
    """MN-7: the claim as a neutral hypothesis; the first line is the verdict."""
    return (
        "A reviewer made the following claim about the code attached below.\n\n"
        f"Claim (a hypothesis to check, not a fact): {claim}\n\n"
        "Decide whether the claim is TRUE or FALSE for the code exactly as attached, using standard Python "
        "semantics (or the standard semantics of the language the file is written in). Do not assume any "
        "code that is not shown.\n\n"
        "Your first line must be exactly `VERDICT: TRUE` or `VERDICT: FALSE`, nothing else on it. Then quote "
        "the lines that decide it and explain in at most five sentences. Plain ASCII only."
    )


def task_spec(task_id, claim, truth, call, collection, names):
    said, denied = ("verdict: true", "verdict: false") if truth else ("verdict: false", "verdict: true")
    word = "TRUE" if truth else "FALSE"
    return {
        "id": task_id, "draft": True, "shape": "claim", "mined_from": call,
        "title": f"claim verification ({word.lower()}, mined): {claim[:80]}",
        "why": (f"{word}: verified in the verdict on {call} (model {collection}). Review before removing draft: "
                "check the claim against the fixtures and trim them to what it needs."),
        "prompt": question(claim), "repo": "fixtures", "attach": [f"snapshot/{name}" for name in names],
        "must_find": [{"any_of": [said]}], "must_not_claim": [denied],
        "score_in": "first_line", "min_answer_chars": 10,
    }


def listing(known, loaded):
    """MN-2 without a panel: what can be mined, and the command for each."""
    done = mined_panels(loaded)
    judged = dict.fromkeys(entry.call.rsplit(".", 1)[0] for entry in offload.entries()
                           if "." in entry.call and (entry.real or entry.false))
    rows = []
    for panel in judged:
        if panel in done:
            continue
        n = len(claims(panel))
        if n:
            gone = "" if panel in known else "   (not in the calls log any more: cannot be mined)"
            rows.append(f"  {panel}: {n} claim(s)   python -m benchwarmers.suite.mine {panel}{gone}")
    if not rows:
        print("Nothing to mine: no judged panel has claims that are not mined yet "
              "(record some with `bench verdict CALL --real ... --false ...`).")
        return
    print("Panels with claims not mined yet:")
    print("\n".join(rows))


def mine(panel, known, loaded, force):
    record = known.get(panel)
    if record is None:
        sys.exit(f"no panel '{panel}' in the calls log {calls_log()}")
    files = sections(record.get("prompt"))
    if not files:
        kept = str(record.get("prompt") or "")
        why = " (its prompt was not kept: calls_log_prompts is off)" if kept.startswith("[not kept") else ""
        sys.exit(f"panel '{panel}' has no `=====` file sections in its prompt{why}: nothing can be frozen")
    found = claims(panel)
    if not found:
        sys.exit(f"panel '{panel}' has no verdict with claims yet: record one with "
                 f"`bench verdict {panel}.member1 --useful --real \"...\" --false \"...\"`")
    stem = panel[1:] if panel.startswith("p") else panel
    ids = [f"mined-{stem}-{n}" for n in range(1, len(found) + 1)]
    existing = sorted(t["id"] for t in loaded if t["id"].startswith(f"mined-{stem}-"))
    if existing and not force:
        sys.exit(f"panel '{panel}' is mined already ({', '.join(existing)}); `--force` overwrites those drafts")
    root = suite_tasks.tasks_dir()
    for old in existing:
        shutil.rmtree(root / old)
    collection = record.get("model") or "?"
    for task_id, (text, truth, call) in zip(ids, found):
        folder = root / task_id
        fileio.make_folder(folder / "fixtures")
        for name, body in files:
            fileio.write_atomic(folder / "fixtures" / name, body)
        spec = task_spec(task_id, text, truth, call, collection, [name for name, _ in files])
        fileio.write_atomic(folder / "task.json", json.dumps(spec, indent=2, ensure_ascii=False) + "\n")
        print(f"{task_id}  {'TRUE ' if truth else 'FALSE'}  {text}")
    size = sum(len(body) for _, body in files)
    if size > TOO_BIG:
        print(f"note: the fixtures total {size:,} characters; trim them to what each claim needs before removing "
              "draft (free models fail on size, not judgement).")
    print(f"{len(ids)} task(s) written under {root}. Review each `why` before removing \"draft\": true.")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.suite.mine", description=__doc__.split("\n\n")[0])
    parser.add_argument("panel", nargs="?", help="a panel id (pYYYYMMDD-HHMMSS-...); none: list what can be mined")
    parser.add_argument("--force", action="store_true", help="overwrite the panel's mined drafts")
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    known = panels()
    loaded = suite_tasks.load()
    if args.panel is None:
        listing(known, loaded)
    else:
        mine(args.panel, known, loaded, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
