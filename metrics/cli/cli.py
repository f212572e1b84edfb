"""The `bench` CLI (suite-cli-mcp.md §9): a thin HTTP client of a running Benchwarmers server.

    bench ask core "Is this loop off by one?" -f app.py
    bench verdict p20261022-101500-ab12cd34ef567890.member1 --useful --real "the loop skips xs[0]"

Standard library only, and nothing here reads the data folder: the server may be on another machine.
Results go to stdout and everything else (notes, progress, the seat table, errors) to stderr, so
`bench ask core "..." > answer.md` keeps only the answer. Exit codes: 0 done, 1 refused or failed,
2 bad usage, 3 no server reachable, 130 Ctrl-C.

Commands: those the gateway's own routes answer (§9.2 `ask`, `verdict`, `collections`, and `record` and
`pending` for `GET /bench/record` and `POST /bench/pending`, which §9.2 does not list but a script judging
panels needs), and those that manage the bench through the dashboard's `/api/...` routes (`status`,
`models`, `model`, `collection`, `keys`, `key`, `settings`, `endpoints`, `endpoint`, `candidates`, `onboard`,
`dismiss`). `endpoint limits` (the Endpoints page's rate limits per connection, `GET /api/connections` and
`POST /api/connection-limits`) is not in §9.2's list: the page has it, so the shell has it too.

Decisions where §9 is silent:
- A dashboard refusal with `--json`: the refusal is printed whole on stdout and the command still fails
  (exit 1, its errors on stderr), so a script reads the server's own reply either way.
- Empty tables (`no models`, `no gateway keys`) say so on stderr: stdout holds only rows.
- `keys` shows a key's hint as `bwk_…<hint>` and an unscoped key's collections as `all`, as the dashboard does.
- `settings scheduler` with no mode and no job named shows the mode and the jobs, and writes nothing.
- A dashboard route is never retried on the gateway's own port (remote.py's fallback): it has none.
- `endpoint add|test|key` print what happened (`added endpoint x: it lists N models`, the test's "nothing
  saved") and then the server's note on its own line: the note alone ("The key was checked…") would not say
  whether anything was saved.
- `endpoint key` needs an endpoint that exists (else the server would add it; exit 1) and a key (an empty one
  would change nothing; exit 2): both are refused before anything is written.
- `endpoint limits`: no limit given shows the connections and their limits; given ones replace those entered,
  the rest are kept (as `collection save`), and `none` clears one. A connection it does not know is exit 1.
- `candidates --json` prints the server's reply untouched but for the list shown (`candidates`, or
  `dismissed` with `--dismissed`), which holds the filtered rows, as `models --json` does; with no filter it
  is the reply as the server sent it.
- `onboard --ad-hoc` without `--quick` is bad usage (exit 2). `status`, `stop` and `clear` are the queue's
  words only as the sole word with no `--endpoint`, `--quick` or `--ad-hoc` (else they are a model's served
  name); `--wait` goes with any of them. `--wait` prints a running model's step only when it changes, and
  Ctrl-C while it waits stops the following only (130): the queue runs on at the server.
- `dismiss` checks every name before it sends one, so a typo dismisses nothing; `--undo` matches the
  dismissed rows as well as the candidates (the union §9.2 names).

Why argparse and not click (llm's choice): the core is standard library only, and argparse's
subparsers give the same shape, one front door with one subcommand per action and each command's
help on its own parser.
"""

import argparse
import dataclasses
import getpass
import json
import re
import sys
import time
import urllib.parse
from pathlib import Path

from .. import __version__
from ..core import console, paths, settings
from ..core.errors import StoreUnavailable
from ..net import remote
from ..panel import policy
from ..store import moving, store

PREFIX = "bench/"
OPENAPI = "/openapi.json"  # the server's OpenAPI document, on either port (issue 33)
PROGRESS_EVERY = 30.0  # seconds of silence on stderr before a long panel says how long it has run
# a seat's section as the panel streams it (panel.panel.section): its heading, then call id, status, seconds
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
    console.say(*text.split("\n"))


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

def older(base, path):
    """CLI-2, CLI-3: the server predates the route this command needs."""
    return (f"the server at {base} has no {path.split('?', 1)[0]}: it is older than this bench ({__version__}). "
            "Upgrade it, or use its dashboard for this.")


def problem_message(exc):
    """CLI-2, CLI-3, CLI-4: what a server's refusal or absence means, and the exit code it earns."""
    if isinstance(exc, remote.Unreachable):
        where = exc.base + (f" (nor at {exc.also})" if exc.also else "")
        return (f"Benchwarmers is not running at {where} ({exc.reason}). Start it with `bench serve` (or its "
                "service), or set BENCHWARMERS_URL."), 3
    if isinstance(exc, remote.NoAnswer):
        return f"no answer from {exc.base} in {exc.seconds:g} s; set BENCHWARMERS_TIMEOUT for longer panels", 1
    if isinstance(exc, remote.NotJSON):
        if exc.html and exc.path.startswith("/api/"):  # an older dashboard answers an unknown GET with its page
            return older(exc.base, exc.path), 1
        return (f"{exc.base}{exc.path} did not answer JSON; is BENCHWARMERS_URL a Benchwarmers server?"), 1
    payload = exc.payload if isinstance(exc.payload, dict) else {}
    errors = payload.get("errors")
    if exc.status == 404 and errors == ["unknown endpoint"]:
        return older(exc.base, exc.path), 1
    if isinstance(errors, list) and errors:
        message = "; ".join(str(e) for e in errors)
    else:
        message = exc.error_message() or exc.text(300) or exc.reason
    if exc.status == 401:
        gateway = exc.path.startswith(remote.GATEWAY_PREFIXES)
        message += "; set BENCHWARMERS_KEY (a gateway key)" if gateway else "; set BENCHWARMERS_ADMIN_TOKEN"
    return f"{exc.method} {exc.path} refused ({exc.status}): {message}", 1


def request(args, method, path, body=None):
    """The reply's JSON, or Failed with the CLI's wording.

    A dashboard route is asked of the URL given (or the dashboard's port) only: the gateway's own port has
    no dashboard routes, so falling back to it would turn "not running" into a confusing refusal. A dashboard
    refusal (`{"ok": false, "errors": [...]}`, any status but 401) is returned as the reply (CLI-3);
    `dashboard()` turns it into the command's failure."""
    gateway = path.startswith(remote.GATEWAY_PREFIXES)
    server = args.server if gateway else dataclasses.replace(args.server, fallback="")
    try:
        return remote.call(server, method, path, body)
    except remote.Refused as exc:
        payload = exc.payload
        refusal = (not gateway and exc.status != 401 and isinstance(payload, dict) and payload.get("ok") is False
                   and isinstance(payload.get("errors"), list) and payload["errors"] != ["unknown endpoint"])
        if refusal:
            return payload
        raise Failed(*problem_message(exc)) from None
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
        note("")  # the table stands apart from the hint, as every table the CLI prints does
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


def _shared():
    """The Postgres store BENCH_DATABASE_URL names, for `bench store`; it runs here, not at a server."""
    if store.kind() != "postgres":
        raise Failed("bench store needs BENCH_DATABASE_URL (docs/replicas.md)", code=2)
    try:
        return store.current()
    except StoreUnavailable as exc:
        raise Failed(str(exc)) from exc


def _moved(counts, verb):
    for name, what in counts.items():
        print(f"{verb} {name}: {what}")


def cmd_store_import(args):
    _moved(moving.into(_shared(), args.folder or paths.data()), "imported")


def cmd_store_export(args):
    _moved(moving.out(_shared(), args.folder or paths.data()), "exported")


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
        return note("no collections yet: make one with `bench collection save NAME --members a,b` (or on the "
                    "dashboard's Collections page)")
    print(table(rows, ["name", "members", "explorers", "reply", "description"]))


def cmd_openapi(args):
    """Issue 33 (OAS-1): where the server's OpenAPI document is, and what it covers; `--json` prints it. The route is
    the admin login's on the dashboard's port and a gateway key's on the gateway's: the key is tried when the
    token is refused. Asked of the URL given only, so the URL printed is the one that answered."""
    server = dataclasses.replace(args.server, fallback="")
    try:
        try:
            document = remote.call(server, "GET", OPENAPI)
        except remote.Refused as exc:
            if exc.status != 401 or not server.key:
                raise
            document = remote.call(dataclasses.replace(server, admin_token=server.key), "GET", OPENAPI)
    except remote.Problem as exc:
        raise Failed(*problem_message(exc)) from None
    if args.json:
        return dump(document)
    info, paths = document.get("info") or {}, document.get("paths") or {}
    print(f"{server.base.rstrip('/')}{OPENAPI}")
    note(f"OpenAPI {document.get('openapi')}: {len(paths)} paths, {sum(map(len, paths.values()))} operations of "
         f"{info.get('title')} {info.get('version')}; `--json` prints it")


# -- managing the bench: the dashboard's routes (§9.2) ---------------------------------------------------------

def dashboard(args, method, path, body=None):
    """A dashboard route's reply when it is `ok`. A refusal fails with its errors joined (CLI-3); with `--json`
    the refusal is printed whole first, so a script reads the server's own reply either way (our decision)."""
    reply = request(args, method, path, body)
    if isinstance(reply, dict) and reply.get("ok") is False:
        if args.json:
            dump(reply)
        raise Failed("; ".join(str(e) for e in reply.get("errors") or []) or "refused")
    return reply


def done(args, reply, default):
    """CLI-7: an action's reply whole with `--json`; else its note (or `default`) on stdout, and on stderr each
    warning and the registry-sync report (MP-9: whether the llm CLI has the change too) as `note: ...`."""
    if args.json:
        return dump(reply)
    print(reply.get("note") or default)
    for warning in [*(reply.get("warnings") or []), reply.get("sync")]:
        if warning:
            note(f"note: {warning}")


def confirm(args, what):
    """CLI-5: `--yes` proceeds; without a terminal on stdin it is a usage error; else `<what>? [y/N]` on
    stderr, and only `y` or `yes` goes on. Called before anything is sent."""
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise Failed(f"{what}: add --yes to do this without a terminal to ask in", 2)
    sys.stderr.write(f"{what}? [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise Failed("left as it was")


def csv(text):
    """§9.2: comma-split, trimmed, empties dropped."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def bare(name):
    """CLI-9: a collection's name as the dashboard keeps it, without `bench/`."""
    return name.strip().removeprefix(PREFIX)


def cmd_status(args):
    """§9.2 status: the server, its bench and who may use it."""
    reply = dashboard(args, "GET", "/api/status")
    if args.json:
        return dump(reply)
    count = reply.get("endpoints") or 0
    endpoints = (f"{count} (default {reply.get('default_endpoint')})" if count else
                 "none yet: add one where the server runs with `bench init --endpoint NAME BASE_URL --key`")
    auth = "admin token set" if reply.get("auth") else "none (this machine only)"
    rows = [("gateway", reply.get("gateway")), ("data", reply.get("data")),
            ("models", f"{reply.get('models', 0)} chat, {reply.get('decision_models', 0)} decision, "
                       f"{reply.get('retired', 0)} retired"),
            ("collections", reply.get("collections", 0)), ("endpoints", endpoints),
            ("client", f"{reply.get('client')}    scheduler {reply.get('scheduler')}"),
            ("auth", auth + (", gateway keys required" if reply.get("keys_required") else ""))]
    onboarding = reply.get("onboarding") or {}
    if onboarding.get("items"):
        state = "running" if onboarding.get("running") else "finished"
        rows.append(("onboarding", f"{state}, {onboarding['items']} in the queue"))
    print(f"Benchwarmers {reply.get('version')} at {args.server.base}")
    print("\n".join(f"  {label:<13}{value}" for label, value in rows))


def cmd_models(args):
    """§9.2 models: the bench's models, filtered here (the route has no query)."""
    reply = dashboard(args, "GET", "/api/models")
    find = (args.find or "").lower()
    rows = [row for row in reply.get("models") or [] if isinstance(row, dict)
            and (args.all or not row.get("retired"))
            and find in f"{row.get('alias', '')} {row.get('served', '')}".lower()
            and (args.role is None or row.get("role") == args.role)]
    if args.json:
        return dump({**reply, "models": rows})
    if not rows:
        return note("no models")
    columns = ["alias", "role", "status", "connection", "endpoint", "served"]
    print(table(rows, columns + ["retired"] if args.all else columns))


def model_write(args, path, body, action):
    done(args, dashboard(args, "POST", path, {"alias": args.alias, **body}), f"{action}: {args.alias} done")


def cmd_model_rename(args):
    model_write(args, "/api/model", {"new_alias": args.new}, "rename")


def cmd_model_role(args):
    model_write(args, "/api/model", {"new_role": args.role}, "role")


def cmd_model_ad_hoc(args):
    model_write(args, "/api/model", {"new_ad_hoc": args.state == "on"}, "ad-hoc")


def cmd_model_max_tokens(args):
    model_write(args, "/api/model-options", {"max_tokens": args.tokens}, "max-tokens")


def cmd_model_retire(args):
    confirm(args, f"retire {args.alias} (it leaves every collection; "
                  f"`bench model restore {args.alias}` brings it back)")
    model_write(args, "/api/remove", {"reason": args.reason or ""}, "retire")


def cmd_model_restore(args):
    model_write(args, "/api/restore", {}, "restore")


def cmd_model_retry(args):
    """MP-18: one fresh call; what it did (`<alias> answered in 1.2s`, the alerts it cleared) is the line."""
    reply = dashboard(args, "POST", "/api/retry", {"alias": args.alias})
    done(args, reply, "; ".join(str(c) for c in reply.get("changed") or []) or f"retry: {args.alias} done")


def tokens(text):
    """`model max-tokens A N|none`: a whole number, or `none` (or empty) for the endpoint's own (§13.16: exit 2)."""
    if text.strip().lower() in ("", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens; give one, or none") from None


def collection_of(args, name):
    """`(the collection's entry or None, every name)` from GET /api/collections."""
    rows = [row for row in dashboard(args, "GET", "/api/collections").get("collections") or [] if isinstance(row, dict)]
    return next((row for row in rows if row.get("name") == name), None), [str(row.get("name")) for row in rows]


def cmd_collection_show(args):
    """§9.2 collection show: the dashboard's whole entry, as JSON with or without `--json`."""
    name = bare(args.name)
    entry, names = collection_of(args, name)
    if entry is None:
        raise Failed(f"no collection '{name}'; have: {', '.join(names) or 'none'}")
    dump(entry)


def cmd_collection_rm(args):
    name = bare(args.name)
    confirm(args, f"remove bench/{name} (callers asking for it will get an error)")
    done(args, dashboard(args, "POST", "/api/collection/remove", {"name": name}), f"removed bench/{name}")


def cmd_collection_save(args):
    """§9.2 collection save: what is given replaces, the rest keeps the collection's values (a new one: no
    members, reply `all`); `--remove` takes members out, then each `--add` not already a member joins."""
    name = bare(args.name)
    current = collection_of(args, name)[0] or {}
    members = csv(args.members) if args.members is not None else [str(m) for m in current.get("members") or []]
    removed = set(csv(args.remove))
    members = [m for m in members if m not in removed] + [m for m in dict.fromkeys(csv(args.add)) if m not in members]
    body = {"name": name, "members": members,
            "shape": (current.get("shape") or "") if args.shape is None else args.shape,
            "description": (current.get("description") or "") if args.description is None else args.description,
            "tags": list(current.get("tags") or []) if args.tags is None else csv(args.tags),
            "reply": args.reply or current.get("reply") or "all",
            "merger": (current.get("merger") or "") if args.merger is None else args.merger}
    done(args, dashboard(args, "POST", "/api/collection", body), f"saved collection {name}: {', '.join(members)}")


def cmd_keys(args):
    """§9.2 keys: whether keys are asked, then each key's name, hint and limits; never a key or its hash."""
    reply = dashboard(args, "GET", "/api/gateway-keys")
    if args.json:
        return dump(reply)
    print("gateway keys are " + ("required" if reply.get("required") else "not required on this machine"))
    rows = [{**row, "hint": f"bwk_…{row.get('hint', '')}", "collections": row.get("collections") or "all"}
            for row in reply.get("keys") or [] if isinstance(row, dict)]
    if not rows:
        return note("no gateway keys: make one with `bench key create NAME`")
    print(table(rows, ["name", "hint", "collections", "rpm", "created", "last_used"]))


def cmd_key_create(args):
    """§9.2 key create: the key alone on stdout (so `$(bench key create x)` holds it), the warning on stderr."""
    body = {"name": args.name, "collections": [bare(c) for c in csv(args.collections)], "rpm": args.rpm}
    reply = dashboard(args, "POST", "/api/gateway-key", body)
    if args.json:
        dump(reply)
    else:
        print(reply.get("key"))
    note(f"note: the key {reply.get('name')} is shown this once (the server keeps only its hash); callers send it "
         "as `Authorization: Bearer <key>`, and `bench` reads it from BENCHWARMERS_KEY")


def cmd_key_revoke(args):
    confirm(args, f"revoke the gateway key {args.name} (callers using it are refused at once)")
    done(args, dashboard(args, "POST", "/api/gateway-key/remove", {"name": args.name}), f"revoked {args.name}")


def cmd_settings_gateway(args):
    body = {"max_calls": args.max_calls, "max_explorers": args.max_explorers, "policy": args.policy}
    done(args, dashboard(args, "POST", "/api/gateway-settings", body),
         f"gateway settings: at most {args.max_calls} calls a request, {args.max_explorers} explorers"
         + (f", the {args.policy} policy" if args.policy else ""))


def cmd_settings_client(args):
    done(args, dashboard(args, "POST", "/api/client", {"client": args.client}),
         f"client: {args.client} from the next model call")


def cmd_settings_scheduler(args):
    """§9.2 settings scheduler: the jobs start from the server's whole map. With no mode and no job named,
    the current state is shown and nothing is written (our decision: a save that changes nothing would
    still be logged as a change)."""
    status = dashboard(args, "GET", "/api/status")
    jobs = {str(job): bool(on) for job, on in (status.get("scheduler_jobs") or {}).items()}
    if args.mode is None and not args.on and not args.off:
        if args.json:
            return dump({"scheduler": status.get("scheduler"), "scheduler_jobs": jobs})
        print(f"scheduler {status.get('scheduler')}")
        return print(table([{"job": job, "on": on} for job, on in jobs.items()], ["job", "on"]))
    jobs.update({job: True for job in csv(args.on)})
    jobs.update({job: False for job in csv(args.off)})
    mode = args.mode or status.get("scheduler")
    on = ", ".join(job for job, value in jobs.items() if value) or "none"
    off = ", ".join(job for job, value in jobs.items() if not value) or "none"
    done(args, dashboard(args, "POST", "/api/scheduler", {"mode": mode, "jobs": jobs}),
         f"scheduler {mode}; on: {on}; off: {off} (it applies within a minute)")


# -- endpoints, candidates and onboarding: the Endpoints page's routes (§9.2) ---------------------------------

# the connection limits the Endpoints page takes (EP-15)
LIMITS = {"rpm": "requests per minute", "rpd": "requests per day", "tpm": "tokens per minute",
          "tpd": "tokens per day", "rpmo": "requests per calendar month (UTC)"}
ONBOARD_POLL = 5.0  # seconds between looks at a running onboarding queue (`onboard --wait`)


def cmd_endpoints(args):
    """§9.2 endpoints: each endpoint, whether its key is set (never the key), how many models are on it."""
    reply = dashboard(args, "GET", "/api/endpoints")
    if args.json:
        return dump(reply)
    rows = [row for row in reply.get("endpoints") or [] if isinstance(row, dict)]
    if not rows:
        return note("no endpoints yet: add one with `bench endpoint add NAME --base https://... --key-stdin`")
    print(table(rows, ["name", "base", "kind", "hub", "default", "key_set", "models"]))


def read_secret(args, name):
    """CLI-6: never an argument. `--key-stdin` takes stdin's first line; else a hidden prompt on a terminal;
    else none."""
    if args.key_stdin:
        return sys.stdin.readline().strip()
    if sys.stdin.isatty():
        return getpass.getpass(f"API key for {name} (hidden, Enter for none): ", stream=sys.stderr).strip()
    return ""


def cmd_endpoint_save(args):
    """§9.2 endpoint add|test|key: the base is `--base` or the endpoint's own; the key per CLI-6. `key` needs an
    endpoint that exists and a key to give it; `test` saves nothing."""
    name = args.name.strip().lower()
    rows = [row for row in dashboard(args, "GET", "/api/endpoints").get("endpoints") or [] if isinstance(row, dict)]
    current = next((row for row in rows if row.get("name") == name), None)
    if args.action == "key" and current is None:
        raise Failed(f"no endpoint '{name}'; have: {', '.join(str(r.get('name')) for r in rows) or 'none'}")
    base = args.base or (current or {}).get("base")
    if not base:
        raise Failed(f"give the base URL: bench endpoint {args.action} {name} --base https://...", 2)
    key = read_secret(args, name)
    if args.action == "key" and not key:
        raise Failed(f"no key given: pipe it in with --key-stdin (`pass show {name} | bench endpoint key {name} "
                     "--key-stdin`), or type it at the prompt on a terminal", 2)
    body = {"name": name, "base": base, "key": key, "new": args.action == "add", "kind": args.kind or "",
            "hub": args.hub or "", "test": args.action == "test"}
    reply = dashboard(args, "POST", "/api/endpoint", body)
    if args.json:
        return dump(reply)
    served = reply.get("served")
    print({"add": f"added endpoint {name}: it lists {served} models",
           "test": f"{name} answers: it lists {served} models (nothing saved)",
           "key": f"the key for {name} is changed: it lists {served} models"}[args.action])
    if reply.get("note"):
        print(reply["note"])


def cmd_endpoint_rm(args):
    with_models = " and retire every model on it (restorable once an endpoint of that name exists again)"
    confirm(args, f"remove the endpoint {args.name}" + (with_models if args.with_models else "")
            + "; its key stays in llm's key store")
    body = {"name": args.name.strip().lower(), "with_models": args.with_models}
    done(args, dashboard(args, "POST", "/api/endpoint/remove", body), f"removed endpoint {args.name}")


def cmd_endpoint_default(args):
    body = {"name": args.name.strip().lower()}
    done(args, dashboard(args, "POST", "/api/endpoint/default", body), f"{args.name} is the default endpoint")


def limit(text):
    """`endpoint limits --rpm N|none`: a whole number, or `none` to clear it (blank, as the page sends)."""
    if text.strip().lower() in ("", "none"):
        return ""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give one, or none") from None


def cmd_endpoint_limits(args):
    """The Endpoints page's rate limits per connection (EP-13, EP-15): shown with no limit given; else the
    limits given replace those entered, the rest are kept, and `none` clears one."""
    reply = dashboard(args, "GET", "/api/connections")
    rows = [row for row in reply.get("connections") or [] if isinstance(row, dict)]
    given = {k: getattr(args, k) for k in LIMITS if getattr(args, k) is not None}
    if not given:
        shown = [{"connection": r.get("name"), **(r.get("limits") or {}), "models": r.get("models")} for r in rows
                 if args.connection in (None, r.get("name"))]
        if args.connection and not shown:
            known = ", ".join(str(r.get("name")) for r in rows) or "none yet"
            raise Failed(f"no connection '{args.connection}'; known: {known}")
        if args.json:
            return dump({**reply, "connections": [r for r in rows if args.connection in (None, r.get("name"))]})
        if not shown:
            return note("no connections yet: one appears with the first model on the bench")
        return print(table(shown, ["connection", *LIMITS, "models"]))
    if not args.connection:
        raise Failed("name the connection: bench endpoint limits CONNECTION --rpm N (`bench endpoint limits` "
                     "lists them)", 2)
    current = next((r.get("limits") or {} for r in rows if r.get("name") == args.connection), {})
    limits = {k: v for k, v in {**current, **given}.items() if v != ""}
    saved = dashboard(args, "POST", "/api/connection-limits", {"connection": args.connection, "limits": limits})
    done(args, saved, f"limits for {args.connection}: "
                      + (", ".join(f"{k} {v}" for k, v in limits.items()) or "none"))


def candidate_rows(args, reply, dismissed):
    """§9.2 candidates' filters: the endpoint, the served name (any case), new only."""
    find = (args.find or "").lower()
    return [row for row in reply.get("dismissed" if dismissed else "candidates") or [] if isinstance(row, dict)
            and (args.endpoint is None or row.get("endpoint") == args.endpoint)
            and find in str(row.get("served", "")).lower() and (not args.new or row.get("new"))]


def cmd_candidates(args):
    """§9.2 candidates: what the endpoints serve and the bench has not onboarded (or what was dismissed)."""
    reply = dashboard(args, "GET", "/api/candidates")
    part = "dismissed" if args.dismissed else "candidates"
    rows = candidate_rows(args, reply, args.dismissed)
    if args.json:
        return dump({**reply, part: rows})
    for error in reply.get("errors") or []:
        note(f"note: {error}")
    if not rows:
        return note("nothing dismissed" if args.dismissed else "nothing new to onboard")
    print(table(rows, ["served", "endpoint", "group", "new"]))


def show_queue(args, reply):
    """The onboarding queue as a table; while it runs, how to follow and stop it."""
    if args.json:
        return dump(reply)
    rows = [{**item, "as": item.get("alias")} for item in reply.get("items") or [] if isinstance(item, dict)]
    if not rows:
        return note("the onboarding queue is empty")
    print(table(rows, ["served", "endpoint", "state", "as", "note"]))
    if reply.get("running"):
        note("it runs at the server: follow it with `bench onboard status` (or --wait), stop it with "
             "`bench onboard stop`")


def follow_queue(args, reply):
    """`--wait`: the queue asked every ONBOARD_POLL seconds while it runs, each new step of the running model on
    stderr (not with `--json`)."""
    said = None
    while reply.get("running"):
        running = next((i for i in reply.get("items") or [] if i.get("state") == "running"), None)
        step = running and running.get("step") and (running.get("served"), running["step"])
        if step and step != said and not args.json:
            note(f"  {step[0]}: step {step[1]}/5")
        said = step or said
        time.sleep(ONBOARD_POLL)
        reply = dashboard(args, "GET", "/api/onboard-queue")
    return reply


def cmd_onboard(args):
    """§9.2 onboard: `status`, `stop` or `clear` when it is the only word; else the served names join the
    queue (one model at a time at the server)."""
    word = args.served[0] if len(args.served) == 1 else None
    if word in ("status", "stop", "clear") and not (args.endpoint or args.quick or args.ad_hoc):
        reply = dashboard(args, *(("GET", "/api/onboard-queue", None) if word == "status" else
                                  ("POST", f"/api/onboard-queue/{word}", {})))
    else:
        if args.ad_hoc and not args.quick:
            raise Failed("--ad-hoc needs --quick: an ad hoc model gets no suite run", 2)
        mode = "quick-adhoc" if args.ad_hoc else "quick" if args.quick else "full"
        items = [{"served": served, "endpoint": args.endpoint or "", "mode": mode} for served in args.served]
        reply = dashboard(args, "POST", "/api/onboard-queue", {"items": items})
    show_queue(args, follow_queue(args, reply) if args.wait else reply)


def cmd_dismiss(args):
    """§9.2 dismiss: each served name must be exactly one row of the candidates and the dismissed (on
    `--endpoint` when given); every name is checked before anything is sent."""
    reply = dashboard(args, "GET", "/api/candidates")
    rows = [row for part in ("candidates", "dismissed") for row in reply.get(part) or [] if isinstance(row, dict)
            and (args.endpoint is None or row.get("endpoint") == args.endpoint)]
    picked = []
    for served in args.served:
        found = [row for row in rows if row.get("served") == served]
        if not found:
            raise Failed(f"{served}: not among the candidates")
        if len(found) > 1:
            raise Failed(f"{served}: on several endpoints; add --endpoint")
        picked.append(found[0]["key"])
    result = dashboard(args, "POST", "/api/dismiss", {"served": picked, "undo": args.undo})
    done(args, result, ("brought back: " if args.undo else "dismissed: ") + ", ".join(picked))


# -- the parser ---------------------------------------------------------------------------------------------

class Intermixed(argparse.ArgumentParser):
    """A command's parser that takes its words and options in any order: plain argparse stops filling
    `prompt` at the first option, so `bench ask core --merged "why?"` would refuse "why?"."""

    mixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self.mixing or self._subparsers:  # intermixed parsing calls back here; a group's action is a subparser
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
    """A command (or, with no `func`, a group of actions) with its help, examples and the global options."""
    parser = sub.add_parser(name, help=summary, description=summary, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    global_options(parser, suppress=True)
    # LN-2 after the command too (issue 30: `bench status --version` was refused): exactly the version
    parser.add_argument("--version", action="version", version=__version__, help=argparse.SUPPRESS)
    if func:
        parser.set_defaults(func=func)
    return parser


def group(sub, name, summary, epilog):
    """A command made of actions (`bench model role ...`), each with its own help."""
    return command(sub, name, None, summary, epilog).add_subparsers(dest="action", metavar="action", required=True,
                                                                   parser_class=Intermixed)


def action(sub, name, func, summary, example):
    """One action of a group (`bench model role ...`): the global options are accepted after it too (§9)."""
    return command(sub, name, func, summary, "example:\n  " + example)


def confirmable(parser):
    parser.add_argument("-y", "--yes", action="store_true", help="do it without asking")


# (commands, one-line summary), as the launcher's usage lists them: one screen for every command
COMMANDS = [
    ("ask <collection> [prompt]", "put a prompt to every seat of a collection"),
    ("verdict <call> --useful|--not-useful", "record whether a seat's answer was useful"),
    ("record <collection> | pending <call>", "verdicts so far | seats still without one"),
    ("status | models | collections | keys", "the server, its models, collections, gateway keys"),
    ("model | collection | key | settings", "change them (each lists its actions with --help)"),
    ("endpoints | endpoint | candidates", "the providers; change one | what they serve"),
    ("onboard <served> | dismiss <served>", "put served models on the bench | hide them"),
]


def parser(prog="bench"):
    p = argparse.ArgumentParser(prog=prog, description="Ask a panel of models and judge its answers, from a shell.",
                                epilog="Server commands (gateway, mcp, demo) are the launcher's: see "
                                       f"`{prog}` with no arguments. Where another `bench` comes first on PATH, "
                                       "type `benchwarmers`.")
    p.add_argument("--version", action="version", version=f"bench {__version__}")
    global_options(p, suppress=False)
    p.set_defaults(stopped="stopped; a panel already asked goes on at the server and records every seat")
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
    command(sub, "openapi", cmd_openapi, "where the server's OpenAPI 3.1 document is", """examples:
  bench openapi                        its URL on stdout, what it covers on stderr
  bench --url http://localhost:8123 openapi --json > openapi.json""")
    command(sub, "status", cmd_status, "the server, its bench and who may use it", """examples:
  bench status
  bench status --json | jq .scheduler_jobs""")
    models = command(sub, "models", cmd_models, "the bench's models", """examples:
  bench models
  bench models --find gpt --role review
  bench models --all                   retired ones too""")
    models.add_argument("--all", action="store_true", help="retired models too")
    models.add_argument("--find", metavar="S", help="alias or served name contains S (any case)")
    models.add_argument("--role", metavar="R", help="only this role")
    model = group(sub, "model", "change a model: its alias, role, ad hoc, max tokens; retire it", """examples:
  bench model role alpha review
  bench model retire alpha --reason "answers in Chinese"
  bench model restore alpha""")
    rename = action(model, "rename", cmd_model_rename, "give a model a new alias (records old → new)",
                    "bench model rename gpt4 gpt-4.1")
    rename.add_argument("alias")
    rename.add_argument("new", metavar="NEW", help="the new alias; a retired name is never reused")
    role = action(model, "role", cmd_model_role, "give a model another role", "bench model role alpha review")
    role.add_argument("alias")
    role.add_argument("role", metavar="ROLE", help="one of the roles the dashboard's model popup lists")
    ad_hoc = action(model, "ad-hoc", cmd_model_ad_hoc, "never seat a model as an explorer unasked (on|off)",
                    "bench model ad-hoc alpha on")
    ad_hoc.add_argument("alias")
    ad_hoc.add_argument("state", choices=("on", "off"))
    max_tokens = action(model, "max-tokens", cmd_model_max_tokens, "cap a model's answer length",
                     "bench model max-tokens alpha 4096\n  bench model max-tokens alpha none    the endpoint's own")
    max_tokens.add_argument("alias")
    max_tokens.add_argument("tokens", metavar="N|none", type=tokens)
    retire = action(model, "retire", cmd_model_retire, "take a model off the bench (its evidence stays)",
                    'bench model retire alpha --reason "gone from the provider"\n  bench model retire alpha -y')
    retire.add_argument("alias")
    retire.add_argument("--reason", help="why (default: retired by hand)")
    confirmable(retire)
    restore = action(model, "restore", cmd_model_restore, "bring a retired model back as it was",
                     "bench model restore alpha")
    restore.add_argument("alias")
    retry = action(model, "retry", cmd_model_retry, "one fresh call to a model that an alert says is retiring",
                   "bench model retry alpha")
    retry.add_argument("alias")
    collection = group(sub, "collection", "show, save or remove a collection", """examples:
  bench collection show core
  bench collection save core --add delta --remove beta
  bench collection rm core -y""")
    show = action(collection, "show", cmd_collection_show, "a collection as JSON", "bench collection show core")
    show.add_argument("name", help="core or bench/core")
    rm = action(collection, "rm", cmd_collection_rm, "remove a collection (its callers start failing)",
                "bench collection rm core -y")
    rm.add_argument("name")
    confirmable(rm)
    save = action(collection, "save", cmd_collection_save, "make or change a collection: what is given replaces",
                  'bench collection save reviewers --members alpha,beta --description "second opinions"\n'
                  "  bench collection save core --add delta --remove beta --reply merged")
    save.add_argument("name")
    save.add_argument("--members", metavar="CSV", help="the members, replacing the current ones")
    save.add_argument("--add", metavar="CSV", help="members to add")
    save.add_argument("--remove", metavar="CSV", help="members to take out")
    save.add_argument("--shape", metavar="S", help="the explorers' shape (empty: automatic)")
    save.add_argument("--description", metavar="D", help="what it is for (300 characters)")
    save.add_argument("--tags", metavar="CSV", help="tags, replacing the current ones")
    save.add_argument("--reply", choices=("all", "merged", "route"), help="every answer, one merged, or one routed")
    save.add_argument("--merger", metavar="A", help="the model that merges (empty: chosen by verdicts)")
    moved = group(sub, "store", "move a bench's logs between its data folder and Postgres (docs/replicas.md)",
                  """examples:
  BENCH_DATABASE_URL=postgresql://bench@db/bench bench store import
  BENCH_DATABASE_URL=postgresql://bench@db/bench bench store export --folder /srv/bench-copy""")
    for name, func, summary in (("import", cmd_store_import, "copy the data folder's logs into Postgres, replacing "
                                 "what it held"),
                                ("export", cmd_store_export, "write Postgres's logs into the data folder's files, "
                                 "replacing them")):
        moving_action = action(moved, name, func, summary, f"bench store {name} --folder /srv/bench")
        moving_action.add_argument("--folder", type=Path, help="the data folder (default: this bench's)")
    command(sub, "keys", cmd_keys, "the gateway keys: names, scopes, caps, last use (never a key)", """examples:
  bench keys""")
    key = group(sub, "key", "make or revoke a gateway key", """examples:
  export BENCHWARMERS_KEY=$(bench key create shell --collections core --rpm 60)
  bench key revoke shell -y""")
    create = action(key, "create", cmd_key_create, "make a key: printed alone on stdout, shown this once",
                    "bench key create open-webui --collections core,vision --rpm 60")
    create.add_argument("name", help="2-32 lower-case letters, digits or '-'")
    create.add_argument("--collections", metavar="CSV", help="the collections it may call (default: all)")
    create.add_argument("--rpm", type=int, metavar="N", help="requests a minute (default: no cap)")
    revoke = action(key, "revoke", cmd_key_revoke, "revoke a key: its callers are refused at once",
                    "bench key revoke open-webui")
    revoke.add_argument("name")
    confirmable(revoke)
    settings = group(sub, "settings", "the gateway's limits, the model client, the scheduler", """examples:
  bench settings                       every setting: its value here and where it came from (--markdown: a table)
  bench settings gateway --max-calls 5 --max-explorers 2
  bench settings client builtin
  bench settings scheduler run --off perf""")
    limits = action(settings, "gateway", cmd_settings_gateway, "calls a request may make, and explorer seats",
                    "bench settings gateway --max-calls 5 --max-explorers 2")
    limits.add_argument("--max-calls", type=int, required=True, metavar="N", help="1-10 seats a request")
    limits.add_argument("--max-explorers", type=int, required=True, metavar="N", help="0-2 explorer seats")
    limits.add_argument("--policy", choices=policy.NAMES,
                        help="how the record picks the merger and orders route mode (default: kept as it is)")
    client = action(settings, "client", cmd_settings_client, "how models are called: llm or builtin",
                    "bench settings client llm")
    client.add_argument("client", metavar="llm|builtin")
    scheduler = action(settings, "scheduler", cmd_settings_scheduler,
                       "the scheduler's mode and jobs (none given: shown)",
                       "bench settings scheduler\n  bench settings scheduler run --off perf,suite --on catalog")
    scheduler.add_argument("mode", nargs="?", choices=("off", "log-only", "run"))
    scheduler.add_argument("--on", metavar="CSV", help="jobs to switch on")
    scheduler.add_argument("--off", metavar="CSV", help="jobs to switch off")
    command(sub, "endpoints", cmd_endpoints, "the provider endpoints: base URL, kind, whether a key is set",
            """examples:
  bench endpoints
  bench endpoints --json | jq '.endpoints[].served'""")
    endpoint = group(sub, "endpoint", "add, test, re-key or remove an endpoint; the default; rate limits", """examples:
  pass show openrouter | bench endpoint add openrouter --base https://openrouter.ai/api/v1 --key-stdin
  bench endpoint test openrouter
  bench endpoint rm old-provider --with-models -y
  bench endpoint limits openrouter --rpm 20 --rpd 50""")
    for name, summary, example in (
            ("add", "add an endpoint: saved only when its model list answers",
             "pass show openrouter | bench endpoint add openrouter --base https://openrouter.ai/api/v1 --key-stdin"
             "\n  bench endpoint add ollama --base http://127.0.0.1:11434/v1    a local runtime needs no key"),
            ("test", "ask an endpoint for its model list; nothing is saved",
             "bench endpoint test openrouter\n  bench endpoint test new --base https://api.example.com/v1 --key-stdin"),
            ("key", "give an endpoint a new key (checked before it is kept)",
             "pass show openrouter | bench endpoint key openrouter --key-stdin")):
        save_endpoint = action(endpoint, name, cmd_endpoint_save, summary, example)
        save_endpoint.add_argument("name", help="2-32 lower-case letters, digits or '-'")
        save_endpoint.add_argument("--base", metavar="URL", help="its OpenAI-style base URL (default: the endpoint's)")
        save_endpoint.add_argument("--kind", choices=("provider", "aggregator", "hub", "local"),
                                   help="what it is (default: inferred from the URL)")
        save_endpoint.add_argument("--hub", metavar="H", help="with --kind hub: openwebui, litellm or cliproxy")
        save_endpoint.add_argument("--key-stdin", action="store_true",
                                   help="read the key from stdin's first line (never an argument)")
    rm_endpoint = action(endpoint, "rm", cmd_endpoint_rm, "remove an endpoint (its key stays in llm's key store)",
                         "bench endpoint rm old-provider\n  bench endpoint rm old-provider --with-models -y")
    rm_endpoint.add_argument("name")
    rm_endpoint.add_argument("--with-models", action="store_true", help="retire the models on it too")
    confirmable(rm_endpoint)
    default = action(endpoint, "default", cmd_endpoint_default, "make an endpoint the default",
                     "bench endpoint default openrouter")
    default.add_argument("name")
    limits_of = action(endpoint, "limits", cmd_endpoint_limits,
                       "show or set the rate limits per connection",
                       "bench endpoint limits\n  bench endpoint limits openrouter --rpm 20 --rpd 50 --tpm none")
    limits_of.add_argument("connection", nargs="?", help="a connection, as `bench endpoint limits` lists them")
    for name, label in LIMITS.items():
        limits_of.add_argument(f"--{name}", type=limit, metavar="N|none", help=label)
    candidates = command(sub, "candidates", cmd_candidates, "models the endpoints serve, not yet on the bench",
                         """examples:
  bench candidates --new
  bench candidates --endpoint openrouter --find free
  bench candidates --dismissed""")
    candidates.add_argument("--endpoint", metavar="E", help="only this endpoint's")
    candidates.add_argument("--find", metavar="S", help="served name contains S (any case)")
    candidates.add_argument("--new", action="store_true", help="only those new since the daily check")
    candidates.add_argument("--dismissed", action="store_true", help="the dismissed ones instead")
    onboard = command(sub, "onboard", cmd_onboard, "put served models on the bench, one at a time at the server",
                      """examples:
  bench onboard vendor/model:free --endpoint openrouter --wait
  bench onboard vendor/a vendor/b --quick          no suite run
  bench onboard status | stop | clear               the queue (only as the sole word)""")
    onboard.set_defaults(stopped="stopped following; the queue goes on at the server (`bench onboard stop` ends it)")
    onboard.add_argument("served", nargs="+", help="served names, as `bench candidates` lists them")
    onboard.add_argument("--endpoint", metavar="E", help="where they are served (default: the default endpoint)")
    onboard.add_argument("--wait", action="store_true", help="follow the queue until it is done")
    onboard.add_argument("--quick", action="store_true", help="skip the suite run")
    onboard.add_argument("--ad-hoc", action="store_true", help="with --quick: never seated as an explorer unasked")
    dismiss = command(sub, "dismiss", cmd_dismiss, "hide served models from the candidates (or bring them back)",
                      """examples:
  bench dismiss vendor/old-model
  bench dismiss vendor/model --endpoint openrouter --undo""")
    dismiss.add_argument("served", nargs="+")
    dismiss.add_argument("--endpoint", metavar="E", help="the endpoint, when several serve the name")
    dismiss.add_argument("--undo", action="store_true", help="bring them back among the candidates")
    return p


def main(argv=None):
    """Run one command; the program's name is the one the user typed (the launcher passes it on)."""
    argv = sys.argv[1:] if argv is None else argv
    prog = settings.env("BENCHWARMERS_PROG")
    args = parser(prog).parse_args(argv)
    args.server = remote.Server.from_env(args.url)
    try:
        args.func(args)
    except Failed as exc:
        note(f"bench: {exc}")
        return exc.code
    except KeyboardInterrupt:
        note(f"\nbench: {args.stopped}")
        return 130
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
