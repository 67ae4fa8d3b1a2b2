"""nn.GRU / nn.LSTM as one loop each (mcu_gen/capture/recurrent.py, kernels_portable/op_mcu_gru.cpp, op_mcu_lstm.cpp):
outputs and final states against PyTorch for the forms the kernels run (layers, directions, batch_first, biases, a
given initial state, an unbatched input), the forms left unrolled, the int8 island's host emulation against the
kernel bit for bit, and an int8 program: one instruction for the GRU, a fraction of the unrolled program's bytes."""
import numpy as np
import torch
from torch import nn

from mcu_gen.capture.export import export_model
from mcu_gen.capture.model_file import ModelSpec
from mcu_gen.firmware.host import run_on_host
from mcu_gen.reference.recurrent_f32 import recurrent_f32
from op_check import Fn, check


class Recurrent(nn.Module):
    """Every form the kernels take, in one program (one native runner)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.gru2 = nn.GRU(6, 5, num_layers=2, batch_first=True, bidirectional=True)
        self.lstm3 = nn.LSTM(10, 4, num_layers=3, bidirectional=True)  # three layers: out, work, out
        self.lstm_nb = nn.LSTM(8, 3, bias=False, batch_first=True)
        self.gru1 = nn.GRU(8, 7)

    def forward(self, x, h0, u):
        a, ha = self.gru2(x, h0)  # x [2, 9, 6], batch_first, a given initial state
        b, (hb, cb) = self.lstm3(a.transpose(0, 1))  # [9, 2, 10]
        c, (hc, cc) = self.lstm_nb(torch.cat([b.transpose(0, 1), a[..., :0]], -1))
        d, hd = self.gru1(u)  # unbatched: [T, F]
        return a, ha, b, hb, cb, c, hc, cc, d, hd


def _ops(program) -> list:
    return [ins.op for ins in program.instructions]


def test_gru_and_lstm_run_as_one_loop_each_and_match_pytorch():
    net = Recurrent().eval()
    x, h0, u = torch.randn(2, 9, 6), 0.5 * torch.randn(4, 2, 5), torch.randn(11, 8)
    program = export_model(ModelSpec(net, (x, h0, u)))
    ops = _ops(program)
    assert ops.count("mcu::gru.out") == 2 and ops.count("mcu::lstm.out") == 2
    assert not any(op.startswith(("aten::sigmoid", "aten::tanh", "aten::addmm", "mcu::linear")) for op in ops)
    assert len(ops) < 20  # unrolled, these four layers were thousands of instructions
    check(net, x, h0, u, rtol=1e-4, atol=1e-5)


def test_forms_the_kernels_do_not_take_stay_unrolled_and_correct():
    lstm = nn.LSTM(6, 8, proj_size=3).eval()  # proj_size: a fifth weight per direction

    def flat(x):
        y, (h, c) = lstm(x)
        return y, h, c

    x = torch.randn(5, 1, 6)
    program = export_model(ModelSpec(Fn(flat).eval(), (x,)))
    assert "mcu::lstm.out" not in _ops(program) and "aten::sigmoid.out" in _ops(program)
    check(flat, x, rtol=1e-4, atol=1e-5)


def test_the_int8_islands_emulation_is_the_kernel_bit_for_bit():
    """recurrent_f32 (what the int8 reference computes for the island) against the host build of the kernels:
    equal floats, not close ones (both follow the kernel's order, without fused multiply-adds)."""
    torch.manual_seed(3)
    for cell, kind in ((nn.GRU(5, 6, num_layers=2, bidirectional=True, batch_first=True), "gru"),
                       (nn.LSTM(5, 6, num_layers=2, bidirectional=True, batch_first=True), "lstm")):
        cell = cell.eval()
        x = torch.randn(2, 7, 5)
        program = export_model(ModelSpec(cell, (x,)))
        assert f"mcu::{kind}.out" in _ops(program)
        got = run_on_host(program, [x.numpy()])
        zeros = np.zeros((4, 2, 6), np.float32)
        params = [p.detach().numpy() for p in cell._flat_weights]
        y, states = recurrent_f32(kind, x.numpy(), [zeros] * (1 if kind == "gru" else 2), params, True, 2, True,
                                  True)
        assert np.array_equal(got[0], y)
        for g, s in zip(got[1:], states):
            assert np.array_equal(np.asarray(g), s)


def test_int8_gru_program_is_one_loop_and_small(tmp_path):
    """The int8 build of a 2-layer GRU keyword spotter: the GRU one fp32 island instruction (mcu::gru), not
    1,376 instructions. Its QEMU run, bit-exact against the host integer reference, is test_int8_models'
    (tests/models_int8/gru_kws.py)."""
    from mcu_gen.firmware import builder

    r = builder.build("tests/models_int8/gru_kws.py", board="mps2-an505", out=tmp_path, quantize="int8",
                      compile=False)
    ops = [row["name"] for row in r.report["operators"]]
    assert ops.count("mcu::gru.out") == 1 and len(ops) < 8, ops
    assert [i["op"] for i in r.report["fp32_fallback"]] == ["aten::gru.input"], r.report["fp32_fallback"]
    # unrolled (before the loop kernel) the same model took 1,376 instructions, a .pte of 252,592 B (now 94,704 B:
    # the GRU's 22,752 float weights are 91,008 B of it) and an arena of 56,448 B (now 22,320 B)
    assert r.report["pte_bytes"] < 100_000 and r.report["arena_bytes"] < 25_000, \
        (r.report["pte_bytes"], r.report["arena_bytes"])


def test_a_program_that_lies_about_the_layer_is_refused_not_run():
    """Arguments of an mcu::gru instruction changed after the build (a corrupt or hostile program): the kernel checks
    every weight's and state's shape against them before writing anything, and fails the instruction (the host
    runner is built with ASan and UBSan: a read outside a tensor would abort it instead)."""
    import copy

    import pytest

    from mcu_gen.firmware.host import HostRunError

    torch.manual_seed(0)
    net = nn.GRU(4, 5, num_layers=2).eval()
    x = torch.randn(3, 1, 4)
    program = export_model(ModelSpec(net, (x,)))
    assert run_on_host(program, [x.numpy()])[0].shape == (3, 1, 5)
    k = next(i for i, ins in enumerate(program.instructions) if ins.op == "mcu::gru.out")
    lies = {4: 3, 3: False, 5: True, 6: True,  # layers, biases, directions, batch_first (steps 1, batch 3)
            2: list(reversed(program.values[program.instructions[k].args[2]].value))}  # the weights out of order
    for arg, value in lies.items():
        bad = copy.deepcopy(program)
        bad.values[bad.instructions[k].args[arg]].value = value
        with pytest.raises(HostRunError, match="KernelFailed"):
            run_on_host(bad, [x.numpy()])


# A user's streaming recogniser (found by an outside model): a bidirectional GRU returning its final state beside
# the logits, and an LSTM with proj_size (unrolled, an fp32 island) whose output is used three times by one cat.
STATE_OUT_MODEL = '''
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 12, bidirectional=True, batch_first=True)
        self.lstm = nn.LSTM(10, 16, proj_size=4, batch_first=True)
        self.fc = nn.Linear(24 + 12, 4)

    def forward(self, x):
        z, h = self.gru(x[..., :8])
        y, (hp, cp) = self.lstm(x)
        return self.fc(torch.cat([z[:, -1], y[:, -1], y[:, -1], y[:, -1]], -1)), h, hp

def model():
    torch.manual_seed(0)
    return M().eval()

def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(1, 20, 10, generator=g) * 2 - 1,) for _ in range(n)]

def example_inputs():
    return _inputs(1, 1)[0]

def test_inputs():
    return _inputs(2, 2)

def calibration_inputs():
    return _inputs(3, 8)
'''


def test_float_state_outputs_of_recurrent_islands_are_held_to_the_fp32_tolerance(tmp_path):
    """The int8 build of STATE_OUT_MODEL: its float outputs h (mcu::gru.out returns output, h and its work tensor:
    the loose outputs were looked for in an instruction's last two arguments only) and hp (the unrolled LSTM's
    projection of tanh(c): computed in float from libm calls, not by one) may differ from the host's in the last
    bit (device newlib, host glibc); the logits are quantized, exact. And the cat of one tensor three times
    quantizes (it was a RecursionError in prepare_pt2e: the shared input edge shared with itself)."""
    from mcu_gen.device.compare import int8_program_outputs_match, libm_island_outputs
    from mcu_gen.firmware import builder

    path = tmp_path / "state_out.py"
    path.write_text(STATE_OUT_MODEL)
    r = builder.build(str(path), board="mps2-an505", out=tmp_path / "b", quantize="int8", compile=False)
    assert libm_island_outputs(r.program) == {1, 2}
    want = [np.zeros((1, 4), np.int8), np.ones((2, 1, 12), np.float32), np.ones((1, 1, 4), np.float32)]
    one_ulp = [want[0], np.nextafter(want[1], np.float32(2)), want[2]]
    assert int8_program_outputs_match(r.program, one_ulp, want)
    assert not int8_program_outputs_match(r.program, [want[0] + 1, want[1], want[2]], want)  # int8: exact


def test_state_outputs_model_is_bit_exact_and_debugs_clean_on_qemu(qemu_tools, tmp_path):
    """STATE_OUT_MODEL on mps2-an505: the run is BIT-EXACT (it said MISMATCH on the 1-ulp differences of h), and
    `mcu-gen debug` finds no divergence (it compared mcu::gru's work tensor, garbage on the device, zeros on the
    host: no later instruction reads it)."""
    import mcu_gen
    from mcu_gen.dev.debug import debug

    path = tmp_path / "state_out.py"
    path.write_text(STATE_OUT_MODEL)
    r = mcu_gen.run(str(path), board="mps2-an505", quantize="int8", out=tmp_path / "run", max_inputs=2)
    assert r.bit_exact is True and r.verified
    d = debug(str(path), board="mps2-an505", quantize="int8", out=tmp_path / "debug")
    assert d.first_divergence is None, d.first_divergence
    gru_step = next(s for s in d.steps if s.op == "mcu::gru.out")
    assert len(gru_step.values) == 2  # output and h; the work tensor is not compared
