"""Where the project's non-Python parts live (runtime, kernels, boards, templates, schema, examples).

An installed mcu-gen (a wheel) carries them as package data in `mcu_gen/_data/`, laid out as
in the source tree (setup.py copies them there when it builds the wheel); a checkout (and an
editable install of it) has them at the top of the tree. ROOT is whichever holds them: the
packaged copy when there is one, else the checkout. Every file mcu-gen reads at run time is
found through this module.
"""
import os
from importlib.resources import files
from pathlib import Path

# The directories (relative to the tree's top) a wheel carries; setup.py copies exactly these.
DATA_DIRS = ("runtime_core", "kernels_portable", "kernels_cmsis_nn", "kernels_generated", "boards", "templates",
             "docs/schema", "examples")

PACKAGE = Path(str(files("mcu_gen")))
PACKAGED_DATA = PACKAGE / "_data"
CHECKOUT = PACKAGE.parent


def _root() -> Path:
    if (PACKAGED_DATA / "runtime_core").is_dir():
        return PACKAGED_DATA
    if (CHECKOUT / "runtime_core").is_dir():
        return CHECKOUT
    raise RuntimeError(f"mcu-gen's runtime, kernels and boards are missing: neither {PACKAGED_DATA} (an installed "
                       f"wheel) nor {CHECKOUT} (a checkout) has runtime_core/; reinstall mcu-gen")


ROOT = _root()


def cache_root() -> Path:
    """Where mcu-gen keeps what it builds for reuse ($MCU_GEN_CACHE, default ~/.cache/mcu-gen): host runners and
    objects (host/), fuzz harnesses (fuzz/), the QEMU cycle plugin (qemu-plugin/), sweep results (sweep/)."""
    return Path(os.environ.get("MCU_GEN_CACHE", Path.home() / ".cache" / "mcu-gen"))
RUNTIME_CORE = ROOT / "runtime_core"
KERNELS_PORTABLE = ROOT / "kernels_portable"
KERNELS_CMSIS_NN = ROOT / "kernels_cmsis_nn"
KERNELS_GENERATED = ROOT / "kernels_generated"  # the static C++ of the generated int8 kernels
BOARDS = ROOT / "boards"
TEMPLATES = ROOT / "templates"
SCHEMA = ROOT / "docs" / "schema"
EXAMPLES = ROOT / "examples"
