"""ExecuTorch's PTE format (ET12): the constants the reader and the writer share (docs/schema/program.fbs).

The schema is docs/schema/program.fbs; slot numbers in pte_writer.py and pte_reader.py follow its field order.
"""
from __future__ import annotations

from mcu_gen.errors import McuGenError

__all__ = ["IDENTIFIER", "HEADER_MAGIC", "HEADER_LENGTH", "SEGMENT_ALIGNMENT", "TENSOR_ALIGNMENT", "K_NULL", "K_INT", "K_BOOL", "K_DOUBLE", "K_TENSOR", "K_STRING", "K_INT_LIST", "K_DOUBLE_LIST", "K_BOOL_LIST", "K_TENSOR_LIST", "K_OPT_TENSOR_LIST", "I_KERNEL_CALL", "I_DELEGATE_CALL", "LOC_INLINE", "LOC_SEGMENT", "LOC_EXTERNAL", "DELEGATE_PREFIX", "PteError", "align"]

IDENTIFIER = b"ET12"
HEADER_MAGIC = b"eh00"
HEADER_LENGTH = 32
SEGMENT_ALIGNMENT = 128
TENSOR_ALIGNMENT = 16

# KernelTypes union tags.
K_NULL, K_INT, K_BOOL, K_DOUBLE, K_TENSOR, K_STRING = 1, 2, 3, 4, 5, 6
K_INT_LIST, K_DOUBLE_LIST, K_BOOL_LIST, K_TENSOR_LIST, K_OPT_TENSOR_LIST = 7, 8, 9, 10, 11
# InstructionArguments union tags.
I_KERNEL_CALL = 1
I_DELEGATE_CALL = 2
# DataLocation of a delegate's processed data.
LOC_INLINE, LOC_SEGMENT = 0, 1
# TensorDataLocation of a tensor's data (ExtraTensorInfo.location): EXTERNAL, held outside the program.
LOC_EXTERNAL = 1
# IR instructions calling delegate k of program.meta["delegates"] are named "delegate:k"
# (mcu_gen/backends/ethosu/delegate.py); each delegate is a dict with id, processed (bytes), compile_specs.
DELEGATE_PREFIX = "delegate:"


class PteError(McuGenError, ValueError):
    """A file that is not a valid ET12 program (or uses what mcu-gen can't read)."""


def align(n: int, a: int) -> int:
    return (n + a - 1) // a * a
