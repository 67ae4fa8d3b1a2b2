"""Selective build: the mnist firmware links exactly the kernels its program
uses (found by their symbols in the ELF), its kernel table has one entry per
operator, and nothing runs before main (no static constructors)."""
import re
import shutil
import subprocess

import pytest

import mcu_gen
from mcu_gen.backends import kernels as kernel_registry


@pytest.fixture(scope="module")
def mnist(tmp_path_factory, qemu_tools):
    return mcu_gen.build("examples/mnist/model.py", board="mps2-an505", out=tmp_path_factory.mktemp("sel") / "mnist")


def _symbols(elf):
    out = subprocess.run(["arm-none-eabi-nm", "-C", "-S", "--defined-only", str(elf)], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4:
            syms[parts[3]] = int(parts[1], 16)
    return syms


def _kernel_functions(syms):
    """Names of the mcu::kernels:: functions defined in the image."""
    return {m.group(1) for name in syms if (m := re.match(r"mcu::kernels::(\w+)\(", name))}


def test_only_the_programs_kernels_are_linked(mnist):
    used = set(mnist.program.operators)
    assert used == {"mcu::conv2d_max_pool2d.out", "mcu::linear.out"}
    available = kernel_registry.find_kernels()
    wanted = {available[op].fn for op in used}
    others = {k.fn for op, k in available.items() if op not in used} - wanted
    assert len(others) >= 20  # the portable library has many more kernels than mnist uses
    fns = _kernel_functions(_symbols(mnist.elf))
    assert wanted <= fns, wanted - fns
    assert not (fns & others), f"kernels the program does not use were linked: {sorted(fns & others)}"


def test_kernel_table_has_one_entry_per_operator(mnist):
    syms = _symbols(mnist.elf)
    table = [size for name, size in syms.items() if name.endswith("kEntries")]
    # KernelEntry = name, overload, signature, fn: four 32-bit words.
    assert table == [16 * len(mnist.program.operators)]
    assert mnist.report["kernels"] == ["op_mcu_conv2d_max_pool2d.cpp", "op_mcu_linear.cpp"]


def test_no_static_constructors(mnist):
    readelf = shutil.which("arm-none-eabi-readelf")
    assert readelf, "arm-none-eabi-readelf missing (binutils-arm-none-eabi)"
    out = subprocess.run([readelf, "-S", "-W", str(mnist.elf)], capture_output=True, text=True, check=True).stdout
    for section in (".init_array", ".preinit_array", ".ctors"):
        for line in out.splitlines():
            if f" {section} " in line:
                size = int(line.split(section)[1].split()[3], 16)  # Type Addr Off Size
                assert size == 0, line
    syms = _symbols(mnist.elf)
    assert not [s for s in syms if "_GLOBAL__sub_I" in s or "__static_initialization" in s]
