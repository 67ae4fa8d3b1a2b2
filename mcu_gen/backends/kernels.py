"""The kernel registry and the generated kernel table (selective build).

Every kernel source file starts with one registry line:

    // mcu-gen-kernel: op=aten::relu.out fn=aten_relu_out sig=TOO dtypes=float32

``find_kernels()`` scans a kernel folder for these lines; ``select()`` picks
the kernels a program needs (and names the operators that have none);
``kernel_table_source()`` writes the C++ table that maps each operator to its
function, which the runtime resolves once at load time; ``selected_dtypes_source()``
writes ``mcu_selected_dtypes.h``, the dtypes each kernel's instructions use (the kernels
that read ``selected::<fn>`` compile only those: kernels_portable/dtype_util.h).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from mcu_gen.paths import KERNELS_PORTABLE
from mcu_gen.backends.render import render
from mcu_gen.program.ir import DTYPE_CODES, ScalarValue, TensorValue
from mcu_gen.errors import McuGenError

_LINE = re.compile(r"^//\s*mcu-gen-kernel:\s*(.*)$")


@dataclass(frozen=True)
class Kernel:
    op: str  # "aten::relu.out"
    fn: str  # C++ function in namespace mcu::kernels
    signature: str
    file: Path
    backend: str = "portable"
    dtypes: tuple = ("float32",)
    # Memory planning (optional registry fields, see mcu_gen/plan/inplace.py):
    # inplace=0,4     the out may share memory with these argument positions
    # inplace_rule=X  the condition under which it may (default: elementwise)
    # variant_of=OP   this kernel runs OP's arguments, in place, and may replace it
    inplace: tuple = ()
    inplace_rule: str = ""
    variant_of: str = ""
    # prepare=FN  called at load per instruction, returns the function to run (kernel.h PrepareFn)
    prepare: str = ""
    # index_outputs=7  argument positions of int64 index outputs (max_pool2d_with_indices' indices): their
    #                  dtype is fixed, the kernel does not compute in it, so it is left out of selected dtypes
    index_outputs: tuple = ()

    @property
    def name(self) -> str:
        return self.op.rsplit(".", 1)[0]

    @property
    def overload(self) -> str:
        return self.op.rsplit(".", 1)[1] if "." in self.op else ""


class KernelRegistryError(McuGenError, ValueError):
    pass


def parse_registry_line(line: str, path: Path, backend: str) -> Kernel | None:
    m = _LINE.match(line.strip())
    if not m:
        return None
    fields = dict(kv.split("=", 1) for kv in m.group(1).split())
    missing = {"op", "fn", "sig"} - fields.keys()
    if missing:
        raise KernelRegistryError(f"{path}: registry line lacks {sorted(missing)}")
    return Kernel(
        op=fields["op"],
        fn=fields["fn"],
        signature=fields["sig"],
        file=path,
        backend=backend,
        dtypes=tuple(fields.get("dtypes", "float32").split(",")),
        inplace=tuple(int(i) for i in fields["inplace"].split(",")) if fields.get("inplace") else (),
        inplace_rule=fields.get("inplace_rule", ""),
        variant_of=fields.get("variant_of", ""),
        prepare=fields.get("prepare", ""),
        index_outputs=tuple(int(i) for i in fields["index_outputs"].split(",")) if fields.get("index_outputs") else (),
    )


def find_kernels(folder: Path = KERNELS_PORTABLE, backend: str = "portable") -> dict:
    """op name -> Kernel for every kernel file in ``folder``."""
    out = {}
    for path in sorted(Path(folder).glob("*.cpp")):
        with open(path) as f:
            for line in f:
                if not line.startswith("//"):
                    break
                k = parse_registry_line(line, path, backend)
                if k is None:
                    continue
                if k.op in out:
                    raise KernelRegistryError(f"{k.op} is registered by both {out[k.op].file.name} and {path.name}")
                out[k.op] = k
    return out


@dataclass
class Selection:
    kernels: list = field(default_factory=list)  # in program operator order
    missing: list = field(default_factory=list)  # operator names without a kernel

    @property
    def sources(self) -> list:
        seen = []
        for k in self.kernels:
            if k.file not in seen:
                seen.append(k.file)
        return seen


def select(operators, available: dict | None = None) -> Selection:
    available = find_kernels() if available is None else available
    sel = Selection()
    for op in operators:
        if op in available:
            sel.kernels.append(available[op])
        else:
            sel.missing.append(op)
    return sel


def kernel_table_source(kernels) -> str:
    """C++ source defining ``mcu::kKernelTable`` for exactly these kernels (templates/kernels/kernel_table.cpp.j2)."""
    decls = []  # (function, is a prepare function), each once
    for k in kernels:
        if k.fn not in (d[0] for d in decls):
            decls.append((k.fn, False))
        if k.prepare and k.prepare not in (d[0] for d in decls):
            decls.append((k.prepare, True))
    return render("kernels/kernel_table.cpp.j2", decls=decls, kernels=list(kernels),
                  with_prepare=any(k.prepare for k in kernels))


# -- selective build by dtype -------------------------------------------------------------------
# The dtypes the portable kernels compute in (dtype_util.h kAllTypes).
KERNEL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32")
_INTEGRAL = {"uint8", "int8", "int16", "int32", "int64"}


def reads_selected_dtypes(kernel: Kernel) -> bool:
    """Whether the kernel's source reads its entry of mcu_selected_dtypes.h (``selected::<fn>``)."""
    return f"selected::{kernel.fn}" in kernel.file.read_text()


def instruction_dtypes(program, ins, index_outputs=()) -> set:
    """The dtypes a kernel may compute in for one instruction: those of its tensors (tensor lists
    included, not the index tensors of a Tensor?[], not the arguments at `index_outputs`), plus what a
    Scalar argument promotes them to (ATen's result_type: a float Scalar makes an integer or bool tensor's
    op compute in float32, an int Scalar a bool tensor's in int64)."""
    dtypes, scalars = set(), set()
    skip = {ins.args[p] for p in index_outputs if p < len(ins.args)}
    for a in ins.args:
        if a in skip:
            continue
        v = program.values[a]
        if isinstance(v, TensorValue):
            dtypes.add(v.dtype)
        elif isinstance(v, ScalarValue):
            if v.kind == "tensor_list":  # (a Tensor?[] holds indices: index.Tensor, index_put)
                dtypes.update(program.values[j].dtype for j in v.value if j is not None and j >= 0 and j not in skip)
            elif v.kind in ("float", "int"):
                scalars.add(v.kind)
    if "float" in scalars and dtypes & (_INTEGRAL | {"bool"}):
        dtypes.add("float32")
    if "int" in scalars and "bool" in dtypes:
        dtypes.add("int64")
    if "uint8" in dtypes and "int8" in dtypes:  # promote_types(uint8, int8) is int16
        dtypes.add("int16")
    return dtypes


def selected_dtypes(program, kernels) -> dict:
    """Kernel function -> the dtypes its instructions use, over every method of the program
    (only kernels that read their entry)."""
    by_op = {k.op: k for k in kernels if reads_selected_dtypes(k)}
    out = {k.fn: set() for k in by_op.values()}
    for m in program.methods:
        for ins in m.instructions:
            k = by_op.get(ins.op)
            if k is not None:
                out[k.fn] |= instruction_dtypes(m, ins, k.index_outputs)
    return out


def selected_dtypes_source(kernels, program=None) -> str:
    """``mcu_selected_dtypes.h``: a DTypeSet (bit = ExecuTorch ScalarType code) per kernel function that
    reads one. Without a program every kernel gets every dtype (a runner for any program)."""
    chosen = selected_dtypes(program, kernels) if program is not None else {
        k.fn: set(KERNEL_DTYPES) for k in kernels if reads_selected_dtypes(k)}
    selected = []
    for fn in sorted(chosen):
        names = sorted(d for d in chosen[fn] if d in KERNEL_DTYPES)
        selected.append({"fn": fn, "names": names, "mask": sum(1 << DTYPE_CODES[d] for d in names)})
    return render("kernels/selected_dtypes.h.j2", selected=selected)


# Delegate backends the runtime has: BackendDelegate id -> (C++ prepare, C++ execute taking the index).
DELEGATE_BACKENDS = {"EthosUBackend": ("ethosu::prepare", "ethosu::execute")}


def delegate_table_source(delegate_ids) -> str:
    """C++ source defining ``mcu::kDelegateTable``: one entry per delegate index of the program
    (its backend's prepare function and a small execute function that knows its index). Only
    generated, and only linked, when the program has delegates (build define MCU_MAX_DELEGATES)."""
    for k, backend in enumerate(delegate_ids):
        if backend not in DELEGATE_BACKENDS:
            raise KernelRegistryError(f"delegate {k}: no runtime for backend {backend!r} "
                                      f"(known: {', '.join(DELEGATE_BACKENDS)})")
    delegates = [{"backend": b, "prepare": DELEGATE_BACKENDS[b][0], "execute": DELEGATE_BACKENDS[b][1]}
                 for b in delegate_ids]
    return render("kernels/delegate_table.cpp.j2", delegates=delegates)
