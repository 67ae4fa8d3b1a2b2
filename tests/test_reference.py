"""Host reference interpreter: hand-built programs, planned arenas, ExecuTorch-exported programs."""
import numpy as np
import pytest
import torch
from torch import nn

from mcu_gen.capture.export import export_model
from mcu_gen.program.ir import Instruction, Program
from mcu_gen.capture.model_file import ModelSpec
from mcu_gen.reference.interpreter import ReferenceError
from mcu_gen.reference import run_reference


def _hand_built():
    """y = relu(x + c).view(6) ; x: [2, 3]"""
    p = Program()
    x = p.add_tensor((2, 3))
    c = p.add_tensor((3,), data=np.array([1.0, -2.0, 0.5], dtype=np.float32))
    s = p.add_tensor((2, 3))
    alpha = p.add_scalar("int", 1)
    p.instructions.append(Instruction("aten::add.out", [x, c, alpha, s, s]))
    r = p.add_tensor((2, 3))
    p.instructions.append(Instruction("aten::relu.out", [s, r, r]))
    v = p.add_tensor((6,))
    p.meta["aliases"] = {v: r}
    scale = p.add_scalar("float", 0.5)
    y = p.add_tensor((6,))
    p.instructions.append(Instruction("aten::mul.Scalar_out", [v, scale, y, y]))
    p.inputs, p.outputs = [x], [y]
    return p


def test_hand_built_program():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    (y,) = run_reference(_hand_built(), [x])
    expected = np.maximum(x + np.array([1.0, -2.0, 0.5], np.float32), 0).reshape(6) * 0.5
    np.testing.assert_array_equal(y, expected)


def test_planned_arena_gives_the_same_result():
    from mcu_gen.plan import inplace_pass

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.fc = nn.Linear(64, 5)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            y = nn.functional.max_pool2d(y, 2) + 1.0
            return self.fc(y.flatten(1))

    torch.manual_seed(0)
    net = Net().eval()
    x = torch.randn(1, 3, 8, 8)
    for fuse in (True, False):
        program = export_model(ModelSpec(net, (x,)), fuse=fuse)
        (unplanned,) = run_reference(program, [x.numpy()])
        inplace_pass.plan_memory(program)
        assert all(program.values[i].offset is not None for i in program.tensor_indices()
                   if not program.values[i].is_constant)
        (planned,) = run_reference(program, [x.numpy()])
        np.testing.assert_array_equal(planned, unplanned)
        np.testing.assert_allclose(planned, net(x).detach().numpy(), atol=1e-6)


def test_errors():
    p = _hand_built()
    with pytest.raises(ReferenceError, match="1 inputs, got 2"):
        run_reference(p, [np.zeros((2, 3), np.float32)] * 2)
    with pytest.raises(ReferenceError, match="shape"):
        run_reference(p, [np.zeros((3, 2), np.float32)])
    p.instructions[0] = Instruction("aten::no_such_op.out", p.instructions[0].args)
    with pytest.raises(ReferenceError, match="aten::no_such_op.out"):
        run_reference(p, [np.zeros((2, 3), np.float32)])


# -- interop with ExecuTorch (the executorch wheel is a test oracle only) -------------------------
class _Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        y = nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(y.flatten(1))


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(0)
    m = _Small().eval()
    m.bn.running_mean.uniform_(-0.2, 0.2)
    m.bn.running_var.uniform_(0.5, 1.5)
    return m, (torch.randn(1, 1, 6, 6),)


@pytest.fixture(scope="module")
def et_program(small):
    pytest.importorskip("executorch")
    from executorch.exir import to_edge_transform_and_lower

    m, inputs = small
    return to_edge_transform_and_lower(torch.export.export(m, inputs)).to_executorch().buffer


@pytest.mark.interop
def test_reference_runs_executorch_exported_pte(small, et_program):
    from mcu_gen.program import pte

    m, inputs = small
    program = pte.read(et_program)
    assert "aten::_native_batch_norm_legit_no_training.out" in program.operators
    (got,) = run_reference(program, [t.numpy() for t in inputs])
    np.testing.assert_allclose(got, m(*inputs).detach().numpy(), atol=1e-5)


@pytest.mark.interop
def test_argument_convention_matches_executorch(small, et_program):
    """Same argument kinds per operator as ExecuTorch's emitter (unfused program)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    et = deserialize_pte_binary(et_program)
    et = getattr(et, "program", et).execution_plan[0]
    et_kinds = {}
    for ins in et.chains[0].instructions:
        call = ins.instr_args
        op = et.operators[call.op_index]
        et_kinds[f"{op.name}.{op.overload}"] = [type(et.values[a].val).__name__ for a in call.args]

    m, inputs = small
    ours = export_model(ModelSpec(m, inputs), fuse=False)
    names = {"TensorValue": "Tensor", "int": "Int", "float": "Double", "bool": "Bool", "none": "Null",
             "int_list": "IntList", "tensor_list": "TensorList"}
    compared = 0
    for ins in ours.instructions:
        kinds = [names[type(v).__name__] if type(v).__name__ == "TensorValue" else names[v.kind]
                 for v in (ours.values[a] for a in ins.args)]
        if ins.op in et_kinds:
            assert kinds == et_kinds[ins.op], ins.op
            compared += 1
    assert compared == 4  # convolution, relu, max_pool2d_with_indices, addmm


@pytest.mark.interop
def test_unfused_program_runs_in_executorch_runtime(small):
    pytest.importorskip("executorch")
    from executorch.runtime import Runtime

    from mcu_gen.plan import inplace_pass
    from mcu_gen.program import pte

    m, inputs = small
    program = export_model(ModelSpec(m, inputs), fuse=False)
    inplace_pass.plan_memory(program)
    buf = pte.write(program)  # the runtime reads it in place: keep buf and et_program alive
    et_program = Runtime.get().load_program(buf)
    method = et_program.load_method("forward")
    (et_out,) = method.execute(list(inputs))
    (ref,) = run_reference(program, [t.numpy() for t in inputs])
    np.testing.assert_allclose(et_out.numpy(), ref, atol=1e-6)
    np.testing.assert_allclose(ref, m(*inputs).detach().numpy(), atol=1e-5)
