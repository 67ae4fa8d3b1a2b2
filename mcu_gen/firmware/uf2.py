"""UF2 files (Microsoft's USB flashing format) from an ELF, and their checks.

    data = elf_to_uf2(Path("firmware.elf").read_bytes(), family=RP2350_ARM_S)
    blocks = parse_uf2(data)          # raises Uf2Error on any malformed block

A UF2 file is a run of 512-byte blocks, each carrying 256 bytes for one
256-byte aligned flash page (little endian):
  magic0 0x0A324655, magic1 0x9E5D5157, flags (0x2000: family id present),
  target address, payload size (256), block number, number of blocks,
  family id, 476 data bytes (256 used, the rest zero), magic end 0x0AB16F30.
The image is taken from the ELF's PT_LOAD segments at their load addresses
(p_paddr), so .data's initial values land in flash where the startup copies
them from; gaps inside a page are 0xFF (erased flash), as uf2conv does.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from mcu_gen.errors import McuGenError

MAGIC0, MAGIC1, MAGIC_END = 0x0A324655, 0x9E5D5157, 0x0AB16F30
FLAG_FAMILY_ID = 0x00002000
BLOCK_SIZE = 512
PAGE_SIZE = 256
DATA_SIZE = 476

RP2040 = 0xE48BFF56
RP2350_ARM_S = 0xE48BFF59
RP2350_RISCV = 0xE48BFF5A
RP2350_ARM_NS = 0xE48BFF5B

PT_LOAD = 1


class Uf2Error(McuGenError, ValueError):
    """A malformed ELF or UF2 file."""


@dataclass(frozen=True)
class Block:
    address: int
    data: bytes  # the payload (payload size bytes)
    number: int
    count: int
    family: int


def load_segments(elf: bytes) -> list[tuple[int, bytes]]:
    """(load address, bytes) of every non-empty PT_LOAD segment of a 32-bit little-endian ELF."""
    if elf[:4] != b"\x7fELF" or len(elf) < 52 or elf[4] != 1 or elf[5] != 1:
        raise Uf2Error("not a 32-bit little-endian ELF file")
    phoff = struct.unpack_from("<I", elf, 28)[0]
    phentsize, phnum = struct.unpack_from("<HH", elf, 42)
    segments = []
    for i in range(phnum):
        p_type, p_offset, _vaddr, p_paddr, p_filesz = struct.unpack_from("<5I", elf, phoff + i * phentsize)
        if p_type == PT_LOAD and p_filesz:
            if p_offset + p_filesz > len(elf):
                raise Uf2Error(f"ELF segment {i} runs past the end of the file")
            segments.append((p_paddr, elf[p_offset : p_offset + p_filesz]))
    if not segments:
        raise Uf2Error("the ELF has no loadable segment")
    return segments


def image_pages(segments, page: int = PAGE_SIZE) -> dict[int, bytes]:
    """Page address -> page bytes (0xFF where no segment writes)."""
    pages: dict[int, bytearray] = {}
    for addr, data in segments:
        off = 0
        while off < len(data):
            a = addr + off
            base = a - a % page
            n = min(page - (a - base), len(data) - off)
            buf = pages.setdefault(base, bytearray(b"\xff" * page))
            buf[a - base : a - base + n] = data[off : off + n]
            off += n
    return {k: bytes(v) for k, v in sorted(pages.items())}


def elf_to_uf2(elf: bytes, family: int = RP2350_ARM_S) -> bytes:
    pages = image_pages(load_segments(elf))
    out = bytearray()
    for n, (base, page) in enumerate(pages.items()):
        out += struct.pack("<8I", MAGIC0, MAGIC1, FLAG_FAMILY_ID, base, PAGE_SIZE, n, len(pages), family)
        out += page + bytes(DATA_SIZE - PAGE_SIZE) + struct.pack("<I", MAGIC_END)
    return bytes(out)


def parse_uf2(data: bytes) -> list[Block]:
    """Every block, after checking magics, flags, numbering, payload size and alignment."""
    if not data or len(data) % BLOCK_SIZE:
        raise Uf2Error(f"UF2 size {len(data)} is not a positive multiple of {BLOCK_SIZE}")
    blocks = []
    count = len(data) // BLOCK_SIZE
    for i in range(count):
        blk = data[i * BLOCK_SIZE : (i + 1) * BLOCK_SIZE]
        m0, m1, flags, addr, size, number, total, family = struct.unpack_from("<8I", blk, 0)
        (m_end,) = struct.unpack_from("<I", blk, BLOCK_SIZE - 4)
        where = f"block {i}"
        if (m0, m1, m_end) != (MAGIC0, MAGIC1, MAGIC_END):
            raise Uf2Error(f"{where}: bad magic numbers")
        if not flags & FLAG_FAMILY_ID:
            raise Uf2Error(f"{where}: no family id flag (0x2000)")
        if size != PAGE_SIZE or addr % PAGE_SIZE:
            raise Uf2Error(f"{where}: payload {size} bytes at 0x{addr:08x}; want {PAGE_SIZE} at a page boundary")
        if number != i or total != count:
            raise Uf2Error(f"{where}: numbered {number} of {total}, expected {i} of {count}")
        if any(blk[32 + size : BLOCK_SIZE - 4]):
            raise Uf2Error(f"{where}: padding after the payload is not zero")
        blocks.append(Block(addr, bytes(blk[32 : 32 + size]), number, total, family))
    return blocks


def uf2_image(blocks: list[Block]) -> dict[int, bytes]:
    """Page address -> bytes, as the bootloader writes them."""
    return {b.address: b.data for b in blocks}
