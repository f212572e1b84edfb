"""The suite's tasks and who answers them (suite-cli-mcp.md §2.1, §2.5: SU-1..5, SU-22..26).

A task is `DATA/suite/tasks/<dir>/task.json`, optional `fixtures/`, and `output/<alias>.md`, the
saved answers (SU-30). Everything that picks tasks or models for a run lives here, so the runner,
the paced runner and auto-retire read the same rules.

Decisions beyond the reference (§13):
- 7: `--next` counts a model complete against the tasks a run would ask (non-draft), not every
  task directory, so one draft does not leave every model incomplete for ever.
- 11: two attachments that both fall back to the same `fixtures/<basename>` make the task skipped
  with a message naming both, instead of one silently standing in for the other.
- 12: `title` defaults to the task id.
- A `task.json` that does not parse (or is not an object) is skipped with a message naming it; the
  other tasks run (one broken file must not stop a scheduled pass).
- Models are named by alias everywhere; an alias's saved output is `output/<alias>.md`, which is
  where `metrics/models/history.py` reads it for the router.
"""

import csv
import json
import os
from pathlib import Path

from ..core import fileio, paths
from ..models import endpoints, registry, scoring
from ..providers import renewal
from ..panel import roles

PER_RUN = 6
LIST_TIMEOUT = 20
STARTER = Path(__file__).resolve().parent / "starter"  # CODE's starter pack (ST-1, ST-3)


class Unready(Exception):
    """A task that cannot be asked as it stands (an attachment is missing): skipped, never fatal (SU-5)."""


def tasks_dir():
    return Path(paths.file("suite", "tasks"))


def copy_starter(folder):
    """ST-3: copy CODE's starter tasks into `<folder>/suite/tasks`, never over a file that is there.
    Returns how many files were copied (init counts them with the shipped config, IN-2)."""
    target_root = Path(folder) / "suite" / "tasks"
    copied = 0
    for source in sorted(STARTER.rglob("*")):
        if not source.is_file():
            continue
        target = target_root / source.relative_to(STARTER)
        fileio.make_folder(target.parent)
        try:
            with open(source, "rb") as src, open(target, "xb", opener=fileio.opener) as dst:  # "x": never overwrite
                dst.write(src.read())
            copied += 1
        except FileExistsError:
            pass
    return copied


def load(warn=None):
    """Every task in sorted directory order (SU-1), `dir` attached, `id` and `title` defaulted."""
    found = []
    root = tasks_dir()
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return found
    for folder in folders:
        spec_path = folder / "task.json"
        if not spec_path.is_file():
            continue
        try:
            spec = json.loads(spec_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            spec = exc
        if not isinstance(spec, dict):
            if warn:
                warn(f"skipped {folder.name}: task.json does not read as a JSON object ({spec})")
            continue
        spec["dir"] = folder
        spec.setdefault("id", folder.name)
        spec["title"] = spec.get("title") or spec["id"]
        found.append(spec)
    return found


def select(tasks, task_id=None):
    """SU-2: the one task called `task_id` (drafts included), else every non-draft task."""
    if task_id is None:
        return [t for t in tasks if not t.get("draft")]
    chosen = [t for t in tasks if t["id"] == task_id]
    if not chosen:
        raise SystemExit(f"no task called '{task_id}'")
    return chosen[:1]


def repos():
    """SU-3: `config/repos.json` as `{key: folder}`; `_` keys and non-strings ignored; `{}` when unreadable."""
    data = fileio.read_json(paths.file("config", "repos.json"))
    return {k: v for k, v in data.items() if not k.startswith("_") and isinstance(v, str)}


def attachment(task, rel, mapped):
    """The file an `attach` entry names (SU-4): the repo's copy when mapped and present, else the fixture."""
    if mapped:
        candidate = Path(os.path.expanduser(mapped)) / rel
        if candidate.is_file():
            return candidate
    return task["dir"] / "fixtures" / Path(rel).name


def prompt(task):
    """SU-4: the stripped prompt, a blank line, then each attachment under its header. Unready (SU-5, §13.11)."""
    key = task.get("repo") or "default"
    mapped = repos().get(key)
    parts = [str(task.get("prompt") or "").strip(), ""]
    fallbacks = {}
    for rel in task.get("attach") or []:
        where = attachment(task, rel, mapped)
        if not where.is_file():
            note = "" if mapped else f" (no repo '{key}' is in config/repos.json and no fixture exists)"
            raise Unready(f"attachment not found: {rel}{note}")
        if where.parent == task["dir"] / "fixtures":
            if where.name in fallbacks:
                raise Unready(f"attachments {fallbacks[where.name]} and {rel} both fall back to fixtures/{where.name}")
            fallbacks[where.name] = rel
        parts += [f"===== FILE: {rel} =====", where.read_bytes().decode("utf-8", "replace"), ""]
    return "\n".join(parts)


def output_path(task, alias):
    """SU-30: where `alias`'s answer to `task` is saved (and where metrics/models/history.py reads it)."""
    return task["dir"] / "output" / f"{alias}.md"


def saved(task, alias):
    """The saved answer's text, or None when there is none."""
    try:
        return output_path(task, alias).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def save(task, alias, text):
    where = output_path(task, alias)
    fileio.make_folder(where.parent)
    fileio.write_atomic(where, text)


def saved_mtime(task, alias):
    try:
        return output_path(task, alias).stat().st_mtime
    except OSError:
        return None


def answered(task, alias):
    """Whether the saved answer scores as an answer today (SU-21: re-scored, never stored)."""
    text = saved(task, alias)
    return text is not None and scoring.score(task, text)["kind"] == "answered"


# -- models ------------------------------------------------------------------------------------

def registered_models():
    """SU-22: every alias of the canonical registrations, in file order; `[]` on a fresh install."""
    return registry.registered_models()


def ad_hoc_models():
    """SU-22: never picked automatically; naming them with `--model` works."""
    return sorted(roles.ad_hoc())


def is_free(alias):
    return ":free" in registry.names().get(alias, "")


def live_names():
    """The union of every endpoint's live `/models`, or None when the default endpoint cannot be reached
    (then nothing is filtered: an outage is not evidence, SU-23)."""
    try:
        found = endpoints.load()
        default = endpoints.default() if found else None
    except RuntimeError:
        return None
    names = set()
    for name in found:
        try:
            names.update(renewal.models(name, timeout=LIST_TIMEOUT))
        except Exception:  # any failure to list is "unreachable"
            if name == default:
                return None
    return names


def perf_answered():
    """`{alias: whether any perf row answered}` for the aliases with perf history."""
    seen = {}
    try:
        with open(paths.file("perf", "history.csv"), encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                alias = (row.get("model") or "").strip()
                try:
                    ok = int(str(row.get("answered") or "0").strip() or 0) > 0
                except ValueError:
                    ok = False
                if alias:
                    seen[alias] = seen.get(alias, False) or ok
    except OSError:
        pass
    return seen


def available_models(include_ad_hoc=False):
    """SU-23: registered, minus ad hoc (unless included), minus those not served anywhere now, minus
    those with perf history and no answered row ever (unmeasured is not failing). A model that answered
    once and then stopped stays here: auto-retire is what notices it (§13.6 keeps this rule)."""
    models = registered_models()
    if not models:
        return []
    if not include_ad_hoc:
        held = roles.ad_hoc()
        models = [m for m in models if m not in held]
    live = live_names()
    if live is not None:
        served = registry.names()
        models = [m for m in models if served.get(m) in live]
    history = perf_answered()
    return [m for m in models if history.get(m, True)]


def is_gap(task, alias):
    """SU-24: no saved answer, or a saved one that failed for capacity (asking again may work)."""
    text = saved(task, alias)
    return text is None or scoring.failure_class(text, task.get("min_answer_chars", scoring.DEFAULT_MIN)) == "capacity"


def pick_tasks(tasks, alias, n=PER_RUN):
    """SU-24: the first `n` gaps in load order; with none, the `n` tasks answered longest ago."""
    gaps = [t for t in tasks if is_gap(t, alias)]
    if gaps:
        return gaps[:n]
    return sorted(tasks, key=lambda t: saved_mtime(t, alias) or 0)[:n]


def _scored(tasks, alias):
    """(tasks with a saved output, newest output mtime or None)."""
    times = [m for m in (saved_mtime(t, alias) for t in tasks) if m is not None]
    return len(times), max(times, default=None)


def next_model(tasks, models):
    """SU-26: the first never-scored model; else incomplete before complete, then the oldest newest answer."""
    for alias in models:
        if _scored(tasks, alias)[0] == 0:
            return alias
    if not models:
        return None
    return min(models, key=lambda m: (_scored(tasks, m)[0] >= len(tasks), _scored(tasks, m)[1]))


def next_free(tasks, models):
    """SU-25: the first `:free` model with no saved output at all, else the one whose newest is oldest."""
    for alias in models:
        if _scored(tasks, alias)[0] == 0:
            return alias
    if not models:
        return None
    return min(models, key=lambda m: _scored(tasks, m)[1])
