#!/usr/bin/env bash
# Sets up everything mcu-gen needs on a Debian/Ubuntu machine: the Arm
# cross-compiler, QEMU, CMake/Ninja, a host C++ compiler (apt), then a Python
# virtual environment in .venv with mcu-gen and its dependencies (pip).
# Safe to run again; it skips what is already there.
#   scripts/setup.sh            everything (tests included)
#   scripts/setup.sh --apt-only         only the Debian packages
#   MCU_GEN_NO_APT=1 scripts/setup.sh   skip the apt step
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm
              gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc
              cmake ninja-build ccache g++ clang python3 python3-venv python3-pip)
# The fuzz tests link clang's libFuzzer and sanitizer runtimes (compiler-rt). Debian ships them
# in libclang-rt-<N>-dev, only a recommendation of libclang-common-<N>-dev (packages are installed here
# without recommendations): name it, for the N of the distribution's default clang (14 on Debian 12).
clang_major=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n1)
clang_major=${clang_major:-14}
if apt-cache show "libclang-rt-${clang_major}-dev" >/dev/null 2>&1; then
  APT_PACKAGES+=("libclang-rt-${clang_major}-dev")
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${MCU_GEN_NO_APT:-0}" != "1" ] && [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ "${1:-}" = "--apt-only" ]; then
  echo "setup: Debian packages done (--apt-only: no Python environment)"
  exit 0
fi

PY=${PYTHON:-python3}
# A .venv an older setup made with --system-site-packages is made again (without them, as below).
if [ -f .venv/pyvenv.cfg ] && grep -qi '^include-system-site-packages *= *true' .venv/pyvenv.cfg; then
  echo "setup: .venv sees the machine's own site-packages (an older setup made it so): making it again"
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  # Not --system-site-packages: whatever the machine's own Python happens to have must not stand in
  # for a dependency that pyproject.toml forgets (a fresh Debian machine has none of it).
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK=1
# torch is pinned so that pip takes the CPU wheel; executorch (test oracle
# and interop only) declares no torch dependency and installs beside it.
"$VPY" -m pip install -q "torch==2.13.0"
"$VPY" -m pip install -q -e ".[test,pio,ethos-u,sweep]"
"$VPY" -m pip install -q --no-deps "tosa-tools==2026.8.0"
"$VPY" -m pip install -q "executorch==1.5.1"
# ExecuTorch's Cortex-M backend (interop tests only) imports tosa_serializer; its
# wheel pins an older numpy, so it goes, without dependencies, into a directory
# of its own that only those tests put on sys.path.
"$VPY" -m pip install -q --no-deps --upgrade --target .venv/et-extras "tosa-tools==2026.5.0"
echo "setup: done ($("$VPY" -c 'import torch, mcu_gen; print("torch", torch.__version__, "mcu-gen", mcu_gen.__version__)'))"
