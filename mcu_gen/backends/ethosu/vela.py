"""TOSA flatbuffer -> Vela -> the delegate blob, plus Vela's estimates.

The blob is the "vela_bin_stream" layout ExecuTorch's Ethos-U backend stores (and its runtime's
VelaBinStream parser reads), so the two tools agree on the processed data of an
"EthosUBackend" delegate. Blocks, in order: vela_bin_stream (empty), cmd_data, weight_data,
scratch_size (uint32), inputs, outputs, vela_end_stream (empty). Each block is a 16-byte
NUL-padded name, a uint32 length, a 1-byte external flag, 11 reserved bytes, then the data
padded to 16 bytes. inputs/outputs: int32 count, then per tensor int32 shape[6], elem_size,
offset (into the scratch region), region.
"""
from __future__ import annotations

import contextlib
import csv
import io
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mcu_gen.backends.ethosu.targets import NpuTarget
from mcu_gen.errors import McuGenError

_HEADER = struct.Struct("<16sIB11s")


class VelaError(McuGenError, RuntimeError):
    pass


@dataclass
class VelaIO:
    shape: list  # 6-D
    elem_size: int
    offset: int
    region: int


@dataclass
class VelaResult:
    cmd_data: bytes
    weight_data: bytes
    scratch_size: int
    inputs: list
    outputs: list
    estimates: dict = field(default_factory=dict)

    def blob(self) -> bytes:
        return pack_stream(self)


def _io_block(items) -> bytes:
    out = struct.pack("<i", len(items))
    for t in items:
        out += struct.pack("<9i", *t.shape, t.elem_size, t.offset, t.region)
    return out


def pack_stream(r: VelaResult) -> bytes:
    blocks = [("vela_bin_stream", b""), ("cmd_data", r.cmd_data), ("weight_data", r.weight_data),
              ("scratch_size", struct.pack("<I", r.scratch_size)), ("inputs", _io_block(r.inputs)),
              ("outputs", _io_block(r.outputs)), ("vela_end_stream", b"")]
    out = bytearray()
    for name, data in blocks:
        out += _HEADER.pack(name.encode().ljust(16, b"\0"), len(data), 0, b"\0" * 11)
        out += data + b"\0" * (-len(data) % 16)
    return bytes(out)


def parse_stream(blob: bytes) -> dict:
    """Block name -> bytes (unpadded); the inverse of pack_stream, for tests and inspect."""
    blocks, pos = {}, 0
    while pos + 32 <= len(blob):
        name, n, ext, _ = _HEADER.unpack_from(blob, pos)
        name = name.rstrip(b"\0").decode()
        pos += 32
        blocks[name] = bytes(blob[pos: pos + n])
        pos += n + (-n % 16)
        if name == "vela_end_stream":
            break
    if "vela_bin_stream" not in blocks or "vela_end_stream" not in blocks:
        raise VelaError("not a vela_bin_stream")
    return blocks


def _ios(data, prefix) -> list:
    return [VelaIO([int(x) for x in data[prefix + "_shape"][i]], int(data[prefix + "_elem_size"][i]),
                   int(data[prefix + "_offset"][i]), int(data[prefix + "_region"][i]))
            for i in range(len(data[prefix + "_shape"]))]


_ESTIMATES = {"cycles_npu": int, "cycles_total": int, "cycles_sram_access": int,
              "cycles_off_chip_flash_access": int, "inference_time": float, "sram_memory_used": float,
              "off_chip_flash_memory_used": float, "nn_macs": int, "total_npu_encoded_weights": int,
              "core_clock": float}


def compile_tosa(tosa: bytes, npu: NpuTarget, name: str = "subgraph", keep_dir: Path | None = None) -> VelaResult:
    try:
        from ethosu.vela import vela
    except ImportError as e:
        raise VelaError(f"ethos-u-vela is not installed: pip install 'mcu-gen[ethos-u]' ({e})") from None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(keep_dir) if keep_dir else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        src = work / f"{name}.tosa"
        src.write_bytes(tosa)
        out_dir = work / "vela"
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                rc = vela.main(npu.vela_args + [f"--output-dir={out_dir}", str(src)])
        except (RuntimeError, ValueError, SystemExit) as e:
            raise VelaError(f"Vela could not compile {name} for {npu.name}: {e}\n{log.getvalue()[-2000:]}") from None
        if rc not in (None, 0):
            raise VelaError(f"Vela exited with {rc} for {name}:\n{log.getvalue()[-2000:]}")
        npz = out_dir / f"{name}_vela.npz"
        if not npz.exists():
            raise VelaError(f"Vela wrote no {npz.name}:\n{log.getvalue()[-2000:]}")
        with np.load(npz, allow_pickle=False) as d:
            result = VelaResult(bytes(d["cmd_data"].tobytes()), bytes(d["weight_data"].tobytes()),
                                int(d["scratch_size"]), _ios(d, "input"), _ios(d, "output"))
            if int(d["scratch_fast_size"]) != 0:
                raise VelaError(f"{name}: Vela asked for {int(d['scratch_fast_size'])} B of fast scratch, "
                                f"which the {npu.memory_mode} memory mode should not need")
        summary = next(out_dir.glob(f"{name}_summary_*.csv"), None)
        if summary is not None:
            with open(summary) as f:
                row = next(csv.DictReader(f), {})
            result.estimates = {k: conv(row[k]) for k, conv in _ESTIMATES.items() if row.get(k) not in (None, "")}
            result.estimates["npu_operators_vela"] = _count(log.getvalue(), "NPU operators")
            result.estimates["cpu_operators_vela"] = _count(log.getvalue(), "CPU operators")
        return result


def _count(text: str, label: str):
    for line in text.splitlines():
        if line.strip().startswith(label):
            try:
                return int(line.split("=")[1].split()[0])
            except (IndexError, ValueError):
                return None
    return None
