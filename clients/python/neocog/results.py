"""neocog.results — the daemon's answers as small immutable objects.

Field for field the ``Result``, ``Digit``, ``Candidate`` and ``Box`` messages
of proto/neocog.proto (which documents each), with enums turned into words:
``reject_reason`` is None for an accepted answer, else "no ink", "below
threshold", "ambiguous segmentation" or "no response" (the C client's words).
"""

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from . import neocog_pb2 as pb

__all__ = ["Box", "Candidate", "Digit", "Timing", "Result", "Health"]

_REJECT_WORDS = {
    pb.REJECT_NONE: None,
    pb.REJECT_NO_INK: "no ink",
    pb.REJECT_BELOW_THRESHOLD: "below threshold",
    pb.REJECT_AMBIGUOUS_SEGMENTATION: "ambiguous segmentation",
    pb.REJECT_NO_RESPONSE: "no response",
}


def _reject_words(reason):
    return _REJECT_WORDS.get(reason, "unknown")


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int

    @classmethod
    def _of(cls, m):
        return cls(m.x, m.y, m.width, m.height)


@dataclass(frozen=True)
class Candidate:
    label: int          # class index
    text: str           # the class's label, e.g. "7"
    score: float        # calibrated, 0..1

    @classmethod
    def _of(cls, m):
        return cls(m.label, m.text, m.score)


@dataclass(frozen=True)
class Digit:
    """One character found by segmentation."""
    text: str                       # "?" when rejected
    label: int                      # -1 when rejected
    confidence: float
    box: Box
    line: int                       # 0 = top text line
    reject: bool
    reject_reason: Optional[str]
    threshold: float                # minimum confidence in force (0: none)
    top: Tuple[Candidate, ...]      # with top_k > 0

    @classmethod
    def _of(cls, m):
        return cls(m.text, m.label, m.confidence, Box._of(m.box), m.line, m.reject,
                   _reject_words(m.reject_reason) if m.reject else None, m.threshold,
                   tuple(Candidate._of(c) for c in m.top))


@dataclass(frozen=True)
class Timing:
    """The daemon's own timing of the request, microseconds."""
    queue_us: int
    compute_us: int
    total_us: int
    prepare_us: int
    forward_us: int

    @classmethod
    def _of(cls, m):
        return cls(m.queue_us, m.compute_us, m.total_us, m.prepare_us, m.forward_us)


@dataclass(frozen=True)
class Result:
    """The answer for one image.

    A whole image: ``text`` is its class ("7"), ``top`` the best top_k
    candidates, ``scores`` the network's output per class.  A segmented
    image (segment=True): ``text`` is the whole string, lines joined by
    "\\n", a rejected character as "?"; ``digits`` the characters in reading
    order with their boxes, ``confidence`` the least confident one's."""
    text: str
    label: int
    confidence: float
    reject: bool
    reject_reason: Optional[str]
    threshold: float
    top: Tuple[Candidate, ...]
    scores: Tuple[float, ...]
    digits: Tuple[Digit, ...]
    model: str                      # which network answered
    timing: Optional[Timing] = field(default=None, compare=False)

    @property
    def boxes(self) -> List[Box]:
        """The segmented characters' boxes, in reading order."""
        return [d.box for d in self.digits]

    @property
    def lines(self) -> List[str]:
        """The text line by line (one line for a whole image)."""
        return self.text.split("\n")

    @classmethod
    def _of(cls, m, model, timing):
        return cls(m.text, m.label, m.confidence, m.reject,
                   _reject_words(m.reject_reason) if m.reject else None, m.threshold,
                   tuple(Candidate._of(c) for c in m.top), tuple(m.scores),
                   tuple(Digit._of(d) for d in m.digits), model, timing)


@dataclass(frozen=True)
class Health:
    live: bool
    ready: bool                     # models loaded and warmed, not draining
    draining: bool
    state: str                      # "serving", "reloading", "draining"

    @classmethod
    def _of(cls, m):
        return cls(m.live, m.ready, m.draining, m.state)
