"""One thread reads every reply body that nobody listens to while it arrives.

A seat's answer streams as ~150 small chunks. A thread blocked on each seat's socket wakes,
and takes the GIL, once per chunk: 775 wake-ups a panel, handed between five threads, were
most of the gateway's CPU. A body whose pieces nobody needs as they come (a panel seat: its
section goes out when it ends) is handed here instead: one thread waits on every such socket
with epoll, takes what has arrived on each, then pauses TICK so that its next wake-up finds
several chunks waiting, on several sockets. The caller's thread sleeps until BATCH pieces have
gathered (or the body has ended) and parses them in one go, so when the body ends at most a
batch is left to parse. TICK is the most a piece can wait for this thread: a section leaves
at most TICK later than it would have.

What the threaded reader (`transport.Body`) guarantees holds here too:
- each piece keeps the time it arrived, so a first token's time is the one on the wire;
- a body ends by its deadline (+ SCAN, how often deadlines and `transport.STOP` are checked), and as
  stalled when no byte came within its first-byte window (from the request) or its idle window (from
  the last byte): the window moves with each read's arrival time, so it costs no call per chunk;
- past an SSE `data: [DONE]` line the rest of the body has DRAIN seconds, then the connection
  is dropped rather than kept;
- a body over the size limit ends as too large; a server closing early, as incomplete.

Plain TCP only: a TLS socket can hold decrypted bytes that epoll cannot see, so TLS bodies,
and every body where epoll is missing (not Linux), keep the threaded reader (`usable()`).
"""

import http.client
import math
import os
import re
import select
import socket
import sys
import threading
import time

TICK = 0.001
SCAN = 0.05
BATCH = 32  # pieces that wake the waiting thread: fewer wake-ups, against more to parse once the body ends
READ_SIZE = 65_536
MAX_LINE = 65_536  # a chunk-size or trailer line longer than this is not HTTP
DONE_LINE = re.compile(rb"\ndata: ?\[DONE\]")


class TimedOut(TimeoutError):
    """The body's deadline passed, or the server is shutting down."""


class Stalled(TimeoutError):
    """No byte came within a call's first-byte or idle window: an error, where the overall deadline is a timeout."""

    def __init__(self, seconds, first):
        where = "after the request was sent (first_byte_timeout)" if first else "mid-reply (idle_timeout)"
        super().__init__(f"no bytes for {seconds:g} s {where}")


class TooLarge(ValueError):
    """The body grew past its size limit."""


def too_large(limit):
    return TooLarge(f"the reply is over {limit / 1_000_000:g} MB")


class Chunked:
    """Chunked transfer framing undone as bytes arrive: `<hex size>[;ext]CRLF <data> CRLF` ..., size 0,
    trailer lines, a blank line. `feed()` returns the data the new bytes complete."""

    def __init__(self):
        self.raw = b""  # bytes not decoded yet
        self.due = 0  # data bytes still due in the current chunk
        self.ending = False  # past the size-0 chunk: in the trailers
        self.complete = False

    def feed(self, data):
        raw = self.raw + data if self.raw else data
        at, due, out = 0, self.due, []
        while not self.complete:
            if due:
                piece = raw[at:at + due]
                if not piece:
                    break
                out.append(piece)
                at += len(piece)
                due -= len(piece)
                continue
            end = raw.find(b"\n", at)
            if end < 0:
                if len(raw) - at > MAX_LINE:
                    raise http.client.IncompleteRead(b"")
                break
            line = raw[at:end].strip()
            at = end + 1
            if self.ending:
                self.complete = not line
            elif line:  # a blank line is the CRLF that ends a chunk's data
                try:
                    due = int(line.split(b";", 1)[0], 16)
                except ValueError:
                    raise http.client.IncompleteRead(b"") from None
                if due < 0:
                    raise http.client.IncompleteRead(b"")
                self.ending = due == 0
        self.raw, self.due = raw[at:], due
        return out[0] if len(out) == 1 else b"".join(out)

    def closed(self):
        """The server closed the connection: whole only if it was within the trailers."""
        if not self.ending:
            raise http.client.IncompleteRead(b"")
        self.complete = True


class Gathered:
    """One body in the reader's care: its pieces with their arrival times, and how it ended."""

    def __init__(self, sock, chunked, length, deadline, limit, sse, drain, quiet_by=math.inf, first_byte=math.inf,
                 idle=math.inf):
        self.sock = sock
        self.fd = sock.fileno()
        self.framing = Chunked() if chunked else None
        self.left = None if chunked else length  # bytes due in a sized body; None: up to the close
        self.deadline = deadline
        self.quiet_by = quiet_by  # when the next byte is due: the request's first-byte window, then `idle` per read
        self.first_byte = first_byte
        self.idle = idle
        self.limit = limit
        self.sse = sse
        self.drain = drain
        self.draining = False
        self.tail = b"\n"  # the start of a body is the start of a line
        self.pieces = []
        self.total = 0
        self.complete = False
        self.error = None
        self.done = threading.Event()
        # released when a batch is waiting or the body has ended; the waiter's acquire takes the signal.
        # A bare lock, not an Event: an Event's wait and set run Python-level Condition code each time.
        self.fresh = threading.Lock()
        self.fresh.acquire()

    def signal(self):
        try:
            self.fresh.release()
        except RuntimeError:
            pass  # signalled already, and not taken yet

    def end(self):
        self.done.set()
        self.signal()

    def take(self, data, now):
        """Take one read's bytes (b"" when the server closed); True once the body has ended."""
        try:
            return self._take(data, now)
        except (http.client.HTTPException, ValueError) as exc:
            self.error = exc
            return True

    def _take(self, data, now):
        if not data:
            if self.framing is not None:
                self.framing.closed()
            elif self.left:
                raise http.client.IncompleteRead(b"", self.left)
            self.complete = True
            return True
        self.total += len(data)
        self.quiet_by = now + self.idle
        if self.total > self.limit:
            raise too_large(self.limit)
        if self.framing is not None:
            data = self.framing.feed(data)
            self.complete = self.framing.complete
        elif self.left is not None:
            data = data[:self.left]
            self.left -= len(data)
            self.complete = self.left == 0
        if data:
            self.pieces.append((now, data))
            if len(self.pieces) >= BATCH:
                self.signal()
            if self.sse and not self.draining:
                seen = self.tail + data
                if b"[DONE]" in seen and DONE_LINE.search(seen):
                    self.draining = True
                    self.deadline = min(self.deadline, now + self.drain)
                self.tail = seen[-16:]
        return self.complete

    def expire(self, now, stopping):
        """A deadline passed: after `[DONE]` the body is over (not whole); otherwise it timed out, or stalled
        when only its quiet window ran out."""
        if stopping or (not self.draining and now >= self.deadline):
            self.error = TimedOut()
        elif not self.draining:
            self.error = Stalled(self.idle if self.total else self.first_byte, not self.total)


def usable(sock):
    return _HAS_EPOLL and type(sock) is socket.socket


class Reader:
    """The one thread, its epoll set and the bodies in its care (by file descriptor)."""

    def __init__(self, stop):
        self.stop = stop  # set when the server shuts down: every body ends as timed out
        self.bodies = {}
        self.lock = threading.Lock()
        self.epoll = None
        self.thread = None
        self.idle = True

    def _start(self):
        self.epoll = select.epoll()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        self.epoll.register(self.wake_r, select.EPOLLIN)
        self.thread = threading.Thread(target=self._run, name="gather", daemon=True)
        self.thread.start()

    def add(self, body):
        with self.lock:
            if self.thread is None:
                self._start()
            self.bodies[body.fd] = body
            self.epoll.register(body.fd, select.EPOLLIN)
        if self.idle:  # the loop may be waiting with no timeout: it must start checking deadlines
            os.write(self.wake_w, b".")

    def drop(self, body):
        """Take `body` back before its socket closes (its waiter gave up)."""
        with self.lock:
            if self.bodies.get(body.fd) is body:
                del self.bodies[body.fd]
                self.epoll.unregister(body.fd)

    def _end(self, body):
        self.drop(body)
        body.end()

    def _run(self):
        next_scan = 0.0
        while True:
            self.idle = True
            timeout = -1
            if self.bodies:
                self.idle = False
                timeout = max(0.0, min(SCAN, next_scan - time.monotonic()))
            events = self.epoll.poll(timeout)
            now = time.monotonic()
            for fd, _ in events:
                if fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                else:
                    self._read(fd, now)
            if now >= next_scan:
                self._scan(now)
                next_scan = now + SCAN
            if len(events) > 1 or events and events[0][0] != self.wake_r:
                time.sleep(TICK)  # let more chunks arrive, so the next wake-up takes several

    def _read(self, fd, now):
        body = self.bodies.get(fd)
        if body is None:
            return
        try:
            data = body.sock.recv(READ_SIZE)
        except BlockingIOError:
            return
        except OSError as exc:
            body.error = exc
            self._end(body)
            return
        try:
            ended = body.take(data, now)
        except Exception as exc:  # a bug must end this body, not the thread every body depends on
            body.error, ended = exc, True
        if ended:
            self._end(body)

    def _scan(self, now):
        stopping = self.stop.is_set()
        for body in list(self.bodies.values()):
            if stopping or now >= body.deadline or now >= body.quiet_by:
                body.expire(now, stopping)
                self._end(body)


_HAS_EPOLL = hasattr(select, "epoll") and sys.platform.startswith("linux")
