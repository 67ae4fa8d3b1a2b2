"""A corrupt program sent to the firmware is rejected by the verifier with an
error code; the device never crashes or hangs and keeps its builtin program."""
import random
import struct

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.program import pte
from mcu_gen.device.link import LinkError
from mcu_gen.device.protocol import Error
from mcu_gen.device.qemu import QemuSession


@pytest.fixture(scope="module")
def mnist_build(tmp_path_factory, qemu_tools):
    # A test-harness image: the program-upload buffer these tests send programs through exists only with
    # upload=True (`--upload`); a deployable image has none (tests/test_total_ram.py).
    return mcu_gen.build("examples/mnist/model.py", board="mps2-an505", out=tmp_path_factory.mktemp("bad") / "mnist",
                         upload=True)


def _check_builtin_still_works(link, build, x):
    link.use_builtin()
    (got,), _ = link.infer([x])
    want = build.spec.module(torch.from_numpy(x)).detach().numpy()
    assert np.abs(got - want).max() < 1e-4


def _structural(data: bytes):
    """(name, corrupted program, the code the verifier must answer): one per rule that a
    corruption of a real program can break (docs/loader.md)."""
    from mcu_gen.dev.crafted import Pte

    def patched(edit):
        f = Pte(data)
        edit(f)
        return f.bytes()

    def input_alloc(f):
        v = f.i32(f.ref(f.plan, 3) + 4)  # the first input's value index
        return f.ref(f.value_payload(v), 6)

    def first_args(f):
        return f.instruction_args(0)

    size, base, seg = Pte(data).header()
    yield "truncated", data[: len(data) // 3], Error.InvalidProgram
    yield "empty header", data[:12], Error.InvalidProgram
    bad_id = bytearray(data)
    bad_id[4:8] = b"XX99"
    yield "wrong identifier", bytes(bad_id), Error.BadIdentifier
    yield "root offset past the end", patched(lambda f: f.put(0, "<I", len(data) + 1000)), Error.InvalidProgram
    yield "segment past the end", patched(lambda f: f.set_header(size, len(data) * 4, seg)), Error.InvalidProgram
    yield "segment over the flatbuffer", patched(lambda f: f.set_header(size, 0, seg)), Error.InvalidProgram
    yield "value tag out of range", patched(lambda f: f.put(f.field_pos(f.evalue(0), 0), "<B", 40)), \
        Error.InvalidProgram
    yield "tensor in another memory", patched(lambda f: f.put(f.field_pos(input_alloc(f), 0), "<I", 2)), \
        Error.UnsupportedProgram
    yield "arena tensor out of bounds", patched(lambda f: f.put(f.field_pos(input_alloc(f), 1), "<I", 1 << 24)), \
        Error.ArenaOutOfBounds
    yield "misaligned arena tensor", patched(lambda f: f.put(f.field_pos(input_alloc(f), 1), "<I", 2)), \
        Error.Misaligned
    yield "constant out of bounds", patched(lambda f: f.put(f.ref(f.ref(f.root, 5), 1) + 4 + 8, "<Q", 1 << 30)), \
        Error.ConstantOutOfBounds
    yield "arena larger than the firmware's", patched(lambda f: f.put(f.ref(f.plan, 8) + 4 + 8, "<q", 1 << 24)), \
        Error.ArenaTooSmall
    yield "operator renamed", patched(lambda f: f.d.__setitem__(
        slice(f.ref(f.vec_table(f.ref(f.plan, 6), 0), 0) + 4, f.ref(f.vec_table(f.ref(f.plan, 6), 0), 0) + 6),
        b"zz")), Error.OperatorMissing
    yield "one argument too few", patched(lambda f: f.put(first_args(f), "<I", f.u32(first_args(f)) - 1)), \
        Error.BadArgument
    yield "an int where a tensor goes", patched(lambda f: f.put(first_args(f) + 4, "<i", f.i32(
        first_args(f) + 4 + 4 * 3))), Error.BadArgument  # argument 3 is the stride list... an IntList
    yield "a constant as the out tensor", patched(lambda f: f.put(first_args(f) + 4 + 4 * (
        f.u32(first_args(f)) - 1), "<i", f.i32(first_args(f) + 8))), Error.BadArgument  # the weight


def _random_flips(data: bytes):
    rng = random.Random(1234)
    fb_size = struct.unpack_from("<Q", data, 16)[0]
    for k in range(12):
        m = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            m[rng.randrange(8, fb_size)] = rng.randrange(256)  # inside the flatbuffer
        yield f"random flips #{k}", bytes(m)


@pytest.mark.qemu
def test_structural_corruptions_are_rejected_with_their_codes(mnist_build):
    data = mnist_build.pte_bytes
    x = np.random.RandomState(0).randn(1, 1, 28, 28).astype(np.float32)
    cases = list(_structural(data))
    assert {code for _, _, code in cases} == {
        Error.InvalidProgram, Error.BadIdentifier, Error.UnsupportedProgram, Error.OperatorMissing, Error.BadArgument,
        Error.ArenaTooSmall, Error.ConstantOutOfBounds, Error.ArenaOutOfBounds, Error.Misaligned}
    with QemuSession(mnist_build.board, mnist_build.elf, run_timeout=30) as link:
        got = []
        for name, bad, want in cases:
            code, _detail = link.load_program(bad)
            got.append((name, Error(code), want))
            _check_builtin_still_works(link, mnist_build, x)
        assert link.hello().program_id == mnist_build.program_id
        link.exit(0)
    assert [(n, c) for n, c, _ in got] == [(n, w) for n, _, w in got]


@pytest.mark.qemu
def test_random_corruptions_never_crash_the_device(mnist_build):
    data = mnist_build.pte_bytes
    x = np.random.RandomState(0).randn(1, 1, 28, 28).astype(np.float32)
    with QemuSession(mnist_build.board, mnist_build.elf, run_timeout=30) as link:
        for name, bad in _random_flips(data):
            code, _detail = link.load_program(bad)
            if code == Error.Ok:
                # A flip the verifier cannot see (a weight, a shape that stays
                # consistent): it must still run to completion or fail cleanly.
                try:
                    link.infer([x])
                except Exception as e:  # a clean device error, never a dead link
                    assert not isinstance(e, LinkError), (name, e)
            _check_builtin_still_works(link, mnist_build, x)
        assert link.hello().program_id == mnist_build.program_id
        link.exit(0)


def _relu_program():
    from mcu_gen.plan import inplace_pass
    from mcu_gen.program.ir import Instruction, Program

    p = Program()
    x = p.add_tensor((1, 4))
    y = p.add_tensor((1, 4))
    p.instructions.append(Instruction("aten::relu.out", [x, y, y]))
    p.inputs, p.outputs = [x], [y]
    inplace_pass.plan_memory(p)
    return pte.write(p)


@pytest.mark.qemu
def test_valid_programs_the_firmware_cannot_run_are_refused(mnist_build, tmp_path):
    """A valid program whose operator is not in this firmware's kernel table,
    and one whose arena is larger than the firmware's."""
    unfused = mcu_gen.build("examples/mnist/model.py", board="mps2-an505", out=tmp_path / "nofuse",
                            fuse=False, compile=False)
    x = np.random.RandomState(1).randn(1, 1, 28, 28).astype(np.float32)
    with QemuSession(mnist_build.board, mnist_build.elf, run_timeout=30) as link:
        code, detail = link.load_program(_relu_program())
        assert code == Error.OperatorMissing and detail == 0
        _check_builtin_still_works(link, mnist_build, x)
        code, detail = link.load_program(unfused.pte_bytes)
        assert code == Error.ArenaTooSmall
        assert detail == unfused.program.arena_size > mnist_build.program.arena_size
        _check_builtin_still_works(link, mnist_build, x)
        # The builtin program itself, uploaded, is accepted and runs.
        code, _ = link.load_program(mnist_build.pte_bytes)
        assert code == Error.Ok
        (got,), _ = link.infer([x])
        assert np.abs(got - mnist_build.spec.module(torch.from_numpy(x)).detach().numpy()).max() < 1e-4
        link.exit(0)
