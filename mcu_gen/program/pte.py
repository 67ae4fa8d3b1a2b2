"""Reading and writing programs in ExecuTorch's PTE format (ET12).

The schema is docs/schema/program.fbs. pte_format.py holds the constants both sides use, pte_writer.py the
writer (one execution plan per method, arena tensors in memory 1, constants in one 128-byte-aligned segment
after the flatbuffer, each 16-byte aligned, read in place from flash), pte_reader.py the reader. This module
is what the rest of mcu-gen imports: ``pte.write``, ``pte.read``.
"""
from __future__ import annotations

from mcu_gen.program.pte_format import DELEGATE_PREFIX, PteError  # noqa: F401
from mcu_gen.program.pte_reader import PteFile, read, runtime_features  # noqa: F401
from mcu_gen.program.pte_writer import device_indices, value_remap, write  # noqa: F401
