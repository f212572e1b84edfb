"""The `bench` CLI (suite-cli-mcp.md §9): a thin HTTP client of a running Benchwarmers server.

    bench ask core "Is this loop off by one?" -f app.py
    bench verdict p20261022-101500-ab12cd34ef567890.member1 --useful --real "the loop skips xs[0]"

Standard library only, and nothing here reads the data folder: the server may be on another machine.
Results go to stdout and everything else (notes, progress, the seat table, errors) to stderr, so
`bench ask core "..." > answer.md` keeps only the answer. Exit codes: 0 done, 1 refused or failed,
2 bad usage, 3 no server reachable, 130 Ctrl-C.

The commands here are those the gateway's own routes answer (§9.2 `ask`, `verdict`, `collections`, and
`record` and `pending` for `GET /bench/record` and `POST /bench/pending`, which §9.2 does not list but a
script judging panels needs). The commands that read the dashboard's `/api/...` routes (status, models,
model, candidates, onboard, dismiss, collection, endpoints, endpoint, keys, key, settings) join the parser
with the dashboard: until then a command that could only fail is not offered.

Why argparse and not click (llm's choice): the core is standard library only, and argparse's
subparsers give the same shape, one front door with one subcommand per action and each command's
help on its own parser.
"""

import argparse
import json
import re
import sys
import os
import time
import urllib.parse
from pathlib import Path

from metrics import __version__, remote

PREFIX = "bench/"
PROGRESS_EVERY = 30.0  # seconds of silence on stderr before a long panel says how long it has run
# a seat's section as the panel streams it (metrics.panel.section): its heading, then call id, status, seconds
SECTION = re.compile(r"^## (?P<seat>.+?) — (?P<alias>.+)\n"
                     r"`(?P<call>[^`]+)` · (?P<status>\w+) · (?P<seconds>[\d.]+)s", re.MULTILINE)
SEATS = re.compile(r"· (\d+) members \+ (\d+) explorers")
CALL_ID = re.compile(r"\bp\d{8}-\d{6}-[0-9a-f]{4,}\.[a-z]+\d*\b")  # as mcp_tools.CALL_ID; GATEWAY.md, "Panel ids"


class Failed(Exception):
    """A failure the CLI detected: `bench: <message>` on stderr, exit `code`."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


# -- output ---------------------------------------------------------------------------------------------------

def note(text):
    print(text, file=sys.stderr, flush=True)


def cell(value):
    """CLI-7: None and False are empty, True is `yes`, a list `a, b`."""
    if value is None or value is False:
        return ""
    if value is True:
        return "yes"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def table(rows, columns):
    """CLI-7: a header row, a dashes row, left-justified columns two spaces apart, no trailing space."""
    cells = [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = [columns, ["-" * w for w in widths], *cells]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in lines)


def dump(payload):
    """`--json`: the server's reply, indent 2, non-ASCII kept."""
    print(json.dumps(payload, indent=2, ensure_ascii=False))


def collection_model(name):
    """CLI-9: `core` and `bench/core` are the same collection."""
    return name if name.startswith(PREFIX) else PREFIX + name


# -- talking to the server ---------------------------------------------------------------------------------

def problem_message(exc):
    """CLI-3, CLI-4: what a server's refusal or absence means, and the exit code it earns."""
    if isinstance(exc, remote.Unreachable):
        where = exc.base + (f" (nor at {exc.also})" if exc.also else "")
        return (f"Benchwarmers is not running at {where} ({exc.reason}). Start it with `bench gateway` (or its "
                "service), or set BENCHWARMERS_URL."), 3
    if isinstance(exc, remote.NoAnswer):
        return f"no answer from {exc.base} in {exc.seconds:g} s; set BENCHWARMERS_TIMEOUT for longer panels", 1
    if isinstance(exc, remote.NotJSON):
        return (f"{exc.base}{exc.path} did not answer JSON; is BENCHWARMERS_URL a Benchwarmers server?"), 1
    payload = exc.payload if isinstance(exc.payload, dict) else {}
    errors = payload.get("errors")
    if isinstance(errors, list) and errors:
        message = "; ".join(str(e) for e in errors)
    else:
        message = exc.error_message() or exc.text(300) or exc.reason
    if exc.status == 401:
        gateway = exc.path.startswith(remote.GATEWAY_PREFIXES)
        message += "; set BENCHWARMERS_KEY (a gateway key)" if gateway else "; set BENCHWARMERS_ADMIN_TOKEN"
    return f"{exc.method} {exc.path} refused ({exc.status}): {message}", 1


def request(args, method, path, body=None):
    """The reply's JSON, or Failed with the CLI's wording."""
    try:
        return remote.call(args.server, method, path, body)
    except remote.Problem as exc:
        raise Failed(*problem_message(exc)) from None


# -- ask --------------------------------------------------------------------------------------------------

def prompt_of(args):
    """CLI-8: the words, stdin (`-`, or no words and stdin not a terminal), then each file in a fenced block."""
    words = args.prompt
    parts = []
    if words == ["-"] or (not words and not sys.stdin.isatty()):
        parts.append(sys.stdin.read())
    elif words:
        parts.append(" ".join(words))
    for name in args.file:
        try:
            text = Path(name).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise Failed(f"cannot read {name}: {exc.strerror or exc}") from None
        parts.append(f"`{Path(name).name}`:\n```\n{text.rstrip()}\n```")
    prompt = "\n\n".join(part for part in parts if part.strip())
    if not prompt.strip():
        raise Failed("nothing to ask: give a prompt, -f FILE, or pipe one in", 2)
    return prompt


def ask_body(args, prompt, stream):
    messages = [{"role": "user", "content": prompt}]
    if args.system:
        messages.insert(0, {"role": "system", "content": args.system})
    body = {"model": collection_model(args.collection), "messages": messages}
    if args.reply:
        body["bench"] = {"reply": args.reply}
    if args.with_:
        body["with"] = args.with_
    if stream:
        body["stream"] = True
    return body


def cmd_ask(args):
    """§9.2 ask: the answer to stdout as it comes, each seat on stderr as it finishes, the seat table last."""
    prompt = prompt_of(args)
    if args.json:
        return dump(request(args, "POST", "/v1/chat/completions", ask_body(args, prompt, False)))
    if sys.stderr.isatty():
        note(f"asking {collection_model(args.collection)}; a panel can take minutes…")
    try:
        reply, _ = remote.open_reply(args.server, "POST", "/v1/chat/completions", ask_body(args, prompt, True),
                                     accept="text/event-stream")
    except remote.Problem as exc:
        raise Failed(*problem_message(exc)) from None
    with reply:
        bench = Asking(args.server).follow(reply)
    seats = bench.get("seats") or []
    note("")
    note("Check each answer, then record a verdict per seat you checked: "
         "bench verdict <call> --useful|--not-useful")
    if seats:
        note(table(seats, ["call", "seat", "alias", "status", "seconds"]))


class Asking:
    """One streamed panel: its text to stdout, its seats and elapsed time to stderr."""

    def __init__(self, server, every=PROGRESS_EVERY):
        self.server = server
        self.every = every
        self.started = time.monotonic()
        self.said = self.started
        self.text = ""
        self.seen = set()
        self.expected = 0

    def follow(self, reply):
        """Read the SSE stream to its end; returns the `bench` object of the last chunk."""
        bench = {}
        while True:
            try:
                line = reply.readline()
            except TimeoutError:
                raise Failed(*problem_message(remote.NoAnswer(self.server.base, self.server.timeout))) from None
            if not line:
                break
            line = line.decode("utf-8", "replace").strip()
            self.tick()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            if "error" in chunk:  # a failure after the 200 (STR): said in the stream, in the chat error shape
                raise Failed(f"the panel failed: {chunk['error'].get('message', chunk['error'])}")
            for choice in chunk.get("choices") or []:
                self.piece((choice.get("delta") or {}).get("content") or "")
            bench = chunk.get("bench") or bench
        sys.stdout.write("\n" if self.text and not self.text.endswith("\n") else "")
        sys.stdout.flush()
        return bench

    def piece(self, text):
        if not text:
            return
        sys.stdout.write(text)
        sys.stdout.flush()
        self.text += text
        if not self.expected and SEATS.search(self.text):
            self.expected = sum(int(n) for n in SEATS.search(self.text).groups())
        for seat in SECTION.finditer(self.text):
            if seat["call"] not in self.seen:
                self.seen.add(seat["call"])
                of = f" ({len(self.seen)} of {self.expected} seats)" if self.expected else ""
                self.say(f"  {seat['seat']} {seat['alias']}: {seat['status']}, {seat['seconds']} s{of}")

    def tick(self):
        """A panel that takes minutes says so every `every` seconds (the gateway's keep-alives wake the reader)."""
        elapsed = time.monotonic() - self.started
        if elapsed > self.server.timeout:
            raise Failed(*problem_message(remote.NoAnswer(self.server.base, self.server.timeout)))
        if time.monotonic() - self.said >= self.every:
            answered = f", {len(self.seen)} of {self.expected} seats answered" if self.expected else ""
            self.say(f"  still asking: {elapsed:.0f} s{answered}")

    def say(self, text):
        self.said = time.monotonic()
        note(f"[{self.said - self.started:.0f} s]{text}")


# -- verdicts and records --------------------------------------------------------------------------------

def cmd_verdict(args):
    """§9.2 verdict: one seat judged, with the claims that proved true and untrue."""
    body = {"call": args.call, "useful": args.useful, "note": args.note or "", "real": args.real, "false": args.false}
    reply = request(args, "POST", "/bench/verdict", body)
    if args.json:
        return dump(reply)
    print(reply.get("note") or f"recorded {args.call}: {'useful' if args.useful else 'not useful'}, "
                                f"{len(args.real)} real, {len(args.false)} false")


def cmd_record(args):
    """`GET /bench/record`: each model's verdicts in a collection (optionally only those whose note holds words)."""
    query = "collection=" + urllib.parse.quote(collection_model(args.collection), safe="/")
    if args.task:
        query += "&task=" + urllib.parse.quote(args.task)
    reply = request(args, "GET", "/bench/record?" + query)
    if args.json:
        return dump(reply)
    rows = [{"alias": alias, **row} for alias, row in sorted((reply.get("aliases") or {}).items())]
    if not rows:
        on = f" on {args.task!r}" if args.task else ""
        return note(f"no verdicts yet in {collection_model(args.collection)}{on}")
    print(table(rows, ["alias", "useful", "notUseful", "judged", "lastAt"]))


def cmd_pending(args):
    """`POST /bench/pending`: which of these seats (named, or found in files such as an agent's transcript)
    still have no verdict. One id a line on stdout."""
    calls = list(args.calls)
    for name in args.file:
        try:
            calls += CALL_ID.findall(Path(name).read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            raise Failed(f"cannot read {name}: {exc.strerror or exc}") from None
    calls = list(dict.fromkeys(calls))
    if not calls:
        raise Failed("no call ids: name some, or give -f FILE holding them", 2)
    reply = request(args, "POST", "/bench/pending", {"calls": calls})
    if args.json:
        return dump(reply)
    pending = reply.get("pending") or []
    for call in pending:
        print(call)
    if not pending:
        note("every one of these seats has a verdict (or is unknown to this server)")


def cmd_collections(args):
    """§9.2 collections: the collections this key may call, one row each (the `:<mode>` twins folded)."""
    reply = request(args, "GET", "/v1/models")
    if args.json:
        return dump(reply)
    rows = [{**row, "name": row["id"].removeprefix(PREFIX)} for row in reply.get("data") or []
            if isinstance(row, dict) and ":" not in str(row.get("id", ""))]
    if args.names:
        return print("\n".join(row["name"] for row in rows))
    if not rows:
        return note("no collections yet: make one on the dashboard's Collections page, or in the data folder's "
                    "config/collections.json")
    print(table(rows, ["name", "members", "explorers", "reply", "description"]))


# -- the parser ---------------------------------------------------------------------------------------------

class Intermixed(argparse.ArgumentParser):
    """A command's parser that takes its words and options in any order: plain argparse stops filling
    `prompt` at the first option, so `bench ask core --merged "why?"` would refuse "why?"."""

    mixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self.mixing:  # parse_known_intermixed_args calls back here for each of its two passes
            return super().parse_known_args(args, namespace)
        self.mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self.mixing = False


def global_options(parser, suppress):
    """`--json` and `--url`, before or after the command: the subparsers' copies must not reset them."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS if suppress else False,
                        help="print the server's reply as JSON")
    parser.add_argument("--url", default=default, metavar="URL", help="the server (default BENCHWARMERS_URL)")


def command(sub, name, func, summary, epilog):
    parser = sub.add_parser(name, help=summary, description=summary, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    global_options(parser, suppress=True)
    parser.set_defaults(func=func)
    return parser


# (name, one-line summary) of every command, as the launcher's usage lists them
COMMANDS = [
    ("ask <collection> [prompt]", "put a prompt to every seat of a collection"),
    ("verdict <call> --useful|--not-useful", "record whether a seat's answer was useful"),
    ("collections", "the collections you may call"),
    ("record <collection>", "each model's verdicts in a collection"),
    ("pending <call>... [-f FILE]", "which seats still have no verdict"),
]


def parser(prog="bench"):
    p = argparse.ArgumentParser(prog=prog, description="Ask a panel of models and judge its answers, from a shell.",
                                epilog="Server commands (gateway, mcp, demo) are the launcher's: see "
                                       f"`{prog}` with no arguments. Where another `bench` comes first on PATH, "
                                       "type `benchwarmers`.")
    p.add_argument("--version", action="version", version=f"bench {__version__}")
    global_options(p, suppress=False)
    sub = p.add_subparsers(dest="command", metavar="command", required=True, parser_class=Intermixed)
    ask = command(sub, "ask", cmd_ask, "put a prompt to every seat of a collection", """examples:
  bench ask core "Is this loop off by one? for i in range(1, len(xs)): ..."
  bench ask core "Review this change" -f app.py -f test_app.py
  git diff | bench ask core --system "You review diffs." -
  bench ask core --merged "..."        one reconciled answer (every seat still asked)""")
    ask.add_argument("collection", help="core or bench/core")
    ask.add_argument("prompt", nargs="*", help="the words to ask; `-` (or none, with a pipe) reads stdin")
    ask.add_argument("-f", "--file", action="append", default=[], metavar="FILE", help="add a file's text (repeat)")
    ask.add_argument("--system", help="a system message for every seat")
    reply = ask.add_mutually_exclusive_group()
    reply.add_argument("--merged", dest="reply", action="store_const", const="merged", help="one reconciled answer")
    reply.add_argument("--all", dest="reply", action="store_const", const="all", help="every seat's answer")
    ask.add_argument("--with", dest="with_", action="append", default=[], metavar="ALIAS",
                     help="seat this model as an explorer too (repeat)")
    verdict = command(sub, "verdict", cmd_verdict, "record whether a seat's answer was useful", """examples:
  bench verdict p20261022-101500-ab12cd34ef567890.member1 --useful --real "xs[0] is skipped"
  bench verdict p20261022-101500-ab12cd34ef567890.member2 --not-useful --false "the loop is correct" """)
    verdict.add_argument("call", help="the seat's call id, from ask's seat table")
    useful = verdict.add_mutually_exclusive_group(required=True)
    useful.add_argument("--useful", dest="useful", action="store_true", default=None)
    useful.add_argument("--not-useful", dest="useful", action="store_false")
    verdict.add_argument("--note", help="one line on why")
    verdict.add_argument("--real", action="append", default=[], metavar="CLAIM",
                         help="a claim that proved true (repeat)")
    verdict.add_argument("--false", action="append", default=[], metavar="CLAIM",
                         help="a claim that proved untrue (repeat)")
    collections = command(sub, "collections", cmd_collections, "the collections you may call", """examples:
  bench collections
  bench collections --names            one name a line, for scripts""")
    collections.add_argument("--names", action="store_true", help="only the names, one a line")
    record = command(sub, "record", cmd_record, "each model's verdicts in a collection", """examples:
  bench record core
  bench record core --task "off by one"    only verdicts whose note holds these words""")
    record.add_argument("collection")
    record.add_argument("--task", default="", help="only verdicts whose note holds these words")
    pending = command(sub, "pending", cmd_pending, "which seats still have no verdict", """examples:
  bench pending p20261022-101500-ab12cd34ef567890.member1
  bench pending -f ~/.claude/projects/x/session.jsonl   the ids an agent's transcript holds""")
    pending.add_argument("calls", nargs="*", metavar="call")
    pending.add_argument("-f", "--file", action="append", default=[], metavar="FILE", help="read call ids from a file")
    return p


def main(argv=None):
    """Run one command; the program's name is the one the user typed (the launcher passes it on)."""
    argv = sys.argv[1:] if argv is None else argv
    prog = os.environ.get("BENCHWARMERS_PROG") or "bench"
    args = parser(prog).parse_args(argv)
    args.server = remote.Server.from_env(args.url)
    try:
        args.func(args)
    except Failed as exc:
        note(f"bench: {exc}")
        return exc.code
    except KeyboardInterrupt:
        note("\nbench: stopped; a panel already asked goes on at the server and records every seat")
        return 130
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
