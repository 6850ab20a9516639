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
from .errors import (CODE_NAMES, Aborted, AlreadyExists, Cancelled, DataLoss,
                     DeadlineExceeded, FailedPrecondition, Internal, InvalidArgument,
                     NeocogError, NotFound, OutOfRange, PermissionDenied, ProtocolError,
                     ResourceExhausted, Unauthenticated, Unavailable, Unimplemented, Unknown,
                     error_for_code)
from .images import bgr_to_grey
from .results import Box, Candidate, Digit, Health, Result, Timing

__all__ = [
    "Client", "AsyncClient", "MODELS", "Result", "Digit", "Candidate", "Box", "Timing",
    "Health", "bgr_to_grey", "pb",
    "NeocogError", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded",
    "NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
    "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal",
    "Unavailable", "DataLoss", "Unauthenticated", "ProtocolError",
    "CODE_NAMES", "error_for_code",
]
