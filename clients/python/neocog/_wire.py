"""neocog._wire — server addresses and the NCOG stream framing.

The same rules as the C library (clients/client.c, proto/frame.h), so an
address or a frame means the same thing to every client:

  frame = 12-byte header ("NCOG", version 1, flags 0, 2 reserved zero bytes,
          big-endian payload length) + one packed protobuf message.
"""

import os
import stat
import struct

DEFAULT_TCP_HOST = "127.0.0.1"
DEFAULT_TCP_PORT = 5517
DEFAULT_UNIX_PATH = "/run/neocogd/neocogd.sock"
FRAME_DEFAULT_MAX = 4 << 20          # NC_FRAME_DEFAULT_MAX
FRAME_MAX_LIMIT = 1 << 30            # NC_FRAME_MAX_LIMIT

_HEADER = struct.Struct(">4sBBHI")
HEADER_LEN = _HEADER.size            # 12
_MAGIC = b"NCOG"
_VERSION = 1


class Address:
    """A parsed server address: kind "unix" with path, or "tcp" with host, port."""

    __slots__ = ("kind", "path", "host", "port")

    def __init__(self, kind, path=None, host=None, port=None):
        self.kind, self.path, self.host, self.port = kind, path, host, port

    def __str__(self):
        if self.kind == "unix":
            return "unix:" + self.path
        host = "[%s]" % self.host if ":" in self.host else self.host
        return "tcp:%s:%d" % (host, self.port)

    def __repr__(self):
        return "Address(%r)" % str(self)


def parse_address(text):
    """unix:PATH, PATH (anything with a '/'), tcp:HOST:PORT, HOST:PORT,
    [v6]:PORT, tcp:HOST or HOST (port 5517).  ValueError for anything else."""
    if not isinstance(text, str) or not text:
        raise ValueError("empty server address")
    bad = ValueError("bad server address %r (want unix:PATH or tcp:HOST:PORT)" % text)
    rest, is_unix = text, False
    if text.startswith("unix:"):
        rest, is_unix = text[5:], True
    elif text.startswith("tcp:"):
        rest = text[4:]
    elif "/" in text:
        is_unix = True
    if is_unix:
        # sun_path holds 108 bytes with its terminating zero.
        if not rest or len(os.fsencode(rest)) >= 108:
            raise bad
        return Address("unix", path=rest)
    port = None
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise bad
        host, after = rest[1:close], rest[close + 1:]
        if after.startswith(":"):
            port = after[1:]
        elif after:
            raise bad
    else:
        host, sep, port_text = rest.partition(":")
        if ":" in port_text:
            raise bad           # a bare IPv6 address needs brackets
        if sep:
            port = port_text
    if not host or len(host) >= 256:
        raise bad
    if port is None:
        return Address("tcp", host=host, port=DEFAULT_TCP_PORT)
    if not port.isdigit() or not 0 < int(port) <= 65535:
        raise bad
    return Address("tcp", host=host, port=int(port))


def _is_socket(path):
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def default_address():
    """$NEOCOG_SERVER, else the daemon's default Unix socket if it exists
    (/run/neocogd/neocogd.sock, then $XDG_RUNTIME_DIR/neocogd.sock), else
    tcp:127.0.0.1:5517 — the C library's nc_client_default_addr."""
    env = os.environ.get("NEOCOG_SERVER")
    if env:
        return env
    if _is_socket(DEFAULT_UNIX_PATH):
        return "unix:" + DEFAULT_UNIX_PATH
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and _is_socket(os.path.join(xdg, "neocogd.sock")):
        return "unix:" + os.path.join(xdg, "neocogd.sock")
    return "tcp:%s:%d" % (DEFAULT_TCP_HOST, DEFAULT_TCP_PORT)


def frame(payload):
    """One frame around a packed message."""
    return _HEADER.pack(_MAGIC, _VERSION, 0, 0, len(payload)) + payload


class FrameError(Exception):
    """The peer's stream is not NCOG frames; it cannot be resynchronised."""


class FrameDecoder:
    """Bytes in any pieces, whole payloads out.  The buffer holds only what
    has arrived, never the announced length up front."""

    def __init__(self, max_len=FRAME_DEFAULT_MAX):
        self.max_len = max_len
        self._buf = bytearray()

    def feed(self, data):
        """Append data; return the list of payloads completed by it."""
        self._buf += data
        out = []
        while len(self._buf) >= HEADER_LEN:
            magic, version, flags, reserved, length = _HEADER.unpack_from(self._buf)
            if magic != _MAGIC:
                raise FrameError("the peer does not speak the NCOG framing (bad magic)")
            if version != _VERSION:
                raise FrameError("unsupported frame version %d (this side speaks 1)" % version)
            if flags or reserved:
                raise FrameError("frame header has flag or reserved bits set")
            if length > self.max_len:
                raise FrameError("frame of %d bytes over the %d-byte limit"
                                 % (length, self.max_len))
            end = HEADER_LEN + length
            if len(self._buf) < end:
                break
            out.append(bytes(self._buf[HEADER_LEN:end]))
            del self._buf[:end]
        return out

    def mid_frame(self):
        """True when part of a frame has arrived and the rest has not."""
        return bool(self._buf)
