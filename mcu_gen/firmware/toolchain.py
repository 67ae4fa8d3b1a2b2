"""Finding the external tools: the Arm cross compiler, CMake and QEMU.

A missing tool raises ToolchainError naming the Debian package to install.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from mcu_gen.errors import McuGenError

ARM_GCC_PACKAGES = "gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib"
RISCV_GCC_PACKAGES = "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"

# tool -> Debian package(s) that provide it
DEBIAN_PACKAGES = {
    "arm-none-eabi-gcc": ARM_GCC_PACKAGES,
    "arm-none-eabi-g++": ARM_GCC_PACKAGES,
    "arm-none-eabi-size": "binutils-arm-none-eabi",
    "arm-none-eabi-objcopy": "binutils-arm-none-eabi",
    "arm-none-eabi-nm": "binutils-arm-none-eabi",
    "cmake": "cmake",
    "ninja": "ninja-build",
    "qemu-system-arm": "qemu-system-arm",
    "riscv64-unknown-elf-gcc": RISCV_GCC_PACKAGES,
    "riscv64-unknown-elf-g++": RISCV_GCC_PACKAGES,
    "riscv64-unknown-elf-size": "binutils-riscv64-unknown-elf",
    "riscv64-unknown-elf-objcopy": "binutils-riscv64-unknown-elf",
    "riscv64-unknown-elf-nm": "binutils-riscv64-unknown-elf",
    "riscv64-unknown-elf-objdump": "binutils-riscv64-unknown-elf",
    "qemu-system-riscv32": "qemu-system-misc",
    "g++": "g++",
}


class ToolchainError(McuGenError, RuntimeError):
    """A required external tool is missing or failed."""


def find_tool(name: str, path: str | None = None) -> str:
    """Absolute path of `name` on PATH (or `path`), else ToolchainError with the install hint."""
    found = shutil.which(name, path=path)
    if found is None:
        pkg = DEBIAN_PACKAGES.get(name, name)
        raise ToolchainError(f"{name} not found on PATH; install it with: sudo apt-get install {pkg}")
    return found


@dataclass(frozen=True)
class ArmToolchain:
    gcc: str
    gxx: str
    size: str
    objcopy: str

    @property
    def bin_dir(self) -> str:
        return os.path.dirname(self.gcc)


def arm_toolchain(path: str | None = None, prefix: str = "arm-none-eabi") -> ArmToolchain:
    """The cross tools with GNU prefix `prefix` (a board's `[build] toolchain`, e.g. riscv64-unknown-elf)."""
    return ArmToolchain(
        gcc=find_tool(f"{prefix}-gcc", path),
        gxx=find_tool(f"{prefix}-g++", path),
        size=find_tool(f"{prefix}-size", path),
        objcopy=find_tool(f"{prefix}-objcopy", path),
    )


def cmake(path: str | None = None) -> str:
    return find_tool("cmake", path)


def qemu_system_arm(path: str | None = None) -> str:
    return find_tool("qemu-system-arm", path)


def _run(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).strip().splitlines()
        tail = "\n".join(out[-40:])
        raise ToolchainError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")


def ccache_env(base_dir: Path | None = None) -> dict:
    """The environment of mcu-gen's ccache: its folder $MCU_GEN_CACHE/ccache, kept under MCU_GEN_CACHE_LIMIT_MB
    (`mcu-gen cache` shows, trims and clears the same folder), and with ``base_dir`` the folder whose paths it
    rewrites relative to the build folder, so that projects in different folders share objects."""
    from mcu_gen.firmware.cache_trim import limit_bytes
    from mcu_gen.paths import cache_root

    env = dict(os.environ, CCACHE_DIR=str(cache_root() / "ccache"), CCACHE_MAXSIZE=f"{max(limit_bytes() >> 20, 64)}M")
    # the project's generated headers are written just before the build and never during it: without this, ccache
    # finds them "too new" for its direct mode and preprocesses every source to look it up
    env["CCACHE_SLOPPINESS"] = "include_file_mtime,include_file_ctime"
    if base_dir is not None:
        env["CCACHE_BASEDIR"] = str(base_dir)
    return env


def ccache_setup(project_dir: Path) -> tuple[dict, dict]:
    """(CMake defines, environment) that compile through ccache when it is installed (scripts/setup.sh installs
    it): the same objects, each compiled once per content. Every project mcu-gen generates has the same runtime and
    kernel sources, so ccache (``ccache_env``, the project as its base_dir) saves most of a build's compiling. The
    firmware is compiled without -g, so an object does not depend on where it was built.
    ({}, None) without ccache, or with MCU_GEN_CCACHE=0."""
    exe = shutil.which("ccache")
    if exe is None or os.environ.get("MCU_GEN_CCACHE", "1") == "0":
        return {}, None
    return {"CMAKE_C_COMPILER_LAUNCHER": exe, "CMAKE_CXX_COMPILER_LAUNCHER": exe}, ccache_env(project_dir)


def cmake_build(project_dir: Path, build_dir: Path, target: str = "firmware.elf",
                defines: dict | None = None, prefix: str | None = "arm-none-eabi") -> Path:
    """Configures (once) and builds a generated CMake firmware project; returns the ELF path.

    The project's CMakeLists.txt names its toolchain file itself (templates/cmake). With ccache installed the
    compiler runs through it (``ccache_setup``).
    """
    exe = cmake()
    if prefix is not None:  # None: a native build (the host board), with the machine's compiler
        arm_toolchain(prefix=prefix)  # fail early with the package hint, not deep inside CMake
    project_dir, build_dir = Path(project_dir).resolve(), Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    launcher, env = ccache_setup(project_dir)
    if not (build_dir / "CMakeCache.txt").exists():
        cmd = [exe, "-S", str(project_dir), "-B", str(build_dir)]
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        cmd += [f"-D{k}={v}" for k, v in {**launcher, **(defines or {})}.items()]
        _run(cmd)
    _run([exe, "--build", str(build_dir), "--target", target], env=env)
    return build_dir / target
