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
