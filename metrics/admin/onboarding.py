"""Onboarding from the dashboard: the picker's candidates, dismissals, the queue and its processes, the logs
(dashboard.md OB-6..20).

Each model is onboarded by `scripts/onboard.py` running as a child process (the same command a user types),
its output going to `runs/onboard-<time>-<served>.log`; the page follows the `[n/5]` lines written there.
One worker thread takes the queue's models one at a time, so one free tier is never asked by two
onboardings at once.

Decisions where the spec leaves room:
- `POST /api/onboard` (one model at once, for scripts) is refused while a queued batch runs (IMP-8), so the
  one-at-a-time promise holds for both doors.
- The queue persists (IMP-7): every change is written to `runs/onboard-queue.json`, and a restarted dashboard
  (`resume()`, called by serve.py at start) carries on with the batch. Each onboarding runs under
  `metrics/admin/onboardrun.py`, which appends the exit line itself, so a model running across the restart still
  gets its outcome; a run whose process is gone without an exit line (killed) is `failed`, said so.
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
import subprocess
import threading
import time

from ..core import changes, fileio, paths, records
from ..core.errors import Invalid, Unshown
from ..models import catalog, endpoints, sources
from ..providers import renewal
from ..panel import roster
from . import onboardrun

MODES = ("full", "quick", "quick-adhoc")
SERVED_RULE = re.compile(r"^[\w./:@+-]{1,200}$")
LOG_RULE = re.compile(r"^onboard-\d{8}T\d{6}-[A-Za-z0-9._-]+\.log$")
EXIT_MARK = onboardrun.EXIT_MARK
WATCH_S = 1.0  # how often a restarted server looks at an onboarding it did not start
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
    changes.log(who, "", "onboard" if mode == "full" else f"onboard ({mode})", None, served)
    return name, process


def finish(name, process):
    """Wait for the process; its runner has appended the exit line the page and the queue read (OB-17)."""
    return process.wait()


def alive(pid):
    """Whether process `pid` still runs (an onboarding started before this server did)."""
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
    return True


def exit_code(text):
    """The code on a log's exit line; None when the line is not there (yet)."""
    head, mark, rest = text.rpartition(EXIT_MARK)
    code = rest.strip().split()[0] if mark and rest.strip() else ""
    return int(code) if code.lstrip("-").isdigit() else None


def watch(name, pid):
    """Wait for an onboarding this server did not start: its exit code, or None when its process is gone
    without an exit line (killed). Polled: another process's exit cannot be waited on."""
    while True:
        code = exit_code(read_log(name))
        if code is not None:
            return code
        if not alive(pid):
            return exit_code(read_log(name))  # it may have written the line on its way out
        time.sleep(WATCH_S)


def read_log(name):
    try:
        return paths.file("runs", name).read_text(encoding="utf-8", errors="replace")
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


# -- the queue (OB-13..16, persisted: IMP-7) ----------------------------------------------------------

def queue_path():
    return paths.file("runs", "onboard-queue.json")


class Queue:
    """One batch at a time, one model at a time; every method answers the queue object of OB-15.

    Every change is written to `runs/onboard-queue.json` (IMP-7); a new Queue starts from that file, and
    `resume()` carries on with what was queued or running when the last server stopped.
    """

    def __init__(self):
        self.lock = threading.Lock()
        saved = fileio.read_json(queue_path())
        items = saved.get("items") if isinstance(saved.get("items"), list) else []
        self.items = [i for i in items if isinstance(i, dict) and isinstance(i.get("served"), str)
                      and isinstance(i.get("state"), str)]
        self.worker = None
        self.stop_asked = saved.get("stop_asked") is True
        self.who = saved.get("who") if isinstance(saved.get("who"), str) else "ui"

    def _save(self):
        """Write the queue as it is now (called under `self.lock`)."""
        fileio.write_atomic(queue_path(), fileio.dumps({"items": self.items, "stop_asked": self.stop_asked,
                                                        "who": self.who}))

    def state(self):
        with self.lock:
            items = [{k: v for k, v in i.items() if k != "pid"} for i in self.items]
            running = self.worker is not None
            stopping = running and self.stop_asked
        for item in items:
            if item["state"] == "running":
                item["step"] = step_of(read_log(item["log"])) if item.get("log") else 0
        return {"ok": True, "errors": [], "running": running, "stopping": stopping, "items": items}

    def _start(self):
        """Start the worker (called under `self.lock`, with none running)."""
        self.worker = threading.Thread(target=self._work, name="onboarding", daemon=True)
        self.worker.start()

    def resume(self):
        """IMP-7: after a restart, carry on with a batch that was queued or running; whether it did."""
        with self.lock:
            if self.worker is None and any(i["state"] in ("queued", "running") for i in self.items):
                self._start()
                return True
        return False

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
        with self.lock:
            waiting = {(i["served"], i["endpoint"]) for i in self.items if i["state"] in ("queued", "running")}
            errors += [f"{s} from {e} is already in the queue" for s, e in pairs if (s, e) in waiting]
            if errors:
                raise Invalid(*dict.fromkeys(errors))
            if self.worker is None:
                self.items = []
            self.stop_asked = False
            self.items += accepted
            self.who = who
            self._save()
            if self.worker is None:
                self._start()
        return self.state()

    def _next(self):
        """The item to work on: one left running by an earlier server first, else the first queued one."""
        with self.lock:
            item = next((i for i in self.items if i["state"] == "running"), None)
            if item is not None:
                return item, True
            item = next((i for i in self.items if i["state"] == "queued"), None)
            if item is None:
                self.worker = None
                self.stop_asked = False
                self._save()
                return None, False
            item["state"] = "running"
            self._save()
            return item, False

    def _work(self):
        while True:
            item, earlier = self._next()
            if item is None:
                return
            try:
                self._watch(item) if earlier else self._run(item)
            except Exception as exc:  # the batch goes on (OB-14)
                self._settle(item, state="failed", note=f"{type(exc).__name__}: {exc}"[:NOTE_CHARS])

    def _settle(self, item, **fields):
        with self.lock:
            item.update(fields)
            item.pop("pid", None)
            self._save()

    def _run(self, item):
        problems, _ = refusals(item["served"], item["endpoint"], item["mode"])
        if problems:
            self._settle(item, state="failed", note="; ".join(problems)[:NOTE_CHARS])
            return
        name, process = spawn(item["served"], item["endpoint"], item["mode"], self.who)
        with self.lock:
            item.update(log=name, pid=process.pid)
            self._save()
        self._outcome(item, finish(name, process))

    def _watch(self, item):
        """An item a stopped server left running: wait for its process (IMP-7)."""
        if not item.get("log"):
            self._settle(item, state="failed", note="the dashboard stopped before this onboarding started; queue "
                                                    "it again")
            return
        code = watch(item["log"], item.get("pid"))
        if code is None:
            self._settle(item, state="failed", exit=None,
                         note="its process ended without an exit line (killed while the dashboard was stopped?); "
                              "the log shows how far it got")
            return
        self._outcome(item, code)

    def _outcome(self, item, code):
        state, alias, note = outcome(read_log(item["log"]), code)
        self._settle(item, state=state, alias=alias, note=note, exit=code)

    def stop(self):
        with self.lock:
            if self.worker is None:
                raise Invalid("no onboarding is running")
            self.stop_asked = True
            for item in self.items:
                if item["state"] == "queued":
                    item.update(state="skipped", note="stopped before its turn")
            self._save()
        return self.state()

    def clear(self):
        with self.lock:
            if self.worker is not None:
                raise Invalid("still running: Stop it first, or wait")
            self.items = []
            self._save()
        return self.state()

    def summary(self):
        with self.lock:
            return {"running": self.worker is not None, "items": len(self.items)}


_queues = {}
_queues_lock = threading.Lock()


def queue():
    """The onboarding queue of the data folder in use: a queue belongs to its bench, so a process that serves
    another folder (a test, a second demo) never shows or runs the first one's models. Made from the saved
    file the first time it is asked for, carrying on with a batch a stopped server left (IMP-7)."""
    key = str(paths.data())
    with _queues_lock:
        found = _queues.get(key)
        if found is None:
            found = _queues[key] = Queue()
            found.resume()
        return found


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
