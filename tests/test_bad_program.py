"""A corrupt program sent to the firmware is rejected by the verifier with an
error code; the device never crashes or hangs and keeps its builtin program."""
import random
import struct

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen import pte
from mcu_gen.link import LinkError
from mcu_gen.protocol import Error
from mcu_gen.qemu import QemuSession


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


def _corruptions(data: bytes):
    yield "truncated", data[: len(data) // 3]
    yield "empty header", data[:12]
    bad_id = bytearray(data)
    bad_id[4:8] = b"XX99"
    yield "wrong identifier", bytes(bad_id)
    root = bytearray(data)
    root[0:4] = struct.pack("<I", len(data) + 1000)
    yield "root offset past the end", bytes(root)
    seg = bytearray(data)
    seg[24:32] = struct.pack("<Q", len(data) * 4)  # segment base past the end
    yield "segment past the end", bytes(seg)
    rng = random.Random(1234)
    fb_size = struct.unpack_from("<Q", data, 16)[0]
    for k in range(12):
        m = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            m[rng.randrange(8, fb_size)] = rng.randrange(256)  # inside the flatbuffer
        yield f"random flips #{k}", bytes(m)


@pytest.mark.qemu
def test_corrupt_programs_are_rejected_without_crashing(mnist_build):
    data = mnist_build.pte_bytes
    x = np.random.RandomState(0).randn(1, 1, 28, 28).astype(np.float32)
    rejected = 0
    with QemuSession(mnist_build.board, mnist_build.elf, run_timeout=30) as link:
        for name, bad in _corruptions(data):
            code, _detail = link.load_program(bad)
            if code != Error.Ok:
                rejected += 1
                assert code in {Error.InvalidProgram, Error.BadIdentifier, Error.UnsupportedProgram,
                                Error.OperatorMissing, Error.BadArgument, Error.ArenaTooSmall,
                                Error.ConstantOutOfBounds, Error.ArenaOutOfBounds, Error.Misaligned,
                                Error.BadLength}, (name, code)
            else:
                # A flip the verifier cannot see (a weight, a shape that stays
                # consistent): it must still run to completion or fail cleanly.
                try:
                    link.infer([x])
                except Exception as e:  # a clean device error, never a dead link
                    assert not isinstance(e, LinkError), (name, e)
            _check_builtin_still_works(link, mnist_build, x)
        assert link.hello().program_id == mnist_build.program_id
        link.exit(0)
    assert rejected >= 5  # every structural corruption above is caught


def _relu_program():
    from mcu_gen import planner
    from mcu_gen.ir import Instruction, Program

    p = Program()
    x = p.add_tensor((1, 4))
    y = p.add_tensor((1, 4))
    p.instructions.append(Instruction("aten::relu.out", [x, y, y]))
    p.inputs, p.outputs = [x], [y]
    planner.plan(p)
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
