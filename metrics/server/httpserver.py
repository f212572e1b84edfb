"""The HTTP server both ports run on: the stdlib's, with the limits it lacks (security.md §15).

`Server` is a `ThreadingHTTPServer` (one daemon thread per connection, kept for the next connection once
its own closes: `core.threads`, issue 35) and `Handler` the base of `server.routing.Handler`, which both
ports run. What they add, each so that a client cannot hold a thread or bend a reply:

- Kept connections (issue 35, SRV-1): an HTTP/1.0 request is answered in HTTP/1.0 and closed, as
  before. An HTTP/1.1 connection carries another request only after a reply with a Content-Length
  to a request read whole (`keeps()`): no `Transfer-Encoding`, no body on a GET, not a HEAD, at
  most `MAX_REQUESTS`, the next one due within `KEEP_IDLE`. Everything else, streams among them,
  says `Connection: close` and ends at the close, so no byte of one request is read as the next.

- Read deadlines (improvement 1): the request line and headers must arrive within
  `Server.read_timeout` seconds of the connection, however slowly they trickle; a body
  within `read_timeout` plus one second for each `MIN_RATE` bytes that have arrived
  (issue 21: the bytes received, not the length declared, which let a client declaring
  20 MB hold its thread 430 s), and no read waits longer than `read_timeout`. A client
  that misses one is dropped without a reply (stdlib's own "Request timed out"
  diagnostic). Once the request is read, replies get `WRITE_TIMEOUT` per write, so a
  stream to a client that stopped reading ends too.
- A connection cap (improvement 2): beyond `Server.max_connections` open connections
  a new one is answered 503 with `Retry-After` by a short-lived thread that reads the
  request head (or waits `BUSY_WAIT`), replies, and drains until the client closes,
  so the 503 is not lost to a TCP reset. At most `MAX_REFUSERS` such threads run; a
  flood beyond that is closed unanswered, the one case of a silent drop. The 503 body
  is the chat error shape; a subclass changes `busy_body()`.
- A cap per client address (issue 21): beyond `Server.max_per_address` open connections
  from one address (`BENCH_MAX_PER_ADDRESS`, read at start; default 128, half the
  connection cap) a new one from it gets the same 503, so one client cannot fill the cap
  before any key check. An IPv6 client counts by its /64, which one host may hold whole.
  Every client on this machine shares 127.0.0.1 (the benchmark runs 64 at once), and
  behind a proxy every client shares the proxy's address: raise it there (SECURITY.md).
- Smaller head limits (improvement 3): request line over `MAX_LINE` bytes → 414; a
  header line over `MAX_LINE`, more than `MAX_HEADERS` headers or a head over
  `MAX_HEAD` bytes → 431 (stdlib's HTML error page, as for its own limits).
- HEAD is answered as GET without a body (improvement 23).
- `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY` and
  `Content-Security-Policy: frame-ancestors 'none'` on every reply (improvement 6).
- The `Server` header only once the caller is identified (`who` set), never on a
  refusal before that or on an open route (improvement 19).
- A header name or value holding CR or LF raises instead of being written (improvement 5).
- Access log and diagnostics through `server.guard` (LOG-1..5); the client address with `BENCH_LOG_ADDRESS=1`;
  a handler's crash through `core.console`, every control character escaped (issue 29 item 8).
- Worker processes (`share()`): one Python process cannot use more than about one core (the
  GIL), so `python gateway.py --workers N` forks N-1 copies that accept on the same listening
  socket. Everything they share is in the data folder, written under file locks, as the gateway
  and the dashboard already share it; the connection cap and the admin-token backoff count per process.

Tests shorten the deadlines by setting `server.read_timeout` on a running server.
"""

import contextlib
import functools
import io
import ipaddress
import json
import os
import signal
import socket
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..core import console, settings, threads
from . import guard

READ_TIMEOUT = 30.0
WRITE_TIMEOUT = 300.0
MIN_RATE = 50_000
MAX_CONNECTIONS = 256
MAX_PER_ADDRESS = int(settings.default("BENCH_MAX_PER_ADDRESS"))
MAX_REFUSERS = 64
BUSY_WAIT = 1.0
LINGER = 1.0
LINGER_BYTES = 1_000_000
BUSY_RETRY = 1
MAX_LINE = 8192
MAX_HEAD = 65536
MAX_HEADERS = 100
KEEP_IDLE = 5.0  # the most a kept connection waits for its next request
MAX_REQUESTS = 100  # requests one kept connection may carry; the last reply says `Connection: close`


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes where each read waits at most what is left of a deadline, and at most `idle`.

    With a `rate`, each byte received moves the deadline on by 1/`rate` seconds: a client keeps
    its thread only while it sends at least that fast on average.
    """

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.sock = sock
        self.restart(seconds, seconds)

    def restart(self, seconds: float, idle: float, rate: float = 0) -> None:
        self.deadline = time.monotonic() + seconds
        self.idle = idle
        self.rate = rate

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = min(self.deadline - time.monotonic(), self.idle)
        if left <= 0:
            raise TimeoutError("the client sent too slowly")
        self.sock.settimeout(left)
        received = self.sock.recv_into(buffer)
        if self.rate:
            self.deadline += received / self.rate
        return received


class _Discard(io.BufferedIOBase):
    """Where a HEAD reply's body goes once its headers are out."""

    def write(self, data: Any, /) -> int:
        return len(data)


class Handler(BaseHTTPRequestHandler):
    server: "Server"
    protocol_version = "HTTP/1.0"
    who = "-"
    # a kept connection's reply goes out as head then body: with Nagle the body would wait for the head's delayed ACK
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.reader = _DeadlineReader(self.connection, self.server.read_timeout)
        self.rfile = io.BufferedReader(self.reader)
        self.unread = True  # the client may still be sending: drain before closing (see finish)
        self.served = 0  # requests taken on this connection

    def finish(self) -> None:
        """Close without a TCP reset: a reply sent before the whole request was read (414, 431, a
        refused POST) would otherwise be lost to the reset that closing over unread bytes causes."""
        super().finish()
        if not self.unread:
            return
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_WR)
            deadline, drained = time.monotonic() + LINGER, 0
            while time.monotonic() < deadline and drained < LINGER_BYTES:
                self.connection.settimeout(max(deadline - time.monotonic(), 0.01))
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)

    def handle_one_request(self) -> None:
        """The stdlib's loop step with this module's head limits and deadlines, on a connection kept between
        requests (issue 35) when `keeps()` allows."""
        self.who = "-"  # SRV-1: each request on a kept connection names its own caller
        self.sized = self.said_close = False
        if self.served:
            timeout = self.server.read_timeout
            self.reader.restart(timeout, min(KEEP_IDLE, timeout))
        try:
            try:
                self.raw_requestline = self.waiting_line()
            except OSError:  # a timeout among them
                if not self.served:
                    raise
                self.close_connection, self.unread = True, False  # a kept connection left idle ends quietly
                return
            # a reply speaks the request's version: HTTP/1.0 (and anything unknown) as before, HTTP/1.1 may keep
            self.protocol_version = "HTTP/1.1" if self.raw_requestline.split()[-1:] == [b"HTTP/1.1"] else "HTTP/1.0"
            if len(self.raw_requestline) > MAX_LINE:
                self.requestline = self.request_version = self.command = ""
                self.path = ""
                return self.send_error(414)
            if not self.raw_requestline:
                self.close_connection = True
                return
            head, problem = self.read_head()
            if problem:
                words = self.raw_requestline.decode("iso-8859-1").split()
                self.requestline, self.request_version = "", ""
                self.command, self.path = (words[0], words[1]) if len(words) == 3 else ("", "")
                return self.send_error(431, problem)
            body = self.rfile
            self.rfile = io.BytesIO(head)  # parse_request reads the head again, from memory
            try:
                parsed = self.parse_request()
            finally:
                self.rfile = body
            if not parsed:
                return
            self.served += 1
            # a declared body nobody reads (a GET's, a refused POST's) is drained at the close, never read as a request
            self.unread = (guard.content_length(self.headers) != 0
                           or self.headers.get("Transfer-Encoding") is not None)
            self.connection.settimeout(WRITE_TIMEOUT)
            method = getattr(self, "do_" + self.command, None)
            if method is None:
                return self.send_error(501, f"Unsupported method ({self.command!r})")
            method()
            self.wfile.flush()
        except TimeoutError as exc:
            self.log_error("Request timed out: %r", exc)
            self.close_connection = True
            self.unread = False  # a slow client is not waited for again

    def waiting_line(self) -> bytes:
        """The request line; a kept connection waits for it among the server's idle ones, which a stopping
        server ends at once (`Server.server_close`) instead of waiting out their KEEP_IDLE."""
        if not self.served:
            return self.rfile.readline(MAX_LINE + 1)
        with self.server.count_lock:
            if self.server.closing:  # the server stopped while this reply was written: no next request
                return b""
            self.server.idle.add(self.connection)
        try:
            return self.rfile.readline(MAX_LINE + 1)
        finally:
            with self.server.count_lock:
                self.server.idle.discard(self.connection)

    def read_head(self) -> tuple[bytes, str]:
        """The header lines up to the blank one: `(bytes, "")`, or `(b"", why)` beyond the limits."""
        lines, size = [], 0
        while True:
            line = self.rfile.readline(MAX_LINE + 1)
            if len(line) > MAX_LINE:
                return b"", "Line too long"
            size += len(line)
            lines.append(line)
            if line in (b"\r\n", b"\n", b""):
                return b"".join(lines), ""
            if len(lines) > MAX_HEADERS:
                return b"", "Too many headers"
            if size > MAX_HEAD:
                return b"", "Headers too large"

    def keeps(self) -> bool:
        """Whether the connection may carry another request after this reply: an HTTP/1.1 request that did not ask
        to close, whose body (if any) is read whole, answered with a Content-Length, not a HEAD, and not the last
        of MAX_REQUESTS. A stream (no length) ends at the close (FMT-1); a body left unread (a GET's, a refused
        POST's) or a `Transfer-Encoding` would be read as the next request, so either ends the connection."""
        headers = getattr(self, "headers", None)
        return (self.protocol_version == "HTTP/1.1" and not self.close_connection and self.sized
                and not self.unread and self.command != "HEAD" and self.served < MAX_REQUESTS
                and headers is not None and headers.get("Transfer-Encoding") is None)

    def handle_expect_100(self) -> bool:
        """No `100 Continue`: the checks that may refuse a body run before it is read, as they did over HTTP/1.0."""
        return True

    def read_body(self, length: int) -> bytes:
        """Exactly `length` body bytes, by a deadline that grows with the bytes received (improvement 1)."""
        timeout = self.server.read_timeout
        self.reader.restart(timeout, timeout, MIN_RATE)
        data = self.rfile.read(length) if length else b""
        self.unread = False
        self.connection.settimeout(WRITE_TIMEOUT)
        return data

    def do_HEAD(self) -> None:
        if not hasattr(self, "do_GET"):
            return self.send_error(501, "Unsupported method ('HEAD')")
        self.do_GET()

    def send_header(self, keyword: str, value: object) -> None:
        value = str(value)
        if "\r" in keyword or "\n" in keyword or "\r" in value or "\n" in value:
            raise ValueError(f"refusing to write header {keyword!r}: it holds CR or LF")
        name = keyword.lower()
        self.sized = self.sized or name == "content-length"
        self.said_close = self.said_close or (name == "connection" and value.lower() == "close")
        super().send_header(keyword, value)

    def send_response(self, code: int, message: str | None = None) -> None:
        self.log_request(code)
        self.send_response_only(code, message)
        if self.who != "-":
            self.send_header("Server", self.version_string())
        self.send_header("Date", self.date_time_string())

    def end_headers(self) -> None:
        if not self.keeps():
            self.close_connection = True
            if self.protocol_version == "HTTP/1.1" and not self.said_close:
                self.send_header("Connection", "close")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy", "frame-ancestors 'none'")
        super().end_headers()
        if self.command == "HEAD":
            self.wfile = _Discard()

    def address(self) -> str:
        """The client's address as the access log and the login backoff know it."""
        return guard.client_address(getattr(self, "headers", None) or {}, self.client_address[0])

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        address = self.address() if guard.log_address() else ""
        guard.log(guard.access_line(self.command, getattr(self, "path", "") or "", code, self.who, address))

    def log_message(self, format: str, *args: Any) -> None:
        guard.log(f"{self.log_date_time_string()} {guard.mask_secrets(format % args)}")


# every server's connection threads, kept for the next connection to any of them (a process's servers share them)
CONNECTIONS = threads.Threads("connection")


class Server(ThreadingHTTPServer):
    """One thread per connection up to `max_connections` (`max_per_address` from one client address), each kept
    for the next connection once its own closes (`threads`), a deep listen backlog so bursts queue."""

    daemon_threads = True
    request_queue_size = 1024
    allow_reuse_address = True
    parent_alive: int | None = None  # with worker processes: the pipe whose close tells them to stop
    read_timeout = READ_TIMEOUT
    max_connections = MAX_CONNECTIONS

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        host = address[0].strip("[]")
        try:
            if ipaddress.ip_address(host).version == 6:  # gateway IMP-18
                self.address_family = socket.AF_INET6
        except ValueError:
            pass
        self.open = 0
        self.refusers = 0
        self.per_address: dict[str, int] = {}  # address key -> connections open from it
        self.idle: set[socket.socket] = set()  # kept connections waiting for their next request
        self.closing = False  # set by server_close: no kept connection waits for another request after it
        self.max_per_address = per_address_setting()
        self.count_lock = threading.Condition()  # notified as connections close: a stopping server waits
        super().__init__((host, address[1]), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A handler's crash on stderr, as the stdlib writes it but through `console.say`: the exception's message
        may quote a request or an upstream (LOG-7)."""
        console.say("-" * 40, f"Exception occurred during processing of request from {client_address}",
                    *traceback.format_exc().splitlines(), "-" * 40)

    def address_key(self, client_address: Any) -> str:
        """What a client's connections are counted under: its address, an IPv6 one by its /64 (the login
        backoff groups clients the same way)."""
        return guard.client_group(client_address[0])

    def process_request(self, request: Any, client_address: Any) -> None:
        key = self.address_key(client_address)
        with self.count_lock:
            held = self.per_address.get(key, 0)
            crowded = held >= self.max_per_address
            busy = crowded or self.open >= self.max_connections
            if not busy:
                self.open += 1
                self.per_address[key] = held + 1
            elif self.refusers < MAX_REFUSERS:
                self.refusers += 1
            else:
                return self.shutdown_request(request)
        if busy:
            threading.Thread(target=self.turn_away, args=(request, client_address, crowded), daemon=True).start()
            return
        try:
            # a waiting thread takes the connection: starting one per connection cost 0.5-1 ms on a busy machine
            CONNECTIONS.run(functools.partial(self.process_request_thread, request, client_address))
        except Exception:
            self._closed_one(key)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._closed_one(self.address_key(client_address))

    def _closed_one(self, key: str) -> None:
        with self.count_lock:
            self.open -= 1
            left = self.per_address[key] - 1
            if left:
                self.per_address[key] = left
            else:
                del self.per_address[key]
            self.count_lock.notify_all()

    def server_close(self) -> None:
        """Stop listening, and end the kept connections that wait for a next request: none may start now."""
        super().server_close()
        with self.count_lock:
            self.closing = True
            idle = list(self.idle)
        for sock in idle:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def wait_closed(self, timeout: float) -> bool:
        """True once every connection this server took has closed, False after `timeout` seconds."""
        with self.count_lock:
            return self.count_lock.wait_for(lambda: self.open == 0, timeout)

    def busy_body(self, crowded: bool = False) -> bytes:
        if crowded:
            message = (f"too many connections from your address ({self.max_per_address} open); "
                       f"try again in {BUSY_RETRY}s")
        else:
            message = f"the server is busy ({self.max_connections} connections open); try again in {BUSY_RETRY}s"
        return json.dumps({"error": {"message": message, "type": "bench_gateway", "code": 503}}).encode()

    def turn_away(self, request: socket.socket, client_address: Any, crowded: bool = False) -> None:
        """503 + Retry-After for a connection over the cap, without a handler thread's deadlines."""
        try:
            head = b""
            deadline = time.monotonic() + BUSY_WAIT
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in head and len(head) < MAX_HEAD and time.monotonic() < deadline:
                    request.settimeout(max(deadline - time.monotonic(), 0.01))
                    chunk = request.recv(8192)
                    if not chunk:
                        break
                    head += chunk
            body = self.busy_body(crowded)
            reply = (f"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nRetry-After: {BUSY_RETRY}\r\nConnection: close\r\n"
                     "X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n\r\n").encode() + body
            words = head.split(b"\r\n", 1)[0].decode("iso-8859-1").split()
            method, path = (words[0], words[1]) if len(words) == 3 else ("-", "")
            guard.log(guard.access_line(method, path, 503, "-", client_address[0]))
            with contextlib.suppress(OSError):
                request.settimeout(BUSY_WAIT)
                request.sendall(reply)
                request.shutdown(socket.SHUT_WR)
                # drain until the client closes, so closing here does not reset the reply away
                deadline = time.monotonic() + BUSY_WAIT
                while time.monotonic() < deadline and request.recv(8192):
                    pass
        finally:
            request.close()
            with self.count_lock:
                self.refusers -= 1


def per_address_setting() -> int:
    """`BENCH_MAX_PER_ADDRESS`, read when a server starts: a whole number of at least 1, else the default."""
    value = settings.env("BENCH_MAX_PER_ADDRESS").strip()
    if value.isascii() and value.isdigit() and int(value) >= 1:
        return int(value)
    guard.log(f"warning: BENCH_MAX_PER_ADDRESS={value!r} is not a whole number of at least 1; "
              f"using {MAX_PER_ADDRESS}")
    return MAX_PER_ADDRESS


def share(server: Server, extra: int) -> list[int] | None:
    """Fork `extra` processes that serve `server`'s listening socket too.

    Returns the children's pids in the parent and None in a child. Call it before any thread
    starts: a fork copies only the calling thread, and a lock another thread held stays held.
    A child shuts its server down when the parent's end of a pipe closes, however the parent ends.
    """
    if threading.active_count() != 1:
        raise RuntimeError("worker processes must be forked before any thread starts")
    # every process polls the socket: the ones that lose a connection's race must not block in accept
    server.socket.setblocking(False)
    alive, held = os.pipe()
    children = []
    for _ in range(extra):
        pid = os.fork()
        if pid == 0:
            os.close(held)
            threading.Thread(target=_stop_with_parent, args=(server, alive), name="parent-watch",
                             daemon=True).start()
            return None
        children.append(pid)
    os.close(alive)
    server.parent_alive = held  # closed when the parent exits, which tells every child to stop
    return children


def _stop_with_parent(server: Server, alive: int) -> None:
    while os.read(alive, 1):
        pass
    server.shutdown()


def release(server: Server) -> None:
    """Tell the forked workers to stop (each drains its own work), without waiting for them."""
    if server.parent_alive is not None:
        os.close(server.parent_alive)
        server.parent_alive = None


def reap(server: Server, children: list[int], timeout: float = 10.0) -> None:
    """Stop the forked workers and wait for them; any still running after `timeout` seconds is killed."""
    release(server)
    waiters = [threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True) for pid in children]
    for waiter in waiters:
        waiter.start()
    deadline = time.monotonic() + timeout
    for pid, waiter in zip(children, waiters):
        waiter.join(max(0.0, deadline - time.monotonic()))
        if waiter.is_alive():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            waiter.join(timeout)  # its waitpid reaps the killed worker
