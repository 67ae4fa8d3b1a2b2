"""The firmware project a build writes (CMake + PlatformIO): the runtime, the selected kernels and the
board's files copied in, the program as a C array, the configuration (value and instruction caches,
protocol frame size, upload buffer, RAM arenas, the stack the link reserves), and its compilation."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import jinja2
import numpy as np

from mcu_gen import __version__
from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.backends.render import render
from mcu_gen.boards import Board
from mcu_gen.errors import BuildError
from mcu_gen.firmware import toolchain
from mcu_gen.paths import RUNTIME_CORE, TEMPLATES
from mcu_gen.program import pte
from mcu_gen.program.ir import Program

FIRMWARE_DIR = "firmware"


def program_id(data: bytes) -> int:
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "little")


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def c_array_lines(data: bytes, per_line: int = 16) -> list:
    return [", ".join(f"0x{b:02x}" for b in data[i : i + per_line]) + "," for i in range(0, len(data), per_line)]


# The runtime decodes program values [0, MCU_VALUE_CACHE) once, at load, into
# DecodedValue entries (runtime_core/include/mcu/kernel.h) so that kernel calls
# read their arguments without walking the program's tables, and likewise the
# first MCU_INSTRUCTION_CACHE instructions (whose kernels are also prepared at
# load: kernel.h PrepareFn). A build that caches every value caches every
# instruction too.
DEFAULT_VALUE_CACHE = 8  # runtime_core/include/mcu/program.h
DEFAULT_INSTRUCTION_CACHE = 8
VALUE_CACHE_ENTRY_BYTES = 20
INSTRUCTION_CACHE_ENTRY_BYTES = 12
BOUND_CALL_BYTES = 8  # MCU_BOUND_CALLS: a generated layer after the instruction cache (program.h)


def value_cache_size(value_cache, backend: str, num_values: int) -> int:
    """MCU_VALUE_CACHE for a build. ``None`` (default): every value of the program when its int8
    kernels run on CMSIS-NN, where argument decoding would otherwise be a visible share of an
    inference (~1-2k instructions per call), else the runtime's default (8), which keeps RAM small
    (fp32 and portable kernels spend far longer per call). ``"all"`` or a number set it."""
    if value_cache is None:
        return num_values if backend == "cmsis-nn" else DEFAULT_VALUE_CACHE
    if value_cache == "all":
        return num_values
    try:
        n = int(value_cache)
    except (TypeError, ValueError):
        raise BuildError(f"--value-cache {value_cache!r}: give a number of values or 'all'") from None
    if n < 0:
        raise BuildError(f"--value-cache {n}: must be 0 or more")
    return n


# Verify-protocol frames (runtime_core/include/mcu/protocol.h, MCU_MAX_PAYLOAD): the payload of one
# request and one reply. Tensor transfers are chunked to it by the host (HELLO reports it), so a larger
# frame only saves round trips. A build sizes it to the largest input/output window it transfers (the
# tensor plus the 8-byte request header), at most DEFAULT_FRAME_PAYLOAD, never below MIN_FRAME_PAYLOAD
# (every fixed reply, HELLO with a 64-byte version string included, fits in 128 bytes).
MIN_FRAME_PAYLOAD = 128
DEFAULT_FRAME_PAYLOAD = 128
MAX_FRAME_PAYLOAD = 1024


def frame_payload(program: Program, frame_bytes: int | None = None) -> int:
    """MCU_MAX_PAYLOAD for a build: `frame_bytes` (--frame-bytes) if given, else the largest input/output
    window (nbytes + 8) capped at DEFAULT_FRAME_PAYLOAD; rounded up to 16, within [128, 1024]."""
    if frame_bytes is None:
        largest = max((m.tensor(i).nbytes for m in program.methods for i in list(m.inputs) + list(m.outputs)),
                      default=0)
        frame_bytes = max(MIN_FRAME_PAYLOAD, min(DEFAULT_FRAME_PAYLOAD, largest + 8))
    elif not MIN_FRAME_PAYLOAD <= int(frame_bytes) <= MAX_FRAME_PAYLOAD:
        raise BuildError(f"--frame-bytes {frame_bytes}: give {MIN_FRAME_PAYLOAD}..{MAX_FRAME_PAYLOAD}")
    return (int(frame_bytes) + 15) // 16 * 16


def upload_buffer_size(board: Board, program: Program, data: bytes) -> int:
    """Bytes of the program-upload buffer of an --upload build: room to upload a program of this size again
    (LOAD_PROGRAM_*, model updates and the verifier tests), plus 4 KiB; 0 if the board has no RAM to spare."""
    spare = board.ram.size - program.max_arena_size - 64 * 1024
    size = (len(data) + 4095) // 4096 * 4096 + 4096
    return size if size <= spare else 0


STACK_FILE = "stack.rsp"  # linker response file of a generated project: -Wl,--defsym=__stack_size=N


def write_stack_file(project: Path, stack_bytes: int | None) -> None:
    """The stack the link reserves: `stack_bytes` (a multiple of 8), or the linker script's default (None)."""
    text = "" if stack_bytes is None else f"-Wl,--defsym=__stack_size={int(stack_bytes)}\n"
    path = Path(project) / "board" / STACK_FILE
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def float_exact(program: Program) -> bool:
    """An int8 program: its float kernels (fp32 islands) must compute what the host integer reference computes, bit
    for bit, so they are compiled without fused multiply-adds (MCU_FLOAT_EXACT, runtime_core/include/mcu/kernel.h).
    An fp32 program keeps them: the device is compared with PyTorch within a tolerance."""
    from mcu_gen.reference.integer import is_int8_op

    return any(is_int8_op(ins.op) for m in program.methods for ins in m.instructions)


def render_project(dest: Path, board: Board, program: Program, data: bytes, kernels, opt_level="-O2",
                   upload_size: int | None = None, framework: str = "baremetal", cmsis_nn_root=None,
                   npu_build=None, value_cache: int = DEFAULT_VALUE_CACHE,
                   instruction_cache: int = DEFAULT_INSTRUCTION_CACHE, upload: bool = False, bound_table=(),
                   frame_bytes: int | None = None, stack_bytes: int | None = None,
                   generated_source: str = "", debug: bool = False, embedded: bytes | None = None,
                   external_owners: int = 0) -> Path:
    """Write a self-contained firmware project (CMake + PlatformIO) into dest.
    upload: give the firmware a program-upload buffer (LOAD_PROGRAM_*; `upload_size` sets its size, else
    upload_buffer_size()); without it the image has none and the upload requests answer BadRequest.
    bound_table: (instruction, generated layer function) of each generated layer after the instruction cache:
    a flash table the loader checks (MCU_BOUND_TABLE) in an image without uploads, else MCU_BOUND_CALLS RAM pairs.
    embedded: the program bytes the image embeds when they are not `data` (its external constants held by the
    generated layers, `external_owners` of them: MCU_EXTERNAL_CONSTANTS); `data` stays the program's identity
    (program_id) and what uploads are sized for.
    debug: compile in the profiling and debugging requests (RUN_PROFILED, RUN_RANGE, READ_VALUE: `mcu-gen
    profile` / `debug`); an image with uploads always has them, the deployable default has none.
    frame_bytes: protocol frame payload (frame_payload()); stack_bytes: the stack the link reserves.
    generated_source: the per-layer kernels of mcu_gen/backends/generated/ (kernels/generated_kernels.cpp), if any."""
    env = _env()
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "src").mkdir(parents=True)
    (dest / "include").mkdir()
    # Runtime, selected kernels and board files are copied so the project
    # builds on its own, anywhere.
    shutil.copytree(RUNTIME_CORE / "include", dest / "runtime" / "include")
    (dest / "runtime" / "src").mkdir(parents=True)
    for f in sorted((RUNTIME_CORE / "src").iterdir()):
        shutil.copy2(f, dest / "runtime" / "src" / f.name)
    (dest / "kernels").mkdir()
    kernel_files = []
    for k in kernels:
        if k.file.name not in kernel_files:
            kernel_files.append(k.file.name)
            shutil.copy2(k.file, dest / "kernels" / k.file.name)
    for folder in {k.file.parent for k in kernels}:
        for h in folder.glob("*.h"):
            shutil.copy2(h, dest / "kernels" / h.name)
    extra_sources, extra_includes = [], []
    if cmsis_nn_root is not None:  # CMSIS-NN adapters: copy the CMSIS-NN files they need (mcu_gen/backends/cmsis_nn.py)
        from mcu_gen.backends import cmsis_nn

        extra_sources, extra_includes = cmsis_nn.add_to_project(dest, kernels, cmsis_nn_root)
    extra_defines = {}
    if npu_build is not None:  # Ethos-U delegate: Arm's driver sources, when found (mcu_gen/firmware/ethosu_driver.py)
        npu_sources, npu_includes = npu_build.add_to_project(dest)
        extra_sources, extra_includes = extra_sources + npu_sources, extra_includes + npu_includes
        extra_defines = npu_build.defines()
    (dest / "board").mkdir()
    for f in board.files:
        shutil.copy2(f, dest / "board" / f.name)

    max_ops = max(1, max(len(m.operators) for m in program.methods))
    if not upload:
        upload_size = 0
    elif upload_size is None:
        upload_size = upload_buffer_size(board, program, data)
    write_stack_file(dest, stack_bytes)
    (dest / "include" / "mcu_config.h").write_text(
        env.get_template("firmware/mcu_config.h.j2").render(
            board_name=board.name,
            arena_size=max(program.max_arena_size, 16),
            upload_size=upload_size,
            program_id=program_id(data),
            max_operators=max_ops,
            firmware_version=f"mcu-gen {__version__}",
        )
    )
    image = embedded if embedded is not None else data  # the program bytes in flash
    (dest / "src" / "main.cpp").write_text(env.get_template("firmware/main.cpp.j2").render(quant_io=quant_io(program),
                                                                                    pte_size=len(image)))
    extra_arenas = arena_sections(board, program)
    (dest / "include" / "mcu_arenas.inc").write_text(
        env.get_template("firmware/mcu_arenas.inc.j2").render(extra_arenas=extra_arenas))
    (dest / "src" / "model_pte.c").write_text(
        env.get_template("firmware/model_pte.c.j2").render(
            pte_size=len(image), pte_lines=c_array_lines(image), pte_sha256=hashlib.sha256(image).hexdigest()
        )
    )
    kernels, operator_order = _in_operator_order(kernels, data, program, upload_size, npu_build)
    table = kernel_registry.kernel_table_source(kernels)
    if operator_order:
        table += operator_fns_source(kernels[:operator_order])
    if npu_build is not None and npu_build.delegate_ids:
        table += kernel_registry.delegate_table_source(npu_build.delegate_ids)
    use_table = bool(bound_table) and upload_size == 0
    if use_table:
        table += bound_table_source(bound_table)
    (dest / "src" / "kernel_table.cpp").write_text(table)
    (dest / "include" / "mcu_selected_dtypes.h").write_text(kernel_registry.selected_dtypes_source(kernels, program))
    generated_sources = []
    if generated_source:
        (dest / "kernels" / "generated_kernels.cpp").write_text(generated_source)  # kernels/: built -O2
        generated_sources = ["kernels/generated_kernels.cpp"]

    runtime_sources = [f"runtime/src/{f.name}" for f in sorted((RUNTIME_CORE / "src").glob("*.cpp"))]
    sources = (
        ["src/main.cpp", "src/model_pte.c", "src/kernel_table.cpp"]
        + generated_sources
        + runtime_sources
        + [f"kernels/{f}" for f in kernel_files]
        + [f"board/{f.name}" for f in board.source_paths]
        + extra_sources
    )
    ctx = dict(
        project_name="mcu_gen_firmware",
        board=board,
        cross=board.emulator.kind != "native",
        sources=sources,
        include_dirs=["include", "runtime/include", "runtime/src", "kernels", "board"] + extra_includes,
        defines={"MCU_MAX_OPERATORS": max_ops, "MCU_VALUE_CACHE": max(1, value_cache),
                 "MCU_MAX_PAYLOAD": frame_payload(program, frame_bytes), "MCU_UPLOADS": int(upload_size > 0),
                 "MCU_DEBUG_REQUESTS": int(debug or upload_size > 0),
                 "MCU_INSTRUCTION_CACHE": max(1, instruction_cache),
                 **({"MCU_BOUND_TABLE": len(bound_table)} if use_table
                    else {"MCU_BOUND_CALLS": len(bound_table)} if bound_table else {}),
                 **({"MCU_KERNEL_PREPARE": 1} if any(k.prepare for k in kernels) else {}),
                 **({"MCU_EXTERNAL_CONSTANTS": external_owners} if external_owners else {}),
                 **({"MCU_PROGRAM_HAS_STATE": 1} if program.all_states else {}),
                 **({"MCU_FLOAT_EXACT": 1} if float_exact(program) else {}),
                 **({"MCU_PROGRAM_METHODS": 1} if program.more_methods else {}),
                 **({"MCU_ARENA_REGIONS": 1 + len(extra_arenas)} if extra_arenas else {}),
                 **({"MCU_OPERATOR_ORDER": operator_order} if operator_order else {}),
                 **({} if upload_size > 0 else selective_runtime_defines(image)),
                 **({"MCU_ALL_CALLS_CACHED": 1} if upload_size == 0 and max(1, instruction_cache) >= max(
                     len(m.instructions) for m in program.methods) else {}), **extra_defines},
        opt_level=opt_level,
    )
    if framework == "baremetal":  # a framework project builds with PlatformIO only
        (dest / "CMakeLists.txt").write_text(env.get_template("cmake/CMakeLists.txt.j2").render(**ctx))
        (dest / "cmake").mkdir()
        (dest / "cmake" / f"{board.toolchain}.cmake").write_text(
            env.get_template("cmake/arm-none-eabi.cmake.j2").render(**ctx))
    pio = TEMPLATES / "platformio" / "platformio.ini.j2"
    if pio.exists():
        from mcu_gen.firmware import platformio_project

        platformio_project.render(dest, env, ctx, framework=framework, program=program, pte_bytes=data)
    return dest


def _in_operator_order(kernels, data: bytes, program: Program, upload_size: int, npu_build) -> tuple:
    """(kernels, N) with the builtin program's N operators first, in its operator table's order, for an
    image that only runs that program (one method, no delegates): the loader then finds operator k at kernel
    table entry k and its kernel in flash (MCU_OPERATOR_ORDER, operator_fns_source). Else (kernels, 0)."""
    if upload_size > 0 or program.more_methods or (npu_build is not None and npu_build.delegate_ids):
        return kernels, 0
    ops = pte.runtime_features(data)["operators"]
    by_op = {}
    for k in kernels:
        by_op.setdefault(k.op, k)
    if not ops or len(set(ops)) != len(ops) or any(op not in by_op for op in ops):
        return kernels, 0
    first = [by_op[op] for op in ops]
    return first + [k for k in kernels if all(k is not f for f in first)], len(first)


def operator_fns_source(kernels) -> str:
    """mcu::kOperatorFns (runtime_core/include/mcu/program.h, MCU_OPERATOR_ORDER): operator k's kernel."""
    return render("kernels/operator_fns.cpp.j2", fns=[k.fn for k in kernels])


def bound_table_source(bound_table) -> str:
    """mcu::kBoundCalls (runtime_core/include/mcu/program.h, MCU_BOUND_TABLE): the generated layers after the
    instruction cache, in instruction order, each with the function its prepare must choose at load."""
    return render("kernels/bound_table.cpp.j2", names=sorted({name for _, name in bound_table}),
                  calls=list(bound_table))


def selective_runtime_defines(data: bytes) -> dict:
    """The loader's selective build for an image that only ever runs its builtin program (no --upload):
    MCU_VALUE_KINDS, the value kinds the program has (the loader rejects any other kind and carries no
    code for it), and MCU_CONSTANT_BUFFERS=0 unless it keeps constants inline (runtime_core/include/mcu/
    program.h). An image with uploads accepts every kind and layout."""
    features = pte.runtime_features(data)
    mask = sum(1 << t for t in features["value_tags"] if 0 <= t < 12)
    return {"MCU_VALUE_KINDS": f"0x{mask:03X}u", "MCU_CONSTANT_BUFFERS": int(features["inline_constants"])}


def arena_sections(board: Board, program: Program) -> list:
    """The arenas of memory ids 2, 3, ... (templates/firmware/mcu_arenas.inc.j2): each in the linker section
    of the board's RAM region with that memory id; a program with more planned buffers than the board has
    regions (a .pte planned elsewhere) gets the rest in the main region's .bss."""
    regions = board.ram_regions
    out = []
    for k, size in enumerate(program.extra_arenas, start=2):
        r = regions[k - 1] if k - 1 < len(regions) else None
        out.append({"mem_id": k, "name": r.name if r else board.ram_name, "size": size,
                    "section": r.section if r else ""})
    return out


def compile_project(project: Path, board: Board) -> Path:
    """Configure and build the CMake project; returns the ELF."""
    try:
        return toolchain.cmake_build(project, project / "build", prefix=None if board.is_native else board.toolchain)
    except toolchain.ToolchainError as e:
        raise BuildError(str(e)) from None


def quant_io(program: Program) -> list:
    """The int8 inputs/outputs with per-tensor scale and zero point, for main.cpp's TENSOR_INFO table.
    Scales are float32 (what the device reports) as exact C hex-float literals."""
    rows = []
    for is_output, indices in ((0, program.inputs), (1, program.outputs)):
        for k, i in enumerate(indices):
            t = program.tensor(i)
            if t.dtype != "int8" or t.scale is None or np.ndim(t.scale) != 0 or k > 255:
                continue
            scale = float(np.float32(t.scale)).hex() + "f"
            rows.append(dict(is_output=is_output, index=k, scale=scale, zero_point=int(t.zero_point)))
    return rows
