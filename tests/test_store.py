"""The store (docs/replicas.md) on a real Postgres server (tests/pgserver.py): migrations applied once under
their lock by replicas starting together, ids unique and read in order across writers, a replica that cannot
reach its server refusing to start, `bench store import` / `export` moving a 100,000-line log there and
back without losing or reordering a line, /health saying whether the server answers (a stopped one included), and
the calls and route logs kept within their size."""

import concurrent.futures
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pgserver
import psycopg
import pytest

from benchwarmers.calling import ledger
from benchwarmers.core import errors, paths
from benchwarmers.demo import demo
from conftest import wait_for
from benchwarmers.server import gatekeys
from benchwarmers.store import migrations, store
from benchwarmers.store import postgres as postgres_store


def fresh_database(cluster, name):
    """A new empty database on the session's server: its URL."""
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return cluster.url.rsplit("/", 1)[0] + "/" + name


def test_replicas_starting_together_migrate_once(postgres_cluster):
    url = fresh_database(postgres_cluster, "starting")
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        opened = list(pool.map(lambda _: postgres_store.Postgres(url), range(6)))
    try:
        assert {s.version for s in opened} == {len(migrations.MIGRATIONS)}
        with psycopg.connect(url) as conn:
            applied = conn.execute("SELECT version FROM bench_migrations ORDER BY version").fetchall()
        assert [row[0] for row in applied] == list(range(1, len(migrations.MIGRATIONS) + 1))
    finally:
        for found in opened:
            found.close()


def test_a_schema_newer_than_the_bench_refuses_start(postgres_cluster):
    url = fresh_database(postgres_cluster, "newer")
    postgres_store.Postgres(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO bench_migrations (version) VALUES (99)")
    with pytest.raises(errors.StoreUnavailable, match="schema is version 99, newer than this bench's"):
        postgres_store.Postgres(url)


def test_ids_are_unique_and_read_in_order_while_replicas_write(postgres):
    """Two stores (two replicas' pools) append from 8 threads each while a reader follows with `since`: the
    reader sees every line once, ids rising, each writer's lines in the order it wrote them."""
    first, second = replicas = (store.current(), postgres_store.Postgres(postgres))
    done = threading.Event()
    seen = []

    def write(shared, writer):
        for n in range(50):
            shared.append(store.OFFLOADS, json.dumps({"writer": writer, "n": n}).encode() + b"\n")

    def follow():
        last = 0
        while True:
            finished = done.is_set()
            _, rows = first.since(store.OFFLOADS, last)
            for line_id, body in rows:
                assert line_id > last
                last = line_id
                seen.append(json.loads(body))
            if finished:
                return

    reader = threading.Thread(target=follow)
    reader.start()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda w: write(replicas[w % 2], w), range(16)))
    done.set()
    reader.join(60)
    second.close()
    assert len(seen) == 16 * 50
    for writer in range(16):
        assert [r["n"] for r in seen if r["writer"] == writer] == list(range(50))


def offload_line(writer, n):
    return json.dumps({"date": "2026-12-06", "model": f"m{writer % 3}", "task": "t", "useful": None,
                       "note": "member; ok in 0.1s", "call": f"w{writer}.n{n}", "status": "ok"}).encode() + b"\n"


def test_a_server_process_lent_to_this_replica_long_ago_is_not_taken_for_its_own(postgres):
    """A replica skips the notifications of its own server processes (it counted those changes as they returned),
    but a pid it was lent over OWN_FOR ago may since belong to another replica's connection (a pool replaces its
    connections, a server restarts): that connection's change is counted, so no replica reads a stale copy."""
    first = store.current()
    assert wait_for(lambda: first.listening)
    log = "/".join(store.CALLS)
    seen = first.changes.get(log, 0)
    with psycopg.connect(postgres, autocommit=True) as conn, psycopg.connect(postgres, autocommit=True) as other:
        first.own[conn.info.backend_pid] = time.monotonic() - postgres_store.OWN_FOR - 1  # lent long ago
        conn.execute("SELECT bench_append(%s, %s)", (log, [b'{"panel": "theirs"}\n']))
        assert wait_for(lambda: first.changes.get(log, 0) == seen + 1)
        first.own[conn.info.backend_pid] = time.monotonic()  # lent just now: its change is this replica's own
        conn.execute("SELECT bench_append(%s, %s)", (log, [b'{"panel": "mine"}\n']))
        other.execute("SELECT bench_append(%s, %s)", (log, [b'{"panel": "after"}\n']))  # notified after it
        assert wait_for(lambda: first.changes.get(log, 0) >= seen + 2)
    assert first.changes.get(log, 0) == seen + 2


def test_the_index_takes_in_its_own_lines_and_never_misses_or_repeats_another_replicas(postgres):
    """The offload index of one replica, refreshed all the while, as it and another replica (its own pool) and a
    bare connection append interleaved, some with another log's lines in the same append: it holds every line
    once, in id order, as a full read finds them. Alone, it takes its own lines in without asking the server."""
    from benchwarmers.panel import offload

    first, second = store.current(), postgres_store.Postgres(postgres)
    assert wait_for(lambda: first.listening and second.listening)
    index = offload.index()
    asked = []
    since = first.since
    first.since = lambda log, after: asked.append(after) or since(log, after)
    index.refresh()
    asked.clear()
    for n in range(20):  # alone: every line its own, each taken in as it was written
        first.append_all([(store.USAGE + ("2026-12.jsonl",), b'{"n": 1}\n'), (store.OFFLOADS, offload_line(0, n))])
        index.refresh()
    assert asked == [] and len(index.starts) == 20
    done = threading.Event()

    def write(writer):
        for n in range(40):
            if writer % 3 == 0:
                first.append_all([(store.OFFLOADS, offload_line(writer, n)), (store.CALLS, b'{"panel": "p"}\n')])
            elif writer % 3 == 1:
                second.append(store.OFFLOADS, offload_line(writer, n))
            else:
                with psycopg.connect(postgres, autocommit=True) as conn:
                    conn.execute("SELECT bench_append(%s, %s)", ("/".join(store.OFFLOADS), [offload_line(writer, n)]))

    def follow():
        while not done.is_set():
            index.refresh()

    reader = threading.Thread(target=follow)
    reader.start()
    with concurrent.futures.ThreadPoolExecutor(9) as pool:
        list(pool.map(write, range(1, 10)))
    done.set()
    reader.join(60)
    whole = first.since(store.OFFLOADS, 0)[1]
    assert wait_for(lambda: (index.refresh(), index.offset)[1] == whole[-1][0], 5)
    second.close()
    assert list(index.starts) == [line_id for line_id, _ in whole] and len(whole) == 20 + 9 * 40
    assert index.bytes_read == sum(len(line) for _, line in whole)
    assert asked  # another replica's lines were asked for


def test_a_replica_that_cannot_reach_its_server_does_not_start(home):
    env = {**os.environ, "BENCH_DATABASE_URL": "postgresql://bench@127.0.0.1:9/bench"}
    done = subprocess.run([sys.executable, "gateway.py", "--port", "0"], cwd=paths.CODE, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "storage: the Postgres server of BENCH_DATABASE_URL (127.0.0.1:9/bench) cannot be used" in done.stderr


def bench_store(*args, env=None):
    return subprocess.run([sys.executable, "-m", "benchwarmers.cli.cli", "store", *args], capture_output=True,
                          text=True, env=env or dict(os.environ), timeout=300)


def test_import_and_export_move_a_100k_line_log_there_and_back(postgres, tmp_path):
    """A real 100,000-line offload log (seat lines and verdicts, non-ASCII escaped, a torn line among them), a
    calls log with rotated copies, a month of the ledger and the gateway keys go into Postgres and come back byte
    for byte, in order."""
    log = paths.file(*store.OFFLOADS)
    lines = [json.dumps({"date": "2026-12-01", "model": f"m{n % 7}", "task": f"task {n} caf\u00e9 (bench/core, code)",
                         "useful": None if n % 3 else n % 2 == 0, "note": "member; ok in 1.0s",
                         "call": f"p{n // 3}.member{n % 3}"}).encode() for n in range(100_000)]
    lines[5000] = b'{"date": "2026-12-01", "mod'
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    calls = paths.file(*store.CALLS)
    calls.parent.mkdir(parents=True, exist_ok=True)
    calls.write_bytes(b'{"panel": "new"}\n')
    calls.with_name("calls.jsonl.1").write_bytes(b'{"panel": "older"}\n')
    calls.with_name("calls.jsonl.2").write_bytes(b'{"panel": "oldest"}\n')
    month = paths.file("metrics", "usage", "2026-11.jsonl")
    month.parent.mkdir(parents=True, exist_ok=True)
    month.write_bytes(b'{"t":1.0,"alias":"a"}\n{"t":2.0,"alias":"b"}\n')
    key = "bwk_" + "k" * 43  # a gateway key in the folder's key file, as `bench key create` left it there
    store.Folder().update_json(store.GATEWAY_KEYS, lambda data: data.update(
        {"moved": {"sha256": gatekeys.digest(key), "hint": key[-4:]}}), mode=0o600)
    done = bench_store("import")
    assert done.returncode == 0, done.stderr
    assert "imported metrics/usage/2026-11.jsonl: 2 lines" in done.stdout
    assert "imported config/gateway-keys.json: the document" in done.stdout
    assert wait_for(lambda: gatekeys.lookup(key) == "moved", 5)  # this process is on Postgres: the key moved
    assert "imported metrics/offloads.jsonl: 100,000 lines" in done.stdout
    assert "imported runs/gateway/calls.jsonl: 3 lines" in done.stdout
    assert [r["panel"] for r in store.current().records(store.CALLS)] == ["oldest", "older", "new"]
    out = tmp_path / "out"
    done = bench_store("export", "--folder", str(out))
    assert done.returncode == 0, done.stderr
    assert out.joinpath(*store.OFFLOADS).read_bytes() == log.read_bytes()
    assert out.joinpath("metrics", "usage", "2026-11.jsonl").read_bytes() == month.read_bytes()
    assert out.joinpath(*store.GATEWAY_KEYS).read_text() == paths.file(*store.GATEWAY_KEYS).read_text()
    assert out.joinpath(*store.CALLS).read_bytes() == b'{"panel": "oldest"}\n{"panel": "older"}\n{"panel": "new"}\n'


def test_an_import_replaces_what_a_running_index_holds(postgres):
    """The offload index of a replica already running starts over when the log is imported under it."""
    from benchwarmers.panel import offload

    offload.add("before", "t", True, "n", "c1")
    assert set(offload.summary()) == {"before"}
    store.current().replace(store.OFFLOADS, [json.dumps({"date": "2026-12-01", "model": "after", "task": "t",
                                                         "useful": None, "note": "", "call": "c2"}).encode()])
    assert set(offload.summary()) == {"after"} and offload.by_call("c1") is None


def test_bench_store_needs_a_database_url(home):
    done = bench_store("import", env={k: v for k, v in os.environ.items() if k != "BENCH_DATABASE_URL"})
    assert done.returncode == 2 and "bench store needs BENCH_DATABASE_URL" in done.stderr


def test_a_keys_cap_holds_across_replicas(postgres):
    """RATE-1 across replicas: two stores (two replicas) charging one name from 8 threads admit exactly its cap;
    every refusal says how long to wait, within the minute."""
    replicas = (store.current(), postgres_store.Postgres(postgres))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        waits = list(pool.map(lambda n: replicas[n % 2].charge("shared-key", 5), range(40)))
    replicas[1].close()
    assert waits.count(None) == 5
    assert all(1 <= wait <= 61 for wait in waits if wait is not None)
    assert store.current().charge("another-key", 1) is None


def test_a_conversation_claimed_on_two_replicas_at_once_is_one_record(postgres):
    """Route mode's first turns of one conversation landing on two replicas together share one record, the first
    written; the later turns count on from it, whichever replica takes them."""
    from benchwarmers.panel import conversations

    replicas = (store.current(), postgres_store.Postgres(postgres))

    def first_turn(n):
        def change(record):
            if record is not None:
                return record, None
            made = {"conv": f"r-{n}", "alias": "steady", "turns": 0, "at": time.time()}
            return made, made
        return replicas[n % 2].change(store.CONVERSATIONS, "k1", change)["conv"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        claimed = set(pool.map(first_turn, range(16)))
    assert len(claimed) == 1
    record = conversations.find("k1")
    first = conversations.finish("k1", record, "steady")
    conversations.finish("k1", record, "steady")
    assert first[1] == 1 and replicas[1].find(store.CONVERSATIONS, "k1")["turns"] == 2
    replicas[1].close()


def test_a_keys_verdicts_a_day_are_counted_across_replicas(postgres):
    """Issue 29 item 3 across replicas: two stores counting one key's verdicts from 8 threads admit exactly its
    cap for the day; another day and another key count afresh."""
    replicas = (store.current(), postgres_store.Postgres(postgres))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        counted = list(pool.map(lambda n: replicas[n % 2].count_day("judge", "2026-12-06", 3), range(20)))
    assert counted.count(True) == 3
    assert replicas[1].count_day("judge", "2026-12-07", 3) and replicas[0].count_day("other", "2026-12-06", 3)
    replicas[1].close()


def test_what_another_replica_writes_is_read_again_once_it_says_so(postgres):
    """A replica reads the offload log and documents (cooldowns) from the server only when they changed: a line
    or a cooldown another replica writes is seen as soon as its notification arrives."""
    from benchwarmers.models import learn
    from benchwarmers.panel import offload

    first, second = store.current(), postgres_store.Postgres(postgres)
    assert wait_for(lambda: first.listening and second.listening)
    assert offload.summary() == {} and learn.cooling() == set()
    second.append(store.OFFLOADS, json.dumps({"date": "2026-12-06", "model": "elsewhere", "task": "t",
                                              "useful": None, "note": "", "call": "c9"}).encode() + b"\n")
    second.update_json(learn.COOLDOWNS, lambda data: data.update(
        {"elsewhere": {"until": "2999-01-01T00:00:00+00:00", "why": "429", "where": "gateway", "stated": True}}))
    assert wait_for(lambda: set(offload.summary()) == {"elsewhere"}, 5)
    assert wait_for(lambda: learn.cooling() == {"elsewhere"}, 5)
    second.close()


def test_a_server_lost_mid_request_is_a_503_and_the_next_request_reconnects(postgres_cluster):
    """The store's connections cut by the server (as a restart does): the write in progress is refused as a 503
    that says so (an OSError, so route mode keeps its answer); the next one reconnects and lands."""
    shared = postgres_store.Postgres(fresh_database(postgres_cluster, "cut"))
    try:
        shared.append(store.OFFLOADS, b'{"model": "a"}\n')
        with psycopg.connect(postgres_cluster.url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'cut'")
        with pytest.raises(OSError) as lost:
            shared.append(store.OFFLOADS, b'{"model": "b"}\n')
        refusal = errors.planned(lost.value)
        assert refusal.status == 503 and refusal.retry_after == 5
        assert str(refusal).startswith("the Postgres store cannot be reached: ")
        shared.append(store.OFFLOADS, b'{"model": "c"}\n')
        assert [r["model"] for r in shared.records(store.OFFLOADS)] == ["a", "c"]
    finally:
        shared.close()


def health(base):
    with urllib.request.urlopen(base + "/health", timeout=30) as reply:
        return reply.status, json.loads(reply.read())


def test_health_says_whether_the_store_answers(storage, gateway):
    """HEALTH-1: on the folder /health is as before; on Postgres it adds that the server answers."""
    expected = {"ok": True} if storage == "folder" else {"ok": True, "store": {"kind": "postgres", "answers": True}}
    assert health(gateway) == (200, expected)


def test_a_stopped_server_is_reported_down_on_health_not_a_500(home, monkeypatch):
    """HEALTH-1: the store's server stopped under a running gateway: /health still answers 200 at once, the store
    down with libpq's reason (never the server's address); a replica opening its store again meanwhile too."""
    from conftest import running_gateway

    with pgserver.Cluster() as cluster:
        monkeypatch.setenv("BENCH_DATABASE_URL", cluster.url.replace("benchpg@", "benchpg:s3cret@"))
        store.reset()
        with running_gateway() as srv:
            base = f"http://127.0.0.1:{srv.server_address[1]}"
            assert health(base)[1]["store"] == {"kind": "postgres", "answers": True}
            cluster.stop()
            started = time.monotonic()
            assert wait_for(lambda: not health(base)[1]["store"]["answers"], 10)
            assert time.monotonic() - started < 2 * postgres_store.PROBE_TIMEOUT
            status, said = health(base)
            assert status == 200 and said["ok"] is True
            problem = said["store"]["problem"]
            assert problem and "127.0.0.1" not in problem and "s3cret" not in problem and str(cluster.port) not in problem
            store.reset()  # chosen again while the server is away: still an answer, never a 500
            status, said = health(base)
            assert status == 200 and said["store"]["answers"] is False
            assert "127.0.0.1" not in said["store"]["problem"] and "s3cret" not in said["store"]["problem"]
    store.reset()


def kept_bytes(shared, log):
    return sum(len(line) + 1 for line in shared.lines(log))


def test_the_calls_log_keeps_its_newest_lines_within_its_bound_on_postgres(postgres):
    """`calls_log_max_mb` / `calls_log_keep` on Postgres: the calls log keeps its newest lines, in order, within
    `(keep + 1) * max_bytes` bytes (as the file and its copies at their fullest), the oldest dropped; the bound is
    passed by at most what one replica appends between two trims (max_bytes / TRIM_EVERY)."""
    shared = store.current()
    max_bytes, keep = 1000, 2
    sent = [{"panel": f"p{n:04d}", "pad": "x" * (60 + n % 40)} for n in range(300)]
    for record in sent:
        shared.append_log(store.CALLS, record, max_bytes, keep)
    panels = [r["panel"] for r in shared.records(store.CALLS)]
    assert panels and panels == [r["panel"] for r in sent[-len(panels):]]
    bound = (keep + 1) * max_bytes
    kept = kept_bytes(shared, store.CALLS)
    older = len(json.dumps(sent[-len(panels) - 1])) + 1  # the newest line dropped
    assert kept <= bound + max_bytes // postgres_store.TRIM_EVERY + 200
    assert kept + older > bound  # nothing dropped that fitted


def test_a_log_without_a_bound_keeps_every_line_and_a_new_replica_trims_at_its_first_append(postgres):
    """`calls_log_max_mb` 0 keeps everything; a replica that starts later trims the log at its first append, so a
    short-lived process still keeps it within its bound; then it trims only every max_bytes / TRIM_EVERY bytes."""
    shared = store.current()
    for n in range(100):
        shared.append_log(store.ROUTES, {"turn": n, "pad": "y" * 90}, 0, 3)
    assert len(shared.records(store.ROUTES)) == 100
    later = postgres_store.Postgres(postgres)
    try:
        later.append_log(store.ROUTES, {"turn": 100, "pad": "y" * 90}, 1000, 1)
        turns = [r["turn"] for r in shared.records(store.ROUTES)]
        assert turns == list(range(101 - len(turns), 101)) and kept_bytes(shared, store.ROUTES) <= 2000
        assert [later._due(store.ROUTES, 50, 1000) for _ in range(4)] == [False, False, True, False]
    finally:
        later.close()


def panel(base, timeout=60):
    """A panel on bench/pair: `(status, body, seconds it took)`."""
    request = urllib.request.Request(base + "/v1/chat/completions", method="POST", headers={
        "Content-Type": "application/json"}, data=json.dumps({
            "model": "bench/pair", "messages": [{"role": "user", "content": "Review: print(xs[1:])"}]}).encode())
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read()), time.monotonic() - started
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read()), time.monotonic() - started


def test_a_panel_while_the_server_is_stopped_is_a_prompt_503_and_panels_resume_when_it_is_back(bench, monkeypatch):
    """The store's server stopped under a running gateway: each panel is refused with the store's 503, saying so,
    within BENCH_STORE_WAIT (never the pool's 30 s), until the pool has no connection left to try and waits its
    bound; once the server is back the same gateway answers panels again."""
    from conftest import running_gateway

    with pgserver.Cluster() as cluster:
        monkeypatch.setenv("BENCH_DATABASE_URL", cluster.url)
        monkeypatch.setenv("BENCH_STORE_WAIT", "2")
        store.reset()
        demo.set_collection("pair", ["alpha", "gamma"])
        with running_gateway() as srv:
            base = f"http://127.0.0.1:{srv.server_address[1]}"
            assert panel(base)[0] == 200
            cluster.halt()
            said = []
            while not any(postgres_store.WAITED.format(2) in message for message in said) and len(said) < 40:
                status, body, took = panel(base)
                assert status == 503 and took < 15, (status, body, took)
                said.append(body["error"]["message"])
            assert said[-1] == postgres_store.LOST.format(postgres_store.WAITED.format(2)), said
            assert all(message.startswith("the Postgres store cannot be reached: ") for message in said)
            cluster.resume()
            assert wait_for(lambda: panel(base)[0] == 200, 30)
    store.reset()


def test_a_lock_held_by_another_replica_is_refused_after_its_wait_naming_it(postgres, monkeypatch):
    """`locked()` waits BENCH_STORE_LOCK_WAIT for a lock another connection holds, then refuses with the store's
    503 naming the lock; this replica's own threads queued behind a holder are bounded the same way."""
    monkeypatch.setenv("BENCH_STORE_LOCK_WAIT", "1")
    holder, mine = postgres_store.Postgres(postgres), postgres_store.Postgres(postgres)
    held = postgres_store.HELD.format("pacing", 1)
    try:
        with holder.locked("pacing"):
            started = time.monotonic()
            with pytest.raises(errors.StoreUnavailable) as refused:
                with mine.locked("pacing"):
                    pass
            assert 0.9 < time.monotonic() - started < 10
            assert str(refused.value) == held == "the Postgres store's lock pacing stayed held for 1s " \
                "(BENCH_STORE_LOCK_WAIT)"
            assert errors.planned(refused.value).status == 503
            with mine.locked("another"):  # another name is not held
                pass

            def queued():
                with pytest.raises(errors.StoreUnavailable, match="lock pacing stayed held"):
                    with holder.locked("pacing"):
                        pass
            waiting = threading.Thread(target=queued)
            waiting.start()
            waiting.join(10)
            assert not waiting.is_alive()
        with mine.locked("pacing"):  # released: taken at once
            pass
    finally:
        holder.close()
        mine.close()


def test_a_document_write_held_up_by_a_lock_is_refused_after_the_lock_wait(postgres, monkeypatch):
    """Every lock the pool's connections wait for on the server is bounded too (a document's write, here)."""
    monkeypatch.setenv("BENCH_STORE_LOCK_WAIT", "1")
    mine = postgres_store.Postgres(postgres)
    try:
        with psycopg.connect(postgres) as holder:
            holder.execute("SELECT pg_advisory_xact_lock(hashtext('bench_records'), hashtext('config/ui.json'))")
            with pytest.raises(errors.StoreUnavailable) as refused:
                mine.update_json(("config", "ui.json"), lambda data: data.update(theme="dark"))
        assert str(refused.value) == postgres_store.HELD_SOMEWHERE.format(1)
        mine.update_json(("config", "ui.json"), lambda data: data.update(theme="dark"))
        assert mine.read_json(("config", "ui.json")) == {"theme": "dark"}
    finally:
        mine.close()


MONTH = (*store.USAGE, "2026-12.jsonl")


def test_append_all_writes_several_logs_in_order_in_one_round_trip(storage):
    """A panel seat's ledger and offload lines go in with one `append_all`: each log gets its lines, in order;
    on Postgres in one transaction, whose ids keep the order given and which other replicas hear of."""
    shared = store.current()
    shared.append_all([(MONTH, b'{"a": 1}\n'), (store.OFFLOADS, b'{"b": 1}\n{"b": 2}\n'), (MONTH, b'{"a": 2}\n')])
    shared.append_all([])
    assert shared.records(MONTH) == [{"a": 1}, {"a": 2}]
    assert shared.records(store.OFFLOADS) == [{"b": 1}, {"b": 2}]
    if storage == "postgres":
        _, rows = shared.since(store.OFFLOADS, 0)
        assert [json.loads(body) for _, body in rows] == [{"b": 1}, {"b": 2}] and rows[0][0] < rows[1][0]


def test_append_all_on_postgres_is_all_or_nothing_and_never_deadlocks(postgres_cluster):
    """A line the server refuses (here a constraint on a line's size) fails the whole call: neither log keeps a
    line of it. Two logs appended together in either order from many threads never wait on each other."""
    url = fresh_database(postgres_cluster, "together")
    shared = postgres_store.Postgres(url)
    try:
        shared.append_all([(MONTH, b'{"a": 1}\n'), (store.OFFLOADS, b'{"b": 1}\n')])
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER TABLE bench_lines ADD CONSTRAINT short_lines CHECK (octet_length(body) < 100)")
        with pytest.raises(psycopg.errors.CheckViolation):
            shared.append_all([(MONTH, b'{"a": 2}\n'), (store.OFFLOADS, b'{"b": "' + b"x" * 200 + b'"}\n')])
        assert list(shared.lines(MONTH)) == [b'{"a": 1}'] and list(shared.lines(store.OFFLOADS)) == [b'{"b": 1}']

        def write(n):
            pair = [(MONTH, b'{"a": %d}\n' % n), (store.OFFLOADS, b'{"b": %d}\n' % n)]
            shared.append_all(pair if n % 2 else pair[::-1])

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(write, range(200)))
        assert len(list(shared.lines(MONTH))) == len(list(shared.lines(store.OFFLOADS))) == 201
    finally:
        shared.close()


def test_append_all_on_the_folder_is_all_or_nothing_past_a_file_size_limit(home):
    """A real file-size limit (RLIMIT_FSIZE, in a child process) that the second file's lines pass: the first
    file's line, already written, is cut back too. Once the limit is gone both land whole."""
    offloads = paths.file(*store.OFFLOADS)
    offloads.parent.mkdir(parents=True, exist_ok=True)
    offloads.write_bytes(b'{"n": 0}\n' * 100)
    script = ("import sys; from benchwarmers.store import store; store.Folder().append_all("
              "[(('metrics', 'usage', '2026-12.jsonl'), b'{\"a\": 1}\\n'), (store.OFFLOADS, b'{\"b\": 2}\\n' * 20)])")

    def limit_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (950, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-c", script], preexec_fn=limit_files, capture_output=True, text=True)
    assert done.returncode == 1 and "File too large" in done.stderr, done.stderr
    assert paths.file(*MONTH).read_bytes() == b"" and offloads.read_bytes() == b'{"n": 0}\n' * 100
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert paths.file(*MONTH).read_bytes() == b'{"a": 1}\n'
    assert offloads.read_bytes() == b'{"n": 0}\n' * 100 + b'{"b": 2}\n' * 20


def test_a_held_ledger_line_is_written_with_its_callers_lines_and_then_released(storage):
    """`ledger.Held()`: a call's ledger line (and the pacing ticket that waits for it, LED-8) waits for the seat's
    `Held.write`, which writes it with the seat's offload line; a line still held at the end is written then."""
    released = []
    record = ledger.line(1_796_000_000, "alpha", "local", "http://x", "alpha", "ok", 1, {}, 0.1, "gateway")
    with ledger.Held() as held:
        assert ledger.write(record, [lambda: released.append(1)]) is True
        assert released == [] and list(ledger.rows()) == []
        held.write([(store.OFFLOADS, b'{"model": "alpha"}\n')])
        assert released == [1] and [row["alias"] for row in ledger.rows()] == ["alpha"]
        assert store.current().records(store.OFFLOADS) == [{"model": "alpha"}]
        ledger.write(record)
    assert [row["alias"] for row in ledger.rows()] == ["alpha", "alpha"]


def test_seats_appending_at_once_share_one_round_trip_and_a_refused_line_fails_only_its_own(postgres_cluster):
    """The group commit (`postgres.Together`): three callers whose lines wait while another round trip is in
    flight go in together, in one trip. When the server refuses one caller's line, the batch is written again
    caller by caller: the others' lines are kept and only that caller hears the refusal."""
    url = fresh_database(postgres_cluster, "batched")
    shared = postgres_store.Postgres(url)
    trips = []
    write = shared.together.write
    shared.together.write = lambda logs, lines: (trips.append(len(lines)), write(logs, lines))[1]
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER TABLE bench_lines ADD CONSTRAINT short_lines CHECK (octet_length(body) < 100)")

        def seat(n):
            body = b'{"b": "' + b"x" * 200 + b'"}' if n == 1 else b'{"b": %d}' % n
            shared.append_all([(MONTH, b'{"a": %d}\n' % n), (store.OFFLOADS, body + b"\n")])

        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            with shared.together.turn:  # a round trip in flight: the three seats' lines wait for the next
                futures = [pool.submit(seat, n) for n in range(3)]
                assert wait_for(lambda: len(shared.together.waiting) == 3)
            outcomes = [future.exception() for future in futures]
        assert outcomes[0] is None and outcomes[2] is None
        assert isinstance(outcomes[1], psycopg.errors.CheckViolation)
        assert trips[0] == 6 and sorted(trips[1:]) == [2, 2, 2]  # together, refused; then each on its own
        assert sorted(shared.records(MONTH), key=str) == [{"a": 0}, {"a": 2}]
        assert sorted(shared.records(store.OFFLOADS), key=str) == [{"b": 0}, {"b": 2}]

        trips.clear()
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            with shared.together.turn:
                futures = [pool.submit(seat, n) for n in (3, 4, 5)]
                assert wait_for(lambda: len(shared.together.waiting) == 3)
            assert [future.result() for future in futures] == [None] * 3
        assert trips == [6] and len(shared.records(store.OFFLOADS)) == 5
    finally:
        shared.close()


def test_a_server_lost_under_a_shared_round_trip_fails_every_caller_in_it(postgres_cluster):
    """The store's connections cut while three callers' lines wait for one round trip: each hears the server was
    lost (an OSError: a seat is then marked not logged), none of their lines is kept, and the next append lands."""
    shared = postgres_store.Postgres(fresh_database(postgres_cluster, "cutbatch"))
    try:
        shared.append_all([(store.OFFLOADS, b'{"n": 0}\n')])
        with psycopg.connect(postgres_cluster.url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'cutbatch'")
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            with shared.together.turn:
                futures = [pool.submit(shared.append_all, [(MONTH, b'{"a": %d}\n' % n),
                                                           (store.OFFLOADS, b'{"n": %d}\n' % n)]) for n in (1, 2, 3)]
                assert wait_for(lambda: len(shared.together.waiting) == 3)
            lost = [future.exception() for future in futures]
        assert all(isinstance(exc, errors.StoreUnavailable) for exc in lost), lost
        shared.append_all([(store.OFFLOADS, b'{"n": 4}\n')])
        assert shared.records(store.OFFLOADS) == [{"n": 0}, {"n": 4}] and shared.records(MONTH) == []
    finally:
        shared.close()
