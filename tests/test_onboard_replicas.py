"""One onboarding queue for every replica of a bench (docs/replicas.md, "The onboarding queue"; IMP-7, IMP-8), on
both stores: two real dashboards (`serve.py`) on one store, a batch started on the first shown and guarded by the
second, the first killed with SIGKILL mid-batch and the second carrying the batch on, each model onboarded once.

On the folder store the two dashboards share one data folder (one machine); on Postgres each has a data folder of
its own and its own `BENCH_REPLICA_NAME`, as two machines would: the second follows the first's run through the
log's copy in the store and takes the batch over once the first's lease lapses."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from benchwarmers.admin import onboarding
from benchwarmers.core import fileio, paths
from benchwarmers.demo import demo
from benchwarmers.models import endpoints
from benchwarmers.store import store
from conftest import call, wait_for

MODELS = ("m1", "m2", "m3")
SLOW = 1.0  # seconds each of a model's answers takes: the probe's four calls keep a run going for seconds
TAKEOVER = onboarding.LEASE_S + 2 * onboarding.RENEW_S + 5  # the lease, the timer's period, and a loaded machine
BATCH_S = 180


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def queue_of(port):
    return call(port, "GET", "/api/onboard-queue")[1]


class Replica:
    """A real dashboard process on a free port; its output in a file, so nothing it says can block it."""

    def __init__(self, where, **env):
        self.port = free_port()
        self.out = where.with_suffix(".out")
        with open(self.out, "w") as out:
            self.process = subprocess.Popen([sys.executable, "serve.py"], cwd=paths.CODE, stdout=out,
                                            stderr=subprocess.STDOUT, env={**os.environ, **env,
                                                                           "BENCH_PORT": str(self.port),
                                                                           "BENCH_CLIENT": "builtin"})
        assert wait_for(lambda: "Benchwarmers on http://" in self.out.read_text() or self.process.poll() is not None,
                        60) and self.process.poll() is None, self.out.read_text()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


@pytest.fixture
def pair(storage, home, tmp_path):
    """`(first, second, the second's data folder)`: two dashboards on this test's store, on a slow upstream."""
    models = {name: {"latency": SLOW, "context_window": 32000} for name in MODELS}
    with demo.Upstream(models) as up:
        fileio.write_atomic(endpoints.path(), json.dumps({"local": {"base": up.base_url, "key": "", "kind": "local",
                                                                    "default": True}}))
        apart = storage == "postgres"  # two machines: a data folder and a name each
        second_home = tmp_path / "elsewhere" if apart else home
        first = Replica(tmp_path / "first", **({"BENCH_REPLICA_NAME": "first-box"} if apart else {}))
        second = Replica(tmp_path / "second", **({"BENCH_REPLICA_NAME": "second-box",
                                                  "BENCHWARMERS_HOME": str(second_home)} if apart else {}))
        try:
            yield first, second, second_home
        finally:
            first.stop()
            second.stop()


def saved():
    """The queue as the store holds it (the owner and where each run is included)."""
    return store.current().read_json(store.ONBOARD_QUEUE, comments=False)


def owner_pid():
    owner = saved().get("owner")
    return owner.get("pid") if isinstance(owner, dict) else None


def started_on_both(first, second):
    """A batch of every model started on the first replica, seen and guarded by the second; the first item's log
    once the second follows it past its first step."""
    status, queued = call(first.port, "POST", "/api/onboard-queue",
                          {"items": [{"served": name, "mode": "quick-adhoc"} for name in MODELS]})
    assert status == 200 and queued["running"], queued
    seen = queue_of(second.port)
    assert seen["running"] and [i["served"] for i in seen["items"]] == list(MODELS)
    assert owner_pid() == first.process.pid
    status, refused = call(second.port, "POST", "/api/onboard", {"served": "m9", "mode": "quick"})  # IMP-8
    assert status == 400 and refused["errors"] == ["an onboarding batch is running: add this model to its queue "
                                                   "instead, or wait"]
    status, twice = call(second.port, "POST", "/api/onboard-queue", {"items": [{"served": "m1"}]})
    assert status == 400 and twice["errors"] == ["m1 from local is already in the queue"]
    # the page on the second replica follows the first's run: its step, and its log
    assert wait_for(lambda: queue_of(second.port)["items"][0].get("step", 0) >= 1, 60)
    log = queue_of(second.port)["items"][0]["log"]
    view = call(second.port, "GET", "/api/onboard?log=" + log)[1]
    assert view["ok"] and not view["done"] and "[1/5]" in view["tail"]
    return log


def onboarded(*homes):
    """The served names each replica started an onboarding of, from their change logs (one line per run)."""
    found = []
    for folder in dict.fromkeys(homes):
        found += [line["new"] for line in fileio.read_jsonl(folder / "config" / "changes.jsonl")
                  if str(line.get("field", "")).startswith("onboard")]
    return sorted(found)


def test_a_batch_goes_on_on_another_replica_when_its_owner_is_killed_and_runs_each_model_once(pair, home, storage):
    first, second, second_home = pair
    log = started_on_both(first, second)
    assert not saved()["items"][0].get("exit")

    first.process.send_signal(signal.SIGKILL)  # mid-run: its onboarding (a session of its own) goes on
    first.process.wait(30)
    killed = time.monotonic()
    assert wait_for(lambda: owner_pid() == second.process.pid, TAKEOVER), saved()
    assert time.monotonic() - killed <= TAKEOVER

    assert wait_for(lambda: not queue_of(second.port)["running"], BATCH_S)
    done = queue_of(second.port)["items"]
    assert [(i["served"], i["state"], i["alias"], i["exit"]) for i in done] == [(m, "done", m, 0) for m in MODELS]
    assert done[0]["log"] == log and len({i["log"] for i in done}) == len(MODELS)
    view = call(second.port, "GET", "/api/onboard?log=" + log)[1]
    assert view["done"] and view["exit"] == 0 and "[4/5]" in view["tail"]
    assert onboarded(home, second_home) == list(MODELS)  # the running model was settled, not run again
    copy = store.current().find(store.ONBOARD_LOGS, log)  # on Postgres the first's file, byte for byte
    kept = (home / "runs" / log).read_text()
    assert copy == ({"text": kept, "beat": copy["beat"]} if storage == "postgres" else None)
    assert "owner" not in saved() and not any(k in i for i in saved()["items"] for k in onboarding.INTERNAL)


def test_a_run_lost_with_its_replica_is_failed_saying_so_and_the_batch_goes_on(pair, home, storage):
    """The first replica's machine gone: its dashboard and its onboarding killed. The second settles the lost run
    as failed (on this machine, its process is gone; on another, it is no longer heard from) and runs the rest."""
    first, second, second_home = pair
    started_on_both(first, second)
    run = saved()["items"][0]["pid"]
    first.process.send_signal(signal.SIGKILL)
    os.killpg(run, signal.SIGKILL)  # the runner leads its own session: the onboarding goes with it
    first.process.wait(30)

    assert wait_for(lambda: not queue_of(second.port)["running"], BATCH_S + onboarding.RUNNER_LAPSE_S)
    lost, *rest = queue_of(second.port)["items"]
    assert (lost["state"], lost["exit"]) == ("failed", None)
    if storage == "postgres":
        assert lost["note"].startswith("it ran on first-box, whose dashboard is gone, and has not been heard from")
    else:
        assert lost["note"] == onboarding.KILLED
    assert [(i["served"], i["state"], i["exit"]) for i in rest] == [(m, "done", 0) for m in MODELS[1:]]
    assert onboarded(home, second_home) == list(MODELS)
