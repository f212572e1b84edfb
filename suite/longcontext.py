"""The long-context tier (suite-cli-mcp.md §8, RQ-1..3; §12 OFF-3; §13.21): RepoQA's needle-function search.

    python -m benchwarmers.suite.longcontext --model ALIAS [--languages python] [--repos 2] [--context 16384]
                                [--timeout 420] [--score-only]

On demand only, never scheduled. Each chosen repository contributes all its needles (10 in RepoQA),
each asked with a context of `--context` tokens of the repository's code in which the needle sits
at depth (i+0.5)/n, front to back: "reproduce the function this description names". It needs the
optional third-party package `repoqa` (`pip install repoqa`; it downloads its dataset on first use).
Without it the command says so and exits 1; nothing here imports it before a run asks for it (RQ-3).

What the package gives, and why it is not redone here: the dataset, the contexts (cut to a token
budget with its tokenizer) and the scorer (comments removed with tree-sitter, then the answer's
similarity to every needle of the repository; found = the most similar is the one asked, at
similarity >= 0.8). A character-count cut or another similarity measure would be a different
benchmark under the same name, so without the package this tier does not run at all.

What is ours (RQ-2): every question goes through the suite's ask path (`suite/run.py`'s `ask`: the
alias's backend, retries of errors, the usage ledger), so a timeout, refusal or provider error is
classified as a non-answer and left out of the score instead of counted wrong. Under DATA (§13.21):
    runs/repoqa/ntoken_<context>/<model>.jsonl   one line per answer, appended as it arrives
    runs/repoqa-<date>.md                        the run note, appended (counts, table, non-answers)

Decisions where the contract is silent:
- Layout: the tier is `suite/longcontext.py`, not a top-level `repoqa/` folder: with the real package
  absent, `import repoqa` run from the checkout would find such a folder (as a namespace package), so "is
  the package installed?" would lie; and `suite` is what gets packaged.
- The scorer runs in this interpreter: the reference's separate scorer virtualenv (a Windows-only path,
  §13.21) is not carried over; install `repoqa` where the bench runs.
- Resuming: a task whose latest saved line is an answer is not asked again; a non-answer is. The latest
  line per task is the one scored. `--score-only` re-scores every task saved for the model at that
  context size (whatever `--languages`/`--repos` say), calls nothing, and appends a note marked re-scored.
- A non-answer is classified with `min_length` 1 (a one-line function is an answer).
- A scorer failure ends the run with a message; the answers are saved, so `--score-only` redoes it.
- The dataset, contexts and scorer are one `source` object, injected by tests (a tiny synthetic dataset);
  the package's is `Package`.
"""

import argparse
import datetime
import importlib
import re
import sys
import time

from ..core import fileio, paths
from ..models import scoring
from . import run as suite_run
from . import tasks as suite_tasks

LANGUAGES = ("python", "cpp", "java", "typescript", "rust")
MOST_REPOS = 10
THRESHOLD = 0.8
MIN_ANSWER = 1
NON_ANSWERS_LISTED = 10
INSTALL = ("the long-context tier needs the optional `repoqa` package (pip install repoqa; it downloads its "
           "dataset on first use)")


class Missing(RuntimeError):
    """The `repoqa` package cannot be imported."""


class Package:
    """The `repoqa` package's dataset, contexts and scorer, imported when a run starts (RQ-3)."""

    def __init__(self):
        try:
            self.data = importlib.import_module("repoqa.data")
            self.search = importlib.import_module("repoqa.search_needle_function")
            self.utility = importlib.import_module("repoqa.utility")
            self.scorer = importlib.import_module("repoqa.compute_score")
        except ImportError as exc:
            raise Missing(f"{INSTALL}: {exc}") from exc
        except Exception as exc:  # installed, but one of its own imports fails
            raise Missing(f"the `repoqa` package is installed but does not import ({type(exc).__name__}: {exc})") \
                from exc
        self.instruction = self.search.INSTRUCTION

    def dataset(self):
        """`{language: [repo, ...]}`, each repo with `repo`, `content`, `dependency` and `needles`."""
        return self.data.get_repoqa_data()

    def context(self, repo, needle, ratio, size, language):
        """`code_context`, `needle_token_start`, `needle_token_end`, `code_context_ntokens`."""
        files = [(path, repo["content"][path]) for path in self.utility.topological_sort(repo["dependency"])]
        return self.search.make_code_context(needle, files, position_ratio=ratio, code_context_size=size,
                                             language=language)

    def judge(self, answer, name, repo, language):
        """`(most similar needle's name, similarity)`."""
        _, best, similarity = self.scorer.needle_evaluator(answer, name, repo, language)
        return best, similarity


# -- asking -----------------------------------------------------------------------------------------

def answers_path(model, size):
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", model)
    return paths.file("runs", "repoqa", f"ntoken_{size}", f"{safe}.jsonl")


def task_id(language, repo, name):
    return f"{language}::{repo}::{name}"


def saved(path):
    """The latest saved line per task id, in first-seen order."""
    latest = {}
    for record in fileio.read_jsonl(path):
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            latest[record["id"]] = record
    return latest


def chosen(dataset, languages, repos):
    """RQ-1: `[(language, repo, needle index, needle)]`: the first `repos` repositories per language, every needle."""
    out = []
    for language in languages:
        for repo in (dataset.get(language) or [])[:repos]:
            needles = repo.get("needles") or []
            out += [(language, repo, i, needle) for i, needle in enumerate(needles)]
    return out


def question(instruction, code_context, description):
    """RepoQA's prompt: instruction, context, description, instruction again."""
    return f"{instruction}{code_context}\nFunction Description:{description}\n{instruction}"


def ask_all(source, dataset, model, languages, repos, size, timeout):
    """RQ-2: ask every chosen needle not answered yet, appending each answer as it arrives; the task ids."""
    path = answers_path(model, size)
    done = {key for key, record in saved(path).items() if record.get("kind") == "answered"}
    picked = chosen(dataset, languages, repos)
    ids = []
    for n, (language, repo, i, needle) in enumerate(picked, 1):
        key = task_id(language, repo["repo"], needle["name"])
        ids.append(key)
        if key in done:
            continue
        ratio = (i + 0.5) / len(repo["needles"])
        made = source.context(repo, needle, ratio, size, language)
        prompt = question(source.instruction, made["code_context"], needle["description"])
        text, seconds, attempts = suite_run.ask(model, prompt, timeout, MIN_ANSWER)
        found = scoring.outcome(text, MIN_ANSWER)
        fileio.append_jsonl(path, {
            "id": key, "language": language, "repo": repo["repo"], "name": needle["name"], "path": needle.get("path"),
            "position_ratio": ratio, **{k: v for k, v in made.items() if k != "code_context"},
            "model": model, "context": size, "output": [text], "kind": found[0] if found else "answered",
            "blocked": f"{found[0]}: {found[1]}" if found else None, "seconds": round(seconds, 1),
            "attempts": attempts, "at": datetime.datetime.now().isoformat(timespec="seconds")})
        print(f"   ({n}/{len(picked)}) {key}  {found[0] if found else 'answered'}  {seconds:.1f}s", flush=True)
    return ids


# -- scoring and the note ---------------------------------------------------------------------------

def judged(source, dataset, records):
    """Each record with `found` (None for a non-answer), `best` and `similarity` from the package's scorer."""
    repos = {(language, repo["repo"]): repo for language, items in dataset.items() for repo in items}
    out = []
    for record in records:
        record = dict(record, found=None, best=None, similarity=None)
        if record.get("kind") == "answered":
            repo = repos.get((record["language"], record["repo"]))
            if repo is not None:
                best, similarity = source.judge(record["output"][0], record["name"], repo, record["language"])
                record.update(best=best, similarity=similarity,
                              found=best == record["name"] and similarity >= THRESHOLD)
        out.append(record)
    return out


def table(records):
    """`[(language, tasks, answered, found)]`, then `all`."""
    rows = []
    for language in list(dict.fromkeys(r["language"] for r in records)) + ["all"]:
        mine = [r for r in records if language in ("all", r["language"])]
        answered = [r for r in mine if r["found"] is not None]
        rows.append((language, len(mine), len(answered), sum(1 for r in answered if r["found"])))
    return rows


def percent(found, answered):
    return f"{100 * found / answered:.1f}%" if answered else "—"


def note(model, size, records, rescored=False, now=None):
    """RQ-2's run note, appended to `runs/repoqa-<date>.md`; the path."""
    now = now or datetime.datetime.now()
    where = paths.file("runs", f"repoqa-{now:%Y-%m-%d}.md")
    blocked = [r for r in records if r["found"] is None]
    languages = {r["language"] for r in records}
    repos = {(r["language"], r["repo"]) for r in records}
    out = [f"## RepoQA `{model}`, {now:%Y-%m-%d %H:%M} ({size}-token context{', re-scored' if rescored else ''})", "",
           f"{len(records)} task(s): {len(languages)} language(s), {len(repos)} repo(s); "
           f"{len(records) - len(blocked)} answered, {len(blocked)} non-answer(s).", "",
           "| Language | Tasks | Answered | Found | Score |", "|---|---|---|---|---|"]
    out += [f"| {lang} | {tasks} | {answered} | {found} | {percent(found, answered)} |"
            for lang, tasks, answered, found in table(records)]
    out += ["", f"Found: the answer is most similar to the function asked for, at similarity >= {THRESHOLD}. "
                "Score: found / answered (a non-answer says nothing about long-context reading and is not scored)."]
    if blocked:
        out += ["", f"Non-answers ({min(len(blocked), NON_ANSWERS_LISTED)} of {len(blocked)} listed):"]
        out += [f"- {r['id']}: {r.get('blocked')}" for r in blocked[:NON_ANSWERS_LISTED]]
    out += ["", "Read the score downward: RepoQA's repositories are public code a model may have been trained on, "
                "so a high score can be memory as much as reading the context."]
    with open(where, "a", encoding="utf-8", opener=fileio.opener) as f:
        f.write("\n".join(out) + "\n\n")
    return where


# -- the command --------------------------------------------------------------------------------------

def languages_of(values, parser):
    asked = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = [lang for lang in asked if lang not in LANGUAGES]
    if unknown or not asked:
        parser.error(f"--languages: unknown {', '.join(unknown) or '(none given)'}; valid: {', '.join(LANGUAGES)}")
    return list(dict.fromkeys(asked))


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.suite.longcontext",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="one alias (ad hoc models too)")
    parser.add_argument("--languages", nargs="+", default=["python"],
                        help=f"of {', '.join(LANGUAGES)} (default python)")
    parser.add_argument("--repos", type=int, default=2,
                        help=f"repositories per language, 1 to {MOST_REPOS} (default 2)")
    parser.add_argument("--context", type=int, default=16384, help="context size in tokens (default 16384)")
    parser.add_argument("--timeout", type=float, default=420, help="seconds per call (default 420)")
    parser.add_argument("--score-only", action="store_true", help="re-score the saved answers, call nothing")
    args = parser.parse_args(argv)
    args.languages = languages_of(args.languages, parser)
    if not 1 <= args.repos <= MOST_REPOS:
        parser.error(f"--repos: 1 to {MOST_REPOS}")
    if args.context < 1:
        parser.error("--context: at least 1 token")
    return args


def main(argv=None, source=None):
    args = parse(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    try:
        source = source or Package()
    except Missing as exc:
        sys.exit(str(exc))
    path = answers_path(args.model, args.context)
    if not args.score_only and args.model not in suite_tasks.available_models(include_ad_hoc=True):
        sys.exit(f"{args.model} is not available (it must be registered, served by its endpoint now, and not failing "
                 "every perf reading); python -m benchwarmers.scripts.list_served shows what is served")
    if args.score_only and not saved(path):
        sys.exit(f"no saved answers for {args.model} at {args.context} tokens ({path})")
    try:
        dataset = source.dataset()
    except Exception as exc:  # the package's download: any failure is said, not a traceback
        sys.exit(f"could not load the RepoQA dataset: {exc}")
    started = time.monotonic()
    latest = saved(path)
    if args.score_only:
        records = list(latest.values())
    else:
        print(f"RepoQA: {args.model}, {', '.join(args.languages)}, {args.repos} repo(s) per language, "
              f"{args.context}-token context; answers in {path}", flush=True)
        try:
            ids = ask_all(source, dataset, args.model, args.languages, args.repos, args.context, args.timeout)
        except KeyboardInterrupt:
            print(f"\nstopped: the answers so far are saved in {path}", flush=True)
            return 130
        latest = saved(path)
        records = [latest[key] for key in ids if key in latest]
    try:
        records = judged(source, dataset, records)
    except Exception as exc:  # the third-party scorer
        sys.exit(f"scoring failed ({exc}); the answers are saved in {path}: run again with --score-only")
    print(f"\n{'language':<12} {'tasks':>5} {'answered':>8} {'found':>5}  score")
    for lang, tasks, answered, found in table(records):
        print(f"{lang:<12} {tasks:>5} {answered:>8} {found:>5}  {percent(found, answered)}")
    print(f"written: {note(args.model, args.context, records, args.score_only)} ({time.monotonic() - started:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
