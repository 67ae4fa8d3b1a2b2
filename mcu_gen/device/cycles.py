"""Estimated Cortex-M33 / Cortex-M55 cycles per inference, beside the exact instruction count.

QEMU counts instructions exactly (-icount) but models no pipeline. A TCG plugin
(boards/common/qemu_plugin/insn_classes.c, built here with the host C compiler) decodes every
executed Thumb-2 / MVE instruction into a class and counts them, plus the registers that
multiple loads/stores move and the branches that were taken; this module multiplies those
counts by the per-class cycle table CYCLES below. docs/cycles.md describes the model, its
sources and its known error.

    counter = CycleCounter.for_board(board, elf)      # .reason says why not, when unavailable
    QemuSession(board, elf, extra_args=counter.qemu_args())
    ... run inferences, collect their instruction counts ...
    classes = counter.per_inference(instruction_counts)   # ClassCounts per inference (or None)
    estimate(classes[0], board.core)                       # -> Estimate(cycles, low, high)
"""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mcu_gen.paths import BOARDS, cache_root

PLUGIN_DIR = BOARDS / "common" / "qemu_plugin"
PLUGIN_SOURCE = PLUGIN_DIR / "insn_classes.c"


def cache_dir() -> Path:
    """Where built plugins are kept ($MCU_GEN_CACHE/qemu-plugin, default ~/.cache/mcu-gen/qemu-plugin)."""
    return cache_root() / "qemu-plugin"

CFLAGS = ["-O2", "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra"]
# The firmware reads its tick counter with mcu_pal_ticks() right before and right after an inference
# (runtime_core/src/protocol.cpp, run_program): its entry delimits the plugin's segments.
MARK_SYMBOL = "mcu_pal_ticks"
MIN_SEGMENT = 64  # shorter segments (the UART loop between two bytes) are not written

# The plugin's classes, in its order (enum Class of insn_classes.c; the plugin's first output line
# names them and parse_output checks that they agree).
CLASSES = ("alu", "it", "hint", "mul", "mac_dsp", "mul_long", "div", "load", "load_pipelined", "store", "ldrd",
           "strd", "ldm", "stm", "pop_pc", "load_pc", "branch", "branch_cond", "call", "branch_reg",
           "table_branch", "lob", "fp_alu", "fp_mac", "fp_div", "fp_ls", "fp_lsm", "fp_mov", "mve_ls",
           "mve_ls_overlap", "mve_dp", "mve_dp_overlap", "system", "unknown")


@dataclass(frozen=True)
class Cost:
    """Cycles of one class: `base` per execution, `per_reg` per register moved (LDM/STM/POP/PUSH,
    VLDM/VSTM words) and `taken` more when a branch is taken (the pipeline refill P). `low` and
    `high` are the base cycles at the ends of the range the manual gives (None: exact). `stall`
    more when its address needs the result of the data-processing instruction just before it
    (loads and stores: ADDRESS_STALL)."""
    base: float
    per_reg: float = 0.0
    taken: float = 0.0
    low: float | None = None
    high: float | None = None
    stall: float = 0.0


# Pipeline refill after a taken branch: "P ... ranges from 1 to 3 depending on the alignment and
# width of the target instruction, and whether the processor manages to speculate the address
# early" (Cortex-M4 TRM, DDI 0439, 3.3.1, abbreviations of Table 3-1). Nominal 2, range 1..3.
P, P_LOW, P_HIGH = 2, 1, 3

# "Any load or store that generates an address dependent on the result of a preceding data
# processing operation will stall the pipeline for an additional cycle whilst the register bank is
# updated. There is no forwarding path for this scenario." (Cortex-M3 TRM, DDI 0337, "Load/store
# timings"; the Cortex-M4 TRM, DDI 0439, 3.3.2, the same.) The plugin counts such loads and stores
# per class (an address register written by the instruction just before, within a block).
ADDRESS_STALL = 1

# Cortex-M33. Arm's Cortex-M33 TRM (100230) publishes no per-instruction timing; the M33 is, like
# the Cortex-M4, a 3-stage single-issue Armv7E-M/Armv8-M Mainline pipeline with the DSP extension's
# single-cycle 32x32 MAC and the same FPv5-SP single-precision FPU class, so its figures are those
# of the Cortex-M4 TRM (Arm DDI 0439B): Table 3-1 "Cortex-M4 instruction set summary" (3.3.1) for
# the integer instructions, and the FPU instruction table (chapter 7, "FPU instruction set") for
# VFP. LLVM schedules cortex-m33 with its Cortex-M4 model for the same reason.
_M33 = {
    "alu": Cost(1),                          # MOV/ADD/.../SSAT/SXTB16/QADD8/...: 1
    "it": Cost(1, low=0),                    # IT: 1; the M3/M4 can fold it into the previous instruction
    "hint": Cost(1),                         # NOP: 1 (WFI/WFE wait: never inside an inference)
    "mul": Cost(1),                          # MUL, MLA, MLS: 1 (M4; 2 on the M3)
    "mac_dsp": Cost(1),                      # SMLAD, SMUAD, SMLAxy, SMULxy, SMLAW, SMMLA, USADA8: 1
    "mul_long": Cost(1),                     # SMULL, UMULL, SMLAL, UMLAL, SMLALD, UMAAL: 1
    "div": Cost(7, low=2, high=12),          # SDIV, UDIV: 2 to 12 (early termination); midpoint 7
    "load": Cost(2, stall=ADDRESS_STALL),                         # LDR/LDRH/LDRB/LDRSx: 2 ...
    "load_pipelined": Cost(1, stall=ADDRESS_STALL),               # ... 1 when the next load/store single pipelines with it (note b)
    "store": Cost(1, high=2, stall=ADDRESS_STALL),                # STR: the data phase overlaps the next instruction (write buffer;
                                             #   M3 TRM DDI 0337 "Load/store timings"); Table 3-1 lists 2
    "ldrd": Cost(3, low=2, stall=ADDRESS_STALL),                  # LDRD: 1 + N, N = 2 (2 if it pipelines with a neighbour,
                                             #   as single loads do: not in the TRM, hence only the range)
    "strd": Cost(3, stall=ADDRESS_STALL),                         # STRD: 1 + N, N = 2
    "ldm": Cost(1, per_reg=1, stall=ADDRESS_STALL),               # LDM, POP: 1 + N
    "stm": Cost(1, per_reg=1, stall=ADDRESS_STALL),               # STM, PUSH: 1 + N
    "pop_pc": Cost(1, per_reg=1, taken=P, stall=ADDRESS_STALL),   # POP {..., pc}, LDM with PC: 1 + N + P
    "load_pc": Cost(2, taken=P, stall=ADDRESS_STALL),             # LDR PC: 2 + P
    "branch": Cost(1, taken=P),              # B: 1 + P
    "branch_cond": Cost(1, taken=P),         # B<cond>, CBZ/CBNZ: 1 not taken, 1 + P taken
    "call": Cost(1, taken=P),                # BL, BLX: 1 + P
    "branch_reg": Cost(1, taken=P),          # BX, MOV PC / ADD PC: 1 + P
    "table_branch": Cost(2, taken=P),        # TBB, TBH: 2 + P
    "lob": Cost(1),                          # (Armv8.1-M only: UNDEFINED on the M33)
    "fp_alu": Cost(1),                       # VADD, VSUB, VMUL, VABS, VNEG, VCVT, VCMP, VMOV: 1
    "fp_mac": Cost(3),                       # VMLA, VMLS, VNMLA, VFMA, VFMS, VFNMA: 3
    "fp_div": Cost(14),                      # VDIV, VSQRT: 14
    "fp_ls": Cost(2, stall=ADDRESS_STALL),                        # VLDR, VSTR: 2
    "fp_lsm": Cost(1, per_reg=1, stall=ADDRESS_STALL),            # VLDM, VSTM, VPUSH, VPOP: 1 + N
    "fp_mov": Cost(1),                       # VMOV core <-> FP, VMRS, VMSR: 1 (VMOV of two registers: 2)
    "mve_ls": Cost(1), "mve_ls_overlap": Cost(1), "mve_dp": Cost(1), "mve_dp_overlap": Cost(1),  # (no MVE)
    "system": Cost(1, high=4),               # MSR, MRS, CPS: 1-2; DSB/DMB/ISB: 1 + B (never in an inference)
    "unknown": Cost(1),                      # not decoded: counted and reported, charged 1
}

# Cortex-M55 (Armv8.1-M, MVE "Helium"). Its scalar integer and FPU figures are taken to be the
# M33's (a single-issue in-order pipeline with the same instruction timings in the cases that
# matter here: single-cycle MAC, 2-cycle non-pipelined load, 1 + P taken branch). What the M55
# adds: MVE executes in beats, a 128-bit vector instruction being four 32-bit beats, and the M55
# is a dual-beat implementation, two beats per cycle (Cortex-M55 TRM, Arm 101051, "MVE"
# implementation: "dual-beat"; Armv8.1-M ARM, DDI 0553, "Beat-wise execution"): 2 cycles per
# vector instruction, and a vector load/store overlaps a following vector data-processing
# instruction (and the other way round) by two beats, 1 cycle, since they use different
# hardware. Low-overhead loops (LE) cost no refill after the first iteration (loop cache).
_M55 = dict(_M33)
_M55.update({
    "lob": Cost(1),                          # DLS, WLS, LE, VCTP: 1, no refill when LE loops back
    "mve_ls": Cost(2, high=4),               # VLDR/VSTR (vector): 4 beats / 2 per cycle (gather/scatter: more)
    "mve_ls_overlap": Cost(1, high=2),       # ... its first two beats overlap the previous vector op
    "mve_dp": Cost(2),                       # VADD, VMUL, VMLA, VMLADAV, VQRDMULH, VSHL, ...: 4 beats
    "mve_dp_overlap": Cost(1, high=2),       # ... after a vector load/store: overlapped
})

# Which table a core uses (board.toml `core`). The Cortex-M4 is the M33 table's source.
CYCLES = {"cortex-m33": _M33, "cortex-m4": _M33, "cortex-m55": _M55}

# What every estimate assumes (printed beside it by `run`; docs/cycles.md "Known error").
ASSUMPTIONS = ("Cortex-M4 TRM timings (Table 3-1; MVE: dual-beat); zero wait states (the emulated boards' "
               "code and data memories are SRAM/TCM); taken-branch refill 2 (range 1-3); +1 per load/store "
               "whose address needs the instruction just before; no dual issue, no other load-use stalls")


class CyclesUnavailable(Exception):
    """Why no cycle estimate could be made (said in `run`'s report, never fatal)."""


@dataclass
class ClassCounts:
    """Executed instructions per class over one span, with registers moved, branches taken and
    loads / stores that waited for their address (ADDRESS_STALL)."""
    instructions: int
    counts: dict
    regs: dict
    taken: dict
    stalls: dict = field(default_factory=dict)

    def nonzero(self) -> dict:
        return {c: n for c, n in self.counts.items() if n}


@dataclass(frozen=True)
class Estimate:
    cycles: int
    low: int   # every ranged class at its lowest (P = 1, fastest divide, IT folded)
    high: int  # ... and at its highest (P = 3, slowest divide, stores 2)


def cycles_by_class(c: ClassCounts, core: str) -> dict:
    """Nominal estimated cycles of each class with any (largest first)."""
    table = CYCLES.get(core)
    if table is None:
        raise CyclesUnavailable(f"no cycle table for {core} (known: {', '.join(sorted(CYCLES))})")
    out = {}
    for name in CLASSES:
        cost = table[name]
        n = (cost.base * c.counts.get(name, 0) + cost.per_reg * c.regs.get(name, 0) + cost.taken * c.taken.get(name, 0)
             + cost.stall * c.stalls.get(name, 0))
        if n:
            out[name] = round(n)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def estimate(c: ClassCounts, core: str) -> Estimate:
    """Estimated cycles of the span `c` on `core`, with the range the table allows."""
    table = CYCLES.get(core)
    if table is None:
        raise CyclesUnavailable(f"no cycle table for {core} (known: {', '.join(sorted(CYCLES))})")
    nominal = low = high = 0.0
    for name in CLASSES:
        cost, n, regs, taken = table[name], c.counts.get(name, 0), c.regs.get(name, 0), c.taken.get(name, 0)
        extra = cost.per_reg * regs + cost.stall * c.stalls.get(name, 0)
        nominal += cost.base * n + extra + cost.taken * taken
        refill_low = P_LOW if cost.taken else 0
        refill_high = P_HIGH if cost.taken else 0
        low += (cost.base if cost.low is None else cost.low) * n + extra + refill_low * taken
        high += (cost.base if cost.high is None else cost.high) * n + extra + refill_high * taken
    return Estimate(round(nominal), round(low), round(high))


def parse_output(text: str) -> tuple[list, ClassCounts | None]:
    """The plugin's output file: (segments, totals) as ClassCounts (totals None if QEMU did not exit)."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("classes "):
        raise CyclesUnavailable("the QEMU plugin wrote no output (was it loaded?)")
    names = tuple(lines[0].split()[1:])
    if names != CLASSES:
        raise CyclesUnavailable(f"the QEMU plugin's classes {names} are not mcu_gen.device.cycles.CLASSES: "
                                f"rebuild it (delete {cache_dir()})")
    k = len(CLASSES)
    segments, total = [], None
    for line in lines[1:]:
        parts = line.split()
        if len(parts) != 2 + 4 * k or parts[0] not in ("seg", "total"):
            continue  # a line cut short when QEMU was killed
        v = [int(x) for x in parts[1:]]
        c = ClassCounts(v[0], dict(zip(CLASSES, v[1:1 + k])), dict(zip(CLASSES, v[1 + k:1 + 2 * k])),
                        dict(zip(CLASSES, v[1 + 2 * k:1 + 3 * k])), dict(zip(CLASSES, v[1 + 3 * k:])))
        if parts[0] == "seg":
            segments.append(c)
        else:
            total = c
    return segments, total


def match_segments(segments: list, instructions: list) -> list:
    """For each inference's exact instruction count (in order), the next segment with exactly that
    many instructions (None where there is none)."""
    out, start = [], 0
    for n in instructions:
        found = None
        for i in range(start, len(segments)):
            if segments[i].instructions == n:
                found, start = segments[i], i + 1
                break
        out.append(found)
    return out


def elf_symbol(elf: Path, name: str) -> int | None:
    """The address of a symbol in an ELF32 little-endian file (Thumb bit cleared), None if absent."""
    data = Path(elf).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
    sections = [struct.unpack_from("<IIIIIIIIII", data, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 16):
            st_name, st_value = struct.unpack_from("<II", data, off)
            s = strtab[4] + st_name
            if data[s:data.index(b"\0", s)].decode(errors="replace") == name:
                return st_value & ~1
    return None


def build_plugin(cc: str | None = None) -> Path:
    """Compiles the plugin with the host C compiler into the cache (reused while the compiler,
    the flags and the sources are the same); CyclesUnavailable if that is not possible."""
    cc = cc or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise CyclesUnavailable("no host C compiler to build the QEMU plugin (install gcc: scripts/setup.sh)")
    h = hashlib.sha256(" ".join([cc, *CFLAGS]).encode())
    for src in sorted(PLUGIN_DIR.glob("*.[ch]")):
        h.update(src.name.encode() + src.read_bytes())
    out = cache_dir() / h.hexdigest()[:20] / "insn_classes.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f"insn_classes.{os.getpid()}.so"
    try:
        r = subprocess.run([cc, *CFLAGS, "-I", str(PLUGIN_DIR), str(PLUGIN_SOURCE), "-o", str(tmp)],
                           capture_output=True, text=True)
    except OSError as e:
        raise CyclesUnavailable(f"cannot run the host C compiler {cc}: {e}") from None
    if r.returncode != 0:
        raise CyclesUnavailable(f"the QEMU plugin did not compile ({cc}): {r.stderr.strip()[-600:]}")
    os.replace(tmp, out)  # atomic: a concurrent build sees a whole file or none
    return out


class CycleCounter:
    """The plugin for one QEMU session of `elf` on `board`, and what it counted."""

    def __init__(self, board, elf, plugin: Path | None = None, mark: int | None = None, reason: str = ""):
        self.board, self.elf, self.plugin, self.mark, self.reason = board, Path(elf), plugin, mark, reason
        self._dir = None
        self.output = None

    @classmethod
    def for_board(cls, board, elf) -> "CycleCounter":
        """A counter ready to attach, or one whose `.reason` says why there are no estimates."""
        try:
            if not board.is_qemu or board.emulator.binary != "qemu-system-arm":
                raise CyclesUnavailable(f"board {board.name} is not an emulated Arm core")
            if board.core not in CYCLES:
                raise CyclesUnavailable(f"no cycle table for {board.core} (known: {', '.join(sorted(CYCLES))})")
            mark = elf_symbol(elf, MARK_SYMBOL)
            if mark is None:
                raise CyclesUnavailable(f"{Path(elf).name} has no symbol {MARK_SYMBOL} to delimit inferences")
            given = os.environ.get("MCU_GEN_QEMU_PLUGIN")  # a prebuilt plugin instead of building one
            return cls(board, elf, Path(given) if given else build_plugin(), mark)
        except CyclesUnavailable as e:
            return cls(board, elf, reason=str(e))
        except OSError as e:  # an unreadable ELF, a cache that cannot be written
            return cls(board, elf, reason=f"cannot prepare the QEMU plugin: {e}")

    @property
    def available(self) -> bool:
        return self.plugin is not None and not self.reason

    def qemu_args(self) -> tuple:
        """QEMU's arguments to load the plugin ((): unavailable); each call starts a new output file."""
        if not self.available:
            return ()
        self._dir = tempfile.mkdtemp(prefix="mcu-cycles-")
        self.output = Path(self._dir) / "classes.txt"
        return ("-plugin", f"{self.plugin},out={self.output},mark={self.mark:#x},min={MIN_SEGMENT}")

    def disable(self, reason: str) -> None:
        self.reason = reason

    def per_inference(self, instructions: list) -> list:
        """ClassCounts of each inference (by its exact instruction count), None where not found."""
        if not self.available or self.output is None:
            return [None] * len(instructions)
        try:
            segments, _ = parse_output(self.output.read_text())
        except FileNotFoundError:
            self.reason = "the QEMU plugin wrote no output file"
            return [None] * len(instructions)
        except CyclesUnavailable as e:
            self.reason = str(e)
            return [None] * len(instructions)
        found = match_segments(segments, instructions)
        if instructions and all(f is None for f in found):
            self.reason = ("the plugin's segments between two mcu_pal_ticks() calls never had an inference's "
                           "instruction count")
        return found

    def close(self) -> None:
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
