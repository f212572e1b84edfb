"""Replicas benchmark (issue 34, docs/replicas.md): three gateway processes behind nginx on one Postgres.

It reuses the panel benchmark's rig (`benchmarks/gateway.py`: the local upstream, the bench's collection, the
load driver and the paired floors) and measures:

  single      one gateway process on the data folder's JSONL files: panels/s at 32 and 64 clients.
  replicas    three gateway processes, each with its own data folder, on one throwaway Postgres (Debian's
              server, `tests/pgserver.py`), behind nginx (round robin, the recipe of docs/replicas.md):
              panels/s at 32 and 64 clients through nginx.
  store cost  what the store adds to a panel: the store's own work for one panel (three seats' ledger and
              offload lines, the calls log line, the router's four reads) timed in this process against the same
              server, every configuration document read once on the folder and on Postgres, and the sequential
              overhead over the floor of one replica on Postgres against one on the folder; and what a panel
              waits for, its three seats writing their lines from their own threads at once, then the calls-log
              line and the router's reads, on Postgres and on the data folder's files: what Postgres adds is
              the difference.
  kill        64 clients through nginx (each panel followed by a verdict on its first seat), a replica killed
              with SIGKILL half way: every panel answered 200 has all its seat lines in the store, every
              verdict answered 200 is there, the survivors keep answering, and a gateway key's per-minute cap
              still holds across the two survivors.

    python benchmarks/replicas.py            about two minutes
    python benchmarks/replicas.py --quick    3 s phases

Results print as a table and go to benchmarks/results/replicas-<time>.json. Needs Linux, Debian's `postgresql`
and `nginx` packages (`.ci/run` installs them), and runs as root or as a user who may run both.
"""

import argparse
import concurrent.futures
import contextlib
import datetime
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import gateway as rig

from benchwarmers.calling import ledger
from benchwarmers.core import fileio, paths
from benchwarmers.models import registry
from benchwarmers.panel import collections, offload
from benchwarmers.server import gatekeys
from benchwarmers.store import store

REPLICAS = 3
CLIENT_LEVELS = (32, 64)
CAP = 20  # the capped key's requests a minute
NGINX = "/usr/sbin/nginx"


def load_pgserver():
    """tests/pgserver.py, the tests' throwaway cluster, by its file (the tests folder is no package)."""
    spec = importlib.util.spec_from_file_location("pgserver", rig.CODE / "tests" / "pgserver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_conf(run, listen, ports):
    """docs/replicas.md's recipe on 127.0.0.1 (no TLS, its files in the run folder; the Host passed on with its
    port, which the replicas allow through BENCH_ALLOWED_HOSTS)."""
    servers = "\n".join(f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;" for port in ports)
    temp = "\n".join(f"    {kind}_temp_path {run}/nginx-{kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                            "uwsgi", "scgi"))
    return f"""user root;
worker_processes 2;
daemon off;
pid {run}/nginx.pid;
error_log {run}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temp}
    upstream bench {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{listen};
        client_max_body_size 64m;
        location / {{
            proxy_pass http://bench;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_read_timeout 900s;
            proxy_next_upstream error;
        }}
    }}
}}
"""


def start_nginx(run, ports, listen):
    run.mkdir()
    conf = run / "nginx.conf"
    conf.write_text(nginx_conf(run, listen, ports), encoding="utf-8")
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(run)], stdout=subprocess.DEVNULL,
                            stderr=(run / "nginx.err").open("w"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", listen), timeout=1).close()
            return proc, listen
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {(run / 'nginx.err').read_text()}")
            time.sleep(0.05)
    raise RuntimeError("nginx did not start")


def replica_folder(run, name, base, configured):
    """A replica's own data folder. This process is on Postgres by now, so the configuration is in the store:
    the first replica's folder writes it there (and lifts the per-key panel and verdict caps out of the load's
    way); a `configured` one only gets llm's copy of the registrations, from the store."""
    if not configured:
        data = rig.make_data(run / name, base)
        fileio.update(collections.settings_path(), lambda found: found.update(
            {"max_panels_per_key": 1000, "verdicts_per_key_day": 0}))
        return data
    data = rig.use_folder(run / name)
    registry.sync_to_llm()
    return data


def config_reads(url, rounds):
    """Every configuration document read once (more than a panel's plan reads), in microseconds a round: on the
    folder, then on Postgres, where a read is answered from this process's cache while nothing changed."""
    found = {}
    for kind in ("folder", "postgres"):
        os.environ.pop("BENCH_DATABASE_URL", None)
        os.environ.update({"BENCH_DATABASE_URL": url} if kind == "postgres" else {})
        store.reset()
        shared = store.current()
        while not getattr(shared, "listening", True):
            time.sleep(0.05)
        where = [paths.file(*place) for place in store.CONFIG]
        for path in where:
            fileio.read_json(path)
        began = time.perf_counter()
        for _ in range(rounds):
            for path in where:
                fileio.read_json(path)
        found[kind] = round((time.perf_counter() - began) / rounds * 1e6, 1)
    found["documents"] = len(store.CONFIG)
    return found


def store_work_per_panel(url, rounds):
    """The store's own work for one panel, in this process on `url`: three seats' ledger and offload lines, the
    calls-log line and the router's four reads, median and p95 in ms. Each seat's two lines go in one append, as a
    panel writes them (`paired`); alternating with it, the same work with them as two appends (`apart`, as a panel
    wrote them before)."""
    os.environ["BENCH_DATABASE_URL"] = url
    store.reset()
    times = {"paired": [], "apart": []}
    for n in range(rounds):
        for way in ("paired", "apart") if n % 2 else ("apart", "paired"):
            times[way].append(one_panels_store_work(f"w{n}{way[0]}", way == "paired"))
    return {way: milliseconds(found) for way, found in times.items()}


def one_panels_store_work(panel, paired):
    """Seconds the store's work for one panel took (its ledger lines made beforehand, as the client makes them)."""
    calls = [f"{panel}.member{k}" for k in range(3)]
    made = [ledger_line() for _ in calls]
    began = time.perf_counter()
    for call, record in zip(calls, made):
        seat_lines(call, record, paired)
    calls_line(panel, calls)
    router_reads(calls)
    return time.perf_counter() - began


def store_wait_per_panel(url, rounds):
    """What a panel waits for the store when its three seats answer at once, each writing its ledger and offload
    lines from its own thread, then the calls-log line (on disk before the reply) and the router's four reads:
    median and p95 in ms, `paired` and `apart` alternating as for `store_work_per_panel`. With `url` None, the same on the data folder's files: what
    Postgres adds is the difference."""
    os.environ.pop("BENCH_DATABASE_URL", None)
    os.environ.update({"BENCH_DATABASE_URL": url} if url else {})
    store.reset()
    times = {"paired": [], "apart": []}
    with concurrent.futures.ThreadPoolExecutor(3) as seats:
        for n in range(rounds):
            for way in ("paired", "apart") if n % 2 else ("apart", "paired"):
                calls = [f"t{n}{way[0]}.member{k}" for k in range(3)]
                made = [ledger_line() for _ in calls]
                began = time.perf_counter()
                list(seats.map(seat_lines, calls, made, [way == "paired"] * 3))
                calls_line(f"t{n}{way[0]}", calls)
                router_reads(calls)
                times[way].append(time.perf_counter() - began)
    return {way: milliseconds(found) for way, found in times.items()}


def milliseconds(times):
    ordered = sorted(times)
    return {"p50": round(statistics.median(times) * 1000, 3), "p95": round(ordered[int(len(times) * 0.95)] * 1000, 3),
            "n": len(times)}


def ledger_line():
    return ledger.line(time.time(), "m-alpha", "local", "http://127.0.0.1/v1", "m-alpha", "ok", 1,
                       {"prompt_tokens": 40, "completion_tokens": 300}, 0.2, "gateway")


def seat_lines(call, record, paired):
    """A seat's two lines: its call's ledger line and its offload line, in one append when `paired`."""
    with ledger.Held() if paired else contextlib.nullcontext() as held:
        ledger.write(record)
        offload.add("m-alpha", "work (bench/panel, code)", None, "member; ok in 0.2s", call, status="ok",
                    seconds=0.2, collection="bench/panel", shape="code", write=held.write if paired else None)


def calls_line(panel, calls):
    """The panel's calls-log line."""
    store.current().append_log(store.CALLS, {"panel": panel, "seats": calls}, 0, 1)


def router_reads(calls):
    """The router's four reads (the next panel's plan)."""
    offload.last_used()
    offload.record("panel")
    offload.shape_record("code")
    offload.pending(calls)


class Killing:
    """The kill phase's clients: a panel, then a verdict on its first seat; every 200 remembered."""

    def __init__(self, port, key):
        self.port, self.key = port, key
        self.answered, self.verdicts = [], []
        self.after_kill = 0
        self.killed_at = None
        self.lock = threading.Lock()

    def ask(self, n):
        status, reply = rig.request(self.port, "POST", "/v1/chat/completions", rig.PANEL_BODY, key=self.key)
        if status != 200:
            return f"http {status}"
        seats = [s["call"] for s in reply["bench"]["seats"]]
        with self.lock:
            self.answered.append(seats)
            if self.killed_at is not None:
                self.after_kill += 1
        body = json.dumps({"call": seats[0], "useful": n % 2 == 0, "note": f"client {n}"}).encode()
        status, _ = rig.request(self.port, "POST", "/bench/verdict", body, key=self.key)
        if status != 200:
            return f"verdict http {status}"
        with self.lock:
            self.verdicts.append((seats[0], n % 2 == 0))
        return None


def kill_phase(run, base, url, seconds, say):
    """Three fresh replicas with keys required; SIGKILL one half way through 64 clients; then the checks."""
    os.environ["BENCH_DATABASE_URL"] = url
    store.reset()
    for log in store.current().logs():
        store.current().replace(log, [])
    folders = [replica_folder(run, f"kill-{n}", base, configured=True) for n in range(REPLICAS)]
    load_key = gatekeys.make("load")  # into the store: every replica knows both keys
    capped_key = gatekeys.make("capped", rpm=CAP)
    listen = free_port()
    env = {"BENCH_DATABASE_URL": url, "BENCHWARMERS_REQUIRE_KEYS": "1", "BENCH_ALLOWED_HOSTS": f"127.0.0.1:{listen}"}
    replicas = [rig.start_gateway(run, data, f"kill-{n}", **env) for n, data in enumerate(folders)]
    nginx, port = start_nginx(run / "kill-nginx", [p for _, p in replicas], listen)
    try:
        clients = Killing(port, load_key)
        victim = replicas[0][0]

        def kill_half_way():
            time.sleep(seconds / 2)
            victim.kill()
            with clients.lock:
                clients.killed_at = time.perf_counter()

        say(f"kill: 64 clients through nginx for {seconds:g} s, replica 0 killed with SIGKILL half way")
        killer = threading.Thread(target=kill_half_way)
        killer.start()
        driven = rig.drive(64, seconds, clients.ask)
        killer.join()
        victim.wait()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            capped = list(pool.map(lambda _: rig.request(port, "POST", "/bench/pending", b'{"calls": []}', key=capped_key)[0],
                                   range(2 * CAP)))
        lines = store.current().records(store.OFFLOADS)
        logged = {line.get("call") for line in lines}
        judged = {(line.get("call"), line.get("useful")) for line in lines if line.get("useful") is not None}
        seats = [call for panel in clients.answered for call in panel]
        return {
            "load": driven,
            "panels_answered": len(clients.answered), "panels_answered_after_kill": clients.after_kill,
            "seat_lines_missing": sum(1 for call in seats if call not in logged),
            "verdicts_answered_200": len(clients.verdicts),
            "verdicts_missing": sum(1 for verdict in clients.verdicts if verdict not in judged),
            "capped_key": {"cap": CAP, "asked": 2 * CAP, "admitted": capped.count(200),
                           "refused_429": capped.count(429), "other": len(capped) - capped.count(200)
                           - capped.count(429)},
        }
    finally:
        rig.stop(nginx)
        for proc, _ in replicas:
            rig.stop(proc)


def run(quick, say):
    seconds = 3.0 if quick else 10.0
    pgserver = load_pgserver()
    bench = rig.Bench(quick)
    results = {"started": datetime.datetime.now().isoformat(timespec="seconds"), "quick": quick,
               "machine": {"cpus": os.cpu_count(), "loadavg_start": rig.loadavg()}, "replicas": REPLICAS}
    try:
        with pgserver.Cluster() as cluster:
            say("single: one gateway process on the data folder")
            results["single"] = bench.fresh_gateway("single")
            results["single"]["overhead"] = bench.overhead()
            for clients in CLIENT_LEVELS:
                say(f"single: {clients} clients for {seconds:g} s")
                results["single"][str(clients)] = rig.load(bench.port, clients, seconds)
            rig.stop(bench.gateway)
            bench.gateway = None

            say("store cost: one replica on Postgres, sequential panels against their floors")
            results["store_cost"] = bench.fresh_gateway("one-on-postgres", BENCH_DATABASE_URL=cluster.url)
            results["store_cost"]["overhead"] = bench.overhead()
            results["store_cost"]["overhead_p50_over_folder_ms"] = round(
                results["store_cost"]["overhead"]["overhead_ms"]["p50"]
                - results["single"]["overhead"]["overhead_ms"]["p50"], 2)
            rig.stop(bench.gateway)
            bench.gateway = None
            say("store cost: every configuration document read once, on the folder and on Postgres")
            results["store_cost"]["config_reads_us"] = config_reads(cluster.url, 200 if quick else 2000)
            say("store cost: what a panel waits for on the data folder, its three seats answering at once")
            results["store_cost"]["folder_wait_ms"] = store_wait_per_panel(None, 300 if quick else 2000)
            say("store cost: the store's own work per panel, in this process")
            results["store_cost"]["store_work_ms"] = store_work_per_panel(cluster.url, 300 if quick else 2000)
            say("store cost: what a panel waits for, its three seats answering at once")
            results["store_cost"]["store_wait_ms"] = store_wait_per_panel(cluster.url, 300 if quick else 2000)
            results["store_cost"]["store_wait_over_folder_ms"] = round(
                results["store_cost"]["store_wait_ms"]["paired"]["p50"]
                - results["store_cost"]["folder_wait_ms"]["paired"]["p50"], 3)

            say(f"replicas: {REPLICAS} gateway processes on Postgres behind nginx")
            folders = [replica_folder(bench.run, f"replica-{n}", bench.base, configured=n > 0) for n in range(REPLICAS)]
            listen = free_port()
            replicas = [rig.start_gateway(bench.run, data, f"replica-{n}", BENCH_DATABASE_URL=cluster.url,
                                          BENCH_ALLOWED_HOSTS=f"127.0.0.1:{listen}") for n, data in enumerate(folders)]
            nginx, port = start_nginx(bench.run / "nginx", [p for _, p in replicas], listen)
            try:
                for _ in range(6):
                    rig.post(port, rig.PANEL_BODY)
                results["replicas_behind_nginx"] = {}
                for clients in CLIENT_LEVELS:
                    say(f"replicas: {clients} clients through nginx for {seconds:g} s")
                    results["replicas_behind_nginx"][str(clients)] = rig.load(port, clients, seconds)
            finally:
                rig.stop(nginx)
                for proc, _ in replicas:
                    rig.stop(proc)

            results["kill"] = kill_phase(bench.run, bench.base, cluster.url, seconds * 2, say)
            store.reset()
    finally:
        bench.close()
    results["machine"]["loadavg_end"] = rig.loadavg()
    return results


def render(results):
    single, many, cost, kill = (results["single"], results["replicas_behind_nginx"], results["store_cost"],
                                results["kill"])
    rows = [f"Replicas benchmark {results['started']} ({'quick' if results['quick'] else 'full'}; "
            f"{results['machine']['cpus']} CPUs, loadavg {results['machine']['loadavg_start']} -> "
            f"{results['machine']['loadavg_end']})"]
    for clients in CLIENT_LEVELS:
        one, three = single[str(clients)], many[str(clients)]
        rows.append(f"panels/s at {clients} clients: one process on JSONL {one['panels_per_s']} "
                    f"(p50 {one['latency_ms']['p50']} ms, errors {one['error_count']}, dropped {one['dropped']}); "
                    f"{results['replicas']} replicas on Postgres behind nginx {three['panels_per_s']} "
                    f"(p50 {three['latency_ms']['p50']} ms, errors {three['error_count']}, dropped {three['dropped']})")
    work = cost["store_work_ms"]
    rows.append(f"store work per panel (in process): p50 {work['paired']['p50']} ms, p95 {work['paired']['p95']} ms; "
                f"each seat's two lines as two appends: p50 {work['apart']['p50']} ms, "
                f"p95 {work['apart']['p95']} ms")
    wait = cost["store_wait_ms"]
    rows.append(f"what a panel waits for, its three seats answering at once: p50 {wait['paired']['p50']} ms, "
                f"p95 {wait['paired']['p95']} ms (target p50 <= 1 ms); each seat's two lines as two appends: "
                f"p50 {wait['apart']['p50']} ms, "
                f"p95 {wait['apart']['p95']} ms")
    rows.append(f"the same on the data folder: p50 {cost['folder_wait_ms']['paired']['p50']} ms; what Postgres adds "
                f"over it: {cost['store_wait_over_folder_ms']} ms")
    reads = cost["config_reads_us"]
    rows.append(f"the {reads['documents']} configuration documents read once: folder {reads['folder']} us, "
                f"Postgres {reads['postgres']} us (no server round trip while nothing changed)")
    rows.append(f"sequential overhead over the floor, p50: folder {single['overhead']['overhead_ms']['p50']} ms, "
                f"Postgres {cost['overhead']['overhead_ms']['p50']} ms "
                f"(difference {cost['overhead_p50_over_folder_ms']} ms)")
    rows.append(f"kill: {kill['panels_answered']} panels answered ({kill['panels_answered_after_kill']} after the "
                f"kill), seat lines missing {kill['seat_lines_missing']}; verdicts answered 200 "
                f"{kill['verdicts_answered_200']}, missing {kill['verdicts_missing']}; errors during the load "
                f"{kill['load']['errors']}")
    capped = kill["capped_key"]
    rows.append(f"capped key after the kill: {capped['asked']} asked, {capped['admitted']} admitted "
                f"(cap {capped['cap']}), {capped['refused_429']} refused 429, {capped['other']} other")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Three replicas on Postgres behind nginx (issue 34).")
    parser.add_argument("--quick", action="store_true", help="3 s phases (development)")
    parser.add_argument("--out", help="JSON file to write (default benchmarks/results/replicas-<time>.json)")
    args = parser.parse_args(argv)
    began = time.monotonic()

    def say(text):
        print(f"[{time.monotonic() - began:6.1f}s load {rig.loadavg()[0]:.2f}] {text}", file=sys.stderr, flush=True)

    results = run(args.quick, say)
    results["seconds"] = round(time.monotonic() - began, 1)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    rig.RESULTS.mkdir(exist_ok=True)
    target = Path(args.out) if args.out else rig.RESULTS / f"replicas-{stamp}{'-quick' if args.quick else ''}.json"
    target.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))
    print(f"\n{results['seconds']} s; written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
