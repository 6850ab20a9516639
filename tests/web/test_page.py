#!/usr/bin/env python3
"""tests/web/test_page.py — the page at / of neocogd's HTTP port in a real
headless Chromium.

    test_page.py NEOCOGD SOURCE_ROOT OUT_DIR

Starts neocogd (the CNN only, so it is ready in a blink; the neocognitron's
and the ensemble's cards must then say "not loaded") on a loopback HTTP
socket passed as systemd would, loads the page, draws a "1" with a finger
and a "7" with the mouse stroke by stroke (synthetic pointer input through
the DevTools protocol's Input domain) and checks the digit the CNN's card
shows, uploads a photo of a digit string and checks the text read and the
boxes drawn over it, checks the status panel, the headers the page is served
with, that nothing was refused by its Content-Security-Policy or thrown, and
that it fits a phone's width.  Screenshots go to OUT_DIR/web-page.png and
OUT_DIR/web-page-phone.png.  NC_WEB_MODELS=DIR serves DIR's models instead
(models/ for every card at work: then those cards are waited for, not
asserted, before the screenshots).

Chromium is driven over --remote-debugging-pipe (the DevTools protocol as
NUL-separated JSON on its fds 3 and 4), so the test needs nothing but
Python's standard library and the browser.  Exit 77 (skip) without a
Chromium; CI installs Debian's (scripts/deps-debian --browser).
"""
import base64
import fcntl
import http.client
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time

DAEMON, SOURCE, OUT = sys.argv[1:4]
PHOTO = "line-0009.jpg"     # the CNN reads all of it, segmented (truth.tsv)
WAIT_S = 25


def fail(msg):
    print("FAIL: " + msg, flush=True)
    raise SystemExit(1)


def find_chromium():
    for name in [os.environ.get("NC_CHROMIUM", ""), "chromium", "chromium-browser",
                 "google-chrome", "google-chrome-stable"]:
        path = name and shutil.which(name)
        if path:
            return path
    return None


def high_fd(fd):
    """fd copied above 9 (close-on-exec) so that dup2 onto 3 and 4 in the
    child cannot overwrite one source with the other."""
    hi = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return hi


def spawn(argv, fds, log, env=None):
    """argv with fds[i] as its fd 3+i, stdout and stderr into log."""
    actions = [(os.POSIX_SPAWN_DUP2, fd, 3 + i) for i, fd in enumerate(fds)]
    actions += [(os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
                (os.POSIX_SPAWN_DUP2, 1, 2)]
    return os.posix_spawn(argv[0], argv, env or os.environ, file_actions=actions)


def reap(pid, sig, timeout):
    """Signal pid, wait up to timeout; its exit status, or None (killed)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


class Daemon:
    """neocogd with the CNN only, its HTTP socket handed over as systemd's
    socket activation does (no port to guess, none to race for)."""

    def __init__(self, tmp):
        models = os.environ.get("NC_WEB_MODELS")
        if not models:
            models = os.path.join(tmp, "models")
            os.mkdir(models)
            os.symlink(os.path.join(SOURCE, "models", "cnn-column.ncm"),
                       os.path.join(models, "cnn-column.ncm"))
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.port = sock.getsockname()[1]
        fd = high_fd(sock.detach())
        self.log = os.path.join(tmp, "neocogd.log")
        env = dict(os.environ, LISTEN_FDS="1", LISTEN_FDNAMES="http")
        # LISTEN_PID must be the daemon's own pid: sh's, which exec keeps.
        self.pid = spawn(["/bin/sh", "-c", 'export LISTEN_PID=$$; exec "$0" "$@"', DAEMON,
                          "--models", models, "--listen-unix", "none", "--listen-tcp", "none",
                          "--workers", "1"], [fd], self.log, env)
        os.close(fd)
        end = time.monotonic() + WAIT_S
        while self.get("/readyz")[0] != 200:
            if time.monotonic() > end or os.waitpid(self.pid, os.WNOHANG)[0]:
                fail("neocogd did not become ready; its log:\n" + open(self.log).read())
            time.sleep(0.05)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        except OSError:
            return 0, {}, b""
        finally:
            c.close()

    def stop(self):
        return reap(self.pid, signal.SIGTERM, 20)


class Browser:
    """Headless Chromium spoken to over --remote-debugging-pipe."""

    def __init__(self, exe, tmp):
        cmd_r, self.cmd_w = os.pipe()       # we write, Chromium reads its fd 3
        self.out_r, out_w = os.pipe()       # Chromium writes its fd 4, we read
        cmd_r, out_w = high_fd(cmd_r), high_fd(out_w)
        self.log = os.path.join(tmp, "chromium.log")
        self.pid = spawn([exe, "--headless", "--no-sandbox", "--disable-gpu",
                          "--remote-debugging-pipe", "--user-data-dir=" + os.path.join(tmp, "profile"),
                          "--no-first-run", "--no-default-browser-check", "--disable-dev-shm-usage",
                          "--disable-extensions", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", "--mute-audio",
                          "--hide-scrollbars", "--window-size=1280,900", "about:blank"],
                         [cmd_r, out_w], self.log)
        os.close(cmd_r)
        os.close(out_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.out_r], [], [], left)[0]:
                fail("Chromium did not answer; its log:\n" + open(self.log).read()[-3000:])
            chunk = os.read(self.out_r, 1 << 20)
            if not chunk:
                fail("Chromium closed its pipe; its log:\n" + open(self.log).read()[-3000:])
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, timeout=WAIT_S, session=True, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    fail("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            fail("page script %r: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, expr, what, timeout=WAIT_S):
        end = time.monotonic() + timeout
        while True:
            v = self.js(expr)
            if v:
                return v
            if time.monotonic() > end:
                fail("timed out waiting for %s; the page logged: %s" % (what, self.errors()))
            time.sleep(0.1)

    def errors(self):
        """Console errors, exceptions and refusals (the CSP's among them)."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("exception", {}).get("description") or
                           p["exceptionDetails"].get("text"))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(p["entry"]["text"])
        return out

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except SystemExit:
            pass
        reap(self.pid, signal.SIGTERM, 10)


def pad_point(rect, fx, fy):
    return rect["x"] + fx * rect["width"], rect["y"] + fy * rect["height"]


def path(points, steps):
    """points joined by straight lines of steps moves each."""
    out = [points[0]]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        out += [(x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps) for k in range(1, steps + 1)]
    return out


def mouse_stroke(b, rect, points):
    pts = [pad_point(rect, x, y) for x, y in path(points, 10)]
    x, y = pts[0]
    b.call("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", buttons=1,
           clickCount=1)
    for x, y in pts[1:]:
        b.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y, button="left", buttons=1)
        time.sleep(0.012)       # a hand's pace: answers arrive while drawing
    b.call("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y, button="left", buttons=0,
           clickCount=1)


def touch_stroke(b, rect, points):
    pts = [pad_point(rect, x, y) for x, y in path(points, 10)]
    x, y = pts[0]
    b.call("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": x, "y": y}])
    for x, y in pts[1:]:
        b.call("Input.dispatchTouchEvent", type="touchMove", touchPoints=[{"x": x, "y": y}])
        time.sleep(0.012)
    b.call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])


def cnn_answer(b):
    """The digit the CNN's card shows once it answers the drawing as it is."""
    b.wait("(() => { const p = document.getElementById('pad'), c = document.getElementById('net-cnn');"
           " return !p.dataset.drawing && c.dataset.version === p.dataset.version; })()",
           "the CNN's answer to the finished drawing")
    return b.js("document.getElementById('net-cnn').dataset.digit || "
                "'(none: ' + document.querySelector('#net-cnn .note').textContent + ')'")


def press_enter_on(b, element_id):
    """Keyboard, not a click: focus the button and press Enter."""
    b.js("document.getElementById(%r).focus()" % element_id)
    b.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter",
           windowsVirtualKeyCode=13, text="\r")
    b.call("Input.dispatchKeyEvent", type="keyUp", key="Enter", code="Enter",
           windowsVirtualKeyCode=13)


def pick_photo(b, path):
    """Choose path in the photo panel's file input; wait for its answer."""
    b.js("document.getElementById('photo-result').dataset.state = 'picking'")
    node = b.call("Runtime.evaluate", expression="document.getElementById('photo-file')")
    b.call("DOM.setFileInputFiles", objectId=node["result"]["objectId"], files=[path])
    state = b.wait("(() => { const s = document.getElementById('photo-result').dataset.state;"
                   " return s === 'done' || s === 'error' ? s : ''; })()",
                   "the answer to " + os.path.basename(path))
    if state != "done":
        fail("%s failed: %r" % (os.path.basename(path),
                                b.js("document.getElementById('photo-note').textContent")))


def truth_of(name):
    for line in open(os.path.join(SOURCE, "tests", "data", "photos", "truth.tsv")):
        f = line.rstrip("\n").split("\t")
        if f[0] == name:
            return f[1]
    fail("%s is not in truth.tsv" % name)


def check_headers(d):
    status, h, body = d.get("/")
    h = {k.lower(): v for k, v in h.items()}
    if status != 200 or h.get("content-type") != "text/html; charset=utf-8":
        fail("GET / answered %d %s" % (status, h.get("content-type")))
    if h.get("cache-control") != "no-cache":
        fail("GET / Cache-Control %r" % h.get("cache-control"))
    csp = h.get("content-security-policy", "")
    for want in ("default-src 'none'", "script-src 'sha256-", "connect-src 'self'"):
        if want not in csp:
            fail("the Content-Security-Policy lacks %r: %r" % (want, csp))
    if b"<canvas id=\"pad\"" not in body:
        fail("GET / is not the page")


def main():
    exe = find_chromium()
    if not exe:
        print("SKIP: no Chromium (chromium, chromium-browser or $NC_CHROMIUM)")
        return 77
    tmp = tempfile.mkdtemp(prefix="neocog-web-")
    d = Daemon(tmp)
    b = None
    try:
        check_headers(d)
        b = Browser(exe, tmp)
        target = next(t for t in b.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        b.session = b.call("Target.attachToTarget", targetId=target["targetId"],
                           flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            b.call(domain + ".enable")
        b.call("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1,
               mobile=False)
        b.call("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
        b.call("Page.navigate", url="http://127.0.0.1:%d/" % d.port)
        b.wait("document.readyState === 'complete'", "the page to load")

        # The status panel: the CNN loaded, the neocognitron not, so neither
        # its card nor the ensemble's sends anything.
        b.wait("document.getElementById('status').dataset.state === 'ok'", "the status panel")
        models = b.js("document.getElementById('st-models').textContent")
        all_models = "neocognitron (" in models
        if "cnn (" not in models or not all_models and "neocognitron: not loaded" not in models:
            fail("status panel models: %r" % models)
        for card in ("neocognitron", "ensemble"):
            if not all_models:
                b.wait("document.getElementById('net-%s').dataset.state === 'off'" % card,
                       "the %s card to say it is not loaded" % card)

        rect = b.js("(() => { const r = document.getElementById('pad').getBoundingClientRect();"
                    " return {x: r.x, y: r.y, width: r.width, height: r.height}; })()")
        # A "1" with a finger: one stroke.
        touch_stroke(b, rect, [(0.52, 0.15), (0.48, 0.85)])
        got = cnn_answer(b)
        if got != "1":
            fail("drew a 1 by touch, the CNN's card shows %r" % got)
        press_enter_on(b, "clear")
        b.wait("!document.getElementById('net-cnn').dataset.digit && "
               "document.getElementById('net-cnn').dataset.version === '0'", "Clear to empty the card")

        # A "7" with the mouse: the bar, then the stem.
        mouse_stroke(b, rect, [(0.22, 0.2), (0.76, 0.2)])
        mouse_stroke(b, rect, [(0.76, 0.2), (0.6, 0.5), (0.45, 0.84)])
        got = cnn_answer(b)
        if got != "7":
            fail("drew a 7 with the mouse, the CNN's card shows %r" % got)
        bars = b.js("document.querySelectorAll('#net-cnn .bars li').length")
        if bars != 10:
            fail("the CNN's card has %r score bars, not 10" % bars)
        for card in ("neocognitron", "ensemble"):
            if all_models:
                b.wait("document.getElementById('net-%s').dataset.version === "
                       "document.getElementById('pad').dataset.version" % card,
                       "the %s card's answer" % card, timeout=60)

        # A PGM, which browsers cannot show (the page reads it itself), then
        # a photo of a digit string, each picked through the file input.
        pick_photo(b, os.path.join(SOURCE, "tests", "data", "sample-2.pgm"))
        text = b.js("document.getElementById('photo-result').dataset.text")
        width = b.js("document.getElementById('photo').width")
        if text != "2" or width < 84:
            fail("sample-2.pgm: read %r, drawn %r px wide" % (text, width))
        truth = truth_of(PHOTO)
        pick_photo(b, os.path.join(SOURCE, "tests", "data", "photos", PHOTO))
        text = b.js("document.getElementById('photo-result').dataset.text")
        if text != truth:
            fail("the photo reads %r, its truth is %r" % (text, truth))
        boxes = b.js("+document.getElementById('photo').dataset.boxes")
        items = b.js("document.querySelectorAll('#photo-digits li').length")
        if boxes != len(truth) or items != len(truth):
            fail("%r boxes and %r listed characters for %d digits" % (boxes, items, len(truth)))
        # The boxes are on the canvas: a grey photo has no green of its own.
        green = b.js("(() => { const c = document.getElementById('photo');"
                     " const p = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                     " let n = 0; for (let i = 0; i < p.length; i += 4)"
                     "   if (p[i + 1] > p[i] + 60 && p[i + 1] > p[i + 2] + 40) n++;"
                     " return n; })()")
        if green < 100 * len(truth):
            fail("only %r box-coloured pixels over the photo" % green)
        b.screenshot(os.path.join(OUT, "web-page.png"))

        # A phone's width: nothing wider than the screen.
        b.call("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=1,
               mobile=True)
        b.wait("document.documentElement.clientWidth === 390", "the phone-sized layout")
        wide = b.js("document.documentElement.scrollWidth")
        b.screenshot(os.path.join(OUT, "web-page-phone.png"))
        if wide > 390:
            fail("on a 390 px wide screen the page is %r px wide" % wide)

        errors = b.errors()
        if errors:
            fail("the page logged errors:\n  " + "\n  ".join(map(str, errors)))
        print("ok: touch 1, mouse 7, %s read as %s with %d boxes; screenshots in %s"
              % (PHOTO, text, boxes, OUT))
    finally:
        if b:
            b.close()
        rc = d.stop()
        if rc != 0:
            print(open(d.log).read()[-3000:])
            fail("neocogd exited %r after SIGTERM" % rc)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


sys.exit(main())
