"""Daemon threads kept for the next job (issue 35).

Starting a thread makes its starter wait until the new thread has run: two turns of the scheduler
before either goes on. On a busy machine that cost a connection 0.5-1 ms before its request was read,
and a streamed panel as much again before it was planned. `Threads.run(job)` hands `job` to a thread
that finished its last one and waits for another, and starts a thread only when none is waiting; a
thread left waiting for `idle` seconds ends. The threads are daemons, as the ones started per job
were: a process that exits does not wait for them.
"""

import queue
import threading
from collections.abc import Callable

IDLE = 60.0


class _Waiting:
    """One kept thread's own hand-off: the job it is given next."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()


class Threads:
    """Daemon threads that run jobs, each thread one job at a time; as many threads as jobs run at once."""

    def __init__(self, name: str, idle: float = IDLE) -> None:
        self.name = name
        self.idle = idle
        self.waiting: list[_Waiting] = []
        self.lock = threading.Lock()

    def run(self, job: Callable[[], object]) -> None:
        """Run `job` on a waiting thread, or on a new one when none waits."""
        with self.lock:
            kept = self.waiting.pop() if self.waiting else None
        if kept is not None:
            kept.jobs.put(job)
        else:
            threading.Thread(target=self._serve, args=(_Waiting(), job), name=self.name, daemon=True).start()

    def _serve(self, kept: _Waiting, job: Callable[[], object]) -> None:
        while True:
            job()
            del job  # what the job holds (a connection, a request) is not kept while the thread waits
            with self.lock:
                self.waiting.append(kept)
            try:
                job = kept.jobs.get(timeout=self.idle)
            except queue.Empty:
                with self.lock:
                    if kept in self.waiting:  # nobody chose this thread meanwhile: it ends
                        self.waiting.remove(kept)
                        return
                job = kept.jobs.get()  # chosen just as its wait ran out: the job is on its way
