"""Programs with several methods (issue 19 item 4, docs/methods.md): model files that declare
methods(model), one constant segment shared by every method, each method planned with shared state
at one offset, the runtime verifying every plan and switching with SELECT_METHOD, `mcu-gen run`
verifying every method on QEMU, and ExecuTorch interop both ways.
Test models: tests/models/methods_encode_classify.py, tests/models/methods_forward_reset.py."""
import copy
import json
import struct

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.capture.export import _Method, export_methods
from mcu_gen.capture.model_file import ModelFileError, load_model_file
from mcu_gen.plan import inplace_pass, planner
from mcu_gen.program import pte
from mcu_gen.reference import run_reference

ENC = "tests/models/methods_encode_classify.py"
RING = "tests/models/methods_forward_reset.py"


def _program(path, fuse=True):
    spec = load_model_file(path)
    p = export_methods(spec, fuse=fuse)
    inplace_pass.plan_memory(p)
    return spec, p


def test_model_file_methods_are_read_as_methods_of_one_module():
    spec = load_model_file(ENC)
    assert [m.name for m in spec.methods] == ["encode", "classify"]
    assert all(m.owner is spec.module and m.path == "" for m in spec.methods)
    assert spec.example_inputs[0].shape == (1, 16)  # the first method's: example_inputs() is optional
    ring = load_model_file(RING)
    assert [(m.name, m.attr, len(m.example_inputs)) for m in ring.methods] == [("forward", "forward", 1),
                                                                               ("reset", "reset", 0)]


@pytest.mark.parametrize("body, match", [
    ("return {'encode': (lambda x: x, (torch.ones(1),))}", "give a method of the module"),
    ("return {'encode': (torch.nn.Linear(2, 2), (torch.ones(1, 2),))}", "is not part of the module"),
    ("return {'not a name': (net.encode, (torch.ones(1, 16),))}", "must be an identifier"),
    ("return {'encode': (net.encode,)}", r"must be \(callable, example inputs\)"),
    ("return {}", "non-empty dict"),
])
def test_bad_methods_declarations_get_a_clear_error(tmp_path, body, match):
    src = open(ENC).read().split("def methods(net):")[0] + f"def methods(net):\n    {body}\n"
    f = tmp_path / "bad.py"
    f.write_text(src)
    with pytest.raises(ModelFileError, match=match):
        load_model_file(f)


def test_methods_share_one_constant_segment_and_each_method_is_a_plan():
    spec, p = _program(ENC)
    data = pte.write(p)
    q = pte.read(data)
    assert q.method_names == ["encode", "classify"]
    per_method = sum(m.constant_bytes() for m in p.methods)
    shared = sum(t.nbytes for t in (spec.module.enc[0].weight, spec.module.enc[0].bias, spec.module.enc[2].weight,
                                    spec.module.enc[2].bias))
    # the encoder's weights are stored once: the segment holds less than the methods' constants together
    assert q.meta["segment_bytes"] < per_method
    assert q.meta["segment_bytes"] <= per_method - shared + 16 * 4  # (16-byte alignment of each constant)
    for m, n in zip(q.methods, [m for m in p.methods]):
        assert [i.op for i in m.instructions] == [i.op for i in n.instructions]
        assert m.arena_size == n.arena_size
    # the reference of every method read back equals PyTorch calling the method
    x = np.random.RandomState(0).randn(1, 16).astype(np.float32)
    for ms in spec.methods:
        want = ms.call(spec.module)(torch.from_numpy(x)).detach().numpy()
        got = run_reference(q.method(ms.name), [x])[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_state_shared_by_two_methods_is_planned_once_at_one_offset():
    spec, p = _program(RING)
    fwd, reset = p.methods
    assert fwd.state_names == reset.state_names == ["hist"]
    a, b = fwd.tensor(fwd.states[0]), reset.tensor(reset.states[0])
    assert a.offset == b.offset == 0 and a.nbytes == 96
    for m in p.methods:  # every other tensor of every method lies above the shared state
        for root, it in planner.lifetimes(m).items():
            if root not in m.states:
                assert m.values[root].offset >= 96, (m.name, root)
    q = pte.read(pte.write(p))
    assert [m.tensor(m.states[0]).offset for m in q.methods] == [0, 0]
    planner.check_methods(q)
    # one initial value in the mutable segment, shared by both plans
    assert q.tensor(q.states[0]).init.tobytes() == q.more_methods[0].tensor(q.more_methods[0].states[0]).init.tobytes()


def test_check_methods_rejects_a_method_that_overwrites_another_methods_state():
    _, p = _program(RING)
    _, enc = _program(ENC)  # a method without state, planned on its own: its tensors start at offset 0
    p.more_methods = [enc]  # ... over `hist`, which forward needs on its next call
    planner.check_plan(enc)  # fine on its own
    with pytest.raises(planner.PlanError, match="method encode: tensor .* overlaps state hist"):
        planner.check_methods(p)
    _, p = _program(RING)
    reset = p.more_methods[0]
    reset.arena_size = 400
    reset.tensor(reset.states[0]).offset = 208  # the state moved in one method (a valid plan of its own)
    planner.check_plan(reset)
    with pytest.raises(planner.PlanError, match="state hist is at offset 208"):
        planner.check_methods(p)


def test_hello_reads_the_method_fields_only_when_the_firmware_sends_them():
    from mcu_gen.device.protocol import HelloInfo

    body = struct.pack("<HHQBBBBIIIB", 1, 1024, 0xAABB, 1, 0, 1, 1, 4096, 192, 0, 3) + b"v1x"
    old = HelloInfo.parse(body + struct.pack("<I", 900))
    assert (old.stack_used, old.num_methods, old.active_method, old.multi_method_firmware) == (900, 1, 0, False)
    new = HelloInfo.parse(body + struct.pack("<I", 900) + bytes([2, 1]))
    assert (new.stack_used, new.num_methods, new.active_method, new.multi_method_firmware) == (900, 2, 1, True)


def test_int8_with_several_methods_stops_with_a_clear_error(tmp_path):
    with pytest.raises(mcu_gen.errors.McuGenError, match="several methods .* fp32 only"):
        mcu_gen.build(ENC, board="mps2-an505", out=tmp_path / "o", quantize="int8", compile=False)


def test_report_lists_the_methods_and_their_plans(tmp_path):
    r = mcu_gen.build(RING, board="mps2-an505", out=tmp_path / "ring", compile=False)
    rep = json.loads((tmp_path / "ring" / "report.json").read_text())
    assert [m["name"] for m in rep["methods"]] == ["forward", "reset"]
    assert rep["arena_bytes"] == max(m["arena_bytes"] for m in rep["methods"]) == r.program.max_arena_size
    assert all(m["state"] == [{"name": "hist", "offset": 0, "bytes": 96}] for m in rep["methods"])
    assert rep["state"][0]["methods"] == ["forward", "reset"]
    md = (tmp_path / "ring" / "report.md").read_text()
    assert "## Methods" in md and "| 1 | `reset` |" in md and "### Operators of method `reset`" in md
    cfg = (tmp_path / "ring" / "firmware" / "CMakeLists.txt").read_text()
    assert "MCU_PROGRAM_METHODS=1" in cfg and "MCU_PROGRAM_HAS_STATE=1" in cfg


# -- ExecuTorch interop ----------------------------------------------------------------------------
def test_executorch_runtime_loads_an_mcu_gen_program_with_two_methods_and_runs_each():
    rt = pytest.importorskip("executorch.runtime")
    spec, p = _program(ENC, fuse=False)  # standard ATen operators only
    data = pte.write(p)  # kept alive: ExecuTorch's program refers into it
    program = rt.Runtime.get().load_program(data)
    assert set(program.method_names) == {"encode", "classify"}
    xs = [torch.randn(1, 16, generator=torch.Generator().manual_seed(k)) for k in range(3)]
    for ms in spec.methods:
        method = program.load_method(ms.name)
        for x in xs:
            got = method.execute([x])[0]
            want = ms.call(spec.module)(x).detach()
            assert torch.allclose(got, want, atol=1e-6), (ms.name, (got - want).abs().max())
    # the stateful pair: forward carries its ring from call to call in ExecuTorch's runtime too
    spec, p = _program(RING, fuse=False)
    data2 = pte.write(p)
    program2 = rt.Runtime.get().load_program(data2)
    forward, reset = program2.load_method("forward"), program2.load_method("reset")
    m = copy.deepcopy(spec.module)
    for k in range(4):
        x = torch.randn(1, 4, generator=torch.Generator().manual_seed(k))
        assert torch.allclose(forward.execute([x])[0], m(x).detach(), atol=1e-6)
    assert torch.equal(reset.execute([])[0], torch.zeros(1, 1))


def _executorch_two_methods(spec):
    exir = pytest.importorskip("executorch.exir")
    eps = {m.name: torch.export.export(_Method(m.owner, m.attr).eval(), m.example_inputs) for m in spec.methods}
    return exir.to_edge(eps).to_executorch().buffer


def test_executorch_program_with_two_methods_reads_as_two_methods():
    spec = load_model_file(ENC)
    q = pte.read(_executorch_two_methods(spec))
    assert sorted(q.method_names) == ["classify", "encode"]
    x = np.random.RandomState(1).randn(1, 16).astype(np.float32)
    for ms in spec.methods:
        want = ms.call(spec.module)(torch.from_numpy(x)).detach().numpy()
        np.testing.assert_allclose(run_reference(q.method(ms.name), [x])[0], want, rtol=1e-5, atol=1e-6)


# -- on QEMU -----------------------------------------------------------------------------------------
@pytest.mark.qemu
@pytest.mark.parametrize("path, stateful", [(ENC, False), (RING, True)])
def test_two_method_program_verifies_both_methods_on_qemu(path, stateful, tmp_path, qemu_tools):
    r = mcu_gen.run(path, board="mps2-an505", out=tmp_path / "b")
    assert r.verified, r.methods
    assert r.reference == "pytorch, method by method"
    names = [m["name"] for m in r.methods]
    assert names == (["forward", "reset"] if stateful else ["encode", "classify"])
    for m in r.methods:
        assert m["verified"] and m["calls"] == 8 and m["max_abs_error"] <= m["tolerance"]
        assert m["instructions"] > 0 and m["select_instructions"] > 0
    assert r.n_inferences == 16
    assert r.reset_identical is (True if stateful else None)
    if stateful:
        assert r.state_bytes == 96


@pytest.mark.qemu
def test_method_names_over_the_protocol(tmp_path, qemu_tools):
    """SELECT_METHOD addresses a method by name: TENSOR_INFO then describes its inputs; a name the
    program lacks is MethodMissing on the wire and a LinkError naming it on the host; the state
    written by one method is what the other reads; a firmware for one method answers BadRequest."""
    from mcu_gen.device.link import LinkError
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.firmware.builder import build

    res = build(RING, board="mps2-an505", out=tmp_path / "ring")
    m = copy.deepcopy(res.spec.module)
    xs = [np.random.RandomState(k).randn(1, 4).astype(np.float32) for k in range(3)]
    with QemuSession(res.board, res.elf) as link:
        hello = link.hello()
        assert (hello.num_methods, hello.active_method, hello.multi_method_firmware) == (2, 0, True)
        assert [list(t.sizes) for t in hello.inputs] == [[1, 4]]
        with pytest.raises(LinkError, match="no method 'classify' \\(it has 2 method"):
            link.select_method("classify")
        assert link.hello().active_method == 0  # unchanged
        for x in xs:
            got = link.infer([x], rerun=False)[0][0]
            np.testing.assert_allclose(got, m(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
        index, _ = link.select_method("reset")
        info = link.hello()
        assert index == 1 and info.active_method == 1 and info.inputs == [] and len(info.outputs) == 1
        assert link.infer([], rerun=False)[0][0].tolist() == [[0.0]]
        m.reset()
        link.select_method("forward")
        got = link.infer([xs[0]], rerun=False)[0][0]  # the ring the reset method cleared
        np.testing.assert_allclose(got, m(torch.from_numpy(xs[0])).detach().numpy(), rtol=1e-5, atol=1e-6)
        link.exit(0)
    single = build("tests/models/state_ring.py", board="mps2-an505", out=tmp_path / "one")
    with QemuSession(single.board, single.elf) as link:
        assert link.hello().multi_method_firmware is False and link.hello().num_methods == 1
        with pytest.raises(LinkError, match="built for a program with one method"):
            link.select_method("forward")
        link.exit(0)


@pytest.mark.qemu
def test_an_executorch_exported_two_method_program_runs_on_mcu_gen_firmware(tmp_path, qemu_tools):
    """ExecuTorch's own program with encode and classify (its plans, its shared constant segment) on
    QEMU: each method, selected by name, equals PyTorch calling it; `mcu-gen run` verifies both."""
    from mcu_gen.device.qemu import QemuSession

    spec = load_model_file(ENC)
    path = tmp_path / "et_two.pte"
    path.write_bytes(_executorch_two_methods(spec))
    res = mcu_gen.build(pte_path=path, board="mps2-an505", out=tmp_path / "b")
    assert (tmp_path / "b" / "model.pte").read_bytes() == path.read_bytes()  # embedded as ExecuTorch wrote it
    xs = [np.random.RandomState(k).randn(1, 16).astype(np.float32) for k in range(2)]
    with QemuSession(res.board, res.elf) as link:
        for ms in spec.methods:
            link.select_method(ms.name)
            for x in xs:
                got = link.infer([x])[0][0]
                want = ms.call(spec.module)(torch.from_numpy(x)).detach().numpy()
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        link.exit(0)
    r = mcu_gen.run(pte_path=path, board="mps2-an505", out=tmp_path / "r")
    assert r.verified and sorted(m["name"] for m in r.methods) == ["classify", "encode"]
    assert r.reference == "reference interpreter (torch ops), method by method"


# -- the verifier ------------------------------------------------------------------------------------
def _seeds():
    out = {}
    for path in (ENC, RING):
        for fuse in (True, False):
            _, p = _program(path, fuse=fuse)
            out[f"{path.split('/')[-1][:-3]}{'' if fuse else '_unfused'}"] = pte.write(p)
    return out


def test_corrupt_methods_are_rejected_without_crashing_under_sanitizers(tmp_path):
    """The loader built for several methods (every plan verified, each selected and run) under libFuzzer +
    ASan + UBSan: the seeds replay cleanly and a bounded fuzz run finds nothing."""
    from mcu_gen.dev import fuzz

    if fuzz.find_clang() is None:
        pytest.skip("clang++ not found: fuzzing needs clang with libFuzzer (apt-get install clang)")
    problems = fuzz.replay_then_fuzz(fuzz.build_fuzzer(methods=True), _seeds(), tmp_path, 30)
    assert not problems, "\n".join(problems)


@pytest.mark.qemu
def test_the_device_rejects_a_corrupt_second_method(tmp_path, qemu_tools):
    """A program whose *second* method is corrupt (a tensor planned past the arena) is refused at upload
    with ArenaOutOfBounds and the builtin program keeps running; the good program then loads."""
    from mcu_gen.device.protocol import Error
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.firmware.builder import build

    res = build(ENC, board="mps2-an505", out=tmp_path / "enc", upload=True)
    _, p = _program(ENC)
    classify = p.more_methods[0]
    bad = classify.values[classify.instructions[-1].args[0]]
    bad.offset = 1 << 20  # a tensor of method 1 past the arena
    data = pte.write(p)
    with QemuSession(res.board, res.elf) as link:
        err, _ = link.load_program(data)
        assert err == Error.ArenaOutOfBounds
        assert link.hello().program_source == "builtin"
        ok, _ = link.load_program(res.pte_bytes)  # the good program loads
        assert ok == Error.Ok and link.hello().num_methods == 2
        link.exit(0)


@pytest.mark.qemu
def test_verify_on_a_serial_port_checks_every_method_with_and_without_the_model(tmp_path, qemu_tools):
    """`mcu-gen verify` on a flashed board (QEMU's pty) for a program with two methods sharing state:
    with the model file, PyTorch calling the methods; from the build alone, the reference interpreter
    carrying the state by name from method to method."""
    from mcu_gen.boards import get_board
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.device.verify import verify_port
    from mcu_gen.firmware.builder import build

    res = build(RING, board="mps2-an505", out=tmp_path / "ring")
    session = QemuSession(get_board("mps2-an505"), res.elf)
    session.start()
    port = session.port.port
    session.port.close()
    session.port = None
    try:
        r = verify_port(port, res.out, model=RING)
        assert r.verified and r.reference == "pytorch, method by method" and r.n_inferences == 16
        r = verify_port(port, res.out)
        assert r.verified and r.reference == "reference interpreter (torch ops), method by method"
        assert r.n_inferences == 16
    finally:
        session.close()


def test_the_protocol_server_for_several_methods_under_sanitizers(tmp_path):
    """The real server of firmware for several methods (MCU_PROGRAM_METHODS, with state), its builtin
    program the forward/reset pair, under ASan + UBSan: SELECT_METHOD switches (and reports the index),
    an unknown or empty name is MethodMissing with the number of methods, the state survives a switch,
    and a bounded fuzz run over such sessions finds nothing."""
    from mcu_gen.dev import fuzz
    from mcu_gen.device.protocol import Error, FrameDecoder, Msg

    if fuzz.find_clang() is None:
        pytest.skip("clang++ not found: fuzzing needs clang with libFuzzer (apt-get install clang)")
    exe = fuzz.build_fuzzer("protocol", methods=True)
    _, p = _program(RING)
    work = tmp_path / "work"
    work.mkdir()
    (work / "builtin.pte").write_bytes(pte.write(p))
    env = {"MCU_FUZZ_BUILTIN": str(work / "builtin.pte"), "MCU_FUZZ_REPLIES": str(tmp_path / "replies.bin")}
    f = fuzz._frame
    x = np.ones((1, 4), np.float32).tobytes()
    stream = b"".join([
        f(Msg.HELLO, 1),
        f(Msg.SELECT_METHOD, 2, b"classify"),
        f(Msg.SELECT_METHOD, 3, b""),
        f(Msg.WRITE_INPUT, 4, struct.pack("<BI", 0, 0) + x),
        f(Msg.RUN, 5),
        f(Msg.SELECT_METHOD, 6, b"reset"),
        f(Msg.WRITE_INPUT, 7, struct.pack("<BI", 0, 0) + x),  # reset has no inputs
        f(Msg.RUN, 8),
        f(Msg.SELECT_METHOD, 9, b"forward"),
        f(Msg.HELLO, 10),
        f(Msg.RESET, 11),
    ])
    r = fuzz.replay(exe, stream, tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    frames = FrameDecoder().feed((tmp_path / "replies.bin").read_bytes())
    got = [(fr.type & 0x7F, Error(fr.payload[0])) for fr in frames]
    assert got == [(Msg.HELLO, Error.Ok), (Msg.SELECT_METHOD, Error.MethodMissing),
                   (Msg.SELECT_METHOD, Error.MethodMissing), (Msg.WRITE_INPUT, Error.Ok), (Msg.RUN, Error.Ok),
                   (Msg.SELECT_METHOD, Error.Ok), (Msg.WRITE_INPUT, Error.BadIndex), (Msg.RUN, Error.Ok),
                   (Msg.SELECT_METHOD, Error.Ok), (Msg.HELLO, Error.Ok), (Msg.RESET, Error.Ok)], got
    missing = struct.unpack_from("<i", frames[1].payload, 1)[0]
    assert missing == 2  # detail: the number of methods
    assert frames[5].payload[1:3] == bytes([1, 2])  # reset is method 1 of 2
    hello = frames[0].payload
    assert hello[-2:] == bytes([2, 0]) and frames[9].payload[-2:] == bytes([2, 0])  # num_methods, active
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "session.bin").write_bytes(stream)
    artifacts = tmp_path / "artifacts"
    r = fuzz.run_fuzzer(exe, corpus, 20, artifacts, env={"MCU_FUZZ_BUILTIN": env["MCU_FUZZ_BUILTIN"]})
    found = sorted(q.name for q in artifacts.iterdir())
    assert r.returncode == 0 and not found, f"fuzzer found {found}:\n{r.stderr[-4000:]}"
