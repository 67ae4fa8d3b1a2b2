"""Ethos-U delegate, device side: the runtime's load-time checks of delegate calls and
vela_bin_stream blobs (host build under ASan/UBSan), and firmware builds for corstone-300
with and without Arm's ethos-u core driver.

Needs the `ethos-u` extra (tosa-tools, ethos-u-vela). The linking tests also need the driver
sources: MCU_GEN_ETHOS_U_DRIVER=PATH (a checkout of ethos-u-core-driver); skipped otherwise.
There is no Ethos-U emulator here, so nothing runs on an NPU (docs/ethos_u.md: FVP).
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

pytest.importorskip("tosa_serializer", reason="tosa-tools is not installed (pip install 'mcu-gen[ethos-u]')")
pytest.importorskip("ethosu.vela", reason="ethos-u-vela is not installed (pip install 'mcu-gen[ethos-u]')")

from mcu_gen.backends import kernels
from mcu_gen.plan import inplace_pass
from mcu_gen.program import pte  # noqa: E402
from mcu_gen.errors import BuildError
from mcu_gen.firmware.builder import build  # noqa: E402
from mcu_gen.firmware import ethosu_driver as firmware  # noqa: E402
from mcu_gen.firmware import host  # noqa: E402
from mcu_gen.backends.ethosu.delegate import delegate_program  # noqa: E402
from mcu_gen.backends.ethosu.targets import get_npu  # noqa: E402
from mcu_gen.paths import RUNTIME_CORE  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MNIST = ROOT / "examples" / "mnist" / "model.py"
KWS = ROOT / "examples" / "kws_dscnn" / "model.py"
DRIVER = os.environ.get(firmware.ENV_VAR)
needs_driver = pytest.mark.skipif(
    not (DRIVER and firmware.is_driver(DRIVER)),
    reason=f"Arm's Ethos-U core driver not given: set {firmware.ENV_VAR}=PATH to an ethos-u-core-driver checkout")
needs_cross = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or shutil.which("cmake") is None,
                                 reason="arm-none-eabi-gcc / cmake not installed")


@lru_cache(maxsize=None)
def mnist_delegated_pte() -> bytes:
    from mcu_gen.capture.model_file import load_model_file
    from mcu_gen.quantize import export_quantized

    p, _ = export_quantized(load_model_file(MNIST), io="int8")
    d, _ = delegate_program(p, get_npu("ethos-u55-128"))
    inplace_pass.plan_memory(d)
    return pte.write(d)


# --- runtime: load-time checks (host build, no driver: the NPU call itself fails) -------------

@pytest.fixture(scope="module")
def host_runner(tmp_path_factory):
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("g++ not installed")
    out = tmp_path_factory.mktemp("ethosu-host")
    table = out / "table.cpp"
    table.write_text(kernels.kernel_table_source([]) + kernels.delegate_table_source(["EthosUBackend"]))
    exe = out / "runner"
    src = RUNTIME_CORE / "src"
    cmd = [cxx, "-std=c++17", "-O1", "-g", "-fno-exceptions", "-fno-rtti", "-fsanitize=address,undefined",
           "-fno-sanitize-recover=all", "-DMCU_MAX_DELEGATES=1", "-I", str(RUNTIME_CORE / "include"), "-I", str(src),
           *map(str, host.runtime_sources()), str(src / "delegate_ethosu.cpp"),
           str(RUNTIME_CORE / "tools" / "host_runner.cpp"), str(table), "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return exe, out


def _run(host_runner, data: bytes, name: str) -> tuple[int, str]:
    exe, out = host_runner
    path = out / f"{name}.pte"
    path.write_bytes(data)
    inp = out / "in.bin"
    inp.write_bytes(bytes(784))
    r = subprocess.run([str(exe), str(path), "65536", str(out), str(inp)], capture_output=True, text=True, timeout=60)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-3000:]
    return r.returncode, r.stdout.strip()


def _blob_at(data: bytes) -> int:
    blob = pte.read(data).meta["delegates"][0]["processed"]
    seg_base = struct.unpack_from("<Q", data, 24)[0]
    return data.find(blob[:64], seg_base)


def test_runtime_loads_a_delegated_program_and_fails_cleanly_without_an_npu(host_runner):
    rc, out = _run(host_runner, mnist_delegated_pte(), "good")
    # Load passed every check; the call itself has no NPU on the host.
    assert out == "run-error 16 KernelFailed 0", out
    assert rc == 4


def _patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new):]


def test_bad_blobs_are_rejected_at_load(host_runner):
    data = mnist_delegated_pte()
    b = _blob_at(data)
    blob = pte.read(data).meta["delegates"][0]["processed"]
    # Block offsets in the blob: header 32 B, data padded to 16.
    pos, blocks = 0, {}
    while pos < len(blob):
        name = blob[pos:pos + 16].rstrip(b"\0").decode()
        n = struct.unpack_from("<I", blob, pos + 16)[0]
        blocks[name] = pos
        pos += 32 + n + (-n % 16)
    inputs, outputs = blocks["inputs"] + 32, blocks["outputs"] + 32
    cases = {
        "first block renamed": (b + 0, b"vela_bin_strean"),
        "cmd_data not COP1": (b + blocks["cmd_data"] + 32, b"XXXX"),
        "cmd_data length past the end": (b + blocks["cmd_data"] + 16, struct.pack("<I", 0x7FFFFFF0)),
        "weights length wraps": (b + blocks["weight_data"] + 16, struct.pack("<I", 0xFFFFFFFF)),
        "scratch_size block of 8 bytes": (b + blocks["scratch_size"] + 16, struct.pack("<I", 8)),
        "scratch larger than the arena tensor": (b + blocks["scratch_size"] + 32, struct.pack("<I", 1 << 20)),
        "two inputs for a one-input call": (b + inputs, struct.pack("<i", 2)),
        "negative input count": (b + inputs, struct.pack("<i", -1)),
        "input past the scratch": (b + inputs + 4 + 28, struct.pack("<i", 15040 - 10)),
        "negative output offset": (b + outputs + 4 + 28, struct.pack("<i", -16)),
        "output in region 2": (b + outputs + 4 + 32, struct.pack("<i", 2)),
        "input shape of another size": (b + inputs + 4 + 12, struct.pack("<i", 27)),
        "end block missing": (b + blocks["vela_end_stream"], b"vela_end_streaX"),
    }
    for what, (at, new) in cases.items():
        rc, out = _run(host_runner, _patch(data, at, new), what.replace(" ", "_"))
        assert rc == 2 and out.startswith("load-error"), f"{what}: {out}"
    # A call to a delegate the program does not have.
    p = pte.read(data)
    p.instructions[0].op = "delegate:1"
    p.meta["delegates"].append(dict(p.meta["delegates"][0], id="OtherBackend"))
    rc, out = _run(host_runner, pte.write(p), "unknown_backend")
    assert rc == 2 and out.startswith("load-error 3 UnsupportedProgram"), out


def test_random_corruption_of_the_blob_never_crashes(host_runner):
    import random

    data = mnist_delegated_pte()
    b = _blob_at(data)
    rng = random.Random(7)
    outcomes = set()
    for k in range(40):
        at = b + rng.randrange(0, 400)  # headers, command stream, I/O tables of the blob's start
        rc, out = _run(host_runner, _patch(data, at, bytes([rng.randrange(256)])), f"fuzz{k}")
        assert rc in (2, 4), out  # refused at load, or loaded and failed at the (absent) NPU
        outcomes.add(out.split()[0])
    assert "load-error" in outcomes


# --- firmware builds ------------------------------------------------------------------------

def test_delegate_table_names_the_backend_per_index():
    src = kernels.delegate_table_source(["EthosUBackend", "EthosUBackend"])
    assert "Error delegate_1(const KernelContext& ctx) { return ethosu::execute(1, ctx); }" in src
    assert "extern const DelegateTable kDelegateTable = {kDelegates, 2};" in src
    with pytest.raises(kernels.KernelRegistryError, match="no runtime for backend 'VulkanBackend'"):
        kernels.delegate_table_source(["VulkanBackend"])


def test_without_the_driver_the_project_and_report_are_written_then_the_build_stops(tmp_path, monkeypatch):
    monkeypatch.delenv(firmware.ENV_VAR, raising=False)
    monkeypatch.setattr(firmware, "from_pack_manager", lambda: (None, "cmsis-pack-manager is not installed"))
    out = tmp_path / "mnist"
    with pytest.raises(BuildError, match="needs Arm's Ethos-U core driver.*--ethos-u-driver PATH.*MCU_GEN_ETHOS_U_DRIVER"):
        build(MNIST, board="corstone-300", quantize="int8", io="int8", npu="ethos-u55-128", out=out)
    assert (out / "model.pte").is_file() and (out / "firmware" / "CMakeLists.txt").is_file()
    assert not (out / "firmware.elf").exists()
    rep = json.loads((out / "report.json").read_text())
    e = rep["ethos_u"]
    assert e["npu"] == "ethos-u55-128" and e["npu_operators"] == 5 and e["cpu_operators"] == 0
    assert e["vela_cycles_total"] > 0 and e["subgraphs"][0]["vela"]["nn_macs"] == 199072
    assert e["driver"] is None and "cmsis-pack-manager" in e["driver_how"]
    assert [r["backend"] for r in rep["operators"]] == ["ethos-u"]
    table = (out / "firmware" / "src" / "kernel_table.cpp").read_text()
    assert '{"EthosUBackend", &ethosu::prepare, &delegate_0}' in table


def test_npu_needs_an_npu_board_and_int8():
    with pytest.raises(BuildError, match="board mps3-an547 has no Ethos-U NPU"):
        build(MNIST, board="mps3-an547", quantize="int8", io="int8", npu="ethos-u55-128", compile=False)
    with pytest.raises(BuildError, match="add --quantize int8"):
        build(MNIST, board="corstone-300", npu="ethos-u55-128", compile=False)


def test_run_with_npu_says_there_is_no_emulator(capsys):
    from mcu_gen.cli import main

    assert main(["run", "--board", "corstone-300", "--model", str(MNIST), "--npu", "ethos-u55-128"]) == 1
    assert "no emulator here models an Ethos-U NPU" in capsys.readouterr().err


@needs_driver
@needs_cross
@pytest.mark.parametrize("model, n_npu", [(MNIST, 5), (KWS, 11)])
def test_firmware_links_with_the_driver(tmp_path, model, n_npu):
    r = build(model, board="corstone-300", quantize="int8", io="int8", npu="ethos-u55-128",
              ethos_u_driver=DRIVER, out=tmp_path / "fw")
    assert r.elf is not None and r.elf.is_file()
    e = r.report["ethos_u"]
    assert e["npu_operators"] == n_npu and e["cpu_operators"] == 0 and e["driver"]
    syms = subprocess.run(["arm-none-eabi-nm", str(r.elf)], capture_output=True, text=True).stdout
    for name in ("ethosu_invoke_v3", "Npu_IRQHandler", "ethosu_semaphore_create"):
        assert f" T {name}" in syms, name
    assert "malloc" not in syms and "printf" not in syms  # no heap, no stdio from the driver
    # The NPU interrupt (IRQ 56) vector points at the delegate's handler.
    addr = int(next(line for line in syms.splitlines() if line.endswith(" Npu_IRQHandler")).split()[0], 16)
    vec = subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "-j", ".vectors", str(r.elf), "/dev/stdout"],
                         capture_output=True).stdout
    assert struct.unpack_from("<I", vec, 4 * (16 + 56))[0] == addr | 1
    # Weights live only in the blob, read in place from the program in flash (DDR).
    assert r.report["constant_bytes"] == 0 and r.report["flash_bytes"] > r.report["pte_bytes"]
