"""The HTTP transport under the model client: requests to an upstream and their replies' bodies (CL, STR, RET).

It knows a URL, headers, bytes and a deadline, and nothing of models, registrations or keys, so that
the registry (model listings, `get()`) and the client (`calling.client`) both stand on it and neither
reaches up into the other. What it guarantees:

- one deadline bounds everything: connecting, every read (the socket timeout follows the time
  left, so a server trickling bytes cannot hold a call);
- a call's first-byte and idle windows (issue 12) end a read that waits too long as `Stalled`;
  they ride on the reads' socket timeouts, as the deadline does: no extra call per chunk;
- `STOP`, set by a server shutting down, ends every read in flight as timed out (CL-7);
- redirects are never followed, so a key only ever reaches the host it was meant for.

Connections are kept alive in a pool shared by threads: a connection serves one
request at a time and goes back only when its reply was read to the end and the
server did not ask to close. A panel pays connection set-up once, not per seat.
A reply nobody listens to as it streams is read by the one reader thread of
metrics/net/gather.py instead of its caller's.
"""

import functools
import http.client
import math
import select
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

from . import gather
from .gather import Stalled, TimedOut

READ_SIZE = 65_536
WAITING_READ = 4096  # a Body's own buffer: one is held per seat in flight, and a stream's chunks are small
MAX_REPLY = 32_000_000
MIN_SOCKET_TIMEOUT = 0.01
TIMEOUT_STEP = 0.05  # how far a read may outlast the deadline, so the socket timeout is rarely set again
DRAIN = 0.25  # how long the end of a body may take after [DONE] before the connection is dropped
IDLE_PER_HOST = 32
USER_AGENT = "benchwarmers"

STOP = threading.Event()  # set by a server shutting down: every call in flight ends as timed out (CL-7)
READER = gather.Reader(STOP)  # reads the bodies nobody listens to while they arrive


class HTTPError(OSError):
    """A non-2xx answer to `get()` (a redirect included: it is never followed)."""

    def __init__(self, url, code, headers, body):
        super().__init__(f"{url} answered {code}")
        self.url = url
        self.code = code
        self.headers = headers
        self.body = body


# ---------------------------------------------------------------- connections

_tls_context = None


def _tls():
    global _tls_context
    if _tls_context is None:
        _tls_context = ssl.create_default_context()
    return _tls_context


def _usable(conn):
    """An idle connection is usable while nothing is waiting to be read: readable means closed (or junk)."""
    if conn.sock is None:
        return False
    try:
        return not select.select([conn.sock], [], [], 0)[0]
    except (OSError, ValueError):
        return False


class Pool:
    """Idle keep-alive connections per (scheme, host, port), shared by threads."""

    def __init__(self, per_host=IDLE_PER_HOST):
        self.per_host = per_host
        self._idle = {}
        self._lock = threading.Lock()

    def take(self, key):
        """An idle connection to `key` that still looks open, or None."""
        while True:
            with self._lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None or _usable(conn):
                return conn
            conn.close()

    def give(self, key, conn):
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.per_host:
                idle.append(conn)
                return
        conn.close()

    def clear(self):
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()


POOL = Pool()


def _split(url):
    """`((scheme, host, port), request target)`; ValueError for a URL that cannot be sent to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"cannot send to '{url}'")
    port = parts.port or (443 if scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return (scheme, parts.hostname, port), target


def _connection(key):
    scheme, host, port = key
    if scheme == "https":
        return http.client.HTTPSConnection(host, port, context=_tls())
    return http.client.HTTPConnection(host, port)


class Sent:
    """A request on the wire whose answer has not been read: what `response()` needs to read it,
    or to send it again on a fresh connection when a pooled one turns out to have been closed."""

    def __init__(self, key, conn, method, target, data, headers, left, pooled):
        self.key, self.conn, self.pooled = key, conn, pooled
        self.method, self.target, self.data, self.headers, self.left = method, target, data, headers, left
        self.sock = None


class _Layout(http.client.HTTPConnection):
    """Lays out a request's head with http.client's own checks (a header name or value that could split
    the request is refused as it would be there), and sends nothing."""

    def __init__(self, key):
        scheme, host, port = key
        super().__init__(host, port)
        self.default_port = 443 if scheme == "https" else 80  # the Host header names a port only when it is not
        self.head = b""

    def send(self, data):
        self.head += data


@functools.lru_cache(maxsize=256)
def _head(key, method, target, headers):
    """A request's head up to its Content-Length, laid out once for each destination, target and set of
    headers (issue 35): a changed key or endpoint is another set, so it is never sent with a stale head."""
    layout = _Layout(key)
    named = {name.lower() for name, _ in headers}
    layout.putrequest(method, target, skip_host="host" in named, skip_accept_encoding="accept-encoding" in named)
    for name, value in headers:
        layout.putheader(name, value)
    layout.endheaders()
    return layout.head[:-2]  # without the blank line that ends it


def _request_bytes(sent):
    """The request as one write: a head and its body sent apart wait on each other's ACKs."""
    head = _head(sent.key, sent.method, sent.target, tuple(sent.headers.items()))
    data = sent.data or b""
    if sent.data is None and sent.method not in ("PATCH", "POST", "PUT"):
        return head + b"\r\n"
    return b"%sContent-Length: %d\r\n\r\n%s" % (head, len(data), data)


def _write(sent):
    conn = sent.conn
    conn.timeout = _socket_timeout(sent.left())  # bounds connecting when the connection is new
    if conn.sock is None:
        conn.connect()
        # a request is one write, but a kept connection's next one must not wait for the last one's ACK
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sock.settimeout(conn.timeout)
    conn.sock.sendall(_request_bytes(sent))
    sent.sock = conn.sock  # kept: a `Connection: close` reply takes it off `conn` but it is still read


def _afresh(sent):
    """Send again on a new connection: the pooled one had been closed by the server (not an attempt)."""
    sent.conn.close()
    sent.conn, sent.pooled = _connection(sent.key), False
    _write(sent)


def send(method, url, headers, data, left, connect=True):
    """Send one request on an idle pooled connection, else a new one; returns its `Sent`.

    With `connect` False it is sent only on an idle connection (None when there is none): a caller that
    sends for several others must not make them wait while it opens a connection (a TLS handshake).
    """
    key, target = _split(url)
    conn = POOL.take(key)
    if conn is None and not connect:
        return None
    sent = Sent(key, conn or _connection(key), method, target, data, headers, left, conn is not None)
    try:
        try:
            _write(sent)
        except ConnectionError:
            if not sent.pooled:
                raise
            _afresh(sent)
    except BaseException:
        sent.conn.close()
        raise
    return sent


def response(sent):
    """`(pool key, connection, response, socket)` once the status line and headers are in.

    A pooled connection that fails before any answer (the server had closed it) is tried once
    more on a fresh one: the caller does not count that as an attempt.
    """
    try:
        try:
            sent.conn.sock.settimeout(_socket_timeout(sent.left()))
            resp = _response(sent)
        except ConnectionError:
            if not sent.pooled:
                raise
            _afresh(sent)
            resp = _response(sent)
    except BaseException:
        sent.conn.close()
        raise
    return sent.key, sent.conn, resp, sent.sock


def _response(sent):
    """The reply's status line and headers, read as `getresponse()` would; the request went out as bytes,
    past http.client's own bookkeeping, so the connection is closed here when the reply asks for it."""
    resp = http.client.HTTPResponse(sent.sock, method=sent.method)
    try:
        resp.begin()
    except BaseException:
        resp.close()
        raise
    if resp.will_close:
        sent.conn.close()
    return resp


def _socket_timeout(left):
    return max(left, MIN_SOCKET_TIMEOUT)


def release(key, conn, body):
    """Put the connection back only when its reply was read to the end and the server keeps it open."""
    body.close()
    if body.complete and not body.resp.will_close and conn.sock is not None:
        POOL.give(key, conn)
    else:
        conn.close()


# ---------------------------------------------------------------- deadlines


class Deadline:
    """One call's time limits as its reads keep them: the overall deadline, the first-piece window (STR-13)
    and the no-bytes windows (issue 12). `client.Call` is one, with the call's own bookkeeping added."""

    def __init__(self, timeout, first_token=None, first_byte=None, idle=None):
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.first_deadline = self.started + first_token if first_token else None
        self.first_byte = first_byte or math.inf  # the most a reply's first byte may take from its request
        self.idle = idle or math.inf  # the most any later byte may take from the one before
        self.quiet_by = math.inf  # when the next byte is due; each request sent starts the first-byte window
        self.first_piece = None  # seconds from the start to the first piece of the answer, once it came
        self.arrived = None  # when the piece being read arrived, if it was read earlier (a gathered body)

    def limit(self):
        """The deadline, cut to the first-piece window until a first piece arrives (STR-13)."""
        if self.first_piece is None and self.first_deadline is not None:
            return min(self.deadline, self.first_deadline)
        return self.deadline

    def left(self):
        return self.limit() - time.monotonic()

    def waiting(self):
        """The time left for the next byte: the deadline's, or less while the quiet window is shorter."""
        return min(self.limit(), self.quiet_by) - time.monotonic()

    def stalled(self, heard):
        """The error for a quiet window that ran out: the first-byte one until any byte was `heard`, then idle."""
        return Stalled(self.idle if heard else self.first_byte, not heard)


# ---------------------------------------------------------------- bodies


class Body:
    """A reply's body read straight from its socket: iterate for its bytes as they arrive (STR-2, STR-3).

    http.client parses the status line and headers; past them, its read path runs several
    layers of Python per chunk, and a stream sends one small chunk per token. Here each
    read takes all that has arrived (up to the buffer) and undoes its chunked framing at once.

    A read that will likely wait goes into a small buffer of the Body's own: a bytes object
    asked of the socket is allocated whole before the wait and shrunk after it, and with a
    seat per thread that churn cost more memory than the reads themselves. Once a read
    fills that buffer (a burst, a large body) more is waiting, and the next takes READ_SIZE.

    Setting a socket timeout is a system call that also hands the GIL over, so it is set
    again only when the time left has fallen TIMEOUT_STEP below it (or it ran out while
    time was left, the deadline having moved, STR-13): a read ends by the deadline + TIMEOUT_STEP.

    `gather()` hands a body nobody listens to over to the one reader thread instead (metrics/net/gather.py).
    `call` is the `Deadline` whose limits bound every read (a `client.Call` for a model call).
    """

    def __init__(self, call, resp, sock):
        self.call = call
        self.resp = resp
        self.sock = sock
        self.limit = call.limit
        self.armed = sock.gettimeout() or math.inf  # as response() set it
        self.buffer = memoryview(bytearray(WAITING_READ))
        self.buffered = True  # http.client may have read past the headers: that comes first
        self.backlog = False  # the last read filled the buffer
        self.total = 0
        self.complete = resp.length == 0  # HEAD, 204, 304, Content-Length: 0
        self.gathered = None  # the reader's record of this body once `gather()` handed it over
        self._pieces = self._chunked() if resp.chunked else self._sized()

    def __iter__(self):
        return self._pieces

    def read(self):
        return b"".join(self._pieces)

    def drain(self, seconds):
        """Read the rest for at most `seconds` (the end of a body after `[DONE]`), so the connection can be kept.
        The answer is already whole: however the rest ends, the connection is only kept if it ended whole."""
        try:
            if self.gathered is not None:  # the reader gives the end of the body its DRAIN seconds
                self._await(self.gathered)
                return
            call, end = self.call, time.monotonic() + seconds
            self.limit = lambda: min(call.limit(), end)
            for _ in self._pieces:
                pass
        except (OSError, ValueError, http.client.HTTPException):
            pass

    def close(self):
        """Stop reading and let the response go; the reader, suspended, would keep this Body alive until a GC."""
        self._pieces.close()
        if self.gathered is not None:
            self.call.arrived = None
            if not self.gathered.done.is_set():
                READER.drop(self.gathered)
        self.resp.close()

    def _recv(self, due=None):
        """One read of at most `due` bytes, b"" at the server's close; TimedOut at the deadline or STOP,
        Stalled when no byte came within the call's first-byte window, or its idle window since the last."""
        call, now = self.call, time.monotonic()
        if self.total:  # a read starts as soon as the last one's bytes are taken: the idle window starts here
            call.quiet_by = now + call.idle
        while True:
            limit = self.limit()
            left = min(limit, call.quiet_by) - now
            if left <= 0 or STOP.is_set():
                if STOP.is_set() or limit <= now:
                    raise TimedOut()
                raise call.stalled(self.total)
            if self.armed - left > TIMEOUT_STEP:
                self.armed = _socket_timeout(left)
                self.sock.settimeout(self.armed)
            room = READ_SIZE if self.backlog else WAITING_READ
            size = room if due is None else min(room, due)
            try:
                if self.buffered:
                    data = self.resp.fp.read1(size)  # only buffered bytes while there are any
                    self.buffered = len(data) == size
                elif self.backlog:
                    data = self.sock.recv(size)
                else:
                    data = self.buffer[:self.sock.recv_into(self.buffer, size)].tobytes()
                self.backlog = not self.buffered and len(data) == room
            except TimeoutError:
                self.armed = math.inf
                self.buffered = False  # a read that waited found http.client's buffer empty
                now = time.monotonic()
                continue
            self.total += len(data)
            if self.total > MAX_REPLY:
                raise gather.too_large(MAX_REPLY)
            return data

    def _sized(self):
        """A body of Content-Length bytes, or up to the server's close when it has none."""
        due = self.resp.length
        while due != 0:
            data = self._recv(due)
            if not data:
                if due:
                    raise http.client.IncompleteRead(b"", due)
                break
            if due is not None:
                due -= len(data)
            yield data
        self.complete = True

    def _chunked(self):
        framing = gather.Chunked()
        while not framing.complete:
            data = self._recv()
            if not data:
                framing.closed()  # whole only if closed within the trailers, as http.client allows
                break
            data = framing.feed(data)
            if data:
                yield data
        self.complete = True

    def gather(self):
        """Hand the rest of the body to `READER` (metrics/net/gather.py) when nobody needs its pieces as they
        come; iterating then takes them a batch at a time as they gather, each with its arrival time."""
        if self.complete or not gather.usable(self.sock):
            return
        self.sock.setblocking(False)
        sse = "text/event-stream" in (self.resp.getheader("Content-Type") or "").lower()
        call = self.call
        self.gathered = gather.Gathered(self.sock, self.resp.chunked, self.resp.length, self.limit(),
                                        MAX_REPLY, sse, DRAIN, call.quiet_by, call.first_byte, call.idle)
        now = time.monotonic()
        while self.buffered:  # what http.client read past the headers; b"" once its buffer is empty
            data = self.resp.fp.read1(READ_SIZE)
            self.buffered = bool(data)
            if data and self.gathered.take(data, now):
                self.gathered.end()
                break
        else:
            READER.add(self.gathered)
        self._pieces = self._replay()

    def _replay(self):
        """Parse the pieces a batch at a time as they gather (gather.BATCH), so that at most a batch is
        left to parse when the body ends (a seat's result is ready ~1 ms sooner than parsing it whole).
        Until the call's first piece each keeps its arrival time; after it, a batch comes as one buffer."""
        body, call = self.gathered, self.call
        while True:
            if not body.fresh.acquire(timeout=self._grace(body)):
                self._give_up(body)
            ended = body.done.is_set()  # after taking the signal: the reader signals again once it has ended
            count = len(body.pieces)  # the reader only appends, and ends a body after its last piece
            batch = body.pieces[:count]
            del body.pieces[:count]
            if call.first_piece is None:
                for call.arrived, piece in batch:
                    yield piece
            elif batch:  # issue 35: no arrival time is read past the first piece, so a batch is parsed as one buffer
                yield b"".join([piece for _, piece in batch])
            call.arrived = None
            if ended:
                break
        self._ended(body)

    def _await(self, body):
        """Wait for the reader to end `body`, then take its ending as this Body's."""
        if not body.done.wait(self._grace(body)):
            self._give_up(body)
        self._ended(body)

    @staticmethod
    def _grace(body):
        # the reader ends every body by its deadline + SCAN; the extra second only guards against a reader bug
        return max(0.0, body.deadline - time.monotonic()) + gather.SCAN + 1

    @staticmethod
    def _give_up(body):
        READER.drop(body)
        raise TimedOut()

    def _ended(self, body):
        self.total, self.complete = body.total, body.complete  # a reader may stop at `[DONE]`
        if body.error is not None:
            raise body.error


def get(url, headers=None, timeout=60):
    """GET `url` through the pool and return the body bytes (model lists).

    Any non-2xx answer, a redirect included, raises HTTPError; network errors raise
    OSError, the deadline TimeoutError, a body over 32 MB ValueError.
    """
    return request("GET", url, headers, None, timeout)


def request(method, url, headers=None, data=None, timeout=60):
    """One whole request through the pool (no stream, no retry): the body bytes of a 2xx answer.

    Raises as `get()` does; the capability probe POSTs its two questions this way (PROBE-2).
    """
    deadline = Deadline(timeout)
    sent = send(method, url, {"User-Agent": USER_AGENT, **(headers or {})}, data, deadline.left)
    key, conn, resp, sock = response(sent)
    body = Body(deadline, resp, sock)
    try:
        blob = body.read()
    finally:
        release(key, conn, body)
    if resp.status >= 300:
        raise HTTPError(url, resp.status, resp.headers, blob)
    return blob
