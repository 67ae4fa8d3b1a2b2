# The mcu-gen local dev-platform's Python side (PlatformIO loads it as the class
# <Name>Platform, the platform name "mcu-gen-local" without punctuation).
# Whenever PlatformIO sets the platform up for a project (when `pio run` first
# installs it, and before each build) it makes PlatformIO's core package
# tool-scons from the scons wheel pip installed (mcu_gen_tool_scons.py beside
# this file, a copy of mcu_gen/firmware/pio_tool_scons.py), so that `pio run` works
# offline even in a PlatformIO core that has never been used: nothing to set up
# first. With no SCons 4.11.1 to be found, PlatformIO installs tool-scons as
# usual (online).
import os
import sys

from platformio.public import PlatformBase, ProjectConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mcu_gen_tool_scons  # noqa: E402


class McugenlocalPlatform(PlatformBase):
    def configure_default_packages(self, options, targets):
        packages_dir = ProjectConfig.get_instance().get("platformio", "packages_dir")
        mcu_gen_tool_scons.provision(packages_dir, here=os.path.dirname(os.path.abspath(__file__)))
        return super().configure_default_packages(options, targets)
