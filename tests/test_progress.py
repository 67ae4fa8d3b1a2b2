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
    with progress.quiet():
        tty = Tty()
        with Progress.step("compiling firmware", stream=tty):
            pass
        Progress("inferences", total=2, stream=tty).update(2)
        assert tty.getvalue() == ""
    tty = Tty()  # the setting is restored after the block
    Progress("inferences", total=2, stream=tty).update(2)
    assert "inferences [" in tty.getvalue()


def test_cli_json_leaves_progress_enabled_afterwards(capsys):
    from mcu_gen.cli import main

    assert main(["boards", "--json"]) == 0
    tty = Tty()
    Progress("inferences", total=1, stream=tty).update(1)
    assert "inferences [" in tty.getvalue()
