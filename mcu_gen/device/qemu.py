"""Running firmware on an emulated board and talking to it.

    with QemuSession(get_board("mps2-an505"), "firmware.elf") as link:
        info = link.hello()
        ...
        session.exit(0) -> QEMU's exit status

QEMU gets UART0 on a pty (opened with pyserial), semihosting on stderr (the
device log, kept for error messages), and `-icount shift=N` from the board so
SysTick counts instructions deterministically. QEMU is always killed on exit.
"""
from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

from mcu_gen.boards import Board
from mcu_gen.device.link import Link, LinkError
from mcu_gen.device.process import DeviceProcess
from mcu_gen.firmware.toolchain import find_tool

PTY_RE = re.compile(rb"char device redirected to (/dev/pts/\d+)")


class QemuSession(DeviceProcess):
    def __init__(self, board: Board, elf, icount: bool = True, timeout: float = 2.0,
                 run_timeout: float = 60.0, boot_timeout: float = 5.0, extra_args: tuple = ()):
        if not board.is_qemu:
            raise ValueError(f"board {board.name!r} has no QEMU emulator (emulator.kind = {board.emulator.kind!r})")
        super().__init__(board, Path(elf), timeout, run_timeout)
        self.icount = icount
        self.boot_timeout = boot_timeout
        self.extra_args = tuple(extra_args)

    def what(self) -> str:
        return f"QEMU {self.board.emulator.machine}"

    def command(self) -> list[str]:
        cmd = [find_tool(self.board.emulator.binary), "-M", self.board.emulator.machine, "-display", "none",
               "-monitor", "none", "-semihosting-config", "enable=on,target=native", "-serial", "pty",
               "-kernel", str(self.elf)]
        if self.icount and self.board.emulator.icount_shift is not None:
            cmd += ["-icount", f"shift={self.board.emulator.icount_shift}"]
        return cmd + list(self.board.emulator.extra_args) + list(self.extra_args)

    # --- lifecycle -------------------------------------------------------------
    def start(self) -> Link:
        import serial  # pyserial

        if not self.elf.is_file():
            raise FileNotFoundError(f"firmware {self.elf} does not exist")
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        try:
            pty = self._wait_for_pty()
            self._drain(self.proc.stdout, "qemu")
            self._drain(self.proc.stderr, "")
            self.port = self._open_pty(serial, pty)
            self.link = Link(self.port, timeout=self.timeout, run_timeout=self.run_timeout,
                             describe=self.describe)
            return self.link
        except BaseException:
            self.close()
            raise

    def _wait_for_pty(self) -> str:
        """QEMU prints 'char device redirected to /dev/pts/N (label serial0)' on stdout."""
        out = self.proc.stdout
        fd = out.fileno()
        os.set_blocking(fd, False)
        seen = b""
        end = time.monotonic() + self.boot_timeout
        while time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                chunk = os.read(fd, 4096)
                seen += chunk
                m = PTY_RE.search(seen)
                if m:
                    os.set_blocking(fd, True)
                    rest = seen[m.end():].decode(errors="replace").splitlines()[1:]
                    self.log.extend(f"qemu: {l}" for l in rest if l.strip())
                    return m.group(1).decode()
                if not chunk:
                    break
            if self.proc.poll() is not None:
                break
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
        raise LinkError(f"QEMU ({self.board.name}) did not offer a serial pty within {self.boot_timeout:g} s "
                        f"(exit status {self.proc.poll()}): {(seen.decode(errors='replace') + err).strip()}")

    def _open_pty(self, serial, pty: str):
        """Opens QEMU's pty; configuring it can fail with EIO for a moment right after QEMU made it."""
        end = time.monotonic() + self.boot_timeout
        while True:
            try:
                return serial.Serial(pty, baudrate=self.board.baud or 115200, timeout=0.05)
            except serial.SerialException as e:
                if time.monotonic() > end or self.proc.poll() is not None:
                    raise LinkError(f"cannot open QEMU's serial port {pty}: {e}\n{self.describe()}") from e
                time.sleep(0.02)
