"""The stack of a deployable image: what to reserve for a static bound (firmware/stack_bound.py, at build
time) or for a measured high-water mark (`mcu-gen run`, where the code cannot be bounded), and relinking a
built firmware with that stack (nothing recompiled), its ELF, sizes and reports updated."""
from __future__ import annotations

from mcu_gen.errors import BuildError
from mcu_gen.firmware.builder import BuildResult, install_elf
from mcu_gen.firmware.project import FIRMWARE_DIR, compile_project, write_stack_file
from mcu_gen.firmware.report import write_reports
from mcu_gen.firmware.stack_bound import stack_bound
from mcu_gen.progress import Progress


# The stack a deployable image reserves once the stack it uses is measured (`mcu-gen run`): the measured
# high-water mark plus STACK_MARGIN_FIXED bytes (an exception frame with FP state is 104 B, plus the
# handler's own frame) plus 1/STACK_MARGIN_DIVISOR of it (a path the runs did not take), rounded up to 64.
STACK_MARGIN_FIXED = 256
STACK_MARGIN_DIVISOR = 8


def stack_reserve(measured: int) -> int:
    """Bytes of stack to reserve for a measured high-water mark of `measured` bytes."""
    n = measured + STACK_MARGIN_FIXED + (measured + STACK_MARGIN_DIVISOR - 1) // STACK_MARGIN_DIVISOR
    return (n + 63) // 64 * 64


STACK_RULE = (f"measured high-water mark + {STACK_MARGIN_FIXED} B + 1/{STACK_MARGIN_DIVISOR} of it, "
              "rounded up to 64 B")


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
                  "rule": STACK_RULE}
    write_reports(result.out, r)
    return result


# The stack a build reserves from a static bound: the bound plus 1/STATIC_MARGIN_DIVISOR of it (an
# instruction form the reader might mis-size), rounded up to 64 B.
STATIC_MARGIN_DIVISOR = 16
STATIC_RULE = f"static bound + 1/{STATIC_MARGIN_DIVISOR} of it, rounded up to 64 B"


def static_reserve(bound: int) -> int:
    """Bytes of stack to reserve for a static bound of `bound` bytes."""
    n = bound + (bound + STATIC_MARGIN_DIVISOR - 1) // STATIC_MARGIN_DIVISOR
    return (n + 63) // 64 * 64


def reserve_static_stack(result) -> None:
    """Computes the static bound of a compiled build (builder.BuildResult) and, where it bounds, links the image
    again with static_reserve(bound) of stack instead of the linker script's default (nothing is recompiled:
    the code, and so the bound, stay as they are). report.json's "stack" gets the bound, the deepest path,
    and what it could not bound."""
    bound = stack_bound(result.elf, result.board)
    if bound.bytes is not None:
        if static_reserve(bound.bytes) < result.report["stack"]["reserved_bytes"]:
            relink(result, static_reserve(bound.bytes))
            result.report["stack"]["rule"] = STATIC_RULE
        else:
            result.report["stack"]["rule"] = "the linker script's default, no more than the static bound needs"
    result.report["stack"].update(bound.as_report())
    write_reports(result.out, result.report)
