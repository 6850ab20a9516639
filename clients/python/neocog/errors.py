"""neocog.errors — one exception class per status code of the protocol.

The codes are gRPC's numbering (``Code`` in proto/neocog.proto).  Every
exception the client raises for a request is a :class:`NeocogError`; its
``code`` says which class it is, ``message`` the daemon's (or the client's)
reason.  Errors the client gives up on after retrying carry ``attempts`` and
``last_error`` (the failure of the last attempt) and say so in their text.
"""

__all__ = [
    "NeocogError", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded",
    "NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
    "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal",
    "Unavailable", "DataLoss", "Unauthenticated", "ProtocolError",
    "CODE_NAMES", "error_for_code",
]

# Code numbers and names as in proto/neocog.proto (enum Code).
CODE_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL",
    14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}


class NeocogError(Exception):
    """A request that did not succeed.

    code        the protocol's status code (int)
    code_name   its name, e.g. "UNAVAILABLE"
    message     the reason, as the daemon (or the client) put it
    request_id  the id the request travelled under, when it was sent
    attempts    how many times it was sent or tried to be (1 without retries)
    last_error  after retries: the last attempt's failure (a NeocogError)
    """

    code = 2

    def __init__(self, message, *, request_id=None, attempts=1, last_error=None):
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.attempts = attempts
        self.last_error = last_error

    @property
    def code_name(self):
        return CODE_NAMES.get(self.code, str(self.code))

    def __str__(self):
        return "%s: %s" % (self.code_name, self.message)


class Cancelled(NeocogError):
    """The client was closed before the request was answered."""
    code = 1


class Unknown(NeocogError):
    code = 2


class InvalidArgument(NeocogError):
    """A malformed request or image; sending it again will not help."""
    code = 3


class DeadlineExceeded(NeocogError):
    """The call's deadline passed (in the daemon's queue, or while waiting)."""
    code = 4


class NotFound(NeocogError):
    code = 5


class AlreadyExists(NeocogError):
    code = 6


class PermissionDenied(NeocogError):
    code = 7


class ResourceExhausted(NeocogError):
    """The daemon's queue is full or a limit was hit; retried within the budget."""
    code = 8


class FailedPrecondition(NeocogError):
    code = 9


class Aborted(NeocogError):
    code = 10


class OutOfRange(NeocogError):
    code = 11


class Unimplemented(NeocogError):
    """A request kind or option this daemon lacks."""
    code = 12


class Internal(NeocogError):
    """A bug or an engine failure in the daemon (or in this client)."""
    code = 13


class Unavailable(NeocogError):
    """The daemon cannot be reached, is draining, or has no such model loaded."""
    code = 14


class DataLoss(NeocogError):
    code = 15


class Unauthenticated(NeocogError):
    code = 16


class ProtocolError(Unknown):
    """The daemon sent bytes this client does not understand."""


_BY_CODE = {cls.code: cls for cls in (
    Cancelled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists,
    PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange,
    Unimplemented, Internal, Unavailable, DataLoss, Unauthenticated)}


def error_for_code(code, message, **kw):
    """The exception for a status code (Unknown for a code this client lacks)."""
    cls = _BY_CODE.get(int(code), Unknown)
    return cls(message or CODE_NAMES.get(int(code), "code %d" % int(code)), **kw)
