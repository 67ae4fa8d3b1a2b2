"""The default build fits the board's flash (mcu_gen/firmware/flash_fit.py).

A generated layer on a DSP core keeps its weights pre-widened to int16 (2 bytes a weight, the library kernel 1),
so a model whose library build fits the flash could fail to link with every layer generated: torchvision's
MNASNet-1.0 (10 classes, 64x64 input) int8 on mps2-an505 was 2,940,456 B over its 4 MB with the default build
("region `FLASH' overflowed", a raw linker error) while `--kernels library` took 3.3 MB. Now `--kernels auto`
leaves layers to the library kernels, least MACs per byte of flash first, until the image fits, and says so.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

import mcu_gen
from mcu_gen.errors import BuildError
from mcu_gen.firmware import flash_fit

BOARD = "mps2-an505"  # 4 MiB of flash

# An MLP whose first layer has 2,359,296 weights: generated (int16), 4.7 MB; on the library kernel 2.4 MB.
MODEL = '''
import torch
from torch import nn

class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.big = nn.Linear(2304, 1024)
        self.small = nn.Linear(1024, 64)
        self.head = nn.Linear(64, 8)

    def forward(self, x):
        return self.head(torch.relu(self.small(torch.relu(self.big(x)))))

def model():
    torch.manual_seed(0)
    return Mlp().eval()

def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(1, 2304, generator=g) * 2 - 1,) for _ in range(n)]

def example_inputs():
    return _inputs(1, 1)[0]

def test_inputs():
    return _inputs(2, 2)

def calibration_inputs():
    return _inputs(3, 8)
'''


def _layer(instruction, macs, weight_bytes, weights):
    return SimpleNamespace(instruction=instruction, macs=macs, weight_bytes=weight_bytes, weights=np.zeros(weights))


def test_linker_overflow_message_is_read():
    msg = ("/usr/bin/ld: firmware.elf section `.text' will not fit in region `FLASH'\n"
           "/usr/bin/ld: region `FLASH' overflowed by 2940600 bytes\ncollect2: error: ld returned 1 exit status")
    assert flash_fit.flash_excess(msg) == 2_940_600
    assert flash_fit.flash_excess("region `RAM' overflowed by 12 bytes") is None
    assert flash_fit.flash_excess("undefined reference to `foo'") is None


def test_layers_left_least_macs_per_byte_first():
    fc = _layer(5, macs=1_000, weight_bytes=2_000, weights=1_000)         # 1 MAC a saved byte
    conv = _layer(2, macs=100_000, weight_bytes=20_000, weights=10_000)   # 10
    fc2 = _layer(7, macs=500, weight_bytes=1_000, weights=500)            # 1, fewer bytes
    mve = _layer(9, macs=10, weight_bytes=4_000, weights=4_000)           # a reordered int8 copy: saves nothing
    layers = [conv, fc, fc2, mve]
    assert flash_fit.layers_to_leave(layers, 1) == [fc]
    assert flash_fit.layers_to_leave(layers, 1_001) == [fc, fc2]
    assert flash_fit.layers_to_leave(layers, 1_501) == [fc, fc2, conv]
    assert flash_fit.layers_to_leave(layers, 10**9) == [fc, fc2, conv]  # all that save any
    assert flash_fit.layers_to_leave([mve], 1) == []


def test_default_build_leaves_the_big_layer_to_fit_and_stays_bit_exact(qemu_tools, tmp_path):
    path = tmp_path / "mlp.py"
    path.write_text(MODEL)
    with pytest.raises(BuildError) as e:
        mcu_gen.build(str(path), board=BOARD, quantize="int8", kernels="generated", out=tmp_path / "gen")
    msg = str(e.value)
    assert f"the model does not fit {BOARD}: flash: needs " in msg and "bytes too many" in msg, msg
    assert "`--kernels auto` leaves generated layers to the library kernels" in msg, msg
    assert "overflowed" not in msg  # the linker's words are not the user's message

    r = mcu_gen.run(str(path), board=BOARD, quantize="int8", out=tmp_path / "auto", max_inputs=2)
    assert r.bit_exact is True and r.verified
    rep = json.loads((tmp_path / "auto" / "report.json").read_text())
    assert rep["flash_bytes"] <= 4 * 1024 * 1024
    gen = rep["generated_kernels"]
    left = [s for s in gen["skipped"] if s["reason"].startswith(flash_fit.LEFT)]
    assert len(left) == 1 and left[0]["op"] == "cortex_m::quantized_linear.out", gen["skipped"]
    assert "its generated weights take 4,718,592 B" in left[0]["reason"]
    assert sorted(l["shape"] for l in gen["layers"]) == ["1 x 1024 -> 64", "1 x 64 -> 8"]
    assert flash_fit.left_count(rep) == 1
    assert "left to the library kernel to fit mps2-an505's flash" in (tmp_path / "auto" / "report.md").read_text()
