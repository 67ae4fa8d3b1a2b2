"""PlatformIO projects: bare-metal ones build with `pio run` offline (mcu-gen's dev-platform and its own
tool-scons), `pio test` runs the on-device check under QEMU, framework projects pass PlatformIO's config check."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from mcu_gen.firmware import host
from mcu_gen.firmware import platformio_setup as pio
from mcu_gen.firmware import uf2
from mcu_gen.firmware.builder import build
from mcu_gen.paths import EXAMPLES
from mcu_gen.firmware.platformio_project import FrameworkError
from test_rp2350 import check_rp2350_image, nm

MNIST = EXAMPLES / "mnist" / "model.py"


@pytest.fixture(scope="module")
def core(tmp_path_factory, qemu_tools):
    try:
        import platformio  # noqa: F401
    except ImportError:
        pytest.fail(f"PlatformIO is missing: run scripts/setup.sh ({pio.INSTALL_HINT})")
    return pio.ensure_tool_scons(tmp_path_factory.mktemp("pio-core"))


def test_tool_scons_made_from_the_wheel(core):
    pkg = core / "packages" / "tool-scons"
    assert json.loads((pkg / ".piopm").read_text())["spec"]["owner"] == "platformio"
    assert json.loads((pkg / "package.json").read_text())["version"] == "4.41101.0"
    assert (pkg / "SCons" / "Script" / "__init__.py").is_file() and pio.tool_scons_ok(core)
    assert pio.ensure_tool_scons(core) == core  # second call: nothing to do
    env = pio.pio_env(core)
    assert env["PLATFORMIO_DISABLE_UPGRADE_CHECK"] == "true" and env["PLATFORMIO_SETTING_ENABLE_TELEMETRY"] == "No"
    assert env["PLATFORMIO_CORE_DIR"] == str(core)


def test_rp2350_project_builds_offline(core, tmp_path):
    r = build(MNIST, board="rp2350", out=tmp_path / "rp", compile=False)
    elf = pio.build_offline(r.out / "firmware", core)
    assert elf == r.out / "firmware" / ".pio" / "build" / "rp2350" / "firmware.elf" and elf.is_file()
    image = uf2.uf2_image(uf2.parse_uf2(uf2.elf_to_uf2(elf.read_bytes())))
    check_rp2350_image(image, nm(elf))


def test_rp2350_project_builds_with_plain_pio_run_in_a_brand_new_core(tmp_path, qemu_tools):
    """No set-up command: `pio run` in the project `mcu-gen build` wrote, PLATFORMIO_CORE_DIR an empty
    folder. The project's dev-platform makes tool-scons itself; PlatformIO's registry is never asked."""
    pytest.importorskip("platformio", reason="PlatformIO is missing: run scripts/setup.sh")
    r = build(MNIST, board="rp2350", out=tmp_path / "rp", compile=False)
    project = r.out / "firmware"
    core = tmp_path / "never-used-core"
    core.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORMIO_")}
    env["PLATFORMIO_CORE_DIR"] = str(core)
    proc = subprocess.run(pio.pio_executable() + ["run"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "[SUCCESS]" in out and "Installing platformio/tool-scons" not in out and "HTTPClientError" not in out
    assert pio.tool_scons_ok(core)
    elf = project / ".pio" / "build" / "rp2350" / "firmware.elf"
    check_rp2350_image(uf2.uf2_image(uf2.parse_uf2(uf2.elf_to_uf2(elf.read_bytes()))), nm(elf))


def test_dev_platform_takes_mcu_gens_scons_when_platformios_python_has_none(tmp_path):
    """A PlatformIO whose Python has no scons (VS Code's own): the dev-platform uses the SCons of the
    mcu-gen that rendered the project. Run in an isolated Python (-I -S: no site-packages, so no SCons)."""
    r = build(MNIST, board="mps2-an505", out=tmp_path / "an", compile=False)
    platform = r.out / "firmware" / "pio_platform"
    assert json.loads((platform / "mcu_gen_scons.json").read_text())["scons"] == str(pio.installed_scons())
    packages = tmp_path / "core" / "packages"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import mcu_gen_tool_scons as t; "
            "assert t.importable_scons() is None; print(t.provision(sys.argv[2], here=sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(platform), str(packages)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    assert pio.tool_scons_ok(packages.parent)
    # without the hint, nothing to make it from: left to PlatformIO (which would download it)
    (platform / "mcu_gen_scons.json").unlink()
    shutil.rmtree(packages / "tool-scons")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(platform), str(packages)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr
    assert not pio.tool_scons_ok(packages.parent)


def test_mps2_an505_project_builds_and_passes_pio_test(core, tmp_path):
    r = build(MNIST, board="mps2-an505", out=tmp_path / "an", compile=False)
    project = r.out / "firmware"
    assert pio.build_offline(project, core).is_file()
    # As in the CMake project: runtime, board and generated files for size, the kernels at -O2.
    verbose = pio.run_pio(["run", "-v", "-t", "clean"], project, core) and pio.run_pio(["run", "-v"], project, core)
    compiles = [line for line in verbose.stdout.splitlines() if " -c " in line or line.startswith("arm-none-eabi-g")]
    runtime = [[line for line in compiles if f"runtime/src/{name}" in line] for name in host.RUNTIME_SOURCES]
    conv = [line for line in compiles if "op_mcu_conv2d_max_pool2d.cpp" in line]  # MNIST fp32: conv + pool fused
    assert all(runtime) and conv, verbose.stdout[-2000:]
    assert all(" -Os" in lines[0] for lines in runtime)
    assert " -Os" not in conv[0] and " -O2" in conv[0]
    proc = pio.run_pio(["test", "-e", "mps2_an505_test"], project, core)
    out = proc.stdout
    for case in ("program_loads", "matches_reference_0", "matches_reference_1"):
        assert f"TEST {case} PASS" in out
    assert "3 test cases: 3 succeeded" in out

    # A wrong expected output makes `pio test` fail (the check is real).
    test_main = project / "test" / "test_model" / "test_main.cpp"
    src = test_main.read_text()
    head, sep, rest = src.partition("kCase0Out0[] = {\n")
    first_line, nl, tail = rest.partition("\n")
    test_main.write_text(head + sep + "  " + "0xff, " * 16 + nl + tail)  # the first 4 outputs become NaN
    with pytest.raises(pio.PioError, match="matches_reference_0 FAIL|exit 1"):
        pio.run_pio(["test", "-e", "mps2_an505_test"], project, core)


@pytest.mark.parametrize("board,framework,platform,pio_board", [
    ("rp2350", "arduino", "https://github.com/maxgerhardt/platform-raspberrypi.git", "rpipico2"),
    ("nucleo_h743zi", None, "ststm32", "nucleo_h743zi"),
    ("nrf52840_dk", None, "nordicnrf52", "nrf52840_dk"),
])
def test_framework_projects_pass_platformio_config_check(tmp_path, board, framework, platform, pio_board):
    r = build(MNIST, board=board, framework=framework, out=tmp_path / board, compile=False)
    project = r.out / "firmware"
    assert pio.validate_config(project) == {"errors": [], "warnings": []}
    from platformio.project.config import ProjectConfig

    cfg = ProjectConfig(str(project / "platformio.ini"))
    env = f"env:{board}"
    assert cfg.get(env, "platform") == platform and cfg.get(env, "board") == pio_board
    assert cfg.get(env, "framework") == ["arduino"]
    src_filter = "\n".join(cfg.get(env, "build_src_filter"))
    assert "+<board/pal_arduino.cpp>" in src_filter and "+<src/main.cpp>" in src_filter
    assert (project / "board" / "arduino_entry.cpp").is_file() and not (project / "CMakeLists.txt").exists()
    assert not list((project / "board").glob("startup_*"))


def test_unknown_framework_is_refused(tmp_path):
    with pytest.raises(FrameworkError, match="board 'mps2-an505' has no framework 'arduino'; it offers: baremetal"):
        build(MNIST, board="mps2-an505", framework="arduino", out=tmp_path / "x", compile=False)


def test_framework_build_without_network_says_why(tmp_path, monkeypatch):
    """Offline, PlatformIO cannot fetch the upstream platform: the error says the build needs network."""
    from mcu_gen.errors import BuildError

    def fake_run_pio(args, project, core=None, timeout=600):
        raise pio.PioError("`pio run` failed (exit 1):\nCould not resolve host: github.com")

    monkeypatch.setattr(pio, "run_pio", fake_run_pio)
    with pytest.raises(BuildError, match="needs network access"):
        build(MNIST, board="rp2350", framework="arduino", out=tmp_path / "a")


def test_program_the_reference_cannot_run_still_builds(tmp_path):
    """cortex_m::minimum has a portable kernel but no host-reference implementation: the project is
    still written (and compiles), without PlatformIO test vectors, and says why."""
    from mcu_gen.plan import inplace_pass
    from mcu_gen.program import pte
    from mcu_gen.program.ir import Instruction, Program

    p = Program()
    x = p.add_tensor((1, 8), "int8")
    out = p.add_tensor((1, 8), "int8")
    p.inputs.append(x)
    p.outputs.append(out)
    p.instructions.append(Instruction("cortex_m::minimum.out", [x, x, out, out]))
    inplace_pass.plan_memory(p)
    path = tmp_path / "min.pte"
    path.write_bytes(pte.write(p))
    r = build(pte_path=path, board="mps2-an505", out=tmp_path / "out", backend="portable")
    project = r.out / "firmware"
    assert r.elf is not None and r.elf.exists()
    assert not (project / "test").exists()
    note = (project / "PIO_TEST_SKIPPED.txt").read_text()
    assert "cortex_m::minimum" in note and "reference" in note
