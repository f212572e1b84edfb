"""The onboarding queue persists across restarts (dashboard.md IMP-7, issue 19 rule 4): a real `serve.py` is
stopped while a batch runs and started again; the batch carries on and the running model's outcome is kept."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from benchwarmers.core import fileio, paths
from benchwarmers.models import endpoints
from benchwarmers.demo import demo
from benchwarmers.admin import onboarding

CODE = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(port):
    env = {**os.environ, "BENCH_PORT": str(port), "BENCH_CLIENT": "builtin"}
    proc = subprocess.Popen([sys.executable, str(CODE / "serve.py")], cwd=CODE, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout.readline().startswith("Benchwarmers on http://localhost:")  # listening from here on
    return proc


def call(port, path, body=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST" if body is not None else "GET",
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def until(check, seconds=90):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("did not happen in time")


def test_imp7_the_queue_survives_a_restart_of_serve_py_and_finishes_its_batch(home):
    models = {"slowish": {"latency": 1.0, "context_window": 32000}, "alpha": {"context_window": 32000}}
    with demo.Upstream(models) as up:
        fileio.write_atomic(endpoints.path(), json.dumps({"local": {"base": up.base_url, "key": "", "kind": "local",
                                                                    "default": True}}))
        port = free_port()
        first = start(port)
        try:
            queued = call(port, "/api/onboard-queue", {"items": [{"served": "slowish", "mode": "quick-adhoc"},
                                                                 {"served": "alpha", "mode": "quick-adhoc"}]})
            assert queued["running"] and [i["served"] for i in queued["items"]] == ["slowish", "alpha"]
            until(lambda: call(port, "/api/onboard-queue")["items"][0]["log"])
        finally:
            first.send_signal(signal.SIGTERM)
            first.wait(30)
        saved = fileio.read_json(onboarding.queue_path())
        assert [i["state"] for i in saved["items"]] == ["running", "queued"] and saved["items"][0]["pid"] > 0
        log = saved["items"][0]["log"]

        second = start(port)
        try:
            again = call(port, "/api/onboard-queue")
            assert again["running"] and [i["served"] for i in again["items"]] == ["slowish", "alpha"]
            assert "pid" not in again["items"][0]
            done = until(lambda: (lambda q: not q["running"] and q)(call(port, "/api/onboard-queue")))
            assert [(i["state"], i["alias"], i["exit"]) for i in done["items"]] == [("done", "slowish", 0),
                                                                                  ("done", "alpha", 0)]
            assert done["items"][0]["log"] == log
            view = call(port, "/api/onboard?log=" + log)
            assert view["done"] and view["exit"] == 0 and "[4/5]" in view["tail"]
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(30)
    assert [i["state"] for i in fileio.read_json(onboarding.queue_path())["items"]] == ["done", "done"]


def test_imp7_a_run_whose_process_died_without_an_exit_line_is_failed_and_the_batch_goes_on(home):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    name = "onboard-20261205T120000-m1.log"
    paths.file("runs", name).parent.mkdir(parents=True, exist_ok=True)
    paths.file("runs", name).write_text("onboarding m1 from local  ->  alias m1\n  [1/5] served by the endpoint\n")
    fileio.write_atomic(onboarding.queue_path(), json.dumps({"items": [
        {"served": "m1", "endpoint": "local", "mode": "quick", "state": "running", "alias": None, "log": name,
         "exit": None, "note": "", "pid": gone.pid},
        {"served": "m2", "endpoint": "gone", "mode": "quick", "state": "queued", "alias": None, "log": None,
         "exit": None, "note": ""}]}))
    queue = onboarding.queue()  # made from the file, and resumed
    state = until(lambda: (lambda q: not q["running"] and q)(queue.state()), 30)
    first, second = state["items"]
    assert first["state"] == "failed" and first["note"].startswith("its process ended without an exit line")
    assert second["state"] == "failed" and "not an endpoint" in second["note"]
