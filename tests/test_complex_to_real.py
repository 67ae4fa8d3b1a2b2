"""Real FFTs whose complex result ends in real values (issue 24): `torch.stft(...).abs()`, `torch.fft.rfft`,
`view_as_real`, `angle`, complex views, sums and real scalings run as a constant DFT matrix product on pair
tensors (mcu_gen/capture/complex_to_real.py), on the host build against PyTorch; a complex value that has to
leave the program, or a complex product, is still refused with its reason."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcu_gen.capture.complex_to_real import twiddle_table
from mcu_gen.capture.export import export_model
from mcu_gen.capture.model_file import load_model_file
from mcu_gen.capture.schema import UnsupportedOperatorError
from mcu_gen.firmware.host import HostRunError, run_on_host
from mcu_gen.program.ir import Instruction, Program
from mcu_gen.reference.fp32_emulation import rfft_f32

MODEL = """
import torch


class FrontEnd(torch.nn.Module):
    def forward(self, x, y):
        win = torch.hann_window(32)
        power = torch.stft(x, 32, hop_length=16, window=win, return_complex=True).abs().pow(2)
        logmag = torch.log(torch.stft(x, 16, hop_length=8, center=False, normalized=True,
                                      return_complex=True).abs() + 1e-6)
        spec = torch.fft.rfft(y, dim=1)                        # the FFT over a middle dimension
        pairs = torch.view_as_real(spec.transpose(1, 2)[:, 1:4] * 0.5)
        phase = torch.angle(torch.fft.fft(y[0, :, 0], norm="forward"))  # two-sided, 1/N
        mixed = (spec * torch.linspace(0.5, 1.5, 3) + spec / 2.0 - torch.fft.rfft(y * 2.0, dim=1)).abs()
        return power, logmag, pairs, phase, mixed


def model():
    return FrontEnd()


def example_inputs():
    return (torch.randn(2, 200), torch.randn(2, 24, 3))
"""


def _load(tmp_path, text, name):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load_model_file(str(path))


def test_fft_front_ends_run_on_real_tensors_and_match_pytorch(tmp_path):
    spec = _load(tmp_path, MODEL, "front_end")
    program = export_model(spec)
    dtypes = {program.values[v].dtype for ins in program.instructions for v in ins.args
              if isinstance(v, int) and hasattr(program.values[v], "dtype")}
    assert not any("complex" in str(d) for d in dtypes)
    assert sum(ins.op == "mcu::rfft.out" for ins in program.instructions) == 5  # one per FFT
    torch.manual_seed(3)
    for _ in range(2):
        x, y = torch.randn(2, 200), torch.randn(2, 24, 3)
        want = spec.module(x, y)
        got = run_on_host(program, [x.numpy(), y.numpy()])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            w = w.numpy()
            assert g.shape == w.shape and g.dtype == w.dtype
            scale = max(1.0, float(np.abs(w).max()))
            assert np.abs(g - w).max() <= 2e-5 * scale, float(np.abs(g - w).max())


def _twiddle(n):
    return twiddle_table(n)


def _rfft_program(cases):
    """One program: per case (x, n_out, scale[, twiddle]) an mcu::rfft.out instruction."""
    p, feeds = Program(), []
    p.meta["aliases"] = {}
    for x, n_out, scale, *tw in cases:
        n = x.shape[-1]
        tw = tw[0] if tw else _twiddle(n)
        xv = p.add_tensor(x.shape, "float32")
        p.inputs.append(xv)
        feeds.append(x)
        twv = p.add_tensor(tw.shape, "float32", data=tw)
        out = p.add_tensor(x.shape[:-1] + (n_out, 2), "float32")
        p.instructions.append(Instruction("mcu::rfft.out", [xv, twv, p.add_scalar("int", n_out),
                                                            p.add_scalar("float", scale), out, out]))
        p.outputs.append(out)
    return p, feeds


def test_the_fft_kernel_matches_numpy_and_its_float32_emulation_bit_for_bit():
    """op_mcu_rfft.cpp on the host build: within float32 rounding of numpy's FFT, and equal bit for bit to
    reference/fp32_emulation.rfft_f32, which the int8 programs' reference runs (radix-2 and direct sizes,
    one- and two-sided, scaled)."""
    rng = np.random.default_rng(5)
    cases = []
    for n in (1, 2, 3, 4, 5, 6, 8, 12, 16, 30, 32, 64, 128):
        for onesided, scale in ((True, 1.0), (False, 1.0 / n), (True, 1.0 / np.sqrt(n))):
            x = rng.standard_normal((3, n)).astype(np.float32)
            cases.append((x, n // 2 + 1 if onesided else n, float(scale)))
    p, feeds = _rfft_program(cases)
    got = run_on_host(p, feeds)
    for (x, n_out, scale), g in zip(cases, got):
        want = np.fft.fft(x.astype(np.float64), axis=-1)[..., :n_out] * scale
        want = np.stack([want.real, want.imag], axis=-1)
        assert np.abs(g - want).max() <= 4e-6 * max(1.0, np.abs(want).max()), (x.shape, n_out)
        np.testing.assert_array_equal(g, rfft_f32(x, _twiddle(x.shape[-1]), n_out, scale), err_msg=str(x.shape))


@pytest.mark.parametrize("case", ["n_out", "twiddle", "out_shape"])
def test_the_fft_kernel_rejects_bad_arguments(case):
    x = np.ones((2, 8), np.float32)
    if case == "n_out":
        p, feeds = _rfft_program([(x, 6, 1.0)])  # neither 8 // 2 + 1 nor 8
    elif case == "twiddle":
        p, feeds = _rfft_program([(x, 5, 1.0, _twiddle(4))])  # a table for another length
    else:
        p, feeds = _rfft_program([(x, 5, 1.0)])
        p.values[p.outputs[0]].shape = (2, 5, 3)
    with pytest.raises(HostRunError, match="(?i)kernel|fail"):
        run_on_host(p, feeds)


@pytest.mark.parametrize("body, why", [
    ("return torch.fft.rfft(x)", "because of .*a complex output of the model"),
    ("s = torch.fft.rfft(x)\n        return (s * s).abs()", "because of mul: aten.mul.Tensor .*no real form"),
    ("return torch.fft.ifft(torch.fft.rfft(x)).real", "because of _fft_c2c: .*no real form"),
])
def test_complex_values_that_cannot_be_pairs_are_refused_with_the_reason(tmp_path, body, why):
    text = ("import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        " + body +
            "\n\ndef model():\n    return M()\n\ndef example_inputs():\n    return (torch.randn(2, 16),)\n")
    spec = _load(tmp_path, text, "refused")
    with pytest.raises(UnsupportedOperatorError, match=why) as e:
        export_model(spec)
    assert "complex64 tensor" in str(e.value) and "refused.py:5" in str(e.value)


class _Spectrogram(torch.nn.Module):
    """A log-power spectrogram front end and a linear classifier: the int8 program runs the front end as one
    fp32 island (stft and abs together: no complex tensor between islands) and the head in int8."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(17 * 9, 4)

    def forward(self, x):
        s = torch.stft(x, 32, hop_length=16, window=torch.hann_window(32), return_complex=True)
        return self.head(torch.log(s.abs() + 1e-3).flatten(1))


def test_an_int8_program_runs_the_fft_front_end_as_one_island_bit_exact_on_the_host():
    from mcu_gen.capture.model_file import ModelSpec
    from mcu_gen.quantize import export_quantized
    from mcu_gen.reference.integer import run_int8_reference

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    cal = [(torch.randn(1, 128, generator=g),) for _ in range(8)]
    spec = ModelSpec(_Spectrogram().eval(), cal[0], calibration_inputs=cal, name="spectrogram")
    program, _ = export_quantized(spec)
    islands = program.meta["fp32_fallback"]
    assert islands[0]["op"] == "aten::stft.default -> aten::abs.default"  # one island: no complex tensor between
    assert "mcu::rfft.out" in islands[0]["kernels"]
    for (x,) in cal[:3]:
        want = run_int8_reference(program, [x.numpy()])
        got = run_on_host(program, [x.numpy()])
        for g_, w in zip(got, want):
            np.testing.assert_array_equal(g_, w)
        err = np.abs(got[0] - spec.module(x).detach().numpy()).max()
        assert err < 0.05 * max(1.0, float(np.abs(want[0]).max())), err


def test_an_int8_program_refuses_a_complex_output_with_the_fix():
    from mcu_gen.capture.model_file import ModelSpec
    from mcu_gen.quantize import export_quantized

    class Rfft(torch.nn.Module):
        def forward(self, x):
            return torch.fft.rfft(torch.relu(x))

    g = torch.Generator().manual_seed(1)
    cal = [(torch.randn(1, 16, generator=g),) for _ in range(4)]
    with pytest.raises(UnsupportedOperatorError, match="complex tensor that the model returns.*view_as_real"):
        export_quantized(ModelSpec(Rfft().eval(), cal[0], calibration_inputs=cal, name="rfft"))
