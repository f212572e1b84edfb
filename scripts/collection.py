"""Make, list or remove a collection from the command line: what `bench/<name>` asks.

    python -m benchwarmers.scripts.collection add NAME MEMBER... [--description TEXT] [--reply all|merged|route]
    python -m benchwarmers.scripts.collection list
    python -m benchwarmers.scripts.collection remove NAME

`add` creates or replaces `NAME` in the data folder's `config/collections.json` by the dashboard's own
rules (`admin.collectionedit.save`, CO-7): every check is made before anything is written, and all of
them are said at once; a collections.json that cannot be read is never written over; the change is logged
to `config/changes.jsonl` as by `cli`.

Why a script: the first panel should not need a text editor or a browser; the dashboard's Collections
editor makes the same file by the same function.
"""

import argparse
import sys

from ..panel import collections
from ..admin import collectionedit
from ..core.errors import Refusal

WHO = "cli"  # the `by` of its lines in config/changes.jsonl


def refused(errors):
    sys.exit("collection not saved:\n" + "\n".join(f"  - {e}" for e in errors))


def add(args):
    members = list(dict.fromkeys(args.members))
    body = {"name": args.name, "members": members, "description": args.description, "reply": args.reply}
    try:
        collectionedit.save(body, WHO)
    except Refusal as exc:
        refused(exc.messages)
    name = args.name.removeprefix(collections.PREFIX)
    print(f"saved bench/{name}: {', '.join(members)} (+ up to {collections.explorers_for(len(members))} explorer "
          f"seat(s)); reply {args.reply}")
    print(f"Ask it: any OpenAI-compatible client, base URL http://127.0.0.1:8123/v1, model bench/{name}"
          " (start the gateway with `bench gateway`)")
    return 0


def listing(args):
    found = collections.load()
    if not found:
        print("no collections yet: python -m benchwarmers.scripts.collection add NAME MEMBER...")
    for name, c in found.items():
        print(f"bench/{name}  {', '.join(str(m) for m in c.members)}  {c.description}".rstrip())
    return 0


def remove(args):
    try:
        collectionedit.remove({"name": args.name}, WHO)
    except Refusal as exc:
        sys.exit("; ".join(exc.messages) + "; `python -m benchwarmers.scripts.collection list` lists them")
    print(f"removed bench/{args.name.removeprefix(collections.PREFIX)}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.scripts.collection",
                                     description=__doc__.split("\n\n")[0])
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
