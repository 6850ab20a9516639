"""neocog.client — Client, one connection to neocogd shared by any number of threads.

How it is built, and why it is thread-safe: one I/O thread per Client owns
the socket and every piece of connection state (the requests in flight by
id, the frame decoder, the retry timers).  Caller threads never touch
them: a call is packed into a Request in the caller's thread, handed over
through a locked queue (and a byte on a wake-up pipe), and answered
through a concurrent.futures.Future.  So any number of threads may call one
Client; their requests share the connection, pipelined, and the daemon's
replies, which may come back in any order, are matched to them by id.

Reconnecting: when the connection breaks (the daemon restarted, crashed or
closed it), the I/O thread reconnects with jittered exponential backoff and
sends again every request that got no answer: recognition is idempotent
and ids are the client's, so a request answered twice is impossible (the
old connection is gone) and one sent twice costs only the work.  A request
answered UNAVAILABLE because the daemon is draining, or RESOURCE_EXHAUSTED
(its queue is full), is sent again after a backoff too; after "draining"
nothing more is sent on that connection, which the daemon is about to
close.  UNAVAILABLE for a model that is not loaded is final.  Each call has a budget of attempts (sends, and connection
attempts made while it waited) and a deadline; past either, it fails with
an error that names the request, the attempts, the time spent and the last
failure.  Anything else the daemon answers is final.
"""

import collections
import heapq
import itertools
import os
import random
import selectors
import socket
import threading
import time
import weakref
from concurrent.futures import Future

from . import neocog_pb2 as pb
from ._wire import (FRAME_DEFAULT_MAX, FRAME_MAX_LIMIT, FrameDecoder, FrameError,
                    default_address, frame, parse_address)
from .errors import (Cancelled, DeadlineExceeded, Internal, InvalidArgument, NeocogError,
                     ProtocolError, Unavailable, error_for_code)
from .images import to_image
from .results import Health, Result, Timing

__all__ = ["Client", "MODELS", "CHARSETS"]

MODELS = {
    "default": pb.MODEL_DEFAULT,
    "cnn": pb.MODEL_CNN,
    "neocognitron": pb.MODEL_NEOCOGNITRON,
    "ensemble": pb.MODEL_ENSEMBLE,
    "chars": pb.MODEL_CHARS,
}

# RecognizeRequest.charset: the characters an image holds.  "digits" (the
# default) the digit models; "alnum" letters and digits and "all" the 94
# printable ASCII characters, both from the daemon's character model.
CHARSETS = ("digits", "alnum", "all")

# Codes after which the same request may succeed later: the daemon said so.
_RETRYABLE = (pb.UNAVAILABLE, pb.RESOURCE_EXHAUSTED)
# The daemon's window is 128 requests a connection (max_inflight_per_conn);
# keep below it so that its backpressure never stops reading us.
_DEFAULT_MAX_IN_FLIGHT = 64
_READ_CHUNK = 65536


class _Call:
    """One request on its way: owned by the I/O thread once submitted."""

    __slots__ = ("what", "request", "convert", "future", "started", "deadline",
                 "send_deadline", "id", "attempts", "last_error", "finished")

    def __init__(self, what, request, convert, deadline, send_deadline):
        self.what = what                # "recognize (1 image)", for messages
        self.request = request          # pb.Request; id and deadline_us set per send
        self.convert = convert          # Reply -> the caller's result (may raise)
        self.future = Future()
        self.started = time.monotonic()
        self.deadline = deadline        # monotonic seconds
        self.send_deadline = send_deadline  # tell the daemon the time left
        self.id = None
        self.attempts = 0
        self.last_error = None
        self.finished = False


class _Engine:
    """The I/O thread and everything it owns (see the module's docstring)."""

    def __init__(self, address, connect_timeout, max_in_flight, max_frame, retries,
                 backoff_initial, backoff_max):
        self.address = address
        self.connect_timeout = connect_timeout
        self.max_in_flight = max_in_flight
        self.max_frame = max_frame
        self.retries = retries
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        # Shared with callers, under _lock.
        self._lock = threading.Lock()
        self._incoming = collections.deque()
        self._closing = False
        self._dead = None               # the I/O thread's own failure
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        # The I/O thread's alone.
        self._ids = itertools.count(1)  # id 0 is the daemon's "framing error"
        self._seq = itertools.count()
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._wake_r, selectors.EVENT_READ)
        self._sock = None
        self._sock_events = 0
        self._out = bytearray()
        self._decoder = None
        self._refusing = False          # this connection answered UNAVAILABLE
        self._in_flight = {}            # id -> _Call sent on this connection
        self._abandoned = set()         # ids in flight here whose call gave up
        self._waiting = collections.deque()   # to send as soon as the window allows
        self._delayed = []              # heap (when, seq, call): retries after a backoff
        self._deadlines = []            # heap (deadline, seq, call), lazily cleaned
        self._live = 0                  # calls taken in and not finished
        self._conn_failures = 0
        self._reconnect_at = 0.0
        # Written by the I/O thread only; Client.counters copies them.
        self.counters = dict(sent=0, answered=0, resent=0, connections=0,
                             connect_failures=0, gave_up=0)
        self._thread = threading.Thread(target=self._run, name="neocog-io", daemon=True)
        self._thread.start()

    # ---- callers' side ------------------------------------------------------

    def submit(self, call):
        with self._lock:
            if self._closing or self._dead:
                err = self._dead or Cancelled("the client is closed")
                call.future.set_exception(err)
                return call.future
            self._incoming.append(call)
            self._wake()
        return call.future

    def close(self):
        with self._lock:
            self._closing = True
            self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join()
            self._close_pipe()

    def _wake(self):
        """With _lock held (so that the pipe cannot be closed meanwhile)."""
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except BlockingIOError:
                pass                    # a full pipe wakes the thread just as well

    def _close_pipe(self):
        with self._lock:
            if self._wake_w >= 0:
                os.close(self._wake_r)
                os.close(self._wake_w)
                self._wake_r = self._wake_w = -1

    # ---- the I/O thread -------------------------------------------------------

    def _run(self):
        try:
            self._loop()
        except BaseException as e:      # a bug here must not leave callers hanging
            err = Internal("the client's I/O thread failed: %r" % (e,))
            with self._lock:
                self._dead = err
                calls = list(self._incoming)
                self._incoming.clear()
            for call in calls + self._pending():
                self._finish(call, error=err)
        finally:
            self._close_socket()
            self._sel.close()
            with self._lock:
                closing = self._closing
            if closing:
                self._close_pipe()

    def _loop(self):
        while True:
            with self._lock:
                new = list(self._incoming)
                self._incoming.clear()
                closing = self._closing
            for call in new:
                call.id = next(self._ids)
                self._waiting.append(call)
                heapq.heappush(self._deadlines, (call.deadline, next(self._seq), call))
            self._live += len(new)
            if len(self._deadlines) > 2 * self._live + 1024:
                # Answered calls leave their entry behind until its deadline;
                # under a steady stream drop them now and then.
                self._deadlines = [e for e in self._deadlines if not e[2].finished]
                heapq.heapify(self._deadlines)
            if closing:
                for call in self._pending():
                    self._finish(call, error=Cancelled("the client was closed before "
                                                       "request %d was answered" % call.id))
                return
            now = time.monotonic()
            self._expire(now)
            while self._delayed and self._delayed[0][0] <= now:
                call = heapq.heappop(self._delayed)[2]
                if not call.finished:
                    self._waiting.append(call)
            self._skip_finished()
            if self._waiting and self._sock is None and now >= self._reconnect_at:
                self._connect(now)
            if self._sock is not None:
                self._fill_window()
            self._poll(self._next_wakeup(time.monotonic()))

    def _pending(self):
        calls = list(self._in_flight.values()) + list(self._waiting)
        calls += [entry[2] for entry in self._delayed]
        return [c for c in calls if not c.finished]

    def _skip_finished(self):
        while self._waiting and self._waiting[0].finished:
            self._waiting.popleft()

    def _finish(self, call, result=None, error=None):
        if call.finished:
            return
        call.finished = True
        call.request = call.convert = None      # the image's bytes can go now
        self._live -= 1
        if error is not None:
            call.future.set_exception(error)
        else:
            call.future.set_result(result)

    def _backoff(self, n):
        """Full-jitter-ish exponential backoff: the n-th wait (n >= 1) is
        between half and all of initial * 2^(n-1), capped, so that clients
        that lost the same daemon do not come back in step."""
        base = min(self.backoff_max, self.backoff_initial * (2 ** min(n - 1, 30)))
        return base * random.uniform(0.5, 1.0)

    def _give_up(self, call, err, now, deadline_passed=False):
        self.counters["gave_up"] += 1
        spent = now - call.started
        head = "request %d (%s)" % (call.id, call.what)
        if deadline_passed and call.attempts <= 1 and call.last_error is None:
            text = "%s got no answer within its deadline (%.3f s)" % (head, spent)
            exc = DeadlineExceeded(text, request_id=call.id, attempts=call.attempts)
        else:
            why = "its deadline passed" if deadline_passed else (
                "no attempts left" if call.attempts >= self.retries + 1
                else "its deadline leaves no time for another attempt")
            text = "gave up on %s after %d attempt%s in %.3f s (%s); last: %s" % (
                head, call.attempts, "" if call.attempts == 1 else "s", spent, why, err)
            cls = DeadlineExceeded if deadline_passed else type(err)
            exc = cls(text, request_id=call.id, attempts=call.attempts, last_error=err)
        self._finish(call, error=exc)

    def _expire(self, now):
        while self._deadlines and self._deadlines[0][0] <= now:
            call = heapq.heappop(self._deadlines)[2]
            if call.finished:
                continue
            if self._in_flight.pop(call.id, None) is not None:
                self._abandoned.add(call.id)    # its reply may still come
            self._give_up(call, call.last_error, now, deadline_passed=True)

    def _retry(self, call, err, now, at=None):
        """Schedule another attempt (at `at`, or after the call's backoff)
        or give up, within the call's budget and deadline."""
        call.last_error = err
        if call.attempts >= self.retries + 1:
            self._give_up(call, err, now)
            return
        when = at if at is not None else now + self._backoff(call.attempts)
        if when >= call.deadline:
            self._give_up(call, err, now)
            return
        if when <= now:
            self._waiting.append(call)
        else:
            heapq.heappush(self._delayed, (when, next(self._seq), call))

    def _next_wakeup(self, now):
        times = []
        if self._deadlines:
            times.append(self._deadlines[0][0])
        if self._delayed:
            times.append(self._delayed[0][0])
        if self._waiting and self._sock is None:
            times.append(self._reconnect_at)
        if not times:
            return None
        return max(0.0, min(times) - now)

    # ---- the connection ---------------------------------------------------------

    def _connect(self, now):
        limit = self.connect_timeout
        if self._deadlines:
            limit = min(limit, max(0.001, self._deadlines[0][0] - now))
        a = self.address
        try:
            if a.kind == "unix":
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.settimeout(limit)
                    s.connect(a.path)
                except BaseException:
                    s.close()
                    raise
            else:
                # Every address of the name in turn ("localhost" may be ::1
                # first while the daemon listens on 127.0.0.1 only).
                s = socket.create_connection((a.host, a.port), timeout=limit)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
        except OSError as e:
            self._conn_failures += 1
            self._reconnect_at = time.monotonic() + self._backoff(self._conn_failures)
            self.counters["connect_failures"] += 1
            err = Unavailable("cannot connect to %s: %s" % (a, e.strerror or e))
            # Each call waiting for the connection spent an attempt on it.
            waiting, self._waiting = self._waiting, collections.deque()
            for call in waiting:
                if call.finished:
                    continue
                call.attempts += 1
                self._retry(call, err, now, at=self._reconnect_at)
            return
        self.counters["connections"] += 1
        self._sock = s
        self._sock_events = 0
        self._decoder = FrameDecoder(self.max_frame)
        self._out.clear()
        self._refusing = False
        self._abandoned.clear()

    def _close_socket(self):
        if self._sock is not None:
            if self._sock_events:
                self._sel.unregister(self._sock)
            self._sock.close()
        self._sock = None
        self._sock_events = 0
        self._out.clear()
        self._abandoned.clear()

    def _lost(self, err):
        """The connection broke: send every request it had in flight again
        (oldest first) once a new one is up, within each call's budget."""
        now = time.monotonic()
        self._close_socket()
        self._conn_failures += 1
        self._reconnect_at = now + self._backoff(self._conn_failures)
        calls = sorted(self._in_flight.values(), key=lambda c: c.id)
        self._in_flight.clear()
        retry = []
        for call in calls:
            call.last_error = err
            if call.attempts >= self.retries + 1 or self._reconnect_at >= call.deadline:
                self._give_up(call, err, now)
            else:
                retry.append(call)
        self._waiting.extendleft(reversed(retry))

    def _fill_window(self):
        if self._refusing:
            return
        now = time.monotonic()
        while self._waiting and len(self._in_flight) < self.max_in_flight:
            call = self._waiting.popleft()
            if call.finished:
                continue
            rq = call.request
            rq.id = call.id
            if call.send_deadline:
                rq.deadline_us = max(1, int((call.deadline - now) * 1e6))
            self._out += frame(rq.SerializeToString())
            self._in_flight[call.id] = call
            self.counters["sent"] += 1
            if call.attempts:
                self.counters["resent"] += 1
            call.attempts += 1
        if self._out:
            self._write()

    def _write(self):
        try:
            n = self._sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lost(Unavailable("writing to %s: %s" % (self.address, e.strerror or e)))
            return
        del self._out[:n]

    def _poll(self, timeout):
        if self._sock is not None:
            want = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._out else 0)
            if not self._sock_events:
                self._sel.register(self._sock, want)
            elif want != self._sock_events:
                self._sel.modify(self._sock, want)
            self._sock_events = want
        for key, events in self._sel.select(timeout):
            if key.fileobj == self._wake_r:
                try:
                    while os.read(self._wake_r, 4096):
                        pass
                except BlockingIOError:
                    pass
                continue
            if events & selectors.EVENT_READ:
                self._read()
            if self._sock is not None and events & selectors.EVENT_WRITE:
                self._write()

    def _read(self):
        try:
            data = self._sock.recv(_READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lost(Unavailable("reading from %s: %s" % (self.address, e.strerror or e)))
            return
        if not data:
            mid = " in the middle of a reply" if self._decoder.mid_frame() else ""
            self._lost(Unavailable("%s closed the connection%s" % (self.address, mid)))
            return
        try:
            payloads = self._decoder.feed(data)
        except FrameError as e:
            self._lost(ProtocolError("%s: %s" % (self.address, e)))
            return
        for payload in payloads:
            self._reply(payload)
            if self._sock is None:
                return
        if self._refusing and not self._in_flight:
            # Everything sent here is answered and the daemon is draining:
            # the rest goes to a new connection.
            self._close_socket()
            self._conn_failures += 1
            self._reconnect_at = time.monotonic() + self._backoff(self._conn_failures)

    def _reply(self, payload):
        rep = pb.Reply()
        try:
            rep.ParseFromString(payload)
        except Exception:               # google.protobuf.message.DecodeError
            self._lost(ProtocolError("%s sent a malformed reply" % self.address))
            return
        now = time.monotonic()
        if rep.id == 0:
            # The daemon's last word before it closes the connection: it is
            # shutting down or full (try again), or could not read our stream.
            err = error_for_code(rep.code, "%s refused the connection: %s"
                                 % (self.address, rep.message))
            if rep.code in _RETRYABLE or rep.code == pb.DEADLINE_EXCEEDED:
                self._lost(err)
            else:
                for call in list(self._in_flight.values()):
                    self._finish(call, error=err)
                self._in_flight.clear()
                self._lost(err)
            return
        call = self._in_flight.pop(rep.id, None)
        if call is None:
            if rep.id in self._abandoned:
                self._abandoned.discard(rep.id)
                return
            self._lost(ProtocolError("%s answered request %d, which is not outstanding"
                                     % (self.address, rep.id)))
            return
        self._conn_failures = 0         # this connection works
        self.counters["answered"] += 1
        if rep.code == pb.RESOURCE_EXHAUSTED or _draining(rep):
            if rep.code == pb.UNAVAILABLE:
                self._refusing = True
            self._retry(call, error_for_code(rep.code, rep.message), now)
            return
        if rep.code != pb.OK:
            self._finish(call, error=error_for_code(rep.code, rep.message, request_id=call.id,
                                                    attempts=call.attempts,
                                                    last_error=call.last_error))
            return
        try:
            result = call.convert(rep)
        except NeocogError as e:
            e.request_id, e.attempts = call.id, call.attempts
            self._finish(call, error=e)
        else:
            self._finish(call, result=result)


def _draining(rep):
    """UNAVAILABLE because the daemon is shutting down (daemon/conn.c says
    "server is draining"), not because the model asked for is not loaded:
    only the first is worth another attempt, elsewhere."""
    return rep.code == pb.UNAVAILABLE and ("draining" in rep.message
                                           or "shutting down" in rep.message)


# ---- replies to results -------------------------------------------------------

def _recognize_result(rep):
    rr = rep.recognize
    if not rep.HasField("recognize") or len(rr.results) != 1:
        raise ProtocolError("a recognize reply without its one result")
    r = rr.results[0]
    if r.code != pb.OK:
        raise error_for_code(r.code, r.message)
    timing = Timing._of(rep.timing) if rep.HasField("timing") else None
    return Result._of(r, rr.model, timing)


def _status_result(rep):
    if not rep.HasField("status"):
        raise ProtocolError("a status reply without its status")
    return rep.status


def _health_result(rep):
    if not rep.HasField("health"):
        raise ProtocolError("a health reply without its health")
    return Health._of(rep.health)


def _model_info_result(rep):
    if not rep.HasField("model_info"):
        raise ProtocolError("a model-info reply without its models")
    return list(rep.model_info.models)


class Client:
    """A connection to neocogd, shared by any number of threads.

    address          "unix:PATH", "tcp:HOST:PORT", "HOST:PORT", a path; None:
                     $NEOCOG_SERVER, else the daemon's default Unix socket if
                     it exists, else tcp:127.0.0.1:5517 (as the C client)
    timeout          seconds a call waits at most when it gives no deadline
    connect_timeout  seconds one connection attempt may take
    retries          attempts after the first, per call (resends after a
                     broken connection, a draining daemon's UNAVAILABLE or a
                     RESOURCE_EXHAUSTED, and connection attempts made while
                     the call waited); 0: none
    backoff          (first, longest) wait in seconds between attempts,
                     doubling, each drawn between half and all of it
    max_in_flight    requests outstanding on the connection at once
    max_frame_bytes  largest request (the daemon's max_frame_bytes, 4 MiB)

    Connecting is lazy: the first call connects.  close() (or a with block)
    ends the I/O thread; calls still waiting then fail with Cancelled.
    """

    def __init__(self, address=None, *, timeout=30.0, connect_timeout=5.0, retries=8,
                 backoff=(0.05, 2.0), max_in_flight=_DEFAULT_MAX_IN_FLIGHT,
                 max_frame_bytes=FRAME_DEFAULT_MAX):
        text = address if address else default_address()
        parsed = parse_address(text)
        if not 0 < max_frame_bytes <= FRAME_MAX_LIMIT:
            raise ValueError("max_frame_bytes must be in 1 .. %d" % FRAME_MAX_LIMIT)
        if max_in_flight < 1 or retries < 0 or timeout <= 0 or connect_timeout <= 0:
            raise ValueError("max_in_flight >= 1, retries >= 0 and positive timeouts, please")
        self.address = str(parsed)
        self.timeout = float(timeout)
        self._max_frame = max_frame_bytes
        self._engine = _Engine(parsed, float(connect_timeout), max_in_flight, max_frame_bytes,
                               retries, float(backoff[0]), float(backoff[1]))
        # Close the I/O thread when the Client is dropped without close().
        self._finalizer = weakref.finalize(self, self._engine.close)

    def __repr__(self):
        return "neocog.Client(%r)" % self.address

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Stop the I/O thread and close the connection; idempotent."""
        self._finalizer()

    @property
    def counters(self):
        """What the connection has done so far, a dict: requests sent (resends
        included), answered (any code), resent (after a broken connection,
        UNAVAILABLE or RESOURCE_EXHAUSTED), connections made, connect_failures,
        and gave_up (calls failed after their budget or deadline)."""
        return dict(self._engine.counters)

    # ---- recognition --------------------------------------------------------

    def submit(self, image, *, segment=False, model=None, top_k=0, min_confidence=0.0,
               expected_digits=0, roi=None, polarity="auto", priority=0, deadline=None,
               charset=None):
        """Send one image now and return a concurrent.futures.Future of its
        Result: the way to keep many requests in flight from one thread.
        Options as recognize().  An image that cannot even be sent (an
        unreadable file, an unknown model name, a request above the frame
        limit) raises here."""
        if model is not None and model not in MODELS:
            raise InvalidArgument("unknown model %r (want %s)" % (model, ", ".join(MODELS)))
        if min_confidence is not None and not min_confidence <= 1:
            raise InvalidArgument("min_confidence must be at most 1 (< 0: no threshold)")
        if charset is not None and charset not in CHARSETS:
            raise InvalidArgument("unknown charset %r (want %s)" % (charset, ", ".join(CHARSETS)))
        msg = to_image(image, segment=segment, polarity=polarity,
                       expected_digits=expected_digits, roi=roi)
        rr = pb.RecognizeRequest(model=MODELS[model or "default"], top_k=int(top_k),
                                 min_confidence=float(min_confidence or 0.0),
                                 charset=charset or "")
        rr.images.append(msg)
        rq = pb.Request(priority=int(priority), recognize=rr)
        return self._submit("recognize", rq, _recognize_result, deadline)

    def recognize(self, image, *, segment=False, model=None, top_k=0, min_confidence=0.0,
                  expected_digits=0, roi=None, polarity="auto", priority=0, deadline=None,
                  charset=None):
        """Recognise one image and return its Result.

        image            a path, encoded bytes (PGM/PNG/JPEG) or a uint8 numpy
                         array (HxW grey, or HxWx3 BGR as OpenCV gives it)
        segment          split it into characters (a digit string, lines)
        model            "cnn", "neocognitron", "ensemble", "chars"; None: the
                         daemon's
        charset          "digits" (None), "alnum" or "all": the characters the
                         image holds (the last two: the daemon's chars model)
        top_k            candidates wanted in Result.top (and each digit's)
        min_confidence   0: the daemon's threshold; 0 < x <= 1: this one;
                         < 0: no threshold
        expected_digits  segment only: how many characters to expect
        roi              segment only: (x, y, width, height) to look inside
        polarity         "auto", "light_ink" (MNIST), "dark_ink" (paper)
        priority         > 0 high, 0 normal, < 0 background
        deadline         seconds for the whole call, retries included; also
                         sent to the daemon (time left at each send).  None:
                         the client's timeout, and the daemon's default

        Raises the NeocogError subclass of the failure (InvalidArgument,
        Unavailable, ResourceExhausted, DeadlineExceeded, ...)."""
        return self.submit(image, segment=segment, model=model, top_k=top_k,
                           min_confidence=min_confidence, expected_digits=expected_digits,
                           roi=roi, polarity=polarity, priority=priority,
                           deadline=deadline, charset=charset).result()

    def recognize_many(self, images, *, return_exceptions=False, **options):
        """Recognise each image (one request each, all pipelined on the
        connection) and return their Results in the order given.  With
        return_exceptions, a failed image's place holds its exception
        instead of the first failure being raised."""
        futures = []
        for image in images:
            try:
                futures.append(self.submit(image, **options))
            except NeocogError as e:
                if not return_exceptions:
                    raise
                failed = Future()
                failed.set_exception(e)
                futures.append(failed)
        out = []
        for f in futures:
            e = f.exception()
            if e is not None and not return_exceptions:
                raise e
            out.append(e if e is not None else f.result())
        return out

    # ---- the daemon -----------------------------------------------------------

    def status(self, *, deadline=None):
        """The daemon's counters, limits and models: a StatusReply message
        (fields as in proto/neocog.proto)."""
        return self._submit("status", pb.Request(status=pb.StatusRequest()),
                            _status_result, deadline).result()

    def health(self, *, deadline=None):
        """Liveness and readiness: a Health (live, ready, draining, state)."""
        return self.submit_health(deadline=deadline).result()

    def submit_health(self, *, deadline=None):
        return self._submit("health", pb.Request(health=pb.HealthRequest()),
                            _health_result, deadline)

    def submit_status(self, *, deadline=None):
        return self._submit("status", pb.Request(status=pb.StatusRequest()),
                            _status_result, deadline)

    def model_info(self, *, deadline=None):
        """What each loaded model is: a list of ModelInfo messages."""
        return self._submit("model info", pb.Request(model_info=pb.ModelInfoRequest()),
                            _model_info_result, deadline).result()

    def _submit(self, what, rq, convert, deadline):
        # The id and deadline fields add at most 22 bytes to the message.
        size = rq.ByteSize() + 22
        if size > self._max_frame:
            raise InvalidArgument("a %s request of %d bytes is over the %d-byte frame limit"
                                  % (what, size, self._max_frame))
        if deadline is not None and deadline <= 0:
            raise InvalidArgument("deadline must be positive seconds")
        if what == "recognize":
            what = "recognize, %d image%s" % (len(rq.recognize.images),
                                              "" if len(rq.recognize.images) == 1 else "s")
        budget = float(deadline) if deadline is not None else self.timeout
        call = _Call(what, rq, convert, time.monotonic() + budget, deadline is not None)
        return self._engine.submit(call)
