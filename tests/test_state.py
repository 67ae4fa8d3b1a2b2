"""Stateful models (mutable buffers): export, plan, program format, reference, and on QEMU step by step
against PyTorch with RESET checked (issue 19). Test models: tests/models/state_*.py."""
import copy
import json

import numpy as np
import pytest
import torch

import mcu_gen
from mcu_gen.capture.export import export_model
from mcu_gen.capture.model_file import load_model_file
from mcu_gen.plan import inplace_pass, planner
from mcu_gen.program import pte
from mcu_gen.reference import run_reference

MODELS = ["state_ring", "state_mean", "state_gru", "state_lstm"]
STATES = {"state_ring": ["hist"], "state_mean": ["mean", "count"], "state_gru": ["h"], "state_lstm": ["h", "c"]}


def _spec(name):
    return load_model_file(f"tests/models/{name}.py")


def _torch_steps(module, seq):
    m = copy.deepcopy(module)
    outs = []
    with torch.no_grad():
        for step in seq:
            out = m(*[torch.from_numpy(x) for x in step])
            outs.append([o.numpy() for o in (out if isinstance(out, tuple) else (out,))])
    return outs


def _sequence(spec, n=16, seed=3):
    rng = np.random.RandomState(seed)
    return [tuple(rng.randn(*x.shape).astype(np.float32) for x in spec.example_inputs) for _ in range(n)]


@pytest.mark.parametrize("name", MODELS)
def test_mutated_buffers_become_planned_state_never_overlapped(name):
    spec = _spec(name)
    p = export_model(spec)
    assert p.state_names == STATES[name]
    inplace_pass.plan_memory(p)
    planner.check_plan(p)
    iv = planner.lifetimes(p)
    n = len(p.instructions)
    for s in p.states:
        t = p.tensor(s)
        assert t.init is not None and not t.is_constant and t.offset is not None
        assert np.array_equal(t.init, dict(spec.module.named_buffers())[t.name].numpy())
        assert (iv[s].start, iv[s].end) == (0, n - 1)  # live for the whole run
        lo, hi = t.offset, t.offset + t.nbytes
        for root, it in iv.items():  # no other tensor ever shares its bytes
            if root == s:
                continue
            o = p.tensor(root)
            assert o.offset + it.size <= lo or o.offset >= hi, f"{o.name} overlaps state {t.name}"
    # each state is written once, by the instruction computing its new value (no copy) when nothing
    # reads the old value from that step on, else by a copy at the end
    for s in p.states:
        writers = [k for k, ins in enumerate(p.instructions) if ins.args[-1] == s]
        assert len(writers) == 1
    copies = [ins for ins in p.instructions if ins.op == "aten::clone.out"]
    assert len(copies) == {"state_mean": 1}.get(name, 0)  # count + 1 reads and writes count in one step


@pytest.mark.parametrize("name", MODELS)
def test_program_keeps_state_as_executorch_does_and_reference_matches_torch_step_by_step(name):
    spec = _spec(name)
    p = export_model(spec)
    inplace_pass.plan_memory(p)
    q = pte.read(pte.write(p))
    assert len(q.states) == len(p.states)
    for a, b in zip(p.states, q.states):  # planned and with its initial value in the constant segment
        assert q.tensor(b).offset == p.tensor(a).offset
        assert np.array_equal(q.tensor(b).init, p.tensor(a).init)
    seq = _sequence(spec)
    want = _torch_steps(spec.module, seq)
    for prog in (p, q):
        state = {}
        for step, w in zip(seq, want):
            got = run_reference(prog, list(step), state)
            for g, x in zip(got, w):
                np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-5)
    # without carrying the state, step 2 differs from PyTorch (the model really is stateful)
    got = run_reference(p, list(seq[1]))
    assert not all(np.allclose(g, x, atol=1e-6) for g, x in zip(got, want[1]))


def test_executorch_runtime_runs_an_mcu_gen_state_program():
    rt = pytest.importorskip("executorch.runtime")
    spec = _spec("state_ring")
    p = export_model(spec, fuse=False)
    inplace_pass.plan_memory(p)
    data = pte.write(p)  # kept alive: the runtime reads the program in place
    program = rt.Runtime.get().load_program(data)
    method = program.load_method("forward")
    seq = _sequence(spec, 10)
    for step, w in zip(seq, _torch_steps(spec.module, seq)):
        got = method.execute([torch.from_numpy(x) for x in step])
        np.testing.assert_allclose(got[0].numpy(), w[0], rtol=1e-5, atol=1e-6)


def test_executorch_state_program_reads_as_state():
    exir = pytest.importorskip("executorch.exir")
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("acc", torch.arange(4.0).reshape(1, 4))

        def forward(self, x):
            self.acc.add_(x)
            return self.acc * 2

    ep = torch.export.export(M(), (torch.ones(1, 4),))
    et = exir.to_edge(ep).to_executorch(exir.ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(["acc"])]))
    q = pte.read(et.buffer)
    assert len(q.states) == 1
    s = q.tensor(q.states[0])
    assert s.offset is not None and np.array_equal(s.init.reshape(-1), np.arange(4.0, dtype=np.float32))


INT8_MODELS = MODELS + ["state_island", "streaming_kws"]


def _int8_spec(name):
    return load_model_file("examples/streaming_kws/model.py" if name == "streaming_kws" else f"tests/models/{name}.py")


def _int8_program(name):
    from mcu_gen.quantize import export_quantized

    spec = _int8_spec(name)
    p, gm = export_quantized(spec)
    inplace_pass.plan_memory(p)
    return spec, p, gm


@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_state_keeps_one_scale_and_matches_the_integer_reference_step_by_step(name):
    """Each state is an int8 tensor with one scale / zero point, which every reader of the state in
    the quantized graph uses and its new value is quantized with (so the write back is a plain copy
    or the producing operator writes the state); its initial value is the buffer's, quantized. The
    program read back from the .pte gives the same outputs bit for bit, step by step with the state
    carried, and they follow PyTorch step by step; without the state carried they do not."""
    from mcu_gen.quantize.arith import dequantize_f32, quantize_f32
    from mcu_gen.quantize.lowering import Q_OPS
    from mcu_gen.reference.inputs import dequantize_outputs

    spec, p, gm = _int8_program(name)
    states = gm.meta["mcu_states"]
    assert [st["name"] for st in states] == p.state_names == (["frames", "h"] if name == "streaming_kws"
                                                              else STATES.get(name, ["acc"]))
    buffers = dict(spec.module.named_buffers())
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    for i, st in zip(p.states, states):
        t = p.tensor(i)
        assert t.dtype == "int8" and t.scale > 0
        want = np.clip(quantize_f32(buffers[t.name].numpy(), t.scale, t.zero_point), -128, 127).astype(np.int8)
        assert np.array_equal(t.init, want)
        readers = list(placeholders[st["input"]].users)
        assert readers and all(u.target in Q_OPS for u in readers)
        assert {(float(u.args[1]), int(u.args[2])) for u in readers} == {(t.scale, t.zero_point)}
        writers = [k for k, ins in enumerate(p.instructions) if ins.args[-1] == i]
        assert len(writers) == 1  # one write per run
    # the new values have the states' parameters already: no requantization table on the way back
    assert not any(getattr(p.values[a], "name", "").endswith("_rq_lut") for ins in p.instructions for a in ins.args)
    if name != "state_island":  # everything int8 (GRU / LSTM gates as int8 linears, adds, muls, tables)
        assert p.meta["fp32_fallback"] == []
        assert all(ins.op.startswith("cortex_m::") or p.tensor(ins.args[-1]).dtype == "int8"
                   for ins in p.instructions)
    q = pte.read(pte.write(p))
    seq = spec.test_sequences[0] if spec.test_sequences else _sequence(spec)
    seq = [tuple(np.asarray(x, np.float32) for x in step) for step in seq][:16]
    want = _torch_steps(spec.module, seq)
    s1, s2 = {}, {}
    errs = []
    for k, (step, w) in enumerate(zip(seq, want)):
        a, b = run_reference(p, list(step), s1), run_reference(q, list(step), s2)
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
        got = dequantize_outputs(p, a)
        errs.append(max(float(np.max(np.abs(g - x))) / (1 + float(np.max(np.abs(x)))) for g, x in zip(got, w)))
        if k == 0:
            first = got
    assert np.median(errs) < 0.05, errs  # int8 follows fp32 over the sequence (no drift of the state)
    # the state really is carried: the last step from the initial state gives other outputs
    fresh = dequantize_outputs(p, run_reference(p, list(seq[-1])))
    assert not all(np.array_equal(f, g) for f, g in zip(fresh, got))
    # and the dequantized state after the sequence is PyTorch's buffer after it
    m = copy.deepcopy(spec.module)
    with torch.no_grad():
        for step in seq:
            m(*[torch.from_numpy(x) for x in step])
    for i in p.states:
        t = p.tensor(i)
        got_state = dequantize_f32(s1[i], t.scale, t.zero_point)
        ref = dict(m.named_buffers())[t.name].numpy()
        assert np.max(np.abs(got_state - ref)) <= max(0.1, 0.05 * float(np.max(np.abs(ref)))), t.name


def test_calibration_runs_sequences_step_by_step_with_the_state_carried():
    """The state's observer sees its values over time: the int8 range of the running mean covers
    what the buffer holds over the calibration sequences, fed step by step (reset between them)."""
    spec, p, _ = _int8_program("state_mean")
    seen = []
    for seq in spec.calibration_sequences:
        m = copy.deepcopy(spec.module)
        with torch.no_grad():
            for (x,) in seq:
                m(x)
                seen.append(m.mean.clone())
    seen = torch.cat(seen)
    t = p.tensor(p.states[p.state_names.index("mean")])
    lo, hi = t.scale * (-128 - t.zero_point), t.scale * (127 - t.zero_point)
    # a histogram observer may clip the far tails a little; the bulk of the range over time is covered
    assert lo <= float(torch.quantile(seen, 0.02)) and hi >= float(torch.quantile(seen, 0.98)), (lo, hi)
    # the range the state reaches over time, not the initial value's (0.5 everywhere)
    assert hi - lo > 1.0
    c = p.tensor(p.states[p.state_names.index("count")])  # a step counter: 0 .. 16 over each sequence
    assert c.scale * (127 - c.zero_point) >= 15.5


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_rnn_cells_are_split_into_gates_that_equal_pytorchs_cell(cell):
    """decompose_rnn_cells: nn.GRUCell / nn.LSTMCell as per-gate linears, adds, sigmoid / tanh and muls
    compute what PyTorch's cell computes (before quantization, in float)."""
    from mcu_gen.quantize.capture import capture_for_quantization

    torch.manual_seed(0)
    mod = (torch.nn.GRUCell(5, 7) if cell == "gru" else torch.nn.LSTMCell(5, 7)).eval()
    x, h, c = torch.randn(1, 5), torch.randn(1, 7), torch.randn(1, 7)
    args = (x, h) if cell == "gru" else (x, (h, c))

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = mod

        def forward(self, x, h, c):
            return self.cell(x, h) if cell == "gru" else self.cell(x, (h, c))

    gm = capture_for_quantization(Wrap(), (x, h, c))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.gru_cell.default not in targets and torch.ops.aten.lstm_cell.default not in targets
    assert targets.count(torch.ops.aten.linear.default) == (6 if cell == "gru" else 8)
    with torch.no_grad():
        want = mod(*args)
        got = gm(x, h, c)
    for g, w in zip(got if cell == "lstm" else [got], want if cell == "lstm" else [want]):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_int8_stateful_model_without_calibration_data_stops_with_a_clear_error(tmp_path):
    src = open("tests/models/state_gru.py").read().split("\n\ndef calibration_sequences")[0]
    f = tmp_path / "gru_nocal.py"
    f.write_text(src)
    with pytest.raises(mcu_gen.errors.McuGenError, match="calibration_sequences"):
        mcu_gen.build(str(f), board="mps2-an505", out=tmp_path / "o", quantize="int8", compile=False)


def test_int8_stateful_model_calibrates_on_one_sequence_from_calibration_inputs(tmp_path):
    """calibration_inputs() of a stateful model is one sequence (its steps in order, state carried)."""
    src = (open("tests/models/state_gru.py").read().split("\n\ndef calibration_sequences")[0]
           + "\n\ndef calibration_inputs():\n    g = torch.Generator().manual_seed(5)\n"
           "    return [(torch.randn(1, 10, generator=g),) for _ in range(32)]\n")
    f = tmp_path / "gru_cal.py"
    f.write_text(src)
    res = mcu_gen.build(str(f), board="mps2-an505", out=tmp_path / "o", quantize="int8", compile=False)
    assert [res.program.tensor(i).dtype for i in res.program.states] == ["int8"]


def test_test_sequences_are_read_from_the_model_file():
    spec = _spec("state_mean")
    assert len(spec.test_sequences) == 1 and len(spec.test_sequences[0]) == 16
    assert spec.test_sequences[0][0][0].shape == (1, 6)


@pytest.mark.qemu
@pytest.mark.parametrize("name", MODELS)
def test_stateful_model_verifies_step_by_step_on_qemu_with_reset(name, tmp_path, qemu_tools):
    r = mcu_gen.run(f"tests/models/{name}.py", board="mps2-an505", out=tmp_path / name)
    assert r.verified, f"max abs error {r.max_abs_error} > {r.tolerance}"
    assert r.reference == "pytorch, step by step"
    assert r.n_sequences == 1 and r.n_inferences == 16 and r.reset_identical is True
    assert r.max_abs_error <= r.tolerance
    rep = json.loads((tmp_path / name / "report.json").read_text())
    assert [s["name"] for s in rep["state"]] == STATES[name]
    md = (tmp_path / name / "report.md").read_text()
    assert "## State" in md and all(f"`{s}`" in md for s in STATES[name])


@pytest.mark.qemu
def test_reset_restores_the_initial_state_on_the_device(tmp_path, qemu_tools):
    """Without RESET the same inputs give other outputs (the state moved on); after RESET they give
    the first outputs again, bit for bit; a fresh PyTorch copy agrees with the first pass."""
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.firmware.builder import build

    res = build("tests/models/state_ring.py", board="mps2-an505", out=tmp_path / "ring")
    seq = _sequence(res.spec, 4, seed=11)
    with QemuSession(res.board, res.elf) as link:
        first = [link.infer(list(s), rerun=False)[0] for s in seq]
        second = [link.infer(list(s), rerun=False)[0] for s in seq]
        link.reset()
        third = [link.infer(list(s), rerun=False)[0] for s in seq]
        link.exit(0)
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(first, second))
    assert all(np.array_equal(a[0], c[0]) for a, c in zip(first, third))
    for got, want in zip(first, _torch_steps(res.spec.module, seq)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


@pytest.mark.qemu
def test_stateless_firmware_rejects_a_program_that_updates_state(tmp_path, qemu_tools):
    """A firmware built without state support (MNIST) refuses an uploaded state program: the state
    would otherwise be written into the program's constants."""
    from mcu_gen.device.protocol import Error
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.firmware.builder import build

    res = build("examples/mnist/model.py", board="mps2-an505", out=tmp_path / "mnist", upload=True)  # takes uploads
    p = export_model(_spec("state_mean"))
    inplace_pass.plan_memory(p)
    with QemuSession(res.board, res.elf) as link:
        err, detail = link.load_program(pte.write(p))
        # its initial value indexes the mutable data segment, unknown there: out of the constants'
        # range, or else a constant that a kernel writes ('O' argument)
        assert err in (Error.ConstantOutOfBounds, Error.BadArgument), (err, detail)
        assert link.hello().program_source == "builtin"  # the builtin program keeps running
        with pytest.raises(mcu_gen.device.link.LinkError, match="does not know RESET"):
            link.reset()
        link.exit(0)


@pytest.mark.qemu
def test_streaming_kws_example_verifies_two_utterances_on_qemu(tmp_path, qemu_tools):
    """examples/streaming_kws: a causal conv1d over a ring of frames and a GRU cell, 49 frames per
    utterance, every frame compared with PyTorch, RESET between utterances checked."""
    r = mcu_gen.run("examples/streaming_kws/model.py", board="mps2-an505", out=tmp_path / "skws")
    assert r.verified and r.reset_identical is True
    assert r.n_sequences == 2 and r.n_inferences == 2 * 49
    assert r.state_bytes == (10 * 3 + 48) * 4
    rep = json.loads((tmp_path / "skws" / "report.json").read_text())
    assert [s["name"] for s in rep["state"]] == ["frames", "h"]
    # the two state tensors never share bytes
    a, b = rep["state"]
    assert a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"]


def _state_seeds():
    seeds = {}
    for name in MODELS:
        for fuse in (True, False):
            p = export_model(_spec(name), fuse=fuse)
            inplace_pass.plan_memory(p)
            seeds[f"{name}{'' if fuse else '_unfused'}"] = pte.write(p)
    from mcu_gen.quantize import export_quantized

    for name, io in (("state_ring", "int8"), ("state_gru", "float32")):  # int8 states (int8 initial values)
        p, _ = export_quantized(_spec(name), io=io)
        inplace_pass.plan_memory(p)
        seeds[f"{name}_int8_{io}"] = pte.write(p)
    return seeds


def test_corrupt_state_programs_are_rejected_without_crashing_under_sanitizers(tmp_path):
    """The loader with state support (mutable data segment, state tensors, reset at load) under
    libFuzzer + ASan + UBSan: the state programs replay cleanly, a bounded fuzz run finds nothing,
    and an initial value pointing past its segment is refused."""
    from mcu_gen.dev import fuzz

    if fuzz.find_clang() is None:
        pytest.skip("clang++ not found: fuzzing needs clang with libFuzzer (apt-get install clang)")
    problems = fuzz.replay_then_fuzz(fuzz.build_fuzzer(state=True), _state_seeds(), tmp_path, 30)
    assert not problems, "\n".join(problems)


def test_reader_refuses_an_initial_value_outside_its_segment():
    p = export_model(_spec("state_ring"))
    inplace_pass.plan_memory(p)
    data = bytearray(pte.write(p))
    q = pte.read(bytes(data))
    init = q.tensor(q.states[0]).init.astype(np.float32).tobytes()
    at = bytes(data).rfind(init)
    assert at > 0
    # shrink the mutable segment (the last DataSegment's size) so the initial value runs past it
    size = len(init).to_bytes(8, "little")
    k = bytes(data).rfind(size)
    assert k > 0
    data[k:k + 8] = (len(init) - 4).to_bytes(8, "little")
    with pytest.raises(pte.PteError, match="past its segment"):
        pte.read(bytes(data))


@pytest.mark.qemu
def test_verify_on_a_serial_port_runs_sequences_with_and_without_the_model(tmp_path, qemu_tools):
    """`mcu-gen verify` on a flashed board (QEMU's pty): with the model file, PyTorch step by step;
    from the build alone, the reference interpreter carrying the state read from the .pte."""
    from mcu_gen.boards import get_board
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.device.verify import verify_port
    from mcu_gen.firmware.builder import build

    res = build("tests/models/state_mean.py", board="mps2-an505", out=tmp_path / "mean")
    session = QemuSession(get_board("mps2-an505"), res.elf)
    session.start()
    port = session.port.port
    session.port.close()
    session.port = None
    try:
        r = verify_port(port, res.out, model="tests/models/state_mean.py")
        assert r.verified and r.reference == "pytorch, step by step" and r.n_inferences == 16
        r = verify_port(port, res.out)
        assert r.verified and r.reference == "reference interpreter (torch ops), step by step"
        assert r.n_inferences == 16
    finally:
        session.close()


@pytest.mark.qemu
def test_an_executorch_exported_state_program_runs_on_mcu_gen_firmware(tmp_path, qemu_tools):
    """ExecuTorch's own program for the ring-buffer model (initialized mutable buffer, updated by
    aten::copy_) on QEMU: every step equals PyTorch running the module, and RESET works."""
    exir = pytest.importorskip("executorch.exir")
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.firmware.builder import build

    spec = _spec("state_ring")
    ep = torch.export.export(copy.deepcopy(spec.module), spec.example_inputs)
    et = exir.to_edge(ep).to_executorch(exir.ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(["hist"])]))
    path = tmp_path / "et_ring.pte"
    path.write_bytes(et.buffer)
    res = build(pte_path=path, board="mps2-an505", out=tmp_path / "b")
    assert "aten::copy_" in res.program.operators and len(res.program.states) == 1
    seq = _sequence(spec, 16, seed=5)
    want = _torch_steps(spec.module, seq)
    with QemuSession(res.board, res.elf) as link:
        link.reset()
        first = [link.infer(list(s), rerun=False)[0] for s in seq]
        link.reset()
        again = [link.infer(list(s), rerun=False)[0] for s in seq]
        link.exit(0)
    for got, w in zip(first, want):
        np.testing.assert_allclose(got[0], w[0], rtol=1e-5, atol=1e-6)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(first, again))



@pytest.mark.qemu
@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_stateful_model_verifies_bit_exact_step_by_step_on_qemu_with_reset(name, tmp_path, qemu_tools):
    """--quantize int8: every step's outputs equal the host integer reference run step by step with
    its state carried, bit for bit; RESET then the same sequence gives the same outputs again."""
    model = "examples/streaming_kws/model.py" if name == "streaming_kws" else f"tests/models/{name}.py"
    r = mcu_gen.run(model, board="mps2-an505", out=tmp_path / name, quantize="int8")
    assert r.verified and r.bit_exact is True and r.reset_identical is True
    assert r.reference.endswith("step by step") and "integer reference" in r.reference
    steps = 2 * 49 if name == "streaming_kws" else 16
    assert r.n_inferences == steps and len(r.outputs) == steps
    assert r.quant_max_abs_error is not None and r.quant_max_abs_error < 1.0
    rep = json.loads((tmp_path / name / "report.json").read_text())
    assert all(s["dtype"] == "int8" and s["scale"] > 0 for s in rep["state"])
    assert r.state_bytes == sum(s["bytes"] for s in rep["state"])
    md = (tmp_path / name / "report.md").read_text()
    assert all(f"`{s['name']}` | {s['shape']} | int8 | {s['scale']:.6g} / {s['zero_point']}" in md
               for s in rep["state"])


@pytest.mark.qemu
def test_int8_state_with_int8_io_verifies_on_qemu(tmp_path, qemu_tools):
    r = mcu_gen.run("tests/models/state_ring.py", board="mps2-an505", out=tmp_path / "r", quantize="int8", io="int8")
    assert r.verified and r.bit_exact is True and r.reset_identical is True and r.n_inferences == 16


@pytest.mark.qemu
@pytest.mark.parametrize("quantize", [None, "int8"])
def test_debug_and_profile_reset_the_state_before_they_run(quantize, tmp_path, qemu_tools):
    """After inferences have moved the device's state on, `debug` still matches the host trace (from
    the initial state) at every operator, and `profile` leaves the device one step past RESET."""
    from mcu_gen.dev.debug import debug_link
    from mcu_gen.dev.profile import profile_link
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.firmware.builder import build
    from mcu_gen.reference.inputs import quantize_inputs

    res = build("tests/models/state_gru.py", board="mps2-an505", out=tmp_path / "g", quantize=quantize,
                debug=True)
    seq = [tuple(quantize_inputs(res.program, s)) for s in _sequence(res.spec, 4, seed=2)]
    with QemuSession(res.board, res.elf) as link:
        for step in seq:  # the state moves on
            link.infer(list(step), rerun=False)
        d = debug_link(res, link, inputs=[seq[0]])
        assert d.ok, d.first_divergence
        for step in seq:
            link.infer(list(step), rerun=False)
        moved = link.infer(list(seq[1]), rerun=False)[0]  # seq[1] from a moved-on state
        p = profile_link(res, link, inputs=[seq[0]])
        assert len(p.ops) == len(res.program.instructions)
        after_profile = link.infer(list(seq[1]), rerun=False)[0]  # the second step of the sequence
        link.reset()
        link.infer(list(seq[0]), rerun=False)
        want = link.infer(list(seq[1]), rerun=False)[0]
        link.exit(0)
    assert all(np.array_equal(a, b) for a, b in zip(after_profile, want))
    # the check can fail: the same step from a moved-on state gives other outputs
    assert not all(np.array_equal(a, b) for a, b in zip(moved, want))


@pytest.mark.parametrize("io", ["float32", "int8"])
def test_a_state_an_fp32_island_reads_stays_fp32_in_the_int8_program(io):
    """layer_norm (an fp32 island) reads the state: the state stays fp32, its int8 readers quantize it,
    its new value (int8) is dequantized into it; the program read back from the .pte (views of its
    plan recovered from offsets, the int8 output's too) gives the same outputs step by step."""
    from mcu_gen.quantize import export_quantized
    from mcu_gen.reference.inputs import dequantize_outputs, quantize_inputs

    spec = _spec("state_fp32_reader")
    p, _ = export_quantized(spec, io=io)
    inplace_pass.plan_memory(p)
    assert [p.tensor(i).dtype for i in p.states] == ["float32"]
    assert [f["op"] for f in p.meta["fp32_fallback"]] == ["aten::layer_norm.default"]
    q = pte.read(pte.write(p))
    seq = _sequence(spec, 8, seed=4)
    s1, s2 = {}, {}
    for step, w in zip(seq, _torch_steps(spec.module, seq)):
        x = list(quantize_inputs(p, step))
        a, b = run_reference(p, x, s1), run_reference(q, x, s2)
        assert all(np.array_equal(g, h) for g, h in zip(a, b))
        assert np.max(np.abs(dequantize_outputs(p, a)[0] - w[0])) < 0.1


@pytest.mark.qemu
def test_an_fp32_state_in_an_int8_program_verifies_on_qemu(tmp_path, qemu_tools):
    r = mcu_gen.run("tests/models/state_fp32_reader.py", board="mps2-an505", out=tmp_path / "m", quantize="int8",
                    io="int8")
    assert r.verified and r.bit_exact is True and r.reset_identical is True and r.n_inferences == 16


def test_a_stateful_conv_bn_model_folds_its_batch_norm_and_runs_all_int8():
    """Functionalization turns eval BatchNorm into _native_batch_norm_legit_no_training: it is folded
    into the causal conv1d before it all the same, and the whole streaming block is int8."""
    from mcu_gen.capture.model_file import ModelSpec
    from mcu_gen.quantize import export_quantized
    from mcu_gen.quantize.capture import capture_for_quantization

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv1d(4, 8, 3), torch.nn.BatchNorm1d(8)
            self.register_buffer("frames", torch.zeros(1, 4, 3))
            self.drop, self.fc = torch.nn.Dropout(0.1), torch.nn.Linear(8, 2)

        def forward(self, x):
            self.frames.copy_(torch.cat([self.frames[:, :, 1:], x.unsqueeze(-1)], 2))
            return self.fc(self.drop(torch.relu(self.bn(self.conv(self.frames)))).flatten(1))

    torch.manual_seed(0)
    m = Block().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
    example = (torch.randn(1, 4),)
    gm = capture_for_quantization(m, example)
    assert not any("batch_norm" in str(n.target) for n in gm.graph.nodes)
    with torch.no_grad():  # the folded graph is the module, step by step
        state = [torch.zeros(1, 4, 3)]
        ref = copy.deepcopy(m)
        for _ in range(4):
            x = torch.randn(1, 4)
            out, new = gm(x, *state)
            torch.testing.assert_close(out, ref(x), rtol=1e-5, atol=1e-5)
            state = [new]
    g = torch.Generator().manual_seed(1)
    spec = ModelSpec(m, example, name="block",
                     calibration_sequences=[[(torch.randn(1, 4, generator=g),) for _ in range(12)] for _ in range(3)])
    p, _ = export_quantized(spec)
    assert p.meta["fp32_fallback"] == [] and [p.tensor(i).dtype for i in p.states] == ["int8"]
    assert "cortex_m::quantized_conv2d.out" in [ins.op for ins in p.instructions]


def test_an_integer_state_stays_integer_in_the_int8_program():
    """An int32 step counter is not quantized (it counts exactly, the int8 tensor next to it is int8)."""
    from mcu_gen.quantize import export_quantized

    spec = _spec("state_counter")
    p, _ = export_quantized(spec)
    inplace_pass.plan_memory(p)
    assert {p.tensor(i).name: p.tensor(i).dtype for i in p.states} == {"n": "int32", "h": "int8"}
    q = pte.read(pte.write(p))
    seq = _sequence(spec, 20, seed=6)
    s1, s2 = {}, {}
    for k, step in enumerate(seq):
        a, b = run_reference(p, list(step), s1), run_reference(q, list(step), s2)
        assert all(np.array_equal(g, h) for g, h in zip(a, b))
        assert a[1].dtype == np.int32 and int(a[1][0]) == k + 1
