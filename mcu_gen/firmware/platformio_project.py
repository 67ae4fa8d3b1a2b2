"""Renders the PlatformIO side of a generated firmware project.

Bare-metal boards (rp2350, the QEMU boards): platformio.ini plus the local
dev-platform (pio_platform/) that drives the system arm-none-eabi-gcc and
makes PlatformIO's tool-scons itself from the scons wheel (platform.py), so
`pio run` needs no download and no set-up, in any PlatformIO core. QEMU
boards also get a `<board>_test` environment and test/test_model, an
on-device check `pio test -e <board>_test` runs under QEMU.

Framework builds (`--framework arduino`, and every "pio-only" board): a
platformio.ini on the board's upstream platform (board.toml
[platformio.<framework>]), the framework entry and a PAL on `Serial`. These
need network: PlatformIO installs the platform and its toolchain.

Host-board projects have no PlatformIO side (they build with CMake only).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from mcu_gen.paths import TEMPLATES
from mcu_gen.errors import McuGenError

BAREMETAL = "baremetal"
ARDUINO_FILES = ("arduino_entry.cpp", "pal_arduino.cpp")
TEST_CASES = 2


class FrameworkError(McuGenError, ValueError):
    """A framework the board does not offer."""


def board_id(name: str) -> str:
    return name.replace("-", "_")


def choose_framework(board, framework: str | None) -> str:
    """The framework to build with: `framework`, or the board's default (its first)."""
    offered = board.frameworks
    if not offered:
        raise FrameworkError(f"board {board.name!r} offers no framework")
    if framework is None:
        return offered[0]
    if framework not in offered:
        raise FrameworkError(f"board {board.name!r} has no framework {framework!r}; it offers: {', '.join(offered)}")
    return framework


def qemu_test_command(board) -> list[str]:
    """argv (one item per platformio.ini line) of the QEMU run `pio test` does."""
    return [board.emulator.binary, "-M", board.emulator.machine, "-nographic", "-monitor", "none", "-serial", "none",
            "-semihosting-config", "enable=on,target=native", *board.emulator.extra_args,
            "-kernel", "${platformio.build_dir}/${this.__env__}/firmware.elf"]


def render(dest: Path, env, ctx: dict, framework: str = BAREMETAL, program=None, pte_bytes: bytes | None = None) -> None:
    """`env`: the Jinja environment over templates/; `ctx`: the CMakeLists.txt.j2 context.
    `program`/`pte_bytes` (optional) let QEMU boards get the `pio test` check."""
    if not ctx.get("cross", True):
        return
    dest = Path(dest)
    board = ctx["board"]
    ctx = dict(ctx, board_id=board_id(board.name))
    if framework != BAREMETAL:
        _render_framework(dest, env, ctx, framework)
        return
    qemu = board.is_qemu and program is not None
    ctx["qemu_test"] = qemu_test_command(board) if qemu else None
    (dest / "platformio.ini").write_text(env.get_template("platformio/platformio.ini.j2").render(**ctx))
    platform = dest / "pio_platform"
    if platform.exists():
        shutil.rmtree(platform)
    (platform / "builder").mkdir(parents=True)
    (platform / "boards").mkdir()
    src = TEMPLATES / "platformio" / "platform"
    shutil.copy2(src / "platform.json", platform / "platform.json")
    shutil.copy2(src / "platform.py", platform / "platform.py")
    shutil.copy2(src / "builder" / "main.py", platform / "builder" / "main.py")
    _add_tool_scons(platform)
    (platform / "boards" / f"{ctx['board_id']}.json").write_text(
        env.get_template("platformio/platform/boards/board.json.j2").render(**ctx))
    if qemu:
        from mcu_gen.reference.interpreter import ReferenceError

        try:
            _render_test(dest, env, program)
        except ReferenceError as e:  # the firmware still builds; only `pio test` has nothing to check
            test = dest / "test"
            if test.exists():
                shutil.rmtree(test)
            (dest / "PIO_TEST_SKIPPED.txt").write_text(
                f"No PlatformIO test vectors: mcu-gen's host reference cannot run this program ({e}).\n"
                "`pio run` builds the firmware; verify it with `mcu-gen run` or `mcu-gen verify`.\n")


def _add_tool_scons(platform: Path) -> None:
    """The dev-platform makes PlatformIO's tool-scons itself (platform.py, before each build): it gets
    mcu_gen/firmware/pio_tool_scons.py, and where mcu-gen's own SCons is, for a PlatformIO whose Python has none."""
    from mcu_gen.firmware import pio_tool_scons

    shutil.copy2(pio_tool_scons.__file__, platform / "mcu_gen_tool_scons.py")
    scons = pio_tool_scons.importable_scons()
    if scons is not None:
        (platform / pio_tool_scons.SCONS_HINT_FILE).write_text(json.dumps({"scons": str(scons)}) + "\n")


def _render_framework(dest: Path, env, ctx: dict, framework: str) -> None:
    board = ctx["board"]
    if framework != "arduino":
        raise FrameworkError(f"framework {framework!r} has no templates (mcu-gen knows: arduino)")
    for f in board.files:  # the bare-metal startup/PAL/linker script play no part here
        (dest / "board" / f.name).unlink(missing_ok=True)
    for name in ARDUINO_FILES:
        shutil.copy2(TEMPLATES / "platformio" / "arduino" / name, dest / "board" / name)
    bare = {f"board/{f.name}" for f in board.source_paths}
    sources = [s for s in ctx["sources"] if s not in bare] + [f"board/{n}" for n in ARDUINO_FILES]
    ctx = dict(ctx, sources=sources, framework=framework, pio=board.platformio[framework])
    (dest / "platformio.ini").write_text(env.get_template("platformio/platformio_framework.ini.j2").render(**ctx))


def _render_test(dest: Path, env, program) -> None:
    """test/test_model: inputs (seeded random) and the reference interpreter's outputs, in memory order."""
    from mcu_gen.boards import c_array_lines
    from mcu_gen.reference import run_reference
    from mcu_gen.reference.inputs import random_inputs

    def memory_order(arr, t):
        order = tuple(t.dim_order) if getattr(t, "dim_order", None) else tuple(range(arr.ndim))
        return np.asarray(np.asarray(arr, dtype=t.dtype).transpose(order), order="C").tobytes()

    cases = []
    outs = [program.tensor(i) for i in program.outputs]
    worst = [1.0] * len(outs)
    for one in random_inputs(program, TEST_CASES, seed=1):
        got = run_reference(program, list(one))
        ins = [memory_order(x, program.tensor(i)) for x, i in zip(one, program.inputs)]
        exp = [memory_order(np.asarray(g), t) for g, t in zip(got, outs)]
        for k, g in enumerate(got):
            finite = np.asarray(g, dtype=np.float64)
            finite = finite[np.isfinite(finite)]  # NaN and infinities must match exactly (test_main.cpp)
            if finite.size:
                worst[k] = max(worst[k], float(np.max(np.abs(finite))))
        cases.append({"inputs": [c_array_lines(b) for b in ins], "outputs": [c_array_lines(b) for b in exp]})
    outputs = [{"float": t.dtype == "float32", "numel": int(np.prod(t.shape)), "tolerance": 1e-4 * w}
               for t, w in zip(outs, worst)]
    test = dest / "test"
    if test.exists():
        shutil.rmtree(test)
    (test / "test_model").mkdir(parents=True)
    shutil.copy2(TEMPLATES / "platformio" / "test" / "test_custom_runner.py", test / "test_custom_runner.py")
    (test / "test_model" / "test_main.cpp").write_text(env.get_template("platformio/test/test_main.cpp.j2").render(
        cases=cases, outputs=outputs, n_inputs=len(program.inputs)))
