"""neocog.images — what the client accepts as an image, as an ``Image`` message.

  a path (str or os.PathLike)   the file's bytes, sent as they are (PGM P5,
                                PNG or JPEG; the daemon sniffs which)
  bytes, bytearray, memoryview  an encoded image, likewise
  a numpy array (uint8)         HxW grey, HxWx1, HxWx3 BGR or HxWx4 BGRA as
                                OpenCV gives them: colour is turned grey here
                                with OpenCV's weights and sent as raw pixels

numpy is imported only when an array is given, so paths and bytes work
without it.
"""

import os

from . import neocog_pb2 as pb
from .errors import InvalidArgument

__all__ = ["to_image", "bgr_to_grey", "POLARITIES"]

POLARITIES = {
    "auto": pb.POLARITY_AUTO,
    "light_ink": pb.POLARITY_LIGHT_INK,     # MNIST-like: 0 background, 255 ink
    "dark_ink": pb.POLARITY_DARK_INK,       # paper-like: 255 background
}


def bgr_to_grey(a):
    """HxWx3 (BGR) or HxWx4 (BGRA) uint8 -> HxW uint8 grey, the way OpenCV's
    cvtColor(COLOR_BGR2GRAY) rounds it: Y = 0.299 R + 0.587 G + 0.114 B in
    14-bit fixed point, so a frame turned grey here or by cv2 is the same."""
    import numpy as np
    b = a[..., 0].astype(np.uint32)
    g = a[..., 1].astype(np.uint32)
    r = a[..., 2].astype(np.uint32)
    y = (b * 1868 + g * 9617 + r * 4899 + (1 << 13)) >> 14
    return y.astype(np.uint8)


def _array_image(a):
    import numpy as np
    if a.dtype != np.uint8:
        raise InvalidArgument("a numpy image must be uint8, not %s" % a.dtype)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    elif a.ndim == 3 and a.shape[2] in (3, 4):
        a = bgr_to_grey(a)
    elif a.ndim != 2:
        raise InvalidArgument("a numpy image must be HxW grey or HxWx3 BGR, not shape %s"
                              % (a.shape,))
    h, w = a.shape
    return pb.Image(format=pb.FORMAT_RAW_GRAY, data=np.ascontiguousarray(a).tobytes(),
                    width=w, height=h)


def to_image(image, segment=False, polarity="auto", expected_digits=0, roi=None):
    """An ``Image`` message for one input (see the module's docstring).

    roi: (x, y, width, height) to look inside only (segment=True).  Raises
    InvalidArgument for an input of no known kind, OSError for an unreadable
    file."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        msg = pb.Image(format=pb.FORMAT_AUTO, data=bytes(image))
    elif isinstance(image, (str, os.PathLike)):
        with open(image, "rb") as f:
            msg = pb.Image(format=pb.FORMAT_AUTO, data=f.read())
    elif hasattr(image, "__array_interface__") or hasattr(image, "__array__"):
        import numpy as np
        msg = _array_image(np.asarray(image))
    else:
        raise InvalidArgument("cannot send a %s as an image (want a path, encoded bytes "
                              "or a uint8 numpy array)" % type(image).__name__)
    if polarity not in POLARITIES:
        raise InvalidArgument("polarity must be one of %s" % ", ".join(POLARITIES))
    msg.segment = bool(segment)
    msg.polarity = POLARITIES[polarity]
    if expected_digits:
        msg.expected_digits = int(expected_digits)
    if roi is not None:
        x, y, w, h = (int(v) for v in roi)
        msg.roi.CopyFrom(pb.Box(x=x, y=y, width=w, height=h))
    return msg
