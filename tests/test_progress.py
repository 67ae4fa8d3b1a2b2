"""Progress bars: drawn on a terminal, silent otherwise and with --json."""
import io

from mcu_gen import progress
from mcu_gen.progress import Progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_bar_draws_on_a_terminal_and_is_silent_elsewhere():
    tty = Tty()
    bar = Progress("calibration", total=4, stream=tty)
    for k in range(4):
        bar.update(k + 1)
    bar.done()
    assert "calibration [" in tty.getvalue() and "4/4" in tty.getvalue()
    pipe = io.StringIO()  # not a terminal
    bar = Progress("calibration", total=4, stream=pipe)
    bar.update(4)
    bar.done()
    assert pipe.getvalue() == ""


def test_step_and_quiet_mode():
    tty = Tty()
    with Progress.step("compiling firmware", stream=tty):
        pass
    assert "compiling firmware done" in tty.getvalue()
    progress.set_quiet(True)
    try:
        tty = Tty()
        with Progress.step("compiling firmware", stream=tty):
            pass
        Progress("inferences", total=2, stream=tty).update(2)
        assert tty.getvalue() == ""
    finally:
        progress.set_quiet(False)
