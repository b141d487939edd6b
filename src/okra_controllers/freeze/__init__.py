"""Freezes: when one applies (`windows`, pure), and which hold an object until when (`hold`,
pure). The Cell and ProgressiveRollout controllers read Freezes from their caches and plan
with the `Hold` this gives them."""

from okra_controllers.freeze.hold import Applying, Hold, Invalid, Parsed, hold_at, parse, when
from okra_controllers.freeze.windows import Span, Window, applies, next_start

__all__ = [
    "Applying",
    "Hold",
    "Invalid",
    "Parsed",
    "Span",
    "Window",
    "applies",
    "hold_at",
    "next_start",
    "parse",
    "when",
]
