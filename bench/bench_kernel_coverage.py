"""How many of ExecuTorch's portable out-variant operators mcu-gen has a portable kernel for.

    python bench/bench_kernel_coverage.py [--missing]

Reads executorch/kernels/portable/functions.yaml from the installed executorch wheel (the interop
extra) and mcu-gen's kernel registry (the first line of every kernels_portable/op_*.cpp), and prints
the counts; --missing lists the operators mcu-gen lacks.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def executorch_portable_ops() -> set:
    import yaml

    try:
        import executorch
    except ImportError:
        sys.exit("the executorch wheel is not installed (pip install 'mcu-gen[interop]')")
    path = Path(list(executorch.__path__)[0]) / "kernels" / "portable" / "functions.yaml"
    names = set()
    for entry in yaml.safe_load(path.read_text()):
        name = (entry.get("op") or entry.get("func")).split("(")[0]
        names.add(name if "::" in name else "aten::" + name)
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--missing", action="store_true", help="list ExecuTorch's operators mcu-gen lacks")
    args = ap.parse_args()
    from mcu_gen.backends.kernels import find_kernels

    et = executorch_portable_ops()
    ours = set(find_kernels().keys())
    print("| | operators |")
    print("|---|---|")
    print(f"| ExecuTorch portable (functions.yaml) | {len(et)} |")
    print(f"| mcu-gen portable kernels | {len(ours)} |")
    print(f"| ExecuTorch's that mcu-gen has | {len(et & ours)} |")
    print(f"| mcu-gen's own (fused, int8, not in ExecuTorch's list) | {len(ours - et)} |")
    if args.missing:
        print("\nmissing: " + ", ".join(sorted(et - ours)))


if __name__ == "__main__":
    main()
