"""`mcu-gen run`: build, boot the emulated board, infer over serial, compare with PyTorch."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .builder import BuildResult, build
from .ir import Program

DEFAULT_RANDOM_INPUTS = 3


@dataclass
class RunResult:
    board: str
    verified: bool
    max_abs_error: float
    tolerance: float
    arena_bytes: int
    arena_lower_bound_bytes: int
    pte_bytes: int
    flash_bytes: int
    ram_bytes: int
    instructions_per_inference: int | None
    n_inferences: int
    reference: str  # what the device was compared with
    out: str
    outputs: list = field(default_factory=list, repr=False)
    instructions: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("outputs")
        return d


def random_inputs(program: Program, n: int, seed: int = 0) -> list:
    rng = np.random.RandomState(seed)
    sets = []
    for _ in range(n):
        one = []
        for i in program.inputs:
            t = program.tensor(i)
            if t.dtype.startswith("float"):
                one.append(rng.randn(*t.shape).astype(t.dtype))
            else:
                one.append(rng.randint(-128, 128, size=t.shape).astype(t.dtype))
        sets.append(tuple(one))
    return sets


def _to_numpy(x):
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def expected_outputs(result: BuildResult, inputs: tuple) -> tuple[list, str]:
    """The outputs the device must reproduce, and where they come from."""
    import torch

    spec = result.spec
    if spec is not None:
        with torch.no_grad():
            module = spec.module if getattr(spec, "module", None) is not None else spec.exported_program.module()
            out = module(*[torch.from_numpy(np.ascontiguousarray(x)) for x in inputs])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return [_to_numpy(o) for o in outs], "pytorch"
    from .reference import run_reference

    return [np.asarray(o) for o in run_reference(result.program, list(inputs))], "reference interpreter (torch ops)"


def verify_outputs(got: list, want: list) -> tuple[float, float, bool]:
    """(max abs error, tolerance, ok) for fp32: |err| <= 1e-4 * max(1, max |reference|)."""
    err, scale = 0.0, 1.0
    for g, w in zip(got, want):
        g = np.asarray(g, dtype=np.float64).reshape(np.shape(w))
        w = np.asarray(w, dtype=np.float64)
        if w.size:
            err = max(err, float(np.max(np.abs(g - w))))
            scale = max(scale, float(np.max(np.abs(w))))
    tol = 1e-4 * scale
    ok = len(got) == len(want) and err <= tol and all(np.all(np.isfinite(g)) for g in got)
    return err, tol, ok


def run(model=None, *, board: str = "mps2-an505", pte_path=None, out=None, inputs=None, n_random: int | None = None,
        fuse: bool = True, timeout: float = 60.0, progress=None) -> RunResult:
    result = build(model, board=board, pte_path=pte_path, out=out, fuse=fuse)
    b = result.board
    if inputs is None:
        spec = result.spec
        test = getattr(spec, "test_inputs", None) if spec is not None else None
        if test:
            inputs = [tuple(_to_numpy(x) for x in t) for t in test]
        else:
            inputs = random_inputs(result.program, n_random or DEFAULT_RANDOM_INPUTS)
    if not b.is_qemu:
        raise RuntimeError(
            f"board {b.name} has no emulator: flash {result.out}/firmware.elf and use `mcu-gen verify --port PORT`"
        )
    from .qemu import QemuSession

    worst_err, worst_tol, ok_all = 0.0, 0.0, True
    counts, outputs = [], []
    reference = ""
    with QemuSession(b, result.elf, run_timeout=timeout) as link:
        hello = link.hello()
        if hello.program_id != result.program_id:
            raise RuntimeError(
                f"the firmware reports program {hello.program_id:016x}, the build made {result.program_id:016x}"
            )
        for k, one in enumerate(inputs):
            got, ticks = link.infer(list(one))
            want, reference = expected_outputs(result, one)
            err, tol, ok = verify_outputs(got, want)
            worst_err, worst_tol = max(worst_err, err), max(worst_tol, tol)
            ok_all = ok_all and ok
            counts.append(b.instructions_from_ticks(ticks) if b.ticks_unit == "instructions" else ticks)
            outputs.append(got)
            if progress:
                progress(k + 1, len(inputs))
        link.exit(0)
    r = result.report
    return RunResult(
        board=b.name,
        verified=ok_all,
        max_abs_error=worst_err,
        tolerance=worst_tol,
        arena_bytes=r["arena_bytes"],
        arena_lower_bound_bytes=r["arena_lower_bound_bytes"],
        pte_bytes=r["pte_bytes"],
        flash_bytes=r["flash_bytes"],
        ram_bytes=r["ram_bytes"],
        instructions_per_inference=max(counts) if counts else None,
        n_inferences=len(inputs),
        reference=reference,
        out=str(result.out),
        outputs=outputs,
        instructions=counts,
    )
