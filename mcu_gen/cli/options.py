"""Command-line options shared by `build`, `run`, `profile` and `debug`: which int8 kernels a build uses."""
from __future__ import annotations


def add_kernel_options(s) -> None:
    s.add_argument("--backend", choices=["auto", "portable", "cmsis-nn"], default="auto",
                   help="int8 kernels: cmsis-nn (needs CMSIS-NN), portable, or auto (CMSIS-NN when found)")
    s.add_argument("--cmsis-nn", dest="cmsis_nn", metavar="PATH", default=None,
                   help="CMSIS-NN checkout or unpacked ARM.CMSIS-NN pack (else $MCU_GEN_CMSIS_NN, cmsis-pack-manager)")
    s.add_argument("--kernels", choices=["auto", "library", "generated"], default="auto",
                   help="int8 convolutions, fully connected layers and adds on kernels mcu-gen generates per layer "
                        "(DSP cores: M33, M4; MVE: M55): auto (default: where the core has them; several times "
                        "faster, more flash for reordered weights and RAM for decoded arguments), library (the "
                        "RAM-lean build: CMSIS-NN or portable kernels only), generated (an error where the core has none)")


def kernel_build_options(args) -> dict:
    return {"backend": args.backend, "cmsis_nn_path": args.cmsis_nn, "kernels": args.kernels}
