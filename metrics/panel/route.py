"""The explorer router: who fills the explorer seats, and who is primary, second and reserve (RTR-1..13).

A collection's members answer every request; the explorer seats go to the
models the bench has not asked for longest, so every model keeps getting fresh
evidence. The suite's recall picks a primary (the merger's fallback), a second
opinion from another family, and a reserve on another connection.

The panel calls `pick_seats()` for its explorer seats (and its primary, for the
merger) and `cooling()` for the aliases to avoid; `available()`, `records()`,
`family()` and the CLI show the same facts to people.

`pick_seats()` runs on every gateway request with explorer seats, so nothing on that
path touches the network or re-reads a big file that has not changed:

- Served names (RTR-1): each endpoint's listing is cached per data folder and
  refreshed in a background thread at most every `SERVED_REFRESH` seconds.
  Until a listing is cached (first call, or the endpoints changed) nothing is
  filtered. `refresh_served()` refreshes now; `served_lookup` is the seam a
  test replaces (TST-0).
- Suite recall (RTR-9) and perf history (RTR-1, RTR-3) come from `models.history`,
  which reads them again only when they may have changed (see there). IMP-17: an alias is available
  when it has no perf history or one of its latest rows answered.
- Connections, tags and families are recomputed only when one of the files
  they come from changes (CONN-3: registrations, provider-tags.json,
  decision-models.json, endpoints.json; connections.json for `preferred`).
- Offload figures come from `offload.summary()`, an in-memory index whose
  `last_date` counts every offload (the same date `offload.last_used()` gives).

Decisions where the spec is silent:
- `considered` lists the aliases left for automatic seats after RTR-3's
  exclusions; `untried` those of them with no offload; `contenders` the second-
  opinion contenders (RTR-7); the exclusion lists are aliases. Seats are records.
- Nominees, members and `avoid` are mapped through alias renames (ALI-1), so an
  old name still means its model.
- An ad hoc nominee must be registered to be seated (an unregistered name could
  only fail).
- The CLI's default is a large prompt (RTR-12 has only `--small`).
- Issue 20: with gateway.json's policy `"thompson"`, explorer seats that tie on RTR-6's key go to the
  model with the fewest offloads instead of the first in registration order: whole days tie every model
  used today, so the same two would sit all day and the rest never be judged again. Counts, not the log's
  order, so a seeded run repeats (seats of one panel are logged in the order they finish). The default
  policy keeps RTR-6 to the letter.

    python -m benchwarmers.panel.route [--shape S] [--small] [--with ALIAS]...
"""

import argparse
import concurrent.futures
import datetime
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..core import fileio, paths
from ..core.errors import Invalid
from ..models import aliases, connections, endpoints, history, learn, registry
from ..providers import renewal
from . import collections, offload, policy, roles

Rec = dict[str, Any]  # one model's record as the router weighs it (RTR-2)
Static = tuple[str, str, str, bool]  # (connection, full tag, family, paid) of a registered alias
Ages = tuple[datetime.date, dict[object, int]]  # (today, {offload date: days since})

NEVER = 9999
EXPLORER_CLAMP = 2
SECOND_SHARE = 0.85
SECOND_TASKS = 2
SERVED_REFRESH = 600
SERVED_TIMEOUT = 20


FILES = {"tags": ("config", "provider-tags.json"), "connections": ("config", "connections.json"),
         "alerts": ("metrics", "alerts.json")}


def family(served: object) -> str:
    """One model in two chairs is not a second opinion (RTR-10).

    The served name's last `/` segment, before any `:`, lower-cased, without `-`, `_`, `.`.
    """
    name = str(served or "").rsplit("/", 1)[-1].split(":", 1)[0].lower()
    return name.replace("-", "").replace("_", "").replace(".", "")


# -- served names (RTR-1) ---------------------------------------------------------------------

# data folder -> {"names": endpoint names, "lists": {name: frozenset | None}, "union", "at"}
_served: dict[str, dict[str, Any]] = {}
_served_lock = threading.Lock()
_refreshing: set[str] = set()


def served_lookup(name: str) -> set[str]:
    """The ids endpoint `name` serves now (EP-12); raises when it cannot be asked. A seam tests replace (TST-0)."""
    return set(renewal.models(name, timeout=SERVED_TIMEOUT))


def _listing(name: str) -> frozenset[str] | None:
    try:
        return frozenset(served_lookup(name))
    except Exception:  # an endpoint that cannot be asked lists nothing
        return None


def _refresh(folder: str) -> None:
    """Ask every endpoint at once (one slow endpoint costs one timeout, not one each) and cache the answers."""
    try:
        entries = endpoints.load()
    except RuntimeError:
        entries = {}
    names = list(entries)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        lists = dict(zip(names, pool.map(_listing, names)))
    union = frozenset().union(*(found for found in lists.values() if found))
    state = {"names": tuple(entries), "lists": lists, "union": union, "at": time.monotonic()}
    if str(paths.data()) == folder:  # the data folder may have changed while the endpoints were asked
        with _served_lock:
            _served[folder] = state


def _refresh_in_background(folder: str) -> None:
    with _served_lock:
        if folder in _refreshing:
            return
        _refreshing.add(folder)

    def work() -> None:
        try:
            _refresh(folder)
        finally:
            with _served_lock:
                _refreshing.discard(folder)

    threading.Thread(target=work, name="route-served", daemon=True).start()


def refresh_served(block: bool = True) -> frozenset[str] | None:
    """Ask every endpoint for its listing now; with `block=False` in a background thread.

    Returns the served-names filter (see `served_names`) when blocking, else None.
    """
    folder = str(paths.data())
    if not block:
        _refresh_in_background(folder)
        return None
    _refresh(folder)
    return served_names(refresh=False)


def served_names(refresh: bool = True, folder: str | None = None) -> frozenset[str] | None:
    """Every id the endpoints list (cached), or None = do not filter (RTR-1, SRV-2).

    None when no listing is cached yet for the current endpoints, or the default
    endpoint could not be asked. A stale or missing listing starts a background refresh.
    """
    try:
        entries = endpoints.load()
        default = endpoints.default() if entries else None
    except RuntimeError:
        return None
    if not entries:
        return None
    folder = folder or str(paths.data())
    state = _served.get(folder)
    if state is None or state["names"] != tuple(entries):  # nothing cached for these endpoints yet
        if refresh:
            _refresh_in_background(folder)
        return None
    if refresh and time.monotonic() - state["at"] >= SERVED_REFRESH:
        _refresh_in_background(folder)
    return None if state["lists"].get(default) is None else state["union"]


# -- records (RTR-2, RTR-11) ------------------------------------------------------------------

_static: tuple[object, object, dict[str, Static]] = (None, None, {})  # (registrations, other inputs' stats, statics)


def _statics(regs: Mapping[str, registry.Registration], folder: str) -> dict[str, Static]:
    """Connection, tag, family and paid per registered alias, recomputed only when an input changes.

    `registry.registrations()` hands back the same object until its file changes, so identity tells.
    """
    global _static
    where = paths.named_files(folder, FILES)
    key = (folder, fileio.stamp(where["tags"]), fileio.stamp(registry.decisions_path()),
           fileio.stamp(endpoints.path()), fileio.stamp(where["connections"]))
    if _static[0] is regs and _static[1] == key:
        return _static[2]
    preferred = set(connections.facts()["preferred"])
    table = {}
    for alias, reg in regs.items():
        tag = connections.full_tag_of(alias)
        table[alias] = (tag.split("/", 1)[0], tag, family(reg.model_name or alias), tag in preferred)
    _static = (regs, key, table)
    return table


_ages: Ages = (datetime.date.min, {})  # (today, {offload date: days since})


def _age_table() -> Ages:
    """`{date: days since}` for today, filled as dates are met (a date's age changes only at midnight)."""
    global _ages
    today = datetime.date.today()
    if _ages[0] != today:
        _ages = (today, {})
    return _ages


def _stale_days(date: object, ages: Ages) -> int:
    today, known = ages
    days = known.get(date)
    if days is None:
        try:
            days = max(0, (today - datetime.date.fromisoformat(str(date)[:10])).days) if date else NEVER
        except ValueError:
            days = NEVER
        known[date] = days
    return days


def _records(regs: Mapping[str, registry.Registration], folder: str) -> tuple[dict[str, Rec], dict[str, bool]]:
    """`{alias: record}` for every registered alias, in registration order, plus `{alias: paid}`."""
    statics = _statics(regs, folder)
    recall = history.suite_recall(folder)
    summary = offload.summary()  # renames already folded; last_date counts every offload, judged or not
    records: dict[str, Rec] = {}
    paid: dict[str, bool] = {}
    nothing: dict[str, Any] = {}
    ages = _age_table()
    for alias in regs:
        connection, tag, fam, is_paid = statics[alias]
        found, of, tasks = recall.get(alias, (0, 0, 0))
        figures = summary.get(alias, nothing)
        records[alias] = {
            "model": alias,
            "connection": connection,
            "full_tag": tag,
            "family": fam,
            "found": found,
            "of": of,
            "tasks": tasks,
            "recall": found / of if of else None,
            "offloads": figures.get("offloads", 0),
            "helped": figures.get("useful", 0),
            "judged": figures.get("judged", 0),
            "stale_days": _stale_days(figures.get("last_date"), ages),
        }
        paid[alias] = is_paid
    return records, paid


def records() -> list[Rec]:
    """One record per registered alias, in registration order (RTR-2)."""
    return list(_records(registry.registrations(), str(paths.data()))[0].values())


# -- the pool (RTR-1) and the cooling set (RTR-13) --------------------------------------------

_pool: tuple[tuple[object, ...] | None, list[str]] = (None, [])  # ((registrations, served names, perf state), pool)


def _available(regs: Mapping[str, registry.Registration], folder: str) -> list[str]:
    global _pool
    served = served_names(folder=folder)
    perf = history.perf(folder)
    key = (regs, served, perf)
    cached_key, pool = _pool
    if cached_key is not None and all(a is b for a, b in zip(cached_key, key)):
        return pool
    failing = perf[2]
    pool = [alias for alias, reg in regs.items()
            if (served is None or (reg.model_name or alias) in served) and alias not in failing]
    _pool = (key, pool)
    return pool


def available() -> list[str]:
    """Registered aliases the endpoints still list and whose latest perf rows are not all failures (RTR-1).
    Only the tests call it; `pick_seats()` reads the same pool through `_available`."""
    return list(_available(registry.registrations(), str(paths.data())))


def cooling() -> set[str]:
    """Aliases not to spend an explorer seat on (RTR-13): a `retiring` alert or an active cooldown.

    Failures reading either are ignored.
    """
    out: set[str] = set()
    try:
        for alert in fileio.read_json(paths.named_files(str(paths.data()), FILES)["alerts"]).values():
            if isinstance(alert, dict) and alert.get("kind") == "retiring":
                named = [alert.get("alias")] + list(alert.get("aliases") or [])
                out.update(a for a in named if isinstance(a, str) and a)
    except Exception:
        pass
    try:
        out.update(learn.cooling())
    except Exception:
        pass
    current = aliases.resolver()
    return {aliases.follow(current, alias) for alias in out}


# -- the picks (RTR-3..8) ---------------------------------------------------------------------

def check_shape(shape: str, table: Mapping[str, Any] | None = None) -> list[str]:
    """The roles `shape` admits; `Invalid` (a 400) when the router does not know it (RTR-3, PNL-15).

    A panel asks this before any seat starts, so the refusal calls no model (PNL-21).
    """
    known = (table or roles.load())["shapes"]
    if shape not in known:
        raise Invalid(f"unknown shape '{shape}'; known: {', '.join(sorted(known))}")
    return known[shape]


def pick_seats(shape: str = "general", large: bool = False, nominees: Iterable[str] = (),
               members: Iterable[str] | None = None, explorers: int = 2, avoid: Iterable[str] = ()) -> dict[str, Any]:
    """The router's picks for one request (RTR-3..8): explorer seats, and primary, second and reserve.
    Not a panel: `panel.panel` seats the members and asks every seat; this only picks.

    `members` is the sitting list (then no primary or second is chosen); `explorers`
    the seats to fill (at most 2); `nominees` the request's `with`; `avoid` aliases
    no explorer seat may go to (nominees ignore it). Raises `Invalid` for an unknown shape.
    """
    table = roles.load()
    admitted = check_shape(shape, table)
    folder = str(paths.data())
    regs = registry.registrations()
    recs, paid = _records(regs, folder)
    current = aliases.resolver()
    notes = []

    ad_hoc = set(table["ad_hoc"])
    pool = _available(regs, folder)
    held = [a for a in pool if a in ad_hoc]
    rest = [a for a in pool if a not in ad_hoc]
    too_big = []
    if large:
        failed_large = history.perf(folder)[3]
        too_big = [a for a in rest if a in failed_large]
        rest = [a for a in rest if a not in failed_large]
    wrong_role = [a for a in rest if (table["models"].get(a) or "general") not in admitted]
    rest = [a for a in rest if a not in wrong_role]

    def fam(alias: str) -> str:
        return recs[alias]["family"] if alias in recs else family(alias)

    def conn(alias: str) -> str:
        return recs[alias]["connection"] if alias in recs else connections.connection_of(alias)

    scored = [a for a in rest if recs[a]["of"] > 0]
    primary = second = None
    contenders = []
    if members is None:
        if scored:
            primary = max(scored, key=lambda a: (recs[a]["found"], recs[a]["recall"], paid[a]))
            bar = SECOND_SHARE * recs[primary]["recall"]
            contenders = [a for a in scored if a != primary and fam(a) != fam(primary)
                          and recs[a]["tasks"] >= SECOND_TASKS and recs[a]["recall"] >= bar]
            if contenders:
                second = max(contenders, key=lambda a: (recs[a]["stale_days"], paid[a], recs[a]["found"]))
            else:
                others = [a for a in scored if a != primary]
                if others:
                    second = max(others, key=lambda a: (recs[a]["found"], paid[a]))
        chosen = [a for a in (primary, second) if a]
    else:
        chosen = list(dict.fromkeys(aliases.follow(current, a) for a in members))
    families = {fam(a) for a in chosen}

    seats = []
    nominated = set()
    count = max(0, min(EXPLORER_CLAMP, int(explorers or 0)))
    for name in list(dict.fromkeys(nominees or ()))[:count]:
        alias = aliases.follow(current, name)
        if alias in chosen:
            notes.append(f"{alias} is already on the panel; not seated twice")
            continue
        if alias not in rest and alias in ad_hoc and alias in regs:
            notes.append(f"{alias} is ad hoc (never chosen automatically): seated because it was named; "
                         "it may be costly")
        elif alias in too_big:
            notes.append(f"{alias} failed the large prompt in its latest perf run: seated because it was named")
        elif alias in wrong_role:
            role = table["models"].get(alias) or "general"
            notes.append(f"{alias} has role {role}, which shape {shape} does not admit: seated because it was named")
        elif alias not in rest:
            notes.append(f"{alias} is not available (not registered, no longer served, or failing its perf runs); "
                         "its seat goes to the stalest model")
            continue
        seats.append(alias)
        nominated.add(alias)
        chosen.append(alias)
        families.add(fam(alias))

    skip = {aliases.follow(current, a) for a in avoid or ()}
    # issue 20: under Thompson, ties on RTR-6's key go to the model seen least (see the Decisions above)
    fewest = count and collections.settings().policy == policy.THOMPSON
    while len(seats) < count:
        free = [a for a in rest if a not in chosen and fam(a) not in families and a not in skip]
        if not free:
            notes.append("no model left for an explorer seat (the rest are seated, of a seated family, or avoided)")
            break
        pick = max(free, key=lambda a: (recs[a]["stale_days"], paid[a], -(recs[a]["recall"] or 0),
                                        -recs[a]["offloads"] if fewest else 0))
        seats.append(pick)
        chosen.append(pick)
        families.add(fam(pick))

    used = {conn(a) for a in chosen}
    spare = [a for a in scored if a not in chosen]
    apart = [a for a in spare if fam(a) not in families and recs[a]["connection"] not in used]
    reserve = max(apart or spare, key=lambda a: (recs[a]["found"], paid[a]), default=None)

    def record(alias: str | None) -> Rec | None:
        if alias is None:
            return None
        found = dict(recs[alias]) if alias in recs else _unregistered(alias)
        if alias in nominated:
            found["nominated"] = True
        return found

    seats += [None] * (EXPLORER_CLAMP - len(seats))
    return {
        "primary": record(primary),
        "second": record(second),
        "explorer": record(seats[0]),
        "explorer2": record(seats[1]),
        "reserve": record(reserve),
        "considered": rest,
        "untried": [a for a in rest if not recs[a]["offloads"]],
        "contenders": contenders,
        "excluded_for_size": too_big,
        "excluded_for_role": wrong_role,
        "held_ad_hoc": held,
        "shape": shape,
        "notes": notes,
    }


def _unregistered(alias: str) -> Rec:
    tag = connections.full_tag_of(alias)
    return {"model": alias, "connection": tag.split("/", 1)[0], "full_tag": tag, "family": family(alias),
            "found": 0, "of": 0, "tasks": 0, "recall": None, "offloads": 0, "helped": 0, "judged": 0,
            "stale_days": NEVER}


# -- CLI (RTR-12) -----------------------------------------------------------------------------

def describe(rec: Mapping[str, Any] | None) -> str:
    """One line about a seated record."""
    if rec is None:
        return "—"
    used = "never used" if rec["stale_days"] >= NEVER else f"last used {rec['stale_days']} day(s) ago"
    suite = (f"found {rec['found']}/{rec['of']} in {rec['tasks']} task(s) (recall {rec['recall']:.2f})"
             if rec["of"] else "no suite score")
    helped = f"{rec['helped']}/{rec['judged']} helped" if rec["judged"] else "none judged"
    mark = " (named)" if rec.get("nominated") else ""
    return (f"{rec['model']}{mark}  [{rec['full_tag']}]  {suite}; {rec['offloads']} offload(s), {helped}; {used}")


def render(result: Mapping[str, Any], large: bool) -> str:
    lines = [f"shape {result['shape']}, {'large' if large else 'small'} prompt"]
    for key, label in (("primary", "primary"), ("second", "second"), ("explorer", "explorer"),
                       ("explorer2", "explorer 2"), ("reserve", "reserve")):
        lines.append(f"{label:<11}{describe(result[key])}")
    for note in result["notes"]:
        lines.append(f"note: {note}")
    for key, label in (("held_ad_hoc", "held back (ad hoc)"), ("excluded_for_size", "excluded for size"),
                       ("excluded_for_role", "excluded for role")):
        if result[key]:
            lines.append(f"{label}: {', '.join(result[key])}")
    lines.append(f"untried: {len(result['untried'])} of {len(result['considered'])} considered")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.panel.route",
                                     description="Show the panel the router would seat.")
    parser.add_argument("--shape", default="general", help="the task's shape (default general)")
    parser.add_argument("--small", action="store_true", help="a small prompt (default: a large one)")
    parser.add_argument("--with", dest="nominees", action="append", default=[], metavar="ALIAS",
                        help="seat this alias in an explorer chair (repeatable)")
    args = parser.parse_args(argv)
    refresh_served()  # a one-shot process: ask the endpoints now rather than show an unfiltered pool
    try:
        result = pick_seats(args.shape, large=not args.small, nominees=args.nominees, avoid=cooling())
    except Invalid as exc:
        sys.exit(str(exc))
    print(render(result, not args.small))


if __name__ == "__main__":
    main()
