"""The configuration the dashboard edits, on both stores (docs/replicas.md): an edit made through one replica's
dashboard answers the next request on another replica, a real process; on Postgres that replica has a data
folder of its own, as a replica on another machine would. The learned limits go the same way, and
`bench store import` / `export` move every document."""

import contextlib
import datetime
import http.client
import json
import os
import subprocess
import sys

import psycopg
import pytest

from benchwarmers.admin import jobs, scheduler
from benchwarmers.calling import client
from benchwarmers.core import changes, fileio, paths
from benchwarmers.dashboard import serve
from benchwarmers.models import alerts, catalog, endpoints
from benchwarmers.panel import collections
from benchwarmers.server import guard
from benchwarmers.store import moving, store
from benchwarmers.store import postgres as postgres_store
from conftest import call, wait_for

PROMPT = "Review this: for i in range(1, len(xs)): print(xs[i])"


def seated(port, collection):
    status, reply = call(port, "POST", "/v1/chat/completions",
                         {"model": f"bench/{collection}", "messages": [{"role": "user", "content": PROMPT}]})
    return [seat["alias"] for seat in reply["bench"]["seats"]] if status == 200 else reply


@pytest.fixture
def dashboard(storage, bench):
    srv = serve.serve("127.0.0.1", 0)
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


@contextlib.contextmanager
def started(storage, folder, script, says):
    """Another process of the bench (`gateway.py`, `serve.py`) and the port its banner names; on Postgres with a data
    folder of its own (nothing of the first's copied), as a replica on another machine has."""
    env = dict(os.environ)
    if storage == "postgres":
        env["BENCHWARMERS_HOME"] = str(folder)
    process = subprocess.Popen([sys.executable, script, "--port", "0"], cwd=paths.CODE, text=True, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        banner = process.stdout.readline()
        assert banner.startswith(says), banner
        yield int(banner.removeprefix(says).split("/")[0].split()[0])
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def replica(storage, dashboard, tmp_path):
    """A second gateway process."""
    with started(storage, tmp_path / "elsewhere", "gateway.py", "bench gateway on http://127.0.0.1:") as port:
        yield port


@pytest.fixture
def other_dashboard(storage, dashboard, tmp_path):
    """A second dashboard process."""
    with started(storage, tmp_path / "other", "serve.py", "Benchwarmers on http://localhost:") as port:
        yield port


def test_a_collection_saved_on_one_replica_answers_the_next_panel_on_another(dashboard, replica):
    saved = {"name": "pair", "members": ["gamma", "alpha"], "shape": "review", "reply": "all"}
    # on Postgres the other replica is told at the write's commit, a moment later: its next request after that
    assert call(dashboard, "POST", "/api/collection", saved)[0] == 200
    assert wait_for(lambda: seated(replica, "pair") == ["gamma", "alpha"], 5)
    assert call(dashboard, "POST", "/api/collection", {**saved, "members": ["beta"]})[0] == 200
    assert wait_for(lambda: seated(replica, "pair") == ["beta"], 5)


def test_a_collection_saved_through_the_store_is_read_by_the_panel_reader(storage, bench):
    """The one reader (`collections.load`) and its writer meet in the store on Postgres, in the file on the folder."""
    fileio.update(collections.collections_path(), lambda data: data.__setitem__("solo", {"members": ["alpha"]}))
    assert collections.load()["solo"].members == ("alpha",)
    on_disk = collections.collections_path()
    assert ("solo" in (on_disk.read_text() if on_disk.exists() else "")) is (storage == "folder")


def test_a_learned_limit_on_another_replica_is_read_once_it_says_so(postgres, bench):
    other = postgres_store.Postgres(postgres)
    try:
        assert wait_for(lambda: other.listening and store.current().listening)
        assert catalog.window("alpha") == 32000
        other.write_text(("config", "model-learned.json"), json.dumps({"alpha": {"context_window": {"value": 4000}}}))
        assert wait_for(lambda: catalog.window("alpha") == 4000, 5)
    finally:
        other.close()


def test_import_and_export_move_the_configuration(postgres, bench, tmp_path):
    """The folder's configuration files go into the store whole, replacing what it held, and come back byte for
    byte; a replica reads them from the store from then on, whatever its own files say."""
    files = {"collections.json": '{"solo": {"members": ["alpha"]}}\n',
             "endpoints.json": fileio.read_text(endpoints.path()),  # the bench's, from the store
             "extra-openai-models.yaml": fileio.read_text(paths.file("config", "extra-openai-models.yaml")),
             "model-learned.json": '{"alpha": {"context_window": {"value": 4000}}}\n'}
    for name, text in files.items():
        paths.file("config", name).write_text(text)  # as the folder store left them, before the move
    counts = moving.into(store.current(), paths.data())
    assert all(counts[f"config/{name}"] == moving.DOCUMENT for name in files)
    for name in files:
        paths.file("config", name).write_text("{}")  # the replica's own copies no longer matter
    assert set(collections.load()) == {"solo"} and set(endpoints.load()) and catalog.window("alpha") == 4000
    out = tmp_path / "out"
    moving.out(store.current(), out)
    assert {name: out.joinpath("config", name).read_text() for name in files} == files


def test_a_lost_server_is_refused_never_read_as_an_empty_configuration(postgres, bench):
    """A read the store cannot answer raises its 503 (an OSError); it is not cached as `{}`, so once the server is
    back the collection is there again."""
    fileio.update(collections.collections_path(), lambda data: data.__setitem__("solo", {"members": ["alpha"]}))
    with psycopg.connect(postgres, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    assert wait_for(lambda: not store.current().listening, 5)  # its mark unknown: every read asks the server
    with pytest.raises(OSError):
        collections.load()
    assert wait_for(lambda: set(answered(collections.load)) == {"solo"}, 5)  # each cut connection fails once


def answered(read):
    try:
        return read()
    except OSError:
        return {}


def changed(port):
    """The fields of the change log's lines a dashboard's Logs page shows, newest first."""
    status, reply = call(port, "GET", "/api/logs")
    assert status == 200, reply
    return [line["field"] for line in reply["changes"]]


def page(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/", headers={"Host": f"127.0.0.1:{port}"})
    text = conn.getresponse().read().decode()
    conn.close()
    return text


def test_a_change_made_through_one_dashboard_is_in_the_change_log_of_another(storage, dashboard, other_dashboard):
    """LOG-1 on both stores: the line goes where every replica's Logs page reads it (on the folder, the file, byte
    for byte as before; on Postgres the store, the replica's own file untouched)."""
    saved = {"name": "pair", "members": ["gamma", "alpha"], "shape": "review", "reply": "all"}
    assert call(dashboard, "POST", "/api/collection", saved)[0] == 200
    assert changed(other_dashboard)[0] == changed(dashboard)[0] == "collection pair"
    assert call(other_dashboard, "POST", "/api/collection", {**saved, "members": ["beta"]})[0] == 200
    assert changed(dashboard)[:2] == ["collection pair", "collection pair"]
    on_disk = changes.path()
    assert on_disk.exists() is (storage == "folder")
    if storage == "folder":
        assert [json.loads(line)["field"] for line in on_disk.read_text().splitlines()] == ["collection pair"] * 2


def test_an_alert_raised_by_one_process_is_shown_and_cleared_by_another(storage, dashboard, other_dashboard):
    """AL-1 on both stores: an alert this process raises is on the other dashboard's page; that dashboard's Retry
    clears it (MP-18), and it is gone here too."""
    key = "model:pending:alpha"
    alerts.raise_alert(key, "retiring", "alpha has failed 3 days in a row", "Retry it", alias="alpha")
    assert key in page(other_dashboard)
    status, reply = call(other_dashboard, "POST", "/api/retry", {"alias": "alpha"})
    assert status == 200 and f"cleared {key}" in reply["changed"], reply
    assert wait_for(lambda: key not in alerts.active(), 5)  # on Postgres: once the other's write is told here
    assert key not in page(dashboard) and changed(dashboard)[0] == "retried"
    assert paths.file("metrics", "alerts.json").exists() is (storage == "folder")


def test_import_and_export_move_the_change_log_and_the_alerts(postgres, bench, tmp_path):
    """`bench store import` takes the folder's change log and alerts into the store; `export` writes them back
    byte for byte."""
    log = b'{"at": "2026-12-01T09:00:00+00:00", "by": "ui", "alias": "", "field": "theme", "old": null, ' \
          b'"new": "caf\\u00e9"}\n{"at": "2026-12-02T09:00:00+00:00", "by": "admin", "alias": "alpha", ' \
          b'"field": "role", "old": "core", "new": "ad hoc"}\n'
    found = '{\n  "model:paid:alpha": {\n    "action": "",\n    "first_seen": "2026-12-01",\n    "kind": "paid"\n  }\n}\n'
    changes.path().write_bytes(log)
    paths.file("metrics", "alerts.json").write_text(found)
    counts = moving.into(store.current(), paths.data())
    assert counts["config/changes.jsonl"] == "2 lines" and counts["metrics/alerts.json"] == moving.DOCUMENT
    changes.path().unlink()
    paths.file("metrics", "alerts.json").unlink()
    assert [line["field"] for line in changes.recent()] == ["role", "theme"]
    assert set(alerts.active()) == {"model:paid:alpha"}
    out = tmp_path / "out"
    moving.out(store.current(), out)
    assert out.joinpath("config", "changes.jsonl").read_bytes() == log
    assert out.joinpath("metrics", "alerts.json").read_text() == found


def elsewhere(storage, folder, code, *args):
    """What `code` prints when run by another process of the bench (on Postgres with a data folder of its own)."""
    env = dict(os.environ)
    if storage == "postgres":
        env["BENCHWARMERS_HOME"] = str(folder)
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=paths.CODE, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_login_on_one_replica_holds_on_another_and_ending_sessions_ends_it_there(storage, monkeypatch, tmp_path):
    """ADM-4 across replicas: every replica signs and checks cookies over one session epoch, so a dashboard behind a
    load balancer keeps its login from request to request, and ending every session on one ends it on all."""
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", "an-admin-token-long-enough")
    cookie = guard.session_cookie(8122).split(";")[0]
    ask = "import sys; from benchwarmers.server import guard; print(guard.session_valid(sys.argv[1], 8122))"
    assert elsewhere(storage, tmp_path / "other", ask, cookie) == "True"
    guard.end_sessions()
    assert elsewhere(storage, tmp_path / "other", ask, cookie) == "False"
    assert guard.sessions_path().exists() is (storage == "folder")


def test_the_model_client_chosen_on_one_replica_is_every_replicas(storage, tmp_path):
    """BK-4: the Settings page's choice of client is configuration, read by every replica."""
    assert client.choose("llm") == ""
    ask = "from benchwarmers.calling import client; print(*client.chosen())"
    assert elsewhere(storage, tmp_path / "other", ask) == "llm settings"


def test_a_scheduled_slot_is_run_by_one_replica_not_by_each(storage, tmp_path):
    """SCH-6 across replicas: each job's due slot is claimed in the scheduler's state under the store's lock, so the
    replica that ticks second finds it taken (here in log-only mode: a `would run` line is a run)."""
    fileio.write_atomic(jobs.path(), '{"mode": "log-only"}\n')
    first = datetime.datetime(2026, 12, 1, 12, 0).astimezone()
    later = (first + datetime.timedelta(days=8)).isoformat()
    scheduler.Scheduler(clock=lambda: first).once()  # the first tick only records the time (SCH-8)
    tick = ("import datetime, sys; from benchwarmers.admin import scheduler; "
            "now = datetime.datetime.fromisoformat(sys.argv[1]); scheduler.Scheduler(clock=lambda: now).once()")
    elsewhere(storage, tmp_path / "other", tick, later)
    elsewhere(storage, tmp_path / "third", tick, later)
    logs = [paths.file("runs", "scheduler.log"), *(tmp_path / name / "runs" / "scheduler.log" for name in
                                                     ("other", "third"))]
    ran = [line for log in logs if log.exists() for line in log.read_text().splitlines() if "would run" in line]
    assert sorted(line.split()[4] for line in ran) == sorted(scheduler.jobs.JOBS)
