"""Registrations: which alias calls which served model, on which endpoint (REG-1..9).

The canonical file is `DATA/config/extra-openai-models.yaml`, the format llm's
own `extra-openai-models.yaml` uses, so `sync_to_llm()` can hand the llm CLI an
exact copy (and `push_options()` the per-alias request defaults, REG-8). Those two,
`pull_from_llm()` and `in_sync()` are what `scripts/sync_config.py` runs (REG-9).

It is read as llm reads it, with `yaml.safe_load` (PyYAML comes with llm). REG-2's
line parser misread YAML that llm reads: flow-style `headers: {...}`, quoted values
holding `: `, comments after values, lists such as `aliases` (issue 13, item 9).
A file that is not YAML, or not a list of registrations, registers nothing and says
why: `problem()` names the file and the line, a call's error and `/health` repeat it,
and no request fails on it. The writers still emit REG-1's fixed shape, appended or
cut out as text, so the rest of the file, comments included, stays as written.

Which endpoint an alias is on is answered here (`endpoint_of`, `entry_of`, EP-9,
EP-10): registrations point at endpoints, and endpoints.py knows no alias.

Reads are cached by the file's stat, so the client's hot path does not re-parse
the file on every call. Callers must not mutate what the readers return.

The decision models (`config/decision-models.json`, `decision_models()`) are registered here too: models
put questions to through an endpoint's Decisions API, never called for chat, so never in the yaml.
"""

import dataclasses
import re
import time
from collections.abc import Mapping
from typing import Any

from ..core import fileio, paths, records
from ..core.errors import Invalid, Unusable
from . import endpoints

NAME = "extra-openai-models.yaml"
SHOWN = f"config/{NAME}"  # as errors name it: /health answers anyone, so never the full path
QUOTE_IF = (":", "/", "@")
TEXT_FIELDS = ("model_name", "api_base", "api_key_name")  # what the client sends: text, whatever YAML made of it
DECISIONS = "decision-models.json"


class Broken(Unusable, ValueError):
    """The registrations file is not one llm could read; the text names the file and where."""


def path():
    return paths.file("config", NAME)


def llm_path():
    return paths.llm_dir() / NAME


def _text(value):
    """A scalar as text: YAML reads `model_name: 3.5` as a number, which the client sends as a string."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def _items(text):
    """The file's list of registration blocks as YAML reads it; Broken when it is not YAML or not a list."""
    import yaml  # issue 35: PyYAML's ~10 ms of import is paid by the first file read, not by every start
    try:
        found = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise Broken(f"{SHOWN} is not valid YAML ({where}{exc.problem or exc.context})") from None
    except (yaml.YAMLError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise Broken(f"{SHOWN} is not valid YAML ({type(exc).__name__}: {exc})") from None
    if found is None:
        return []
    if not isinstance(found, list):
        raise Broken(f"{SHOWN} is not a list of registrations (`- model_id: ...` blocks); "
                     f"it holds a {type(found).__name__}")
    return found


def _alias(item):
    """The alias a block registers, `""` for a block that registers none (no `model_id`, or not a mapping)."""
    return _text(item.get("model_id")) if isinstance(item, dict) else ""


@dataclasses.dataclass(frozen=True)
class Registration:
    """One alias's block of config/extra-openai-models.yaml, as llm reads it (REG-1, REG-2):

        - model_id: <alias>
          model_name: <served>          (quoted when it holds `:`, `/` or `@`)
          api_base: "<endpoint base>"
          api_key_name: <key name>
          headers:                      (optional)
            K: "v"

    The three fields the client sends, and the headers' values, are text whatever YAML made of them
    (`model_name: 3.5` is "3.5"; absent is ""). Every other field llm takes (`aliases`, `can_stream`,
    `supports_tools`, ...) is kept in `extra` as YAML read it: the bench sends none of them, llm reads them
    from its own copy of the file."""

    alias: str
    model_name: str = ""
    api_base: str = ""
    api_key_name: str = ""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _registration(alias: str, fields: dict[str, Any]) -> Registration:
    known = {name: fields.pop(name) for name in TEXT_FIELDS if name in fields}
    return Registration(alias, headers=fields.pop("headers"), extra=fields, **known)


def parse(text: str) -> dict[str, Registration]:
    """`{alias: Registration}` from yaml text, in file order.

    A repeated alias merges into the first, later fields winning (REG-2); blocks without a `model_id`
    are skipped. Raises Broken when llm could not read the text.
    """
    entries: dict[str, dict[str, Any]] = {}
    for item in _items(text):
        alias = _alias(item)
        if not alias:
            continue
        current = entries.setdefault(alias, {"headers": {}})
        for field, value in item.items():
            if field == "headers":
                if isinstance(value, dict):
                    current["headers"].update((str(k), _text(v)) for k, v in value.items())
            elif field != "model_id":
                current[str(field)] = _text(value) if field in TEXT_FIELDS else value
    return {alias: _registration(alias, fields) for alias, fields in entries.items()}


def _parsed(text):
    """`(registrations, problem)`: a broken file registers nothing, and `problem` says what to fix."""
    try:
        return parse(text), ""
    except Broken as exc:
        return {}, f"{exc}; fix it or restore it — no model can be called until then"


_cache = (None, {}, "")  # ((path, mtime_ns, size, inode), registrations, problem)


def _read():
    """`(registrations, problem)` for the file as it is now, parsed again only when its stat changed."""
    global _cache
    where = str(path())
    stamp = fileio.stamp(where)
    if stamp is None:
        return {}, ""
    key = (where, *stamp)
    if _cache[0] != key:
        try:
            # a byte that is not UTF-8 reads as U+FFFD rather than failing every call that reads the file
            text = fileio.read_text(where, errors="replace")
        except OSError:
            return {}, ""
        _cache = (key, *_parsed(text))
    return _cache[1], _cache[2]


def registrations():
    """Every registration by alias (REG-3); `{}` when the file is missing (a fresh install) or broken (`problem()`)."""
    return _read()[0]


def problem():
    """Why the registrations file registers nothing, naming it and the line; `""` when it reads (or is missing)."""
    return _read()[1]


def registration(alias):
    """One alias's registration, or None."""
    return registrations().get(alias)


def registered_models():
    """Aliases in file order (REG-5): `perf/run.py`'s default models."""
    return list(registrations())


def names():
    """`{alias: served name or ""}` (REG-5's `_registered_names`)."""
    return {alias: reg.model_name for alias, reg in registrations().items()}


def registry():
    """`[{"alias", "served", "endpoint"}]` in file order; endpoint by EP-9, else `"?"` (REG-4)."""
    return [
        {"alias": alias, "served": reg.model_name, "endpoint": endpoints.endpoint_name(reg) or "?"}
        for alias, reg in registrations().items()
    ]


def endpoint_of(alias):
    """The name of the endpoint `alias` is registered on (EP-9), or None."""
    return endpoints.endpoint_name(registration(alias))


def entry_of(alias):
    """The endpoint `alias` is registered on; an empty `Endpoint` (named "") when unknown (EP-10)."""
    name = endpoint_of(alias)
    found = endpoints.readable().get(name) if name else None
    return found or endpoints.Endpoint("")


@dataclasses.dataclass(frozen=True)
class DecisionModel:
    """One entry of config/decision-models.json, `{alias: {served, endpoint, via, path, question_types: [...],
    onboarded: "YYYY-MM-DD"}}` (OB-5): a model asked through endpoint `via`'s Decisions API (`path` under its
    `decisions` URL, "decisions" when none) the question types it takes. A field of the wrong type reads as
    absent; `stored` is the entry as written, which retiring keeps whole to restore it (MP-12)."""

    alias: str
    served: str
    endpoint: str
    via: str
    path: str
    question_types: tuple[str, ...]
    onboarded: str
    stored: Mapping[str, Any]


def decisions_path():
    return paths.file("config", DECISIONS)


def _decision(alias: str, entry: Mapping[str, Any]) -> DecisionModel:
    return DecisionModel(alias, records.string(entry.get("served")), records.string(entry.get("endpoint")),
                         records.string(entry.get("via")), records.string(entry.get("path")),
                         records.strings(entry.get("question_types")), records.string(entry.get("onboarded")),
                         entry)


_decisions: tuple[object, dict[str, DecisionModel]] = (None, {})  # (the file's cached object, its records)


def decision_models() -> dict[str, DecisionModel]:
    """Every decision model by alias, in file order; an entry that is no object is none. `{}` when the file is
    missing or unreadable. Made again only when the file changed (the parse is `fileio.read_json`'s, cached by
    the file's stat)."""
    global _decisions
    data = fileio.read_json(decisions_path())
    if _decisions[0] is not data:
        _decisions = (data, {alias: _decision(alias, entry) for alias, entry in data.items()
                             if isinstance(entry, dict)})
    return _decisions[1]


def options_path():
    return paths.file("config", "model-options.json")


def options(alias):
    """Request defaults for `alias` from `config/model-options.json` (REG-8), `{}` when none or not an object."""
    value = fileio.read_json(options_path()).get(alias)
    return value if isinstance(value, dict) else {}


def push_options():
    """Hand every alias's request defaults to llm (REG-8); returns how many options were pushed.

    The reference runs `llm models options set <alias> <name> <value>` once per option when
    `llm` is on PATH. That command only writes `LLMDIR/model_options.json`; this writes the
    same file in one locked, atomic update instead (a subprocess per option costs about half
    a second each), whether or not the CLI is installed, since the in-process llm backend
    reads it too. Values keep their JSON type (the CLI would store "0.3" as text; llm accepts
    both). Options llm holds for other aliases, or that DATA does not name, are left alone.
    """
    wanted = {alias: dict(found) for alias, found in fileio.read_json(options_path()).items()
              if isinstance(found, dict) and found}
    if not wanted:
        return 0

    def change(data):
        for alias, found in wanted.items():
            current = data.get(alias) if isinstance(data.get(alias), dict) else {}
            data[alias] = {**current, **found}

    fileio.update(paths.llm_dir() / "model_options.json", change)
    return sum(len(found) for found in wanted.values())


def block(alias, served, entry):
    """The registration text for one alias on one endpoint, exactly as REG-1 writes it."""
    name = f'"{served}"' if any(c in served for c in QUOTE_IF) else served
    key_name = entry.key or '""'  # a keyless local runtime
    lines = [
        "",
        f"- model_id: {alias}",
        f"  model_name: {name}",
        f'  api_base: "{entry.base}"',
        f"  api_key_name: {key_name}",
    ]
    if entry.headers:
        lines.append("  headers:")
        lines.extend(f'    {header}: "{value}"' for header, value in entry.headers.items())
    return "\n".join(lines) + "\n"


def _read_text(where):
    try:
        return fileio.read_text(where)
    except FileNotFoundError:
        return ""


def add_registration(alias, served, endpoint_name):
    """Append `alias` → `served` on endpoint `endpoint_name` (REG-1), locked and atomic.

    Raises `Invalid` (a ValueError) for an alias already registered or an unknown endpoint, `Broken` for a
    file llm could not read: a registration is never silently replaced, nor written where llm would not see it.
    """
    entry = endpoints.load().get(endpoint_name)
    if entry is None or not entry.base:
        raise Invalid(f"no endpoint named '{endpoint_name}'")
    where = path()
    with fileio.lock(where):
        text = _read_text(where)
        if alias in parse(text):
            raise Invalid(f"'{alias}' is already registered")
        if text and not text.endswith("\n"):
            text += "\n"
        text += block(alias, served, entry)
        if alias not in _parsed(text)[0]:  # a flow-style list, say: a block appended to it is not part of it
            raise Invalid(f"{SHOWN} is not written as `- model_id:` blocks; add '{alias}' to it by hand")
        fileio.write_atomic(where, text)


def _id_lines(text, alias):
    """Line numbers of `model_id: <alias>` in the file's text (a block's first line), as written."""
    pattern = re.compile(r"^(\s*-?\s*model_id:\s*)" + re.escape(alias) + r"\s*$")
    return [n for n, line in enumerate(text.split("\n")) if pattern.match(line)]


def blocks_of(alias):
    """How many lines of the file start a block `model_id: <alias>`, as written (not as YAML merges them): the
    dashboard renames or retires an alias only when there is exactly one (MP-8, MP-10, IMP-4)."""
    return len(_id_lines(_read_text(path()), alias))


def rename(old, new):
    """Rewrite the one `model_id: <old>` line to `new` (MP-8), locked and atomic; every other line as written.
    The caller has checked `blocks_of(old) == 1`."""
    where = path()
    with fileio.lock(where):
        lines = _read_text(where).split("\n")
        n = _id_lines("\n".join(lines), old)[0]
        lines[n] = re.sub(r"model_id:\s*.*$", f"model_id: {new}", lines[n])
        fileio.write_atomic(where, "\n".join(lines))


def _first_line(node, lines):

    """The line a block starts on: its first key's, or the one before when the block's `-` stands alone there."""
    line, column = node.start_mark.line, node.start_mark.column
    if line and not lines[line][:column].strip() and lines[line - 1].strip() == "-":
        return line - 1
    return line


def _last_line(node):
    """The last line a node is written on. A block collection's end mark lies at whatever follows it (past
    comments), so its last value's is taken; an end mark at column 0 (after a `|` scalar) is the line before's."""
    import yaml
    while isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(node, yaml.MappingNode) else last
    mark = node.end_mark
    return mark.line - 1 if mark.column == 0 and mark.line > node.start_mark.line else mark.line


def _blocks(text):
    """`[(alias, first line, last line)]` for each block in `text` (0-based, inclusive), as YAML reads them."""
    import yaml
    items = _items(text)
    if not items:
        return []
    lines = text.splitlines()
    nodes = yaml.compose(text, Loader=yaml.SafeLoader).value
    return [(_alias(item), _first_line(node, lines), _last_line(node)) for item, node in zip(items, nodes)]


def _cut(alias, blocks, i, lines):
    """The lines block `i` is written on, with the blank line REG-1 writes before it; ValueError when it shares
    a line with another block (a flow-style list): cutting it out as text would take that one too."""
    _, first, last = blocks[i]
    if (i and blocks[i - 1][2] >= first) or (i + 1 < len(blocks) and blocks[i + 1][1] <= last):
        raise Invalid(f"'{alias}' shares a line of {SHOWN} with another registration; take it out by hand")
    if first and not lines[first - 1].strip():
        first -= 1
    return range(first, last + 1)


def remove_registration(alias):
    """Take every block registered as `alias` out of the file; whether there was one. Retiring a model calls
    it (`admin.modeledit`, which the model popup and auto-retire both go through).
    Blocks are found as YAML reads them; every other line is kept as written."""
    where = path()
    with fileio.lock(where):
        text = _read_text(where)
        lines = text.splitlines(keepends=True)
        blocks = _blocks(text)
        cut = {n for i, found in enumerate(blocks) if found[0] == alias for n in _cut(alias, blocks, i, lines)}
        if cut:
            fileio.write_atomic(where, "".join(line for n, line in enumerate(lines) if n not in cut))
    return bool(cut)


def repoint(served_by_alias):
    """Rewrite the `model_name:` line of each alias's block to its new served id (quoted as REG-1 quotes it);
    the aliases repointed. Every other line is kept as written (reprefix, RP-3)."""
    where = path()
    done = []
    with fileio.lock(where):
        text = _read_text(where)
        lines = text.splitlines(keepends=True)
        for alias, first, last in _blocks(text):
            if alias not in served_by_alias:
                continue
            served = served_by_alias[alias]
            name = f'"{served}"' if any(c in served for c in QUOTE_IF) else served
            for n in range(first, last + 1):
                found = re.match(r"^(\s*-?\s*model_name:\s*)\S.*?(\r?\n)?$", lines[n])
                if found:
                    lines[n] = found.group(1) + name + (found.group(2) or "")
                    done.append(alias)
                    break
        if done:
            fileio.write_atomic(where, "".join(lines))
    return done


def _copy(source, target):
    """Copy `source` over `target`, keeping the overwritten file as `<name>.<YYYYmmddTHHMMSS>.bak` (REG-9)."""
    text = fileio.read_text(source)
    before = _read_text(target) if fileio.exists(target) else None
    if before == text:
        return "identical: nothing to copy"
    backup = ""
    if before is not None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        saved = target.with_name(f"{target.name}.{stamp}.bak")
        fileio.write_atomic(saved, before)
        backup = f" (the old one kept as {saved.name})"
    fileio.write_atomic(target, text)
    return f"copied {source} to {target}{backup}"


def sync_to_llm():
    """Copy DATA's registrations to llm's user folder; a sentence saying what happened.

    Raises FileNotFoundError when DATA has no registrations file.
    """
    source = path()
    if not fileio.exists(source):
        raise FileNotFoundError(f"{source} does not exist: nothing to sync")
    return _copy(source, llm_path())


def pull_from_llm():
    """Copy llm's registrations back into DATA (REG-9 `--pull`); raises FileNotFoundError when it has none."""
    source = llm_path()
    if not source.exists():
        raise FileNotFoundError(f"{source} does not exist: nothing to pull")
    with fileio.lock(path()):
        return _copy(source, path())


def in_sync():
    """Whether llm's copy is identical to DATA's (REG-9 `--check`); False when either is missing."""
    source, target = path(), llm_path()
    if not fileio.exists(source) or not target.exists():
        return False
    return fileio.read_text(source, errors="replace") == target.read_text(encoding="utf-8", errors="replace")
