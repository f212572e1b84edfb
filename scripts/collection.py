"""Make, list or remove a collection from the command line: what `bench/<name>` asks.

    python scripts/collection.py add NAME MEMBER... [--description TEXT] [--reply all|merged|route]
    python scripts/collection.py list
    python scripts/collection.py remove NAME

`add` creates or replaces `NAME` in the data folder's `config/collections.json`. Every check is made
before anything is written, and all of them are said at once: the name (2-32 lower-case letters, digits
or `-`), at least one member and at most `max_calls` (config/gateway.json), every member a registered
model, a known reply mode. A collections.json that cannot be read is never written over.

Why a script: the first panel should not need a text editor or a browser; the dashboard's Collections
editor makes the same file.
"""

import argparse
import datetime
import sys

from metrics import collections, endpoints, fileio, paths, registry

MAX_DESCRIPTION = 300


def problems(name, members, reply, description):
    found = []
    if not endpoints.valid_name(name):
        found.append("name: 2-32 lower-case letters, digits or '-', saying what it is for, e.g. reviewers")
    if not members:
        found.append("a collection needs at least one member")
    most = collections.settings()["max_calls"]
    if len(members) > most:
        found.append(f"at most {most} members (max_calls in config/gateway.json)")
    strangers = [m for m in members if m not in registry.registrations()]
    if strangers:
        found.append(f"not registered: {', '.join(strangers)} (registered: "
                     f"{', '.join(registry.registered_models()) or 'none yet'}; onboard one with "
                     "`python scripts/onboard.py SERVED_NAME`)")
    if reply not in collections.REPLIES:
        found.append(f"reply must be one of {', '.join(collections.REPLIES)}")
    if len(description) > MAX_DESCRIPTION:
        found.append(f"description: at most {MAX_DESCRIPTION} characters")
    if collections.unreadable(collections.collections_path()):
        found.append(f"{collections.collections_problem()}; this command will not write over it")
    return found


def log(field, old, new):
    fileio.append_jsonl(paths.file("config", "changes.jsonl"),
                        {"at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "by": "cli",
                         "alias": "", "field": field, "old": old, "new": new})


def add(args):
    name = args.name.removeprefix(collections.PREFIX)
    members = list(dict.fromkeys(args.members))
    description = " ".join(args.description.split())
    found = problems(name, members, args.reply, description)
    if found:
        sys.exit("collection not saved:\n" + "\n".join(f"  - {p}" for p in found))
    entry = {"members": members, "reply": args.reply}
    if description:
        entry["description"] = description

    def put(data):
        old = data.get(name)
        data[name] = entry
        return old

    old = fileio.update(collections.collections_path(), put)
    log(f"collection {name}", old, entry)
    print(f"{'replaced' if old else 'made'} bench/{name}: {', '.join(members)}"
          f" (+ up to {collections.explorers_for(len(members))} explorer seat(s)); reply {args.reply}")
    print(f"Ask it: any OpenAI-compatible client, base URL http://127.0.0.1:8123/v1, model bench/{name}"
          " (start the gateway with `python gateway.py`)")
    return 0


def listing(args):
    found = collections.load()
    if not found:
        print("no collections yet: python scripts/collection.py add NAME MEMBER...")
    for name, c in found.items():
        members = c.get("members") if isinstance(c.get("members"), list) else []
        print(f"bench/{name}  {', '.join(str(m) for m in members)}  {collections.description(c)}".rstrip())
    return 0


def remove(args):
    name = args.name.removeprefix(collections.PREFIX)
    if collections.unreadable(collections.collections_path()):
        sys.exit(f"{collections.collections_problem()}; this command will not write over it")
    old = fileio.update(collections.collections_path(), lambda data: data.pop(name, None))
    if old is None:
        sys.exit(f"no collection '{name}'; `python scripts/collection.py list` lists them")
    log(f"collection {name}", old, None)
    print(f"removed bench/{name}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="collection.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("add", help="make (or replace) a collection")
    made.add_argument("name", metavar="NAME", help="the collection's name; callers ask for bench/NAME")
    made.add_argument("members", metavar="MEMBER", nargs="*", help="registered model aliases")
    made.add_argument("--description", default="", help="what it is for (shown in GET /v1/models)")
    made.add_argument("--reply", default="all", help="all (every answer), merged (one answer) or route (agents)")
    made.set_defaults(run=add)
    sub.add_parser("list", help="list the collections").set_defaults(run=listing)
    gone = sub.add_parser("remove", help="remove a collection")
    gone.add_argument("name", metavar="NAME")
    gone.set_defaults(run=remove)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
