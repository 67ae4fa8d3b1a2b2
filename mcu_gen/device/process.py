"""What a firmware running as a process on this machine has in common, whether QEMU runs it (qemu.py) or it
is a native executable (native.py, the host board): its log lines kept for error messages, EXIT and its
status, and a close that always ends the process."""
from __future__ import annotations

import collections
import subprocess
import threading

from mcu_gen.device.link import LinkError


class DeviceProcess:
    """Subclasses start `self.proc` and set `self.port` and `self.link` in start(), and name themselves in
    `what()` (describe's first words)."""

    def __init__(self, board, elf, timeout: float, run_timeout: float):
        self.board, self.elf, self.timeout, self.run_timeout = board, elf, timeout, run_timeout
        self.proc: subprocess.Popen | None = None
        self.port = None
        self.link = None
        self.log = collections.deque(maxlen=200)  # the device's log and the emulator's messages
        self._readers: list[threading.Thread] = []

    def what(self) -> str:
        raise NotImplementedError

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _drain(self, stream, prefix: str) -> None:
        def pump():
            for line in iter(stream.readline, b""):
                text = line.decode(errors="replace").rstrip("\n")
                self.log.append(f"{prefix}: {text}" if prefix else text)

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        self._readers.append(t)

    def describe(self) -> str:
        if self.proc is not None and self.proc.poll() is None:
            try:  # a process that closed its end of the link is usually exiting: let its status be known
                self.proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None and self.proc.poll() is not None:
            for t in self._readers:  # its last log lines: the readers end at the pipes' end of file
                t.join(timeout=0.2)
        state = "running" if self.proc is not None and self.proc.poll() is None else \
            f"exited with status {self.proc.returncode if self.proc else None}"
        lines = list(self.log)[-10:]
        log = "\n".join(f"  | {l}" for l in lines) if lines else "  | (no device log output)"
        return f"board {self.board.name} ({self.what()}, {self.elf.name}) {state}; last log lines:\n{log}"

    def exit(self, code: int = 0, timeout: float = 5.0) -> int:
        """Sends EXIT(code) and returns the process's exit status."""
        self.link.exit(code)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LinkError(f"{self.what()} did not exit within {timeout:g} s after EXIT\n{self.describe()}") from None

    @property
    def returncode(self):
        return None if self.proc is None else self.proc.poll()

    def close(self) -> None:
        if self.port is not None:
            try:
                self.port.close()
            except Exception:
                pass
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for t in self._readers:
                t.join(timeout=1.0)
            for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if s:
                    try:
                        s.close()
                    except OSError:
                        pass
