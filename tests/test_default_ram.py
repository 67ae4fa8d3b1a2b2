"""Issue 25: the default build (no flags: `--kernels auto`, generated per-layer kernels) is also the smallest.
Builds only (no emulator): every cross build reserves the stack bound it computes from the image's code, so
report.json's ram_bytes (.data + .bss + reserved stack) is the deployable total RAM without a run. The full
table over every example and tests/models_int8 is `python bench/bench_default_ram.py`; here a subset that
once failed each rule, for the reason it failed:

- VWW: the widening in-place 1x1 convolution and the large in-place depthwise layers had no generated form,
  so `auto` planned them without in-place: arena 55,312 B (the library build's 39,168 B).
- conv1d_audio, mlperf_ds_cnn: the generated build's executor loop had an 8 B larger frame (the arena pointer
  in KernelContext, the running index of bound layers), +64 B of stack after rounding.
- gemm_pairs: the generated 3x3 convolution (K 324) gathered two windows on the stack (a 744 B frame), +128 B of
  stack; its gathered windows and widened rows are now a scratch tensor planned in the arena
  (mcu_gen/plan/generated_scratch.py).
- dw_wide_rows: its 3x3 depthwise layer over 4 x 300 pixels runs generated without in-place (the in-place
  form's rows fit neither the arena nor the stack budget) where the library build runs it in place; the
  portable depthwise kernel, linked as the generated layer's fallback, kept 32 accumulators and took 104 B
  more stack than its in-place variant, +64 B of stack after rounding. It now keeps one accumulator
  (tests/test_kernel_stack.py).
- conv1d_har: its depthwise layers of 6, 30 and 45 channels (kernels other than 3x3, channels not a multiple of
  4) ran on the library kernels; generated (the last c % 4 channels a group of their own), their in-place windows
  and chunks must stay within the library build's stack.
- mha_encoder: the generated add of the class-token sequence and the position embedding (a constant operand, not
  planned) kept that operand's pointer in RAM, bound at load: 12 B of .bss (5,032 B against 5,016 B); its
  argument is now decoded on each call. tcn_dilated: its Conv1d layers of dilation 2, 4 and 8 folded into
  k x 1 convolutions (quantize/int8_ops/conv.py) run generated, in place where the library build is.
- attention: int8 needed more RAM than fp32: the portable quantized_add's two tables (2,352 B frame).
- tokens_int8: int8 needed 176 B more than fp32: the portable add's one table in a 1,376 B frame with its
  argument reading and range check.
- mlperf_deep_autoencoder with float I/O: the arena held the float input beside its int8 copy and the
  int8 result beside its float copy (3,200 B against fp32's 3,072 B); quantize / dequantize now write
  over their input (plan/inplace.py `narrowing`, `widening`): 2,560 B, the float input alone.
"""
from __future__ import annotations

import pytest

import mcu_gen

BOARD = "mps2-an505"


def _ram(tmp_path, path, name, **kw):
    r = mcu_gen.build(path, board=BOARD, out=tmp_path / name, **kw)
    return r.report


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return tmp_path_factory.mktemp("default-ram")


def test_vww_default_arena_is_the_library_arena(built, qemu_tools):
    rep = _ram(built, "examples/vww_mobilenet/model.py", "vww", quantize="int8", io="int8")
    assert rep["arena_bytes"] == 39_168 <= 40_000
    gen = rep["generated_kernels"]
    ops = [row["name"] for row in rep["operators"]]
    assert ops.count("mcu::quantized_conv2d_pointwise_inplace.out") == 13  # widening ones included
    assert ops.count("mcu::quantized_depthwise_conv2d_inplace.out") == 13  # 48x48 ones included
    assert len(gen["layers"]) == len(ops) - 1  # all but the average pool (the 256 -> 2 classifier: match._narrow)


@pytest.mark.parametrize("model", ["tests/models_int8/conv1d_audio.py", "tests/models_int8/mlperf_ds_cnn.py",
                                   "tests/models_int8/gemm_pairs.py", "tests/models_int8/dw_wide_rows.py",
                                   "tests/models_int8/conv1d_har.py", "tests/models_int8/mha_encoder.py",
                                   "tests/models_int8/tcn_dilated.py"])
def test_default_total_ram_is_at_most_the_library_build(built, model, qemu_tools):
    name = model.rsplit("/", 1)[-1][:-3]
    default = _ram(built, model, f"{name}-default", quantize="int8")
    library = _ram(built, model, f"{name}-library", quantize="int8", kernels="library", backend="portable")
    assert default["generated_kernels"]["layers"]  # the default build does run generated layers
    assert default["ram_bytes"] <= library["ram_bytes"], (default["size"]["ram"], library["size"]["ram"])
    assert default["stack"]["reserved_bytes"] <= library["stack"]["reserved_bytes"]


def test_int8_total_ram_is_at_most_fp32(built, qemu_tools):
    model = "tests/models_int8/attention.py"
    int8 = _ram(built, model, "attention-int8", quantize="int8")
    fp32 = _ram(built, model, "attention-fp32")
    assert int8["ram_bytes"] <= fp32["ram_bytes"], (int8["size"]["ram"], fp32["size"]["ram"])
    # No kernel frame of kilobytes: the portable add keeps one 1 KB table on the stack, not two.
    assert int8["stack"]["static_bound_bytes"] < 2048


def test_float_io_quantize_and_dequantize_write_over_their_input(built, qemu_tools):
    model = "tests/models_int8/mlperf_deep_autoencoder.py"
    int8 = _ram(built, model, "dae-int8", quantize="int8")
    fp32 = _ram(built, model, "dae-fp32")
    # the float input (and output) alone: 3,200 B (float + int8 copies side by side) without in-place
    assert int8["arena_bytes"] == 640 * 4, int8["arena_bytes"]
    assert int8["ram_bytes"] <= fp32["ram_bytes"], (int8["size"]["ram"], fp32["size"]["ram"])


def test_topk_keeps_a_static_stack_bound(built, qemu_tools):
    """topk's tie order is libstdc++'s; std::sort's recursion left the image without a static stack bound,
    so tokens_int8 reserved the linker's 64 KiB (67,312 B of RAM). The kernel's introsort is a loop now."""
    rep = _ram(built, "tests/models_int8/tokens_int8.py", "tokens-int8", quantize="int8")
    assert "aten::topk.values" in [row["name"] for row in rep["operators"]]
    stack = rep["stack"]
    assert stack["unbounded_reason"] is None and stack["static_bound_bytes"] < 4096, stack
    assert rep["ram_bytes"] < 8192, rep["size"]
    # The kernel a prepare hook returns (its address in the hook's literal pool) is called by the runtime only,
    # not by an indirect call inside a kernel (where's elementwise engine): counted so, the default build's
    # bound was 2,400 B against the library build's 1,728 B.
    library = _ram(built, "tests/models_int8/tokens_int8.py", "tokens-library", quantize="int8", kernels="library",
                   backend="portable")
    assert rep["ram_bytes"] <= library["ram_bytes"], (rep["stack"]["deepest_path"], library["stack"]["deepest_path"])
    # int8 <= fp32: the portable add (linked as the generated add's fallback) read its arguments, checked
    # the table's range and kept its 1 KB table in one 1,376 B frame, the image's deepest (3,632 B against
    # fp32's 3,456 B); the table now lives in a frame of its own, beside none of the others.
    fp32 = _ram(built, "tests/models_int8/tokens_int8.py", "tokens-fp32")
    assert rep["ram_bytes"] <= fp32["ram_bytes"], (rep["stack"]["deepest_path"], fp32["stack"]["deepest_path"])
