"""Onboarding from the dashboard: the picker's candidates, dismissals, the queue and its processes, the logs
(dashboard.md OB-6..20).

Each model is onboarded by `scripts/onboard.py` running as a child process (the same command a user types),
its output going to `runs/onboard-<time>-<served>.log`; the page follows the `[n/5]` lines written there.
One worker thread takes the queue's models one at a time, so one free tier is never asked by two
onboardings at once: one in the whole bench, when several replicas share a store (docs/replicas.md).

Decisions where the spec leaves room:
- `POST /api/onboard` (one model at once, for scripts) is refused while a queued batch runs (IMP-8), so the
  one-at-a-time promise holds for both doors.
- The queue persists (IMP-7): it is the store's document `runs/onboard-queue.json` (the file, on the folder
  store), changed under the store's lock, so every replica's dashboard shows and changes the same queue and
  refuses `POST /api/onboard` while a batch runs on any of them. A running batch has one owner, whose lease its
  worker renews; a restarted dashboard (`queue()`, called by serve.py at start), or another replica once the
  owner is gone (`Queue.adopt`), carries on with the batch. Each onboarding runs under
  `metrics/admin/onboardrun.py`, which appends the exit line itself, so a model running across the restart still
  gets its outcome; a run whose process is gone without an exit line (killed) is `failed`, said so.
- OB-15's `running` says a batch runs on some replica (it has an owner, alive or about to be taken over), not that
  this process has a worker.
- A run owned on another machine is followed through its log's copy in the store (`onboardrun.Copy`): the page
  reads it (`read_log`), and a new owner waits for its exit line while its beat moves; one unheard of for
  RUNNER_LAPSE_S is `failed`, said so, and the batch goes on.
- Modalities come from the listing's own `architecture` fields, else from the cached models.dev feed's entry
  with the same normalised name (OB-9); the cache is only read, never fetched.
- "New since the daily check" needs a daily check: before the served snapshot exists nothing is called new
  (every model would be).
- An Open WebUI hub's rows are grouped by the provider-tags file (`scripts/provider_tags.py` writes it); the
  picker asks the hub nothing live, though OB-8 allows a best-effort read of its connection names.
"""

import concurrent.futures
import datetime
import os
import re
import socket
import subprocess
import threading
import time

from ..core import changes, console, fileio, paths, records, settings
from ..core.errors import Invalid, Unshown
from ..models import catalog, endpoints, sources
from ..providers import renewal
from ..panel import roster
from ..store import store
from . import onboardrun

MODES = ("full", "quick", "quick-adhoc")
SERVED_RULE = re.compile(r"^[\w./:@+-]{1,200}$")
LOG_RULE = re.compile(r"^onboard-\d{8}T\d{6}-[A-Za-z0-9._-]+\.log$")
EXIT_MARK = onboardrun.EXIT_MARK
WATCH_S = 1.0  # how often a worker looks at its onboarding's process (an earlier owner's: its log too)
RENEW_S = 2.0  # the owner's worker renews its lease this often while it works: one small write to the store
# A lease whose beat has not moved for three renewals has lapsed: one slow or lost write never hands a live batch
# over, and a dead owner's batch goes on within seconds.
LEASE_S = 3 * RENEW_S
RUNNER_LAPSE_S = 3 * onboardrun.BEAT_S  # a run on another machine whose copy's beat stood still this long is gone
STARTED = time.time()  # this process's start, in its owner id with machine and pid (a pid is reused, a start not)
INTERNAL = ("pid", "host")  # where an item's run is: the queue's own, never shown (OB-15 copies the rest)
KILLED = ("its process ended without an exit line (killed while the dashboard was stopped?); the log shows how far "
          "it got")
UNHEARD = ("it ran on {host}, whose dashboard is gone, and has not been heard from for {seconds:g}s; its log there "
           "(and its copy here, as far as it went) shows how far it got")
STEP = re.compile(r"\[([1-5])/5\]")
ALIAS = re.compile(r"->\s+alias\s+(\S+)")
REASON = re.compile(r"^\s+(tiny|large): (.+)$", re.M)
TAIL_CHARS = 6000
NOTE_CHARS = 300
MAX_ITEMS = 50
NO_ENDPOINT = ("no endpoint yet: add one first (the Endpoints page, Add an endpoint), and what it serves is "
               "listed here")


def dismissed_path():
    return paths.file("config", "dismissed.json")


def picker_key(served, endpoint, default_name):
    """OB-7: bare on the default endpoint, `served@endpoint` elsewhere."""
    return served if endpoint == default_name else f"{served}@{endpoint}"


def taken_keys():
    """OB-7: picker keys never offered — registered chat models, retired entries, decision models."""
    default_name = endpoints.default()
    found = {picker_key(e["served"], e["endpoint"], default_name) for e in roster.directory().values()}
    for entry in roster.retired().models.values():
        endpoint = entry.endpoint
        found.add(picker_key(entry.served, endpoint if endpoint in endpoints.readable() else default_name,
                             default_name))
    return found


def _group(name, row, tags):
    """OB-9's group: `<endpoint> (direct)`, or for an Open WebUI hub its connection."""
    if endpoints.hub(name) != "openwebui":
        return f"{name} (direct)"
    if row.get("connection_type") == "local":
        return "local"
    tag = tags.get(row.get("id"))
    return tag.split("/", 1)[0].replace("?", "") if isinstance(tag, str) and tag else "unknown connection"


def feed_modalities():
    """OB-9's fallback: `{normalised model: (inputs, outputs)}` from the cached models.dev feed (never fetched)."""
    found = {}
    for provider in sources.cached("modelsdev").values():
        models = provider.get("models") if isinstance(provider, dict) else None
        for model_id, entry in (models.items() if isinstance(models, dict) else ()):
            mods = entry.get("modalities") if isinstance(entry, dict) else None
            if isinstance(mods, dict):
                found.setdefault(catalog.norm_model(model_id), tuple(
                    [m for m in mods.get(k) or [] if isinstance(m, str)] for k in ("input", "output")))
    return found


def _modalities(row, known):
    """OB-9: the listing's own `architecture` modalities, else the models.dev feed's for the same model."""
    arch = row.get("architecture") if isinstance(row.get("architecture"), dict) else {}
    if isinstance(arch.get("input_modalities"), list) or isinstance(arch.get("output_modalities"), list):
        return tuple([m for m in arch.get(k) or [] if isinstance(m, str)]
                     for k in ("input_modalities", "output_modalities"))
    return known.get(catalog.norm_model(row.get("id")), ([], []))


def candidates():
    """OB-6..10 `GET /api/candidates`: every endpoint listed at once; one failing empties only its group. With no
    endpoint, or none reachable, the page is told why (`Unshown`, still a 200)."""
    found = endpoints.load()
    if not found:
        raise Unshown(NO_ENDPOINT)
    default_name = endpoints.default()
    taken = taken_keys()
    gone = fileio.read_json(dismissed_path())
    tags = fileio.read_json(paths.file("config", "provider-tags.json"))
    snapshot = fileio.read_json(paths.file("config", "served-snapshot.json"))
    seen = snapshot.get("last_seen") if snapshot.get("updated") and isinstance(snapshot.get("last_seen"), dict) else None
    known = feed_modalities()
    errors, rows = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, len(found))) as pool:
        listed = {name: pool.submit(renewal.models, name) for name in found}  # EP-12: an expiring sign-in renewed first
        for name, future in listed.items():
            try:
                served = future.result()
            except Exception as exc:
                errors.append(f"cannot reach {name}: {type(exc).__name__}: {exc}")
                continue
            whole = seen is not None and endpoints.recorded_whole(name)
            for model in sorted(served):
                key = picker_key(model, name, default_name)
                if key in taken:
                    continue
                inputs, outputs = _modalities({"id": model, **served[model]}, known)
                rows.append({"served": model, "endpoint": name, "key": key, "group": _group(name, served[model], tags),
                             "new": whole and key not in seen, "inputs": inputs, "outputs": outputs})
    if not rows and errors:
        raise Unshown(*errors)
    return {"ok": True, "errors": errors, "candidates": [r for r in rows if r["key"] not in gone],
            "dismissed": [r for r in rows if r["key"] in gone]}


def dismiss(body, who):
    """OB-11 `POST /api/dismiss {served: key | [keys], undo?}`."""
    raw = body.get("served")
    raw = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    wanted = list(dict.fromkeys(k.strip() for k in raw if isinstance(k, str) and k.strip()))
    if not wanted:
        raise Invalid("which model?")
    undo = body.get("undo") is True
    at = changes.now_iso()

    def change(data):
        for key in wanted:
            if undo:
                data.pop(key, None)
            else:
                data[key] = {"at": at, "by": who}

    fileio.update(dismissed_path(), change)
    for key in wanted:
        changes.log(who, "", "undismissed" if undo else "dismissed", None, key)
    return {"ok": True, "errors": []}


def refusals(served, endpoint, mode):
    """OB-12: what refuses a model before any call; `(errors, endpoint)`. RuntimeError with no endpoints."""
    endpoint = endpoint or endpoints.default()
    errors = []
    if mode not in MODES:
        errors.append(f"mode must be one of {', '.join(MODES)}; got '{mode}'")
    if not SERVED_RULE.match(served):
        errors.append("the served name is the id the endpoint lists, e.g. vendor/model:free — letters, digits and "
                      ". / : @ + - only")
    if endpoint not in endpoints.load():
        errors.append(f"'{endpoint}' is not an endpoint in config/endpoints.json")
        return errors, endpoint
    on_default = endpoint == endpoints.default()
    for alias, entry in roster.directory().items():
        if entry["served"] == served and (entry["endpoint"] == endpoint or on_default):
            errors.append(f"{served} is already registered as '{alias}'")
            break
    for alias, entry in roster.retired().models.items():
        if entry.served == served and (entry.endpoint or endpoints.default()) == endpoint:
            errors.append(f"{served} was retired from the bench as '{alias}' on {entry.at[:10]} "
                          f"({entry.why or 'retired by hand'}); remove that entry from config/retired.json "
                          "first if you mean it")
            break
    return errors, endpoint


# -- the process and its log (OB-17..19) --------------------------------------------------------------

def log_name(served):
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    return f"onboard-{stamp}-{re.sub(r'[^A-Za-z0-9._-]+', '-', served)}.log"


def command(served, endpoint, mode):
    extra = {"full": [], "quick": ["--skip-suite"], "quick-adhoc": ["--skip-suite", "--ad-hoc"]}[mode]
    return paths.module_command("scripts.onboard", served, "--endpoint", endpoint, *extra)


def spawn(served, endpoint, mode, who):
    """OB-17: start one onboarding, its output to its log; returns `(log name, process)`."""
    name = log_name(served)
    where = paths.file("runs", name)
    fileio.make_folder(where.parent)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "BENCH_ONBOARD_LOG": name}
    runner = paths.module_command("admin.onboardrun", where)
    with open(where, "ab", opener=fileio.opener) as out:  # the runner's own complaints, if it has any, land in the same log
        process = subprocess.Popen(runner + command(served, endpoint, mode), stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, cwd=str(paths.CODE), env=env, start_new_session=True)
    try:
        changes.log(who, "", "onboard" if mode == "full" else f"onboard ({mode})", None, served)
    except OSError as exc:  # the run has started: a change log out of reach must not leave it unwatched
        console.say(f"note: the change log was not written for onboarding {served}: {exc}")
    return name, process


def finish(name, process):
    """Wait for the process; its runner has appended the exit line the page and the queue read (OB-17)."""
    return process.wait()


def alive(pid):
    """Whether process `pid` still runs (an onboarding started before this server did). A zombie does not: a run
    whose dashboard died is reaped by whoever adopted it, maybe never."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    if os.name == "nt":  # os.kill would end it there
        found = subprocess.run(["tasklist", "/FI", f"PID eq {pid}", "/NH"], capture_output=True, text=True)
        return str(pid) in found.stdout
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[:1] != ["Z"]
    except OSError:  # no /proc (macOS, BSD): kill's answer stands
        return True


def exit_code(text):
    """The code on a log's exit line; None when the line is not there (yet)."""
    head, mark, rest = text.rpartition(EXIT_MARK)
    code = rest.strip().split()[0] if mark and rest.strip() else ""
    return int(code) if code.lstrip("-").isdigit() else None


def machine():
    """This replica's machine as the queue names it (`BENCH_REPLICA_NAME`, else the host name)."""
    return settings.env("BENCH_REPLICA_NAME").strip() or socket.gethostname()


class Heard:
    """How long a value has stood still, on this process's own clock. A lease or a run on another machine is
    judged by how long its beat has not moved here, never by a time that machine wrote: replicas' clocks may
    disagree by more than a lease."""

    def __init__(self):
        self.value, self.since = None, time.monotonic()

    def still(self, value):
        """Seconds `value` has been what it is now (0 when it just changed)."""
        if value != self.value:
            self.value, self.since = value, time.monotonic()
        return time.monotonic() - self.since


def copied(name):
    """The store's copy of a log another replica's run writes (`onboardrun.Copy`), or None."""
    try:
        found = store.current().find(store.ONBOARD_LOGS, name)
    except OSError:  # the store away: nothing to read now
        return None
    return found if isinstance(found, dict) and isinstance(found.get("text"), str) else None


def runs(name, pid, host, heard):
    """Whether the run writing log `name` may still be going: its process when it is on this machine; on another,
    while its copy's beat has moved within RUNNER_LAPSE_S (by `heard`)."""
    if host == machine():
        return alive(pid)
    copy = copied(name)
    return heard.still(copy.get("beat") if copy else None) < RUNNER_LAPSE_S


def watch(name, pid, host=None, keep=lambda: None):
    """Wait for an onboarding this server did not start: its exit code, or None when its process is gone
    without an exit line (killed, or on another machine unheard of). Polled: another process's exit cannot be
    waited on. `keep` is called at each look (the worker renews its lease there)."""
    host = host or machine()
    heard = Heard()
    while True:
        code = exit_code(read_log(name))
        if code is not None:
            return code
        if not runs(name, pid, host, heard):
            return exit_code(read_log(name))  # it may have written the line on its way out
        keep()
        time.sleep(WATCH_S)


def read_log(name):
    """The log's text: the file when this machine has it, else the store's copy (a run on another replica)."""
    try:
        return paths.file("runs", name).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        copy = copied(name)
        return copy["text"] if copy else ""
    except OSError:
        return ""


def log_view(query_name):
    """OB-19 `GET /api/onboard?log=<name>`."""
    if not isinstance(query_name, str) or not LOG_RULE.match(query_name):
        raise Unshown("not an onboarding log name")
    text = read_log(query_name)
    head, mark, rest = text.rpartition(EXIT_MARK)
    if not mark:
        return {"ok": True, "done": False, "exit": None, "tail": text[-TAIL_CHARS:]}
    code = rest.strip().split()[0] if rest.strip() else ""
    return {"ok": True, "done": True, "exit": int(code) if code.lstrip("-").isdigit() else None,
            "tail": head.rstrip("\n")[-TAIL_CHARS:]}


def step_of(text):
    return max((int(n) for n in STEP.findall(text)), default=0)


def outcome(text, code):
    """OB-14: `(state, alias, note)` from a finished log and its exit code."""
    found = ALIAS.search(text)
    alias = found.group(1) if found else None
    body = text.rpartition(EXIT_MARK)[0] if EXIT_MARK in text else text
    if code == 0 and "STOPPING" not in body:
        return "done", alias, ""
    state = "no answer" if code == 0 else "failed"
    reasons = [f"{m.group(1)}: {m.group(2).strip()}" for m in REASON.finditer(body)] if code == 0 else []
    if reasons:
        note = " ".join(reasons)
    elif "STOPPING" in body:
        note = " ".join(("STOPPING" + body.split("STOPPING", 1)[1]).strip().splitlines()[:2])
    else:
        note = " ".join(line.strip() for line in body.strip().splitlines()[-3:])
    return state, alias, note[:NOTE_CHARS]


# -- the queue (OB-13..16), kept in the store (IMP-7; docs/replicas.md, "The onboarding queue") ------------

def queue_path():
    """The queue's file on the folder store (on Postgres the same place is a document of the store)."""
    return paths.file(*store.ONBOARD_QUEUE)


class LeaseLost(Exception):
    """This process's worker no longer owns the batch: another replica took it over. The worker stops at once,
    settling nothing; the new owner settles what it was running."""


def _items(data):
    items = data.get("items") if isinstance(data.get("items"), list) else []
    return [i for i in items if isinstance(i, dict) and isinstance(i.get("served"), str)
            and isinstance(i.get("state"), str)]


def _owned(data):
    """The batch's owner, or None when no batch runs."""
    return data.get("owner") if isinstance(data.get("owner"), dict) else None


def _ident(owner):
    return owner.get("host"), owner.get("pid"), owner.get("since")


def _running(items, item):
    """`item` as it stands in `items`: the running one with its served name and endpoint."""
    return next((i for i in items if i["state"] == "running" and i.get("served") == item.get("served")
                 and i.get("endpoint") == item.get("endpoint")), None)


def _update(change):
    return store.current().update_json(store.ONBOARD_QUEUE, change)


class Queue:
    """One batch at a time, one model at a time, across every replica sharing the store; every method answers the
    queue object of OB-15.

    The queue is the store's document (`runs/onboard-queue.json` on the folder store), changed only by the store's
    locked read-change-write, so every replica's dashboard shows the same queue. A running batch has one owner,
    `{"host", "pid", "since", "beat"}`: only the owner's worker takes items, and it counts `beat` up every RENEW_S
    while it works (its lease). Any replica's dashboard, at a request or on its timer (`follow`), takes over a batch
    whose owner is gone (`adopt`): on this machine as soon as the owner's process is, elsewhere once its beat has
    stood still for LEASE_S. The new owner first settles the item left running (IMP-7, `_watch`), then goes on.
    """

    def __init__(self):
        self.lock = threading.Lock()  # this process's worker starting or ending; taken before the store's, never inside
        self.worker = None
        self.beat = 0
        self.renew_at = 0.0
        self.heard = Heard()  # the owner's beat, as this process last saw it move

    def me(self):
        """This process as a batch's owner: machine, pid and start, and its lease's beat."""
        return {"host": machine(), "pid": os.getpid(), "since": STARTED, "beat": self.beat}

    def mine(self, data):
        owner = _owned(data)
        return owner is not None and _ident(owner) == _ident(self.me())

    def read(self):
        return store.current().read_json(store.ONBOARD_QUEUE, comments=False)

    def gone(self, owner):
        """Whether a batch's owner is gone: its process, on this machine; its lease, which lapses once its beat has
        not moved for LEASE_S here."""
        if owner.get("host") == machine() and not alive(owner.get("pid")):
            return True
        return self.heard.still((*_ident(owner), owner.get("beat"))) >= LEASE_S

    def state(self):
        self.adopt()
        saved = self.read()
        running = _owned(saved) is not None
        items = [{k: v for k, v in i.items() if k not in INTERNAL} for i in _items(saved)]
        for item in items:
            if item["state"] == "running":
                item["step"] = step_of(read_log(item["log"])) if item.get("log") else 0
        return {"ok": True, "errors": [], "running": running, "stopping": running and saved.get("stop_asked") is True,
                "items": items}

    def _working(self):
        return self.worker is not None and self.worker.is_alive()

    def _start(self):
        """Start this process's worker (under `self.lock`, as the batch's owner). One still alive keeps the batch:
        it takes the next item itself."""
        if self._working():
            return
        self.renew_at = time.monotonic() + RENEW_S
        self.worker = threading.Thread(target=self._work, name="onboarding", daemon=True)
        self.worker.start()

    def adopt(self):
        """Take over a batch whose owner is gone, or one with none (a queue a bench before leases left); whether
        this process now runs it. Two replicas adopting at once: the store's lock lets the first claim it, the
        second finds a live owner."""
        with self.lock:
            if self._working():
                return False
            saved = self.read()
            owner = _owned(saved)
            if owner is None and not any(i["state"] in ("queued", "running") for i in _items(saved)):
                return False
            if owner is not None and not self.gone(owner):
                return False

            def claim(data):
                if _owned(data) != owner:  # renewed or claimed meanwhile
                    return False
                data["owner"] = self.me()
                return True

            if not _update(claim):
                return False
            self._start()
            return True

    def keep(self):
        """Renew the lease when RENEW_S has passed; LeaseLost when another replica owns the batch now. A store away
        is asked again at the next look (past LEASE_S another replica may take over, and this worker then stops)."""
        if time.monotonic() < self.renew_at:
            return
        self.beat += 1

        def renew(data):
            if not self.mine(data):
                return False
            data["owner"] = self.me()
            return True

        try:
            held = _update(renew)
        except OSError:
            return
        if not held:
            raise LeaseLost()
        self.renew_at = time.monotonic() + RENEW_S

    def add(self, body, who):
        items = body.get("items")
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_ITEMS:
            raise Invalid(f"pick between 1 and {MAX_ITEMS} models")
        errors, accepted, pairs = [], [], set()
        for raw in items:
            raw = raw if isinstance(raw, dict) else {}
            served, mode = records.text(raw.get("served")), records.text(raw.get("mode"), "full") or "full"
            problems, endpoint = refusals(served, records.text(raw.get("endpoint")), mode)
            errors += problems
            if (served, endpoint) in pairs:
                errors.append("a model is picked twice")
            pairs.add((served, endpoint))
            accepted.append({"served": served, "endpoint": endpoint, "mode": mode, "state": "queued", "alias": None,
                             "log": None, "exit": None, "note": ""})

        def change(data):
            """Append to the running batch (whoever owns it), or start a new one owned here; whether it is new."""
            queued = data["items"] = _items(data)
            waiting = {(i["served"], i["endpoint"]) for i in queued if i["state"] in ("queued", "running")}
            found = errors + [f"{s} from {e} is already in the queue" for s, e in pairs if (s, e) in waiting]
            if found:
                raise Invalid(*dict.fromkeys(found))
            new = _owned(data) is None
            if new:
                queued.clear()  # a new batch replaces the finished one's results
                data["owner"] = self.me()
            data["stop_asked"] = False
            queued += accepted
            data["who"] = who
            return new

        with self.lock:
            if _update(change):
                self._start()
        return self.state()  # which takes over too, when the batch's owner is gone

    def _next(self):
        """`(item, who started the batch, whether an earlier owner left it running)`: the item left running first,
        else the first queued one, marked running; None for the item when nothing is left (the batch ends here,
        under the same locks that start a new one)."""

        def take(data):
            items = data["items"] = _items(data)
            if not self.mine(data):
                raise LeaseLost()
            who = data.get("who") if isinstance(data.get("who"), str) else "ui"
            item = next((i for i in items if i["state"] == "running"), None)
            if item is not None:
                return dict(item), who, True
            item = next((i for i in items if i["state"] == "queued"), None)
            if item is None:
                data.pop("owner", None)
                data["stop_asked"] = False
                return None, who, False
            item["state"] = "running"
            return dict(item), who, False

        with self.lock:
            found = _update(take)
            if found[0] is None:
                self.worker = None
        return found

    def _work(self):
        try:
            while True:
                item, who, earlier = self._next()
                if item is None:
                    return
                try:
                    self._watch(item) if earlier else self._run(item, who)
                except LeaseLost:
                    raise
                except Exception as exc:  # the batch goes on (OB-14)
                    self._settle(item, state="failed", note=f"{type(exc).__name__}: {exc}"[:NOTE_CHARS])
        except LeaseLost:
            with self.lock:
                if self.worker is threading.current_thread():
                    self.worker = None

    def _mark(self, item, drop=(), **fields):
        """Change the running `item` in the store, as long as this process owns the batch."""

        def change(data):
            items = data["items"] = _items(data)
            if not self.mine(data):
                raise LeaseLost()
            found = _running(items, item)
            if found is not None:
                found.update(fields)
                for key in drop:
                    found.pop(key, None)

        _update(change)
        item.update(fields)

    def _settle(self, item, **fields):
        self._mark(item, drop=INTERNAL, **fields)

    def _run(self, item, who):
        problems, _ = refusals(item["served"], item["endpoint"], item["mode"])
        if problems:
            self._settle(item, state="failed", note="; ".join(problems)[:NOTE_CHARS])
            return
        self.keep()  # a lease lost while refusals were checked starts nothing
        name, process = spawn(item["served"], item["endpoint"], item["mode"], who)
        try:
            try:
                self._mark(item, log=name, pid=process.pid, host=machine())
            except LeaseLost:
                raise
            except Exception:  # its record not written (the store away): no next run starts until this one ends
                self._wait(process)
                raise
            code = self._wait(process)
        except LeaseLost:  # the new owner watches the run; this process still reaps it
            threading.Thread(target=process.wait, name="onboard-reap", daemon=True).start()
            raise
        self._outcome(item, code)

    def _wait(self, process):
        """The process's exit code, renewing the lease while it runs."""
        while True:
            try:
                return process.wait(timeout=WATCH_S)
            except subprocess.TimeoutExpired:
                self.keep()

    def _watch(self, item):
        """An item an earlier owner left running (a stopped server, a replica gone): wait for its run (IMP-7). On
        this machine its process is watched; on another, its log's copy in the store, while its beat moves."""
        if not item.get("log"):
            self._settle(item, state="failed", note="the dashboard stopped before this onboarding started; queue "
                                                    "it again")
            return
        host = item.get("host") or machine()
        code = watch(item["log"], item.get("pid"), host, self.keep)
        if code is None:
            note = (KILLED if host == machine() else UNHEARD.format(host=host, seconds=RUNNER_LAPSE_S))
            self._settle(item, state="failed", exit=None, note=note)
            return
        self._outcome(item, code)

    def _outcome(self, item, code):
        state, alias, note = outcome(read_log(item["log"]), code)
        self._settle(item, state=state, alias=alias, note=note, exit=code)

    def stop(self):
        def change(data):
            items = data["items"] = _items(data)
            if _owned(data) is None:
                raise Invalid("no onboarding is running")
            data["stop_asked"] = True
            for item in items:
                if item["state"] == "queued":
                    item.update(state="skipped", note="stopped before its turn")

        _update(change)
        return self.state()

    def clear(self):
        def change(data):
            if _owned(data) is not None:
                raise Invalid("still running: Stop it first, or wait")
            data["items"] = []

        self.adopt()
        _update(change)
        return self.state()

    def summary(self):
        self.adopt()
        saved = self.read()
        return {"running": _owned(saved) is not None, "items": len(_items(saved))}


_queues = {}
_queues_lock = threading.Lock()


def queue():
    """The onboarding queue of the data folder in use: a queue belongs to its bench, so a process that serves
    another folder (a test, a second demo) never shows or runs the first one's models. Made the first time it
    is asked for, carrying on with a batch a stopped server or a gone replica left (IMP-7)."""
    key = str(paths.data())
    with _queues_lock:
        found = _queues.get(key)
        made = found is None
        if made:
            found = _queues[key] = Queue()
    if made:
        found.adopt()
    return found


def follow():
    """The dashboard's timer: every RENEW_S, take over a batch whose owner is gone even while no page asks."""

    def look():
        while True:
            time.sleep(RENEW_S)
            try:
                queue().adopt()
            except OSError:  # the store away: look again next time
                pass

    threading.Thread(target=look, name="onboarding-follow", daemon=True).start()


def onboard_now(body, who):
    """OB-20 `POST /api/onboard {served, endpoint?, mode?}`: one onboarding at once, outside the queue."""
    served, mode = records.text(body.get("served")), records.text(body.get("mode"), "full") or "full"
    problems, endpoint = refusals(served, records.text(body.get("endpoint")), mode)
    if queue().summary()["running"]:
        problems.append("an onboarding batch is running: add this model to its queue instead, or wait")
    if problems:
        raise Invalid(*problems)
    name, process = spawn(served, endpoint, mode, who)
    threading.Thread(target=finish, args=(name, process), name="onboard-one", daemon=True).start()
    return {"ok": True, "errors": [], "log": name}
