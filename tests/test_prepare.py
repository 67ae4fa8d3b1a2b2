"""Kernels prepared at load (runtime_core/include/mcu/kernel.h PrepareFn) and the executor's
decoded-value cache (MCU_VALUE_CACHE), natively under ASan/UBSan with a test kernel.

The test kernel `aten::mul.out` multiplies; its prepare function picks a variant that
multiplies and adds 1000 (so the output tells which ran) when the instruction's input has at
most 4 elements, and keeps the checked kernel otherwise ("when in doubt"). Only the first
MCU_INSTRUCTION_CACHE instructions are prepared; the prepared variant reads its arguments with
KernelContext::decoded*, which prepare allows only when every argument value is decoded.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from mcu_gen.firmware import host
from mcu_gen.backends import kernels
from mcu_gen.plan import inplace_pass
from mcu_gen.program import pte
from mcu_gen.program.ir import Instruction, Program

KERNEL = r"""// mcu-gen-kernel: op=aten::mul.out fn=test_mul_out prepare=test_mul_prepare sig=TTOO dtypes=float32
// Test kernel: out = a * b (checked), or a * b + 1000 (the variant prepare picks for inputs of <= 4 elements).
#include "mcu/kernel.h"

namespace mcu {
namespace kernels {

Error test_mul_out(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(1), out = ctx.tensor(2);
  if (a.numel != b.numel || a.numel != out.numel || a.dtype != DType::Float) return Error::KernelFailed;
  for (int32_t i = 0; i < a.numel; ++i) out.f32()[i] = a.f32()[i] * b.f32()[i];
  return Error::Ok;
}

namespace {
Error prepared_mul(const KernelContext& ctx) {
  const DecodedValue& a = ctx.decoded(0);
  const float* x = static_cast<const float*>(a.data);
  const float* y = static_cast<const float*>(ctx.decoded_data(1));
  float* z = static_cast<float*>(ctx.decoded(2).data);
  for (int32_t i = 0; i < a.numel; ++i) z[i] = x[i] * y[i] + 1000.0f;
  return Error::Ok;
}
}  // namespace

KernelFn test_mul_prepare(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(1), out = ctx.tensor(2);
  const bool ok = ctx.all_decoded() && a.dtype == DType::Float && a.numel == b.numel && a.numel == out.numel &&
                  a.numel <= 4;
  return ok ? &prepared_mul : &test_mul_out;
}

}  // namespace kernels
}  // namespace mcu
"""


@pytest.fixture(scope="module")
def test_kernels(tmp_path_factory):
    d = tmp_path_factory.mktemp("prepare_kernels")
    (d / "op_test_mul.cpp").write_text(KERNEL)
    return list(kernels.find_kernels(d, backend="test").values())


def runner(test_kernels, tmp_path, **defines):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.fail("no host C++ compiler: install g++")
    flags = host.CXXFLAGS + ["-DMCU_KERNEL_PREPARE=1"] + [f"-D{k}={v}" for k, v in defines.items()]
    return host.build_native(cxx, flags, host.RUNTIME_CORE / "tools" / "host_runner.cpp", test_kernels,
                             host.CACHE, host.HostRunError)


def chain(n: int, numel: int):
    """x -> x*x -> (x*x)*x -> ...: n muls on `numel` floats; every product is an output."""
    p = Program()
    x = p.add_tensor((numel,), "float32")
    p.inputs.append(x)
    prev = x
    for _ in range(n):
        out = p.add_tensor((numel,), "float32")
        p.instructions.append(Instruction("aten::mul.out", [prev, x, out, out]))
        p.outputs.append(out)
        prev = out
    inplace_pass.plan_memory(p)
    return p


def run(exe, p, x):
    data = pte.write(p)
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "p.pte").write_bytes(data)
        (tmp / "in_0.bin").write_bytes(x.astype(np.float32).tobytes())
        r = subprocess.run([str(exe), str(tmp / "p.pte"), str(max(p.arena_size, 16)), str(tmp),
                            str(tmp / "in_0.bin")], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        return [np.frombuffer((tmp / f"out_{i}.bin").read_bytes(), np.float32) for i in range(len(p.outputs))]


def expected(x, n, prepared):
    """Outputs of the chain when instruction i ran the prepared variant iff prepared[i]."""
    outs, prev = [], x
    for i in range(n):
        prev = prev * x + (1000.0 if prepared[i] else 0.0)
        outs.append(prev.astype(np.float32))
    return outs


def test_only_cached_instructions_are_prepared(test_kernels, tmp_path):
    x = np.array([1.0, 2.0, -1.0], np.float32)
    exe = runner(test_kernels, tmp_path, MCU_INSTRUCTION_CACHE=2, MCU_VALUE_CACHE=64)
    got = run(exe, chain(4, 3), x)
    for g, e in zip(got, expected(x, 4, [True, True, False, False])):
        np.testing.assert_array_equal(g, e)


def test_prepare_keeps_the_checked_kernel_when_in_doubt(test_kernels, tmp_path):
    x = np.arange(6, dtype=np.float32)  # 6 elements: prepare returns the checked kernel
    exe = runner(test_kernels, tmp_path, MCU_INSTRUCTION_CACHE=8, MCU_VALUE_CACHE=64)
    for g, e in zip(run(exe, chain(3, 6), x), expected(x, 3, [False] * 3)):
        np.testing.assert_array_equal(g, e)


def test_prepared_variants_need_every_argument_decoded(test_kernels, tmp_path):
    # 2 values decoded: instruction 0's args are values 0 (x), 0 and 1; instruction 1's out is not decoded.
    x = np.array([3.0, 0.5], np.float32)
    p = chain(3, 2)
    values = len(pte.read(pte.write(p)).values)
    exe = runner(test_kernels, tmp_path, MCU_INSTRUCTION_CACHE=8, MCU_VALUE_CACHE=2)
    got = run(exe, p, x)
    assert values > 2
    for g, e in zip(got, expected(x, 3, [True, False, False])):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("value_cache", [1, 8, 4096])
def test_value_cache_size_does_not_change_results(value_cache, tmp_path):
    """Every value kind (tensors, ints, doubles, bools, int lists, none) read through the cache
    or from the program gives the same results: portable kernels with scalar and list
    arguments, against numpy."""
    import torch

    rng = np.random.default_rng(7)
    shape = (1, 2, 4, 4)
    p = Program()
    x = p.add_tensor(shape, "float32")
    p.inputs.append(x)
    outs, want = [], []
    xv = rng.standard_normal(shape).astype(np.float32)
    # add.out(self, other, alpha, out): an Int alpha, a Double alpha
    for alpha_kind, alpha in (("int", 2), ("float", 0.5)):
        o = p.add_tensor(shape, "float32")
        p.instructions.append(Instruction("aten::add.out", [x, x, p.add_scalar(alpha_kind, alpha), o, o]))
        outs.append(o)
        want.append(xv + alpha * xv)
    # avg_pool2d.out(self, kernel_size, stride (one item), padding, ceil_mode, count_include_pad, divisor (none))
    o = p.add_tensor((1, 2, 2, 2), "float32")
    p.instructions.append(Instruction("aten::avg_pool2d.out", [
        x, p.add_scalar("int_list", [2, 2]), p.add_scalar("int_list", [2]), p.add_scalar("int_list", [0]),
        p.add_scalar("bool", False), p.add_scalar("bool", True), p.add_scalar("none", None), o, o]))
    outs.append(o)
    want.append(torch.nn.functional.avg_pool2d(torch.from_numpy(xv), 2, 2).numpy())
    p.outputs.extend(outs)
    inplace_pass.plan_memory(p)
    sel = kernels.select(p.operators)
    assert not sel.missing, sel.missing
    cxx = shutil.which("g++") or shutil.which("c++")
    exe = host.build_native(cxx, host.CXXFLAGS + [f"-DMCU_VALUE_CACHE={value_cache}"],
                            host.RUNTIME_CORE / "tools" / "host_runner.cpp", sel.kernels, host.CACHE,
                            host.HostRunError)
    got = run(exe, p, xv.reshape(-1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-6, atol=1e-6)
