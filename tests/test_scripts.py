"""The maintenance scripts (suite-cli-mcp.md §3.9), run as a user types them against the local upstream."""

import os
import socket
import subprocess
import sys

from metrics import demo, fileio, paths


def run(*args):
    return subprocess.run([sys.executable, str(paths.CODE / "scripts" / "list_served.py"), *args],
                          capture_output=True, text=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def test_ls1_served_models_marked_registered_or_missing(home):
    with demo.Upstream(models={"alpha": {"answer": "a"}, "beta-x": {"answer": "b"}, "Beta-y": {"answer": "c"}}) as up:
        demo.register(up, aliases={"alpha": "alpha"})
        all_of = run()
        some = run("BETA")
    assert all_of.returncode == 0, all_of.stderr
    assert all_of.stdout.splitlines()[:3] == ["[ MISSING  ] Beta-y", "[registered] alpha", "[ MISSING  ] beta-x"]
    assert "3 shown of 3 served; 2 unregistered" in all_of.stdout and "onboard.py" in all_of.stdout
    assert some.stdout.splitlines()[:2] == ["[ MISSING  ] Beta-y", "[ MISSING  ] beta-x"]
    assert "2 shown of 3 served; 2 unregistered" in some.stdout


def test_ls1_unreachable_and_no_endpoint(home):
    none = run()
    assert none.returncode == 1 and "no endpoints configured" in none.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    fileio.write_atomic(paths.file("config", "endpoints.json"),
                        f'{{"local": {{"base": "http://127.0.0.1:{closed}/v1", "default": true}}}}\n')
    gone = run()
    assert gone.returncode == 1
    assert gone.stderr.startswith(f"could not reach http://127.0.0.1:{closed}/v1: ")
