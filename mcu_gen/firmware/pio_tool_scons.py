"""PlatformIO's `tool-scons` package, made from PyPI's scons wheel instead of PlatformIO's registry.

PlatformIO Core runs every build through SCons, which it installs from its registry as the core
package `tool-scons` the first time it builds anything. mcu-gen makes that package from the
`scons` distribution pip installed (scons==4.11.1, the version PlatformIO 6.x asks for,
~4.41101.0), so its bare-metal projects build with `pio run` and nothing is downloaded.

Standard library only: this file is used by mcu-gen (mcu_gen/firmware/platformio_setup.py) and is also
copied, as it is, into every generated project's dev-platform (pio_platform/mcu_gen_tool_scons.py),
whose platform.py runs it inside PlatformIO before each build. That is what makes a project
build in a PlatformIO core that has never been used, with no set-up command.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

SCONS_VERSION = "4.11.1"
# PlatformIO's version of the package: 4.<major*10000+minor*100+patch>.0
TOOL_SCONS_VERSION = "4.41101.0"
# Written beside this file in a generated dev-platform: where mcu-gen's own SCons was.
SCONS_HINT_FILE = "mcu_gen_scons.json"

SCONS_LAUNCHER = """\
# Made by mcu-gen (mcu_gen/firmware/pio_tool_scons.py) from PyPI's scons wheel.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import SCons.Script  # noqa: E402

SCons.Script.main()
"""


def scons_version(scons_dir) -> str | None:
    """The version of the SCons package in `scons_dir` (read from its __init__.py, not imported)."""
    try:
        text = (Path(scons_dir) / "__init__.py").read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.M)
    return m.group(1) if m else None


def usable_scons(scons_dir) -> bool:
    return scons_dir is not None and scons_version(scons_dir) == SCONS_VERSION and (Path(scons_dir) / "Script").is_dir()


def tool_scons_ok(packages_dir) -> bool:
    """Whether `packages_dir`/tool-scons is a complete package of the version PlatformIO asks for."""
    pkg = Path(packages_dir) / "tool-scons"
    try:
        manifest = json.loads((pkg / ".piopm").read_text())
        meta = json.loads((pkg / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return (manifest.get("spec", {}).get("owner") == "platformio" and meta.get("version") == TOOL_SCONS_VERSION
            and (pkg / "scons.py").is_file() and (pkg / "SCons" / "Script").is_dir())


def make_tool_scons(packages_dir, scons_dir) -> Path:
    """Writes `packages_dir`/tool-scons from the SCons package in `scons_dir`; returns the package dir.

    The `.piopm` manifest must name owner "platformio": PlatformIO looks its core packages up by
    owner and would otherwise try its registry. Built in a temporary folder and renamed into place,
    so a build that stops half-way leaves no half package."""
    if not usable_scons(scons_dir):
        raise ValueError(f"{scons_dir} is not SCons {SCONS_VERSION}")
    packages = Path(packages_dir)
    pkg = packages / "tool-scons"
    tmp = packages / ".tool-scons.mcu-gen-tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    shutil.copytree(scons_dir, tmp / "SCons", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "scons.py").write_text(SCONS_LAUNCHER)
    (tmp / "package.json").write_text(json.dumps({"name": "tool-scons", "version": TOOL_SCONS_VERSION,
                                                  "system": "*"}) + "\n")
    (tmp / ".piopm").write_text(json.dumps({
        "type": "tool", "name": "tool-scons", "version": TOOL_SCONS_VERSION,
        "spec": {"owner": "platformio", "id": None, "name": "tool-scons", "requirements": None, "uri": None},
    }) + "\n")
    if pkg.exists():
        shutil.rmtree(pkg)
    tmp.rename(pkg)
    return pkg


def importable_scons() -> Path | None:
    """The SCons package this Python can import (pip's scons wheel), if it is the right version."""
    try:
        import SCons
    except ImportError:
        return None
    d = Path(SCons.__file__).resolve().parent
    return d if usable_scons(d) else None


def provision(packages_dir, here=None) -> bool:
    """Makes tool-scons in `packages_dir` unless it is there: from the SCons this Python imports,
    else from the one recorded in `here`/mcu_gen_scons.json (mcu-gen's own, when the project was
    rendered). True when the package is there afterwards; False leaves it to PlatformIO."""
    if tool_scons_ok(packages_dir):
        return True
    candidates = [importable_scons()]
    if here is not None:
        try:
            candidates.append(Path(json.loads((Path(here) / SCONS_HINT_FILE).read_text())["scons"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
    for scons_dir in candidates:
        if usable_scons(scons_dir):
            make_tool_scons(packages_dir, scons_dir)
            return True
    return False
