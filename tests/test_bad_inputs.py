"""Bad inputs end in a clear error, never a crash or a hang.

Host level (native runner under ASan/UBSan): tensors outside the arena or the
constant segment, a wrong identifier or schema version. Device level (QEMU):
wrong input index/size over serial. Build level: a model too big for the
board, no cross compiler. (Corrupt/truncated programs, a missing operator and
a too-small arena on the device are covered by tests/test_bad_program.py.)
"""
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

from mcu_gen.firmware import builder, host
from mcu_gen.firmware import project as firmware_project
from mcu_gen.backends import kernels as kernel_registry
from mcu_gen.plan import inplace_pass
from mcu_gen.reference import inputs as reference_inputs
from mcu_gen.program import pte
from mcu_gen.boards import get_board, load_board
from mcu_gen.program.ir import Instruction, Program
from mcu_gen.device.link import DeviceError
from mcu_gen.device.protocol import Error, Msg
from mcu_gen.firmware.toolchain import ToolchainError, arm_toolchain

WEIGHTS = 1000  # floats in the first constant: makes the offsets vector easy to find


def _add_program():
    """out = x + w2 and big = w1 + w1 (w1, a big constant, pushes w2's offset to 4,000).
    Value indices: x 0, w1 1, w2 2, alpha 3, out 4, big 5 (the writer keeps this order)."""
    p = Program()
    x = p.add_tensor((1, 4))
    w1 = p.add_tensor((WEIGHTS,), data=np.arange(WEIGHTS, dtype=np.float32))
    w2 = p.add_tensor((1, 4), data=np.ones((1, 4), np.float32))
    alpha = p.add_scalar("int", 1)
    out = p.add_tensor((1, 4))
    big = p.add_tensor((WEIGHTS,))
    p.instructions.append(Instruction("aten::add.out", [x, w2, alpha, out, out]))
    p.instructions.append(Instruction("aten::add.out", [w1, w1, alpha, big, big]))
    p.inputs, p.outputs = [x], [out, big]
    inplace_pass.plan_memory(p)
    return p


def _host_load(data: bytes, program: Program, tmp_path) -> str:
    """The native runner's first output line for this program."""
    sel = kernel_registry.select(program.operators)
    exe = host.build_runner(sel.kernels)
    path = tmp_path / "bad.pte"
    path.write_bytes(data)
    x = tmp_path / "x.bin"
    x.write_bytes(np.zeros((1, 4), np.float32).tobytes())
    r = subprocess.run([str(exe), str(path), str(max(program.arena_size, 16)), str(tmp_path), str(x)],
                       capture_output=True, text=True, timeout=60)
    assert "ERROR: AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    return r.stdout.strip()


def test_valid_program_runs(tmp_path):
    p = _add_program()
    assert _host_load(pte.write(p), p, tmp_path) == "ok"


def test_tensor_outside_the_arena(tmp_path):
    p = _add_program()
    out = p.outputs[0]
    p.tensor(out).offset = p.arena_size + 16  # planned past the end of the arena
    assert _host_load(pte.write(p), p, tmp_path) == f"load-error 8 ArenaOutOfBounds {out}"


def test_tensor_straddling_the_arena_end(tmp_path):
    p = _add_program()
    out = p.outputs[0]
    p.tensor(out).offset = p.arena_size - 8  # starts inside, ends 8 bytes past
    assert _host_load(pte.write(p), p, tmp_path) == f"load-error 8 ArenaOutOfBounds {out}"


def test_constant_outside_the_segment(tmp_path):
    p = _add_program()
    data = bytearray(pte.write(p))
    # constant_segment.offsets = [0 (reserved), 0 (w1), 4000 (w2)]
    pattern = struct.pack("<IQQQ", 3, 0, 0, 4 * WEIGHTS)
    at = bytes(data).find(pattern)
    assert at > 0 and bytes(data).count(pattern) == 1
    seg_size = struct.unpack_from("<Q", data, 32)[0]
    struct.pack_into("<Q", data, at + 20, seg_size - 8)  # w2 (16 bytes) would end 8 bytes past the segment
    w2 = 2
    assert _host_load(bytes(data), p, tmp_path) == f"load-error 7 ConstantOutOfBounds {w2}"
    struct.pack_into("<Q", data, at + 20, 1 << 40)
    assert _host_load(bytes(data), p, tmp_path) == f"load-error 7 ConstantOutOfBounds {w2}"


def test_wrong_identifier_version(tmp_path):
    p = _add_program()
    for ident in (b"ET11", b"ET13"):
        data = bytearray(pte.write(p))
        data[4:8] = ident
        assert _host_load(bytes(data), p, tmp_path) == "load-error 2 BadIdentifier -1"


def test_newer_schema_version(tmp_path):
    """Program.version above what the runtime knows (0, as ExecuTorch 1.5) is refused."""
    p = _add_program()
    data = bytearray(pte.write(p))
    root = struct.unpack_from("<I", data, 0)[0]
    vtable = root - struct.unpack_from("<i", data, root)[0]
    assert struct.unpack_from("<H", data, vtable + 4)[0] == 0  # version absent: 0
    plans_field = struct.unpack_from("<H", data, vtable + 6)[0]
    struct.pack_into("<H", data, vtable + 4, plans_field)  # version := the bytes of another u32 field
    version = struct.unpack_from("<I", data, root + plans_field)[0]
    assert version > 0
    assert _host_load(bytes(data), p, tmp_path) == f"load-error 3 UnsupportedProgram {version}"


# ---------------------------------------------------------------- over serial

@pytest.fixture(scope="module")
def mul_add(tmp_path_factory, qemu_tools):
    import mcu_gen

    return mcu_gen.build("examples/mul_add/model.py", board="mps2-an505", out=tmp_path_factory.mktemp("bi") / "ma")


def _device_error(fn):
    with pytest.raises(DeviceError) as e:
        fn()
    return e.value.code, e.value.detail


@pytest.mark.qemu
def test_wrong_input_index_and_size_over_serial(mul_add):
    from mcu_gen.device.qemu import QemuSession

    x = np.random.RandomState(0).randn(1, 16).astype(np.float32)
    y = np.random.RandomState(1).randn(1, 16).astype(np.float32)
    with QemuSession(mul_add.board, mul_add.elf, run_timeout=30) as link:
        link.hello()
        # An input the program does not have.
        assert _device_error(lambda: link.write_input(2, x.tobytes())) == (Error.BadIndex, 2)
        assert _device_error(lambda: link.tensor_info(False, 7)) == (Error.BadIndex, 7)
        # More bytes than the tensor holds (64): refused, nothing written past it.
        assert _device_error(lambda: link.write_input(0, bytes(68))) == (Error.BadLength, 64)
        assert _device_error(lambda: link.request(Msg.WRITE_INPUT, struct.pack("<BI", 0, 60) + bytes(8))) == (
            Error.BadLength, 64)
        # A request too short to carry index and offset.
        assert _device_error(lambda: link.request(Msg.WRITE_INPUT, b"\0\0")) == (Error.BadLength, 2)
        # Reading past an output.
        assert _device_error(lambda: link.request(Msg.READ_OUTPUT, struct.pack("<BIH", 0, 32, 64))) == (
            Error.BadLength, 64)
        # The device still works.
        (got,), _ = link.infer([x, y])
        np.testing.assert_allclose(got, x * y + x, rtol=1e-6)
        link.exit(0)


# ---------------------------------------------------------------- build level

def _tiny_board(tmp_path, ram: int, flash: int):
    src = get_board("mps2-an505")
    folder = tmp_path / "boards" / "tiny-an505"
    shutil.copytree(src.directory, folder)
    shutil.copytree(src.directory.parent / "common", folder.parent / "common")  # shared startup/PAL
    toml = (folder / "board.toml").read_text()
    toml = toml.replace('name = "mps2-an505"', 'name = "tiny-an505"')
    toml = toml.replace("[flash]\nbase = 0x10000000\nsize = 0x400000", f"[flash]\nbase = 0x10000000\nsize = {flash}")
    toml = toml.replace("[ram]\nbase = 0x38000000\nsize = 0x400000", f"[ram]\nbase = 0x38000000\nsize = {ram}")
    (folder / "board.toml").write_text(toml)
    board = load_board(folder / "board.toml")
    assert board.ram.size == ram and board.flash.size == flash
    return board


def test_program_too_big_for_the_board(tmp_path):
    board = _tiny_board(tmp_path, ram=16 * 1024, flash=32 * 1024)
    available = kernel_registry.find_kernels()
    program, data, _ = builder.load_program("examples/ic_resnet8/model.py", available=available)
    with pytest.raises(builder.BuildError) as e:
        builder.precheck_fits(board, program, data)
    msg = str(e.value)
    assert "does not fit tiny-an505" in msg
    assert f"flash: needs {len(data):,} bytes, the board has {32 * 1024:,} ({len(data) - 32 * 1024:,} bytes too many)" in msg
    ram_over = program.arena_size - 16 * 1024
    assert f"RAM: needs {program.arena_size:,} bytes, the board has {16 * 1024:,} ({ram_over:,} bytes too many)" in msg


@pytest.mark.qemu
def test_linked_image_too_big_for_the_board(tmp_path, qemu_tools):
    """The program alone fits, the linked image (arena + stack + state) does not."""
    from mcu_gen.firmware.report import memory_usage

    board = _tiny_board(tmp_path, ram=32 * 1024, flash=64 * 1024)
    available = kernel_registry.find_kernels()
    program, data, _ = builder.load_program("examples/mul_add/model.py", available=available)
    builder.precheck_fits(board, program, data)  # fits before linking
    sel = kernel_registry.select(program.operators, available)
    project = firmware_project.render_project(tmp_path / "fw", board, program, data, sel.kernels)
    elf = firmware_project.compile_project(project, board)
    usage = memory_usage(elf, board)
    assert usage["ram_bytes"] > 32 * 1024  # the 64 KiB stack alone
    with pytest.raises(builder.BuildError) as e:
        builder.check_fits(board, usage)
    assert f"({usage['ram_bytes'] - 32 * 1024:,} bytes too many)" in str(e.value)


def test_no_cross_compiler_names_the_debian_package(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cmake = shutil.which("cmake")
    if cmake:
        os.symlink(cmake, bin_dir / "cmake")
    with pytest.raises(ToolchainError) as e:
        arm_toolchain(path=str(bin_dir))
    assert "arm-none-eabi-gcc not found" in str(e.value)
    assert "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi" in str(e.value)
    # Through a build: the BuildError carries the same hint.
    if cmake is None:
        return
    monkeypatch.setenv("PATH", str(bin_dir))
    board = get_board("mps2-an505")
    available = kernel_registry.find_kernels()
    p = _add_program()
    sel = kernel_registry.select(p.operators, available)
    project = firmware_project.render_project(tmp_path / "fw", board, p, pte.write(p), sel.kernels)
    with pytest.raises(builder.BuildError) as e:
        firmware_project.compile_project(project, board)
    assert "gcc-arm-none-eabi" in str(e.value)


BAG_MODEL = '''import torch
from torch import nn


class Bags(nn.Module):  # the PyTorch text classification tutorial's model
    def __init__(self):
        super().__init__()
        self.embedding = nn.EmbeddingBag(50, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


def model():
    torch.manual_seed(0)
    return Bags().eval()


def example_inputs():
    return (torch.tensor([3, 9, 1, 44, 7, 7, 20]), torch.tensor([0, 2, 2, 5]))
'''


@pytest.mark.qemu
def test_index_inputs_out_of_range_name_the_operator_on_the_device(tmp_path, qemu_tools):
    """An EmbeddingBag model builds, runs and verifies; word ids beyond its table make the device's kernel refuse
    the call, and the error names the instruction, the operator and the user's line, not only an error code."""
    import mcu_gen

    path = tmp_path / "bags.py"
    path.write_text(BAG_MODEL)
    text, offsets = np.array([3, 9, 1, 44, 7, 7, 20]), np.array([0, 2, 2, 5])
    assert mcu_gen.run(str(path), board="mps2-an505", out=tmp_path / "out", inputs=[(text, offsets)]).verified
    with pytest.raises(DeviceError, match=r"instruction 0, aten::_embedding_bag\.out \(.*bags\.py:12: .*"
                                          r"self\.embedding\(text, offsets\).*out of range"):
        mcu_gen.run(str(path), board="mps2-an505", out=tmp_path / "out", inputs=[(text + 50, offsets)])


def test_the_plan_check_runs_on_valid_index_inputs():
    """The build's memory-plan check runs the program on the host: on the model's own example inputs when they are
    the program's (same shapes and dtypes), else on random ones whose integers are valid offsets (0s then 1s)."""
    import torch

    p = Program()
    text, offsets, x = p.add_tensor((7,), "int64"), p.add_tensor((4,), "int64"), p.add_tensor((2, 3))
    p.inputs = [text, offsets, x]
    examples = (torch.tensor([3, 9, 1, 44, 7, 7, 20]), torch.tensor([0, 2, 2, 5]), torch.ones(2, 3))
    got = reference_inputs.example_check_inputs(p, examples)
    assert [g.tolist() for g in got] == [e.tolist() for e in examples]
    assert reference_inputs.example_check_inputs(p, examples[:2]) is None
    assert reference_inputs.example_check_inputs(p, (examples[0].int(),) + examples[1:]) is None  # int32, not int64
    for seed in range(5):
        o = reference_inputs.plan_check_inputs(p, seed)[1]
        assert o[0] == 0 and (np.diff(o) >= 0).all() and set(o.tolist()) <= {0, 1}
