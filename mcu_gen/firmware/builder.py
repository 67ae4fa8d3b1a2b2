"""`mcu-gen build`: model (or .pte) -> planned program -> firmware project -> ELF + reports."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.backends.generated.external import external_constants, owners_source
from mcu_gen.plan import check as plan_check
from mcu_gen.plan import inplace_pass, planner
from mcu_gen.program import pte
from mcu_gen.boards import Board, get_board
from mcu_gen.errors import BuildError
from mcu_gen.program.ir import Program, TensorValue
from mcu_gen.progress import Progress
from mcu_gen.firmware.project import (DEFAULT_INSTRUCTION_CACHE, FIRMWARE_DIR, compile_project, program_id,
                                      render_project, value_cache_size, write_stack_file)
from mcu_gen.firmware import flash_fit, stack
from mcu_gen.firmware.report import build_report, memory_usage, write_reports
from mcu_gen.firmware.stack_bound import stack_bound
from mcu_gen.plan.views import read_program
from mcu_gen.plan.generated_scratch import scratch_pass
from mcu_gen.reference.inputs import example_check_inputs, plan_check_inputs


@dataclass
class BuildResult:
    out: Path
    board: Board
    program: Program
    pte_bytes: bytes
    report: dict
    elf: Path | None = None
    spec: object = None  # ModelSpec when built from a model file
    kernels: list = field(default_factory=list)

    @property
    def program_id(self) -> int:
        return program_id(self.pte_bytes)


def load_program(model=None, pte_path=None, fuse=True, available=None, quantize=None, io="float32",
                 calibration=None, calibration_method=None, bias_correction=False, plan=True):
    """(program, pte bytes, spec) from a model file / .pt2, or from a .pte as is.
    ``quantize="int8"`` quantizes the model (mcu_gen.quantize) with ``io`` graph inputs/outputs.
    A model's program is planned with the portable kernels' in-place variants
    (inplace_pass.plan_memory); ``plan=False`` (the build, which plans once it has chosen the
    kernels) gives it unplanned, with None for its bytes. A .pte comes as it is, planned."""
    if (model is None) == (pte_path is None):
        raise BuildError("give exactly one of a model file (--model) or a program (--pte)")
    if quantize not in (None, "int8"):
        raise BuildError(f"--quantize {quantize}: only int8 is supported")
    if io not in ("float32", "int8"):
        raise BuildError(f"--io {io}: choose float32 or int8")
    if quantize is None and (io != "float32" or calibration is not None):
        raise BuildError("--io int8 and --calibration need --quantize int8")
    if pte_path is not None:
        if quantize is not None:
            raise BuildError("--quantize applies to a model file; a .pte is run as it is")
        data = Path(pte_path).read_bytes()
        try:
            program = read_program(data)
        except pte.PteError as e:
            raise BuildError(f"{pte_path}: {e}") from None
        return program, data, None
    from mcu_gen.capture.export import export_methods, export_model
    from mcu_gen.capture.model_file import load_model_file

    spec = load_model_file(model)
    has_kernel = (lambda op: op in available) if available is not None else None
    if spec.methods:  # several methods (docs/methods.md)
        if quantize is not None:
            raise BuildError(f"{model}: a model with several methods (methods()) is fp32 only for now: "
                             f"--quantize int8 is not supported for it")
        program = export_methods(spec, fuse=fuse, has_kernel=has_kernel)
    elif quantize == "int8":
        from mcu_gen.quantize import QuantizeError, export_quantized

        try:
            program, gm = export_quantized(spec, io=io, calibration=calibration, has_kernel=has_kernel,
                                           calibration_method=calibration_method, bias_correction=bias_correction)
        except QuantizeError as e:
            raise BuildError(str(e)) from None
        spec.quantized_module = gm
    else:
        program = export_model(spec, fuse=fuse, has_kernel=has_kernel)
    if not plan:
        return program, None, spec
    inplace_pass.plan_memory(program)
    return program, pte.write(program), spec


# Bytes of the main RAM region the planner leaves to everything but the arena and the stack (runtime
# state, protocol frames, .data/.bss of board and libc: 1.5-2.5 KB measured, docs/memory_planning.md);
# the link checks the real figure (the linker script's ASSERT).
MAIN_REGION_RESERVE = 4096


def parse_ram_regions(spec, board: Board) -> dict:
    """{region: bytes} from a dict or "dtcm=4096,sram=1M" (K = 1024, M = 1024 * 1024)."""
    names = [r.name for r in board.ram_regions]
    if isinstance(spec, str):
        out = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, eq, size = part.partition("=")
            mult = {"k": 1024, "m": 1024 * 1024}.get(size[-1:].lower(), 1)
            try:
                out[name.strip()] = int(size[:-1] if mult > 1 else size) * mult
            except ValueError:
                raise BuildError(f"--ram-regions {part!r}: give NAME=BYTES (e.g. {names[0]}=64K)") from None
        spec = out
    for name, size in dict(spec).items():
        if name not in names:
            raise BuildError(f"--ram-regions: board {board.name} has no RAM region {name!r} (it has {', '.join(names)})")
        if int(size) < 0:
            raise BuildError(f"--ram-regions {name}={size}: a region's room is at least 0 bytes")
    return {k: int(v) for k, v in dict(spec).items()}


def place_regions(board: Board, program: Program, available, ram_regions=None, arena_region=None,
                  stack_bytes=None) -> bool:
    """Spread the planned arena over the board's RAM regions (mcu_gen/plan/regions.py): each region's room
    is its size (the main one minus the stack and MAIN_REGION_RESERVE; an --upload buffer takes only what
    the arena leaves, upload_buffer_size) or the --ram-regions figure. Returns True when the plan changed (the .pte must be written again). Boards with one region and
    builds without the two options keep the one-arena plan untouched."""
    from mcu_gen.plan import regions as plan_regions

    if len(board.ram_regions) == 1 and not ram_regions and arena_region is None:
        return False
    rooms = parse_ram_regions(ram_regions or {}, board)
    if arena_region is not None and arena_region not in [r.name for r in board.ram_regions]:
        raise BuildError(f"--arena-region {arena_region!r}: board {board.name} has the RAM regions "
                         + ", ".join(r.name for r in board.ram_regions))
    stack = board.stack_bytes if stack_bytes is None else int(stack_bytes)
    if program.more_methods:  # several methods share one arena: it stays in the main region
        main = next(r for r in board.ram_regions if r.main)
        room = min(main.size - stack - MAIN_REGION_RESERVE, rooms.get(main.name, main.size))
        if arena_region not in (None, main.name) or program.max_arena_size > room:
            raise BuildError(f"a program with several methods keeps its one arena in the main RAM region "
                             f"{main.name!r} (several regions for several methods: not supported); it needs "
                             f"{program.max_arena_size:,} B there, the region has room for {room:,} B")
        return False
    specs = []
    for k, r in enumerate(board.ram_regions, start=1):
        room = r.size - (stack + MAIN_REGION_RESERVE if r.main else 0)
        specs.append(plan_regions.Region(r.name, k, r.speed, max(0, min(room, rooms.get(r.name, room)))))
    before = ([(v.mem_id, v.offset) for v in program.values if isinstance(v, TensorValue)], program.arena_sizes)
    try:
        plan_regions.place_in_regions(program, specs, pin=arena_region, available=available)
    except plan_regions.RegionError as e:
        raise BuildError(f"the model does not fit {board.name}'s RAM regions: {e}") from None
    after = ([(v.mem_id, v.offset) for v in program.values if isinstance(v, TensorValue)], program.arena_sizes)
    return before != after


class FlashOverflow(BuildError):
    """The linked image is ``excess`` bytes over the board's flash (the flash fit may leave generated layers out)."""

    def __init__(self, board: Board, excess: int):
        self.excess = excess
        super().__init__(f"the model does not fit {board.name}: flash: needs {board.flash.size + excess:,} bytes, the "
                         f"board has {board.flash.size:,} ({excess:,} bytes too many)")


def check_fits(board: Board, usage: dict) -> None:
    """BuildError naming each memory the build is over; FlashOverflow when the flash is the only one."""
    problems = []
    per_region = usage.get("ram_regions") or {board.ram_name: usage["ram_bytes"]}
    for r in board.ram_regions:
        need = per_region.get(r.name, 0)
        if need > r.size:
            where = "RAM" if len(board.ram_regions) == 1 else f"RAM region {r.name}"
            problems.append(f"{where}: needs {need:,} bytes, the board has {r.size:,} ({need - r.size:,} bytes too many)")
    excess = usage["flash_bytes"] - board.flash.size
    if excess > 0 and not problems:
        raise FlashOverflow(board, excess)
    if excess > 0:
        problems.insert(0, f"flash: needs {usage['flash_bytes']:,} bytes, the board has {board.flash.size:,} "
                           f"({excess:,} bytes too many)")
    if problems:
        raise BuildError(f"the model does not fit {board.name}: " + "; ".join(problems))


def precheck_fits(board: Board, program: Program, data: bytes) -> None:
    """Fail early, before compiling, when the program alone cannot fit."""
    sizes = [program.max_arena_size] + list(program.extra_arenas)
    regions = {r.name: (sizes[k - 1] if k <= len(sizes) else 0) for k, r in enumerate(board.ram_regions, start=1)}
    regions[board.ram_name] += board.stack_bytes + sum(sizes[len(board.ram_regions):])
    try:
        check_fits(board, {"flash_bytes": len(data), "ram_bytes": sum(regions.values()), "ram_regions": regions})
    except FlashOverflow as e:  # the program alone: leaving generated layers out only makes it larger
        raise BuildError(str(e)) from None


def check_program_plan(program: Program, available=None, examples=None) -> None:
    """check_method_plan for every method of the program, then plan_check.check_methods (shared state at one
    offset, never overwritten by another method's tensors). ``examples``: the model's example inputs (one method)."""
    if not program.more_methods:
        check_method_plan(program, available, examples)
        return
    for m in program.methods:
        check_method_plan(m, available)
    try:
        plan_check.check_methods(program, available)
    except plan_check.PlanError as e:
        raise BuildError(f"the memory plan is wrong: {e}") from None


def adopt_program_plan(program: Program, available=None) -> bool:
    """A .pte as it came: its plan is kept unless it puts an output over an input that our kernel
    cannot overwrite in place; then mcu-gen plans it again (in-place variants included: the .pte's
    plan is not one our kernels can run, so it is replaced, not undone). Done before the kernels are
    selected, which depend on the operators the plan chose. True when a method was planned again
    (re-write the bytes)."""
    replanned = False
    for m in (program.methods if program.more_methods else [program]):
        replanned = adopt_method_plan(m, available) or replanned
    return replanned


def adopt_method_plan(program: Program, available=None) -> bool:
    if "read_from" not in program.meta:
        return False
    if not program.meta.get("inplace"):
        program.meta["inplace"] = plan_check.inplace_from_offsets(program, available)
    try:
        plan_check.check_plan(program, available)
    except plan_check.InplaceNotAllowed:  # this method alone, as it came
        planner.plan(program, available=available, choose=inplace_pass.pass_for(available))
        return True
    except plan_check.PlanError:
        pass  # a wrong plan: check_method_plan says how
    return False


def check_method_plan(program: Program, available=None, examples=None) -> None:
    """Every build's memory plan, a .pte's as it came included (docs/memory_planning.md; adopted
    by adopt_program_plan before the kernels were chosen): check_plan proves it, then the program
    runs on the host twice, each tensor in its own buffer and all in the planned arena, and the
    outputs must be identical: on the model's example inputs (``examples``) when they are the program's (real
    values, valid for every operator), else on plan_check_inputs' random ones."""
    from mcu_gen.reference import PlannedExecutionError, ReferenceUnsupported, check_planned_execution

    try:
        plan_check.check_plan(program, available)
    except plan_check.PlanError as e:  # tensors live together overlap, or out of the arena: a wrong plan
        raise BuildError(f"the memory plan is wrong: {e}") from None
    if any(ins.op.startswith(pte.DELEGATE_PREFIX) for ins in program.instructions):
        return  # the host cannot run an NPU's part of the program
    real = example_check_inputs(program, examples)
    try:
        check_planned_execution(program, real if real is not None else plan_check_inputs(program))
    except PlannedExecutionError as e:
        raise BuildError(f"the memory plan is wrong: {e}") from None
    except ReferenceUnsupported:
        pass  # the host reference has no implementation of an operator here: check_plan alone
    # any other ReferenceError (an operator raised while running, OperatorFailed) propagates: a failed check


def plan_for_kernels(board: Board, program: Program, unplanned: bool, backend: str, mode: str,
                     available: dict) -> bool:
    """The build's one memory plan, made once the kernels are chosen: the in-place pass
    (mcu_gen/plan/inplace_pass.py) and the planner. CMSIS-NN runs no in-place variants (its speed over
    the RAM they would save); with generated kernels (``mode``, variant_refusal) the pass leaves out a
    variant the generator does not take where it takes the base operator's form of the layer.
    A program planned already (a .pte, adopted) keeps its plan unless it was made for other kernels:
    CMSIS-NN (apply_backend switched the .pte's variants back and sized the adapters' scratch) or
    variants the generator refuses (they go back to their operator, same arguments); it is then
    planned here. True when the program was planned (write its bytes)."""
    allow = backend != "cmsis-nn"
    refuse = variant_refusal(board, mode) if allow and not program.more_methods else None
    if not unplanned:
        refused = {ins.op for k, ins in enumerate(program.instructions) if refuse is not None and refuse(program, k, ins.op)}
        if allow and not refused:
            return False
        variant_of = {k.op: k.variant_of for k in kernel_registry.find_kernels().values() if k.variant_of}
        for ins in program.instructions:
            if ins.op in refused:
                ins.op = variant_of[ins.op]
        program.meta["inplace"] = []
    choose = inplace_pass.pass_for(available, allow, refuse)
    from mcu_gen.backends import generated, generated_mve

    if refuse is not None and generated.board_supports(board):  # the generated DSP layers' per-call buffers in
        choose = scratch_pass(choose)  # their scratch tensors, where the arena allows
    elif refuse is not None and generated_mve.board_supports(board):  # the MVE convolutions' windows
        choose = scratch_pass(choose, "mve")
    planner.plan_methods(program, None, available, True, choose=choose)
    return True


def variant_refusal(board: Board, mode: str):
    """refuse(program, step, op) for the in-place pass: True where ``op`` is an in-place variant whose
    layer the generated kernels (DSP or MVE, per the board's core) do not take although they take the
    base operator's form of it (the row-by-row k x k convolution, which has no generated form; an
    in-place depthwise whose channel group is too large for the stack): the portable variant would run
    there, several times slower. None where no generated kernels run (``mode`` library, or a core
    without them)."""
    from mcu_gen.backends import generated, generated_mve

    if mode not in generated.MODES or mode == "library":
        return None
    gen_module = generated_mve if generated_mve.board_supports(board) else generated
    if not gen_module.board_supports(board):
        return None
    variant_of = {k.op: k.variant_of for k in kernel_registry.find_kernels().values() if k.variant_of}

    def refuse(program: Program, step: int, op: str) -> bool:
        base = variant_of.get(op)
        return (base in generated.GENERATED_OPS and not gen_module.covers(program, step, op)
                and gen_module.covers(program, step, base))

    return refuse


def build(model=None, *, board: str = "mps2-an505", pte_path=None, out=None, fuse: bool = True,
          compile: bool = True, opt_level: str = "-O2", quantize=None, io: str = "float32",
          calibration=None, framework: str | None = None, backend: str = "auto", cmsis_nn_path=None,
          npu: str | None = None, ethos_u_driver=None, value_cache=None, upload: bool = False,
          frame_bytes: int | None = None, stack_bytes: int | None = None,
          kernels: str = "auto", ram_regions=None, arena_region: str | None = None,
          calibration_method: str | None = None, bias_correction: bool = False, debug: bool = False) -> BuildResult:
    """upload: the image gets a program-upload buffer (model updates, the verifier tests); the deployable
    default has none. debug: the image answers the profiling and debugging requests (RUN_PROFILED, RUN_RANGE,
    READ_VALUE: what `mcu-gen profile` and `mcu-gen debug` build); the deployable default (and its size report)
    has none, an --upload image always has them. frame_bytes: protocol frame payload (frame_payload()). stack_bytes: the stack the link
    reserves (None: the linker script's default, which `mcu-gen run` measures and then shrinks: relink()).
    ram_regions: {region name: bytes of arena the planner may use there} (or "dtcm=4K,sram=1M"), overriding
    the board's regions' room; arena_region: put the whole arena in this region (mcu_gen/plan/regions.py)."""
    b = get_board(board)
    from mcu_gen.firmware import platformio_project

    framework = platformio_project.choose_framework(b, framework)  # "baremetal" unless the board is pio-only
    available = kernel_registry.find_kernels()
    # A model's program comes unplanned (data None): it is planned once its kernels are chosen (plan_for_kernels).
    program, data, spec = load_program(model, pte_path, fuse=fuse, available=available, quantize=quantize, io=io,
                                       calibration=calibration, calibration_method=calibration_method,
                                       bias_correction=bias_correction, plan=False)
    if data is not None and adopt_program_plan(program, available):  # before the kernels are chosen: a new plan may pick other operators
        data = pte.write(program)
    npu_build = None
    if program.more_methods and kernels == "auto":
        kernels = "library"  # auto: where they apply; a program with several methods runs the portable kernels
    if program.more_methods and (npu is not None or kernels != "library" or backend == "cmsis-nn"):
        raise BuildError(f"a program with several methods ({', '.join(program.method_names)}) runs on the portable "
                         f"kernels only for now: --npu, --kernels generated and --backend cmsis-nn are not supported")
    if npu is not None:  # Ethos-U: NPU subgraphs become delegate calls (mcu_gen/backends/ethosu/)
        program, npu_build = _delegate_to_npu(b, program, npu, quantize, ethos_u_driver)
        data = None  # planned below, with the kernels of its CPU part
    from mcu_gen.firmware.backend_step import BackendChoice, apply_backend

    if program.more_methods:
        backend_choice = BackendChoice("portable", requested=backend, how="a program with several methods")
    else:
        backend_choice = apply_backend(b, program, backend, cmsis_nn_path)
    if plan_for_kernels(b, program, data is None, backend_choice.backend, kernels, available):
        data = pte.write(program)
    sel = kernel_registry.select(_cpu_operators(program), available)
    sel = backend_choice.selection or sel
    sel.missing = [op for op in sel.missing if not op.startswith(pte.DELEGATE_PREFIX)]
    gen = _generated_kernels(b, program, sel, kernels)
    if sel.missing:
        raise BuildError(
            "no kernel for operator(s) " + ", ".join(sel.missing) + f" (mcu-gen has kernels for {len(available)} operators; "
            "see `mcu-gen kernels`)"
        )
    examples = spec.example_inputs if spec is not None else None
    check_program_plan(program, available, examples)
    if place_regions(b, program, available, ram_regions, arena_region, stack_bytes):
        data = pte.write(program)
        if gen.layers:
            gen = gen.regenerate()
        check_program_plan(program, available, examples)  # the plan over several arenas, run on the host again
    name = spec.name if spec is not None else Path(pte_path).stem
    out = Path(out) if out is not None else Path("mcu-gen-out") / f"{name}-{b.name}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.pte").write_bytes(data)
    stored = pte.read(data)
    num_values = max(len(m.values) for m in stored.methods)
    num_instructions = max(len(m.instructions) for m in stored.methods)
    cache = value_cache_size(value_cache, backend_choice.backend, num_values)
    icache = num_instructions if cache >= num_values else min(num_instructions, DEFAULT_INSTRUCTION_CACHE)
    while True:  # once, or again with generated layers left to the library kernels to fit the flash (flash_fit)
        try:
            project, elf, usage, stop, embedded, bound_calls = _render_and_compile(
                b, program, data, sel, gen, out, framework, backend_choice, npu_build, compile, opt_level, cache,
                icache, upload, frame_bytes, stack_bytes, debug)
            break
        except FlashOverflow as e:
            leave = flash_fit.layers_to_leave(gen.layers, e.excess) if kernels == "auto" else []
            if not leave:
                hint = ("; `--kernels auto` leaves generated layers to the library kernels until the image fits"
                        if kernels == "generated" and gen.layers else "")
                raise BuildError(f"{e}{hint}") from None
            with Progress.step(f"{e.excess:,} B over {b.name}'s flash: {len(leave)} generated layer(s) left to the "
                               "library kernels"):
                gen = gen.regenerate({l.instruction: flash_fit.leave_reason(l, b.name, e.excess) for l in leave})
    report = build_report(out, name, b, program, data, usage, sel, upload=upload, frame_bytes=frame_bytes,
                          quantize=quantize, io=io, spec=spec, backend_choice=backend_choice, kernels=kernels,
                          gen=gen, num_values=num_values, cache=cache, num_instructions=num_instructions,
                          icache=icache, bound_calls=bound_calls, npu_build=npu_build, embedded=embedded)
    write_reports(out, report)
    if stop is not None:
        raise BuildError(stop)
    result = BuildResult(out=out, board=b, program=program, pte_bytes=data, report=report, elf=elf, spec=spec,
                         kernels=sel.kernels)
    if elf is not None and framework == "baremetal" and stack_bytes is None and b.emulator.kind != "native":
        reserve_static_stack(result)  # the stack the image can use, bounded from its code, is what it reserves
    return result


def _render_and_compile(b: Board, program: Program, data: bytes, sel, gen, out: Path, framework: str,
                        backend_choice, npu_build, compile: bool, opt_level: str, cache: int, icache: int, upload: bool,
                        frame_bytes, stack_bytes, debug: bool):
    """The firmware project of this program and its generated layers, compiled (``compile``): (project, ELF or None,
    usage, the NPU build's stop message or None, the embedded program, bound calls). FlashOverflow when the image is
    over the board's flash."""
    embedded, owners = _embedded_program(program, data, gen)
    precheck_fits(b, program, embedded)
    # Generated layers are chosen at load by prepare functions, which decode the arguments they check on
    # demand and check their tensors' planned places (templates/generated/macros.j2 `matches`): they need no value cache;
    # a layer after the instruction cache is one (instruction, function) pair: in a flash table the load checks
    # (MCU_BOUND_TABLE) in an image without uploads, else 8 B of RAM (MCU_BOUND_CALLS).
    bound_table = sorted((int(layer.instruction), layer.name) for layer in gen.layers if layer.instruction >= icache)
    bound_calls = len(bound_table)
    project = render_project(out / FIRMWARE_DIR, b, program, data, sel.kernels, opt_level=opt_level,
                             framework=framework, cmsis_nn_root=backend_choice.root, npu_build=npu_build,
                             value_cache=cache, instruction_cache=icache, bound_table=bound_table,
                             upload=upload, frame_bytes=frame_bytes,
                             stack_bytes=stack_bytes, generated_source=gen.source + owners_source(owners),
                             debug=debug, embedded=embedded, external_owners=len(owners))
    elf = None
    stop = npu_build.stop_message(out) if npu_build is not None and not npu_build.has_driver and compile else None
    if stop is not None:
        compile = False  # the project, .pte and report are still written
    usage = {"flash_bytes": 0, "ram_bytes": 0, "sections": {}}
    if compile:
        if framework == "baremetal":
            with Progress.step(f"compiling firmware for {b.name}"):
                try:
                    built = compile_project(project, b)
                except BuildError as e:
                    excess = flash_fit.flash_excess(str(e))
                    if excess is None:
                        raise
                    raise FlashOverflow(b, excess) from None
        else:  # an upstream PlatformIO platform: needs network on first use
            from mcu_gen.firmware.platformio_setup import PioError, build_framework_project

            try:
                built = build_framework_project(project)
            except PioError as e:
                raise BuildError(str(e)) from None
        elf, usage = install_elf(built, out, project, b, program, embedded)
    return project, elf, usage, stop, embedded, bound_calls


def _embedded_program(program: Program, data: bytes, gen) -> tuple:
    """(the bytes the image embeds, the generated layers that hold constants for it): the program with the
    constants only generated layers read as external constants (mcu_gen/backends/generated/external.py), or
    `data` itself when there are none, or when `data` is a .pte kept as it came (another writer's value
    numbering, which the host's view of the device must keep)."""
    if not gen.layers:
        return data, []
    external, owners = external_constants(program, gen.layers)
    if not external or pte.write(program) != data:
        return data, []
    return pte.write(program, external), owners


def install_elf(built: Path, out: Path, project: Path, b: Board, program: Program, data: bytes):
    """Copies the linked ELF to out/firmware.elf (and the UF2); returns (elf, usage with the size breakdown)."""
    elf = out / "firmware.elf"
    shutil.copy2(built, elf)
    usage = memory_usage(elf, b)
    check_fits(b, usage)
    map_file = project / "build" / "firmware.map"
    if map_file.exists():
        from mcu_gen.firmware.size_report import size_breakdown

        usage["size"] = size_breakdown(elf, map_file, b, program, data)
    if b.uf2_family is not None:
        from mcu_gen.firmware.uf2 import elf_to_uf2

        (out / "firmware.uf2").write_bytes(elf_to_uf2(elf.read_bytes(), b.uf2_family))
    return elf, usage


def _generated_kernels(board: Board, program: Program, sel, mode: str):
    """mcu-gen's per-layer kernels (mcu_gen/backends/generated/) for this build, and the selection
    rewired to reach them. ``mode``: auto (where the core has them: DSP or MVE), generated
    (the same, an error where the core has none), library (none)."""
    from mcu_gen.backends import generated, generated_mve

    if mode not in generated.MODES:
        raise BuildError(f"--kernels {mode}: choose one of {', '.join(generated.MODES)}")
    if not any(k.op in generated.GENERATED_OPS for k in sel.kernels):
        return generated.Generated()
    # MVE cores (Cortex-M55): generated_mve.py; DSP cores without MVE (M33, M4): generated/.
    gen_module = generated_mve if generated_mve.board_supports(board) else generated
    if mode == "library":  # none; the report says how many layers `--kernels auto` would generate here
        return generated.Generated(available=len(gen_module.eligible(program)[0]) if gen_module.board_supports(board) else 0)
    if not gen_module.board_supports(board):
        if mode == "generated":
            raise BuildError(f"--kernels generated: {board.name} ({board.core}) has no generated kernels "
                             "(they need the DSP extension (Cortex-M33, M4) or MVE (Cortex-M55))")
        return generated.Generated()
    return _regenerate(gen_module, program, sel, list(sel.kernels), {})


def _regenerate(gen_module, program: Program, sel, library: list, leave: dict):
    """The generated layers (but those of ``leave``, {instruction: reason}) over the library kernels
    ``library``, with ``sel`` rewired to reach them. A later plan (place_regions) moves tensors, and the flash
    fit leaves layers out: then the layers, which read their tensors at the places the plan gave them, are
    generated again (``gen.regenerate(leave)``)."""
    gen = gen_module.generate(program, library, leave)
    sel.kernels = gen_module.hooked_kernels(library, gen)
    gen.regenerate = lambda more=None: _regenerate(gen_module, program, sel, library, {**leave, **(more or {})})
    return gen


def _cpu_operators(program: Program) -> list:
    """The operators that need kernels, over every method (delegate calls run on their backend)."""
    return [op for op in program.all_operators if not op.startswith(pte.DELEGATE_PREFIX)]


def _delegate_to_npu(board: Board, program: Program, npu: str, quantize, driver_path):
    """(delegated program, not planned yet; ethosu.firmware.NpuBuild) for --npu."""
    if quantize != "int8":
        raise BuildError(f"--npu {npu}: the Ethos-U runs int8 programs; add --quantize int8")
    try:
        from mcu_gen.firmware.ethosu_driver import DriverError, delegate_for_board
        from mcu_gen.backends.ethosu.targets import NpuError
        from mcu_gen.backends.ethosu.vela import VelaError
    except ImportError as e:  # pragma: no cover - part of mcu-gen
        raise BuildError(str(e)) from None
    try:
        program, npu_build = delegate_for_board(board, program, npu, driver_path)
    except (DriverError, NpuError, VelaError) as e:
        raise BuildError(str(e)) from None
    except ImportError as e:
        raise BuildError(f"--npu needs the ethos-u extra (tosa-tools, ethos-u-vela): "
                         f"pip install 'mcu-gen[ethos-u]' ({e})") from None
    return program, npu_build


def relink(result: BuildResult, stack_bytes: int, measured: int | None = None) -> BuildResult:
    """Links result's firmware again with `stack_bytes` of stack (nothing is recompiled) and updates its ELF,
    sizes and reports; `measured` is the high-water mark the reservation was made from."""
    project = result.out / FIRMWARE_DIR
    if not (project / "CMakeLists.txt").exists() or result.elf is None:
        raise BuildError(f"{result.out}: no compiled CMake firmware project to relink")
    write_stack_file(project, stack_bytes)
    with Progress.step(f"linking firmware for {result.board.name} with {stack_bytes:,} B of stack"):
        built = compile_project(project, result.board)
    result.elf, usage = install_elf(built, result.out, project, result.board, result.program, result.pte_bytes)
    r = result.report
    r.update(flash_bytes=usage["flash_bytes"], ram_bytes=usage["ram_bytes"], sections=usage["sections"],
             size=usage.get("size"))
    r["stack"] = {"reserved_bytes": usage["sections"].get(".stack", 0), "measured_bytes": measured,
                  "rule": stack.STACK_RULE}
    write_reports(result.out, r)
    return result


def reserve_static_stack(result: BuildResult) -> None:
    """Computes the static bound of a compiled build (builder.BuildResult) and, where it bounds, links the image
    again with stack.static_reserve(bound) of stack instead of the linker script's default (nothing is recompiled:
    the code, and so the bound, stay as they are). report.json's "stack" gets the bound, the deepest path,
    and what it could not bound."""
    bound = stack_bound(result.elf, result.board)
    if bound.bytes is not None:
        if stack.static_reserve(bound.bytes) < result.report["stack"]["reserved_bytes"]:
            relink(result, stack.static_reserve(bound.bytes))
            result.report["stack"]["rule"] = stack.STATIC_RULE
        else:
            result.report["stack"]["rule"] = "the linker script's default, no more than the static bound needs"
    result.report["stack"].update(bound.as_report())
    write_reports(result.out, result.report)
