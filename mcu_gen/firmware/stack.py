"""The stack of a deployable image: what to reserve for a static bound (firmware/stack_bound.py, at build
time) or for a measured high-water mark (`mcu-gen run`, where the code cannot be bounded). builder.relink
links a built firmware again with it."""
from __future__ import annotations


# The stack a deployable image reserves once the stack it uses is measured (`mcu-gen run`): the measured
# high-water mark plus STACK_MARGIN_FIXED bytes (an exception frame with FP state is 104 B, plus the
# handler's own frame) plus 1/STACK_MARGIN_DIVISOR of it (a path the runs did not take), rounded up to 64.
STACK_MARGIN_FIXED = 256
STACK_MARGIN_DIVISOR = 8


def stack_reserve(measured: int) -> int:
    """Bytes of stack to reserve for a measured high-water mark of `measured` bytes."""
    n = measured + STACK_MARGIN_FIXED + (measured + STACK_MARGIN_DIVISOR - 1) // STACK_MARGIN_DIVISOR
    return (n + 63) // 64 * 64


STACK_RULE = (f"measured high-water mark + {STACK_MARGIN_FIXED} B + 1/{STACK_MARGIN_DIVISOR} of it, "
              "rounded up to 64 B")


# The stack a build reserves from a static bound: the bound plus 1/STATIC_MARGIN_DIVISOR of it (an
# instruction form the reader might mis-size), rounded up to 64 B.
STATIC_MARGIN_DIVISOR = 16
STATIC_RULE = f"static bound + 1/{STATIC_MARGIN_DIVISOR} of it, rounded up to 64 B"


def static_reserve(bound: int) -> int:
    """Bytes of stack to reserve for a static bound of `bound` bytes."""
    n = bound + (bound + STATIC_MARGIN_DIVISOR - 1) // STATIC_MARGIN_DIVISOR
    return (n + 63) // 64 * 64
