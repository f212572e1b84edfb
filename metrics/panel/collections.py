"""Collections: named groups of aliases that a client calls as `bench/<name>` (gateway.md §4, §11).

This module owns `config/collections.json` (`load()`: `{name: Collection}`) and
`config/gateway.json` (`settings()`: a `Settings`), and reads both afresh on each
call (an edit applies to the next request) through `fileio.read_json`, which
re-parses a file only when it changed; the records are made again only then too.
They are shared with that cache: callers must not mutate them.


A broken file is said, never read around in silence: a request naming a collection
while collections.json cannot be read, or naming one whose fields have the wrong
types, meets `Broken` (503, naming the file and the fault); gateway.json that cannot
be read serves the defaults and says so once on stderr and on `GET /health`.

COL-10's self-checks (COL-3..5, COL-7) are tests in tests/test_collections.py.
"""

import dataclasses
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..core import console, fileio, paths, records
from ..models import connections, registry
from . import policy
from ..core.errors import Broken

COLLECTIONS = "collections.json"
SETTINGS = "gateway.json"
PREFIX = "bench/"
REPLIES = ("all", "merged", "route", "council")
REPLY_WORDS = '"all", "merged", "route" or "council"'
ORDERS = (1, 2)  # a council's rankers see the answers in one order, or in it and its reverse (CNC-3)
EXPLORER_CLAMP = 2  # the router never seats more than two explorers, whatever the settings say
CAPABILITIES = ("tools", "vision", "structured_output", "reasoning")
LIMITS = ("rpm", "rpd", "tpm", "tpd")
TEXT_FIELDS = {"merger": "a model alias (a string)", "shape": "a shape name (a string)",
               "description": "text (a string)", "note": "text (a string)"}
FIX = "fix it in that file or in the dashboard's Collections dialog"
Named = TypeVar("Named")  # what a client sent as a model name: checked for text at run time


@dataclasses.dataclass(frozen=True)
class Collection:
    """One entry of config/collections.json (gateway.md §2): `{name: {"members": [alias...], "description"?,
    "note"? (the legacy description), "tags"?: [word...], "shape"?, "reply"?: "all" | "merged" | "route" |
    "council", "merger"?: alias, "council"?: {"orders"?: 1 | 2, "chairman"?: alias}, ...other keys kept}}`.
    Keys starting `_` are comments; an entry that is no object is no collection.

    `members` and `tags` are the lists as written (`()` when no list): a member that is no alias is named in a
    panel's `skipped` (PNL-3), so it is kept; `aliases` are the members that are (non-empty strings). The text
    fields read a value of the wrong type as "" and `problems` names each such field, one phrase each: `get()`
    refuses the collection while it has any. `stored` is the entry as written: the listing shows its fields as
    stored (COL-6) and the writers build on it."""

    name: str
    members: tuple[object, ...]
    aliases: tuple[str, ...]
    description: str
    tags: tuple[object, ...]
    shape: str
    reply: str
    merger: str
    problems: tuple[str, ...]
    stored: Mapping[str, Any]
    council_orders: int = 2  # `council.orders`: each ranker sees one order of the answers, or two (CNC-3)
    council_chairman: str = ""  # `council.chairman`: the chairman, else the merger's rule picks one (CNC-5)


@dataclasses.dataclass(frozen=True)
class Settings:
    """config/gateway.json: `{"max_calls": 5, "max_explorers": 2, ...other keys kept}` (COL-2), with these
    fields' defaults for any key it lacks. `max_panels` / `max_panels_per_key`: panels in flight in one process,
    and for one gateway key (security review 2); `verdicts_per_key_day`: verdict lines one key may add a day, 0 no
    cap (issue 29 item 3); `stop_grace`: seconds a stopping gateway lets panels in flight
    finish (nothing-lost item 7); `calls_log_*`: the calls log's size before it is rotated (MB, 0 never), rotated
    files kept, and whether it keeps prompts at all (security review 9, PRIVACY.md); `first_byte_timeout` /
    `idle_timeout`: a seat's no-bytes windows in seconds, fractions allowed, 0 for none (GATEWAY.md, Faults);
    `policy`: `panel.policy`'s name (issue 20).

    IMP-9: a value of the wrong type or out of range keeps its default instead of crashing a panel, and
    `max_explorers` is clamped to 2, the most the router ever seats; `problems` says why, one sentence each."""

    max_calls: int = 5
    max_explorers: int = 2
    max_panels: int = 128
    max_panels_per_key: int = 32
    verdicts_per_key_day: int = 1000
    stop_grace: int = 5
    calls_log_max_mb: int = 64
    calls_log_keep: int = 3
    calls_log_prompts: bool = True
    first_byte_timeout: float = 180
    idle_timeout: float = 60
    policy: str = policy.DEFAULT
    problems: tuple[str, ...] = ()


WHOLE = ("max_calls", "max_explorers", "max_panels", "max_panels_per_key", "verdicts_per_key_day", "stop_grace",
         "calls_log_max_mb", "calls_log_keep")  # whole numbers of 0 or more
SECONDS = ("first_byte_timeout", "idle_timeout")  # any number of seconds of 0 or more
DEFAULTS = Settings()


def collections_path() -> Path:
    return paths.file("config", COLLECTIONS)


def settings_path() -> Path:
    return paths.file("config", SETTINGS)


def _listed(value: object) -> tuple[object, ...]:
    return tuple(value) if isinstance(value, list) else ()


def record(name: str, c: Mapping[str, Any]) -> Collection:
    """The `Collection` an entry of the file stands for."""
    members = _listed(c.get("members"))
    text = {field: records.string(c.get(field)) for field in ("shape", "reply", "merger")}
    council = records.mapping(c.get("council"))
    orders = council.get("orders")
    return Collection(name, members, tuple(m for m in members if isinstance(m, str) and m), _description(c),
                      _listed(c.get("tags")), **text, problems=tuple(field_problems(c)), stored=c,
                      council_orders=orders if orders in ORDERS and not isinstance(orders, bool) else 2,
                      council_chairman=records.string(council.get("chairman")))


_loaded: tuple[object, dict[str, Collection]] = (None, {})  # (the file's cached object, its collections)


def load() -> dict[str, Collection]:
    """`{name: Collection}` in file order: the one reader of collections.json. `{}` when the file is missing or
    unreadable (`collections_problem()` says why). Made again only when the file changed (the parse is
    `fileio.read_json`'s, cached by the file's stat); shared with that cache: callers must not mutate it."""
    global _loaded
    data = fileio.read_json(collections_path(), comments=False)
    if _loaded[0] is not data:
        _loaded = (data, {name: record(name, c) for name, c in data.items()
                          if not name.startswith("_") and isinstance(c, dict)})
    return _loaded[1]


def collections_problem() -> str:
    """Why config/collections.json cannot be read, naming it; `""` when it reads or is missing."""
    wrong = fileio.json_problem(collections_path())
    if not wrong:
        return ""
    return f"config/collections.json {wrong}; fix it or restore it — no collection can be read until then"


def _read() -> dict[str, Collection]:
    """`load()`; raises `Broken` while the file cannot be read."""
    found = load()
    if not found:  # a broken file reads as {}: only then is it worth asking why
        broken = collections_problem()
        if broken:
            raise Broken(broken)
    return found


def _got(value: object) -> str:
    """A wrong value as a refusal shows it: a string quoted (cut short), anything else by its type."""
    if isinstance(value, str):
        return json.dumps(value[:40] + ("…" if len(value) > 40 else ""), ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def field_problems(c: Mapping[str, Any]) -> list[str]:
    """What is wrong with a collection's fields against §2's layout, one phrase each naming the field.

    Absent or null is a field's default. Entries of a `members` list that are no alias are not
    here: PNL-3 keeps the strings, and the panel names the rest among those not asked.
    """
    problems = []
    members = c.get("members")
    if members is not None and not isinstance(members, list):
        problems.append('"members" must be a list of model aliases (strings), else the collection has no members;'
                        f" got {_got(members)}")
    for field, wanted in TEXT_FIELDS.items():
        value = c.get(field)
        if value is not None and not isinstance(value, str):
            problems.append(f'"{field}" must be {wanted}; got {_got(value)}')
    reply = c.get("reply")
    if reply not in (None, "", *REPLIES):
        problems.append(f'"reply" must be {REPLY_WORDS}; got {_got(reply)}')
    problems += council_problems(c.get("council"))
    tags = c.get("tags")
    if tags is not None and not isinstance(tags, list):
        problems.append(f'"tags" must be a list of words (strings); got {_got(tags)}')
    elif tags:
        odd = [t for t in tags if not isinstance(t, str)]
        if odd:
            problems.append(f'"tags" must be a list of words (strings); it holds {_got(odd[0])}')
    return problems


def council_problems(council: object) -> list[str]:
    """What is wrong with a collection's `council` object (CNC-3, CNC-5): `orders` 1 or 2, `chairman` an alias."""
    if council is None:
        return []
    if not isinstance(council, dict):
        return [f'"council" must be an object with "orders" and "chairman"; got {_got(council)}']
    problems = []
    orders = council.get("orders")
    if orders is not None and (isinstance(orders, bool) or orders not in ORDERS):
        problems.append(f'"council.orders" must be 1 or 2; got {_got(orders)}')
    chairman = council.get("chairman")
    if chairman is not None and not isinstance(chairman, str):
        problems.append(f'"council.chairman" must be a model alias (a string); got {_got(chairman)}')
    return problems


def get(name: str) -> Collection | None:
    """The collection `name` (COL-4's key), None when the file has none by that name (an entry
    that is no object is no collection, as in `load()`).

    Raises `Broken` while collections.json cannot be read, or when the collection has a field of
    the wrong type, so nothing downstream meets a list where a string belongs.
    """
    c = None if name.startswith("_") else _read().get(name)
    if c is None:
        return None
    if c.problems:
        raise Broken(f"config/collections.json: bench/{name}: " + "; ".join(c.problems) + f"; {FIX}")
    return c


def _whole(name: str, value: object, default: int, problems: list[str]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(f"{name} must be a whole number of 0 or more; got {json.dumps(value)}, using {default}")
        return default
    return value


def _seconds(name: str, value: object, default: float, problems: list[str]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        problems.append(f"{name} must be a number of seconds, 0 or more; got {json.dumps(value)}, using {default}")
        return default
    return value


def _settings(data: Mapping[str, Any]) -> Settings:
    """COL-2's settings from gateway.json's object, validated and clamped (IMP-9); the problems in the order
    `settings_problems()` says them: the limits, then the windows, then the policy."""
    chosen: dict[str, Any] = {}
    problems: list[str] = []
    for name in WHOLE:
        if name in data:
            chosen[name] = _whole(name, data[name], getattr(DEFAULTS, name), problems)
    if "calls_log_prompts" in data:
        value = data["calls_log_prompts"]
        if isinstance(value, bool):
            chosen["calls_log_prompts"] = value
        else:
            problems.append(f"calls_log_prompts must be true or false; got {json.dumps(value)}, using true")
    if chosen.get("max_explorers", 0) > EXPLORER_CLAMP:
        problems.append(f"max_explorers {chosen['max_explorers']} has no effect above {EXPLORER_CLAMP}"
                        f" (the router seats at most {EXPLORER_CLAMP} explorers); using {EXPLORER_CLAMP}")
        chosen["max_explorers"] = EXPLORER_CLAMP
    for name in SECONDS:
        default = getattr(DEFAULTS, name)
        chosen[name] = _seconds(name, data.get(name, default), default, problems)
    value = data.get("policy", policy.DEFAULT)
    if isinstance(value, str) and value in policy.NAMES:
        chosen["policy"] = value
    else:
        names = " or ".join(f'"{n}"' for n in policy.NAMES)
        problems.append(f'policy must be {names}; got {json.dumps(value)}, using "{policy.DEFAULT}"')
    return Settings(**chosen, problems=tuple(problems))


_read_settings: tuple[object, Settings] = (None, DEFAULTS)  # (the file's cached object, or None for {}; its settings)


def settings() -> Settings:
    """gateway.json's settings (COL-2, IMP-9): the one reader of the file, read afresh on each call (an edit
    applies to the next request) but made again only when the file changed. A whole file that cannot be read
    serves the defaults; that, or each value kept at its default, is said once on stderr when first met."""
    global _read_settings
    data = fileio.read_json(settings_path())
    key = data or None  # a missing file reads as a new {} each time: every empty object is the same settings
    if _read_settings[0] is not key:
        _read_settings = (key, _settings(data))
    found = _read_settings[1]
    fault = "" if data else settings_fault()  # a file that read as an object has no fault: no second look
    _tell([fault] if fault else [f"config/gateway.json: {p}" for p in found.problems])
    return found


def settings_fault() -> str:
    """Why config/gateway.json cannot be read, naming it; `""` when it reads or is missing."""
    wrong = fileio.json_problem(settings_path())
    return f"config/gateway.json {wrong}; using the defaults" if wrong else ""


def settings_problems() -> list[str]:
    """Why `settings()` differs from what gateway.json says, one sentence each. Only the tests call it; the
    gateway says the same problems once on stderr (`_tell`)."""
    fault = settings_fault()
    return ([fault] if fault else []) + list(settings().problems)


_told: set[str] = set()  # the problems already said on stderr by this process
_told_lock = threading.Lock()


def _tell(problems: Iterable[str]) -> None:
    """Say each problem on stderr the first time this process meets it: once, not once per request."""
    for problem in problems:
        with _told_lock:
            if problem in _told:
                continue
            _told.add(problem)
        console.say(f"warning: {problem}")


def config_problems() -> list[str]:
    """The config files read around, one sentence each naming the file and its fault, for `GET /health`
    (the gateway serves on: gateway.json as the defaults, no collections); said once on stderr too.

    Only faults of whole files: /health answers anyone, so it says nothing of what the files hold.
    """
    problems = [p for p in (settings_fault(), collections_problem(), registry.problem()) if p]
    _tell(problems)
    return problems


def explorers_for(members: int, s: Settings | None = None) -> int:
    """Explorer seats beside `members` members (COL-3): what `max_calls` leaves, at most `max_explorers`.

    Never above 2 even for hand-made settings: IMP-9's clamp wins over COL-3's bare formula,
    so the listing's `explorers` is what the router really seats.
    """
    s = s or settings()
    return max(0, min(s.max_explorers, EXPLORER_CLAMP, s.max_calls - members))


def resolve(model: object) -> str | None:
    """The collection name `model` calls (`bench/core` or `core`), or None (COL-4). Case-sensitive."""
    if not isinstance(model, str):
        return None
    name = model.strip()
    if name.startswith(PREFIX):
        name = name[len(PREFIX):]
    return name if name and get(name) is not None else None


def reply_mode(collection: Collection | str, asked: str = "") -> str:
    """The reply mode a request gets (FMT-13, PNL-6): `asked` (the body's, else the model's suffix) when
    given, else the collection's `reply`, else `all`. `collection` is the collection or its name."""
    found = load().get(collection) if isinstance(collection, str) else collection
    return asked or (found.reply if found else "") or "all"


def split_reply(model: Named) -> tuple[Named | str, str]:
    """`(model, mode)` when `model` ends in `:all`, `:merged`, `:route` or `:council`, else `(model, "")` (COL-5)."""
    if not isinstance(model, str):
        return model, ""
    head, colon, tail = model.rpartition(":")
    if colon and tail in REPLIES:
        return head, tail
    return model, ""


def _description(c: Mapping[str, Any]) -> str:
    """A collection's description, falling back to the legacy `note` (COL-6, IMP-8)."""
    for key in ("description", "note"):
        value = c.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _known(value: object) -> int | None:
    """A positive whole number, else None (a bool is not a number here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def summary(infos: Mapping[str, Mapping[str, Any]], connection_by_alias: Mapping[str, object]) -> dict[str, Any]:
    """The group summary of CAT-5 from each member's catalog record and connection.

    `infos` = `{alias: info}`, `connection_by_alias` = `{alias: connection}`. Capabilities are those
    every member is known to have (none for no members); a window or limit counts when known.
    """
    windows = {alias: _known(info.get("context_window")) for alias, info in infos.items()}
    known = [w for w in windows.values() if w is not None]
    limits = {}
    for axis in LIMITS:
        values = [v for v in (_known((info.get("limits") or {}).get(axis)) for info in infos.values()) if v is not None]
        limits[axis] = min(values) if values else None
    return {
        "context_window": min(known) if known else None,
        "context_unknown": [alias for alias, w in windows.items() if w is None],
        "capabilities": [cap for cap in CAPABILITIES
                         if infos and all(info.get(cap) is True for info in infos.values())],
        "connections": sorted({c for c in connection_by_alias.values() if isinstance(c, str) and c}),
        "limits": limits,
    }


def _connection(alias: str, info: Mapping[str, Any]) -> object:
    try:
        return connections.connection_of(alias)
    except Exception:  # a broken registry or tags file; the catalog record may name it
        return info.get("connection")


def together(members: Iterable[object]) -> dict[str, Any] | None:
    """What the members handle together (COL-6): `summary()` of their catalog records,
    or None when the catalog cannot say (a listing never fails because of it)."""
    try:
        # imported here so that a catalog that fails to import costs the listing only this field
        from ..models import catalog
        aliases = dict.fromkeys(a for a in members if isinstance(a, str) and a)
        infos = {alias: catalog.info(alias) or {} for alias in aliases}
        return summary(infos, {alias: _connection(alias, info) for alias, info in infos.items()})
    except Exception:
        return None


def described(name: str, c: Collection, s: Settings | None = None) -> dict[str, Any]:
    """A collection as the listing shows it (COL-6): everything but the id, its fields as stored."""
    return {
        "description": c.description,
        "tags": list(c.tags),
        "members": list(c.members),
        "shape": c.stored.get("shape") or "",
        "explorers": explorers_for(len(c.members), s),
        "reply": c.stored.get("reply") or "all",
        "merger": c.stored.get("merger") or "",
        "together": together(c.members),
    }


def listed(may_call: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """The `GET /v1/models` rows (LST-1, LST-2): per collection the caller may call, in file
    order, `bench/<name>` in its own reply mode, then a `bench/<name>:<mode>` row for every
    other mode, so clients that offer only listed names reach each one.

    `may_call(name) -> bool` filters for a scoped key; None lists every collection.
    Raises `Broken` while collections.json cannot be read: an empty list would say "none yet".
    """
    s = settings()
    rows = []
    for name, c in _read().items():
        if may_call is not None and not may_call(name):
            continue
        row = {"id": PREFIX + name, "object": "model", "owned_by": "benchwarmers", **described(name, c, s)}
        rows.append(row)
        rows += [{**row, "id": f"{PREFIX}{name}:{mode}", "reply": mode} for mode in REPLIES if mode != row["reply"]]
    return rows


def public_names() -> list[str]:
    """`bench/<name>` per collection in file order, no reply variants: the startup line (LST-3)."""
    return [PREFIX + name for name in load()]


def reply_errors(reply: str, merger: str, known_chat_models: Iterable[str]) -> list[str]:
    """The editor's checks of a collection's reply mode and merger (COL-7): the dashboard's Collections dialog
    and `scripts/collection.py` (both through `collectionedit.save`). Any chat model may merge."""
    errors = []
    if reply not in REPLIES:
        errors.append("reply must be one of " + ", ".join(REPLIES))
    if merger and merger not in known_chat_models:
        errors.append(f"merger: {merger!r} is not a chat model on the bench; leave it empty to choose by verdicts")
    return errors


def choose_message(model: object, may_call: Callable[[str], bool] | None = None) -> str:
    """The refusal for an unnamed or unknown collection (COL-8), listing what may be called.

    The legacy `note` stands in for a missing description, as in the listing (IMP-8).
    `may_call` filters the list for a scoped key, as `listed()` does; None lists all.
    """
    first = f"{model!r} is not a collection here." if model else "No collection was named."
    head, colon, tail = model.rpartition(":") if isinstance(model, str) else ("", "", "")
    if colon and resolve(head) is not None:
        first += (f" {':' + tail!r} is not a reply mode: after a collection's name put "
                  + ", ".join(f":{r}" for r in REPLIES) + " or nothing.")
    lines = []
    for name, c in sorted(load().items()):
        if may_call is not None and not may_call(name):
            continue
        line = f"- {PREFIX}{name}: {c.description or 'no description'}"
        if c.tags:
            line += " [" + ", ".join(str(t) for t in c.tags) + "]"
        lines.append(line)
    if not lines:
        lines = ["- none yet: create one with `python -m benchwarmers.scripts.collection add NAME MEMBER...`"]
    return (first + ' Set "model" to the collection that fits the task'
            " (GET /v1/models lists them with description and tags):\n" + "\n".join(lines))


def unreadable(path: Path) -> bool:
    """True when `path` exists but is not a JSON object (COL-9): a writer must refuse to save
    then, or the `{}` it reads would wipe the file. `fileio.json_problem` says why."""
    return bool(fileio.json_problem(path))
