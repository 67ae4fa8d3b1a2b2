"""HELLO's TENSOR_INFO reports the scale and zero point of each int8 input/output of the builtin program
(flags bit 0, docs/protocol.md), and the runner refuses a device whose parameters are not the build's."""
import copy

import numpy as np
import pytest

from mcu_gen.firmware.builder import build
from mcu_gen.firmware.project import quant_io
from mcu_gen.device.qemu import QemuSession
from mcu_gen.device.runner import check_device_quant_params


def test_quant_io_table_is_exact_float32():
    from mcu_gen.program.ir import Program

    p = Program()
    a = p.add_tensor((1, 4), "int8")
    b = p.add_tensor((1, 2), "float32")
    c = p.add_tensor((1, 2), "int8")
    p.tensor(a).scale, p.tensor(a).zero_point = 1.0, -128
    p.tensor(c).scale, p.tensor(c).zero_point = 0.1, 5
    p.inputs, p.outputs = [a], [b, c]
    rows = quant_io(p)
    assert rows == [dict(is_output=0, index=0, scale="0x1.0000000000000p+0f", zero_point=-128),
                    dict(is_output=1, index=1, scale=float(np.float32(0.1)).hex() + "f", zero_point=5)]
    assert float.fromhex(rows[1]["scale"][:-1]) == float(np.float32(0.1))


@pytest.mark.parametrize("io", ["int8", "float32"])
def test_device_reports_the_builds_quant_params(qemu_tools, tmp_path, io):
    r = build("examples/mnist/model.py", board="mps2-an505", quantize="int8", io=io, out=tmp_path / "fw")
    p = r.program
    with QemuSession(r.board, r.elf) as link:
        hello = link.hello()
        link.exit(0)
    infos = hello.inputs + hello.outputs
    tensors = [p.tensor(i) for i in p.inputs + p.outputs]
    assert len(infos) == len(tensors) == 2
    for info, t in zip(infos, tensors):
        assert info.dtype == t.dtype
        if io == "int8":
            assert info.scale == float(np.float32(t.scale)) and info.zero_point == t.zero_point
        else:  # fp32 I/O: nothing reported, as before
            assert info.scale is None and info.zero_point is None
    check_device_quant_params(hello, p)
    if io == "int8":
        other = copy.deepcopy(p)
        zp = other.tensor(other.outputs[0]).zero_point
        other.tensor(other.outputs[0]).zero_point = zp + 1
        with pytest.raises(RuntimeError, match=rf"output 0: the device reports scale .* / zero point {zp}, the build "
                                               rf"quantized it with scale .* / zero point {zp + 1}"):
            check_device_quant_params(hello, other)
        other = copy.deepcopy(p)
        other.tensor(other.inputs[0]).scale *= 1.001
        with pytest.raises(RuntimeError, match="input 0: .*the firmware does not match this build"):
            check_device_quant_params(hello, other)
