"""What the dashboard shows of the bench: the model directory, each model's status, the tables of
At a glance and Models, Action needed, the Logs page and the read-only JSON the CLI reads
(dashboard.md FILE-1..3, GL-1..6, MD-1, SHELL-4..6, SHELL-9, LG-1, API-1..3).

Everything is read afresh per request from the data folder (each reader caches by file stat), so a
write by the gateway, a script or another dashboard shows on the next page load.

Decisions where the spec is silent:
- The Suite column is found/known bugs over the suite's saved answers as `models.history` scores them for the
  router (RTR-9); the dated suite notes (BM-2) are read by the Benchmarks page (`dashboard.benchmarks`).
- A model's "last answer" counts answered perf rows and useful offloads; suite outputs are not read
  here (the suite's saved answers are scored by `models.history` for recall only).
- `/api/status` reports the scheduler's mode and jobs as `config/scheduler.json` saves them (`admin.jobs`):
  the loop `serve.py` starts re-reads that file every tick, so the saved state is what runs.
"""

import csv
import datetime
import http.client
import itertools
import re

from ..core import changes, fileio, keys, paths, settings, tails
from ..models import aliases, catalog, endpoints, history, registry
from ..calling import client
from ..panel import collections, offload, roles, roster
from ..server import gatekeys, guard
from ..admin import jobs
from ..store import store

STAMPED = (("config", "*.json*"), ("config", "*.yaml"), ("metrics", "*.json*"), ("perf", "history.csv"),
           ("runs", "*.md"))
CAPS = (("tools", "tools"), ("vision", "vision"), ("structured_output", "json"), ("reasoning", "reasons"))
FAILURES = {  # GL-2: failure class -> (label, css, reading)
    "capacity": ("throttled", "warn", "rate limit or quota"),
    "timeout": ("slow", "warn", "no reply within the budget"),
    "empty": ("empty reply", "warn", "answered nothing; usually an output budget spent thinking"),
    "structural": ("not found", "err", "no such model, or no provider behind it"),
    "paywalled": ("no longer free", "err", "the free tier moved behind a paid slug"),
    "entitlement": ("no access", "err", "payment, credit or permission refused"),
    "signin": ("sign in again", "warn", "the key was refused: expired or revoked; fix it on the Endpoints page"),
    "other": ("failing", "err", "an error nothing here recognises"),
}
SEVERITY = {"err": 0, "warn": 1, "": 2, "ok": 3}
LOG_LINES = 200


def file(*parts):
    return paths.file(*parts)


def stamp():
    """FILE-1: the newest mtime over the evidence and config files, ui.json left out (a theme is no news)."""
    newest = 0.0
    folder = paths.data()
    for part, pattern in STAMPED:
        for found in (folder / part).glob(pattern):
            if found.name == "ui.json" and part == "config":
                continue
            try:
                newest = max(newest, found.stat().st_mtime)
            except OSError:
                pass
    return newest


def alerts():
    return {k: e for k, e in fileio.read_json(file("metrics", "alerts.json")).items() if isinstance(e, dict)}


def perf_rows():
    """`{alias: [rows oldest first]}` from perf/history.csv, aliases followed through renames."""
    rows = {}
    where = file("perf", "history.csv")
    try:
        with open(where, encoding="utf-8", newline="") as f:
            current = aliases.resolver()
            for row in csv.DictReader(f):
                model = (row.get("model") or "").strip()
                if model:
                    rows.setdefault(aliases.follow(current, model), []).append(row)
    except OSError:
        pass
    return rows


def _int(value):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return 0


def status(alias, served, retired_entry, open_alerts, missing, rows):
    """GL-2: `(label, css, why)` in the page's one status vocabulary."""
    if retired_entry is not None:
        return "retired", "", retired_entry.why or "retired by hand"
    alert = open_alerts.get(f"model:pending:{served}")
    if alert is not None:
        days = re.search(r"in (\d+) day", alert.get("message") or "")
        return (f"retiring in {days.group(1)}d" if days else "retiring"), "err", alert.get("action") or ""
    if served in missing:
        where = "Open WebUI" if endpoints.hub(roster.default_endpoint() or "") == "openwebui" else roster.default_endpoint()
        return "not served", "err", f"missing from {where} since {missing[served]}"
    if not rows:
        return "untested", "", "no probe yet"
    last = rows[-1]
    if _int(last.get("answered")) > 0:
        return "healthy", "ok", "answered its last probe"
    failure = (last.get("failure") or "").strip() or ("timeout" if _int(last.get("timeout")) > 0 else "other")
    label, css, reading = FAILURES.get(failure, FAILURES["other"])
    return label, css, (last.get("detail") or "").strip() or reading


def _missing():
    snapshot = fileio.read_json(file("config", "served-snapshot.json")).get("first_missing")
    return snapshot if isinstance(snapshot, dict) else {}


def statuses():
    """`{alias: (label, css, why)}` over registered ∪ retired ∪ decision models."""
    found, gone, open_alerts, missing = roster.directory(), roster.retired().models, alerts(), _missing()
    rows = perf_rows()
    result = {}
    for alias, entry in found.items():
        if entry.get("kind") == "decision":
            result[alias] = ("—", "", "decision models have no availability probe yet")
        else:
            result[alias] = status(alias, entry["served"], None, open_alerts, missing, rows.get(alias, []))
    for alias, entry in gone.items():
        result[alias] = status(alias, entry.served, entry, open_alerts, missing, [])
    return result


def _new_aliases(names_by_served, today):
    """GL-3 with IMP-6: onboard lines (quick ones too) of the last 7 days whose served name is registered."""
    since = (today - datetime.timedelta(days=7)).isoformat()
    found = set()
    for line in changes.recent(LOG_LINES * 5):
        if str(line.get("field", "")).startswith("onboard") and str(line.get("at", "")) >= since:
            alias = names_by_served.get(line.get("new"))
            if alias:
                found.add(alias)
    for alias, entry in registry.decision_models().items():  # GL-1: a decision model is new by its own `onboarded` date
        if entry.onboarded[:10] >= since:
            found.add(alias)
    return found


def glance(today=None):
    """GL-1's rows: every current model, most offloads first, decision models last."""
    today = today or datetime.date.today()
    found, gone, states, rows = roster.directory(), roster.retired().models, statuses(), perf_rows()
    work = offload.summary()
    recall = history.suite_recall(paths.data())
    new = _new_aliases({e["served"]: a for a, e in found.items()}, today)
    deciders = registry.decision_models()
    out = []
    for alias in list(found) + [a for a in gone if a not in found]:
        record = gone.get(alias)
        entry = found.get(alias) or {"served": record.served, "tag": record.tag, "role": record.role or "general",
                                     "ad_hoc": False}
        decision = entry.get("kind") == "decision"
        info = {} if decision else (catalog.info(alias) or {})
        label, css, why = states[alias]
        done = work.get(alias) or {}
        tiny = [r for r in rows.get(alias, []) if (r.get("prompt") or "").strip() == "tiny" and _int(r.get("answered"))]
        answers = [(r.get("timestamp") or "")[:10] for r in rows.get(alias, []) if _int(r.get("answered"))]
        if done.get("useful"):
            answers.append(done.get("last_date") or "")
        connection = (entry.get("tag") or "").split("/", 1)[0]
        if decision:  # GL-4, MD-1: a decision model's connection is the hub or endpoint it goes through
            decider = deciders.get(alias)
            connection = (decider.via if decider else "") or entry.get("endpoint") or ""
        suite = recall.get(alias)
        sources = info.get("sources") if isinstance(info.get("sources"), dict) else {}
        modalities = info.get("modalities") if isinstance(info.get("modalities"), dict) else {}
        inputs = info.get("input_modalities") or modalities.get("input")
        out.append({
            "alias": alias, "served": entry["served"], "tag": entry.get("tag", ""), "role": entry["role"],
            "decision": decision, "retired": alias in gone and alias not in found,
            "retired_at": record.at[:10] if record else "", "ad_hoc": entry.get("ad_hoc", False),
            "status": label, "css": css, "why": why, "new": alias in new,
            "context": info.get("context_window"), "context_source": _text(sources.get("context_window")),
            "question_types": entry.get("question_types") or [], "can": [word for cap, word in CAPS if info.get(cap) is True],
            "offloads": done.get("offloads", 0), "useful": done.get("useful", 0), "judged": done.get("judged", 0),
            "suite": f"{suite[0]}/{suite[1]}" if suite and suite[1] else "",
            "suite_tasks": suite[2] if suite and suite[1] and len(suite) > 2 else 0,
            "reply": float(tiny[-1].get("p50_s") or 0) if tiny else None,
            "last": max(answers) if answers else "",
            "connection": connection or ("unknown" if alias in gone else ""),
            "price": "unknown" if decision else roster.price(alias, entry["served"], connection, info),
            "max_output": info.get("max_output"), "input": inputs if isinstance(inputs, list) else None,
            "limits": {k: (info.get("limits") or {}).get(k) for k in ("rpm", "rpd", "tpm", "tpd")},
            "endpoint": entry.get("endpoint") or "",
        })
    live = [r for r in out if not r["decision"]]
    live.sort(key=lambda r: (-r["offloads"], r["alias"]))
    return live + sorted((r for r in out if r["decision"]), key=lambda r: r["alias"])


def actions(today=None):
    """SHELL-4..6: open alerts (oldest first) and the retirements of the last 7 days made automatically."""
    today = today or datetime.date.today()
    registered = {e["served"]: a for a, e in roster.directory().items()}
    rows = []
    for key, alert in sorted(alerts().items(), key=lambda kv: str(kv[1].get("first_seen", ""))):
        try:
            days = (today - datetime.date.fromisoformat(str(alert.get("first_seen", ""))[:10])).days
        except ValueError:
            days = 0
        parts = key.split(":")
        alias = alert.get("alias") or registered.get(parts[2] if len(parts) > 2 else "", "")
        rows.append({"key": key, "kind": alert.get("kind", ""), "message": alert.get("message", ""),
                     "why": f"{alert.get('action', '')} · " + ("open today" if days <= 0 else f"open {days} days"),
                     "alias": alias if alias in registered.values() else "",
                     "aliases": alert.get("aliases") if isinstance(alert.get("aliases"), list) else []})
    since = (today - datetime.timedelta(days=7)).isoformat()
    auto = [{"key": f"retired:{a}:{e.at}", "alias": a, "at": e.at[:10], "why": e.why.removeprefix("auto: ")}
            for a, e in roster.retired().models.items() if e.by == "auto" and e.at >= since]
    auto.sort(key=lambda r: r["at"], reverse=True)
    return {"alerts": rows, "auto": auto}


def onboard_issues(states=None):
    """MP-19: onboarding stops of registered models whose status is not healthy, with the failure's words."""
    states = states or statuses()
    registered = registry.registrations()
    current = aliases.resolver()
    found = {}
    for alias, issue in fileio.read_json(file("metrics", "onboard-issues.json")).items():
        alias = aliases.follow(current, alias)
        if not isinstance(issue, dict) or alias not in registered or states.get(alias, ("", "ok"))[1] == "ok":
            continue
        failure = issue.get("failure") if isinstance(issue.get("failure"), str) and issue["failure"] in FAILURES \
            else "other"
        label, css, reading = FAILURES[failure]
        found[alias] = {**issue, "failure": failure, "label": label, "css": css, "reading": reading}
    return found


def bench_json(today=None):
    """SHELL-9's `window.BENCH`, plus the tables the page draws (the page renders them from this)."""
    found = roster.directory()
    facts = {a: catalog.info(a) or {} for a, e in found.items() if e.get("kind") != "decision"}
    options = {a: o for a, o in fileio.read_json(registry.options_path()).items()
               if a in facts and isinstance(o, dict)}
    return {"models": found, "facts": facts, "options": options, "roles": roles.load()["roles"],
            "retired": {a: e.stored for a, e in roster.retired().models.items()}, "stamp": stamp(),
            "glance": glance(today), "actions": actions(today),
            "first_run": first_run(found), "onboard": onboard_issues(), "collections": sorted(collections.load())}


def first_run(found):
    """SHELL-3's step: `endpoint`, `onboard`, `collection`, or `""` once the bench is set up."""
    if not endpoints.readable():
        return "endpoint"
    if not found:
        return "onboard"
    return "" if collections.load() else "collection"


def gateway_url(port):
    """SRV-3."""
    public = settings.env("BENCHWARMERS_PUBLIC_URL").strip().rstrip("/")
    if public:
        return public + "/v1"
    bind = guard.bind_address()
    host = "127.0.0.1" if bind in ("127.0.0.1", "0.0.0.0", "::", "[::]") else bind
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/v1"


def status_api(port, version):
    """API-1 (`GET /api/status`); a broken endpoints.json raises RuntimeError (API-4)."""
    every = endpoints.load()
    found = roster.directory()
    mode, on = jobs.state()
    return {"ok": True, "errors": [], "version": version, "gateway": gateway_url(port), "data": str(paths.data()),
            "models": sum(1 for e in found.values() if e.get("kind") != "decision"),
            "decision_models": sum(1 for e in found.values() if e.get("kind") == "decision"),
            "retired": len(roster.retired().models), "collections": len(collections.load()), "endpoints": len(every),
            "default_endpoint": roster.default_endpoint() if every else None,
            "client": settings.env("BENCH_CLIENT").strip() or client.chosen()[0],
            "scheduler": mode, "scheduler_jobs": on, "auth": bool(guard.admin_token()),
            "keys_required": guard.keys_required(), "onboarding": {"running": False, "items": 0}}


def models_api():
    """API-2 (`GET /api/models`), sorted by alias; a broken endpoints.json raises RuntimeError (API-4)."""
    endpoints.load()
    found, gone, states = roster.directory(), roster.retired().models, statuses()
    rows = []
    for alias in sorted(set(found) | set(gone)):
        entry = found.get(alias)
        label, _, why = states[alias]
        if entry is None:
            old = gone[alias]
            rows.append({"alias": alias, "served": old.served, "role": old.role or "general",
                         "kind": "decision" if old.role == "decision" else "chat",
                         "endpoint": old.endpoint, "connection": "", "status": label, "why": why,
                         "retired": True, "retired_why": old.why})
            continue
        rows.append({"alias": alias, "served": entry["served"], "role": entry["role"],
                     "kind": entry.get("kind", "chat"), "endpoint": entry["endpoint"],
                     "connection": entry["tag"].split("/", 1)[0], "status": label, "why": why, "retired": False})
    return {"ok": True, "errors": [], "models": rows}


def keys_api():
    """ST-7 / MGMT-1: never a digest, never a key."""
    rows = [{k: r[k] for k in ("name", "hint", "collections", "rpm", "created", "last_used")}
            for r in gatekeys.listing()]
    return {"ok": True, "errors": [], "required": guard.keys_required(), "keys": rows}


def logs():
    """LG-1: gateway calls (no prompt, no answer), changes, scheduler lines, onboarding runs."""
    calls = []
    for record in store.current().tail(store.CALLS, LOG_LINES):
        seats = record.get("seats") if isinstance(record.get("seats"), list) else []
        calls.append({"at": str(record.get("at", "")), "model": str(record.get("model", "")),
                      "shape": str(record.get("shape", "")),
                      "seats": ", ".join(f"{s.get('alias')} {s.get('status')}" for s in seats if isinstance(s, dict))})
    changed = [{"at": str(c.get("at", "")), "by": str(c.get("by", "")), "alias": str(c.get("alias", "")),
                "field": str(c.get("field", "")), "new": _text(c.get("new"))[:160]} for c in changes.recent(LOG_LINES)]
    scheduled = [line.decode("utf-8", "replace")  # LG-1: the last lines only, however long the log
                 for line in itertools.islice(tails.backwards(file("runs", "scheduler.log")), LOG_LINES)]
    runs = sorted((p.name for p in file("runs").glob("onboard-*.log")), reverse=True)[:30]
    return {"calls": calls, "changes": changed, "scheduler": scheduled, "onboarding": runs}


def _text(value):
    if value is None:
        return ""
    return value if isinstance(value, str) else fileio.dumps(value, indent=None).strip()


def answering(bind, port):
    """Whether a server answers `GET /health` on `port` of this machine (issue 31: Settings names only the
    ports something listens on; a bind to every address is asked on the loopback one)."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(bind, bind)
    conn = http.client.HTTPConnection(host, port, timeout=0.5)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def listening(bind, port, gateway_port):
    """The Listening-on row's text: this port, and gateway.py's port only when a server answers there."""
    here = f"{bind}:{port} (dashboard, gateway at /v1)"
    if gateway_port == port:
        return here
    if answering(bind, gateway_port):
        return f"{here} · {bind}:{gateway_port} (gateway.py)"
    return f"{here}; nothing answers on {gateway_port}, gateway.py's port (python gateway.py starts it)"


def access(port, gateway_port):
    """ST-14 / MGMT-7: the server-and-access rows, from the environment, never a secret."""
    bind = guard.bind_address()
    token = bool(guard.admin_token())
    required_env = settings.env("BENCHWARMERS_REQUIRE_KEYS").strip().lower() not in guard.FALSE
    folder, reason = paths.located()
    env_keys = sorted(keys.env_keys())
    return [
        ["Listening on", listening(bind, port, gateway_port), "BENCH_BIND, BENCH_PORT, BENCH_GATEWAY_PORT"],
        ["Reached from", "this machine only" if guard.is_loopback(bind) else "other machines too", "BENCH_BIND"],
        ["Admin login", "on: the dashboard asks for the token" if token else "off, which only this machine allows",
         "BENCHWARMERS_ADMIN_TOKEN"],
        ["Gateway keys", "asked on every gateway call" if token else
         ("asked on this machine too" if required_env else "not asked"), "BENCHWARMERS_REQUIRE_KEYS"],
        ["Public address", settings.env("BENCHWARMERS_PUBLIC_URL").strip() or "none", "BENCHWARMERS_PUBLIC_URL"],
        ["Other host names", settings.env("BENCH_ALLOWED_HOSTS").strip() or "none", "BENCH_ALLOWED_HOSTS"],
        ["Browser apps on other sites", settings.env("BENCH_ALLOWED_ORIGINS").strip() or "none: same origin only",
         "BENCH_ALLOWED_ORIGINS"],
        ["Data folder", f"{folder} ({reason})", "BENCHWARMERS_HOME"],
        ["Endpoint keys from the environment", ", ".join(env_keys) or "none: all in the llm key store",
         "BENCHWARMERS_KEY_<NAME>"],
    ]
