"""PlatformIO without its registry: the tool-scons package, the environment, `pio` calls.

PlatformIO Core runs every build through SCons, which it normally downloads
from its registry as the package `tool-scons`. mcu-gen makes that package
from the `scons` wheel pip installed (mcu_gen/firmware/pio_tool_scons.py), so
bare-metal projects (mcu-gen's own dev-platform driving the system
arm-none-eabi-gcc) build with `pio run` and nothing is downloaded. A
generated project's dev-platform does this itself before each build, in
whatever PlatformIO core it runs in; from Python:

    core = ensure_tool_scons()            # $PLATFORMIO_CORE_DIR or ~/.platformio
    run_pio(["run"], project)             # offline-safe environment

`mcu-gen pio-setup` does the first step explicitly; `mcu-gen pio-run` both.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from mcu_gen.errors import McuGenError

from mcu_gen.firmware import pio_tool_scons
from mcu_gen.firmware.pio_tool_scons import SCONS_VERSION, TOOL_SCONS_VERSION  # noqa: F401  (re-exported)

OFFLINE_ENV = {"PLATFORMIO_DISABLE_UPGRADE_CHECK": "true", "PLATFORMIO_SETTING_ENABLE_TELEMETRY": "No"}
INSTALL_HINT = f"pip install platformio scons=={SCONS_VERSION}"


class PioError(McuGenError, RuntimeError):
    """PlatformIO or SCons is missing, or a `pio` command failed."""


def core_dir(explicit=None) -> Path:
    """PlatformIO's core directory: `explicit`, $PLATFORMIO_CORE_DIR, or ~/.platformio (its default)."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get("PLATFORMIO_CORE_DIR")
    return Path(env).expanduser().resolve() if env else Path.home() / ".platformio"


def pio_executable() -> list[str]:
    """How to call PlatformIO: the `pio` beside this Python, else on PATH, else `python -m platformio`."""
    here = Path(sys.executable).parent / "pio"
    if here.is_file():
        return [str(here)]
    found = shutil.which("pio")
    if found:
        return [found]
    try:
        import platformio  # noqa: F401
    except ImportError:
        raise PioError(f"PlatformIO is not installed; install it with: {INSTALL_HINT}") from None
    return [sys.executable, "-m", "platformio"]


def installed_scons() -> Path:
    """The SCons package directory pip installed (from the scons wheel); checks its version."""
    try:
        import SCons
    except ImportError:
        raise PioError(f"SCons is not installed; install it with: {INSTALL_HINT}") from None
    version = getattr(SCons, "__version__", "?")
    if version != SCONS_VERSION:
        raise PioError(f"PlatformIO needs SCons {SCONS_VERSION}, pip has {version}; install it with: {INSTALL_HINT}")
    return Path(SCons.__file__).resolve().parent


def tool_scons_ok(core: Path) -> bool:
    return pio_tool_scons.tool_scons_ok(Path(core) / "packages")


def ensure_tool_scons(core=None, force: bool = False) -> Path:
    """Makes $core/packages/tool-scons from the installed scons wheel (once); returns the core dir."""
    core = core_dir(core)
    if tool_scons_ok(core) and not force:
        return core
    pio_tool_scons.make_tool_scons(core / "packages", installed_scons())
    return core


def pio_env(core=None) -> dict:
    """os.environ plus the core dir and the settings that keep PlatformIO off the network."""
    env = dict(os.environ)
    env.update(OFFLINE_ENV)
    env["PLATFORMIO_CORE_DIR"] = str(core_dir(core))
    return env


def run_pio(args: list[str], project, core=None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs `pio <args>` in `project`; raises PioError with the output's tail when it fails."""
    cmd = pio_executable() + list(args)
    proc = subprocess.run(cmd, cwd=project, env=pio_env(core), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise PioError(f"`pio {' '.join(args)}` failed in {project} (exit {proc.returncode}):\n{tail}")
    return proc


def default_env(project) -> str:
    """The project's default environment (platformio.ini [platformio] default_envs)."""
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(Path(project) / "platformio.ini")
    envs = cfg.get("platformio", "default_envs", fallback="").split(",")
    if not envs[0].strip():
        raise PioError(f"{project}/platformio.ini names no default_envs")
    return envs[0].strip()


def build_offline(project, core=None) -> Path:
    """`pio run` on a bare-metal project (mcu-gen's local dev-platform); returns the ELF."""
    core = ensure_tool_scons(core)
    run_pio(["run"], project, core)
    return Path(project) / ".pio" / "build" / default_env(project) / "firmware.elf"


def build_framework_project(project) -> Path:
    """`pio run` on a project on an upstream platform (Arduino-Pico, STM32duino, ...): PlatformIO
    installs the platform, toolchain and framework on first use, which needs network access."""
    try:
        run_pio(["run"], project, timeout=3600)
    except PioError as e:
        raise PioError(f"{e}\nThe project in {project} uses an upstream PlatformIO platform: its first build "
                       "downloads the platform, the toolchain and the framework, which needs network access "
                       "(see docs/pico2.md); the rendered project builds with `pio run` on a connected machine.") from None
    return Path(project) / ".pio" / "build" / default_env(project) / "firmware.elf"


def validate_config(project) -> dict:
    """PlatformIO's own config check (no network): {"errors": [...], "warnings": [...]}."""
    from platformio.project.config import ProjectConfig

    path = str(Path(project) / "platformio.ini")
    result = ProjectConfig.lint(path)
    cfg = ProjectConfig(path)
    cfg.validate()  # raises on invalid values / unknown envs
    return result
