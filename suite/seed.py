"""Seeded bugs (suite-cli-mcp.md §2.6, SD-1..12): one change in a real function, a bug task and its control.

    python -m benchwarmers.suite.seed [--repo KEY] [--count 6] [--seed N] [--hard] [--kinds a,b,...]

Takes functions (or, with `--hard`, whole files) from a repository named in `config/repos.json`,
changes exactly one thing, and writes `seeded-<slug>-bug` (the changed code; the answer is the
changed line) and `seeded-<slug>-control` (the untouched code; the answer is `NO FAULT`), both
drafts: read each bug task's `why` and check the change really alters behaviour before removing
`"draft": true`.

Decisions beyond the reference (§13.9):
- `--repo` is checked against repos.json (a message listing the keys, never a KeyError).
- Folders are skipped by whole name (`test`, `tests`, `migrations`, `vendor`, `__pycache__`,
  `.venv`, `build`, `dist`, and names starting `test_`), not by prefix, so `testimony.py` and
  `builders/` are sources; files named `test_*.py` or `*_test.py` are skipped.
- Two sources with the same slug get `-2`, `-3` ... rather than overwriting each other's tasks.
- Edits are checked to parse in the source's own indentation, not only dedented.
"""

import argparse
import ast
import io
import json
import random
import re
import sys
import textwrap
import tokenize
from pathlib import Path

from ..core import fileio
from . import tasks as suite_tasks

KINDS = ("compare", "boolop", "return-bool", "not", "number", "args", "off-by-one", "break-continue", "remove-call",
         "augassign")
TOKEN_KINDS = KINDS[:4]
HINTS = {"compare": "a comparison operator", "boolop": "and/or", "return-bool": "a returned True/False",
         "not": "a removed `not`", "number": "a small number", "args": "two adjacent arguments swapped",
         "off-by-one": "an off-by-one in a range() or slice", "break-continue": "break/continue swapped",
         "remove-call": "a removed call", "augassign": "an augmented assignment operator"}
COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
AUG = {ast.Add: ("+=", "-="), ast.Sub: ("-=", "+="), ast.Mult: ("*=", "/=")}
NO_SWAP = {"max", "min", "gcd", "lcm", "hypot"}
QUIET = {"print", "echo", "write", "log", "debug", "info", "warn", "warning", "error", "exception", "critical", "sleep"}
LOOSE_BOUNDS = (ast.IfExp, ast.Lambda, ast.BoolOp, ast.Compare, ast.NamedExpr, ast.Starred)
SKIP_DIRS = {"test", "tests", "migrations", "vendor", "__pycache__", ".venv", "build", "dist"}
FUNCTION_LINES = (12, 60)
FILE_LINES = (100, 400)
TERMINAL = (ast.Return, ast.Raise, ast.Break, ast.Continue)


class Edit:
    """One change: line `at` (0-based) becomes `new`, or is deleted when `new` is None."""

    def __init__(self, kind, at, new):
        self.kind, self.at, self.new = kind, at, new

    def apply(self, lines):
        out = list(lines)
        if self.new is None:
            del out[self.at]
        else:
            out[self.at] = self.new
        return out


# -- finding candidates -----------------------------------------------------------------------

def char_col(line, byte_col):
    """ast columns are UTF-8 byte offsets; lines are text (SD-3)."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def span(lines, node):
    """`(line index, start char, end char)` of a node on one line, or None when it spans lines."""
    if node.lineno != node.end_lineno:
        return None
    line = lines[node.lineno - 1]
    return node.lineno - 1, char_col(line, node.col_offset), char_col(line, node.end_col_offset)


def replaced(lines, where, text):
    at, start, end = where
    return lines[at][:start] + text + lines[at][end:]


def blocked_lines(tree):
    """Lines never offered (SD-4): `if __name__ == ...` blocks and statements after a return/raise/break/continue."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            out.update(range(node.lineno, node.end_lineno + 1))
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            ended = False
            for stmt in block:
                if ended:
                    out.update(range(stmt.lineno, stmt.end_lineno + 1))
                ended = ended or isinstance(stmt, TERMINAL)
    return out


def token_candidates(lines, blocked):
    """compare, boolop, return-bool and not: tokens only, never inside strings or comments (SD-3)."""
    found = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    depth = 0
    for i, tok in enumerate(tokens):
        kind = tokenize.tok_name[tok.type]
        depth += kind == "FSTRING_START"
        depth -= kind == "FSTRING_END"
        row, col = tok.start
        if depth or row in blocked or tok.start[0] != tok.end[0]:
            continue
        at, prev = row - 1, tokens[i - 1] if i else None
        where = (at, col, tok.end[1])
        if tok.type == tokenize.OP and tok.string in COMPARE:
            found.append(Edit("compare", at, replaced(lines, where, COMPARE[tok.string])))
        elif tok.type == tokenize.NAME and tok.string in ("and", "or"):
            found.append(Edit("boolop", at, replaced(lines, where, "or" if tok.string == "and" else "and")))
        elif tok.string in ("True", "False") and prev is not None and prev.string == "return":
            found.append(Edit("return-bool", at, replaced(lines, where, "False" if tok.string == "True" else "True")))
        elif tok.string == "not" and prev is not None and prev.string in ("if", "elif", "while"):
            following = tokens[i + 1]
            if following.start[0] == row:
                found.append(Edit("not", at, lines[at][:col] + lines[at][following.start[1]:]))
    return found


def excluded_nodes(tree):
    """ids of nodes inside keyword values, parameter defaults, f-strings and round()'s digits (SD-4)."""
    out = set()

    def mark(node):
        out.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword):
            mark(node.value)
        elif isinstance(node, ast.arguments):
            for default in node.defaults + [d for d in node.kw_defaults if d is not None]:
                mark(default)
        elif isinstance(node, ast.JoinedStr):
            mark(node)
        elif isinstance(node, ast.Call) and dotted(node.func) == "round" and len(node.args) > 1:
            mark(node.args[1])
    return out


def dotted(func):
    """The last name of a call's dotted name (`self.log.info` → `info`)."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def literal(node):
    """The int a bound is written as (`2`, `+1`, `-2`), or None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = literal(node.operand)
        if inner is not None and isinstance(node.operand, ast.Constant):
            return inner if isinstance(node.op, ast.UAdd) else -inner
    return None


def shifted(lines, node, by):
    """SD-5: a literal is computed, anything else gets ` + 1` / ` - 1`."""
    value = literal(node)
    if value is not None:
        return str(value + by)
    text = ast.get_source_segment("\n".join(lines), node)
    return f"{text} {'+' if by > 0 else '-'} {abs(by)}"


def number_candidates(lines, node, parents):
    where = span(lines, node)
    text = lines[where[0]][where[1]:where[2]] if where else ""
    if not where or not text.isdigit():
        return []
    under_minus = isinstance(parents.get(id(node)), ast.UnaryOp) and isinstance(parents[id(node)].op, ast.USub)
    out = []
    for new in sorted({node.value + 1, node.value - 1, 0} - {node.value}, key=lambda v: (abs(v - node.value), v)):
        if under_minus and new <= 0:  # `-0` or `--1`
            continue
        out.append(Edit("number", where[0], replaced(lines, where, str(new))))
    return out


def args_candidates(lines, node):
    if dotted(node.func) in NO_SWAP or any(isinstance(a, ast.Starred) for a in node.args):
        return []
    out = []
    for a, b in zip(node.args, node.args[1:]):
        wa, wb = span(lines, a), span(lines, b)
        if not wa or not wb or wa[0] != wb[0]:
            continue
        line = lines[wa[0]]
        first, second = line[wa[1]:wa[2]], line[wb[1]:wb[2]]
        if first == second:
            continue
        new = line[:wa[1]] + second + line[wa[2]:wb[1]] + first + line[wb[2]:]
        out.append(Edit("args", wa[0], new))
    return out


def off_by_one_candidates(lines, node):
    out = []
    if isinstance(node, ast.Call) and dotted(node.func) == "range" and isinstance(node.func, ast.Name) \
            and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], LOOSE_BOUNDS):
        bound = node.args[0]
        where = span(lines, bound)
        if where:
            text = lines[where[0]][where[1]:where[2]]
            out.append(Edit("off-by-one", where[0], replaced(lines, where, shifted(lines, bound, -1))))
            out.append(Edit("off-by-one", where[0], replaced(lines, where, f"1, {text}")))
    if isinstance(node, ast.Slice) and node.step is None:
        for bound, by in ((node.lower, 1), (node.upper, -1)):
            if bound is None or isinstance(bound, LOOSE_BOUNDS):
                continue
            where = span(lines, bound)
            if where:
                out.append(Edit("off-by-one", where[0], replaced(lines, where, shifted(lines, bound, by))))
    return out


def remove_call_candidates(lines, node, parents):
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)) or dotted(node.value.func) in QUIET:
        return []
    where = span(lines, node)
    if not where or lines[where[0]].strip() != lines[where[0]][where[1]:where[2]].strip():
        return []
    block = next((getattr(parents[id(node)], f) for f in ("body", "orelse", "finalbody")
                  if node in (getattr(parents.get(id(node)), f, None) or [])), [node])
    if len(block) == 1:
        return [Edit("remove-call", where[0], lines[where[0]][:where[1]] + "pass")]
    return [Edit("remove-call", where[0], None)]


def augassign_candidates(lines, node):
    if type(node.op) not in AUG or node.target.end_lineno != node.lineno or node.value.lineno != node.lineno:
        return []
    line = lines[node.lineno - 1]
    start = char_col(line, node.target.end_col_offset)
    end = char_col(line, node.value.col_offset)
    old, new = AUG[type(node.op)]
    gap = line[start:end]
    if old not in gap:
        return []
    return [Edit("augassign", node.lineno - 1, line[:start] + gap.replace(old, new, 1) + line[end:])]


def ast_candidates(lines, tree, blocked):
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    skipped = excluded_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in blocked or id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) <= 2:
            found += number_candidates(lines, node, parents)
        if isinstance(node, ast.Call) and not any(id(a) in skipped for a in node.args):  # round(y, 2): nothing
            found += args_candidates(lines, node)
        found += off_by_one_candidates(lines, node)
        if isinstance(node, (ast.Break, ast.Continue)):
            where = span(lines, node)
            found.append(Edit("break-continue", where[0],
                              replaced(lines, where, "continue" if isinstance(node, ast.Break) else "break")))
        found += remove_call_candidates(lines, node, parents)
        if isinstance(node, ast.AugAssign):
            found += augassign_candidates(lines, node)
    return found


def candidates(code):
    """Every single-line change of every kind to `code` (SD-3..5), keyed by kind. A body indented by
    k spaces is analysed dedented and its edits mapped back."""
    lines = code.split("\n")
    indent = min((len(x) - len(x.lstrip(" ")) for x in lines if x.strip()), default=0)
    flat = textwrap.dedent(code).split("\n")
    try:
        tree = ast.parse("\n".join(flat))
    except SyntaxError:
        return {}
    blocked = blocked_lines(tree)
    out = {}
    for edit in token_candidates(flat, blocked) + ast_candidates(flat, tree, blocked):
        if edit.new is not None:
            edit.new = " " * indent + edit.new if flat[edit.at] != lines[edit.at] else edit.new
        out.setdefault(edit.kind, []).append(edit)
    return out


def parses(lines):
    try:
        ast.parse(textwrap.dedent("\n".join(lines)))
        return True
    except SyntaxError:
        return False


# -- sources -----------------------------------------------------------------------------------

def skipped_path(rel):
    parts = Path(rel).parts
    name = parts[-1]
    return any(p in SKIP_DIRS or p.startswith("test_") for p in parts[:-1]) or name.startswith("test_") \
        or name.endswith("_test.py")


def sources(folder, hard):
    """SD-2: `[(rel path, name, code)]` from every parseable `*.py` under `folder`."""
    out = []
    root = Path(folder)
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if skipped_path(rel):
            continue
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        lines = text.split("\n")
        if hard:
            if FILE_LINES[0] <= len(text.splitlines()) <= FILE_LINES[1]:
                out.append((rel, "file", text.rstrip("\n")))
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                if FUNCTION_LINES[0] <= node.end_lineno - start + 1 <= FUNCTION_LINES[1]:
                    out.append((rel, node.name, "\n".join(lines[start - 1:node.end_lineno])))
    return out


# -- tasks ------------------------------------------------------------------------------------

def numbered(lines, start=1):
    """`"{i:>w}| {line}"` from line `start` on, w = the digits of the last number (SD-8, RB-6)."""
    width = len(str(start + len(lines) - 1))
    return "\n".join(f"{i:>{width}}| {line}" for i, line in enumerate(lines, start))


def wording(kinds, hard):
    """SD-8: one wording per run, never per task."""
    if set(kinds) <= set(TOKEN_KINDS):
        change = "one token changed"
    elif "remove-call" in kinds:
        change = "one line edited, or one line removed"
    else:
        change = "one small change to one line"
    hint = ""
    if not hard:
        labels = [HINTS[k] for k in kinds]
        hint = f" If there is a change, it is {', '.join(labels[:-1]) + ', or ' if len(labels) > 1 else ''}{labels[-1]}."
    gap = (" If a line was removed, name the line just before or just after the gap."
           if "remove-call" in kinds else "")
    return ("The code below is either exactly as its author wrote it, or has ONE change ({change}) that breaks "
            "the author's intent.{hint}\n\nYour first line must be exactly `FAULT: line <n>` (the line number as "
            "shown) or `NO FAULT`.{gap} Then at most three sentences. Plain ASCII.\n\n").format(
        change=change, hint=hint, gap=gap)


def slug(rel, name, hard):
    text = ("hard-" if hard else "") + f"{Path(rel).stem}-{name}".lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:40]


def answer_lines(edit, count):
    """SD-7 (1-based): the edited line; for a deleted one, the lines around the gap within range."""
    if edit.new is not None:
        return [edit.at + 1]
    return [n for n in (edit.at, edit.at + 1) if 1 <= n <= count]


def fault_keys(lines):
    """SD-10's bug keys (rebench's too, RB-7): the first line names one of `lines`; `NO FAULT` is invented.
    SU-20 reads the lines back from the label's digits, so its wording is part of the contract."""
    return {"must_find": [{"regex": r"^\W*fault:\s*line\s*(?:" + "|".join(map(str, lines)) + r")\b",
                           "label": "fault: line " + " or ".join(map(str, lines))}],
            "must_not_claim": ["no fault"]}


def no_fault_keys():
    """SD-10's control keys (rebench's too, RB-7): `NO FAULT` found; naming any line is invented."""
    return {"must_find": [{"any_of": ["no fault"]}],
            "must_not_claim": [{"regex": r"^\W*fault:\s*line", "label": "fault: line"}]}


def pair(rel, name, code, edit, preamble, repo, hard, ids):
    """The bug task and its control (SD-9, SD-10)."""
    lines = code.split("\n")
    changed = edit.apply(lines)
    keys = answer_lines(edit, len(changed))
    old = lines[edit.at].strip()
    new = "line removed" if edit.new is None else edit.new.strip()
    before = lines[edit.at - 1].strip() if edit.at > 0 else "(start)"
    after = lines[edit.at + 1].strip() if edit.at + 1 < len(lines) else "(end)"
    common = {"draft": True, "shape": "seeded", "repo": repo, "source": f"{rel}::{name}", "score_in": "first_line",
              "min_answer_chars": 8}
    bug = {"id": ids[0], **common, "kind": edit.kind, "title": f"seeded bug: {rel}::{name}",
           "why": (f"{rel}::{name}, line {edit.at + 1}, {edit.kind}: `{old}` -> `{new}` (line before: `{before}`; "
                   f"line after: `{after}`). Check that the change alters behaviour before removing draft."),
           "prompt": preamble + numbered(changed), **fault_keys(keys)}
    control = {"id": ids[1], **common, "title": f"seeded control: {rel}::{name}",
               "why": f"The untouched code of {rel}::{name}; its pair {ids[0]} changes line {edit.at + 1}.",
               "prompt": preamble + numbered(lines), **no_fault_keys()}
    return bug, control, f"`{old}` -> `{new}`"


def choose_edit(code, kinds, rng):
    """SD-6: draw a kind uniformly among those the source still has, then a candidate; the first that applies."""
    found = {k: list(v) for k, v in candidates(code).items() if k in kinds and v}
    lines = code.split("\n")
    while found:
        kind = rng.choice(sorted(found, key=KINDS.index))
        edit = found[kind].pop(rng.randrange(len(found[kind])))
        if not found[kind]:
            del found[kind]
        changed = edit.apply(lines)
        if changed != lines and parses(changed):
            return edit
    return None


def used_sources(loaded):
    return {t.get("source") for t in loaded if str(t["id"]).startswith("seeded-")}


def unique_ids(base, taken):
    n, stem = 1, base
    while f"seeded-{stem}-bug" in taken:
        n += 1
        stem = f"{base}-{n}"
    return f"seeded-{stem}-bug", f"seeded-{stem}-control"


def write_task(spec):
    folder = suite_tasks.tasks_dir() / spec["id"]
    fileio.make_folder(folder)
    fileio.write_atomic(folder / "task.json", json.dumps(spec, indent=2, ensure_ascii=False) + "\n")


def parse_kinds(text, hard):
    if not text:
        return list(KINDS) if hard else list(TOKEN_KINDS)
    asked = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in asked if k not in KINDS]
    if unknown:
        sys.exit(f"unknown kind(s): {', '.join(unknown)}; valid: {', '.join(KINDS)}")
    return [k for k in KINDS if k in asked]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.suite.seed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="default", help="a key of config/repos.json (default: default)")
    parser.add_argument("--count", type=int, default=6, help="pairs to write (default 6)")
    parser.add_argument("--seed", type=int, help="random seed (default: random)")
    parser.add_argument("--hard", action="store_true", help="whole files, no hint")
    parser.add_argument("--kinds", help="comma-separated kinds (default: the four token kinds; all with --hard)")
    args = parser.parse_args(argv)
    kinds = parse_kinds(args.kinds, args.hard)
    repos = suite_tasks.repos()
    if args.repo not in repos:
        sys.exit(f"no repo '{args.repo}' in config/repos.json (it has: {', '.join(sorted(repos)) or 'none'}); "
                 'add {"' + args.repo + '": "/path/to/checkout"}')
    rng = random.Random(args.seed)
    loaded = suite_tasks.load()
    used = used_sources(loaded)
    pool = [s for s in sources(repos[args.repo], args.hard)
            if f"{s[0]}::{s[1]}" not in used and any(candidates(s[2]).get(k) for k in kinds)]
    if not pool:
        sys.exit(f"no unused function has a change of these kinds ({', '.join(kinds)})")
    preamble = wording(kinds, args.hard)
    taken = {t["id"] for t in loaded}
    written = 0
    for rel, name, code in rng.sample(pool, min(args.count, len(pool))):
        edit = choose_edit(code, kinds, rng)
        if edit is None:
            continue
        ids = unique_ids(slug(rel, name, args.hard), taken)
        taken.update(ids)
        bug, control, change = pair(rel, name, code, edit, preamble, args.repo, args.hard, ids)
        write_task(bug)
        write_task(control)
        written += 1
        print(f"{rel}::{name} line {edit.at + 1} {edit.kind}: {change}  ->  {ids[0]}, {ids[1]}")
    print(f"{written} pair(s) written. Review each bug task's `why` before removing \"draft\": true.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
