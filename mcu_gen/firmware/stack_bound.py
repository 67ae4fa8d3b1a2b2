"""A static bound on the stack an image can use, read from its machine code.

``stack_bound(elf, board)`` disassembles the linked image (the board's ``objdump``) and, per function,
adds up every instruction that moves the stack pointer down (Arm: ``push``/``stmdb sp!``/``vpush``/
``sub sp, #N``/``str rX, [sp, #-N]!``; RISC-V: ``addi sp, sp, -N``): the function's frame. Direct calls
(``bl``, ``jal``) and tail calls (a branch out of the function) are edges of the call graph. An
indirect call (``blx rN``, ``jalr``) may reach any function whose address the image holds as data
(the kernel table, generated layers' bound calls, literal pools), except the vector table's handlers:
the selective build links only the kernels the program uses, so that set is small and exact enough.
Two contracts of the runtime narrow it (runtime_core/src/executor.cpp, verifier.cpp): the kernels (the kernel table's
``kEntries``, the flash tables ``kOperatorFns`` and ``kBoundCalls`` of an image without uploads, and the functions a
prepare hook returns: addresses in a hook's literal pool) and the load-time prepare hooks (``kPrepare``) are called only by the runtime, never by code
that a function pointer reached (a kernel, a hook, a generated layer); and ``Executor::prepare_calls``
calls the hooks and nothing else indirectly (where the compiler merged it into its caller, that caller
may reach both).

The bound is the deepest path from the reset handler, plus, for one exception at a time, the deepest
handler's path and the exception frame the core stacks (Cortex-M with an FPU: 104 B; without: 32 B;
RISC-V machine mode: the handler saves what it uses, counted in its frame). The code is read, not run,
so the bound covers the inputs no run tried; it is pessimistic where a function pushes on several
paths (each push counts) and where an indirect call site can reach only a few of the address-taken
functions. What it cannot bound — recursion, a stack pointer moved by a register amount (alloca, VLA),
an address-taken function it cannot find — is said in ``reason``, and ``bytes`` is None: callers then
fall back to the measured high-water mark.

This works on the whole image, newlib's and libgcc's functions included (they were compiled without
``-fstack-usage``), and needs no compiler flag, so it leaves the firmware's bytes as they are.
"""
from __future__ import annotations

import bisect
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# The frame the core pushes on exception entry (Armv8-M/Armv7-M): 8 words, 26 with the FPU's lazy state.
EXCEPTION_FRAME_FP = 104
EXCEPTION_FRAME = 32

_FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_TARGET = re.compile(r"^([0-9a-f]+) <([^>+]+)(\+0x[0-9a-f]+)?>")
_REGLIST = re.compile(r"\{([^}]*)\}")
_IMM = re.compile(r"#(-?\d+)")


@dataclass
class Function:
    name: str
    start: int
    end: int = 0
    frame: int = 0
    calls: set = field(default_factory=set)
    targets: list = field(default_factory=list)  # (address, objdump's name for it, a call?) of direct branches
    indirect: bool = False
    dynamic: bool = False  # the stack pointer moved by a register amount


@dataclass
class StackBound:
    bytes: int | None            # the bound, None where it cannot bound (reason says why)
    reason: str | None = None
    path: list = field(default_factory=list)  # the deepest path from reset: [(function, frame bytes)]
    handler_bytes: int = 0       # the deepest exception handler's path plus the exception frame
    indirect_targets: int = 0    # functions an indirect call may reach

    def as_report(self) -> dict:
        return {"static_bound_bytes": self.bytes, "unbounded_reason": self.reason,
                "deepest_path": [f"{name} ({frame} B)" for name, frame in self.path],
                "handler_bytes": self.handler_bytes, "indirect_targets": self.indirect_targets}


def _count_regs(text: str) -> int:
    m = _REGLIST.search(text)
    if not m:
        return 0
    n = 0
    for part in m.group(1).split(","):
        part = part.strip()
        if "-" in part:  # d8-d15, s16-s31
            lo, hi = part.split("-")
            n += int(hi.strip()[1:]) - int(lo.strip()[1:]) + 1
        elif part:
            n += 1
    return n


def _arm_stack_down(mnemonic: str, ops: str) -> int | None:
    """Bytes this Thumb instruction moves sp down (0: none), None for a register amount."""
    base = mnemonic.split(".")[0]
    if base == "push" or (base == "stmdb" and ops.startswith("sp!")):
        return 4 * _count_regs(ops)
    if base == "vpush" or (base == "vstmdb" and ops.startswith("sp!")):
        regs = _REGLIST.search(ops)
        size = 8 if regs and regs.group(1).strip().startswith("d") else 4
        return size * _count_regs(ops)
    if base in ("sub", "subw") and re.match(r"sp,\s*(sp,\s*)?", ops):
        rest = re.sub(r"^sp,\s*(sp,\s*)?", "", ops)
        m = re.match(r"#(\d+)", rest)
        return int(m.group(1)) if m else None
    pre = re.search(r"\[sp,\s*#-(\d+)\]!", ops)  # any store pre-indexed down from sp (str, strd, vstrw.32 ...)
    if pre:
        return int(pre.group(1))
    if base == "add" and re.match(r"sp,\s*(sp,\s*)?#-\d+", ops):
        return int(_IMM.search(ops).group(1).lstrip("-"))
    if base == "add" and re.match(r"sp,\s*(sp,\s*)?r", ops):  # sp += register: unknown sign
        return None
    return 0


def _riscv_stack_down(mnemonic: str, ops: str) -> int | None:
    base = mnemonic.replace("c.", "")
    if base in ("add", "addi", "addi16sp") and re.match(r"sp,\s*(sp,\s*)?-?\d+$", ops):
        n = int(ops.split(",")[-1])
        return -n if n < 0 else 0
    if base in ("add", "sub") and re.match(r"sp,\s*sp,\s*[a-z]", ops):
        return None
    return 0


def _parse(lines, arch: str) -> tuple:
    funcs: dict = {}
    order: list = []
    cur = None
    words = []  # (address, 32-bit value) of .word data inside code (literal pools)
    for line in lines:
        m = _FUNC.match(line)
        if m:
            cur = Function(m.group(2), int(m.group(1), 16))
            funcs[cur.name] = cur
            order.append(cur)
            continue
        m = _INSN.match(line)
        if not m or cur is None:
            continue
        addr, mnemonic, ops = int(m.group(1), 16), m.group(2), m.group(3).split("@")[0].split("#", 1)[0] \
            if arch == "riscv" else m.group(3).split("@")[0].strip()
        cur.end = addr
        if mnemonic == ".word":
            try:
                words.append(int(ops.split()[0], 16))
            except (ValueError, IndexError):
                pass
            continue
        down = _riscv_stack_down(mnemonic, ops.strip()) if arch == "riscv" else _arm_stack_down(mnemonic, ops)
        if down is None:
            cur.dynamic = True
        else:
            cur.frame += down
        _edges(cur, mnemonic, m.group(3), arch)
    _resolve_targets(order)
    return funcs, order, words


def _resolve_targets(order: list) -> None:
    """Each function's direct branch targets by address: a call to the function that holds the target, or a branch
    out of the function (a tail call); a branch inside it is no edge, a call to itself is (recursion). objdump names a
    target after the nearest symbol, an absolute one too: the linker script's __stack_size (0x10000) inside a kernel
    of a 160 KB image made its branches read as calls to `__stack_size`. A target no function holds keeps objdump's
    name (the walk then says the disassembly does not show it)."""
    by_start = sorted(order, key=lambda f: f.start)
    starts = [f.start for f in by_start]
    for f in order:
        for addr, name, call in f.targets:
            k = bisect.bisect_right(starts, addr) - 1
            g = by_start[k] if k >= 0 and addr <= by_start[k].end else None
            if g is None:
                f.calls.add(name)
            elif call or g is not f:
                f.calls.add(g.name)


def _edges(cur: Function, mnemonic: str, ops: str, arch: str) -> None:
    base = mnemonic.split(".")[0]
    t = _TARGET.search(ops.split("@")[0].strip().split(",")[-1].strip()) if arch == "arm" else \
        _TARGET.search(ops.split(",")[-1].strip())
    # direct branches: (target address, objdump's name, a call?), resolved by address once every function is read
    # (_resolve_targets: a branch into another function is a tail call, a call to itself recursion)
    if arch == "arm":
        if base in ("blx", "bx") and not t:
            if ops.strip() != "lr":
                cur.indirect = True
            return
        if base in ("bl", "blx") and t:
            cur.targets.append((int(t.group(1), 16), t.group(2), True))
            return
        if (re.fullmatch(r"b(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?", base) or base in ("cbz", "cbnz")) \
                and t:
            cur.targets.append((int(t.group(1), 16), t.group(2), False))
        return
    # RISC-V
    if base in ("jal", "call") and t:
        cur.targets.append((int(t.group(1), 16), t.group(2), True))
        return
    if (base in ("j", "tail") or re.fullmatch(r"b(eq|ne|lt|ge|ltu|geu|eqz|nez|lez|gez|ltz|gtz|gt|le|gtu|leu)", base)) \
            and t:
        cur.targets.append((int(t.group(1), 16), t.group(2), False))
        return
    # jalr: a call through a pointer. jr: a return (ra; t0 in the save/restore millicode) or a jump table
    # inside the function (GCC's switch); an indirect tail call through a function pointer would also be a jr
    # and is not followed (the runtime's kernel calls are jalr).
    if base == "jalr":
        cur.indirect = True


def _data_words(elf: Path, objdump: str) -> list:
    """Every aligned 32-bit little-endian word of the image's allocated sections (objdump -s)."""
    out = subprocess.run([objdump, "-s", str(elf)], capture_output=True, text=True, check=True).stdout
    data = bytearray()
    start = None
    chunks = []
    for line in out.splitlines():
        if line.startswith("Contents of section"):
            if data:
                chunks.append((start, bytes(data)))
            data, start = bytearray(), None
            continue
        parts = line.strip().split("  ")[0].split()
        if len(parts) < 2:
            continue
        try:
            addr = int(parts[0], 16)
            raw = bytes.fromhex("".join(parts[1:]))
        except ValueError:
            continue
        if start is None:
            start = addr
        data += raw
    if data:
        chunks.append((start, bytes(data)))
    words = []
    for base, blob in chunks:
        for k in range((-base) % 4, len(blob) - 3, 4):
            words.append((base + k, int.from_bytes(blob[k:k + 4], "little")))
    return words


def _object_range(elf: Path, objdump: str, name: str, exact: bool = False) -> tuple:
    """[start, end) of the data object whose (mangled) symbol name is, or contains, ``name``; or (0, 0)."""
    out = subprocess.run([objdump, "-t", str(elf)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and "O" in parts[1:3] and (parts[-1] == name if exact else name in parts[-1]):
            start, size = int(parts[0], 16), int(parts[-2], 16)
            return start, start + size
    return 0, 0


RISCV_SAVE = "__riscv_save_"
# The mangled name of mcu::Executor::prepare_calls(mcu::KernelTable const&), the one caller of the hooks.
PREPARE_SITE = "Executor13prepare_calls"


def stack_bound(elf: Path, board) -> StackBound:
    """The static stack bound of ``elf`` built for ``board`` (see the module's docstring)."""
    arch = "riscv" if "riscv" in board.toolchain else "arm"
    objdump = shutil.which(board.tool("objdump"))
    if objdump is None:
        return StackBound(None, f"{board.tool('objdump')} not found")
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(elf)], capture_output=True, text=True,
                          check=True).stdout
    funcs, order, _ = _parse(text.splitlines(), arch)
    if "Reset_Handler" not in funcs and "_start" not in funcs:
        return StackBound(None, "no reset handler (Reset_Handler or _start) in the image")
    reset = "Reset_Handler" if "Reset_Handler" in funcs else "_start"
    by_addr = {f.start: f for f in order}
    vector_range = _object_range(elf, objdump, "__vectors", exact=True)
    hooks_table = _object_range(elf, objdump, "kPrepare")
    # The kernel table, and the flash tables the runtime calls kernels from like it (an image without uploads:
    # each operator's kernel, MCU_OPERATOR_ORDER; the generated layers after the instruction cache, MCU_BOUND_TABLE).
    entries_tables = [_object_range(elf, objdump, t) for t in ("kEntries", "kOperatorFns", "kBoundCalls")]
    taken, handlers, hooks, entries = set(), set(), set(), set()
    found = []
    for addr, word in _data_words(elf, objdump):
        f = by_addr.get(word & ~1) if arch == "arm" and word & 1 else by_addr.get(word) if arch == "riscv" else None
        if f is None:
            continue
        if vector_range[0] <= addr < vector_range[1]:
            handlers.add(f.name)
        elif hooks_table[0] <= addr < hooks_table[1]:
            hooks.add(f.name)
        elif any(lo <= addr < hi for lo, hi in entries_tables):
            entries.add(f.name)
        else:
            found.append((addr, f.name))
    # A function address in a prepare hook's own code (its literal pool) is a kernel or generated layer the
    # hook returns for the runtime to call: an entry, like the kernel table's (the contract above).
    by_start = sorted((f.start, f.name) for f in order)
    starts = [a for a, _ in by_start]
    for addr, name in found:
        k = bisect.bisect_right(starts, addr) - 1
        (entries if k >= 0 and by_start[k][1] in hooks else taken).add(name)
    handlers.discard(reset)
    taken -= handlers | {reset}
    prepare_site = next((f.name for f in order if PREPARE_SITE in f.name), None)
    # Code a function pointer reaches: its indirect calls reach `taken` only (the contracts above).
    pointer_code, todo = set(), list(taken | hooks | entries)
    while todo:
        name = todo.pop()
        if name in pointer_code or name not in funcs:
            continue
        pointer_code.add(name)
        todo.extend(funcs[name].calls)

    def indirect_targets(name: str) -> set:
        if name == prepare_site:
            return hooks
        if name in pointer_code:
            return taken
        return taken | entries | (set() if prepare_site else hooks)

    depth: dict = {}
    best: dict = {}
    visiting: set = set()

    class Unbounded(Exception):
        pass

    def walk(name: str) -> int:
        if name in depth:
            return depth[name]
        f = funcs.get(name)
        if f is None:
            raise Unbounded(f"a call to {name}, which the disassembly does not show")
        if f.dynamic:
            raise Unbounded(f"{name} moves the stack pointer by a register amount (alloca or a variable-length array)")
        if name in visiting:
            raise Unbounded(f"recursion through {name}")
        visiting.add(name)
        callees = {c for c in f.calls if not c.startswith(RISCV_SAVE)}
        # The RISC-V -msave-restore millicode allocates the caller's frame and returns with it allocated.
        frame = f.frame + max((funcs[c].frame for c in f.calls if c.startswith(RISCV_SAVE) and c in funcs),
                              default=0)
        if f.indirect:
            callees |= indirect_targets(name)
        deepest, via = 0, None
        for c in sorted(callees):
            d = walk(c)
            if d > deepest:
                deepest, via = d, c
        visiting.discard(name)
        depth[name], best[name] = frame + deepest, via
        return depth[name]

    try:
        main = walk(reset)
        handler = max((walk(h) for h in handlers), default=0)
    except Unbounded as e:
        return StackBound(None, str(e), indirect_targets=len(taken | hooks | entries))
    if "main" not in depth:  # the disassembly was misread (wrong architecture, an unknown startup)
        return StackBound(None, f"{reset}'s calls do not reach main", indirect_targets=len(taken | hooks | entries))
    path, name = [], reset
    while name is not None:
        path.append((name, funcs[name].frame))
        name = best.get(name)
    frame = 0 if arch == "riscv" else (EXCEPTION_FRAME_FP if board.fpu else EXCEPTION_FRAME)
    extra = handler + frame if handlers else 0
    return StackBound(main + extra, None, path=path, handler_bytes=extra, indirect_targets=len(taken | hooks | entries))

