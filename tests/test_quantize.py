"""int8 quantization on the host: mcu-gen's PT2E Quantizer, the lowering to cortex_m:: ops and
the integer reference, against the PT2E fake-quant model and the fp32 model (no QEMU here)."""
import numpy as np
import pytest
import torch
from torch import nn

from mcu_gen.errors import BuildError
from mcu_gen.firmware.builder import load_program
from mcu_gen.capture.model_file import ModelSpec, load_model_file
from mcu_gen.quantize import QuantizeError, export_quantized, quantized_module
from mcu_gen.quantize.capture import capture_for_quantization
from mcu_gen.quantize.quantizer import McuQuantizer
from mcu_gen.reference.integer import dequantize_f32, quantize_f32, run_int8_reference


def _spec(net, shape, n_cal=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    cal = [(torch.randn(shape, generator=g),) for _ in range(n_cal)]
    return ModelSpec(net.eval(), (torch.randn(shape, generator=g),), calibration_inputs=cal, name="t")


def _check_close(spec, program, gm, inputs, rel=0.05):
    """Integer reference vs fake-quant (within 2 output steps) and vs fp32 (a few % of the range)."""
    in_t, out_t = program.tensor(program.inputs[0]), program.tensor(program.outputs[0])
    for x in inputs:
        xin = x[0].numpy()
        if in_t.dtype == "int8":
            xin = quantize_f32(xin, in_t.scale, in_t.zero_point)
        got = run_int8_reference(program, [xin])[0]
        if out_t.dtype == "int8":
            got = dequantize_f32(got, out_t.scale, out_t.zero_point)
        fq = gm(*x).detach().numpy()
        fp = spec.module(*x).detach().numpy()
        assert got.shape == fp.shape
        assert np.max(np.abs(got - fq)) <= 2.01 * _output_scale(gm)
        assert np.max(np.abs(got - fp)) <= rel * max(1.0, float(np.max(np.abs(fp))))


def _output_scale(gm):
    q = [n for n in gm.graph.nodes if n.target is torch.ops.quantized_decomposed.dequantize_per_tensor.default]
    return float(q[-1].args[1])


@pytest.mark.parametrize("name", ["mnist", "kws_dscnn"])
@pytest.mark.parametrize("io", ["float32", "int8"])
def test_examples_lower_to_int8_only(name, io):
    spec = load_model_file(f"examples/{name}/model.py")
    program, gm = export_quantized(spec, io=io)
    assert program.meta["fp32_fallback"] == []
    ops = set(program.operators)
    assert all(op.startswith("cortex_m::") for op in ops)
    assert ("cortex_m::quantize_per_tensor.out" in ops) == (io == "float32")
    inp = program.tensor(program.inputs[0])
    assert inp.dtype == io and inp.dim_order == (0, 2, 3, 1)
    _check_close(spec, program, gm, spec.test_inputs[:2])


def test_first_conv_with_one_input_channel_is_a_regular_conv():
    spec = load_model_file("examples/kws_dscnn/model.py")
    program, _ = export_quantized(spec)
    convs = [i.op for i in program.instructions if "conv2d" in i.op]
    assert convs[0] == "cortex_m::quantized_conv2d.out"
    assert convs.count("cortex_m::quantized_depthwise_conv2d.out") == 4
    assert convs.count("cortex_m::quantized_conv2d.out") == 5
    first = program.instructions[[i.op for i in program.instructions].index(convs[0])]
    w = program.tensor(first.args[1])
    assert w.shape == (64, 10, 4, 1)  # OHWI


def test_int8_io_carries_quant_params_and_matches_float_io():
    spec = load_model_file("examples/mnist/model.py")
    p_f, gm = export_quantized(spec, io="float32")
    p_i, _ = export_quantized(spec, io="int8")
    t_in, t_out = p_i.tensor(p_i.inputs[0]), p_i.tensor(p_i.outputs[0])
    assert t_in.dtype == t_out.dtype == "int8"
    assert t_in.scale > 0 and -128 <= t_in.zero_point <= 127
    x = spec.test_inputs[0][0].numpy()
    y_f = run_int8_reference(p_f, [x])[0]
    y_i = run_int8_reference(p_i, [quantize_f32(x, t_in.scale, t_in.zero_point)])[0]
    assert np.array_equal(dequantize_f32(y_i, t_out.scale, t_out.zero_point), y_f)
    # no fp32 I/O buffers: every arena tensor of the int8-I/O program is int8 (or empty scratch)
    assert all(v.dtype in ("int8", "uint8", "int32") for v in p_i.values if hasattr(v, "dtype"))


def test_residual_add_and_fused_relu6():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(4, 8, 3, padding=1)
            self.b = nn.Conv2d(4, 8, 1)
            self.fc = nn.Linear(8 * 6 * 6, 5)

        def forward(self, x):
            y = torch.relu(nn.functional.relu6(self.a(x)) + self.b(x))
            return self.fc(torch.flatten(y, 1))

    torch.manual_seed(0)
    spec = _spec(Net(), (1, 4, 6, 6))
    program, gm = export_quantized(spec)
    ops = [i.op for i in program.instructions]
    assert "cortex_m::quantized_add.out" in ops
    assert program.meta["fp32_fallback"] == []
    _check_close(spec, program, gm, spec.calibration_inputs[:3], rel=0.1)


def test_op_without_int8_kernel_falls_back_to_fp32_and_is_reported():
    """layer_norm has no int8 kernel: an fp32 island (dequantize -> core-ATen kernels -> quantize),
    reported with its reason and kernels; sigmoid is an int8 lookup table."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 16)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(torch.sigmoid(nn.functional.layer_norm(self.fc1(x), (16,))))

    torch.manual_seed(0)
    spec = _spec(Net(), (2, 16))
    program, gm = export_quantized(spec)
    fb = program.meta["fp32_fallback"]
    assert [f["op"] for f in fb] == ["aten::layer_norm.default"]
    assert fb[0]["reason"] == "no int8 kernel for aten::layer_norm.default"
    assert fb[0]["kernels"] == ["cortex_m::dequantize_per_tensor.out", "aten::native_layer_norm.out"]
    assert fb[0]["fp32_bytes"] > 0
    ops = [i.op for i in program.instructions]
    assert ops.count("cortex_m::dequantize_per_tensor.out") == 2 and "aten::native_layer_norm.out" in ops
    assert "cortex_m::quantized_activation.out" in ops and "aten::sigmoid.out" not in ops
    _check_close(spec, program, gm, spec.calibration_inputs[:3], rel=0.1)


def test_no_calibration_data_is_a_clear_error(tmp_path):
    spec = load_model_file("examples/mnist/model.py")
    spec.calibration_inputs = None
    with pytest.raises(QuantizeError, match="needs calibration data.*calibration_inputs\\(\\).*--calibration"):
        quantized_module(spec)
    bad = tmp_path / "cal.pt"
    torch.save([(torch.rand(1, 1, 28, 28), torch.rand(1))], bad)
    with pytest.raises(QuantizeError, match="item 0 has 2 inputs, the model takes 1"):
        quantized_module(spec, calibration=bad)
    good = tmp_path / "good.pt"
    torch.save([(torch.rand(1, 1, 28, 28),) for _ in range(4)], good)
    gm, pre = quantized_module(spec, calibration=good)
    assert not pre


def test_builder_options_are_checked():
    with pytest.raises(BuildError, match="--io int8 and --calibration need --quantize int8"):
        load_program("examples/mnist/model.py", io="int8")
    with pytest.raises(BuildError, match="only int8"):
        load_program("examples/mnist/model.py", quantize="int4")


def test_qat_converted_model_is_taken_as_is(tmp_path):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_qat_pt2e

    spec = load_model_file("examples/mnist/model.py")
    gm = capture_for_quantization(spec.module.train(), spec.example_inputs, fold_bn=False)
    prepared = prepare_qat_pt2e(gm, McuQuantizer(qat=True))
    opt = torch.optim.SGD(prepared.parameters(), lr=1e-3)
    for (x,) in spec.calibration_inputs[:4]:  # a few QAT steps
        loss = prepared(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    converted = convert_pt2e(prepared)
    qspec = ModelSpec(converted, spec.example_inputs, name="qat")
    program, gm2 = export_quantized(qspec)
    assert gm2 is converted and program.meta["prequantized"]
    assert program.meta["fp32_fallback"] == []
    x = spec.test_inputs[0][0]
    got = run_int8_reference(program, [x.numpy()])[0]
    assert np.max(np.abs(got - converted(x).detach().numpy())) <= 2.01 * _output_scale(converted)
    # the same model saved as a .pt2 loads and lowers identically
    path = tmp_path / "qat.pt2"
    torch.export.save(torch.export.export(converted, spec.example_inputs), str(path))
    program2, _ = export_quantized(load_model_file(path))
    assert np.array_equal(run_int8_reference(program2, [x.numpy()])[0], got)


def test_averages_with_parameters_of_their_own_lower_to_int8():
    """A graph quantized elsewhere (XNNPACK's quantizer gives averages an output observer of their own):
    avg_pool2d, adaptive_avg_pool2d and mean with other output parameters than their input's lower to a
    depthwise convolution with a weight of ones (int32 window sums, one requantization), not an fp32
    island; a ceil-mode pool whose last windows hold fewer taps to the average then a table. Integer
    reference within two output steps of the PT2E graph and 5% of fp32 at the output."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import QuantizationAnnotation

    from mcu_gen.quantize.quantizer import activation_spec

    aten = torch.ops.aten
    averages = {aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default, aten.mean.dim}

    class OwnAverages(McuQuantizer):
        def annotate(self, model):
            super().annotate(model)
            for n in model.graph.nodes:
                if n.op == "call_function" and n.target in averages:
                    n.meta["quantization_annotation"] = QuantizationAnnotation(
                        input_qspec_map={n.args[0]: activation_spec()}, output_qspec=activation_spec(), _annotated=True)
            return model

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 6, 3, padding=1)
            self.fc = nn.Linear(6, 4)

        def forward(self, x):
            y = torch.relu(self.c(x))
            a = nn.functional.avg_pool2d(y, 2)                      # 8x8 -> 4x4, full windows
            b = nn.functional.avg_pool2d(y, 3, stride=2, ceil_mode=True)  # last windows past the end
            s = nn.functional.adaptive_avg_pool2d(a, 1).flatten(1) + b.mean(dim=(2, 3))
            return self.fc(s)

    torch.manual_seed(0)
    spec = _spec(Net(), (1, 3, 8, 8))
    gm = capture_for_quantization(spec.module, spec.example_inputs)
    prepared = prepare_pt2e(gm, OwnAverages())
    with torch.no_grad():
        for x in spec.calibration_inputs:
            prepared(*x)
    converted = convert_pt2e(prepared)
    program, _ = export_quantized(ModelSpec(converted, spec.example_inputs, name="own_averages"))
    assert program.meta["fp32_fallback"] == []
    ops = [i.op for i in program.instructions]
    assert ops.count("cortex_m::quantized_depthwise_conv2d.out") == 3  # avg_pool2d(2), adaptive, mean
    assert "cortex_m::quantized_avg_pool2d.out" in ops  # the ceil-mode pool, then its table
    for (x,) in spec.calibration_inputs[:3]:
        got = run_int8_reference(program, [x.numpy()])[0]
        fq = converted(x).detach().numpy()
        assert np.max(np.abs(got - fq)) <= 2.01 * _output_scale(converted)
        fp = spec.module(x).detach().numpy()
        assert np.max(np.abs(got - fp)) <= 0.05 * max(1.0, float(np.max(np.abs(fp))))


def _int8_program(path):
    spec = load_model_file(path)
    program, gm = export_quantized(spec, io="int8")
    return spec, program, gm


def test_conv1d_network_stays_channels_last_and_folds_its_dilations():
    """A TCN (tests/models_int8/tcn_dilated.py): its causal F.pad, residual adds and x[:, :, -1] run on the Conv1d
    outputs' channels-last bytes, so only the graph input is transposed; its dilated Conv1d layers of stride 1 (padding
    and length multiples of the dilation) are k x 1 convolutions without dilation over the length folded into rows
    of the dilation; the one whose padding is not a multiple keeps its dilation."""
    spec, program, gm = _int8_program("tests/models_int8/tcn_dilated.py")
    assert program.meta["fp32_fallback"] == []
    # the only transposes bring the graph input ([1, 3, 96], row-major) to channels-last for the first Conv1d layers
    moved = [program.tensor(i.args[0]).shape for i in program.instructions if i.op == "cortex_m::transpose.out"]
    assert moved and all(s[1] == 3 for s in moved), moved
    convs = [i for i in program.instructions if "conv2d" in i.op]
    dilations = [program.values[i.args[5]].value for i in convs]
    assert dilations.count([1, 2]) == 1 and all(d in ([1, 1], [1, 2]) for d in dilations)
    folded = [(program.tensor(i.args[0]).shape, program.tensor(i.args[1]).shape) for i in convs
              if program.tensor(i.args[0]).shape[3] in (2, 4, 8) and program.values[i.args[5]].value == [1, 1]]
    # dilations 2, 4, 8: two convolutions each, plus the depthwise one of dilation 4 (weights IHWO)
    assert sorted(x[3] for x, _ in folded) == [2, 2, 4, 4, 4, 8, 8]
    assert all(w[1:3] in ((3, 1), (5, 1)) for _, w in folded)
    pads = [i for i in program.instructions if i.op == "aten::constant_pad_nd.out"]
    # after the graph input's, each pads the length of channels-last bytes: widths (0, 0) for the channels first
    assert len(pads) == 8 and pads[0].args[0] == program.inputs[0]
    assert all(program.values[i.args[1]].value[:3] == [0, 0, 2 * 2 ** (k // 2)] for k, i in enumerate(pads[1:], 1))
    _check_close(spec, program, gm, spec.test_inputs)


def test_linear_over_a_channels_last_view_writes_logical_order():
    """ConvNeXt's Linear layers over x.permute(0, 2, 3, 1) (tests/models_int8/convnext_block.py): 4-dim outputs in
    logical order (the kernel writes rows of features; a channels-last output failed on the device), and the
    LayerNorm island's int8 result, read only by a Linear, is not transposed to channels-last and back."""
    spec, program, gm = _int8_program("tests/models_int8/convnext_block.py")
    linears = [i for i in program.instructions if i.op == "cortex_m::quantized_linear.out"]
    outs = [program.tensor(i.args[11]) for i in linears]
    assert [len(t.shape) for t in outs] == [4, 4, 4, 4, 2]
    assert all(t.dim_order in (None, tuple(range(len(t.shape)))) for t in outs)
    assert "cortex_m::transpose.out" not in [i.op for i in program.instructions]
    _check_close(spec, program, gm, spec.test_inputs)


def test_one_d_pools_run_in_int8_on_channels_last_bytes():
    """max_pool1d (ceil_mode and padding too), avg_pool1d and AdaptiveAvgPool1d after Conv1d layers
    (tests/models_int8/audio_m5.py): int8 pools over [N, C, 1, L] views of the Conv1d outputs' channels-last bytes,
    so nothing falls back to fp32 and only the graph input ([1, 1, 1600]: the same bytes) could need a transpose."""
    spec, program, gm = _int8_program("tests/models_int8/audio_m5.py")
    assert program.meta["fp32_fallback"] == []
    ops = [i.op for i in program.instructions]
    assert "cortex_m::transpose.out" not in ops
    assert ops.count("cortex_m::quantized_max_pool2d.out") == 2 and ops.count("cortex_m::quantized_avg_pool2d.out") == 3
    pools = [i for i in program.instructions if "pool2d" in i.op]
    assert all(program.tensor(i.args[0]).shape[2] == 1 and program.values[i.args[1]].value[0] == 1 for i in pools)
    _check_close(spec, program, gm, spec.test_inputs)


def test_multihead_attention_without_a_mask_runs_in_int8():
    """nn.MultiheadAttention (tests/models_int8/mha_encoder.py) calls scaled_dot_product_attention, whose PyTorch
    decomposition (a softmax that zeroes rows of -inf: eq, logical_not, any, where) was an fp32 island; without a
    mask it is q @ k^T * scale, softmax, @ v in int8: two quantized_batch_matmul and the int8 softmax."""
    spec, program, gm = _int8_program("tests/models_int8/mha_encoder.py")
    ops = [i.op for i in program.instructions]
    assert ops.count("cortex_m::quantized_batch_matmul.out") == 2 and ops.count("cortex_m::softmax.out") == 1
    islands = [f["op"] for f in program.meta["fp32_fallback"]]
    assert islands and all(op == "aten::layer_norm.default" for op in islands), islands
    # the residual adds: MultiheadAttention's [L, 1, E] -> [1, L, E] only moves a dim of size 1, so both operands
    # and the sum are row-major (the generated add takes them; it refuses operands of different orders)
    adds = [i for i in program.instructions if i.op == "cortex_m::quantized_add.out"]
    orders = {program.tensor(i.args[k]).dim_order or tuple(range(3)) for i in adds for k in (0, 4, 13)
              if len(program.tensor(i.args[k]).shape) == 3}
    assert len(adds) >= 2 and orders == {(0, 1, 2)}, orders
    _check_close(spec, program, gm, spec.test_inputs)


def test_attention_with_a_mask_keeps_pytorchs_decomposition():
    """scaled_dot_product_attention with an additive mask is not expanded (a row of -inf would differ): it stays an
    fp32 island and still matches."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)
            self.register_buffer("mask", torch.triu(torch.full((5, 5), -1e4), 1))

        def forward(self, x):
            q, k, v = self.qkv(x).unflatten(-1, (3, 8)).unbind(-2)
            return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)

    spec = _spec(Net(), (1, 5, 8))
    program, gm = export_quantized(spec)
    assert "cortex_m::quantized_batch_matmul.out" not in [i.op for i in program.instructions]
    assert any("scaled_dot_product" in f["op"] or "softmax" in f["op"] or "bmm" in f["op"]
               for f in program.meta["fp32_fallback"])
    _check_close(spec, program, gm, [spec.example_inputs])


def test_chunk_split_unbind_and_channel_shuffle_run_in_int8():
    """tests/models_int8/shuffle_split.py: chunk, split with sizes and unbind were fp32 islands (the quantizer left
    their parts unquantized); now each part read is an int8 byte copy on the channels-last bytes, and a channel
    shuffle (view to 5 dims, transpose, contiguous, view back: three transposes) is one transpose of the
    [H, W, groups, C / groups] memory view into [H, W, C / groups, groups]."""
    spec, program, gm = _int8_program("tests/models_int8/shuffle_split.py")
    assert program.meta["fp32_fallback"] == []
    ops = [i.op for i in program.instructions]
    assert ops.count("aten::slice_copy.Tensor_out") == 6  # two chunks of two parts, a split of two
    assert ops.count("aten::select_copy.int_out") == 3  # unbind: the three rows the head reads
    shuffles = [i for i in program.instructions if i.op == "cortex_m::transpose.out"]
    assert len(shuffles) == 2
    for i in shuffles:
        assert program.tensor(i.args[0]).shape == (8, 8, 2, 8) and program.values[i.args[1]].value == [0, 1, 3, 2]
    _check_close(spec, program, gm, spec.test_inputs)


def test_view_refinement_and_orders():
    """layouts.refinement: the finest shape two shapes are merges of; order_over: a view's order over the fine dims
    of the bytes, or None where it needs a copy."""
    from mcu_gen.quantize.layouts import order_over, refinement

    fine, a, s = refinement((1, 16, 8, 8), (1, 2, 8, 8, 8))
    assert fine == [2, 8, 8, 8] and a == [[], [0, 1], [2], [3]] and s == [[], [0], [1], [2], [3]]
    assert refinement((2, 3), (3, 2)) is None and refinement((0, 4), (4, 0)) is None
    # NCHW [1, 16, 8, 8] in channels-last memory: fine dims in memory order H, W, G, C / G
    nhwc_fine = [f for d in (0, 2, 3, 1) for f in a[d]]
    assert order_over(nhwc_fine, s) == (0, 3, 4, 1, 2)  # the 5-dim view is the same bytes
    assert order_over(nhwc_fine, [[], [0, 1], [2, 3]]) == (0, 2, 1)  # [1, 16, 64]: H * W outer, C inner
    assert order_over(nhwc_fine, [[], [0, 1, 2], [3]]) is None  # [1, 16 * 8, 8]: C * H is not one run of bytes
    assert order_over([2, 3, 0, 1], [[], [0, 1], [2], [3]], prefer=(0, 2, 3, 1)) == (0, 2, 3, 1)


class _GruFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 8, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(self.gru(x)[0][:, -1])


class _NormFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(6)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(self.norm(x)) + self.fc(x)


@pytest.mark.parametrize("net,shape", [(_GruFirst, (1, 5, 4)), (_NormFirst, (1, 4, 6))], ids=["gru", "layer_norm"])
def test_int8_io_input_read_by_an_fp32_island(net, shape):
    """--io int8 with a graph input that an fp32 island reads (nn.GRU, a LayerNorm): it was 'needs the input to be
    quantized once'. The input now gets an observer of its own, shared by its int8 readers: one int8 input, the
    islands read it dequantized. With float32 I/O the island still reads the float input as it is."""
    torch.manual_seed(3)
    spec = _spec(net(), shape, n_cal=32)
    program, gm = export_quantized(spec, io="int8")
    (inp,) = program.inputs
    assert program.tensor(inp).dtype == "int8"
    assert program.meta["fp32_fallback"], "the model's first layer is an fp32 island"
    _check_close(spec, program, gm, [spec.example_inputs], rel=0.1)
    program, gm = export_quantized(spec, io="float32")
    assert program.tensor(program.inputs[0]).dtype == "float32"
    readers = [i.op for i in program.instructions if program.inputs[0] in i.args[:1]]
    assert "cortex_m::dequantize_per_tensor.out" not in readers, readers  # (no quantize -> dequantize round trip)
    _check_close(spec, program, gm, [spec.example_inputs], rel=0.1)


def test_handwritten_attention_splits_qkv_in_int8():
    """timm's qkv.reshape(...).permute(2, 0, 3, 1, 4).unbind(0) and nanoGPT's qkv.split(E, dim=2)
    (tests/models_int8/attention_handwritten.py) were fp32 islands (unbind, split) with 14 transposes around them;
    now the parts are int8 copies (3 selects, 3 slices), no island, 8 transposes."""
    spec, program, gm = _int8_program("tests/models_int8/attention_handwritten.py")
    assert program.meta["fp32_fallback"] == []
    ops = [i.op for i in program.instructions]
    assert ops.count("aten::select_copy.int_out") == 3 and ops.count("aten::slice_copy.Tensor_out") == 3
    assert ops.count("cortex_m::quantized_batch_matmul.out") == 4 and ops.count("cortex_m::transpose.out") == 8
    _check_close(spec, program, gm, spec.test_inputs)
