"""The wheel is the whole product: what `python -m build` made, installed alone, does everything (issue 28 item 7).

    python .ci/wheel_smoke.py dist/        (.ci/run runs it on the wheel it built, before the test suite)

Each check prints a line as it starts; the first failure prints `FAIL: <why>` and exits 1. In order:
  1. dist/ holds one wheel and one sdist of the same version. The wheel's top level is `benchwarmers/` and
     `benchwarmers-<version>.dist-info/`, nothing else, and it carries every shipped file the checkout tracks
     under ui/, config/*.json and suite/starter/ (and no other config file).
  2. A fresh virtual environment (`python -m venv`, in a temporary folder) gets the wheel and the dependencies
     it declares, nothing more: no checkout, no test extras. Every product command below runs from that
     environment, in a temporary working folder, with a temporary HOME (so llm's folder and the per-user data
     folder are temporary too), no BENCHWARMERS_*/BENCH_* settings but the ones a step gives, and a PATH
     without the checkout's virtual environment, as after `pipx install`.
  3. `bench --version`; `bench init DIR --endpoint demo URL` against the demo upstream the wheel ships
     (`python -m benchwarmers.demo.demo --port 0`, which prints its base URL first); onboarding one of its
     models into DIR with `python -m benchwarmers.scripts.onboard NAME --skip-suite`; then every scheduled
     job of the installed job table (`admin.jobs.JOBS`), run once as the scheduler runs it (its interpreter,
     cwd the installed package) on DIR, each exiting 0 or with its documented nothing-to-do exit. DIR rather
     than `bench demo`'s folder: the demo's bench has no suite tasks, so the suite job would ask nothing,
     while DIR has the starter tasks the wheel carries. The catalog feeds point at the upstream too.
  4. `bench demo`: every dashboard tab in Chromium with no console error and no failed request; onboarding
     a model through the dashboard's queue (`bench onboard scout --quick --wait`, scout being the model the
     demo serves but leaves off its bench).
  5. `bench mcp` answers `initialize` and `tools/list` over stdio; `bench gateway` on the demo's data folder
     serves a panel (POST /v1/chat/completions, model bench/demo) whose reply has every seat, and the verdict
     command its footer prints records a verdict.
  6. The checkout's own tools (`scripts.check`, whose checks are tests/; `scripts.notice`, which writes the
     checkout's NOTICE) say they need a checkout instead of checking nothing or writing into the install.
     Nothing was written inside the installed package (compiled bytecode aside): the data lives elsewhere.

Why the browser is driven from this interpreter: Playwright is no dependency of the product, and the one
running this script (CI's test environment) has it; Chromium is Debian's `chromium`, as in tests/conftest.py.
This script imports nothing of `benchwarmers`: the product runs only inside the fresh environment.
"""

import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
SHIPPED = ("ui", "config", "suite/starter")  # the checkout's folders whose tracked files the wheel carries
CHROMIUM_ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
STEP_TIMEOUT = 120
# The job table's commands as the scheduler runs them, with what the smoke changes and why:
JOB_EXTRA = {"capabilities": ["--gap", "0"]}  # its 30 s courtesy pause between calls: half the smoke's time
# A job may end with the exit and message its contract gives for "nothing to do here" (SU-25: no :free model).
NOTHING_TO_DO = {"suite-free": (1, "no :free model is registered")}


class Failed(Exception):
    pass


def say(text):
    print(text, flush=True)


def check(condition, why):
    if not condition:
        raise Failed(why)


# -- 1. the artifacts --------------------------------------------------------------------------------------


def artifacts(dist):
    wheels, sdists = sorted(dist.glob("benchwarmers-*.whl")), sorted(dist.glob("benchwarmers-*.tar.gz"))
    check(len(wheels) == 1 and len(sdists) == 1, f"{dist} should hold one wheel and one sdist: {wheels + sdists}")
    version = wheels[0].name.split("-")[1]
    check(sdists[0].name == f"benchwarmers-{version}.tar.gz", f"the sdist {sdists[0].name} is not version {version}")
    with tarfile.open(sdists[0]) as sdist:
        check(f"benchwarmers-{version}/pyproject.toml" in sdist.getnames(), "the sdist has no pyproject.toml")
    return wheels[0], version


def tracked_shipped_files():
    """The checkout's tracked files that must ship: ui/**, config/*.json, suite/starter/** (a dot file such as
    ui/.keep only keeps a folder in git)."""
    listed = subprocess.run(["git", "ls-files", *SHIPPED], cwd=CHECKOUT, capture_output=True, text=True, check=True)
    files = {line for line in listed.stdout.splitlines() if line and not line.rsplit("/", 1)[-1].startswith(".")}
    return {f for f in files if not f.startswith("config/") or (f.count("/") == 1 and f.endswith(".json"))}


def wheel_contents(wheel, version):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    check(tops == {"benchwarmers", f"benchwarmers-{version}.dist-info"},
          f"the wheel's top level should be benchwarmers/ and its dist-info only: {sorted(tops)}")
    inside = {name.removeprefix("benchwarmers/") for name in names if name.startswith("benchwarmers/")}
    missing = sorted(tracked_shipped_files() - inside)
    check(not missing, f"shipped files missing from the wheel: {missing}")
    extra = sorted(n for n in inside if n.startswith("config/") and n not in tracked_shipped_files())
    check(not extra, f"config files in the wheel that the checkout does not ship: {extra}")
    return len(names)


# -- 2. the fresh environment ------------------------------------------------------------------------------


class Env:
    """The fresh virtual environment and the temporary folders the product runs in."""

    def __init__(self, root):
        self.root = root
        self.venv = root / "venv"
        self.work = root / "work"
        self.home = root / "home"
        self.tmp = root / "tmp"  # the demo's throwaway data folder lands here too
        for folder in (self.work, self.home, self.tmp):
            folder.mkdir()
        self.bin = self.venv / ("Scripts" if os.name == "nt" else "bin")
        self.python = str(self.bin / "python")
        self.bench = str(self.bin / "bench")
        self.processes = []

    def environ(self, **extra):
        """This machine's environment without the checkout's: no venv on PATH, no project settings."""
        active = os.environ.get("VIRTUAL_ENV")
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
                if p and not (active and Path(p).resolve().is_relative_to(Path(active).resolve()))]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("BENCHWARMERS_", "BENCH_", "LLM_", "PYTHON", "XDG_")) and k != "VIRTUAL_ENV"}
        env.update(PATH=os.pathsep.join(path), HOME=str(self.home), TMPDIR=str(self.tmp), PYTHONIOENCODING="utf-8",
                   **extra)
        return env

    def run(self, argv, timeout=STEP_TIMEOUT, stdin=None, cwd=None, **extra):
        try:
            return subprocess.run(argv, cwd=cwd or self.work, env=self.environ(**extra), capture_output=True,
                                  text=True, input=stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failed(f"{shlex.join(map(str, argv))} did not finish in {timeout} s")

    def start(self, argv, **extra):
        """A server in its own process group (so its children stop with it); its stdout lines on a queue."""
        process = subprocess.Popen(argv, cwd=self.work, env=self.environ(**extra), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                   start_new_session=True)
        process.lines = queue.Queue()
        process.said = []
        threading.Thread(target=lambda: [process.lines.put(line) for line in process.stdout], daemon=True).start()
        self.processes.append(process)
        return process

    def stop_all(self):
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def install(env, wheel):
    subprocess.run([sys.executable, "-m", "venv", str(env.venv)], check=True)
    done = env.run([env.python, "-m", "pip", "install", "--quiet", str(wheel)], timeout=600)
    check(done.returncode == 0, f"pip install of the wheel failed:\n{done.stdout}{done.stderr}")
    where = env.run([env.python, "-c", "from benchwarmers.core import paths; "
                     "print(paths.CODE); print(paths.IN_CHECKOUT)"])
    check(where.returncode == 0, f"the installed package does not import:\n{where.stderr}")
    code, in_checkout = where.stdout.split()
    check(Path(code).is_relative_to(env.venv) and in_checkout == "False",
          f"the installed package should find its shipped files inside the environment, not at {code}")
    return Path(code)


def package_files(code):
    return {p.relative_to(code) for p in code.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def said(process, pattern, timeout=60):
    """The first match of `pattern` in the server's output, waiting for it; fails with what it said."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = next((m for m in map(re.compile(pattern).search, process.said) if m), None)
        if found:
            return found
        try:
            process.said.append(process.lines.get(timeout=0.2))
        except queue.Empty:
            if process.poll() is not None and process.lines.empty():
                break
    raise Failed(f"{shlex.join(process.args)} never said /{pattern}/; it said:\n{''.join(process.said)}")


def http(method, url, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return reply.status, reply.read()


def succeeded(done, what):
    check(done.returncode == 0, f"{what} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


# -- 3. init, onboarding and the scheduled jobs from the command line --------------------------------------


def init_and_onboard(env, base):
    """`bench init` on the demo upstream, then a model onboarded from it: the bench's folder."""
    folder = env.root / "bench"
    say(f"- bench init {folder.name} --endpoint demo {base}")
    out = succeeded(env.run([env.bench, "init", str(folder), "--endpoint", "demo", base]), "bench init")
    check("Endpoint demo added" in out, f"bench init added no endpoint:\n{out}")
    check(f"Set BENCHWARMERS_HOME={folder}" in out, f"bench init should say how to use the folder:\n{out}")
    endpoints = json.loads((folder / "config" / "endpoints.json").read_text())
    check(endpoints["demo"]["base"] == base, f"endpoints.json does not point at the upstream: {endpoints}")
    check(any((folder / "suite" / "tasks").iterdir()), "bench init copied no starter task")
    say("- python -m benchwarmers.scripts.onboard terse --skip-suite")
    out = succeeded(env.run([env.python, "-m", "benchwarmers.scripts.onboard", "terse", "--skip-suite"],
                            BENCHWARMERS_HOME=str(folder)), "onboard")
    check("registered as terse" in out and "[5/5] suite skipped" in out, f"onboarding did not finish:\n{out}")
    return folder


def jobs(env, code, folder, upstream_base):
    """Every job of the installed table, as `admin.scheduler` runs it: its interpreter, cwd the package."""
    table = env.run([env.python, "-c", "import json; from benchwarmers.admin import jobs, scheduler; "
                     "from benchwarmers.core import paths; print(json.dumps({'python': paths.child_python(), "
                     "'jobs': {job: scheduler.command(job) for job in jobs.JOBS}}))"])
    check(table.returncode == 0, f"the job table does not load:\n{table.stderr}")
    found = json.loads(table.stdout)
    feeds = {name: upstream_base + "/models" for name in
             ("BENCH_OPENROUTER_MODELS_URL", "BENCH_MODELSDEV_URL", "BENCH_FREELLMAPI_URL")}  # nothing leaves
    for job, command in found["jobs"].items():
        argv = [found["python"], *command, *JOB_EXTRA.get(job, [])]
        started = time.monotonic()
        done = env.run(argv, cwd=code, BENCHWARMERS_HOME=str(folder), **feeds)
        expected = NOTHING_TO_DO.get(job)
        fine = done.returncode == 0 or (expected and done.returncode == expected[0]
                                        and expected[1] in done.stdout + done.stderr)
        check(fine, f"job {job} ({shlex.join(command)}) exited {done.returncode}:\n{done.stdout}{done.stderr}")
        last = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
        say(f"  {job}: exit {done.returncode} in {time.monotonic() - started:.1f} s  ({last[0][:90]})")


def stop(process):
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=15)


# -- 4. the demo: every page, onboarding through the dashboard ---------------------------------------------


def pages(url):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise Failed("playwright is not installed here (pip install -e '.[test]')")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    check(chromium, "no chromium on PATH (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(15_000)
            problems = []
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
            first = page.goto(url + "/")
            check(first.status == 200, f"GET / answered {first.status}")
            tabs = page.eval_on_selector_all("[role=tab][data-tab]", "tabs => tabs.map(t => t.dataset.tab)")
            check(tabs, "the dashboard shows no tabs")
            for tab in tabs:
                page.click(f"[role=tab][data-tab={tab}]")
                page.wait_for_selector(f"#tab-{tab}:not([hidden]) .card")
            page.wait_for_load_state("networkidle")
            check(not problems, "the dashboard reported problems:\n" + "\n".join(problems))
        finally:
            browser.close()
    return tabs


def demo(env):
    server = env.start([env.bench, "demo", "--port", "0"])
    port = said(server, r"Benchwarmers on http://localhost:(\d+)").group(1)
    home = Path(said(server, r"export BENCHWARMERS_HOME=(\S+)").group(1))
    url = f"http://127.0.0.1:{port}"
    say(f"- bench demo on {url}, data folder {home}")
    say("- every dashboard tab in Chromium")
    say(f"  {', '.join(pages(url))}: no console error, no failed request")
    say("- onboarding through the dashboard: bench onboard scout --quick --wait")
    out = succeeded(env.run([env.bench, "onboard", "scout", "--quick", "--wait", "--url", url]), "bench onboard")
    check(re.search(r"^scout\s+demo\s+done\b", out, re.M), f"the dashboard's onboarding did not finish:\n{out}")
    return home


# -- 5. the MCP server and the gateway; 6. the checkout's own tools ----------------------------------------


def mcp(env):
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "wheel-smoke", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    done = env.run([env.bench, "mcp"], stdin="".join(json.dumps(m) + "\n" for m in messages), timeout=30)
    check(done.returncode == 0, f"bench mcp exited {done.returncode}:\n{done.stderr}")
    replies = {r.get("id"): r for r in map(json.loads, done.stdout.splitlines())}
    info = replies.get(1, {}).get("result", {}).get("serverInfo", {})
    check(info.get("name") == "benchwarmers", f"initialize answered {replies.get(1)}")
    tools = [t["name"] for t in replies.get(2, {}).get("result", {}).get("tools", [])]
    check(tools, f"tools/list answered {replies.get(2)}")
    return tools


def gateway(env, home):
    server = env.start([env.bench, "gateway", "--port", "0"], BENCHWARMERS_HOME=str(home))
    base = said(server, r"bench gateway on (http://\S+/v1)").group(1)
    say(f"- bench gateway on {base}: a panel of bench/demo")
    status, body = http("POST", base + "/chat/completions",
                        {"model": "bench/demo", "messages": [{"role": "user", "content": "Review: x = x++"}]})
    reply = json.loads(body)
    seats = reply.get("bench", {}).get("seats", [])
    members = json.loads((home / "config" / "collections.json").read_text())["demo"]["members"]
    content = reply["choices"][0]["message"]["content"]
    check(status == 200 and seats, f"the panel answered {status}: {body[:500]!r}")
    check([s["alias"] for s in seats if s["seat"] == "member"] == members, f"the members' seats are not {members}")
    check(all(s["status"] == "ok" and f"`{s['call']}`" in content for s in seats),
          f"a seat failed or is missing from the reply: {[(s['alias'], s['status']) for s in seats]}")
    say(f"  {len(seats)} seats: {', '.join(s['seat'] + ' ' + s['alias'] for s in seats)}")
    verdict(env, home, content, seats[0]["call"])
    stop(server)


def verdict(env, home, content, call):
    """The footer's command, as printed, with the first seat's call id: a person pasting it records a verdict."""
    command = re.search(r"run `([^`]*verdict <call id>[^`]*)`", content)
    check(command, f"the reply's footer names no verdict command:\n{content[-400:]}")
    words = shlex.split(command.group(1).replace("<call id>", call).replace("--useful|--not-useful", "--useful")
                        .replace('"..."', '"from the wheel smoke"'))
    check(words[0] == "python", f"the footer's command should start with python: {command.group(1)}")
    say(f"- the footer's verdict command: {shlex.join(words)}")
    out = succeeded(env.run([env.python, *words[1:]], BENCHWARMERS_HOME=str(home)), "the footer's verdict command")
    say(f"  {out.strip()[:100]}")


def checkout_tools(env):
    for module, args in (("scripts.check", []), ("scripts.notice", [])):
        done = env.run([env.python, "-m", f"benchwarmers.{module}", *args])
        check(done.returncode == 1 and "checkout" in done.stderr,
              f"{module} from an install should say it needs a checkout; exit {done.returncode}:\n"
              f"{done.stdout}{done.stderr}")
        say(f"- {module}: {done.stderr.strip()}")


# -- the whole ---------------------------------------------------------------------------------------------


def smoke(dist):
    say(f"- the artifacts in {dist}")
    wheel, version = artifacts(dist)
    say(f"  {wheel.name}: {wheel_contents(wheel, version)} entries; top level benchwarmers/ and its dist-info only")
    with tempfile.TemporaryDirectory(prefix="benchwarmers-wheel-") as tmp:
        env = Env(Path(tmp).resolve())
        try:
            say("- a fresh virtual environment with the wheel alone")
            code = install(env, wheel)
            before = package_files(code)
            out = succeeded(env.run([env.bench, "--version"]), "bench --version").strip()
            check(out == version, f"bench --version says {out}, the wheel is {version}")
            upstream = env.start([env.python, "-m", "benchwarmers.demo.demo", "--port", "0"])
            base = said(upstream, r"^(http://127\.0\.0\.1:\d+/v1)$").group(1)
            folder = init_and_onboard(env, base)
            say(f"- every scheduled job, once, against {folder.name} (the demo upstream's models, the starter tasks)")
            jobs(env, code, folder, base)
            check(any(folder.glob("suite/tasks/*/output/*.md")), "the suite job saved no answer to a starter task")
            stop(upstream)
            home = demo(env)
            say(f"- bench mcp: {', '.join(mcp(env))}")
            gateway(env, home)
            checkout_tools(env)
            written = sorted(map(str, package_files(code) - before))
            check(not written, f"files were written inside the installed package: {written}")
            say("- nothing was written inside the installed package")
        finally:
            env.stop_all()


def main(argv):
    if len(argv) != 1:
        print("usage: python .ci/wheel_smoke.py DIST_FOLDER", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        smoke(Path(argv[0]).resolve())
    except Failed as failure:
        say(f"FAIL: {failure}")
        return 1
    say(f"wheel smoke: every check passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
