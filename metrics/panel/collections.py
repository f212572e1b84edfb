"""Collections: named groups of aliases that a client calls as `bench/<name>` (gateway.md §4, §11).

Everything here reads `config/collections.json` and `config/gateway.json` afresh
on each call (an edit applies to the next request) through `fileio.read_json`,
which re-parses a file only when it changed. The collection objects returned
are shared with that cache: callers must not mutate them.

A broken file is said, never read around in silence: a request naming a collection
while collections.json cannot be read, or naming one whose fields have the wrong
types, meets `Broken` (503, naming the file and the fault); gateway.json that cannot
be read serves the defaults and says so once on stderr and on `GET /health`.

COL-10's self-checks (COL-3..5, COL-7) are tests in tests/test_collections.py.
"""

import json
import math
import sys
import threading

from ..core import fileio, paths
from ..models import connections, registry
from . import policy
from ..core.errors import Broken

COLLECTIONS = "collections.json"
SETTINGS = "gateway.json"
PREFIX = "bench/"
REPLIES = ("all", "merged", "route")
# max_panels / max_panels_per_key: panels in flight in one process, and for one gateway key (security
# review 2); stop_grace: seconds a stopping gateway lets panels in flight finish (nothing-lost item 7);
# calls_log_*: the calls log's size before it is rotated (MB, 0 never), rotated files kept, and whether
# it keeps prompts at all (security review 9, PRIVACY.md)
DEFAULTS = {"max_calls": 5, "max_explorers": 2, "max_panels": 128, "max_panels_per_key": 32, "stop_grace": 5,
            "calls_log_max_mb": 64, "calls_log_keep": 3, "calls_log_prompts": True}
TIMEOUTS = {"first_byte_timeout": 180, "idle_timeout": 60}  # a seat's no-bytes windows, seconds (GATEWAY.md, Faults)
EXPLORER_CLAMP = 2  # the router never seats more than two explorers, whatever the settings say
CAPABILITIES = ("tools", "vision", "structured_output", "reasoning")
LIMITS = ("rpm", "rpd", "tpm", "tpd")
TEXT_FIELDS = {"merger": "a model alias (a string)", "shape": "a shape name (a string)",
               "description": "text (a string)", "note": "text (a string)"}
FIX = "fix it in that file or in the dashboard's Collections dialog"


def collections_path():
    return paths.file("config", COLLECTIONS)


def settings_path():
    return paths.file("config", SETTINGS)



def load():
    """`{name: collection}` in file order; an entry that is not an object is no collection."""
    data = fileio.read_json(collections_path(), comments=False)
    return {name: c for name, c in data.items() if not name.startswith("_") and isinstance(c, dict)}


def collections_problem():
    """Why config/collections.json cannot be read, naming it; `""` when it reads or is missing."""
    wrong = fileio.json_problem(collections_path())
    if not wrong:
        return ""
    return f"config/collections.json {wrong}; fix it or restore it — no collection can be read until then"


def _read():
    """collections.json's object (comments kept); raises `Broken` while the file cannot be read."""
    data = fileio.read_json(collections_path(), comments=False)
    if not data:  # a broken file reads as {}: only then is it worth asking why
        broken = collections_problem()
        if broken:
            raise Broken(broken)
    return data


def _got(value):
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


def field_problems(c):
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
        problems.append(f'"reply" must be "all", "merged" or "route"; got {_got(reply)}')
    tags = c.get("tags")
    if tags is not None and not isinstance(tags, list):
        problems.append(f'"tags" must be a list of words (strings); got {_got(tags)}')
    elif tags:
        odd = [t for t in tags if not isinstance(t, str)]
        if odd:
            problems.append(f'"tags" must be a list of words (strings); it holds {_got(odd[0])}')
    return problems


def get(name):
    """The collection `name` (COL-4's key), None when the file has none by that name (an entry
    that is no object is no collection, as in `load()`).

    Raises `Broken` while collections.json cannot be read, or when the collection has a field of
    the wrong type, so nothing downstream meets a list where a string belongs.
    """
    c = None if name.startswith("_") else _read().get(name)
    if not isinstance(c, dict):
        return None
    problems = field_problems(c)
    if problems:
        raise Broken(f"config/collections.json: bench/{name}: " + "; ".join(problems) + f"; {FIX}")
    return c


def _checked():
    """`(settings, problems)` from gateway.json: COL-2, validated and clamped (IMP-9)."""
    data = fileio.read_json(settings_path())
    chosen, problems = dict(DEFAULTS), []
    for name, default in DEFAULTS.items():
        if name not in data:
            continue
        value = data[name]
        if isinstance(default, bool):
            if isinstance(value, bool):
                chosen[name] = value
            else:
                problems.append(f"{name} must be true or false; got {json.dumps(value)}, using {json.dumps(default)}")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(f"{name} must be a whole number of 0 or more; got {json.dumps(value)}, using {default}")
        else:
            chosen[name] = value
    if chosen["max_explorers"] > EXPLORER_CLAMP:
        problems.append(f"max_explorers {chosen['max_explorers']} has no effect above {EXPLORER_CLAMP}"
                        f" (the router seats at most {EXPLORER_CLAMP} explorers); using {EXPLORER_CLAMP}")
        chosen["max_explorers"] = EXPLORER_CLAMP
    return chosen, problems


def settings():
    """`{"max_calls": int, "max_explorers": int}`: the defaults overlaid by gateway.json (COL-2).

    IMP-9: a value that is not a whole number of 0 or more (a bool, a string, a float, a
    negative) keeps its default instead of crashing the panel, and `max_explorers` is
    clamped to 2, the most the router ever seats; `settings_problems()` says why, and
    each problem is said once on stderr when first met.
    """
    chosen, problems = _checked()
    fault = _gateway_fault()
    _tell([fault] if fault else [f"config/gateway.json: {p}" for p in problems])
    return chosen


def _gateway_fault():
    """Why config/gateway.json cannot be read, naming it; `""` when it reads or is missing."""
    wrong = fileio.json_problem(settings_path())
    return f"config/gateway.json {wrong}; using the defaults" if wrong else ""


def _timed():
    """`(timeouts, problems)` from gateway.json: any number of seconds of 0 or more (0: no such window)."""
    data = fileio.read_json(settings_path())
    chosen, problems = dict(TIMEOUTS), []
    for name, default in TIMEOUTS.items():
        value = data.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            problems.append(f"{name} must be a number of seconds, 0 or more; got {json.dumps(value)}, using {default}")
        else:
            chosen[name] = value
    return chosen, problems


def timeouts():
    """`{"first_byte_timeout": s, "idle_timeout": s}`: how long a seat's upstream may send no byte, from the
    request and then between bytes, before the seat ends as an error (fractions allowed; 0: no limit)."""
    return _timed()[0]


def _policy():
    """`(policy name, problems)` from gateway.json's `"policy"`: one of `policy.NAMES`, else the default."""
    value = fileio.read_json(settings_path()).get("policy", policy.DEFAULT)
    if isinstance(value, str) and value in policy.NAMES:
        return value, []
    names = " or ".join(f'"{n}"' for n in policy.NAMES)
    return policy.DEFAULT, [f'policy must be {names}; got {json.dumps(value)}, using "{policy.DEFAULT}"']


def chosen_policy():
    """The policy the merger choice and route mode's ranking follow (issue 20, `panel.policy`):
    `"counted"` (the contract's rule) unless gateway.json says `"thompson"`. An unknown value keeps
    the default and is said once on stderr, like the file's other bad values."""
    chosen, problems = _policy()
    fault = _gateway_fault()
    _tell([fault] if fault else [f"config/gateway.json: {p}" for p in problems])
    return chosen


def settings_problems():
    """Why `settings()`, `timeouts()` or `chosen_policy()` differs from what gateway.json says, one sentence
    each. No caller yet but the tests: the dashboard's settings editor will show it."""
    fault = _gateway_fault()
    return ([fault] if fault else []) + _checked()[1] + _timed()[1] + _policy()[1]


_told = set()  # the problems already said on stderr by this process
_told_lock = threading.Lock()


def _tell(problems):
    """Say each problem on stderr the first time this process meets it: once, not once per request."""
    for problem in problems:
        with _told_lock:
            if problem in _told:
                continue
            _told.add(problem)
        print(f"warning: {problem}", file=sys.stderr, flush=True)


def config_problems():
    """The config files read around, one sentence each naming the file and its fault, for `GET /health`
    (the gateway serves on: gateway.json as the defaults, no collections); said once on stderr too.

    Only faults of whole files: /health answers anyone, so it says nothing of what the files hold.
    """
    problems = [p for p in (_gateway_fault(), collections_problem(), registry.problem()) if p]
    _tell(problems)
    return problems


def explorers_for(members, s=None):
    """Explorer seats beside `members` members (COL-3): what `max_calls` leaves, at most `max_explorers`.

    Never above 2 even for hand-made settings: IMP-9's clamp wins over COL-3's bare formula,
    so the listing's `explorers` is what the router really seats.
    """
    s = s or settings()
    return max(0, min(s["max_explorers"], EXPLORER_CLAMP, s["max_calls"] - members))


def resolve(model):
    """The collection name `model` calls (`bench/core` or `core`), or None (COL-4). Case-sensitive."""
    if not isinstance(model, str):
        return None
    name = model.strip()
    if name.startswith(PREFIX):
        name = name[len(PREFIX):]
    return name if name and get(name) is not None else None


def reply_mode(collection, asked=""):
    """The reply mode a request gets (FMT-13, PNL-6): `asked` (the body's, else the model's suffix) when
    given, else the collection's `reply`, else `all`. `collection` is the collection or its name."""
    if isinstance(collection, str):
        collection = load().get(collection) or {}
    return asked or collection.get("reply") or "all"


def split_reply(model):
    """`(model, mode)` when `model` ends in `:all`, `:merged` or `:route`, else `(model, "")` (COL-5)."""
    if not isinstance(model, str):
        return model, ""
    head, colon, tail = model.rpartition(":")
    if colon and tail in REPLIES:
        return head, tail
    return model, ""


def description(c):
    """A collection's description, falling back to the legacy `note` (COL-6, IMP-8)."""
    for key in ("description", "note"):
        value = c.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _tags(c):
    tags = c.get("tags")
    return tags if isinstance(tags, list) else []


def _members(c):
    members = c.get("members")
    return members if isinstance(members, list) else []


def _known(value):
    """A positive whole number, else None (a bool is not a number here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def summary(infos, connection_by_alias):
    """The group summary of CAT-5 from each member's catalog record and connection.

    `infos` = `{alias: info}`, `connection_by_alias` = `{alias: connection}`. Capabilities are those
    every member is known to have (none for no members); a window or limit counts when known.
    """
    windows = {alias: _known(info.get("context_window")) for alias, info in infos.items()}
    known = [w for w in windows.values() if w is not None]
    limits = {}
    for axis in LIMITS:
        values = [_known((info.get("limits") or {}).get(axis)) for info in infos.values()]
        values = [v for v in values if v is not None]
        limits[axis] = min(values) if values else None
    return {
        "context_window": min(known) if known else None,
        "context_unknown": [alias for alias, w in windows.items() if w is None],
        "capabilities": [cap for cap in CAPABILITIES
                         if infos and all(info.get(cap) is True for info in infos.values())],
        "connections": sorted({c for c in connection_by_alias.values() if isinstance(c, str) and c}),
        "limits": limits,
    }


def _connection(alias, info):
    try:
        return connections.connection_of(alias)
    except Exception:  # a broken registry or tags file; the catalog record may name it
        return info.get("connection")


def together(members):
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


def described(name, c, s=None):
    """A collection as the listing shows it (COL-6): everything but the id."""
    members = _members(c)
    return {
        "description": description(c),
        "tags": _tags(c),
        "members": members,
        "shape": c.get("shape") or "",
        "explorers": explorers_for(len(members), s),
        "reply": c.get("reply") or "all",
        "merger": c.get("merger") or "",
        "together": together(members),
    }


def listed(may_call=None):
    """The `GET /v1/models` rows (LST-1, LST-2): per collection the caller may call, in file
    order, `bench/<name>` in its own reply mode, then a `bench/<name>:<mode>` row for every
    other mode, so clients that offer only listed names reach each one.

    `may_call(name) -> bool` filters for a scoped key; None lists every collection.
    Raises `Broken` while collections.json cannot be read: an empty list would say "none yet".
    """
    _read()
    s = settings()
    rows = []
    for name, c in load().items():
        if may_call is not None and not may_call(name):
            continue
        row = {"id": PREFIX + name, "object": "model", "owned_by": "benchwarmers", **described(name, c, s)}
        rows.append(row)
        rows += [{**row, "id": f"{PREFIX}{name}:{mode}", "reply": mode} for mode in REPLIES if mode != row["reply"]]
    return rows


def public_names():
    """`bench/<name>` per collection in file order, no reply variants: the startup line (LST-3)."""
    return [PREFIX + name for name in load()]


def reply_errors(reply, merger, known_chat_models):
    """The editor's checks of a collection's reply mode and merger (COL-7): the dashboard's Collections dialog
    and `scripts/collection.py` (both through `collectionedit.save`). Any chat model may merge."""
    errors = []
    if reply not in REPLIES:
        errors.append("reply must be one of " + ", ".join(REPLIES))
    if merger and merger not in known_chat_models:
        errors.append(f"merger: {merger!r} is not a chat model on the bench; leave it empty to choose by verdicts")
    return errors


def choose_message(model, may_call=None):
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
        line = f"- {PREFIX}{name}: {description(c) or 'no description'}"
        tags = _tags(c)
        if tags:
            line += " [" + ", ".join(str(t) for t in tags) + "]"
        lines.append(line)
    if not lines:
        lines = ["- none yet: create one with `python -m benchwarmers.scripts.collection add NAME MEMBER...`"]
    return (first + ' Set "model" to the collection that fits the task'
            " (GET /v1/models lists them with description and tags):\n" + "\n".join(lines))


def unreadable(path):
    """True when `path` exists but is not a JSON object (COL-9): a writer must refuse to save
    then, or the `{}` it reads would wipe the file. `fileio.json_problem` says why."""
    return bool(fileio.json_problem(path))

