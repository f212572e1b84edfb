"""Gateway benchmark (issue 7): the panel path measured against the physical limit.

Why: a panel can never answer before its slowest seat does, so the only fair figure for the
gateway is what it adds on top of that floor. This script starts the local upstream
(`python -m benchwarmers.demo.demo --models FILE`) and the gateway (`python gateway.py`) as separate
processes on 127.0.0.1, drives them from this process with the standard library only, and
measures, each against the floor taken in the same run:

  overhead    30 sequential non-streamed panels: latency minus the floor, p50/p95. Each panel is
              followed by the same request sent straight to the upstream for every seat it seated,
              all at once, as the gateway does; the slowest of those is that panel's floor. The same
              floor measured again right after gives the rig's own noise (no gateway on that path).
  streaming   time to the response headers, to the first seat's section, each section's lag after
              its own seat's floor (paired the same way), and to `[DONE]`.
  throughput  1, 8, 32 and 64 concurrent clients for 10 s each: panels/s, p50/p95, every error and
              every dropped connection; gateway and upstream CPU over the phase.
  log size    overhead and 8-client throughput with metrics/offloads.jsonl pre-filled with 0,
              10,000 and 100,000 realistic lines (a fresh gateway for each).
  backends    the overhead with BENCH_CLIENT=llm, in-process and `llm -m` subprocess paths.
  workers     throughput at 32 and 64 clients with `gateway.py --workers 2`: one process per core
              (CPU and memory summed over the gateway's processes).

Every phase records the gateway's peak RSS (VmHWM, reset at the phase start through
/proc/<pid>/clear_refs), its CPU time and the upstream's (/proc/<pid>/stat), the machine's
load average and the CPU the rest of the machine used meanwhile (other engineers' test runs).

    python benchmarks/gateway.py              the full run (about 3-4 minutes)
    python benchmarks/gateway.py --quick      3 s phases and fewer panels, for development
    python benchmarks/gateway.py --phases overhead,streaming
    python benchmarks/gateway.py --profile    where the gateway's time goes: py-spy, strace, call counts
    python benchmarks/gateway.py --start [--against CHECKOUT]
                                              start to first answer: `python gateway.py` until /health answers,
                                              alternating with the other checkout, median of START_RUNS
    python benchmarks/gateway.py --instructions [--against CHECKOUT]
                                              CPU instructions per panel under valgrind's callgrind: a
                                              count that the other work on the machine does not move, so a
                                              small regression shows where timings drown in noise

Results print as a table and go to benchmarks/results/gateway-<time>.json (profile-<time>.json).
"""

import argparse
import concurrent.futures
import datetime
import http.client
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from benchwarmers.core import fileio, paths
from benchwarmers.models import endpoints, registry
from benchwarmers.panel import collections, offload

CODE = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
COLLECTION = "panel"
TOKENS = 150  # an answer of ~1,000 characters streams as 150 small tokens, one chunk each
VOCABULARY = ("review", "patch", "thread", "lock", "cache", "retry", "buffer", "parser", "token", "stream",
              "index", "schema", "branch", "commit", "test", "fixture", "queue", "socket", "header", "payload")
SEAT = {"context_window": 128000, "max_output": 8192, "vision": False, "tools": True}
MEMBERS = {"m-alpha": 0.15, "m-bravo": 0.25, "m-charlie": 0.30}
EXPLORERS = {"x-delta": 0.20, "x-echo": 0.23, "x-foxtrot": 0.26, "x-golf": 0.29, "x-hotel": 0.32, "x-india": 0.35}
PROMPT = ("Review this change for correctness. The retry loop in fetch() now sleeps 2**attempt seconds and "
          "gives up after five tries; the caller treats None as 'not found'. Is there a bug, and what test "
          "would catch it?\n\n    for attempt in range(1, 5):\n        try:\n            return get(url)\n"
          "        except Timeout:\n            time.sleep(2 ** attempt)\n    return None\n")
PANEL_BODY = json.dumps({"model": f"bench/{COLLECTION}", "messages": [{"role": "user", "content": PROMPT}]}).encode()
STREAM_BODY = json.dumps({"model": f"bench/{COLLECTION}", "stream": True,
                          "messages": [{"role": "user", "content": PROMPT}]}).encode()
JSON_HEADERS = {"Content-Type": "application/json"}
REQUEST_TIMEOUT = 120
START_TIMEOUT = 60
CLIENT_LEVELS = (1, 8, 32, 64)
LOG_SIZES = (0, 10_000, 100_000)
WORKERS = 2
WORKER_CLIENT_LEVELS = (32, 64)
TICK = os.sysconf("SC_CLK_TCK")


def answer(tokens=TOKENS):
    """~1,000 characters that stream as `tokens` chunks (150 words, joined by `-` into fewer tokens)."""
    words = [VOCABULARY[(7 * i) % len(VOCABULARY)] for i in range(150)]
    size = math.ceil(len(words) / tokens)
    return " ".join("-".join(words[i:i + size]) for i in range(0, len(words), size))


def models(tokens=TOKENS):
    seats = {**MEMBERS, **EXPLORERS}
    return {name: dict(SEAT, latency=latency, answer=answer(tokens)) for name, latency in seats.items()}


MODELS = models()

# The targets: (figure, comparison, bound, unit).
TARGETS = {
    "overhead p50": ("<=", 2.0, "ms"),
    "overhead p95": ("<=", 5.0, "ms"),
    "section lag after its floor (p95)": ("<=", 2.0, "ms"),
    "headers (p50)": ("<=", 5.0, "ms"),
    "gateway CPU per panel (8 clients)": ("<=", 8.0, "ms"),
    "panels/s at 32 clients": (">=", 48.0, "/s"),
    "errors + dropped at 64 clients": ("<=", 0, ""),
    "100k-line log: overhead p50 / empty log's": ("<=", 1.2, "x"),
    "100k-line log: peak RSS at 8 clients": ("<=", 100.0, "MB"),
    "llm in-process overhead p50": ("<=", 150.0, "ms"),
    "llm subprocess overhead p50": ("<=", 150.0, "ms"),
    f"panels/s at 32 clients, {WORKERS} workers": (">=", 48.0, "/s"),
    f"errors + dropped at 64 clients, {WORKERS} workers": ("<=", 0, ""),
    "route turn overhead p50": ("<=", 2.0, "ms"),
    "route first token after the upstream's (p50)": ("<=", 1.0, "ms"),
    "route errors + dropped at 32 clients": ("<=", 0, ""),
}
ROUTE_CLIENTS = 32


# -------------------------------------------------------------------------------- measuring processes


def stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_seconds(pids):
    """(own CPU, reaped children's CPU) of processes in seconds, summed, from /proc/<pid>/stat."""
    own = reaped = 0
    for pid in pids:
        fields = stat_fields(pid)
        own += int(fields[11]) + int(fields[12])
        reaped += int(fields[13]) + int(fields[14])
    return own / TICK, reaped / TICK


def workers_of(pid):
    """The gateway's worker processes: its children alive between panels (an `llm -m` child lives only
    within a panel)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(stat_fields(entry)[1]) == pid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak(pid):
    """Start VmHWM afresh from the current RSS (Linux clear_refs 5), so each phase has its own peak."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def machine_ticks():
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(v) for v in f.read().split()[:3]]


class Meter:
    """CPU, peak memory and machine load of the gateway and the upstream over one phase."""

    def __init__(self, gateway, upstream):
        self.gateway = [gateway.pid] + workers_of(gateway.pid)
        self.upstream = [upstream.pid]
        for pid in self.gateway:
            reset_peak(pid)
        self.load_start = loadavg()
        self.started = time.monotonic()
        self.machine = machine_ticks()
        self.own = os.times()
        self.gw = cpu_seconds(self.gateway)
        self.up = cpu_seconds(self.upstream)

    def stop(self, panels):
        elapsed = time.monotonic() - self.started
        gw, up = cpu_seconds(self.gateway), cpu_seconds(self.upstream)
        own = os.times()
        busy, total = machine_ticks()
        gw_cpu = gw[0] - self.gw[0]
        gw_children = gw[1] - self.gw[1]  # `llm -m` processes, once reaped
        up_cpu = up[0] - self.up[0]
        loader = (own.user + own.system) - (self.own.user + self.own.system)
        cores = os.cpu_count() or 1
        machine = (busy - self.machine[0]) / max(1, total - self.machine[1]) * cores
        per = 1000 / panels if panels else float("nan")
        return {
            "seconds": round(elapsed, 2),
            "gateway_cpu_s": round(gw_cpu, 2), "gateway_children_cpu_s": round(gw_children, 2),
            "upstream_cpu_s": round(up_cpu, 2), "loadgen_cpu_s": round(loader, 2),
            "gateway_cpu_ms_per_panel": round((gw_cpu + gw_children) * per, 2),
            "upstream_cpu_ms_per_panel": round(up_cpu * per, 2),
            "gateway_cores": round((gw_cpu + gw_children) / elapsed, 2),
            "upstream_cores": round(up_cpu / elapsed, 2),
            "loadgen_cores": round(loader / elapsed, 2),
            "machine_busy_cores": round(machine, 2),
            "others_cores": round(max(0.0, machine - (gw_cpu + gw_children + up_cpu + loader) / elapsed), 2),
            "gateway_processes": len(self.gateway),
            "gateway_peak_rss_mb": round(sum(status_kb(pid, "VmHWM") for pid in self.gateway) / 1024, 1),
            "gateway_rss_mb": round(sum(status_kb(pid, "VmRSS") for pid in self.gateway) / 1024, 1),
            "loadavg_start": self.load_start, "loadavg_end": loadavg(),
        }


# -------------------------------------------------------------------------------- figures


def percentile(values, q):
    """Nearest-rank percentile; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def spread(values, scale=1000.0):
    """p50, p95, min and max of seconds as milliseconds (or of whatever `scale` makes them)."""
    return {"n": len(values), "p50": round(percentile(values, 0.5) * scale, 2),
            "p95": round(percentile(values, 0.95) * scale, 2),
            "min": round(min(values) * scale, 2) if values else None,
            "max": round(max(values) * scale, 2) if values else None}


# -------------------------------------------------------------------------------- the bench


def offload_lines(count, seed=7):
    """`count` realistic offload lines: many aliases and collections, a year of dates, seats of every
    status, about a fifth of the answers judged later by a verdict line with claims (OFF-1..4)."""
    rng = random.Random(seed)
    vendors = ("openrouter", "groq", "cerebras", "mistral", "gemini", "together", "deepinfra", "local", "nvidia",
               "sambanova", "fireworks", "hub")
    families = ("llama-3.3-70b", "qwen3-coder-480b", "deepseek-v3.1", "gpt-oss-120b", "kimi-k2", "glm-4.6",
                "mistral-large", "gemma-3-27b", "phi-4", "minimax-m2", "hermes-4-405b", "nemotron-ultra",
                "devstral-medium", "granite-4", "command-a", "olmo-2-32b", "qwen3-235b", "gemini-2.5-flash",
                "codestral", "grok-code-fast")
    aliases = [f"{v}-{m}" for v in vendors for m in families][:230] + list(MODELS)
    benches = ("core", "review", "design", "quick", "code", COLLECTION)
    shapes = ("general", "review", "code", "design", "prose", "enumeration", "quick")
    topics = ("Is this loop off by one? for i in range(1, len(xs)): total += xs[i]",
              "Review the retry logic in fetch(): sleeps 2**attempt and gives up after five tries",
              "Design a cache for the catalog listing that never blocks the request path",
              "Which of these three migrations can run without a lock on the users table?",
              "List every place the session token is written to disk or a log",
              "Rewrite the README intro so a new user knows what a collection is in one paragraph")
    today = datetime.date.today()
    pending = []
    out = []
    for i in range(count):
        if pending and (pending[0][0] <= i or len(out) + len(pending) >= count):
            out.append(pending.pop(0)[1])
            if len(out) >= count:
                break
            continue
        day = today - datetime.timedelta(days=365 - i * 365 // max(1, count))
        seat = rng.choice(("member1", "member2", "member3", "explorer", "explorer2"))
        label = "explorer 2" if seat == "explorer2" else seat.rstrip("0123456789")
        status = rng.choices(("ok", "error", "empty"), (85, 10, 5))[0]
        seconds = round(rng.uniform(0.4, 90), 1)
        note = f"{label}; {status} in {seconds:.1f}s"
        if status == "error":
            note += ": Error: Error code: 429 - {'error': {'message': 'Rate limit exceeded', 'code': 429}}"[:120]
        call = f"p{day:%Y%m%d}-{rng.randrange(86400):06d}-{rng.getrandbits(16):04x}.{seat}"
        task = f"{rng.choice(topics)[:90]} (bench/{rng.choice(benches)}, {rng.choice(shapes)})"
        line = {"date": day.isoformat(), "model": rng.choice(aliases), "task": task, "useful": None,
                "note": note, "call": call, "status": status, "seconds": seconds}
        out.append(json.dumps(line))
        if status == "ok" and rng.random() < 0.22:
            judged = dict(line, date=(day + datetime.timedelta(days=rng.randrange(3))).isoformat(),
                          useful=rng.random() < 0.6, note="checked against the code: " + rng.choice(
                              ("found the real bug", "missed the off-by-one", "right about the lock",
                               "invented an API", "useful second opinion")))
            judged["real"] = ["the loop skips the first item"] if judged["useful"] else []
            judged["false"] = [] if judged["useful"] else ["the function is never called"]
            judged = {k: judged[k] for k in ("date", "model", "task", "useful", "note", "call", "real", "false",
                                             "status", "seconds")}
            pending.append((i + rng.randrange(5, 200), json.dumps(judged)))
    return out[:count]


def use_folder(folder):
    """This process's data folder becomes `folder/data` and llm's user folder `folder/llm`; returns the former."""
    os.environ["BENCHWARMERS_HOME"] = str(folder / "data")
    os.environ["LLM_USER_PATH"] = str(folder / "llm")
    (folder / "llm").mkdir(parents=True, exist_ok=True)
    paths.reload()
    return folder / "data"


def make_data(folder, upstream_base, log_lines=0):
    """A data folder whose endpoint is the upstream, every benchmark model registered, one collection."""
    use_folder(folder)
    fileio.update(endpoints.path(), lambda found: found.__setitem__(
        "bench", {"base": upstream_base, "key": "", "kind": "local", "default": True}))
    for alias in MODELS:
        registry.add_registration(alias, alias, "bench")
    fileio.update(collections.collections_path(), lambda found: found.__setitem__(
        COLLECTION, {"members": list(MEMBERS), "description": "benchmark: three members and two explorers"}))
    registry.sync_to_llm()  # the llm backend reads llm's own copy of the registrations
    log = offload.log_path()
    if log_lines:
        log.write_text("\n".join(offload_lines(log_lines)) + "\n", encoding="ascii")
    return folder / "data"


# -------------------------------------------------------------------------------- processes


def wait_for_line(path, pattern, proc, timeout=START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited {proc.returncode}: {path.read_text(errors='replace')[-2000:]}")
        found = re.search(pattern, path.read_text(errors="replace")) if path.exists() else None
        if found:
            return found
        time.sleep(0.05)
    raise RuntimeError(f"{proc.args} did not start within {timeout}s")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("BENCHWARMERS_KEY") and k not in ("BENCH_BIND", "BENCHWARMERS_ADMIN_TOKEN",
                                                                           "BENCH_CLIENT", "BENCH_LLM_INPROCESS")}
    env.update(extra)
    return env


def start_upstream(run):
    spec = run / "models.json"
    spec.write_text(json.dumps(MODELS), encoding="utf-8")
    out = run / "upstream.out"
    proc = subprocess.Popen([sys.executable, "-m", "benchwarmers.demo.demo", "--port", "0", "--models", str(spec)],
                            cwd=CODE, stdout=out.open("w"), stderr=subprocess.STDOUT, env=clean_env())
    base = wait_for_line(out, r"(http://127\.0\.0\.1:\d+/v1)", proc).group(1)
    return proc, base


def start_gateway(run, data, name, command=None, start_timeout=START_TIMEOUT, **env):
    """`python gateway.py --port 0` on the data folder; returns (process, port) once /health answers."""
    out = run / f"gateway-{name}.out"
    argv = command or [sys.executable, str(CODE / "gateway.py"), "--port", "0"]
    proc = subprocess.Popen(argv, cwd=CODE, stdout=out.open("w"), stderr=(run / f"gateway-{name}.err").open("w"),
                            env=clean_env(BENCHWARMERS_HOME=str(data), LLM_USER_PATH=str(data.parent / "llm"),
                                          **env))
    port = int(wait_for_line(out, r"http://127\.0\.0\.1:(\d+)/v1", proc, start_timeout).group(1))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/health")
    conn.getresponse().read()
    conn.close()
    return proc, port


def stop(proc, timeout=15):
    """SIGINT (a clean exit, so profilers write their output), then SIGKILL; this process's own children only."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -------------------------------------------------------------------------------- clients


def post(port, body, timeout=REQUEST_TIMEOUT):
    """One panel: `(status, parsed reply or None)`."""
    return request(port, "POST", "/v1/chat/completions", body, timeout)


def request(port, method, path, body=None, timeout=REQUEST_TIMEOUT, key=None):
    """One request of encoded `body`, with gateway key `key` when given: `(status, parsed reply or None)`; a new
    connection, as the gateway closes each one."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body, {**JSON_HEADERS, "Authorization": f"Bearer {key}"} if key else JSON_HEADERS)
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(data)
    except ValueError:
        return resp.status, None


def seated(reply):
    return [seat["alias"] for seat in ((reply or {}).get("bench") or {}).get("seats") or []]


class Direct:
    """The floor: the gateway's own upstream request (streamed, read to the end) sent straight to the upstream,
    one keep-alive connection per thread as the gateway's pool keeps them."""

    def __init__(self, base):
        host_port = base.split("//", 1)[1].split("/", 1)[0]
        self.host, self.port = host_port.rsplit(":", 1)
        self.local = threading.local()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="floor")

    def _conn(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection(self.host, int(self.port), timeout=REQUEST_TIMEOUT)
        return conn

    def one(self, alias):
        body = json.dumps({"model": alias, "messages": [{"role": "user", "content": PROMPT}], "stream": True,
                           "stream_options": {"include_usage": True}}).encode()
        for attempt in (1, 2):
            conn = self._conn()
            started = time.perf_counter()
            try:
                conn.request("POST", "/v1/chat/completions", body, JSON_HEADERS)
                resp = conn.getresponse()
                resp.read()
                return time.perf_counter() - started
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise

    def stream(self, alias):
        """The member's own stream, as route mode asks it: `(seconds to the first content token, to [DONE])`."""
        body = json.dumps({"model": alias, "messages": [{"role": "user", "content": PROMPT}], "stream": True,
                           "stream_options": {"include_usage": True}}).encode()
        _, _, first, done = timed_stream(self.host, self.port, "/v1/chat/completions", body)
        return first, done

    def floors(self, aliases):
        """`{alias: seconds}` with every alias asked at once, as a panel asks its seats."""
        futures = {alias: self.pool.submit(self.one, alias) for alias in dict.fromkeys(aliases)}
        return {alias: future.result() for alias, future in futures.items()}


def timed_stream(host, port, path, body):
    """One streamed request on a new connection: `(status, headers, seconds to the first content token, seconds
    to the end)`; the end is `[DONE]`, or the close."""
    conn = http.client.HTTPConnection(host, int(port), timeout=REQUEST_TIMEOUT)
    started = time.perf_counter()
    first = done = None
    try:
        conn.request("POST", path, body, JSON_HEADERS)
        resp = conn.getresponse()
        while True:
            line = resp.readline()
            if not line:
                break
            if first is None and line.startswith(b"data: {") and b'"content": "' in line:
                delta = (json.loads(line[6:]).get("choices") or [{}])[0].get("delta") or {}
                if delta.get("content"):
                    first = time.perf_counter() - started
            if line.startswith(b"data: [DONE]"):
                done = time.perf_counter() - started
                break
    finally:
        conn.close()
    return resp.status, dict(resp.getheaders()), first, done or time.perf_counter() - started


def route_body(first_message):
    return json.dumps({"model": f"bench/{COLLECTION}:route", "stream": True,
                       "messages": [{"role": "user", "content": first_message}]}).encode()


def route_turns(port, direct, turns):
    """Sequential streamed route turns of one conversation, each paired with its member's own stream."""
    body = route_body(PROMPT)
    done_over, first_over, noise, failed = [], [], [], 0
    for _ in range(turns):
        status, headers, first, done = timed_stream("127.0.0.1", port, "/v1/chat/completions", body)
        alias = headers.get("X-Bench-Model")
        if status != 200 or not alias or first is None:
            failed += 1
            continue
        floor = direct.stream(alias)
        again = direct.stream(alias)
        done_over.append(done - floor[1])
        first_over.append(first - floor[0])
        noise.append(again[1] - floor[1])
    return {"turn_overhead_ms": spread(done_over), "first_token_after_upstream_ms": spread(first_over),
            "rig_noise_ms": spread(noise), "failed_turns": failed}


def route_load(port, clients, seconds):
    """Streamed route turns from `clients` threads, a conversation each, for `seconds`."""
    bodies = [route_body(f"{PROMPT}\n(conversation {n})") for n in range(clients)]

    def ask(n):
        status, _, first, _ = timed_stream("127.0.0.1", port, "/v1/chat/completions", bodies[n])
        return None if status == 200 and first is not None else f"http {status}"
    return drive(clients, seconds, ask)


def sequential(port, direct, panels):
    """Panels one after another, each paired with its floor: `[(latency, floor, floors, reply status)]`."""
    rows = []
    for _ in range(panels):
        started = time.perf_counter()
        status, reply = post(port, PANEL_BODY)
        latency = time.perf_counter() - started
        aliases = seated(reply)
        floors = direct.floors(aliases) if aliases else {}
        again = direct.floors(aliases) if aliases else {}  # the same floor once more: how much the rig alone varies
        rows.append({"latency": latency, "floor": max(floors.values()) if floors else float("nan"),
                     "floor_again": max(again.values()) if again else float("nan"),
                     "floors": floors, "status": status,
                     "seat_errors": sum(1 for s in (reply or {}).get("bench", {}).get("seats", [])
                                        if s.get("status") != "ok")})
    return rows


def overhead_figures(rows):
    good = [r for r in rows if r["status"] == 200 and not r["seat_errors"]]
    over = [r["latency"] - r["floor"] for r in good]
    configured = [r["floor"] - max(MODELS[a]["latency"] for a in r["floors"]) for r in good]
    return {"overhead_ms": spread(over), "latency_ms": spread([r["latency"] for r in good]),
            "floor_ms": spread([r["floor"] for r in good]),
            "floor_over_configured_ms": spread(configured),
            "rig_noise_ms": spread([r["floor_again"] - r["floor"] for r in good]),
            "failed_panels": len(rows) - len(good)}


def stream_once(port):
    """One streamed panel: when the headers, each seat's section and `[DONE]` arrived (seconds from the send)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    started = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", STREAM_BODY, JSON_HEADERS)
    resp = conn.getresponse()
    headers_at = time.perf_counter() - started
    sections, done_at, first_byte, bench = [], None, None, {}
    try:
        while True:
            line = resp.readline()
            if not line:
                break
            now = time.perf_counter() - started
            first_byte = first_byte or now
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                done_at = now
                break
            event = json.loads(data)
            bench = event.get("bench") or bench
            for choice in event.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece.startswith("\n## "):
                    alias = piece[4:].split("\n", 1)[0].split(" — ", 1)[-1].strip()
                    sections.append((alias, now))
    finally:
        conn.close()
    return {"status": resp.status, "headers": headers_at, "first_byte": first_byte, "sections": sections,
            "done": done_at, "seat_errors": sum(1 for s in bench.get("seats", []) if s.get("status") != "ok")}


def streaming(port, direct, panels):
    headers, first, lags, done, done_over, failed = [], [], [], [], [], 0
    for _ in range(panels):
        got = stream_once(port)
        if got["status"] != 200 or got["done"] is None or got["seat_errors"] or not got["sections"]:
            failed += 1
            continue
        floors = direct.floors([alias for alias, _ in got["sections"]])
        headers.append(got["headers"])
        first.append(got["sections"][0][1])
        lags += [at - floors[alias] for alias, at in got["sections"]]
        done.append(got["done"])
        done_over.append(got["done"] - max(floors.values()))
    return {"headers_ms": spread(headers), "first_section_ms": spread(first),
            "section_lag_after_floor_ms": spread(lags), "done_ms": spread(done),
            "done_after_slowest_floor_ms": spread(done_over), "failed_panels": failed}


DROPPED = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, http.client.RemoteDisconnected,
           http.client.IncompleteRead)


def drive(clients, seconds, ask):
    """`clients` threads calling `ask(n)` back to back for `seconds`; `ask` returns an error kind or None and
    raises for a dropped connection. Every error and dropped connection is counted."""
    latencies, errors, lock = [], Counter(), threading.Lock()
    last_done = [0.0]
    start = threading.Barrier(clients + 1)

    def client(n):
        start.wait()
        while time.perf_counter() < end:
            began = time.perf_counter()
            try:
                kind = ask(n)
            except DROPPED as exc:
                kind = f"dropped ({type(exc).__name__})"
            except TimeoutError:
                kind = "timeout"
            except Exception as exc:
                kind = f"{type(exc).__name__}"
            finished = time.perf_counter()
            with lock:
                last_done[0] = max(last_done[0], finished)
                if kind:
                    errors[kind] += 1
                else:
                    latencies.append(finished - began)

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    end = began + seconds
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = max(last_done[0], end) - began
    dropped = sum(n for kind, n in errors.items() if kind.startswith("dropped"))
    return {"clients": clients, "panels": len(latencies), "panels_per_s": round(len(latencies) / elapsed, 2),
            "latency_ms": spread(latencies), "errors": dict(errors), "error_count": sum(errors.values()) - dropped,
            "dropped": dropped}


def load(port, clients, seconds):
    """Non-streamed panels from `clients` threads for `seconds`; a seat's error counts as an error."""
    def ask(n):
        status, reply = post(port, PANEL_BODY)
        if status != 200:
            return f"http {status}"
        return "seat error" if any(s.get("status") != "ok" for s in reply["bench"]["seats"]) else None
    return drive(clients, seconds, ask)


# -------------------------------------------------------------------------------- phases


class Bench:
    """One run: the upstream, a run folder, and a gateway per configuration."""

    def __init__(self, quick):
        self.quick = quick
        self.run = Path(tempfile.mkdtemp(prefix="bw-bench-"))
        self.upstream, self.base = start_upstream(self.run)
        self.direct = Direct(self.base)
        self.gateway = None
        self.port = None

    def fresh_gateway(self, name, log_lines=0, command=None, warm=3, start_timeout=START_TIMEOUT, **env):
        """Stop the current gateway; start one on a new data folder (log pre-filled) and warm it up."""
        stop(self.gateway)
        data = make_data(self.run / name, self.base, log_lines)
        started = time.perf_counter()
        self.gateway, self.port = start_gateway(self.run, data, name, command, start_timeout, **env)
        ready = time.perf_counter() - started
        first = time.perf_counter()
        for _ in range(warm):  # warm-up: the catalog listing, the offload index, the router's records
            post(self.port, PANEL_BODY)
        return {"start_s": round(ready, 2), "first_panels_s": round(time.perf_counter() - first, 2),
                "log_lines": log_lines}

    def close(self):
        stop(self.gateway)
        stop(self.upstream)
        self.direct.pool.shutdown(wait=False)
        shutil.rmtree(self.run, ignore_errors=True)

    @property
    def panels(self):
        return 10 if self.quick else 30

    @property
    def seconds(self):
        return 3.0 if self.quick else 10.0

    def measured(self, work, panels_of):
        meter = Meter(self.gateway, self.upstream)
        result = work()
        result.update(meter.stop(panels_of(result)))
        return result

    def overhead(self, panels=None):
        panels = panels or self.panels

        def work():
            return overhead_figures(sequential(self.port, self.direct, panels))
        return self.measured(work, lambda r: r["overhead_ms"]["n"] + r["failed_panels"])

    def streaming(self):
        panels = 4 if self.quick else 10
        return self.measured(lambda: streaming(self.port, self.direct, panels), lambda r: panels)

    def throughput(self, clients):
        return self.measured(lambda: load(self.port, clients, self.seconds),
                             lambda r: r["panels"] + r["error_count"] + r["dropped"])

    def route(self):
        return self.measured(lambda: route_turns(self.port, self.direct, self.panels),
                             lambda r: r["turn_overhead_ms"]["n"] + r["failed_turns"])

    def route_throughput(self, clients):
        return self.measured(lambda: route_load(self.port, clients, self.seconds),
                             lambda r: r["panels"] + r["error_count"] + r["dropped"])


def run_phases(bench, phases, results, say):
    out = results["phases"]
    if {"overhead", "streaming", "throughput"} & phases:
        out["gateway"] = bench.fresh_gateway("builtin")
    if "overhead" in phases:
        say("overhead: sequential panels against their floors")
        out["overhead"] = bench.overhead()
    if "streaming" in phases:
        say("streaming: headers, sections, [DONE]")
        out["streaming"] = bench.streaming()
    if "throughput" in phases:
        out["throughput"] = {}
        for clients in CLIENT_LEVELS:
            say(f"throughput: {clients} concurrent clients for {bench.seconds:g} s")
            out["throughput"][str(clients)] = bench.throughput(clients)
    if "logsize" in phases:
        out["log_size"] = {}
        for lines in LOG_SIZES:
            say(f"log size: {lines:,} lines (fresh gateway, overhead + 8 clients)")
            entry = bench.fresh_gateway(f"log{lines}", log_lines=lines)
            entry["overhead"] = bench.overhead(10 if bench.quick else 20)
            entry["throughput_8"] = bench.throughput(8)
            out["log_size"][str(lines)] = entry
    if "backends" in phases:
        out["backends"] = {}
        for name, env, panels in (("builtin", {"BENCH_CLIENT": "builtin"}, bench.panels),
                                  ("llm-inprocess", {"BENCH_CLIENT": "llm"}, bench.panels),
                                  ("llm-subprocess", {"BENCH_CLIENT": "llm", "BENCH_LLM_INPROCESS": "0"},
                                   2 if bench.quick else 5)):
            if name == "builtin" and "overhead" in out:
                out["backends"][name] = {"same_as": "overhead"}
                continue
            say(f"backend {name}: {panels} sequential panels")
            entry = bench.fresh_gateway(f"backend-{name}", warm=1 if "subprocess" in name else 3, **env)
            entry.update(bench.overhead(panels))
            out["backends"][name] = entry
    if "route" in phases:
        say("route: sequential streamed turns against the member's own stream")
        out["route"] = bench.fresh_gateway("route")
        out["route"]["turns"] = bench.route()
        say(f"route: {ROUTE_CLIENTS} concurrent clients for {bench.seconds:g} s")
        out["route"][str(ROUTE_CLIENTS)] = bench.route_throughput(ROUTE_CLIENTS)
    if "workers" in phases:
        command = [sys.executable, str(CODE / "gateway.py"), "--port", "0", "--workers", str(WORKERS)]
        out["workers"] = bench.fresh_gateway(f"workers{WORKERS}", command=command)
        out["workers"]["processes"] = WORKERS
        for clients in WORKER_CLIENT_LEVELS:
            say(f"workers: {WORKERS} gateway processes, {clients} concurrent clients for {bench.seconds:g} s")
            out["workers"][str(clients)] = bench.throughput(clients)


# -------------------------------------------------------------------------------- report


def verdicts(results):
    """Each target with the figure this run measured: `[(name, figure, bound, met)]`."""
    p = results["phases"]
    found = {}
    if "overhead" in p:
        found["overhead p50"] = p["overhead"]["overhead_ms"]["p50"]
        found["overhead p95"] = p["overhead"]["overhead_ms"]["p95"]
    if "streaming" in p:
        found["section lag after its floor (p95)"] = p["streaming"]["section_lag_after_floor_ms"]["p95"]
        found["headers (p50)"] = p["streaming"]["headers_ms"]["p50"]
    if "throughput" in p:
        found["gateway CPU per panel (8 clients)"] = p["throughput"]["8"]["gateway_cpu_ms_per_panel"]
        found["panels/s at 32 clients"] = p["throughput"]["32"]["panels_per_s"]
        t64 = p["throughput"]["64"]
        found["errors + dropped at 64 clients"] = t64["error_count"] + t64["dropped"]
    if "workers" in p:
        found[f"panels/s at 32 clients, {WORKERS} workers"] = p["workers"]["32"]["panels_per_s"]
        w64 = p["workers"]["64"]
        found[f"errors + dropped at 64 clients, {WORKERS} workers"] = w64["error_count"] + w64["dropped"]
    if "route" in p:
        found["route turn overhead p50"] = p["route"]["turns"]["turn_overhead_ms"]["p50"]
        found["route first token after the upstream's (p50)"] = p["route"]["turns"]["first_token_after_upstream_ms"][
            "p50"]
        r32 = p["route"][str(ROUTE_CLIENTS)]
        found[f"route errors + dropped at {ROUTE_CLIENTS} clients"] = r32["error_count"] + r32["dropped"]
    if "log_size" in p:
        empty = p["log_size"]["0"]["overhead"]["overhead_ms"]["p50"]
        big = p["log_size"]["100000"]
        found["100k-line log: overhead p50 / empty log's"] = round(big["overhead"]["overhead_ms"]["p50"]
                                                                   / max(empty, 0.5), 2)
        found["100k-line log: peak RSS at 8 clients"] = big["throughput_8"]["gateway_peak_rss_mb"]
    if "backends" in p:
        for name, label in (("llm-inprocess", "llm in-process"), ("llm-subprocess", "llm subprocess")):
            if name in p["backends"]:
                found[f"{label} overhead p50"] = p["backends"][name]["overhead_ms"]["p50"]
    rows = []
    for name, (op, bound, unit) in TARGETS.items():
        if name in found:
            value = found[name]
            met = value <= bound if op == "<=" else value >= bound
            rows.append((name, value, f"{op} {bound:g}{unit}", met))
    return rows


def render(results):
    p = results["phases"]
    lines = [f"Gateway benchmark {results['started']}  ({'quick' if results['quick'] else 'full'}; "
             f"{results['tokens_per_answer']} chunks per answer; {results['machine']['cpus']} CPUs, "
             f"loadavg at start {results['machine']['loadavg_start']})"]

    def cpu(row):
        return (f"gw {row['gateway_cpu_ms_per_panel']:.1f} ms/panel ({row['gateway_cores']:.2f} cores)  "
                f"up {row['upstream_cpu_ms_per_panel']:.1f} ms/panel ({row['upstream_cores']:.2f} cores)  "
                f"loadgen {row['loadgen_cores']:.2f}  others {row['others_cores']:.2f} cores  "
                f"RSS peak {row['gateway_peak_rss_mb']:.0f} MB  "
                f"load {row['loadavg_end'][0]:.2f}")

    def ms(s):
        return f"p50 {s['p50']:7.1f}  p95 {s['p95']:7.1f}  (n {s['n']})"

    if "overhead" in p:
        o = p["overhead"]
        lines += ["", "Overhead (sequential, non-streamed; ms)",
                  f"  panel latency       {ms(o['latency_ms'])}",
                  f"  floor (paired)      {ms(o['floor_ms'])}   floor over configured latency p50 "
                  f"{o['floor_over_configured_ms']['p50']:.1f}",
                  f"  overhead            {ms(o['overhead_ms'])}   failed {o['failed_panels']}",
                  f"  rig noise           {ms(o['rig_noise_ms'])}   (the floor again minus the floor: no gateway)",
                  f"  {cpu(o)}"]
    if "streaming" in p:
        s = p["streaming"]
        lines += ["", "Streaming (ms from the send)",
                  f"  headers             {ms(s['headers_ms'])}",
                  f"  first section       {ms(s['first_section_ms'])}",
                  f"  section lag/floor   {ms(s['section_lag_after_floor_ms'])}",
                  f"  [DONE]              {ms(s['done_ms'])}",
                  f"  [DONE] after floor  {ms(s['done_after_slowest_floor_ms'])}   failed {s['failed_panels']}"]
    if "throughput" in p:
        lines += ["", "Throughput (non-streamed panels, new connection each)"]
        for clients, t in p["throughput"].items():
            lines.append(f"  {int(clients):>2} clients  {t['panels_per_s']:6.1f}/s  latency {ms(t['latency_ms'])}  "
                         f"errors {t['error_count']} dropped {t['dropped']} {t['errors'] or ''}")
            lines.append(f"              {cpu(t)}")
    if "log_size" in p:
        lines += ["", "Offload log size (fresh gateway each)"]
        for size, entry in p["log_size"].items():
            o, t = entry["overhead"], entry["throughput_8"]
            lines.append(f"  {int(size):>7,} lines  start {entry['start_s']:.1f}s  "
                         f"warm-up {entry['first_panels_s']:.1f}s"
                         f"  overhead p50 {o['overhead_ms']['p50']:.1f} p95 {o['overhead_ms']['p95']:.1f} ms  "
                         f"8 clients {t['panels_per_s']:.1f}/s p50 {t['latency_ms']['p50']:.0f} ms  "
                         f"RSS peak {t['gateway_peak_rss_mb']:.0f} MB  gw {t['gateway_cpu_ms_per_panel']:.1f} ms/panel"
                         f"  errors {t['error_count']} dropped {t['dropped']}")
    if "workers" in p:
        lines += ["", f"Throughput with gateway.py --workers {p['workers']['processes']} "
                      "(CPU and RSS of every process)"]
        for clients in WORKER_CLIENT_LEVELS:
            t = p["workers"][str(clients)]
            lines.append(f"  {clients:>2} clients  {t['panels_per_s']:6.1f}/s  latency {ms(t['latency_ms'])}  "
                         f"errors {t['error_count']} dropped {t['dropped']} {t['errors'] or ''}")
            lines.append(f"              {cpu(t)}  machine {t['machine_busy_cores']:.2f} cores busy")
    if "route" in p:
        r, t = p["route"]["turns"], p["route"][str(ROUTE_CLIENTS)]
        lines += ["", "Route mode (streamed turns; ms)",
                  f"  turn over upstream  {ms(r['turn_overhead_ms'])}   failed {r['failed_turns']}",
                  f"  first token over up {ms(r['first_token_after_upstream_ms'])}",
                  f"  rig noise           {ms(r['rig_noise_ms'])}   (the member's stream again: no gateway)",
                  f"  {cpu(r)}",
                  f"  {ROUTE_CLIENTS} clients  {t['panels_per_s']:6.1f} turns/s  latency {ms(t['latency_ms'])}  "
                  f"errors {t['error_count']} dropped {t['dropped']} {t['errors'] or ''}",
                  f"              {cpu(t)}"]
    if "backends" in p:
        lines += ["", "Backends (sequential overhead; ms)"]
        for name, b in p["backends"].items():
            b = p["overhead"] if b.get("same_as") else b
            lines.append(f"  {name:<15} overhead {ms(b['overhead_ms'])}  "
                         f"gw {b['gateway_cpu_ms_per_panel']:.1f} ms/panel"
                         f" (children {b['gateway_children_cpu_s']:.1f} s)  RSS peak {b['gateway_peak_rss_mb']:.0f} MB"
                         f"  failed {b['failed_panels']}")
    rows = verdicts(results)
    if rows:
        lines += ["", "Targets (issue 7)"]
        for name, value, bound, met in rows:
            lines.append(f"  {'met ' if met else 'MISS'}  {name:<44} {value:>9}  {bound}")
    lines.append(f"\nloadavg at end {loadavg()}")
    return "\n".join(lines)


# -------------------------------------------------------------------------------- profile


def collapsed(path):
    """py-spy's raw output: `{stack tuple: samples}`, the thread name dropped."""
    stacks = Counter()
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(stack.split(";")[1:])] += int(count)
    return stacks


def ranked(stacks, rate, panels, top=25):
    """Per function (name file:line stripped of the line): self and inclusive ms of CPU per panel."""
    own, inclusive = Counter(), Counter()
    for stack, count in stacks.items():
        names = [re.sub(r":\d+\)$", ")", frame) for frame in stack]
        if names:
            own[names[-1]] += count
        for name in set(names):
            inclusive[name] += count
    per = 1000 / rate / max(1, panels)
    return {"self": [(name, round(n * per, 2)) for name, n in own.most_common(top)],
            "inclusive": [(name, round(n * per, 2)) for name, n in inclusive.most_common(top)],
            "total_ms_per_panel": round(sum(stacks.values()) * per, 2)}


def attach(tool_argv, run, name):
    out = run / f"{name}.log"
    return subprocess.Popen(tool_argv, stdout=out.open("w"), stderr=subprocess.STDOUT), out


PROFILER = """
import cProfile, pstats, runpy, sys, threading
profiles = []
def begin(frame, event, arg):
    p = cProfile.Profile()
    profiles.append(p)
    p.enable()
threading.setprofile(begin)
main = cProfile.Profile()
profiles.append(main)
sys.argv = [sys.argv[1]] + sys.argv[3:]
main.enable()
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    main.disable()
    stats = pstats.Stats(main)
    for p in profiles[1:]:
        try:
            stats.add(p)
        except Exception:
            pass
    stats.dump_stats(OUT)
"""


def call_counts(stats_path, panels):
    """Calls per panel of what reads files, parses, locks and writes: from the cProfile dump."""
    import pstats
    stats = pstats.Stats(str(stats_path)).stats
    wanted = {
        "open()": ("~", 0, "<built-in method io.open>"),
        "os.stat": ("~", 0, "<built-in method posix.stat>"),
        "os.open": ("~", 0, "<built-in method posix.open>"),
        "fcntl.flock": ("~", 0, "<built-in method fcntl.flock>"),
        "os.scandir": ("~", 0, "<built-in method posix.scandir>"),
        "json.loads": None, "json.load": None, "json.dumps": None,
    }
    found = {}
    for (file, line, name), row in stats.items():
        calls = row[1]
        for label, key in wanted.items():
            if key == (file, line, name) or (key is None and file.endswith(os.path.join("json", "__init__.py"))
                                             and name == label.split(".")[1]):
                found[label] = found.get(label, 0) + calls
    ours = Counter()
    for (file, line, name), row in stats.items():
        if str(CODE) in file and "/benchmarks/" not in file:
            ours[f"{Path(file).relative_to(CODE)}:{name}"] += row[1]
    return {"calls_per_panel": {k: round(v / panels, 1) for k, v in found.items()},
            "our_functions_by_calls_per_panel": [(name, round(calls / panels, 1))
                                                 for name, calls in ours.most_common(30)]}


def strace_files(path, panels):
    """File syscalls per panel by path, from `strace -f -e trace=%file,%desc -o`."""
    per_path = Counter()
    calls = Counter()
    for line in Path(path).read_text(errors="replace").splitlines():
        found = re.search(r"\b(openat|open|stat|newfstatat|statx|lstat|access|unlink|rename|mkdir|flock)\((.*)", line)
        if not found:
            continue
        call, rest = found.groups()
        calls[call] += 1
        named = re.search(r'"([^"]+)"', rest)
        if named:
            per_path[(call, re.sub(r"/tmp/bw-bench-[^/]+/[^/]+/", "<run>/", named.group(1)))] += 1
    return {"calls_per_panel": {k: round(v / panels, 1) for k, v in calls.most_common()},
            "by_path_per_panel": [(f"{call} {p}", round(n / panels, 1)) for (call, p), n in per_path.most_common(40)]}


def profile(bench, say):
    """Where the gateway's time goes: py-spy samples (sequential and 8 clients), strace's syscall summary
    and file accesses, and cProfile call counts (a second gateway run under cProfile).

    py-spy samples with `--gil` (the thread holding the GIL, i.e. Python running): its idle detection
    counts threads blocked in a socket read as busy in this container, which drowns the profile.
    """
    out = {}
    panels = bench.panels
    bench.fresh_gateway("profile")
    spy = shutil.which("py-spy")
    if spy:
        for label, work, count in (("sequential", lambda: sequential(bench.port, bench.direct, panels), panels),
                                   ("8 clients", lambda: load(bench.port, 8, bench.seconds), None)):
            say(f"py-spy: {label}")
            raw = bench.run / f"spy-{label.replace(' ', '')}.txt"
            proc, log = attach([spy, "record", "--pid", str(bench.gateway.pid), "--rate", "500", "--format", "raw",
                                "--gil", "--nonblocking", "-o", str(raw)], bench.run, f"spy-{label}")
            time.sleep(1.0)  # py-spy attaches
            result = work()
            stop(proc, 30)
            done = count or result["panels"]
            out[f"py-spy {label}"] = ranked(collapsed(raw), 500, done) if raw.exists() else {"error": log.read_text()}
    if shutil.which("strace"):
        say("strace: syscall summary and file accesses")
        summary = bench.run / "strace-c.txt"
        proc, _ = attach(["strace", "-c", "-f", "-p", str(bench.gateway.pid), "-o", str(summary)], bench.run, "st-c")
        time.sleep(0.5)
        sequential(bench.port, bench.direct, panels)
        stop(proc)
        out["strace -c"] = summary.read_text(errors="replace").splitlines()[:40] if summary.exists() else []
        trace = bench.run / "strace-files.txt"
        proc, _ = attach(["strace", "-f", "-e", "trace=%file,flock", "-p", str(bench.gateway.pid), "-o", str(trace)],
                         bench.run, "st-f")
        time.sleep(0.5)
        sequential(bench.port, bench.direct, panels)
        stop(proc)
        out["strace files"] = strace_files(trace, panels) if trace.exists() else {}
    say("cProfile: call counts")
    stats_path = bench.run / "gateway.pstats"
    wrapper = PROFILER.replace("OUT", repr(str(stats_path)))
    bench.fresh_gateway("cprofile", command=[sys.executable, "-c", wrapper, str(CODE / "gateway.py"), "x",
                                             "--port", "0"])
    sequential(bench.port, bench.direct, panels)
    stop(bench.gateway)
    bench.gateway = None
    out["cProfile"] = call_counts(stats_path, panels + 3) if stats_path.exists() else {}
    return out


INSTRUCTION_RUNS = (5, 25)  # panels per run; the difference over the difference is the cost of one panel
START_RUNS = 10  # starts per checkout, alternating (after one that writes the bytecode caches)


def instructions(bench, say, checkouts):
    """Instructions per panel of each checkout's `gateway.py` under callgrind, all driven by this upstream.

    Two runs per checkout (INSTRUCTION_RUNS panels after the same warm-up) cancel the start and the warm-up
    out. Threads run one at a time under valgrind, so the machine's load does not move the count; how a seat's
    chunks fall into reads still does, by a few percent from run to run: compare checkouts of one run.
    """
    if not shutil.which("valgrind"):
        raise SystemExit("--instructions needs valgrind (Debian's valgrind package)")
    found = {}
    for checkout in checkouts:
        totals = {}
        for panels in INSTRUCTION_RUNS:
            say(f"callgrind: {checkout}, {panels} panels")
            out = bench.run / f"callgrind-{len(found)}-{panels}.out"
            bench.fresh_gateway(f"cg-{len(found)}-{panels}", start_timeout=300, command=[
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                sys.executable, str(Path(checkout) / "gateway.py"), "--port", "0"])
            sequential(bench.port, bench.direct, panels)
            stop(bench.gateway, 300)  # callgrind writes its counts on the way out
            bench.gateway = None
            totals[panels] = sum(int(m.group(1)) for f in bench.run.glob(f"{out.name}*")
                                 for m in [re.search(r"^summary:\s+(\d+)", f.read_text(errors="replace"), re.M)]
                                 if m)
        few, many = INSTRUCTION_RUNS
        found[str(checkout)] = {"instructions_per_panel_M": round((totals[many] - totals[few]) / (many - few) / 1e6,
                                                                  2), "totals": totals}
    return found


def start_times(bench, say, checkouts):
    """Milliseconds from starting each checkout's `gateway.py --port 0` (the bench's data folder, bytecode caches
    written by a first start) until `/health` answers, START_RUNS times each, the checkouts alternating."""
    data = make_data(bench.run / "start", bench.base)
    env = clean_env(BENCHWARMERS_HOME=str(data), LLM_USER_PATH=str(data.parent / "llm"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's `python gateway.py` writes them; the first start below does
    times = {str(checkout): [] for checkout in checkouts}
    for run in range(START_RUNS + 1):
        for checkout in checkouts:
            began = time.perf_counter()
            proc = subprocess.Popen([sys.executable, str(Path(checkout) / "gateway.py"), "--port", "0"], cwd=checkout,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
            port = int(re.search(r":(\d+)/v1", proc.stdout.readline()).group(1))
            while True:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    conn.request("GET", "/health")
                    conn.getresponse().read()
                    conn.close()
                    break
                except ConnectionError:
                    time.sleep(0.001)
            if run:  # the first start of each writes its bytecode caches
                times[str(checkout)].append(round((time.perf_counter() - began) * 1000, 1))
            stop(proc)
            proc.stdout.close()
        say(f"start: round {run} of {START_RUNS}")
    return {k: {"median_ms": statistics.median(v), "min_ms": min(v), "max_ms": max(v), "runs_ms": v}
            for k, v in times.items()}


def render_profile(found):
    lines = []
    for name, value in found.items():
        lines.append(f"\n== {name}")
        if isinstance(value, dict) and "self" in value:
            lines.append(f"   {value['total_ms_per_panel']} ms/panel sampled holding the GIL (Python CPU; time in the"
                         " kernel with the GIL released is not in it)")
            for part in ("inclusive", "self"):
                lines.append(f"   -- {part} (ms per panel)")
                lines += [f"   {ms:8.2f}  {fn}" for fn, ms in value[part]]
        elif isinstance(value, list):
            lines += [f"   {line}" for line in value]
        elif isinstance(value, dict):
            for key, part in value.items():
                lines.append(f"   -- {key}")
                if isinstance(part, dict):
                    lines += [f"   {v:>8}  {k}" for k, v in part.items()]
                else:
                    lines += [f"   {row[1]:>8}  {row[0]}" for row in part]
    return "\n".join(lines)


# -------------------------------------------------------------------------------- main


def main(argv=None):
    parser = argparse.ArgumentParser(description="Benchmark the panel gateway against its floor (issue 7).")
    parser.add_argument("--quick", action="store_true", help="3 s phases and fewer panels (development)")
    parser.add_argument("--phases", default="overhead,streaming,throughput,logsize,backends,workers,route",
                        help="comma-separated subset of overhead,streaming,throughput,logsize,backends,workers,route")
    parser.add_argument("--profile", action="store_true", help="profile the gateway instead of benchmarking it")
    parser.add_argument("--instructions", action="store_true",
                        help="count the CPU instructions a panel costs under callgrind (needs valgrind)")
    parser.add_argument("--start", action="store_true",
                        help="time `python gateway.py` from its start until /health answers")
    parser.add_argument("--against", action="append", default=[], metavar="CHECKOUT",
                        help="with --instructions or --start, also measure another checkout's gateway.py (an A/B)")
    parser.add_argument("--tokens", type=int, default=TOKENS,
                        help=f"chunks each ~1,000-character answer streams in (default {TOKENS}; 1 isolates the "
                             "per-panel cost from the per-chunk cost)")
    parser.add_argument("--out", help="JSON file to write (default benchmarks/results/<kind>-<time>.json)")
    args = parser.parse_args(argv)
    phases = {p.strip() for p in args.phases.split(",") if p.strip()}
    MODELS.update(models(max(1, args.tokens)))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"), "quick": args.quick,
               "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                           "loadavg_start": loadavg()},
               "tokens_per_answer": args.tokens, "models": MODELS,
               "collection": {"members": list(MEMBERS), "explorers": 2},
               "targets": {k: f"{op} {bound:g}{unit}" for k, (op, bound, unit) in TARGETS.items()}, "phases": {}}
    began = time.monotonic()

    def say(text):
        print(f"[{time.monotonic() - began:6.1f}s load {loadavg()[0]:.2f}] {text}", file=sys.stderr, flush=True)

    bench = Bench(args.quick)
    try:
        if args.profile:
            results["profile"] = profile(bench, say)
            text = render_profile(results["profile"])
        elif args.instructions:
            results["instructions"] = instructions(bench, say, [CODE, *args.against])
            text = "\n".join(f"{v['instructions_per_panel_M']:8.2f} M instructions a panel  {k}"
                             for k, v in results["instructions"].items())
        elif args.start:
            results["start"] = start_times(bench, say, [CODE, *args.against])
            text = "\n".join(f"{v['median_ms']:8.1f} ms to the first answer (median; {v['min_ms']}-{v['max_ms']})  {k}"
                             for k, v in results["start"].items())
        else:
            run_phases(bench, phases, results, say)
            text = render(results)
    finally:
        bench.close()
    results["machine"]["loadavg_end"] = loadavg()
    results["seconds"] = round(time.monotonic() - began, 1)
    RESULTS.mkdir(exist_ok=True)
    kind = "profile" if args.profile else "instructions" if args.instructions else "start" if args.start else "gateway"
    target = Path(args.out) if args.out else RESULTS / f"{kind}-{stamp}{'-quick' if args.quick else ''}.json"
    target.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(text)
    print(f"\n{results['seconds']} s; written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
