"""neocog — the Python client of neocogd, the handwritten digit recognition daemon.

    import neocog
    with neocog.Client("unix:/run/neocogd/neocogd.sock") as c:
        print(c.recognize("digit.png").text)

Client (neocog/client.py) speaks the daemon's socket protocol
(proto/neocog.proto in NCOG frames); AsyncClient (neocog/aio.py) is the same
for asyncio.  Results are small dataclasses (neocog/results.py); failures are
one exception class per status code (neocog/errors.py).  clients/python/README.md
says how to build, install and use it.
"""

from . import neocog_pb2 as pb
from .aio import AsyncClient
from .client import MODELS, Client
from .errors import *  # noqa: F401,F403 — the exception classes are the API
from .errors import __all__ as _errors_all
from .images import bgr_to_grey
from .results import Box, Candidate, Digit, Health, Result, Timing

__all__ = ["Client", "AsyncClient", "MODELS", "Result", "Digit", "Candidate", "Box",
           "Timing", "Health", "bgr_to_grey", "pb"] + list(_errors_all)
