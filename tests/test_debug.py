"""`mcu-gen debug` on QEMU: every intermediate tensor read from the device and compared with the host
reference; a firmware whose relu kernel is deliberately perturbed (built here, in the temp project,
never in the repo) is caught at that operator, with its line in the model file."""
import json
import shutil
import textwrap

import pytest

import mcu_gen
from mcu_gen.firmware.project import compile_project
from mcu_gen.cli import main as cli_main
from mcu_gen.dev.debug import debug

MODEL = textwrap.dedent('''\
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.conv = nn.Conv2d(1, 4, 3)
            self.fc = nn.Linear(4 * 5 * 5, 6)

        def forward(self, x):
            x = self.conv(x)
            x = torch.relu(x)  # the perturbed kernel
            x = nn.functional.max_pool2d(x, 2)
            return self.fc(torch.flatten(x, 1))


    def model():
        return Net().eval()


    def example_inputs():
        return (torch.rand(1, 1, 12, 12, generator=torch.Generator().manual_seed(1)),)
''')
RELU_LINE = MODEL.splitlines().index("        x = torch.relu(x)  # the perturbed kernel") + 1

PERTURBED_KERNEL = """// Test-only: aten::relu.out, then +1e-3 on every output element.
#include "mcu/kernel.h"

namespace mcu {
namespace kernels {
Error aten_relu_out(const KernelContext& ctx);

Error aten_relu_out_perturbed(const KernelContext& ctx) {
  const Error e = aten_relu_out(ctx);
  if (e != Error::Ok) return e;
  const TensorRef out = ctx.tensor(ctx.num_args() - 1);
  float* p = static_cast<float*>(out.data);
  for (int32_t i = 0; i < out.numel; ++i) p[i] += 1e-3f;
  return Error::Ok;
}
}  // namespace kernels
}  // namespace mcu
"""


def perturb_relu(result):
    """Rebuilds the firmware project of `result` with the relu entry of its kernel table pointing at
    a perturbed copy; returns the new ELF (the build's own firmware.elf stays as it was)."""
    project = result.out / "firmware"
    (project / "kernels" / "op_relu_perturbed.cpp").write_text(PERTURBED_KERNEL)
    table = project / "src" / "kernel_table.cpp"
    text = table.read_text()
    assert "&kernels::aten_relu_out}" in text
    text = text.replace("&kernels::aten_relu_out}", "&kernels::aten_relu_out_perturbed}")
    # and the flash table of kernels in the program's operator order, checked against the entries at load
    text = text.replace("&kernels::aten_relu_out,", "&kernels::aten_relu_out_perturbed,")
    text = text.replace("}  // namespace kernels",
                        "Error aten_relu_out_perturbed(const KernelContext& ctx);\n}  // namespace kernels", 1)
    table.write_text(text)
    cmake = project / "CMakeLists.txt"
    cmake.write_text(cmake.read_text().replace("  kernels/op_relu.cpp\n",
                                               "  kernels/op_relu.cpp\n  kernels/op_relu_perturbed.cpp\n"))
    elf = compile_project(project, result.board)
    return shutil.copy2(elf, result.out / "firmware_perturbed.elf")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("debug")
    (d / "net.py").write_text(MODEL)
    return mcu_gen.build(str(d / "net.py"), board="mps2-an505", out=d / "out", fuse=False, debug=True)


@pytest.mark.qemu
def test_debug_names_the_perturbed_operator_and_its_line(built, qemu_tools):
    ops = [ins.op for ins in built.program.instructions]
    assert "aten::relu.out" in ops
    clean = debug(result=built)
    assert clean.ok, [(s.op, s.max_abs_error) for s in clean.steps]
    assert [s.op for s in clean.steps] == ops
    assert all(s.values for s in clean.steps)  # every instruction's result was read and compared

    r = debug(result=built, elf=perturb_relu(built))
    first = r.first_divergence
    assert first is not None and first.op == "aten::relu.out"
    assert first.index == ops.index("aten::relu.out")
    assert first.max_abs_error == pytest.approx(1e-3, rel=1e-2)
    assert first.source.endswith(f"net.py:{RELU_LINE}: x = torch.relu(x)  # the perturbed kernel")
    # Everything before it matched.
    assert all(s.ok for s in r.steps[: first.index])


@pytest.mark.qemu
def test_cli_debug_json(built, capsys, qemu_tools):
    rc = cli_main(["debug", "--model", str(built.out.parent / "net.py"), "--out", str(built.out.parent / "cli"),
                   "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ok"] is True and out["first_divergence"] is None
    assert [s["op"] for s in out["steps"]][:2] == ["mcu::conv2d_max_pool2d.out", "mcu::linear.out"]
