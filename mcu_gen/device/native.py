"""Running a host-board firmware: a native executable on this machine, talking the verify protocol over
its stdin/stdout (boards/host/pal_host.cpp) and logging on stderr.

    with NativeSession(get_board("host"), "firmware.elf") as link:
        link.hello()
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from mcu_gen.device.link import Link, PipePort
from mcu_gen.device.process import DeviceProcess


class NativeSession(DeviceProcess):
    def __init__(self, board, elf, timeout: float = 2.0, run_timeout: float = 60.0, extra_args: tuple = ()):
        if not board.is_native:
            raise ValueError(f"board {board.name!r} is not a native one (emulator.kind = {board.emulator.kind!r})")
        if extra_args:
            raise ValueError(f"board {board.name} runs natively: no emulator to give {' '.join(extra_args)} to")
        super().__init__(board, Path(elf), timeout, run_timeout)

    def what(self) -> str:
        return "a native process"

    def start(self) -> Link:
        if not self.elf.is_file():
            raise FileNotFoundError(f"firmware {self.elf} does not exist")
        self.proc = subprocess.Popen([str(self.elf)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        try:
            self._drain(self.proc.stderr, "")
            # The port owns duplicates of the pipe ends: closing it and closing the Popen's files are separate.
            self.port = PipePort(os.dup(self.proc.stdout.fileno()), os.dup(self.proc.stdin.fileno()), self.timeout)
            self.link = Link(self.port, timeout=self.timeout, run_timeout=self.run_timeout, describe=self.describe)
            return self.link
        except BaseException:
            self.close()
            raise
