"""boards/<name>/board.toml parsing."""
import pytest

from mcu_gen.boards import BoardError, get_board, list_boards, load_board


def test_known_boards():
    assert {"host", "mps2-an505"} <= set(list_boards())


def test_mps2_an505():
    b = get_board("mps2-an505")
    assert (b.core, b.fpu, b.dsp, b.mve, b.npu) == ("cortex-m33", True, True, False, False)
    assert (b.flash.base, b.flash.size, b.ram.base, b.ram.size) == (0x10000000, 4 << 20, 0x38000000, 4 << 20)
    assert "-mfloat-abi=hard" in b.cflags and "-mcpu=cortex-m33" in b.cflags
    assert b.is_qemu and b.emulator.machine == "mps2-an505" and b.emulator.icount_shift == 7
    assert all(p.is_file() for p in b.files) and b.linker_script_path.name == "an505.ld"
    # 128 ns per instruction, 50 ns per SysTick tick; +-1 tick of phase still gives one count.
    assert b.ticks_per_instruction == pytest.approx(2.56)
    assert [b.instructions_from_ticks(t) for t in (512071, 512072)] == [200028] * 2
    assert b.instructions_from_ticks(5120084) == 2000033


def test_host_board_has_no_icount():
    b = get_board("host")
    assert not b.is_qemu and b.linker_script_path is None and b.sources == ("pal_host.cpp",)
    with pytest.raises(BoardError, match="no icount"):
        b.ticks_per_instruction


def test_unknown_board_lists_known_ones():
    with pytest.raises(BoardError, match=r"unknown board 'rp9999'; known boards: .*host.*mps2-an505"):
        get_board("rp9999")


def test_malformed_board_toml(tmp_path):
    (tmp_path / "x").mkdir()
    p = tmp_path / "x" / "board.toml"
    p.write_text('name = "x"\ncore = "cortex-m4"\nclock_hz = 1\n[flash]\nbase = 0\n[ram]\nbase = 0\nsize = 1\n')
    with pytest.raises(BoardError, match=r"\[flash\] needs integer 'base' and 'size'"):
        load_board(p)
    p.write_text('name = "x"\ncore = "m4"\n')
    with pytest.raises(BoardError, match="missing 'clock_hz'"):
        load_board(p)
    p.write_text('name = "x"\ncore = "m4"\nclock_hz = 1\n[flash]\nbase = 0\nsize = 1\n[ram]\nbase = 0\nsize = 1\n'
                 '[build]\nsources = ["missing.c"]\n')
    with pytest.raises(BoardError, match="board file missing.c does not exist"):
        load_board(p)
