"""Real-bug tasks (suite-cli-mcp.md §2.9, RB-1..11; §12 OFF-2; §13.13): one-file fixes from public projects.

    python -m benchwarmers.suite.rebench [--count 5] [--since 2025-06-01] [--offset 0] [--scan 400] [--dry-run]
    python -m benchwarmers.suite.rebench --reject TASK_ID --reason "a rename, not a bug"

Reads merged fixes from the SWE-rebench-V2 dataset (CC-BY-4.0), keeps those that change one small
contiguous block of one Python source file, and writes a pair of drafts into YOUR data folder: the
file at its base commit (`rebench-<project>-<PR>-bug`, the answer is a line the fix changes) and
the fixed file (`...-control`, the answer is `NO FAULT`). Nothing this writes is ever committed to
the product (ST-2): the tasks hold third-party code. Review every pair before removing `"draft":
true` (RB-10, in docs/suite.md); a pair you drop goes into the rejected list with `--reject`.

Where it reads from (OFF-2; both bases are configurable so tests use a fake server on 127.0.0.1):
    BENCH_REBENCH_API   the datasets-server base (default https://datasets-server.huggingface.co), route /filter
    BENCH_REBENCH_RAW   the raw-files base (default https://raw.githubusercontent.com): <repo>/<commit>/<path>

Files (all under DATA):
    runs/cache/rebench-<since>.json   the rows read, reused for a day (RB-2)
    config/rebench-rejected.json      your rejected list, {instance_id: reason} (RB-9, RB-10)
CODE's `suite/rebench-rejected.json` is read too (§13.13: read both), and ships absent (ST-2).

Decisions beyond the reference (§13.13) and where the contract is silent:
- The user's rejected list lives in DATA (`config/`, which a checkout used as its own data folder
  ignores in git), so an upgrade keeps it and no dataset id can be committed by accident.
- `--since` must be a real `YYYY-MM-DD` date (it is written into the dataset query).
- The comment stripper knows strings: a `#` inside quotes is code. Whitespace inside strings is kept.
- The cache holds the rows from the newest down; a run scans only `rows[offset:offset + scan]`,
  however many the cache holds. A dry run reads the cache but writes nothing, not even the cache.
- Skip reasons beyond RB-4/RB-5's: "already a task", "rejected" (RB-9), "incomplete row" (a field
  missing, or a repo/commit/id not of its shape), "the patch was cut short by the dataset server"
  (the server truncates big cells), "its task id is taken" (another project of the same name and
  PR number), "no line to name" (RB-5's no key). The summary counts them all.
- Any failure to read the dataset (after RB-3's retries of a 500) ends the run with a message naming
  the server, exit 1; a file that cannot be fetched skips its row (RB-5).
- The prompt names the file's path (both versions share it) and always says how to name a missing
  line, so the wording never tells an add-only fix from another (RB-8).
- `--reject TASK_ID --reason TEXT` (RB-10 made one command): records the pair's instance id and the
  reason in the rejected list and removes both of the pair's task folders.
"""

import argparse
import collections
import datetime
import json
import re
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .. import __version__
from ..core import fileio, paths, settings
from . import seed
from . import tasks as suite_tasks

DATASET = "nebius/SWE-rebench-V2"
USER_AGENT = f"Benchwarmers/{__version__} (suite/rebench.py)"
FIELDS = ("instance_id", "repo", "base_commit", "created_at", "license", "patch", "problem_statement")
PAGE = 50
CACHE_SECONDS = 86_400
TIMEOUT = 90
ATTEMPTS = 16
RETRY_WAIT = 20  # seconds between attempts on a 500 (RB-3); a test sets it small
MOST_REMOVED = MOST_ADDED = 5
WINDOW = 400
STATEMENT_CHARS = 300
SHIPPED_REJECTED = Path(__file__).resolve().parent / "rebench-rejected.json"
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NOT_SOURCE = re.compile(r"(^|/)(tests?|testing)(/|_)|test_[^/]*\.py$|_test\.py$")
REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
COMMIT = re.compile(r"^[0-9a-fA-F]{7,40}$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class Skip(Exception):
    """A row not made into a pair; the message is its reason (the summary counts it without its detail)."""


def reason_key(reason):
    """`too large (7 removed, 1 added)` → `too large` (RB-9's summary)."""
    return re.sub(r"\s*\(.*\)$", "", reason)


# -- reading the dataset (RB-1..3) --------------------------------------------------------------

def api_base():
    return settings.env("BENCH_REBENCH_API").strip().rstrip("/")


def raw_base():
    return settings.env("BENCH_REBENCH_RAW").strip().rstrip("/")


def get(url):
    """The body at `url` (RB-3: a User-Agent naming the product, 90 s timeout)."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
        return reply.read()


def page(since, offset, wait=None, sleep=time.sleep, say=print):
    """One `/filter` page (RB-1); a 500 is tried again, 16 attempts `wait` s apart, said once (RB-3)."""
    query = {"dataset": DATASET, "config": "default", "split": "train",
             "where": f"\"language\"='python' AND \"created_at\">='{since}'", "orderby": '"created_at" DESC',
             "offset": offset, "length": PAGE}
    url = f"{api_base()}/filter?{urllib.parse.urlencode(query)}"
    wait = RETRY_WAIT if wait is None else wait
    for attempt in range(1, ATTEMPTS + 1):
        try:
            answer = json.loads(get(url))
            break
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code != 500 or attempt == ATTEMPTS:
                raise
            if attempt == 1:
                say(f"the dataset server is busy (HTTP 500); trying again every {wait:g} s, up to {ATTEMPTS} attempts")
            sleep(wait)
    items = answer.get("rows") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise ValueError("the dataset server's answer has no list of rows")
    return [kept(item) for item in items if isinstance(item, dict) and isinstance(item.get("row"), dict)]


def kept(item):
    """RB-1's fields of one row; `truncated` names those the server cut short."""
    row = {name: item["row"].get(name) for name in FIELDS}
    cut = [name for name in item.get("truncated_cells") or [] if name in FIELDS]
    if cut:
        row["truncated"] = cut
    return row


def fetch(since, want, **retry):
    """RB-1: pages of 50 from the newest until `want` rows or a short page; `(rows, complete)`."""
    rows = []
    while len(rows) < want:
        got = page(since, len(rows), **retry)
        rows += got
        if len(got) < PAGE:
            return rows, True
    return rows, False


def cache_path(since):
    return paths.file("runs", "cache", f"rebench-{since}.json")


def cached(since, want, now=None):
    """RB-2: the cached rows when under a day old and complete or long enough; else None."""
    path = cache_path(since)
    try:
        if (now or time.time()) - path.stat().st_mtime >= CACHE_SECONDS:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not (data.get("complete") is True or len(rows) >= want):
        return None
    return [row for row in rows if isinstance(row, dict)]


def dataset_rows(since, want, dry, **retry):
    """The rows from the newest down, at least `want` of them unless the dataset has fewer (RB-1, RB-2)."""
    rows = cached(since, want)
    if rows is not None:
        return rows
    rows, complete = fetch(since, want, **retry)
    if not dry:
        fileio.write_atomic(cache_path(since), fileio.dumps({"complete": complete, "rows": rows}))
    return rows


# -- one fix (RB-4, RB-5): pure, no network ----------------------------------------------------

class Fix:
    """The one hunk a kept patch makes: its file, where it starts in the old file, and its lines."""

    def __init__(self, path, start, old_count, body):
        self.path, self.start, self.old_count, self.body = path, start, old_count, body
        self.removed = [text for op, text in body if op == "-"]
        self.added = [text for op, text in body if op == "+"]


def code_of(line):
    """A line's code for RB-4's "only comments or whitespace" test: the comment cut (a `#` inside a string
    is code, §13.13), whitespace outside strings removed, the leading indentation kept; "" if none."""
    indent = line[:len(line) - len(line.lstrip())]
    out, quote, i = [], None, len(indent)
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                out.append(line[i:i + 2])
                i += 2
                continue
            if line.startswith(quote, i):
                out.append(quote)
                i += len(quote)
                quote = None
                continue
            out.append(ch)
        elif ch == "#":
            break
        elif ch in "'\"":
            quote = line[i:i + 3] if line[i:i + 3] in ('"""', "'''") else ch
            out.append(quote)
            i += len(quote)
            continue
        elif not ch.isspace():
            out.append(ch)
        i += 1
    code = "".join(out)
    return indent + code if code else ""


def hunk_body(lines, start_count, new_count):
    """The hunk's `(op, text)` lines, read until both counts are used up; an empty line is blank context,
    `\\ No newline…` is not a line."""
    body, old_left, new_left = [], start_count, new_count
    for line in lines:
        if old_left <= 0 and new_left <= 0:
            break
        if line.startswith("\\"):
            continue
        op, text = (line[0], line[1:]) if line else (" ", "")
        if op not in " -+":
            break
        old_left -= op != "+"
        new_left -= op != "-"
        body.append((op, text))
    return body


def fix_of(patch):
    """RB-4: the `Fix` a patch makes when it is one small contiguous change to one Python source file;
    else `Skip` with the reason."""
    lines = [line.rstrip("\r") for line in str(patch).split("\n")]
    if sum(line.startswith("diff --git ") for line in lines) != 1:
        raise Skip("changes more than one file")
    heads = [i for i, line in enumerate(lines) if HUNK.match(line)]
    header = lines[:heads[0]] if heads else lines
    targets = [line[len("+++ b/"):] for line in header if line.startswith("+++ b/")]
    if not targets or any(line.startswith("--- /dev/null") for line in header):
        raise Skip("adds or deletes a file")
    path = targets[0].rstrip("\t")
    if not path.endswith(".py") or NOT_SOURCE.search(path):
        raise Skip("not a Python source file")
    if not heads:
        raise Skip("no hunk")
    if len(heads) > 1:
        raise Skip("more than one hunk")
    match = HUNK.match(lines[heads[0]])
    old_count = int(match[2]) if match[2] is not None else 1
    new_count = int(match[4]) if match[4] is not None else 1
    body = hunk_body(lines[heads[0] + 1:], old_count, new_count)
    changed = [i for i, (op, _) in enumerate(body) if op != " "]
    if changed and changed[-1] - changed[0] + 1 != len(changed):
        raise Skip("changes are not one contiguous block")
    fix = Fix(path, int(match[1]), old_count, body)
    if len(fix.removed) > MOST_REMOVED or len(fix.added) > MOST_ADDED:
        raise Skip(f"too large ({len(fix.removed)} removed, {len(fix.added)} added)")
    if [c for c in map(code_of, fix.removed) if c] == [c for c in map(code_of, fix.added) if c]:
        raise Skip("only comments or whitespace")
    return fix


def lines_of(text):
    """A file's lines as a diff counts them (`\\n` only; a last newline ends the last line)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def apply(fix, text):
    """RB-5: `(before, after, keys)`: the file at its base commit, the fixed file, and the old-file lines a
    finding must name (the removed ones; for an add-only fix the two around the insertion)."""
    before = lines_of(text)
    start = fix.start if fix.old_count else fix.start + 1  # `-a,0` means "after line a"
    old = [text for op, text in fix.body if op != "+"]
    found = before[start - 1:start - 1 + len(old)] if start >= 1 else []
    if len(found) != len(old) or any(a.rstrip() != b.rstrip() for a, b in zip(old, found)):
        raise Skip("the diff does not match the file at its base commit")
    keys, number, insert_at = [], start, None
    for op, _ in fix.body:
        if op == "-":
            keys.append(number)
        if op == "+" and insert_at is None:
            insert_at = number  # the old line the addition goes in front of
        if op != "+":
            number += 1
    if not keys and insert_at is not None:
        keys = [n for n in (insert_at - 1, insert_at) if 1 <= n <= len(before)]
    if not keys:
        raise Skip("no line to name")
    after = before[:start - 1] + [text for op, text in fix.body if op != "-"] + before[start - 1 + len(old):]
    return before, after, keys


def window(count, first, last):
    """RB-6: `(lo, hi)`: the whole file up to 400 lines, else 400 lines centred on the change."""
    if count <= WINDOW:
        return 1, count
    lo = max(1, (first + last) // 2 - WINDOW // 2)
    hi = min(count, lo + WINDOW - 1)
    return max(1, hi - WINDOW + 1), hi


# -- the pair (RB-6..8) --------------------------------------------------------------------------

def slug(repo):
    """RB-7: the project's name, lower-cased, runs of non `[a-z0-9]` → `-`, trimmed, at most 24 chars."""
    return re.sub(r"[^a-z0-9]+", "-", repo.rsplit("/", 1)[-1].lower()).strip("-")[:24].strip("-")


def task_ids(row):
    stem = f"rebench-{slug(row['repo'])}-{row['instance_id'].rsplit('-', 1)[-1]}"
    return f"{stem}-bug", f"{stem}-control"


def question(path, lines, lo, count):
    """RB-8: one wording for both tasks; never a hint at the kind of bug."""
    hi = lo + len(lines) - 1
    excerpt = f" This is an excerpt: lines {lo}-{hi}." if (lo, hi) != (1, count) else ""
    return (f"The Python file below (`{path}`) is from a public project. It either has a bug that a later commit "
            "fixed, or it is the fixed version.\n"
            f"Its lines are numbered as in the file.{excerpt}\n\n"
            "Your first line must be exactly `FAULT: line <n>` (a line of the bug; if the bug is code that is "
            "missing, the line just before or just after where it belongs) or `NO FAULT`. Then at most three "
            "sentences. Plain ASCII.\n\n" + seed.numbered(lines, lo))


def quoted(lines):
    return " | ".join(f"`{line.strip()}`" for line in lines) or "(none)"


def pair(row, fix, before, after, keys):
    """RB-6..8: the bug task (the file at its base commit) and its control (the fixed file)."""
    bug_id, control_id = task_ids(row)
    number = row["instance_id"].rsplit("-", 1)[-1]
    url = f"https://github.com/{row['repo']}/pull/{number}"
    lo, hi = window(len(before), min(keys), max(keys))
    control_hi = min(len(after), hi + len(fix.added) - len(fix.removed))
    named = " or ".join(map(str, keys))
    statement = " ".join(str(row.get("problem_statement") or "").split())
    if len(statement) > STATEMENT_CHARS:
        statement = statement[:STATEMENT_CHARS - 1] + "…"
    common = {"draft": True, "shape": "rebench", "source": row["instance_id"], "upstream": row["repo"],
              "source_url": url, "created": str(row.get("created_at") or ""), "license": str(row.get("license") or ""),
              "score_in": "first_line", "min_answer_chars": 8}
    bug = {"id": bug_id, **common, "title": f"real bug: {row['repo']}#{number} {fix.path}",
           "why": (f"PR {row['repo']}#{number} ({common['created']}), {url}: {fix.path} at base commit "
                   f"{row['base_commit'][:10]}; the fix changes line {named}. Removed: {quoted(fix.removed)}. "
                   f"Added: {quoted(fix.added)}. Problem: {statement.rstrip('.') or '(none given)'}. "
                   f"Review before removing draft (RB-10): drop the pair (python -m benchwarmers.suite.rebench --reject {bug_id} "
                   "--reason ...) when this is a refactor, rename, message or dependency change, needs another module "
                   "to see, or the fixed file has the same problem elsewhere."),
           "prompt": question(fix.path, before[lo - 1:hi], lo, len(before)), **seed.fault_keys(keys)}
    control = {"id": control_id, **common, "title": f"real-bug control: {row['repo']}#{number} {fix.path}",
               "why": (f"The fixed {fix.path} of {row['repo']}#{number} ({url}); its pair {bug_id} has the bug at "
                       f"line {named}."),
               "prompt": question(fix.path, after[lo - 1:control_hi], lo, len(after)), **seed.no_fault_keys()}
    return bug, control


def checked(row):
    """The row's fields of their shapes, else `Skip`."""
    if not isinstance(row, dict):
        raise Skip("incomplete row")
    fields = [row.get(name) for name in ("instance_id", "repo", "base_commit", "patch")]
    if not all(isinstance(value, str) and value for value in fields) or not REPO.match(row["repo"]) \
            or not COMMIT.match(row["base_commit"]) or not row["instance_id"].rsplit("-", 1)[-1].isdigit():
        raise Skip("incomplete row")
    if "patch" in (row.get("truncated") or []):
        raise Skip("the patch was cut short by the dataset server")


def make(row, used, refused, taken):
    """One row → `(bug, control, fix, keys)`, or `Skip` with the reason (RB-4, RB-5, RB-9)."""
    checked(row)
    if row["instance_id"] in used:
        raise Skip("already a task")
    if row["instance_id"] in refused:
        raise Skip("rejected")
    fix = fix_of(row["patch"])
    if set(task_ids(row)) & taken:
        raise Skip("its task id is taken")
    url = f"{raw_base()}/{row['repo']}/{row['base_commit']}/{urllib.parse.quote(fix.path)}"
    try:
        text = get(url).decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        raise Skip(f"could not fetch the file ({exc})") from exc
    before, after, keys = apply(fix, text)
    bug, control = pair(row, fix, before, after, keys)
    return bug, control, fix, keys


# -- the rejected list (RB-9, RB-10, §13.13) -----------------------------------------------------

def rejected_path():
    return paths.file("config", "rebench-rejected.json")


def rejected(warn=print):
    """`{instance_id: reason}` from CODE's shipped list and DATA's own; a broken file is said, not fatal."""
    out = {}
    for path in (SHIPPED_REJECTED, rejected_path()):
        problem = fileio.json_problem(path)
        if problem:
            warn(f"warning: {path} {problem}; the ids in it are not skipped")
        out.update({key: str(value) for key, value in fileio.read_json(path).items()})
    return out


def reject(task_id, reason):
    """RB-10 as one command: the pair's instance id and reason go into the rejected list; its folders go."""
    loaded = suite_tasks.load()
    task = next((t for t in loaded if t["id"] == task_id and str(task_id).startswith("rebench-")), None)
    if task is None or not task.get("source"):
        sys.exit(f"no rebench task called '{task_id}'")
    source = task["source"]
    try:
        fileio.update(rejected_path(), lambda data: data.__setitem__(source, reason))
    except fileio.Unreadable as exc:
        sys.exit(str(exc))
    gone = [t for t in loaded if str(t["id"]).startswith("rebench-") and t.get("source") == source]
    for t in gone:
        shutil.rmtree(t["dir"])
    print(f"rejected {source} ({reason}) in {rejected_path()}; removed {', '.join(t['id'] for t in gone)}. "
          "Later runs never offer it.")
    return 0


# -- the command ---------------------------------------------------------------------------------

def since_date(text):
    if not DATE.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date")
    try:
        datetime.date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date ({exc})") from exc
    return text


def counted(low):
    def check(text):
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r}: a whole number, at least {low}")
        return value
    return check


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.suite.rebench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=counted(1), default=5, help="pairs to write (default 5)")
    parser.add_argument("--since", type=since_date, default="2025-06-01",
                        help="fixes created on or after this date (default 2025-06-01: the newest months)")
    parser.add_argument("--offset", type=counted(0), default=0, help="skip this many of the newest rows (default 0)")
    parser.add_argument("--scan", type=counted(1), default=400, help="rows to look through (default 400)")
    parser.add_argument("--dry-run", action="store_true", help="fetch and check, write nothing")
    parser.add_argument("--reject", metavar="TASK_ID", help="drop a reviewed pair; never offer it again")
    parser.add_argument("--reason", help="why (with --reject)")
    args = parser.parse_args(argv)
    if bool(args.reject) != bool(args.reason):
        parser.error("--reject TASK_ID and --reason TEXT go together")
    return args


def summary(made, read, skipped):
    """RB-9's last line."""
    reasons = ", ".join(f"{n} {reason}" for reason, n in skipped.most_common()) or "none"
    return f"{made} pair(s) from {read} row(s) read; skipped: {reasons}"


def main(argv=None):
    args = parse(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    if args.reject:
        return reject(args.reject, args.reason)
    loaded = suite_tasks.load()
    used = {t.get("source") for t in loaded if str(t["id"]).startswith("rebench-")}
    refused = rejected()
    taken = {t["id"] for t in loaded}
    try:
        rows = dataset_rows(args.since, args.offset + args.scan, args.dry_run)
    except (OSError, ValueError) as exc:  # urllib's errors are OSErrors
        sys.exit(f"could not read {DATASET} from {api_base()}: {exc}")
    scanned = rows[args.offset:args.offset + args.scan]
    skipped, made, read = collections.Counter(), 0, 0
    mark = "[dry run] " if args.dry_run else ""
    for row in scanned:
        if made >= args.count:
            break
        read += 1
        try:
            bug, control, fix, keys = make(row, used, refused, taken)
        except Skip as exc:
            skipped[reason_key(str(exc))] += 1
            continue
        if not args.dry_run:
            seed.write_task(bug)
            seed.write_task(control)
        used.add(row["instance_id"])
        taken.update((bug["id"], control["id"]))
        made += 1
        print(f"{mark}{row['instance_id']} {fix.path} line {' or '.join(map(str, keys))} ({len(fix.removed)} removed, "
              f"{len(fix.added)} added)  ->  {bug['id']}, {control['id']}")
    print(summary(made, read, skipped))
    if made < args.count and len(scanned) == args.scan:
        print(f"fewer than {args.count}: look further with --offset {args.offset + args.scan}")
    if made and not args.dry_run:
        print('Review each pair before removing "draft": true (docs/suite.md, "Real bugs"); drop one with --reject.')
    return 0


if __name__ == "__main__":
    sys.exit(main())
