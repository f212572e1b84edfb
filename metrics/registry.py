"""Registrations: which alias calls which served model, on which endpoint (REG-1..9).

The canonical file is `DATA/config/extra-openai-models.yaml`, the format llm's
own `extra-openai-models.yaml` uses, so `sync_to_llm()` can hand the llm CLI an
exact copy (and `push_options()` the per-alias request defaults, REG-8). Those two,
`pull_from_llm()` and `in_sync()` are what `scripts/sync_config.py` runs (REG-9).
It is read with a line parser, never a YAML library (REG-2): the writers here
emit a fixed shape (REG-1) and anything else is skipped.

Which endpoint an alias is on is answered here (`endpoint_of`, `entry_of`, EP-9,
EP-10): registrations point at endpoints, and endpoints.py knows no alias.

Reads are cached by the file's stat, so the client's hot path does not re-parse
the file on every call. Callers must not mutate what the readers return.
"""

import re
import time

from metrics import endpoints, fileio, paths

NAME = "extra-openai-models.yaml"

ENTRY = re.compile(r"^\s*-\s+model_id:(.*)$")
HEADER = re.compile(r"^ {4}(\S[^:]*):(.*)$")
FIELD = re.compile(r"^ {2}(\w+):(.*)$")
QUOTE_IF = (":", "/", "@")


def path():
    return paths.file("config", NAME)


def llm_path():
    return paths.llm_dir() / NAME


def _value(raw):
    return raw.strip().strip("\"'")


def parse(text):
    """`{alias: {"model_name", "api_base", "api_key_name", "headers": {...}, ...}}` from yaml text (REG-2)."""
    entries = {}
    current = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        start = ENTRY.match(line)
        if start:
            alias = _value(start.group(1))
            current = entries.setdefault(alias, {"headers": {}})  # a repeated alias merges into the first
            continue
        if current is None:
            continue
        header = HEADER.match(line)
        if header:
            current["headers"][header.group(1).strip()] = _value(header.group(2))
            continue
        field = FIELD.match(line)
        if field and field.group(1) != "headers":
            current[field.group(1)] = _value(field.group(2))
    return entries


_cache = (None, None)  # ((path, mtime_ns, size, inode), parsed)


def registrations():
    """Every registration by alias (REG-3); `{}` when the file is missing (a fresh install)."""
    global _cache
    where = str(path())
    stamp = fileio.stamp(where)
    if stamp is None:
        return {}
    key = (where, *stamp)
    if _cache[0] != key:
        try:
            with open(where, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return {}
        _cache = (key, parse(text))
    return _cache[1]


def registration(alias):
    """One alias's registration, or None."""
    return registrations().get(alias)


def registered_models():
    """Aliases in file order (REG-5)."""
    return list(registrations())


def names():
    """`{alias: served name or ""}` (REG-5's `_registered_names`)."""
    return {alias: reg.get("model_name") or "" for alias, reg in registrations().items()}


def registry():
    """`[{"alias", "served", "endpoint"}]` in file order; endpoint by EP-9, else `"?"` (REG-4)."""
    return [
        {"alias": alias, "served": reg.get("model_name") or "", "endpoint": endpoints.endpoint_name(reg) or "?"}
        for alias, reg in registrations().items()
    ]


def endpoint_of(alias):
    """The name of the endpoint `alias` is registered on (EP-9), or None."""
    return endpoints.endpoint_name(registration(alias))


def entry_of(alias):
    """The entry of the endpoint `alias` is registered on; `{}` when unknown (EP-10)."""
    name = endpoint_of(alias)
    return endpoints.readable().get(name, {}) if name else {}


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
    """The registration text for one alias on one endpoint entry, exactly as REG-1 writes it."""
    name = f'"{served}"' if any(c in served for c in QUOTE_IF) else served
    key_name = entry.get("key") or '""'  # a keyless local runtime
    lines = [
        "",
        f"- model_id: {alias}",
        f"  model_name: {name}",
        f'  api_base: "{entry.get("base", "")}"',
        f"  api_key_name: {key_name}",
    ]
    headers = entry.get("headers")
    if isinstance(headers, dict) and headers:
        lines.append("  headers:")
        lines.extend(f'    {header}: "{value}"' for header, value in headers.items())
    return "\n".join(lines) + "\n"


def _read_text(where):
    try:
        with open(where, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def add_registration(alias, served, endpoint_name):
    """Append `alias` → `served` on endpoint `endpoint_name` (REG-1), locked and atomic.

    Raises ValueError for an alias already registered or an unknown endpoint:
    a registration is never silently replaced.
    """
    entry = endpoints.load().get(endpoint_name)
    if not isinstance(entry, dict) or not entry.get("base"):
        raise ValueError(f"no endpoint named '{endpoint_name}'")
    where = path()
    with fileio.lock(where):
        text = _read_text(where)
        if alias in parse(text):
            raise ValueError(f"'{alias}' is already registered")
        if text and not text.endswith("\n"):
            text += "\n"
        fileio.write_atomic(where, text + block(alias, served, entry))


def remove_registration(alias):
    """Take every block registered as `alias` out of the file; whether there was one."""
    where = path()
    with fileio.lock(where):
        lines = _read_text(where).splitlines(keepends=True)
        kept, inside, found = [], False, False
        for line in lines:
            start = ENTRY.match(line)
            if start:
                inside = _value(start.group(1)) == alias
                if inside:
                    found = True
                    if kept and not kept[-1].strip():
                        kept.pop()  # the blank line REG-1 writes before each block
                    continue
            elif inside and line.startswith(" ") and line.strip():
                continue
            else:
                inside = False
            kept.append(line)
        if found:
            fileio.write_atomic(where, "".join(kept))
    return found


def _copy(source, target):
    """Copy `source` over `target`, keeping the overwritten file as `<name>.<YYYYmmddTHHMMSS>.bak` (REG-9)."""
    text = source.read_text(encoding="utf-8")
    before = _read_text(target) if target.exists() else None
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
    if not source.exists():
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
    if not source.exists() or not target.exists():
        return False
    return source.read_bytes() == target.read_bytes()
