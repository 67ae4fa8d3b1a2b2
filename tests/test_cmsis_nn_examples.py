"""The examples int8 end to end on CMSIS-NN: device outputs == the host integer reference
(mcu_gen.quantize.reference), bit for bit, on the M33 (DSP), M55 (MVE) and M4 (DSP) boards.
Needs MCU_GEN_CMSIS_NN (skips with the reason otherwise)."""
from __future__ import annotations

import numpy as np
import pytest

from mcu_gen.firmware import builder
from test_cmsis_nn import CMSIS, i8, needs_cmsis, needs_qemu


# -- examples end to end: device (CMSIS-NN) == host integer reference ---------------------------

@needs_cmsis
@needs_qemu
@pytest.mark.parametrize("board", ["mps2-an505", "mps3-an547", "mps2-an386"])
@pytest.mark.parametrize("example", ["mnist", "kws_dscnn", "ic_resnet8", "vww_mobilenet", "ad_autoencoder"])
def test_example_int8_bit_exact_with_host_reference(example, board, tmp_path):
    from mcu_gen.device.qemu import QemuSession
    from mcu_gen.reference.integer import run_int8_reference

    r = builder.build(f"examples/{example}/model.py", board=board, out=tmp_path / board, quantize="int8", io="int8",
                      backend="cmsis-nn", cmsis_nn_path=CMSIS)
    assert r.report["backend"]["chosen"] == "cmsis-nn"
    rng = np.random.default_rng(3)
    ins = [i8(rng, *r.program.tensor(i).shape) for i in r.program.inputs]
    want = [np.asarray(o) for o in run_int8_reference(r.program, ins)]
    with QemuSession(r.board, r.elf) as link:
        link.hello()
        got, _ = link.infer(ins)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w, err_msg=f"{example} on {board}: device != host reference")
