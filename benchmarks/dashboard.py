"""Dashboard benchmark (issue 15): the first page load and the Gateway card's refresh cost.

Why: the Gateway card is polled every 3 s while shown, and the offload log it reads verdicts from grows
without end; the card must cost the same at 100,000 lines as at none (target: under 50 ms), and the page
must stay light (target: under 300 KB without images) since it is one document per load.

It makes a throwaway data folder on the local upstream, fills `metrics/offloads.jsonl` with `--lines`
offload lines (the last panels' seats among them, a fifth judged) and `runs/gateway/calls.jsonl` with
`--panels` panels, starts the dashboard (`python serve.py`) as its own process on 127.0.0.1, and measures:

  card    GET /api/gateway-card: the first call (it builds the offload index) and `--repeat` more, p50/p95
  page    GET /: bytes; then in headless Chromium (when Playwright and a system chromium are there): the
          requests the page makes, the bytes they bring, time to DOM interactive and to the first table drawn

    python benchmarks/dashboard.py                  100,000 offload lines, 2,000 panels
    python benchmarks/dashboard.py --lines 1000     a small log, for comparison

Figures print as a table and go to benchmarks/results/dashboard-<time>.json. Nothing leaves 127.0.0.1.
"""

import argparse
import datetime
import http.client
import json
import os
import random
import shutil
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchwarmers.core import fileio, paths
from benchwarmers.demo import demo
from benchwarmers.panel import offload

ROOT = Path(__file__).resolve().parent.parent

SEATS = ("member1", "member2", "explorer")
ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def fill(lines, panels, seed=15):
    """The two logs: `panels` panels in calls.jsonl whose seats are the newest offload lines."""
    rng = random.Random(seed)
    today = datetime.date.today().isoformat()
    calls = []
    for n in range(panels):
        panel = f"p20261203-{n:06d}-{rng.getrandbits(64):016x}"
        seats = [{"call": f"{panel}.{s}", "seat": s.rstrip("0123456789"), "alias": rng.choice(("alpha", "beta", "gamma")),
                  "status": rng.choices(("ok", "error", "empty"), (85, 10, 5))[0], "answer": "An answer. " * 40,
                  "error": "", "seconds": round(rng.uniform(0.3, 20), 1)} for s in SEATS]
        calls.append({"panel": panel, "at": f"2026-12-03T10:{n % 60:02d}:00+00:00", "model": "bench/core",
                      "shape": "review", "shape_by": "picker", "key": "local", "system": "",
                      "prompt": "Review this function for an off-by-one. " * 20, "seats": seats})
    offloads = []
    newest = [s["call"] for c in calls[-60:] for s in c["seats"]]
    for n in range(lines - len(newest)):
        offloads.append({"date": today, "model": rng.choice(("alpha", "beta", "gamma")),
                         "task": "older work (bench/core, review)",
                         "useful": None, "note": "member; ok in 2.0s", "call": f"p0-{n:06d}.member1", "status": "ok",
                         "seconds": 2.0})
    for call in newest:
        offloads.append({"date": today, "model": "alpha", "task": "recent (bench/core, review)", "useful": None,
                         "note": "member; ok in 1.0s", "call": call, "status": "ok", "seconds": 1.0})
        if rng.random() < 0.2:
            offloads.append({**offloads[-1], "useful": True, "note": "checked"})
    write_lines(offload.log_path(), offloads)
    write_lines(paths.file("runs", "gateway", "calls.jsonl"), calls)


def write_lines(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)


def start(folder):
    """`python serve.py` on a free port (the script's folder holds another gateway.py, so not imported here)."""
    env = {**os.environ, "BENCHWARMERS_HOME": folder, "BENCH_PORT": "0", "BENCHWARMERS_ADMIN_TOKEN": ""}
    proc = subprocess.Popen([sys.executable, str(ROOT / "serve.py")], stdout=subprocess.PIPE, text=True, env=env)
    banner = proc.stdout.readline()
    found = re.search(r":(\d+)", banner)
    if not found:
        proc.kill()
        raise SystemExit(f"serve.py did not start: {banner!r}")
    return proc, int(found.group(1))


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    took = time.perf_counter() - started
    conn.close()
    assert resp.status == 200, (path, resp.status)
    return took, body


def card(port, repeat):
    first, body = get(port, "/api/gateway-card")
    times = [get(port, "/api/gateway-card")[0] for _ in range(repeat)]
    times.sort()
    return {"first_ms": round(first * 1000, 1), "p50_ms": round(statistics.median(times) * 1000, 2),
            "p95_ms": round(times[int(len(times) * 0.95) - 1] * 1000, 2), "bytes": len(body),
            "panels": len(json.loads(body)["panels"])}


def page(port):
    took, body = get(port, "/")
    found = {"bytes": len(body), "server_ms": round(took * 1000, 1)}
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {**found, "browser": "playwright not installed"}
    if not chromium:
        return {**found, "browser": "no chromium on PATH"}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        tab = browser.new_page(viewport={"width": 1440, "height": 900})
        seen = []
        tab.on("requestfinished", lambda r: seen.append(r))
        tab.goto(f"http://127.0.0.1:{port}/")
        tab.wait_for_selector("#tab-glance table tbody tr")
        drawn = tab.evaluate("performance.now()")
        timing = tab.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
        transferred = sum(r.sizes()["responseBodySize"] for r in seen)
        browser.close()
    nav = json.loads(timing)
    return {**found, "requests": len(seen), "paths": [r.url.split(str(port), 1)[-1] for r in seen],
            "transferred_bytes": transferred,
            "dom_interactive_ms": round(nav["domInteractive"], 1), "load_ms": round(nav["loadEventEnd"], 1),
            "first_table_ms": round(drawn, 1), "browser": chromium}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000, help="offload log lines (default 100,000)")
    parser.add_argument("--panels", type=int, default=2_000, help="panels in calls.jsonl (default 2,000)")
    parser.add_argument("--repeat", type=int, default=50, help="card requests after the first (default 50)")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="benchwarmers-dashboard-bench-")
    os.environ["BENCHWARMERS_HOME"] = folder
    os.environ["BENCH_CLIENT"] = "builtin"
    paths.reload()
    up = demo.Upstream({"alpha": {"answer": "a"}, "beta": {"answer": "b"}, "gamma": {"answer": "c"}}).start()
    try:
        demo.register(up)
        demo.set_collection("core", ["alpha", "beta", "gamma"], description="three reviewers")
        fill(args.lines, args.panels)
        dashboard, port = start(folder)
        results = {"at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "lines": args.lines,
                   "panels": args.panels,
                   "offload_log_mb": round(offload.log_path().stat().st_size / 1e6, 1),
                   "loadavg": os.getloadavg()[0], "card": card(port, args.repeat), "page": page(port)}
        dashboard.terminate()
        dashboard.wait(15)
    finally:
        up.stop()
        shutil.rmtree(folder, ignore_errors=True)
    out = ROOT / "benchmarks" / "results" / f"dashboard-{datetime.datetime.now():%Y%m%d-%H%M%S}.json"
    fileio.write_atomic(out, json.dumps(results, indent=2) + "\n")
    c, p = results["card"], results["page"]
    print(f"offload log: {args.lines:,} lines ({results['offload_log_mb']} MB), calls log: {args.panels:,} panels")
    print(f"card: first {c['first_ms']} ms (right after start, the warm-up still building the offload index), "
          f"then p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms, {c['bytes']:,} bytes for {c['panels']} panels")
    print(f"page: {p['bytes']:,} bytes from the server in {p['server_ms']} ms")
    if "requests" in p:
        print(f"browser: {p['requests']} request(s), {p['transferred_bytes']:,} bytes, DOM interactive "
              f"{p['dom_interactive_ms']} ms, first table drawn {p['first_table_ms']} ms, load {p['load_ms']} ms")
    else:
        print(f"browser: not measured ({p['browser']})")
    print(f"written: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
