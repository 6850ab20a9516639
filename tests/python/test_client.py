"""tests/python/test_client.py — the Python client (clients/python, package neocog).

usage: PYTHON test_client.py NEOCOGD SOURCE_ROOT
  with PYTHONPATH at the built package (tests/python/meson.build sets it).

Two halves:
  against a scripted fake daemon (a Unix socket served by a thread here):
    replies out of order, every status code's exception class, retries of
    RESOURCE_EXHAUSTED within the budget and what the client says when it
    gives up, a connection closed under a request (resent), a framing-error
    reply, a daemon that is not there, a deadline, close() with calls
    waiting, and address parsing;
  against the real neocogd (cnn model only, so it starts in a blink):
    the samples by path, bytes, grey and BGR numpy arrays; a photo of a
    digit string with segment=True against its truth; top_k; thresholds;
    the daemon's errors (garbage, absurd dimensions, a model not loaded);
    status, health, model_info and AsyncClient; several threads pipelining
    on one client; camera.py on a few photos; and a stream of requests from
    threads that goes on while the daemon is stopped with SIGTERM (drain),
    restarted, killed with SIGKILL and restarted: every request answered,
    rightly, none lost.
With NEOCOGD empty (a build without the daemon) the second half is skipped.
"""

import asyncio
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import neocog
from neocog import pb
from neocog._wire import HEADER_LEN, FrameDecoder, frame, parse_address

DAEMON = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] else ""
SOURCE = sys.argv[2] if len(sys.argv) > 2 else os.getcwd()
DATA = os.path.join(SOURCE, "tests", "data")
SAMPLE_2 = os.path.join(DATA, "sample-2.pgm")
SAMPLE_7 = os.path.join(DATA, "sample-7.pgm")
PHOTOS = os.path.join(DATA, "photos")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pgm_array(path):
    """A binary PGM's pixels as an HxW uint8 array (the samples' layout:
    "P5\\n<w> <h>\\n255\\n" and the pixels)."""
    import numpy as np
    data = read(path)
    fields, pos = [], 2
    while len(fields) < 3:
        while data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(int(data[pos:end]))
        pos = end
    w, h, _ = fields
    return np.frombuffer(data[pos + 1:pos + 1 + w * h], dtype=np.uint8).reshape(h, w)


def photo_truth(name):
    """(text, [(x, y, w, h)...]) of a photo in tests/data/photos/truth.tsv."""
    with open(os.path.join(PHOTOS, "truth.tsv")) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[0] == name:
                boxes = [tuple(int(v) for v in b.split(",")) for b in cols[2].split(";")]
                return cols[1], boxes
    raise KeyError(name)


# ---- a scripted fake daemon ----------------------------------------------------

class FakeDaemon:
    """Serves NCOG frames on a Unix socket.  handler(fake, conn, request)
    returns the Replies to send now (a list, maybe empty), or "close" to
    hang up; fake.held collects requests a handler chose to answer later."""

    def __init__(self, path, handler):
        self.path, self.handler = path, handler
        self.requests = []
        self.held = []
        self.connections = 0
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        dec = FrameDecoder()
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                for payload in dec.feed(data):
                    rq = pb.Request()
                    rq.ParseFromString(payload)
                    self.requests.append(rq)
                    out = self.handler(self, conn, rq)
                    if out == "close":
                        return
                    for rep in out:
                        conn.sendall(frame(rep.SerializeToString()))

    def close(self):
        self.listener.close()


def answer(rq, text):
    """An OK reply to a recognize request whose one result says text."""
    rep = pb.Reply(id=rq.id, code=pb.OK)
    rep.recognize.model = "cnn"
    rep.recognize.results.add(label=int(text) if text.isdigit() else -1, text=text,
                              confidence=0.99)
    return rep


def image_text(rq):
    return rq.recognize.images[0].data.decode()


class FakeDaemonTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="neocog-py-")
        self.path = os.path.join(self.tmp, "fake.sock")
        self.fake = None

    def tearDown(self):
        if self.fake:
            self.fake.close()
        shutil.rmtree(self.tmp)

    def serve(self, handler):
        self.fake = FakeDaemon(self.path, handler)
        return "unix:" + self.path

    def test_out_of_order_replies_matched_by_id(self):
        # Hold five requests, then answer them last first.
        def handler(fake, conn, rq):
            fake.held.append(rq)
            if len(fake.held) < 5:
                return []
            return [answer(r, image_text(r)) for r in reversed(fake.held)]
        with neocog.Client(self.serve(handler)) as c:
            futures = [c.submit(b"%d" % i) for i in range(5)]
            self.assertEqual([f.result(10).text for f in futures], ["0", "1", "2", "3", "4"])
            ids = [r.id for r in self.fake.requests]
            self.assertEqual(len(set(ids)), 5)
            self.assertNotIn(0, ids)

    def test_each_code_raises_its_class(self):
        classes = {1: neocog.Cancelled, 2: neocog.Unknown, 3: neocog.InvalidArgument,
                   4: neocog.DeadlineExceeded, 5: neocog.NotFound, 6: neocog.AlreadyExists,
                   7: neocog.PermissionDenied, 8: neocog.ResourceExhausted,
                   9: neocog.FailedPrecondition, 10: neocog.Aborted, 11: neocog.OutOfRange,
                   12: neocog.Unimplemented, 13: neocog.Internal, 14: neocog.Unavailable,
                   15: neocog.DataLoss, 16: neocog.Unauthenticated}

        def handler(fake, conn, rq):
            code = int(image_text(rq))
            return [pb.Reply(id=rq.id, code=code, message="because %d" % code)]
        with neocog.Client(self.serve(handler), retries=0) as c:
            for code, cls in classes.items():
                with self.assertRaises(cls) as cm:
                    c.recognize(b"%d" % code)
                self.assertEqual(cm.exception.code, code)
                self.assertIn("because %d" % code, str(cm.exception))
                self.assertTrue(str(cm.exception).startswith(cm.exception.code_name + ": "))

    def test_per_image_code_raises_its_class(self):
        def handler(fake, conn, rq):
            rep = pb.Reply(id=rq.id, code=pb.OK)
            rep.recognize.results.add(code=pb.INVALID_ARGUMENT, message="image 0: bad")
            return [rep]
        with neocog.Client(self.serve(handler)) as c:
            with self.assertRaisesRegex(neocog.InvalidArgument, "image 0: bad") as cm:
                c.recognize(b"x")
            self.assertEqual(cm.exception.request_id, self.fake.requests[0].id)

    def test_resource_exhausted_retried_within_budget(self):
        def handler(fake, conn, rq):
            if len(fake.requests) <= 2:
                return [pb.Reply(id=rq.id, code=pb.RESOURCE_EXHAUSTED, message="queue full")]
            return [answer(rq, "5")]
        with neocog.Client(self.serve(handler), retries=3, backoff=(0.001, 0.01)) as c:
            self.assertEqual(c.recognize(b"x").text, "5")
            self.assertEqual(c.counters["resent"], 2)
            self.assertEqual(len({r.id for r in self.fake.requests}), 1)

    def test_gives_up_after_budget_and_says_on_what(self):
        def handler(fake, conn, rq):
            return [pb.Reply(id=rq.id, code=pb.RESOURCE_EXHAUSTED, message="queue full")]
        with neocog.Client(self.serve(handler), retries=2, backoff=(0.001, 0.01)) as c:
            with self.assertRaises(neocog.ResourceExhausted) as cm:
                c.recognize(b"x")
        e = cm.exception
        self.assertEqual(e.attempts, 3)
        self.assertEqual(len(self.fake.requests), 3)
        self.assertIsInstance(e.last_error, neocog.ResourceExhausted)
        self.assertRegex(str(e), r"gave up on request \d+ \(recognize, 1 image\) after 3 "
                                 r"attempts .*no attempts left.*queue full")

    def test_broken_connection_resends(self):
        # The first connection hangs up on its first request; the request
        # goes again on a new connection, under the same id.
        def handler(fake, conn, rq):
            if fake.connections == 1:
                return "close"
            return [answer(rq, "3")]
        with neocog.Client(self.serve(handler), backoff=(0.001, 0.01)) as c:
            self.assertEqual(c.recognize(b"x").text, "3")
            self.assertEqual(self.fake.connections, 2)
            self.assertEqual(c.counters["resent"], 1)
            self.assertEqual(self.fake.requests[0].id, self.fake.requests[1].id)

    def test_draining_connection_left_for_a_new_one(self):
        # UNAVAILABLE on the first connection: the request goes again, on a
        # second connection, and nothing more is sent on the first.
        def handler(fake, conn, rq):
            if fake.connections == 1:
                return [pb.Reply(id=rq.id, code=pb.UNAVAILABLE, message="server is draining")]
            return [answer(rq, "4")]
        with neocog.Client(self.serve(handler), backoff=(0.001, 0.01)) as c:
            self.assertEqual(c.recognize(b"x").text, "4")
            self.assertEqual(self.fake.connections, 2)

    def test_framing_error_reply(self):
        def handler(fake, conn, rq):
            return [pb.Reply(id=0, code=pb.INVALID_ARGUMENT, message="bad magic")]
        with neocog.Client(self.serve(handler)) as c:
            with self.assertRaisesRegex(neocog.InvalidArgument, "refused the connection: bad magic"):
                c.recognize(b"x")

    def test_unreachable_daemon(self):
        with neocog.Client("unix:" + self.path, retries=2, backoff=(0.001, 0.01)) as c:
            with self.assertRaises(neocog.Unavailable) as cm:
                c.health()
        self.assertEqual(cm.exception.attempts, 3)
        self.assertRegex(str(cm.exception), r"gave up on request 1 \(health\) after 3 attempts"
                                            r".*cannot connect to unix:")

    def test_deadline(self):
        def handler(fake, conn, rq):
            return []               # never answers
        with neocog.Client(self.serve(handler)) as c:
            with self.assertRaisesRegex(neocog.DeadlineExceeded, "no answer within its deadline"):
                c.recognize(b"x", deadline=0.2)
            # The daemon was told the time left.
            self.assertGreater(self.fake.requests[0].deadline_us, 0)
            self.assertLessEqual(self.fake.requests[0].deadline_us, 200000)

    def test_close_cancels_waiting_calls(self):
        def handler(fake, conn, rq):
            return []
        c = neocog.Client(self.serve(handler))
        f = c.submit(b"x")
        while not self.fake.requests:
            time.sleep(0.01)
        c.close()
        with self.assertRaises(neocog.Cancelled):
            f.result(10)
        with self.assertRaises(neocog.Cancelled):
            c.recognize(b"x")

    def test_local_refusals(self):
        with neocog.Client("unix:" + self.path, max_frame_bytes=1000) as c:
            with self.assertRaisesRegex(neocog.InvalidArgument, "frame limit"):
                c.submit(b"x" * 2000)
            with self.assertRaisesRegex(neocog.InvalidArgument, "unknown model"):
                c.submit(b"x", model="lenet")
            with self.assertRaisesRegex(neocog.InvalidArgument, "cannot send a int"):
                c.submit(7)
            with self.assertRaises(FileNotFoundError):
                c.submit(os.path.join(self.tmp, "missing.pgm"))

    def test_addresses(self):
        for text, want in [("unix:/a/b.sock", "unix:/a/b.sock"), ("/a/b.sock", "unix:/a/b.sock"),
                           ("tcp:host:99", "tcp:host:99"), ("host:99", "tcp:host:99"),
                           ("host", "tcp:host:5517"), ("[::1]:7", "tcp:[::1]:7"),
                           ("tcp:[::1]", "tcp:[::1]:5517")]:
            self.assertEqual(str(parse_address(text)), want)
        for text in ["", "unix:", "::1:5", "host:0", "host:65536", "host:x", "[::1", "[::1]x"]:
            with self.assertRaises(ValueError, msg=text):
                parse_address(text)

    def test_frame_decoder(self):
        dec = FrameDecoder(max_len=100)
        data = frame(b"abc") + frame(b"") + frame(b"xy")
        got = []
        for i in range(len(data)):      # a byte at a time
            got += dec.feed(data[i:i + 1])
        self.assertEqual(got, [b"abc", b"", b"xy"])
        self.assertFalse(dec.mid_frame())
        with self.assertRaises(Exception):
            FrameDecoder(max_len=100).feed(struct.pack(">4sBBHI", b"NCOG", 1, 0, 0, 101))
        with self.assertRaises(Exception):
            FrameDecoder().feed(b"HTTP/1.1 200 OK\r\n")
        self.assertEqual(len(frame(b"")), HEADER_LEN)

    def test_bgr_to_grey_uses_opencv_weights(self):
        import numpy as np
        bgr = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]], np.uint8)
        # cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY) gives these.
        self.assertEqual(neocog.bgr_to_grey(bgr).tolist(), [[29, 150, 76, 22]])


# ---- the real daemon -------------------------------------------------------------

class Daemon:
    """neocogd on a Unix socket in tmp with the CNN only, started and
    stopped as a test needs; readiness is its sd_notify READY=1."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.sock = os.path.join(tmp, "neocogd.sock")
        self.models = os.path.join(tmp, "models")
        os.mkdir(self.models)
        os.symlink(os.path.join(SOURCE, "models", "cnn-column.ncm"),
                   os.path.join(self.models, "cnn-column.ncm"))
        self.proc = None
        self.starts = 0

    def start(self):
        notify_path = os.path.join(self.tmp, "notify-%d" % self.starts)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        self.log = open(os.path.join(self.tmp, "neocogd-%d.log" % self.starts), "wb")
        self.starts += 1
        self.proc = subprocess.Popen(
            [DAEMON, "--models", self.models, "--listen-unix", self.sock,
             "--listen-tcp", "none", "--http", "none", "--workers", "2"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        notify.settimeout(0.1)
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                try:
                    if b"READY=1" in notify.recv(4096):
                        return
                except socket.timeout:
                    pass
                if self.proc.poll() is not None:
                    break
            raise RuntimeError("neocogd did not become ready (exit %s); its log: %s"
                               % (self.proc.poll(), self.log.name))
        finally:
            notify.close()

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        code = self.proc.wait(60)
        self.log.close()
        return code


@unittest.skipUnless(DAEMON, "no neocogd in this build")
class DaemonTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="neocog-py-")
        cls.daemon = Daemon(cls.tmp)
        cls.daemon.start()
        cls.address = "unix:" + cls.daemon.sock
        cls.client = neocog.Client(cls.address)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        if cls.daemon.proc and cls.daemon.proc.poll() is None:
            cls.daemon.stop()
        shutil.rmtree(cls.tmp)

    def test_samples(self):
        c = self.client
        self.assertEqual(c.recognize(SAMPLE_2).text, "2")
        r = c.recognize(SAMPLE_7, model="cnn")
        self.assertEqual((r.text, r.label, r.reject, r.model), ("7", 7, False, "cnn"))
        self.assertGreater(r.confidence, 0.9)
        self.assertEqual(len(r.scores), 10)
        self.assertEqual(r.digits, ())
        self.assertGreater(r.timing.total_us, 0)
        self.assertEqual(c.recognize(read(SAMPLE_7)).text, "7")
        self.assertEqual(c.recognize(bytearray(read(SAMPLE_2))).text, "2")

    def test_numpy_arrays(self):
        import numpy as np
        grey = pgm_array(SAMPLE_7)
        c = self.client
        self.assertEqual(c.recognize(grey).text, "7")
        self.assertEqual(c.recognize(grey[:, :, None]).text, "7")
        bgr = np.stack([grey, grey, grey], axis=2)
        self.assertEqual(c.recognize(bgr).text, "7")
        # A BGR frame with colour: what the daemon sees is its grey.
        tinted = bgr.copy()
        tinted[:, :, 0] = grey // 2
        self.assertEqual(c.recognize(tinted).text, "7")
        self.assertEqual(c.recognize(np.asfortranarray(pgm_array(SAMPLE_2))).text, "2")
        with self.assertRaisesRegex(neocog.InvalidArgument, "uint8"):
            c.recognize(grey.astype(np.float32))

    def test_segmented_photo_string(self):
        for name in ("line-0002.jpg", "line-0006.jpg"):
            text, boxes = photo_truth(name)
            r = self.client.recognize(os.path.join(PHOTOS, name), segment=True,
                                      expected_digits=len(text))
            self.assertEqual(r.text, text, name)
            self.assertEqual(len(r.digits), len(text))
            self.assertEqual("".join(d.text for d in r.digits), text)
            for d, (x, y, w, h) in zip(r.digits, boxes):
                # Each found box's centre lies in the truth's ink box.
                cx, cy = d.box.x + d.box.width / 2, d.box.y + d.box.height / 2
                self.assertTrue(x <= cx <= x + w and y <= cy <= y + h, (name, d.box))
                self.assertEqual(d.line, 0)
            self.assertEqual(r.boxes, [d.box for d in r.digits])

    def test_top_k_and_thresholds(self):
        r = self.client.recognize(SAMPLE_2, top_k=3)
        self.assertEqual(len(r.top), 3)
        self.assertEqual(r.top[0].text, "2")
        self.assertGreaterEqual(r.top[0].score, r.top[1].score)
        self.assertGreaterEqual(r.top[1].score, r.top[2].score)
        r = self.client.recognize(SAMPLE_2, min_confidence=1.0)
        self.assertTrue(r.reject)
        self.assertEqual((r.text, r.label, r.reject_reason), ("?", -1, "below threshold"))
        r = self.client.recognize(SAMPLE_2, min_confidence=-1)
        self.assertEqual((r.text, r.threshold, r.reject_reason), ("2", 0.0, None))
        r = self.client.recognize(os.path.join(PHOTOS, "line-0002.jpg"), segment=True, top_k=2)
        self.assertTrue(all(len(d.top) == 2 for d in r.digits))

    def test_daemon_errors(self):
        c = self.client
        with self.assertRaisesRegex(neocog.InvalidArgument, "unrecognised image format"):
            c.recognize(b"not an image at all")
        absurd = b"P5\n50000 50000\n255\n" + bytes(64)
        with self.assertRaisesRegex(neocog.InvalidArgument, "4096"):
            c.recognize(absurd)
        with self.assertRaisesRegex(neocog.InvalidArgument, "min_confidence"):
            c.recognize(SAMPLE_2, min_confidence=2)
        # This daemon has no neocognitron: the model is unavailable, and
        # saying so is final (per image), not retried.
        with self.assertRaisesRegex(neocog.Unavailable, "neocognitron model is not loaded") as cm:
            c.recognize(SAMPLE_2, model="neocognitron")
        self.assertEqual(cm.exception.attempts, 1)
        results = c.recognize_many([SAMPLE_2, b"junk", SAMPLE_7], return_exceptions=True)
        self.assertEqual(results[0].text, "2")
        self.assertIsInstance(results[1], neocog.InvalidArgument)
        self.assertEqual(results[2].text, "7")
        with self.assertRaises(neocog.InvalidArgument):
            c.recognize_many([SAMPLE_2, b"junk"])
        self.assertEqual(c.recognize(SAMPLE_7).text, "7")   # still serving

    def test_status_health_model_info(self):
        c = self.client
        h = c.health()
        self.assertEqual((h.live, h.ready, h.draining, h.state), (True, True, False, "serving"))
        s = c.status()
        self.assertTrue(s.version)
        self.assertEqual(s.backend, "cpu")
        self.assertGreaterEqual(s.requests_total, 1)
        models = {m.model: m for m in c.model_info()}
        self.assertTrue(models[pb.MODEL_CNN].loaded)
        self.assertEqual(list(models[pb.MODEL_CNN].labels), [str(i) for i in range(10)])

    def test_async_client(self):
        async def run():
            async with neocog.AsyncClient(self.address) as ac:
                rs = await ac.recognize_many([SAMPLE_2, SAMPLE_7, read(SAMPLE_2)])
                h = await ac.health()
                return [r.text for r in rs], h.ready
        self.assertEqual(asyncio.run(run()), (["2", "7", "2"], True))

    def test_threads_share_one_client(self):
        # Eight threads, each its own sample and answer, on one connection
        # with several requests in flight at once: every answer its own.
        c = neocog.Client(self.address)
        inputs = [(read(SAMPLE_2), "2"), (read(SAMPLE_7), "7"), (pgm_array(SAMPLE_2), "2"),
                  (SAMPLE_7, "7")]
        wrong, done = [], []

        def worker(k):
            image, want = inputs[k % len(inputs)]
            futures = [c.submit(image, model="cnn") for _ in range(25)]
            for f in futures:
                got = f.result().text
                if got != want:
                    wrong.append((k, got, want))
                done.append(1)
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        counters = c.counters
        c.close()
        self.assertEqual(wrong, [])
        self.assertEqual(len(done), 200)
        self.assertEqual((counters["sent"], counters["answered"]), (200, 200))
        self.assertEqual(counters["connections"], 1)

    def test_camera_example(self):
        example = os.path.join(SOURCE, "clients", "python", "examples", "camera.py")
        out = subprocess.run([sys.executable, example, "--server", self.address, "--fps", "30",
                              os.path.join(PHOTOS, "line-000[26].jpg")],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertTrue(lines[0].startswith("frame 0: 0172727  (7 digits"), out.stdout)
        self.assertIn("frame 1: 3524  (4 digits", out.stdout)
        self.assertRegex(lines[1], r"^  0  line 0  \d+,\d+ \d+x\d+  0\.\d{3}$")
        self.assertIn("2 frames sent, 2 answered, 0 dropped", out.stderr)
        help_out = subprocess.run([sys.executable, example, "--help"], capture_output=True,
                                  text=True, timeout=60)
        self.assertEqual(help_out.returncode, 0)
        self.assertIn("--fps", help_out.stdout)

    def test_z_restarts_lose_nothing(self):
        # Last (by name): it restarts the daemon.  Three threads keep
        # requests going (two one at a time, one with 8 in flight) while the
        # daemon drains and exits on SIGTERM, stays down a moment, comes
        # back, is killed with SIGKILL and comes back again.
        c = neocog.Client(self.address, timeout=60)
        stop = threading.Event()
        answered, failures, spans = [], [], []

        def one_at_a_time(image, want):
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    got = c.recognize(image, model="cnn").text
                except neocog.NeocogError as e:
                    failures.append(e)
                    continue
                answered.append(got == want)
                spans.append((t0, time.monotonic()))

        def pipelined():
            window = []
            while not stop.is_set() or window:
                if not stop.is_set():
                    window.append(c.submit(SAMPLE_7))
                if len(window) >= 8 or stop.is_set():
                    try:
                        answered.append(window.pop(0).result().text == "7")
                    except neocog.NeocogError as e:
                        failures.append(e)
        threads = [threading.Thread(target=one_at_a_time, args=(read(SAMPLE_2), "2")),
                   threading.Thread(target=one_at_a_time, args=(pgm_array(SAMPLE_7), "7")),
                   threading.Thread(target=pipelined)]
        for t in threads:
            t.start()
        def serving_again(mark):
            # Until this client has answers from the daemon just started.
            limit = time.monotonic() + 60
            while len(answered) < mark + 20 and time.monotonic() < limit:
                time.sleep(0.02)

        try:
            serving_again(0)
            before = len(answered)
            self.assertEqual(self.daemon.stop(signal.SIGTERM), 0)
            down = time.monotonic()
            time.sleep(0.3)
            mark = len(answered)
            self.daemon.start()
            up = time.monotonic()
            serving_again(mark)
            self.daemon.stop(signal.SIGKILL)
            mark = len(answered)
            self.daemon.start()
            serving_again(mark)
        finally:
            stop.set()
            for t in threads:
                t.join(120)
        counters = c.counters
        c.close()
        self.assertEqual(failures, [])
        self.assertGreater(before, 0)
        self.assertTrue(all(answered), "a wrong answer")
        self.assertGreater(len(answered), before)
        # Requests asked of the old daemon were answered by the new one.
        self.assertTrue(any(t0 < down and t1 > up for t0, t1 in spans), "none spanned the gap")
        self.assertGreater(counters["resent"], 0)
        self.assertGreaterEqual(counters["connections"], 3)
        self.assertEqual(counters["gave_up"], 0)
        self.assertEqual(self.client.recognize(SAMPLE_2).text, "2")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
