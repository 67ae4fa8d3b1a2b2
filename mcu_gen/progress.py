"""Progress bars for the long steps (calibration, compile, flash, many inferences), on stderr.

    bar = Progress("inferences", total=100)        # quiet unless stderr is a terminal
    for k in range(100): ...; bar.update(k + 1)
    bar.done()

    with Progress.step("compiling firmware"):       # a step without a count: a spinner line
        compile()

`Progress(..., enabled=False)` (e.g. with --json) prints nothing. A Progress is also a callable
`progress(done, total)`, the signature mcu_gen.run(progress=...) calls.
"""
from __future__ import annotations

import contextlib
import sys
import time

WIDTH = 28
MIN_INTERVAL_S = 0.1  # redraw at most 10 times a second


_quiet = False


@contextlib.contextmanager
def quiet(on: bool = True):
    """Silence progress bars inside the block (when `on`), then restore the previous setting."""
    global _quiet
    before = _quiet
    _quiet = before or on
    try:
        yield
    finally:
        _quiet = before


def interactive(stream=None) -> bool:
    if _quiet:
        return False
    stream = stream or sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    def __init__(self, label: str, total: int | None = None, enabled: bool | None = None, stream=None):
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = interactive(self.stream) if enabled is None else enabled
        self.start = time.monotonic()
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total: int | None = None) -> None:
        self.update(done, total)

    def line(self, done: int) -> str:
        elapsed = time.monotonic() - self.start
        if not self.total:
            return f"{self.label}: {done} ({elapsed:.1f} s)"
        frac = min(1.0, done / self.total)
        filled = int(WIDTH * frac)
        bar = "#" * filled + "-" * (WIDTH - filled)
        eta = f", {elapsed / frac - elapsed:.0f} s left" if 0 < frac < 1 else ""
        return f"{self.label} [{bar}] {done}/{self.total} ({elapsed:.1f} s{eta})"

    def update(self, done: int, total: int | None = None) -> None:
        if total is not None:
            self.total = total
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < MIN_INTERVAL_S and done != self.total:
            return
        self._last = now
        self.stream.write("\r" + self.line(done) + "\x1b[K")
        self.stream.flush()
        self._shown = True

    def done(self, message: str | None = None) -> None:
        if not self.enabled:
            return
        if self._shown or message:
            text = message or self.line(self.total or 0)
            self.stream.write("\r" + text + "\x1b[K\n")
            self.stream.flush()
        self._shown = False

    @classmethod
    @contextlib.contextmanager
    def step(cls, label: str, enabled: bool | None = None, stream=None):
        """One step without a count: 'label ...' then 'label done (1.2 s)'."""
        p = cls(label, None, enabled, stream)
        if p.enabled:
            p.stream.write(f"{label} ...\x1b[K")
            p.stream.flush()
        try:
            yield p
        finally:
            if p.enabled:
                p.stream.write(f"\r{label} done ({time.monotonic() - p.start:.1f} s)\x1b[K\n")
                p.stream.flush()


def for_cli(args, label: str, total: int | None = None) -> Progress:
    """A bar that is quiet with --json or when stderr is not a terminal."""
    return Progress(label, total, enabled=False if getattr(args, "json", False) else None)
