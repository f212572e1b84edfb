"""Daemon threads kept for the next job (metrics/core/threads.py): the gateway's connections and streamed
panels run on them, so a thread that ends its job must take the next, jobs at once must each get a thread,
and a thread nobody needs must end."""

import threading
import time

from benchwarmers.core import threads


def until(check, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_finished_thread_takes_the_next_job():
    kept = threads.Threads("test-kept")
    ran = []
    kept.run(lambda: ran.append(threading.get_ident()))
    until(lambda: len(kept.waiting) == 1)
    kept.run(lambda: ran.append(threading.get_ident()))
    until(lambda: len(ran) == 2 and len(kept.waiting) == 1)
    assert ran[0] == ran[1]
    assert all(t.daemon for t in threading.enumerate() if t.name == "test-kept")


def test_jobs_at_once_each_get_a_thread():
    kept = threads.Threads("test-busy")
    release = threading.Event()
    started = []

    def job():
        started.append(threading.get_ident())
        release.wait(5)

    for _ in range(3):
        kept.run(job)
    until(lambda: len(started) == 3)  # none waits for another to finish
    assert len(set(started)) == 3
    release.set()
    until(lambda: len(kept.waiting) == 3)


def test_a_thread_left_idle_ends_and_a_job_still_runs_after():
    kept = threads.Threads("test-idle", idle=0.05)
    done = threading.Event()
    kept.run(lambda: None)
    until(lambda: len(kept.waiting) == 1)
    until(lambda: not kept.waiting and not any(t.name == "test-idle" for t in threading.enumerate()))
    kept.run(done.set)
    assert done.wait(5)
