"""Export: model file -> IR Program (passes, fusion, lowering convention, errors)."""
import inspect
import math

import numpy as np
import pytest
import torch
from torch import nn

from mcu_gen.capture.export import ExportError, UnsupportedOperatorError, export_model
from mcu_gen.program.ir import ScalarValue
from mcu_gen.capture.model_file import ModelFileError, ModelSpec, load_model_file
from mcu_gen.paths import EXAMPLES
from mcu_gen.reference import run_reference

EXAMPLE_PARAMS = {
    "mnist": 5_258,
    "kws_dscnn": 23_756,
    "ic_resnet8": 78_186,
    "vww_mobilenet": 216_322,
    "ad_autoencoder": 267_928,
}
ACTIVATIONS = {"aten::relu.out", "aten::hardtanh.out", "aten::clamp.out"}


@pytest.fixture(scope="module")
def specs():
    return {name: load_model_file(EXAMPLES / name / "model.py") for name in EXAMPLE_PARAMS}


@pytest.fixture(scope="module")
def programs(specs):
    return {(name, fuse): export_model(spec, fuse=fuse) for name, spec in specs.items() for fuse in (True, False)}


def _producers(program):
    """value index -> instruction that writes it (single-output ops: the last arg is the out)."""
    out = {}
    for ins in program.instructions:
        out[ins.args[-1]] = ins
    return out


def _line_of(text, obj):
    lines, start = inspect.getsourcelines(obj)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)


# -- examples ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXAMPLE_PARAMS)
def test_example_model_files(specs, name):
    spec = specs[name]
    assert spec.name == name
    assert sum(p.numel() for p in spec.module.parameters()) == EXAMPLE_PARAMS[name]
    assert len(spec.calibration_inputs) == 8
    assert len(spec.test_inputs) == (2 if name == "vww_mobilenet" else 3)
    assert all(isinstance(t, tuple) for t in spec.test_inputs)


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("name", EXAMPLE_PARAMS)
def test_example_matches_eager(specs, programs, name, fuse):
    spec, program = specs[name], programs[(name, fuse)]
    for inputs in spec.test_inputs:
        expected = spec.module(*inputs).detach().numpy()
        (got,) = run_reference(program, [t.numpy() for t in inputs])
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("name", EXAMPLE_PARAMS)
def test_batchnorm_folded_and_dropout_gone(programs, name, fuse):
    ops = programs[(name, fuse)].operators
    assert not [op for op in ops if "batch_norm" in op], ops
    assert not [op for op in ops if "dropout" in op or "clone" in op], ops
    # no weight transposes at run time
    assert not [op for op in ops if "permute" in op or op.startswith("aten::t_copy")], ops


@pytest.mark.parametrize("name", EXAMPLE_PARAMS)
def test_fused_activations(programs, name):
    program = programs[(name, True)]
    producers = _producers(program)
    for ins in program.instructions:
        if ins.op in ACTIVATIONS:
            src = producers.get(ins.args[0])
            assert src is None or src.op not in ("mcu::conv2d.out", "mcu::linear.out"), ins
        assert not ins.op.startswith(("aten::convolution", "aten::addmm", "aten::mm", "aten::max_pool2d"))
    expected_relus = {"ic_resnet8": 3}.get(name, 0)  # only the ReLUs after the 3 residual adds remain
    assert sum(ins.op == "aten::relu.out" for ins in program.instructions) == expected_relus


def test_unfused_program_uses_standard_aten_ops(programs):
    program = programs[("mnist", False)]
    assert program.operators == [
        "aten::convolution.out", "aten::relu.out", "aten::max_pool2d_with_indices.out", "aten::addmm.out",
    ]
    addmm = [i for i in program.instructions if i.op == "aten::addmm.out"][0]
    weight = program.tensor(addmm.args[2])
    assert weight.is_constant and weight.shape == (400, 10)  # stored [in, out], pre-transposed
    # multi-output op: args, then the two out tensors, then a tensor_list of them (ExecuTorch's convention)
    pool = [i for i in program.instructions if i.op == "aten::max_pool2d_with_indices.out"][0]
    assert len(pool.args) == 6 + 2 + 1
    ret = program.values[pool.args[-1]]
    assert isinstance(ret, ScalarValue) and ret.kind == "tensor_list" and ret.value == pool.args[6:8]
    assert program.tensor(pool.args[7]).dtype == "int64"
    # kernel, stride, padding, dilation, ceil_mode: every argument stored, defaults filled in
    assert [program.values[a].value for a in pool.args[1:6]] == [[2, 2], [2, 2], [0, 0], [1, 1], False]


def test_fused_program_layout(specs, programs):
    program = programs[("mnist", True)]
    # conv -> ReLU -> 2x2 max pool is one operator (passes.fuse_conv_max_pool)
    assert program.operators == ["mcu::conv2d_max_pool2d.out", "mcu::linear.out"]
    conv = program.instructions[0]
    # input, weight, bias, stride, padding, dilation, groups, out_min, out_max, out, (return) out
    assert len(conv.args) == 11 and conv.args[-1] == conv.args[-2]
    kinds = [program.values[a].kind for a in conv.args[3:9]]
    assert kinds == ["int_list", "int_list", "int_list", "int", "float", "float"]
    assert program.values[conv.args[7]].value == 0.0 and math.isinf(program.values[conv.args[8]].value)
    np.testing.assert_array_equal(program.tensor(conv.args[1]).data, specs["mnist"].module[0].weight.detach().numpy())
    assert program.tensor(conv.args[-1]).shape == (1, 8, 13, 13)  # pooled: the 26x26 output is never stored
    linear = program.instructions[-1]
    assert program.tensor(linear.args[1]).shape == (10, 400)  # [out, in], what the kernel reads


def test_views_cost_nothing(programs):
    for fuse in (True, False):
        program = programs[("mnist", fuse)]
        assert len(program.instructions) == (3 if fuse else 7)
        (alias,) = program.meta["aliases"].items()
        view, src = alias
        assert program.tensor(view).shape == (1, 400) and program.tensor(src).shape == (1, 16, 5, 5)
        assert not any("view" in op for op in program.operators)


def test_source_lines_point_at_the_model_file(programs):
    program = programs[("ic_resnet8", True)]
    path = str(EXAMPLES / "ic_resnet8" / "model.py")
    add = [i for i in program.instructions if i.op == "aten::add.out"][0]
    assert add.source.startswith(path + ":") and "y + self.shortcut(x)" in add.source
    assert all(i.source for i in program.instructions)


# -- small models defined here ------------------------------------------------------------------
class _Scalars(nn.Module):
    def forward(self, x):
        y = x * 2 + 1
        z = nn.functional.relu6(y).reshape(2, 8)
        return z.t(), x.view(16), torch.cat([y, y], 1)


def test_scalars_views_outputs():
    x = torch.randn(4, 4)
    program = export_model(ModelSpec(_Scalars(), (x,)))
    ops = [i.op for i in program.instructions]
    assert ops[:2] == ["aten::mul.Scalar_out", "aten::add.Scalar_out"]
    assert "aten::permute_copy.out" in ops  # a transposing view is a real copy
    assert ops[-1] == "aten::clone.out"  # output that is a view of the input gets its own buffer
    assert len(program.outputs) == 3
    for got, want in zip(run_reference(program, [x.numpy()]), _Scalars()(x)):
        np.testing.assert_array_equal(got, want.numpy())


class _LinearRelu6(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.conv = nn.Conv2d(1, 2, 3)

    def forward(self, x, img):
        a = nn.functional.relu6(self.fc(x))
        b = torch.clamp(self.conv(img), -0.5, 0.25)
        return a, torch.relu(b)


def test_relu6_and_clamp_fuse_into_bounds():
    torch.manual_seed(0)
    m = _LinearRelu6().eval()
    x, img = torch.randn(2, 8) * 4, torch.randn(1, 1, 6, 6)
    program = export_model(ModelSpec(m, (x, img)))
    assert program.operators == ["mcu::linear.out", "mcu::conv2d.out"]
    lin, conv = program.instructions
    assert [program.values[a].value for a in lin.args[3:5]] == [0.0, 6.0]
    assert [program.values[a].value for a in conv.args[7:9]] == [0.0, 0.25]  # clamp then relu
    for got, want in zip(run_reference(program, [x.numpy(), img.numpy()]), m(x, img)):
        np.testing.assert_allclose(got, want.detach().numpy(), atol=1e-6)


class _Nonzero(nn.Module):
    def forward(self, x):
        return torch.nonzero(x)


def test_unsupported_op_names_op_and_source_line():
    with pytest.raises(UnsupportedOperatorError) as e:
        export_model(ModelSpec(_Nonzero(), (torch.randn(4),)))
    msg = str(e.value)
    assert "aten::nonzero.default" in msg
    assert f"{__file__}:{_line_of('torch.nonzero(x)', _Nonzero)}: return torch.nonzero(x)" in msg


class _Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)

    def forward(self, x):
        return self.conv(x) + x


def test_has_kernel_rejects_op():
    spec = ModelSpec(_Residual().eval(), (torch.randn(1, 2, 4, 4),))
    asked = []

    def has_kernel(op):
        asked.append(op)
        return op != "aten::add.out"

    with pytest.raises(UnsupportedOperatorError) as e:
        export_model(spec, has_kernel=has_kernel)
    msg = str(e.value)
    assert "aten::add.Tensor" in msg and "aten::add.out" in msg
    assert f"{__file__}:{_line_of('self.conv(x) + x', _Residual)}" in msg
    assert asked[0] == "mcu::conv2d.out"
    program = export_model(spec, has_kernel=lambda op: True)
    assert program.operators == ["mcu::conv2d.out", "aten::add.out"]


class _Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


def test_data_dependent_control_flow_is_a_clear_error(tmp_path):
    spec = ModelSpec(_Branchy(), (torch.randn(3),), name="branchy", path=str(tmp_path / "model.py"))
    with pytest.raises(ExportError) as e:
        export_model(spec)
    assert "branchy" in str(e.value) and "model.py" in str(e.value) and "torch.export" in str(e.value)


# -- model files ----------------------------------------------------------------------------------
def test_model_file_errors(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        load_model_file(tmp_path / "missing.py")
    f = tmp_path / "nomodel.py"
    f.write_text("import torch\ndef example_inputs():\n    return (torch.zeros(1),)\n")
    with pytest.raises(ModelFileError, match=r"model\(\)"):
        load_model_file(f)
    f = tmp_path / "wrong.py"
    f.write_text("import torch\ndef model():\n    return 3\ndef example_inputs():\n    return (torch.zeros(1),)\n")
    with pytest.raises(ModelFileError, match="nn.Module"):
        load_model_file(f)
    f = tmp_path / "badinputs.py"
    f.write_text("import torch\ndef model():\n    return torch.nn.ReLU()\ndef example_inputs():\n    return [1, 2]\n")
    with pytest.raises(ModelFileError, match="holds no tensor: the program needs at least one tensor input"):
        load_model_file(f)  # numbers alone (they would be compiled in)


def test_pt2_model_file(tmp_path):
    m = _Residual().eval()
    x = torch.randn(1, 2, 4, 4)
    path = tmp_path / "residual.pt2"
    torch.export.save(torch.export.export(m, (x,)), str(path))
    spec = load_model_file(path)
    assert spec.module is None and spec.name == "residual" and spec.test_inputs is None
    program = export_model(spec)
    (got,) = run_reference(program, [x.numpy()])
    np.testing.assert_allclose(got, m(x).detach().numpy(), atol=1e-6)


class _Assorted(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.bn_alone = nn.BatchNorm2d(4)
        self.conv1d = nn.Conv1d(4, 2, 3)
        self.bn1d = nn.BatchNorm1d(2)
        self.seq_fc = nn.Linear(4, 5, bias=False)
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))  # conv without bias + BN: folding creates the bias
        y = self.bn_alone(y + 1.0)  # nothing to fold into: stays a batch-norm op
        z = self.bn1d(self.conv1d(y.mean(dim=2)))  # Conv1d stays aten::convolution, BN folds into it
        z = nn.functional.hardtanh(self.seq_fc(z.reshape(1, 2, 4)), -0.5, 0.5)  # 3-D linear, no bias
        return self.fc(z).sum(dim=1)


def test_assorted_layers_match_eager():
    torch.manual_seed(0)
    m = _Assorted().eval()
    for bn in (m.bn, m.bn_alone, m.bn1d):
        bn.running_mean.uniform_(-0.3, 0.3)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.data.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 8, 12)
    for fuse in (True, False):
        program = export_model(ModelSpec(m, (x,)), fuse=fuse)
        batch_norms = [op for op in program.operators if "batch_norm" in op]
        assert batch_norms == ["aten::_native_batch_norm_legit_no_training.out"]
        (got,) = run_reference(program, [x.numpy()])
        np.testing.assert_allclose(got, m(x).detach().numpy(), atol=1e-5)
        if fuse:
            assert "aten::hardtanh.out" not in program.operators
            assert "aten::convolution.out" in program.operators  # the 1-D convolution


def test_dynamic_input_shape_is_a_clear_error():
    x = torch.randn(2, 2, 4, 4)
    ep = torch.export.export(_Residual().eval(), (x,),
                             dynamic_shapes=({0: torch.export.Dim("batch", min=2, max=8)},))
    with pytest.raises(ExportError, match="dynamic shape"):
        export_model(ModelSpec(None, (x,), exported_program=ep))
