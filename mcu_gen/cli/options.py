"""Command-line options shared by `build`, `run`, `eval`, `profile` and `debug`: which int8 kernels a build
uses, and how int8 quantization calibrates."""
from __future__ import annotations


def add_kernel_options(s) -> None:
    s.add_argument("--backend", choices=["auto", "portable", "cmsis-nn"], default="auto",
                   help="int8 kernels: cmsis-nn (needs CMSIS-NN), portable, or auto (CMSIS-NN when found)")
    s.add_argument("--cmsis-nn", dest="cmsis_nn", metavar="PATH", default=None,
                   help="CMSIS-NN checkout or unpacked ARM.CMSIS-NN pack (else $MCU_GEN_CMSIS_NN, cmsis-pack-manager)")
    s.add_argument("--kernels", choices=["auto", "library", "generated"], default="auto",
                   help="int8 convolutions, fully connected layers and adds on kernels mcu-gen generates per layer "
                        "(DSP cores: M33, M4; MVE: M55): auto (default: where the core has them; several times "
                        "faster in no more RAM, more flash for their reordered weights and code), library "
                        "(CMSIS-NN or portable kernels only: the least flash), generated (an error where the core "
                        "has none)")


def kernel_build_options(args) -> dict:
    return {"backend": args.backend, "cmsis_nn_path": args.cmsis_nn, "kernels": args.kernels}


# mcu_gen.quantize.observers.CHOICES / DEFAULT_CHOICE (not imported: torchao would load for every command)
CALIBRATION_METHODS = ("histogram", "minmax", "moving_average", "percentile", "auto")
DEFAULT_METHOD = "auto"


def add_calibration_options(s) -> None:
    METHODS = CALIBRATION_METHODS
    s.add_argument("--calibration-method", dest="calibration_method", choices=METHODS, default=None,
                   help=f"how calibration sets each activation's int8 range (default {DEFAULT_METHOD}: the method "
                        "and bias correction with the lowest error against fp32 on the test inputs, else held-out "
                        "or calibration samples; docs/quantization.md); the report compares all of them")
    s.add_argument("--bias-correction", dest="bias_correction", action="store_true",
                   help="int8: each conv / linear bias absorbs the mean error its int8 weights add (per channel); "
                        "with auto: choose among the bias-corrected variants only")


def calibration_options(args) -> dict:
    return {"calibration_method": args.calibration_method, "bias_correction": args.bias_correction}


def print_calibration(cal) -> None:
    """The calibration line of `build` / `run`: method, samples, and a better method when there is one."""
    if not cal:
        return
    held = f", {cal['held_out']} held out" if cal.get("held_out") else ""
    bc = " + bias correction" if cal.get("bias_correction") else ""
    how = " (auto: the lowest error of every method, with and without bias correction, on " \
          f"{cal.get('compared_on', 'the calibration data')})" if cal.get("selected") == "auto" and cal.get("rows") else ""
    print(f"  calibration: {cal['method']}{bc}{how} on {cal['samples']} sample(s){held}")
    rec = cal.get("recommended")
    if rec:
        what = f"--calibration-method {rec['method']}" + (" --bias-correction" if rec["bias_correction"] else "")
        print(f"  hint: {what} is measurably more accurate on this calibration data "
              f"(relative RMS error {rec['relative_rms_error']:.3g} vs {rec['chosen_relative_rms_error']:.3g}, "
              f"on {cal.get('compared_on', 'the calibration data')})")
