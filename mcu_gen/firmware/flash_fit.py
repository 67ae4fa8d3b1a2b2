"""The default build within the board's flash.

A generated layer on a DSP core (Cortex-M33, M4) keeps its weights pre-widened to int16 pairs: 2 bytes a weight
where the library kernel reads the program's int8 weight in place (docs/generated_kernels.md, "Flash"). When the
image with every layer generated does not fit the board's flash, `--kernels auto` leaves layers to their library
kernels until it does, those with the least compute per byte of flash first (a fully connected layer, whose every
weight is used once an inference, before a convolution that uses each weight at every pixel), and the report names
each one. A build that does not fit even so fails with the bytes it is over.

    excess = flash_excess(message)              # bytes over the board's flash, from the linker's message
    leave = layers_to_leave(gen.layers, excess)  # the layers to leave to the library kernels
"""
from __future__ import annotations

import re

import numpy as np

# GNU ld (arm-none-eabi, riscv): "region `FLASH' overflowed by 2940600 bytes"; every board's linker script calls
# its program memory FLASH (boards/*/*.ld).
_OVERFLOW = re.compile(r"region [`']FLASH' overflowed by (\d+) bytes")


def flash_excess(message: str) -> int | None:
    """Bytes the linked image is over its FLASH region, from the linker's message (None: no such overflow)."""
    m = _OVERFLOW.search(message)
    return int(m.group(1)) if m else None


def saved_bytes(layer) -> int:
    """Flash that leaving ``layer`` to its library kernel saves at least: its weight copy beyond the int8 weights
    the program then keeps (the layer's code comes on top). 0 for the MVE layers, whose reordered int8 copy takes
    the program's own place."""
    weights = getattr(getattr(layer, "src", layer), "weights", None)
    return max(0, int(layer.weight_bytes) - (int(np.size(weights)) if weights is not None else 0))


def layers_to_leave(layers, excess: int) -> list:
    """The fewest layers, least MACs a saved byte first, whose saved_bytes reach ``excess`` (all that save any,
    when together they do not). Deterministic: ties go to more bytes, then the earlier instruction."""
    ranked = sorted((l for l in layers if saved_bytes(l) > 0),
                    key=lambda l: (l.macs / saved_bytes(l), -saved_bytes(l), l.instruction))
    out, total = [], 0
    for l in ranked:
        if total >= excess:
            break
        out.append(l)
        total += saved_bytes(l)
    return out


LEFT = "left to the library kernel to fit"  # how a left layer's reason starts (report.json generated_kernels.skipped)


def leave_reason(layer, board: str, excess: int) -> str:
    return (f"{LEFT} {board}'s flash (the build was {excess:,} B over it with this layer generated; its generated "
            f"weights take {layer.weight_bytes:,} B)")


def left_count(report: dict) -> int:
    """How many generated layers a build's report says were left to the library kernels to fit the flash."""
    return sum(1 for s in (report.get("generated_kernels") or {}).get("skipped", []) if s["reason"].startswith(LEFT))
