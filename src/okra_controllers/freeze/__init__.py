"""Freezes and ClusterFreezes: when one applies (`windows`, pure), and which hold an object
until when (`hold`, pure). The Cell and ProgressiveRollout controllers read them (and the
Namespaces' labels) from their caches (`watch`) and plan with the `Hold` this gives them."""

from okra_controllers.freeze.hold import (
    Applying,
    Hold,
    Invalid,
    Parsed,
    hold_at,
    label,
    parse,
    when,
)
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
    "label",
    "next_start",
    "parse",
    "when",
]
