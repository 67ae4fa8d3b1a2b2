"""`mcu-gen run --board host`: the firmware project built with this machine's compiler and verified as a
process over its stdin/stdout (boards/host), fp32 and int8, without a cross-compiler or QEMU. Before, the
host board was listed by `mcu-gen boards` and every build for it failed with "the model does not fit host:
... the board has 0 bytes"."""
import json
import os
import subprocess
import sys

import pytest

import mcu_gen
from mcu_gen.boards import get_board
from mcu_gen.cli import main as cli_main
from mcu_gen.device.link import LinkError
from mcu_gen.device.native import NativeSession
from mcu_gen.device.qemu import QemuSession

MNIST = "examples/mnist/model.py"


def test_host_board_runs_here_natively():
    host, an505 = get_board("host"), get_board("mps2-an505")
    assert host.is_native and host.runs_here and not host.is_qemu
    assert an505.runs_here and not an505.is_native
    assert host.tool("size") == "size" and an505.tool("size") == "arm-none-eabi-size"
    with pytest.raises(ValueError, match="not a native one"):
        NativeSession(an505, "firmware.elf")
    with pytest.raises(ValueError, match="no QEMU emulator"):
        QemuSession(host, "firmware.elf")


def test_cli_run_on_host_fp32(tmp_path, capsys):
    rc = cli_main(["run", "--board", "host", "--model", MNIST, "--out", str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.startswith("VERIFIED: 3 inference(s) on host")
    assert "time per inference in the native process:" in out
    assert "no cycle estimate: the host board runs natively" in out
    assert "instructions per inference" not in out  # a process's time is not an instruction count
    rep = json.loads((tmp_path / "b" / "report.json").read_text())
    assert rep["board"] == "host"
    # the memory figures come from the native executable's sections, not from its addresses
    assert rep["flash_bytes"] > rep["pte_bytes"] > 0 and rep["ram_bytes"] >= rep["arena_bytes"] > 0


def test_run_on_host_int8_bit_exact(tmp_path):
    r = mcu_gen.run(MNIST, board="host", out=tmp_path / "b", quantize="int8")
    assert r.verified and r.bit_exact
    assert r.instructions_per_inference is None and r.instructions == []
    assert r.native_ns_per_inference > 0
    assert r.stack_used_bytes is None and r.estimated_cycles_per_inference is None


def test_a_crashing_native_firmware_is_named_not_hung(tmp_path):
    """A firmware process that dies before it answers: the LinkError says so, with the board and exit status."""
    script = tmp_path / "firmware.elf"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('boom: no program\\n')\nsys.exit(7)\n")
    os.chmod(script, 0o755)
    with NativeSession(get_board("host"), script, timeout=0.3) as link:
        with pytest.raises(LinkError) as e:
            link.hello()
    text = str(e.value)
    assert "board host (a native process, firmware.elf)" in text and "exited with status 7" in text
    assert "boom: no program" in text


def test_boards_lists_host_without_a_size_and_survives_a_closed_pipe():
    text = subprocess.run([sys.executable, "-m", "mcu_gen", "boards"], capture_output=True, text=True,
                          check=True).stdout
    host = next(line for line in text.splitlines() if line.startswith("host "))
    assert "this machine's" in host and "native" in host and "0 KiB" not in host
    # `mcu-gen boards | head -1`: the reader went away before mcu-gen wrote; no traceback, the shell's SIGPIPE status
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "mcu_gen", "boards"], stdout=w, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(w)
    assert p.returncode == 141, p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr


def test_methods_on_host_say_time_not_instructions(tmp_path, capsys):
    rc = cli_main(["run", "--board", "host", "--model", "tests/models/methods_encode_classify.py",
                   "--out", str(tmp_path / "m")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "method encode: verified" in out and "ns (the native process's time) per call" in out
    assert "instructions per call" not in out
