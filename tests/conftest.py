import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

CROSS_TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-g++", "qemu-system-arm", "cmake")


def missing_cross_tools():
    return [t for t in CROSS_TOOLS if shutil.which(t) is None]


@pytest.fixture(scope="session")
def qemu_tools():
    """Fails (not skips) when the cross toolchain or QEMU is missing: scripts/setup.sh installs them."""
    missing = missing_cross_tools()
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run scripts/setup.sh")
    return True
