"""Several RAM regions (issue 18): a board declares more than one RAM region with a speed rank, the planner
puts the most-accessed tensors (bytes read + written per inference, per byte) in the fastest region that has
room, each region is one arena with fixed offsets (ExecuTorch memory ids), and the outputs stay bit-exact.
QEMU does not time memories: what is measured is where the bytes are and that nothing else changes."""
import copy
import subprocess
from pathlib import Path

import numpy as np
import pytest

import mcu_gen
from mcu_gen.boards import BoardError, get_board, load_board
from mcu_gen.firmware import builder, host, report
from mcu_gen.plan import inplace_pass, placement, planner, regions
from mcu_gen.program import pte
from mcu_gen.reference import check_planned_execution
from mcu_gen.reference import inputs as reference_inputs


@pytest.fixture(scope="module")
def kws_int8():
    program, _, _ = builder.load_program("examples/kws_dscnn/model.py", quantize="int8", io="int8")
    return program


def _specs(fast: int, slow: int = 1 << 21):
    return [regions.Region("dtcm", 1, 1, fast), regions.Region("sram", 2, 2, slow)]


def test_an547_declares_dtcm_and_sram():
    b = get_board("mps3-an547")
    names = [(r.name, r.speed, r.main) for r in b.ram_regions]
    assert names == [("dtcm", 1, True), ("sram", 2, False)]
    assert b.ram_regions[1].base == 0x11000000 and b.ram_regions[1].section == ".arena_sram"
    assert [r.name for r in get_board("mps2-an505").ram_regions] == ["ram"]  # one region: as before


BOARD = """name = "x"
core = "cortex-m7"
clock_hz = 1
[flash]
base = 0x08000000
size = 0x100000
[ram]
name = "axi"
speed = 2
base = 0x24000000
size = 0x80000
"""


def test_region_tables_are_checked(tmp_path):
    f = tmp_path / "board.toml"
    f.write_text(BOARD + '[ram_regions.dtcm]\nbase = 0x20000000\nsize = 0x20000\nspeed = 1\nsection = ".arena_dtcm"\n')
    b = load_board(f)
    assert [(r.name, r.speed, r.mem_id if hasattr(r, "mem_id") else k) for k, r in enumerate(b.ram_regions, 1)] == [
        ("axi", 2, 1), ("dtcm", 1, 2)]
    f.write_text(BOARD + '[ram_regions.tcm]\nbase = 0x24001000\nsize = 4096\nspeed = 1\nsection = ".arena_tcm"\n')
    with pytest.raises(BoardError, match="overlap"):
        load_board(f)
    f.write_text(BOARD + "[ram_regions.tcm]\nbase = 0x20000000\nsize = 4096\n")
    with pytest.raises(BoardError, match="section"):
        load_board(f)
    f.write_text(BOARD + '[ram_regions.axi]\nbase = 0x20000000\nsize = 4096\nsection = ".a"\n')
    with pytest.raises(BoardError, match="must differ"):
        load_board(f)


def test_plan_fits_the_fast_region_unchanged(kws_int8):
    p = copy.deepcopy(kws_int8)
    before = [(v.mem_id, v.offset) for v in p.values if hasattr(v, "mem_id")]
    rep = regions.place_in_regions(p, _specs(64 * 1024))
    assert p.arena_sizes == [kws_int8.arena_size] and p.extra_arenas == []
    assert [(v.mem_id, v.offset) for v in p.values if hasattr(v, "mem_id")] == before
    assert rep[0]["access_share"] == 1.0 and rep[1]["arena_bytes"] == 0
    assert pte.write(p) == pte.write(kws_int8)  # byte for byte the one-arena program


def test_small_fast_region_splits_the_plan_hottest_first(kws_int8):
    p = copy.deepcopy(kws_int8)
    rep = regions.place_in_regions(p, _specs(4096))
    assert len(p.arena_sizes) == 2 and 0 < p.arena_sizes[0] <= 4096 and p.arena_sizes[1] > 0
    planner.check_plan(p)
    used = {v.mem_id for v in p.values if hasattr(v, "mem_id") and not v.is_constant}
    assert used == {1, 2}
    # The hottest buffer per byte is in the fast region, and per byte of arena the fast region serves more.
    iv = planner.lifetimes(p)
    bufs = [b for b in placement.make_buffers(iv, [regions._Pair(o, s) for _, o, s in p.meta["inplace"]]) if b.size]
    traffic = regions.access_bytes(p)
    hottest = max(bufs, key=lambda b: sum(traffic.get(m, 0) for m in b.members) / b.size)
    assert p.values[hottest.members[0]].mem_id == 1
    fast, slow = rep
    assert fast["access_bytes"] / fast["tensor_bytes"] > slow["access_bytes"] / slow["tensor_bytes"]
    assert abs(sum(r["access_share"] for r in rep) - 1.0) < 1e-3
    # The program stays ET12 with two planned buffers, read back the same.
    back = pte.read(pte.write(p))
    assert back.arena_sizes == p.arena_sizes
    def placed(q):
        return {(v.mem_id, v.offset, v.nbytes) for v in q.values if hasattr(v, "mem_id") and not v.is_constant and v.nbytes}
    assert placed(back) == placed(p)
    # The host reference in two arenas at the planned offsets equals every tensor in its own buffer.
    check_planned_execution(p, reference_inputs.plan_check_inputs(p))


def test_split_plan_runs_natively_with_two_exact_arenas(kws_int8):
    """The runtime (MCU_ARENA_REGIONS=2, under ASan/UBSan, each arena an exactly sized block) gives the same
    bytes as the one-arena program."""
    p = copy.deepcopy(kws_int8)
    regions.place_in_regions(p, _specs(4096))
    x = reference_inputs.plan_check_inputs(kws_int8)
    one = host.run_on_host(copy.deepcopy(kws_int8), x)
    two = host.run_on_host(p, x)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(one, two))


def test_pinned_region_takes_everything(kws_int8):
    p = copy.deepcopy(kws_int8)
    rep = regions.place_in_regions(p, _specs(1 << 20), pin="sram")
    assert p.arena_size == 0 and p.extra_arenas == [kws_int8.arena_size]
    assert rep[1]["access_share"] == 1.0
    planner.check_plan(p)
    with pytest.raises(regions.RegionError, match="regions are dtcm, sram"):
        regions.place_in_regions(copy.deepcopy(kws_int8), _specs(1 << 20), pin="itcm")


def test_no_room_names_the_region_and_the_bytes(kws_int8):
    with pytest.raises(regions.RegionError, match=r"region 'sram' would need [\d,]+ B, its budget is 4,000 B "
                                                  r"\([\d,]+ B too many"):
        regions.place_in_regions(copy.deepcopy(kws_int8), _specs(400, 4000))
    with pytest.raises(mcu_gen.errors.BuildError, match="no RAM region 'tcm'"):
        builder.parse_ram_regions("tcm=4K", get_board("mps3-an547"))
    assert builder.parse_ram_regions("dtcm=4K,sram=1M", get_board("mps3-an547")) == {"dtcm": 4096,
                                                                                     "sram": 1 << 20}


@pytest.mark.qemu
def test_split_over_dtcm_and_sram_is_bit_exact_on_qemu(tmp_path, qemu_tools):
    """KWS int8 on the M55 with 4 KiB of DTCM for the arena: the plan spans DTCM and the FPGA SRAM, the linker
    puts the second arena at 0x11000000, and the outputs stay bit-exact with the integer reference."""
    r = mcu_gen.run("examples/kws_dscnn/model.py", board="mps3-an547", out=tmp_path / "kws", quantize="int8",
                    io="int8", backend="portable", n_random=2, max_inputs=2, ram_regions="dtcm=4K")
    assert r.verified and r.bit_exact
    out = Path(r.out)
    rep = report.load_report(out)
    dtcm, sram = rep["ram_regions"]
    assert 0 < dtcm["arena_bytes"] <= 4096 and sram["arena_bytes"] > 0
    assert dtcm["arena_bytes"] + sram["arena_bytes"] == rep["arena_bytes"]
    assert rep["size"]["ram_regions"]["sram"] == sram["arena_bytes"]
    nm = subprocess.run(["arm-none-eabi-nm", "-S", str(out / "firmware.elf")], capture_output=True,
                        text=True).stdout
    arena2 = [l.split() for l in nm.splitlines() if "g_arena_2" in l]
    assert arena2 and int(arena2[0][0], 16) == 0x11000000 and int(arena2[0][1], 16) == sram["arena_bytes"]
    assert "## RAM regions" in (out / "report.md").read_text()


@pytest.mark.interop
def test_split_program_runs_in_executorch_runtime():
    """ExecuTorch's own runtime takes the two-buffer program (one planned buffer per memory id) and gives the
    one-buffer program's outputs, bit for bit."""
    pytest.importorskip("executorch", reason="executorch wheel not installed (scripts/setup.sh installs it)")
    import torch
    from executorch.runtime import Runtime

    from mcu_gen.capture.export import export_model
    from mcu_gen.capture.model_file import load_model_file

    spec = load_model_file("examples/mnist/model.py")
    program = export_model(spec, fuse=False)  # standard ATen .out operators only
    inplace_pass.plan_memory(program)
    one = pte.write(program)
    regions.place_in_regions(program, _specs(8192))
    assert len(program.arena_sizes) == 2 and all(program.arena_sizes)
    two = pte.write(program)
    torch.manual_seed(3)
    x = torch.randn(1, 1, 28, 28)
    outs = []
    for data in (one, two):
        et_program = Runtime.get().load_program(data)
        method = et_program.load_method("forward")
        outs.append(method.execute([x])[0].clone())
        del method, et_program
    assert torch.equal(outs[0], outs[1])


def test_pinned_main_region_keeps_the_plan_and_checks_its_room(kws_int8):
    p = copy.deepcopy(kws_int8)
    regions.place_in_regions(p, _specs(1 << 20), pin="dtcm")
    assert pte.write(p) == pte.write(kws_int8)
    with pytest.raises(regions.RegionError, match=r"region 'dtcm': the arena needs 8,496 B, its budget is 4,096 B "
                                                  r"\(4,400 B too many\)"):
        regions.place_in_regions(copy.deepcopy(kws_int8), _specs(4096), pin="dtcm")
    with pytest.raises(mcu_gen.errors.BuildError, match="--arena-region 'itcm': board mps3-an547 has the RAM "
                                                        "regions dtcm, sram"):
        builder.place_regions(get_board("mps3-an547"), copy.deepcopy(kws_int8), None, arena_region="itcm")


@pytest.mark.qemu
def test_split_plan_passes_pio_test_on_qemu(tmp_path, qemu_tools):
    """The PlatformIO project of a two-region build (its own test main loads the program into both arenas)
    passes `pio test` under QEMU, offline."""
    pytest.importorskip("platformio", reason="PlatformIO is missing: run scripts/setup.sh")
    from mcu_gen.firmware import platformio_setup as pio

    core = pio.ensure_tool_scons(tmp_path / "pio-core")
    r = builder.build("examples/kws_dscnn/model.py", board="mps3-an547", out=tmp_path / "kws", quantize="int8",
                      io="int8", backend="portable", ram_regions="dtcm=4K", compile=False)
    assert len(r.program.arena_sizes) == 2
    project = r.out / "firmware"
    assert "-DMCU_ARENA_REGIONS=2" in (project / "platformio.ini").read_text()
    assert pio.build_offline(project, core).is_file()  # the firmware itself, with PlatformIO
    out = pio.run_pio(["test", "-e", "mps3_an547_test"], project, core).stdout
    assert "3 test cases: 3 succeeded" in out, out[-3000:]
