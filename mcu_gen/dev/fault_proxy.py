"""A fault-injecting proxy between the host Link and a device's serial port (tests of the link).

    proxy = FaultProxy(session.port)               # the QEMU pty (pyserial) or any fd-backed port
    link = Link(proxy.port, timeout=1.0)           # the host talks through a socket pair
    proxy.to_device.at[proxy.to_device.seen + 5] = "corrupt"   # the 6th byte of the next request
    proxy.to_host.drop = 0.001                      # or random faults, per byte, seeded
    ...
    proxy.close()

Faults per direction (`Faults`): "drop" a byte, "dup" (send it twice), "corrupt" (flip its bits),
"stall" (hold it, and everything after it, for `stall_s` seconds; math.inf = a dead link).
"""
from __future__ import annotations

import math
import os
import random
import select
import socket
import threading
import time
from dataclasses import dataclass, field

from mcu_gen.device.link import PipePort

ACTIONS = ("drop", "dup", "corrupt", "stall")


@dataclass
class Faults:
    drop: float = 0.0  # probability per byte
    dup: float = 0.0
    corrupt: float = 0.0
    at: dict = field(default_factory=dict)  # byte position in this direction's stream -> action
    stall_s: float = 0.5
    seed: int = 0
    seen: int = 0  # bytes that entered the proxy in this direction so far
    injected: dict = field(default_factory=lambda: {a: 0 for a in ACTIONS})

    def __post_init__(self):
        self._rng = random.Random(self.seed)

    def action(self) -> str | None:
        pos = self.seen
        self.seen += 1
        act = self.at.pop(pos, None)
        if act is None:
            r = self._rng.random()
            for name, p in (("drop", self.drop), ("dup", self.dup), ("corrupt", self.corrupt)):
                if r < p:
                    act = name
                    break
                r -= p
        if act is not None:
            if act not in ACTIONS:
                raise ValueError(f"unknown fault {act!r}; choose one of {ACTIONS}")
            self.injected[act] += 1
        return act


class _Direction:
    def __init__(self, faults: Faults, write_fd: int):
        self.faults = faults
        self.write_fd = write_fd
        self.pending = bytearray()
        self.hold_until = 0.0

    def feed(self, data: bytes) -> None:
        for b in data:
            act = self.faults.action()
            if act == "drop":
                continue
            if act == "stall":
                self.hold_until = max(self.hold_until, time.monotonic() + self.faults.stall_s)
            if act == "corrupt":
                b ^= 0xFF
            self.pending.append(b)
            if act == "dup":
                self.pending.append(b)

    def flush(self) -> None:
        if not self.pending or time.monotonic() < self.hold_until:
            return
        try:
            n = os.write(self.write_fd, self.pending)
        except BlockingIOError:
            return
        del self.pending[:n]

    def timeout(self) -> float:
        if not self.pending:
            return 0.05
        left = self.hold_until - time.monotonic()
        return 0.0 if left <= 0 else min(0.05, left) if math.isfinite(left) else 0.05


class FaultProxy:
    """Pumps bytes between `device` (anything with fileno(): a pyserial port, a pty) and a socket
    pair whose other end is `self.port`, a pyserial-like port for mcu_gen.link.Link."""

    def __init__(self, device, to_device: Faults | None = None, to_host: Faults | None = None):
        self.device_fd = device.fileno()
        self.host_sock, self.proxy_sock = socket.socketpair()
        self.proxy_sock.setblocking(False)
        self.port = PipePort(self.host_sock.fileno(), self.host_sock.fileno(), timeout=0.05)
        self.to_device = to_device or Faults()
        self.to_host = to_host or Faults(seed=1)
        self._down = _Direction(self.to_device, self.device_fd)
        self._up = _Direction(self.to_host, self.proxy_sock.fileno())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        sources = {self.proxy_sock.fileno(): self._down, self.device_fd: self._up}
        while not self._stop.is_set():
            wait = min(self._down.timeout(), self._up.timeout())
            try:
                ready, _, _ = select.select(list(sources), [], [], wait)
            except (OSError, ValueError):
                return
            for fd in ready:
                try:
                    data = os.read(fd, 4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    return  # the device went away: the host sees a silent link
                if not data:
                    return
                sources[fd].feed(data)
            for d in (self._down, self._up):
                try:
                    d.flush()
                except OSError:
                    return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.host_sock.close()
        self.proxy_sock.close()

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
