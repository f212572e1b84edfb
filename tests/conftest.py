"""Shared fixtures: every test gets its own data folder and llm user folder."""

import contextlib
import http.client
import json
import os
import shutil
import socket
import time

import pytest

from benchwarmers.core import paths
from benchwarmers.store import store

import pgserver


def wait_for(check, seconds=20):
    """Poll `check` until it is true or `seconds` pass: for what another process or thread does, with no
    event to wait on. Gives back the last answer."""
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


def call(port, method, path, body=None):
    """One JSON request to a server of the bench on 127.0.0.1 (another process's, often): `(status, answer)`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                 headers={"Content-Type": "application/json", "Host": f"127.0.0.1:{port}"})
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    conn.close()
    return resp.status, answer


def hang_up_after_200(gateway, model, content):
    """Ask `model` for a streamed panel over a raw HTTP/1.0 socket and hang up as soon as the 200 arrives: what a
    caller that goes away mid-panel does (STR-9)."""
    host, port = gateway.split("//")[1].split(":")
    body = json.dumps({"model": model, "stream": True, "messages": [{"role": "user", "content": content}]})
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall((f"POST /v1/chat/completions HTTP/1.0\r\nHost: {host}:{port}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
        assert sock.recv(100).startswith(b"HTTP/1.0 200")


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """A fresh data folder (BENCHWARMERS_HOME) and llm user folder (LLM_USER_PATH) per test."""
    data = tmp_path / "data"
    llmdir = tmp_path / "llm"
    llmdir.mkdir()
    monkeypatch.setenv("BENCHWARMERS_HOME", str(data))
    monkeypatch.setenv("LLM_USER_PATH", str(llmdir))
    unset = ("BENCH_CLIENT", "BENCHWARMERS_ADMIN_TOKEN", "BENCHWARMERS_DEMO", "BENCH_STORAGE", "BENCH_DATABASE_URL")
    for name in list(os.environ):
        if name.upper().startswith("BENCHWARMERS_KEY") or name in unset:
            monkeypatch.delenv(name)
    paths.reload()
    store.reset()
    yield data
    paths.reload()
    store.reset()


@pytest.fixture(scope="session")
def postgres_cluster():
    """One throwaway Postgres server for the session (tests/pgserver.py). A test that needs one and cannot get it
    fails, saying why: the Postgres store is only as good as the tests that ran on it."""
    try:
        cluster = pgserver.Cluster().start()
    except pgserver.Unavailable as exc:
        pytest.fail(f"no Postgres server for the store's tests: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def postgres(postgres_cluster, monkeypatch):
    """This test's bench on the session's Postgres (its child processes too): every log, record and rate window
    empty, the store chosen afresh in this process."""
    monkeypatch.setenv("BENCH_DATABASE_URL", postgres_cluster.url)
    store.reset()
    shared = store.current()
    for log in shared.logs():
        shared.replace(log, [])
    with shared.pool.connection() as conn:
        conn.execute("TRUNCATE bench_records, bench_rates, bench_days")
    yield postgres_cluster.url
    store.reset()


@pytest.fixture(params=["folder", "postgres"])
def storage(request):
    """Run a behaviour test once on the data folder's files and once on Postgres (docs/replicas.md)."""
    if request.param == "postgres":
        request.getfixturevalue("postgres")
    return request.param


@pytest.fixture
def llmdir(home):
    return paths.llm_dir()


# Models the gateway tests seat: each answers something recognisable, or fails in one known way.
TEST_MODELS = {
    "alpha": {"answer": "Alpha: the loop skips the first item.", "latency": 0.02, "context_window": 32000,
              "vision": False},
    "beta": {"answer": "Beta: the code looks correct to me.", "latency": 0.05, "context_window": 32000,
             "vision": False},
    "gamma": {"answer": "Gamma: off by one at index zero.", "latency": 0.01, "context_window": 32000},
    "slow": {"answer": "Slow: I agree with the others, eventually.", "latency": 0.6, "context_window": 32000},
    "gone": {"fail": "404"},
    "blank": {"fail": "empty", "context_window": 32000},
    "seer": {"answer": "Seer: the screenshot shows a stack trace.", "vision": True, "context_window": 128000},
    "tiny": {"answer": "Tiny: too small for most prompts.", "context_window": 3000, "vision": True},
    "merger": {"answer": "Merged: alpha and gamma agree there is a bug; beta dissents.", "context_window": 128000,
               "latency": 0.05},
    "noticer": {"fail": "notice", "context_window": 32000},
    "picker": {"decisions": {"shape": {"choice": "review", "confidence": 0.9}}},
}


@pytest.fixture
def upstream():
    from benchwarmers.demo.demo import Upstream

    with Upstream(models={name: dict(spec) for name, spec in TEST_MODELS.items()}) as up:
        yield up


@pytest.fixture
def bench(home, upstream, monkeypatch):
    """A data folder whose endpoint is the local upstream, every test model registered, catalog warmed."""
    from benchwarmers.core import fileio
    from benchwarmers.models import catalog
    from benchwarmers.demo import demo

    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    demo.register(upstream, aliases={name: name for name in TEST_MODELS if name != "picker"})
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 0}\n')
    catalog.warm(refresh=True)
    return upstream


@contextlib.contextmanager
def running_gateway():
    """The real gateway on a free port, on a thread of this process; stopped when the block ends."""
    from benchwarmers.server import gateway as gateway_module

    srv = gateway_module.serve("127.0.0.1", 0)
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def server(bench):
    """The real gateway on a free port, as its server object, so a test can shorten its limits while it runs."""
    with running_gateway() as srv:
        yield srv


@pytest.fixture
def port(server):
    return server.server_address[1]


@pytest.fixture
def gateway(port):
    """The real gateway's base URL (`http://127.0.0.1:<port>`)."""
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def routed(home, route_models, monkeypatch):
    """Route mode's bench: a data folder on a local upstream serving the test module's `route_models`
    fixture ({name: spec}), every model registered, the catalog warmed, rotation off (RT-6 is deterministic)."""
    from benchwarmers.core import fileio
    from benchwarmers.models import catalog
    from benchwarmers.panel import route_mode
    from benchwarmers.demo import demo

    monkeypatch.setenv("BENCH_CLIENT", "builtin")
    monkeypatch.setattr(route_mode, "ROTATE", 0)
    with demo.Upstream(models={name: dict(spec) for name, spec in route_models.items()}) as up:
        demo.register(up)
        fileio.write_atomic(paths.file("config", "gateway.json"), '{"idle_timeout": 5}\n')
        catalog.warm(refresh=True)
        yield up


@pytest.fixture
def gw(routed):
    """The real gateway's base URL in front of the `routed` bench."""
    with running_gateway() as srv:
        yield f"http://127.0.0.1:{srv.server_address[1]}"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")  # a module's browser: Playwright's loop must be gone before test_mcp's asyncio.run
def browser():
    """Debian's chromium through Playwright (its own browser download is never used). Without either the
    browser tests fail, saying why: a page left untested must not pass as tested."""
    try:
        import playwright.sync_api as playwright_api
    except ImportError:
        pytest.fail("playwright is not installed (pip install -e '.[test]')")
    if not CHROMIUM:
        pytest.fail("no chromium on PATH (apt-get install chromium); the browser tests need one")
    with playwright_api.sync_playwright() as p:
        found = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield found
        found.close()


def watched_page(browser, width=1440, height=1000, timeout=15_000):
    """A fresh context and page whose console errors and uncaught exceptions collect in `page.problems`, so a
    test can say which problems it expected; the caller closes the context."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    page.set_default_timeout(timeout)
    return context, page
