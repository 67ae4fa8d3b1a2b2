"""What forward takes and returns, as people write it, on the host board (the firmware as a native process):
arguments nested in lists and dicts with numbers and None among them (the program takes the tensors; the
numbers are compiled in), results in dicts and namedtuples, a positional table computed in float64 inside
forward, and clear errors for float64 / float16 / bfloat16 models. Before: a list or a float argument was refused
("must return a tuple of tensors, got tuple"), a dict result failed the comparison ("cannot reshape array of
size 8 into shape ()"), a float64 model failed on the device (KernelFailed in mcu::linear), int8 quantization of
one stopped in a torchao assertion, and int8 failed on the float64 table."""
import textwrap

import pytest

import mcu_gen
from mcu_gen.capture.model_file import ModelFileError, StructuredModule, load_model_file
from mcu_gen.errors import McuGenError

HEADER = """\
import math
import torch
from torch import nn
"""
FOOTER = """
def model():
    torch.manual_seed(0)
    return Net().eval()


def example_inputs():
    return _inputs(1, 1)[0]


def test_inputs():
    return _inputs(2, 2)


def calibration_inputs():
    return _inputs(3, 8)
"""

STRUCTURED = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)
        self.b = nn.Linear(6, 4)

    def forward(self, feats, cfg, mask, extra=None):
        h = self.a(feats[0]) + self.b(feats[1])
        h = h.masked_fill(~mask, 0.0) * cfg["scale"]
        out = {"logits": h, "parts": (h.sum(-1), h.amax(-1))}
        if extra is not None:
            out["extra"] = extra
        return out


def _inputs(seed, n, scale=0.5):
    g = torch.Generator().manual_seed(seed)
    return [([torch.randn(3, 8, generator=g), torch.randn(3, 6, generator=g)], {"scale": scale},
             torch.rand(3, 4, generator=g) > 0.3, None) for _ in range(n)]
"""

POSITIONS_F64 = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        pos = torch.arange(x.shape[0], dtype=torch.float64).unsqueeze(1)
        div = torch.exp(torch.arange(0, 8, 2, dtype=torch.float64) * (-math.log(10000.0) / 8))
        pe = torch.cat([torch.sin(pos * div), torch.cos(pos * div)], 1).float()
        return self.fc(x + pe)


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(5, 8, generator=g),) for _ in range(n)]
"""


def _model(tmp_path, name, body, header=HEADER, footer=FOOTER):
    path = tmp_path / f"{name}.py"
    path.write_text(header + textwrap.dedent(body) + footer)
    return path


@pytest.mark.parametrize("quantize", [None, "int8"])
def test_nested_arguments_numbers_and_dict_results(tmp_path, quantize):
    path = _model(tmp_path, "structured", STRUCTURED)
    spec = load_model_file(path)
    assert isinstance(spec.module, StructuredModule)
    assert [tuple(t.shape) for t in spec.example_inputs] == [(3, 8), (3, 6), (3, 4)]  # the program's inputs
    r = mcu_gen.run(str(path), board="host", quantize=quantize, out=tmp_path / "out")
    assert r.verified and r.n_inferences == 2
    assert len(r.outputs[0]) == 3  # logits, and the two parts of the nested tuple
    if quantize:
        assert r.bit_exact is True


def test_a_number_argument_must_not_change(tmp_path):
    body = STRUCTURED + "\n\ndef _test(seed, n):\n    return _inputs(seed, n, scale=0.7)\n"
    path = _model(tmp_path, "structured", body, footer=FOOTER.replace("return _inputs(2, 2)", "return _test(2, 2)"))
    with pytest.raises(ModelFileError, match=r"item 0 of test_inputs\(\) gives 0.7 where example_inputs\(\) "
                                             r"gives 0.5: a number argument is compiled into the program"):
        load_model_file(path)


def test_an_argument_of_another_kind_is_named(tmp_path):
    body = STRUCTURED.replace('{"scale": scale}', '{"scale": object()}')
    with pytest.raises(ModelFileError, match=r"example_inputs\(\) holds a object: forward's arguments must be "
                                             r"tensors"):
        load_model_file(_model(tmp_path, "structured", body))


def test_a_dict_result_through_the_python_api(tmp_path):
    import torch

    class Heads(torch.nn.Module):
        def forward(self, x):
            return {"a": x.relu(), "b": x.sigmoid()}

    x = torch.randn(2, 3)
    r = mcu_gen.run(Heads(), example_inputs=(x,), test_inputs=[(x,)], name="heads", board="host", out=tmp_path / "a")
    assert r.verified and len(r.outputs[0]) == 2
    # a model file's nested inputs given through the API: nested like its example inputs
    path = _model(tmp_path, "structured", STRUCTURED)
    ns = {}
    exec(compile(HEADER + textwrap.dedent(STRUCTURED), "structured", "exec"), ns)
    r = mcu_gen.run(str(path), test_inputs=ns["_inputs"](5, 1), board="host", out=tmp_path / "b")
    assert r.verified and r.n_inferences == 1


@pytest.mark.parametrize("quantize", [None, "int8"])
def test_a_float64_table_in_forward_is_folded(tmp_path, quantize):
    r = mcu_gen.run(str(_model(tmp_path, "pe64", POSITIONS_F64)), board="host", quantize=quantize,
                    out=tmp_path / "out")
    assert r.verified and (quantize is None or r.bit_exact is True)


WIDE = {
    "double": ("self.fc = nn.Linear(8, 4).double()", "torch.tanh(self.fc(x))", "torch.float64",
               r"input x is a float64 tensor", r"parameter fc.weight is float64"),
    "half": ("self.fc = nn.Linear(8, 4).half()", "torch.relu(self.fc(x.half())).float()", "torch.float32",
             r"mcu::linear.default reads a float16 constant", r"parameter fc.weight is float16"),
    "bfloat16": ("self.fc = nn.Linear(8, 4)", "self.fc(x.to(torch.bfloat16).to(torch.float32))", "torch.float32",
                 r"aten::_to_copy.default gives a bfloat16 tensor", None),
}


@pytest.mark.parametrize("kind", sorted(WIDE))
def test_float64_float16_bfloat16_are_refused_with_the_operator_and_line(tmp_path, kind):
    layer, expr, dtype, fp32_error, int8_error = WIDE[kind]
    body = f"""
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        {layer}

    def forward(self, x):
        return {expr}


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, 8, generator=g, dtype={dtype}),) for _ in range(n)]
"""
    path = _model(tmp_path, kind, body)
    with pytest.raises(McuGenError, match=fp32_error) as e:
        mcu_gen.build(str(path), board="host", out=tmp_path / "fp32", compile=False)
    assert "Convert the model and its inputs to float32" in str(e.value)
    if "gives" in fp32_error or "reads" in fp32_error:
        assert f"{kind}.py:" in str(e.value)  # the user's line
    if int8_error:
        with pytest.raises(McuGenError, match=int8_error):
            mcu_gen.build(str(path), board="host", out=tmp_path / "int8", quantize="int8", compile=False)


def test_a_model_file_may_define_values_instead_of_functions(tmp_path):
    """`model = Net()` and `example_inputs = (x,)`, as a notebook cell would leave them; before, the module was
    called with no argument, or the file was refused ("must define a function `example_inputs()`")."""
    path = tmp_path / "values.py"
    path.write_text(HEADER + "torch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(8, 4), nn.ReLU())\n"
                             "example_inputs = (torch.randn(2, 8),)\ntest_inputs = [(torch.randn(2, 8),)]\n")
    r = mcu_gen.run(str(path), board="host", out=tmp_path / "out")
    assert r.verified and r.n_inferences == 1


def test_what_a_model_file_function_raises_is_named(tmp_path):
    path = tmp_path / "raises.py"
    path.write_text(HEADER + "def model():\n    return nn.Linear(8, 4)\n\n\ndef example_inputs():\n"
                             "    return torch.load('missing.pt')\n")
    with pytest.raises(ModelFileError, match=r"raises.py: example_inputs\(\) raised FileNotFoundError: .*missing.pt"):
        load_model_file(path)


PASSTHROUGH = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.register_buffer("table", torch.arange(4.0))

    def forward(self, x, unused):
        y = self.fc(x)
        return x, y, y, self.table


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, 8, generator=g), torch.randn(3, generator=g)) for _ in range(n)]
"""


@pytest.mark.parametrize("quantize,io", [(None, "float32"), ("int8", "float32"), ("int8", "int8")])
def test_inputs_buffers_and_repeated_results_returned_as_they_are(tmp_path, quantize, io):
    """forward returns its input, one result twice and a buffer unchanged, and ignores an input: int8 failed with
    'output table: not produced by the program' (a buffer returned as it is), and --io int8 with 'input unused:
    --io int8 needs the input to be quantized once (it feeds )' (nothing reads it: int8 with scale 1 now)."""
    r = mcu_gen.run(str(_model(tmp_path, "passthrough", PASSTHROUGH)), board="host", quantize=quantize, io=io,
                    out=tmp_path / "out")
    assert r.verified and len(r.outputs[0]) == 4
    assert list(r.outputs[0][3]) == [0.0, 1.0, 2.0, 3.0]


MAX_NORM = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.e = nn.Embedding(20, 6, max_norm=1.0, padding_idx=0)
        with torch.no_grad():
            self.e.weight.mul_(3.0)  # most rows above max_norm
        self.fc = nn.Linear(6, 2)

    def forward(self, ids):
        return self.fc(self.e(ids).mean(1))


def _inputs(seed, n):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, 20, (2, 7), generator=g),) for _ in range(n)]
"""


@pytest.mark.parametrize("quantize", [None, "int8"])
def test_embedding_with_max_norm(tmp_path, quantize):
    """nn.Embedding(max_norm=1.0) renormalizes the rows it looks up, in place, at every call: the export refused
    the parameter mutation ('the model mutates e.weight (PARAMETER_MUTATION)'). The table is renormalized once at
    build time (capture.export.renorm_embedding_tables): the same lookups, and the model's own weight untouched."""
    path = _model(tmp_path, "maxnorm", MAX_NORM)
    spec = load_model_file(path)
    before = spec.module.e.weight.detach().clone()
    assert float(before.norm(dim=1).max()) > 2.0  # rows above max_norm
    if quantize is None:  # (int8 calibration calls the model, which renormalizes the rows it looks up, as PyTorch does)
        mcu_gen.build(spec, board="host", out=tmp_path / "b", compile=False)
        assert spec.module.e.weight.equal(before)  # the build renormalized its own copy
    r = mcu_gen.run(spec, board="host", quantize=quantize, out=tmp_path / "out")
    assert r.verified and (quantize is None or r.bit_exact is True)
