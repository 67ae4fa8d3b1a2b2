"""The stack of a portable kernel against its in-place variant's. Where the generated kernels take an
operator's base form but not its in-place variant (mcu_gen/firmware/builder.py, variant_refusal), the default
build runs the base operator where the library build runs the variant, and links the base operator's portable
kernel as the generated layer's fallback: the default build's stack stays within the library build's only if
that kernel takes no more stack than the variant (tests/test_default_ram.py, dw_wide_rows).

Each operator file is compiled as a firmware compiles it (-O2, the core's flags) with -fstack-usage; both
files call the same argument-reading helpers, so their operator functions' frames decide."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from mcu_gen.paths import KERNELS_PORTABLE, RUNTIME_CORE

CORES = {
    "cortex-m33": ["-mcpu=cortex-m33", "-mthumb", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard"],
    "cortex-m4": ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
    "cortex-m55": ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"],
}


def _frames(cxx, flags, name, tmp_path) -> dict:
    """{function: stack bytes} of kernels_portable/<name>.cpp's functions."""
    obj = tmp_path / f"{name}.o"
    r = subprocess.run([cxx, *flags, "-O2", "-std=c++17", "-fno-exceptions", "-fno-rtti", "-ffunction-sections",
                        "-fstack-usage", "-I", str(RUNTIME_CORE / "include"), "-I", str(KERNELS_PORTABLE), "-c",
                        str(KERNELS_PORTABLE / f"{name}.cpp"), "-o", str(obj)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    frames = {}
    for line in obj.with_suffix(".su").read_text().splitlines():
        where, size, kind = line.split("\t")
        assert kind == "static", line  # no alloca, no variable-length array
        signature = where.split(":", 3)[3]  # file:line:column:signature
        frames[signature.split("(")[0].split()[-1]] = int(size)
    return frames


@pytest.mark.parametrize("core", sorted(CORES))
def test_the_depthwise_kernel_takes_no_more_stack_than_its_in_place_variant(core, tmp_path):
    cxx = shutil.which("arm-none-eabi-g++")
    if cxx is None:
        pytest.skip("no arm-none-eabi-g++ (scripts/setup.sh installs it)")
    base = _frames(cxx, CORES[core], "op_cortex_m_quantized_depthwise_conv2d", tmp_path)
    variant = _frames(cxx, CORES[core], "op_mcu_quantized_depthwise_conv2d_inplace", tmp_path)
    base_op = base.pop("mcu::kernels::cortex_m_quantized_depthwise_conv2d_out")
    variant_op = variant.pop("mcu::kernels::mcu_quantized_depthwise_conv2d_inplace_out")
    # The same helpers below both (qdepthwise_conv2d is inlined into its operator: no deeper call).
    assert base == variant, (base, variant)
    assert base_op <= variant_op, (base_op, variant_op)
