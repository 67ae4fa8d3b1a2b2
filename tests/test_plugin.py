"""The pytest plugin (mcu_gen/dev/pytest_plugin.py) as a user runs it: a test file using the `mcu`
fixture, run by pytester against the emulated mps2-an505 (`--mcu-board mps2-an505`)."""
import os

import pytest

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = "mcu_gen.pytest_plugin"  # the name of the pytest11 entry point (mcu_gen.dev.pytest_plugin): `-p` is then a no-op


def run_user_tests(pytester, source, *args):
    pytester.makepyfile(test_user=source.replace("ROOT", repr(ROOT)))
    return pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", *args, timeout=600)


@pytest.mark.qemu
def test_mnist_fp32_through_the_fixture(pytester, qemu_tools):
    res = run_user_tests(pytester, '''
def test_mnist(mcu):
    result = mcu.run(ROOT + "/examples/mnist/model.py")
    assert result.verified and result.max_abs_error <= result.tolerance < 1e-3
    assert result.board == "mps2-an505" and result.unit == "instructions"
    assert result.n_inferences == 3 and len(result.outputs) == 3 and result.outputs[0][0].shape == (1, 10)
    assert 300_000 < result.instructions_per_inference < 5_000_000
    assert isinstance(result.bit_exact, bool)
    again = mcu.run(ROOT + "/examples/mnist/model.py", inputs=[result.build.spec.example_inputs])
    assert again.build is result.build          # built once per session
    assert again.verified and again.n_inferences == 1
    profile = mcu.profile(ROOT + "/examples/mnist/model.py")
    assert abs(profile.total - profile.whole) <= 0.02 * profile.whole
''', "--mcu-board", "mps2-an505")
    res.assert_outcomes(passed=1)


@pytest.mark.qemu
def test_kws_dscnn_int8_through_the_fixture(pytester, qemu_tools):
    res = run_user_tests(pytester, '''
def test_kws(mcu):
    result = mcu.run(ROOT + "/examples/kws_dscnn/model.py", quantize="int8")
    assert result.verified and result.bit_exact
    assert result.quant_max_abs_error is not None
''')
    if res.ret != 0:
        pytest.fail("kws_dscnn int8 through the mcu fixture failed:\n" + "\n".join(res.outlines[-25:]))
    res.assert_outcomes(passed=1)


def test_board_without_emulator_needs_a_port(pytester):
    res = run_user_tests(pytester, '''
def test_needs_port(mcu):
    pass
''', "--mcu-board", "rp2350")
    res.assert_outcomes(errors=1)
    res.stdout.fnmatch_lines(["*board rp2350 has no emulator*--mcu-port*"])


def test_options_are_registered(pytester):
    pytester.makepyfile(test_user="def test_x(): pass")
    res = pytester.runpytest_subprocess("-p", PLUGIN, "--help")
    res.stdout.fnmatch_lines(["*--mcu-board*", "*--mcu-port*"])


@pytest.mark.qemu
def test_eval_through_the_fixture(pytester, qemu_tools, tmp_path):
    """mcu.eval: 40 digits test images through the device (tests/test_eval.py runs all 360 on two boards)."""
    pytest.importorskip("sklearn", reason="the digits data set ships with scikit-learn (pyproject's test extra)")
    import subprocess
    import sys

    digits_npz = tmp_path / "digits_test.npz"
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "digits", "model.py"), str(digits_npz)], check=True,
                   capture_output=True)
    res = run_user_tests(pytester, f'''
import numpy as np

def test_digits(mcu):
    z = np.load({str(digits_npz)!r})
    r = mcu.eval(ROOT + "/examples/digits/model.py", (z["x"][:40], z["y"][:40]), quantize="int8", backend="portable")
    assert r.verified and r.agreement == 1.0 and r.n_samples == 40 and r.board == "mps2-an505"
    assert r.accuracy["device"]["top1"] == r.accuracy["int8_host"]["top1"] > 0.85
    assert len(r.confusion) == 10 and r.confusion_files
''', "--mcu-board", "mps2-an505")
    res.assert_outcomes(passed=1)
