"""The verify protocol end to end: a firmware built from templates/ with CMake,
run natively (host board, stdin/stdout pipes) and on QEMU mps2-an505."""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import time

import jinja2
import numpy as np
import pytest

from mcu_gen.firmware import platformio_project
from mcu_gen.boards import c_array_lines, get_board
from mcu_gen.device.link import Link, LinkError, PipePort
from mcu_gen.paths import RUNTIME_CORE, TEMPLATES
from mcu_gen.device.protocol import MAX_PAYLOAD, Error, Msg, encode_frame
from mcu_gen.firmware.toolchain import ToolchainError, cmake_build, find_tool

FAKE_PROGRAM = b"\x00" * 4 + b"NOPE" + bytes(range(200))  # not an ET12 program
PROGRAM_ID = 0x1122334455667788
EMPTY_KERNEL_TABLE = """#include "mcu/kernel.h"
namespace mcu {
namespace { const KernelEntry kEntries[] = {{"", "", "", nullptr}}; }
extern const KernelTable kKernelTable = {kEntries, 0};
}  // namespace mcu
"""


def render_project(dest, board, program: bytes, upload_size=4096):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    for d in ("src", "include", "board", "cmake", "runtime"):
        (dest / d).mkdir(parents=True, exist_ok=True)
    shutil.copytree(RUNTIME_CORE / "include", dest / "runtime" / "include", dirs_exist_ok=True)
    shutil.copytree(RUNTIME_CORE / "src", dest / "runtime" / "src", dirs_exist_ok=True)
    for f in board.files:
        shutil.copy2(f, dest / "board" / f.name)
    (dest / "include" / "mcu_config.h").write_text(env.get_template("firmware/mcu_config.h.j2").render(
        board_name=board.name, arena_size=1024, upload_size=upload_size, program_id=PROGRAM_ID,
        max_operators=4, firmware_version="test-fw 1.0"))
    (dest / "src" / "main.cpp").write_text(env.get_template("firmware/main.cpp.j2").render(pte_size=len(program)))
    (dest / "src" / "model_pte.c").write_text(env.get_template("firmware/model_pte.c.j2").render(
        pte_size=len(program), pte_lines=c_array_lines(program), pte_sha256=hashlib.sha256(program).hexdigest()))
    (dest / "src" / "kernel_table.cpp").write_text(EMPTY_KERNEL_TABLE)
    sources = ["src/main.cpp", "src/model_pte.c", "src/kernel_table.cpp"]
    sources += [f"runtime/src/{p.name}" for p in sorted((RUNTIME_CORE / "src").glob("*.cpp"))]
    sources += [f"board/{f.name}" for f in board.source_paths]
    ctx = dict(project_name="link_test", board=board, cross=board.emulator.kind != "native", sources=sources,
               include_dirs=["include", "runtime/include", "runtime/src", "board"],
               defines={"MCU_MAX_OPERATORS": 4}, opt_level="-O2")
    (dest / "CMakeLists.txt").write_text(env.get_template("cmake/CMakeLists.txt.j2").render(**ctx))
    (dest / "cmake" / "arm-none-eabi.cmake").write_text(env.get_template("cmake/arm-none-eabi.cmake.j2").render(**ctx))
    platformio_project.render(dest, env, ctx)
    return dest


@pytest.fixture(scope="module")
def host_fw(tmp_path_factory):
    d = tmp_path_factory.mktemp("host_fw")
    render_project(d / "fw", get_board("host"), FAKE_PROGRAM)
    return cmake_build(d / "fw", d / "build")


@pytest.fixture(scope="module")
def an505_project(tmp_path_factory):
    d = tmp_path_factory.mktemp("an505_fw")
    return render_project(d / "fw", get_board("mps2-an505"), FAKE_PROGRAM)


@pytest.fixture(scope="module")
def an505_fw(an505_project):
    try:
        find_tool("arm-none-eabi-gcc")
        find_tool("qemu-system-arm")
    except ToolchainError as e:
        pytest.skip(str(e))
    return cmake_build(an505_project, an505_project.parent / "build")


class HostFirmware:
    """The host-board firmware as a child process; the link is its stdin/stdout."""

    def __init__(self, elf, timeout=1.0):
        self.proc = subprocess.Popen([str(elf)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.port = PipePort(self.proc.stdout.fileno(), self.proc.stdin.fileno(), timeout)
        self.link = Link(self.port, timeout=timeout, retries=2)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            s.close()


@pytest.fixture
def host(host_fw):
    fw = HostFirmware(host_fw)
    yield fw
    fw.close()


# --- native (host board): fast, exercises the device code with real pipes ------

def test_host_hello_reports_builtin_rejected(host):
    info = host.link.hello()
    assert info.protocol_version == 1 and info.max_payload == MAX_PAYLOAD
    assert info.firmware_version == "test-fw 1.0"
    assert info.arena_size == 1024 and info.upload_size == 4096
    # The embedded bytes are not an ET12 program: nothing is active, and HELLO says why.
    assert info.program_source == "none"
    assert info.builtin_status == Error.BadIdentifier
    assert (info.num_inputs, info.num_outputs) == (0, 0)


def test_host_echo_round_trips(host):
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 512, MAX_PAYLOAD - 1):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert host.link.echo(data) == data
    with pytest.raises(ValueError, match="exceeds the protocol maximum"):
        host.link.echo(b"x" * (MAX_PAYLOAD + 1))


def test_host_device_errors(host):
    assert host.link.run() == (Error.NotLoaded, 0)
    with pytest.raises(Exception, match="NotLoaded"):
        host.link.write_input(0, b"1234")
    # A bad program is rejected with the executor's code; nothing changes.
    assert host.link.load_program(b"\x00" * 64) == (Error.BadIdentifier, -1)
    assert host.link.load_program(b"x" * 5000) == (Error.BadLength, 4096)  # > upload buffer
    assert host.link.hello().program_source == "none"
    # An unknown request type.
    with pytest.raises(Exception, match=r"BadRequest \(code 34, detail 119\)"):
        host.link.request(0x77)


def test_host_resync_after_garbage_and_bad_crc(host):
    link = host.link
    # Garbage (including half a sync pair) before a valid frame is skipped.
    host.port.write(b"\x00\xa5\xff\xa5garbage\x5a")
    assert link.echo(b"after garbage") == b"after garbage"
    # A frame with a broken CRC gets a BadCrc error reply with the same seq.
    bad = bytearray(encode_frame(Msg.ECHO, 200, b"abc"))
    bad[-1] ^= 0xFF
    host.port.write(bytes(bad))
    host.port.timeout = 1.0
    reply = host.port.read(2 + 4 + 5 + 4)
    assert reply[:4] == bytes([0xA5, 0x5A, Msg.ECHO | 0x80, 200])
    assert reply[6] == Error.BadCrc
    assert link.echo(b"still alive") == b"still alive"


def test_host_retries_a_damaged_request():
    """A port that corrupts the first copy of each frame: the link resends the same seq."""

    class Flaky:
        def __init__(self, port):
            self.port, self.sent = port, 0

        def __getattr__(self, name):
            return getattr(self.port, name)

        def write(self, data):
            self.sent += 1
            if self.sent % 2 == 1:
                data = data[:-1] + bytes([data[-1] ^ 1])
            return self.port.write(data)

    fw = HostFirmware(host_fw_path())
    try:
        flaky = Flaky(fw.port)
        link = Link(flaky, timeout=1.0, retries=2)
        assert link.echo(b"ping") == b"ping"
        assert flaky.sent == 2
    finally:
        fw.close()


def test_host_exit_code(host):
    host.link.exit(42)
    assert host.proc.wait(timeout=2) == 42


def test_host_dead_link_raises_link_error(host):
    host.proc.kill()
    host.proc.wait()
    t0 = time.monotonic()
    with pytest.raises(LinkError):
        host.link.echo(b"anyone?")
    assert time.monotonic() - t0 < 4


def test_silent_device_raises_link_error_within_timeout():
    r, w = os.pipe()  # nothing ever answers on r
    r2, w2 = os.pipe()
    try:
        link = Link(PipePort(r, w2, 0.2), timeout=0.3, retries=2)
        t0 = time.monotonic()
        with pytest.raises(LinkError, match=r"HELLO: no reply within 0.3 s, after 3 attempts"):
            link.hello()
        assert time.monotonic() - t0 < 2
    finally:
        for fd in (r, w, r2, w2):
            os.close(fd)


_HOST_FW = {}


def host_fw_path():
    return _HOST_FW["elf"]


@pytest.fixture(autouse=True, scope="module")
def _remember_host_fw(host_fw):
    _HOST_FW["elf"] = host_fw


# --- QEMU mps2-an505 -----------------------------------------------------------

@pytest.mark.qemu
def test_qemu_hello_echo_spin_exit(an505_fw):
    from mcu_gen.device.qemu import QemuSession

    board = get_board("mps2-an505")
    session = QemuSession(board, an505_fw, timeout=2.0)
    with session as link:
        info = link.hello()
        assert info.firmware_version == "test-fw 1.0" and info.builtin_status == Error.BadIdentifier
        data = bytes(range(256)) * 3
        assert link.echo(data) == data
        # -icount shift=7: 2.56 SysTick ticks per instruction; the count is exact. spin(0)
        # is the fixed cost of the two mcu_pal_ticks() calls around the loop (a few dozen
        # instructions, depending on how the PAL is compiled); every run adds exactly 2n.
        overhead = board.instructions_from_ticks(link.spin(0))
        assert 0 < overhead < 64
        for _ in range(3):
            assert board.instructions_from_ticks(link.spin(100_000)) == 200_000 + overhead
        assert link.load_program(FAKE_PROGRAM) == (Error.BadIdentifier, -1)
        assert session.exit(7) == 7
    assert any("builtin program rejected" in line for line in session.log)


@pytest.mark.qemu
def test_qemu_killed_mid_session_raises_link_error(an505_fw):
    from mcu_gen.device.qemu import QemuSession

    session = QemuSession(get_board("mps2-an505"), an505_fw, timeout=1.0)
    with session as link:
        link.hello()
        session.proc.kill()
        session.proc.wait()
        t0 = time.monotonic()
        with pytest.raises(LinkError, match="mps2-an505"):
            link.echo(b"x")
        assert time.monotonic() - t0 < 5
    assert session.proc.poll() is not None


def test_missing_qemu_gives_install_hint(an505_fw, monkeypatch):
    from mcu_gen.device.qemu import QemuSession

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolchainError, match=r"qemu-system-arm not found on PATH; install it with: "
                                             r"sudo apt-get install qemu-system-arm"):
        QemuSession(get_board("mps2-an505"), an505_fw).start()


def test_platformio_project_is_valid(an505_project):
    import json

    board_json = json.loads((an505_project / "pio_platform" / "boards" / "mps2_an505.json").read_text())
    assert board_json["build"]["cpu_flags"] == "-mcpu=cortex-m33 -mthumb -mfpu=fpv5-sp-d16 -mfloat-abi=hard"
    from mcu_gen.firmware.platformio_setup import PioError, pio_executable

    try:  # the `pio` beside this Python (.venv/bin/pio, not on PATH under `.venv/bin/python -m pytest`)
        pio = pio_executable()
    except PioError as e:
        pytest.fail(f"{e} (scripts/setup.sh installs it)")
    env = dict(os.environ, PLATFORMIO_DISABLE_UPGRADE_CHECK="true", PLATFORMIO_SETTING_ENABLE_TELEMETRY="No")
    out = subprocess.run([*pio, "project", "config", "--json-output"], cwd=an505_project, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    sections = dict(json.loads(out.stdout))
    opts = dict(sections["env:mps2_an505"])
    assert opts["board"] == "mps2_an505" and opts["board_build.ldscript"] == "board/an505.ld"
    assert "+<runtime/src/protocol.cpp>" in opts["build_src_filter"]
    assert "-DMCU_MAX_OPERATORS=4" in opts["build_flags"]
