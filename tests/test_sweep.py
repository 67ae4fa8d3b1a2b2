"""`mcu-gen sweep` (mcu_gen/dev/sweep/): models x boards x options as tasks on Ray, the table, the Pareto
picture, the content-hash cache, failures as rows, the constraint pick, a Ray cluster started with
`ray start --head`, and the pytest plugin under pytest-xdist with two QEMU at once.

Kept small for CI: two tiny models (examples/mul_add and an 8->4 linear written here) x mps2-an505 and
mps3-an547 x --quantize none,int8 (mul_add has no calibration data: its int8 points fail, as rows)."""
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUL_ADD = ROOT / "examples" / "mul_add" / "model.py"

TINY = '''
import torch
from torch import nn


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 4), nn.ReLU()).eval()


def example_inputs():
    return (torch.randn(1, 8, generator=torch.Generator().manual_seed(1)),)


def calibration_inputs():
    g = torch.Generator().manual_seed(2)
    return [(torch.randn(1, 8, generator=g),) for _ in range(16)]


def test_inputs():
    g = torch.Generator().manual_seed(3)
    return [(torch.randn(1, 8, generator=g),) for _ in range(2)]
'''


def _env(tmp):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MCU_GEN_CACHE=str(tmp / "mcu-cache"))
    env.pop("RAY_ADDRESS", None)
    return env


def mcu_gen(args, tmp, timeout=900, check=True, env=None):
    p = subprocess.run([sys.executable, "-m", "mcu_gen.cli", *args], capture_output=True, text=True,
                       timeout=timeout, env=env or _env(tmp), cwd=tmp)
    if check and p.returncode != 0:
        pytest.fail(f"mcu-gen {' '.join(args)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def need_ray():
    pytest.importorskip("ray", reason="mcu-gen sweep needs Ray (the sweep extra; scripts/setup.sh installs it)")


# --- grid, pick: pure ----------------------------------------------------------------------------------
def test_grid_drops_options_that_do_not_apply_and_names_each_build():
    from mcu_gen.dev.sweep.grid import expand, parse_bytes, split_values

    grid = {"quantize": split_values([["none", "int8"]]), "kernels": split_values([["library", "auto"]])}
    assert grid == {"quantize": [None, "int8"], "kernels": ["library", "auto"]}
    points, merged = expand(["examples/mnist/model.py"], ["mps2-an505", "mps3-an547"], grid)
    assert [p.label() for p in points] == [
        "mnist mps2-an505 fp32", "mnist mps2-an505 quantize=int8 kernels=library",
        "mnist mps2-an505 quantize=int8 kernels=auto",
        "mnist mps3-an547 fp32", "mnist mps3-an547 quantize=int8 kernels=library",
        "mnist mps3-an547 quantize=int8 kernels=auto"]
    assert merged == [("mnist mps2-an505 --kernels auto", "mnist mps2-an505 fp32"),
                      ("mnist mps3-an547 --kernels auto", "mnist mps3-an547 fp32")]
    assert points[0].notes == ["--kernels library: int8 only, not applied without --quantize int8"]
    assert points[2].command(stack_bytes=2112) == ("mcu-gen build --board mps2-an505 --model examples/mnist/model.py "
                                                   "--quantize int8 --kernels auto --stack-bytes 2112")
    npu, _ = expand(["m.py"], ["mps2-an505", "corstone-300"], {"quantize": ["int8"], "npu": ["ethos-u55-128"]})
    assert [p.options for p in npu] == [{"quantize": "int8"}, {"quantize": "int8", "npu": "ethos-u55-128"}]
    assert (parse_bytes("64K"), parse_bytes("512KiB"), parse_bytes("1M"), parse_bytes("1000")) == (
        65536, 524288, 1048576, 1000)


def test_sweep_flags_make_the_grid():
    from mcu_gen.cli import build_parser
    from mcu_gen.cli.sweep_command import grid_from_args

    args = build_parser().parse_args([
        "sweep", "--model", "m.py", "--quantize", "none,int8", "--io", "int8", "--kernels", "library",
        "--kernels", "auto,library", "--calibration-method", "minmax,percentile",
        "--ram-regions", "dtcm=16K,sram=1M;default", "--ram-regions", "dtcm=4K,sram=1M"])
    assert grid_from_args(args) == {
        "quantize": [None, "int8"], "io": ["int8"], "backend": [], "kernels": ["library", "auto"],
        "calibration_method": ["minmax", "percentile"], "ram_regions": ["dtcm=16K,sram=1M", None, "dtcm=4K,sram=1M"],
        "npu": []}
    with pytest.raises(ValueError, match="--calibration-method hist: one of histogram, minmax"):
        grid_from_args(build_parser().parse_args(["sweep", "--model", "m.py", "--calibration-method", "hist"]))
    from mcu_gen.dev.sweep.grid import expand

    points, _ = expand(["m.py"], ["mps3-an547"], grid_from_args(args))
    assert len(points) == 3 + 1 * 2 * 2 * 3  # fp32 x 3 RAM layouts + int8 x kernels x methods x layouts
    assert points[-1].command() == ("mcu-gen build --board mps3-an547 --model m.py --quantize int8 --io int8 "
                                    "--kernels auto --calibration-method percentile --ram-regions dtcm=4K,sram=1M")


def _row(model, board, ms, ram, flash, err, status="ok"):
    return {"model": model, "board": board, "quantize": "int8", "status": status, "ms": ms, "ram_bytes": ram,
            "flash_bytes": flash, "error_vs_fp32": err, "command": f"mcu-gen build --board {board}"}


def test_pareto_and_pick_within_limits():
    from mcu_gen.dev.sweep.table import choose, mark_pareto

    rows = [_row("a", "fast-big", 1.0, 100 * 1024, 600 * 1024, 0.01),
            _row("a", "mid", 2.0, 60 * 1024, 400 * 1024, 0.01),
            _row("a", "slow-small", 5.0, 20 * 1024, 100 * 1024, 0.01),
            _row("a", "dominated", 6.0, 70 * 1024, 500 * 1024, 0.02),
            _row("a", "broken", None, None, None, None, status="failed")]
    mark_pareto(rows)
    assert [r["pareto"] for r in rows] == [True, True, True, False, False]
    (pick,) = choose(rows, max_ram=64 * 1024, max_flash=512 * 1024)
    assert pick["row"]["board"] == "mid"
    assert pick["why"].startswith("fastest of 2 verified build(s) within RAM <= 64.0 KiB and flash <= 512.0 KiB "
                                  "(2 ms; RAM 60.0 KiB")
    assert "next: slow-small int8 at 5 ms" in pick["why"]
    assert "2 verified build(s) exceed the limits, e.g. fast-big int8: RAM 100.0 KiB > 64.0 KiB, " \
           "flash 600.0 KiB > 512.0 KiB" in pick["why"] and "1 build(s) failed" in pick["why"]
    (none,) = choose(rows, max_ram=10 * 1024)
    assert none["row"] is None and none["why"].startswith("no verified build of a fits RAM <= 10.0 KiB")
    (small,) = choose(rows, prefer="ram_bytes")
    assert small["row"]["board"] == "slow-small"


def test_board_ports_and_xdist_worker_ports():
    from mcu_gen.dev.pytest_plugin import worker_port
    from mcu_gen.dev.sweep.task import board_ports

    assert board_ports("rp2350=/dev/ttyACM0, rp2350-riscv=/dev/ttyACM1") == {
        "rp2350": "/dev/ttyACM0", "rp2350-riscv": "/dev/ttyACM1"}
    with pytest.raises(ValueError, match="board=port pairs"):
        board_ports("/dev/ttyACM0")
    assert worker_port("/dev/a,/dev/b", "gw1", "2") == "/dev/b"
    assert worker_port("/dev/a", "", "1") == "/dev/a" and worker_port(None, "gw0", "2") is None
    with pytest.raises(pytest.UsageError, match="3 pytest-xdist workers need 3 boards"):
        worker_port("/dev/a,/dev/b", "gw0", "3")


# --- the sweep on a local Ray ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def first_sweep(tmp_path_factory, qemu_tools):
    need_ray()
    tmp = tmp_path_factory.mktemp("sweep")
    (tmp / "tiny").mkdir()
    (tmp / "tiny" / "model.py").write_text(TINY)
    args = ["sweep", "--model", str(tmp / "tiny" / "model.py"), "--model", str(MUL_ADD), "--board", "mps2-an505",
            "--board", "mps3-an547", "--quantize", "none,int8", "--out", str(tmp / "out"), "--cache",
            str(tmp / "cache"), "--num-cpus", "2"]
    t0 = time.monotonic()
    p = mcu_gen(args, tmp)
    return tmp, args, p, time.monotonic() - t0


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.mark.qemu
def test_sweep_table_picture_and_failures(first_sweep):
    tmp, _, p, _ = first_sweep
    rows = _csv(tmp / "out" / "sweep.csv")
    got = {(r["model"], r["board"], r["quantize"] or "fp32"): r for r in rows}
    assert sorted(got) == sorted((m, b, q) for m in ("tiny", "mul_add") for b in ("mps2-an505", "mps3-an547")
                                 for q in ("fp32", "int8"))
    for b in ("mps2-an505", "mps3-an547"):
        bad = got[("mul_add", b, "int8")]  # no calibration_inputs(): a row with its reason, not the end
        assert bad["status"] == "failed" and "int8 quantization needs calibration data" in bad["reason"]
        assert str(MUL_ADD) in bad["reason"] and "mcu-sweep-" not in bad["reason"]
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 6 and all(r["verified"] == "True" for r in ok)
    for r in ok:
        report = json.loads((Path(r["artifacts"]) / "report.json").read_text())
        assert int(r["ram_bytes"]) == report["ram_bytes"] > 0 and int(r["flash_bytes"]) == report["flash_bytes"] > 0
        assert (Path(r["artifacts"]) / "firmware.elf").stat().st_size > 1000
        assert float(r["ms"]) > 0 and int(r["cycles"]) > 0 and int(r["stack_bytes"]) == report["stack"]["reserved_bytes"]
        assert r["command"].startswith(f"mcu-gen build --board {r['board']} --model ")
        err = float(r["error_vs_fp32"])
        assert err < 1e-4 if r["quantize"] == "" else 0 < err < 0.2
    assert got[("tiny", "mps2-an505", "int8")]["bit_exact"] == "True"
    # the table printed, and the picture: its SVG names every Pareto point's command
    assert "mul_add  mps2-an505  int8" in p.stdout
    assert "8 build(s): 0 served from the cache, 8 task(s) ran on Ray (local, 2 CPU(s))" in p.stdout
    assert "int8 quantization needs calibration data" in p.stdout
    png = (tmp / "out" / "pareto.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    svg = (tmp / "out" / "pareto.svg").read_text()
    front = [r for r in ok if r["pareto"] == "True"]
    assert front and all(r["command"].replace("--", "&#45;&#45;") in svg or r["command"] in svg for r in front)
    doc = json.loads((tmp / "out" / "sweep.json").read_text())
    assert doc["ran"] == 8 and doc["cached"] == 0 and len(doc["rows"]) == 8 and doc["ray"]["cpus"] == 2
    # both cores: two Ray workers, and tasks that ran at the same time
    spans = sorted((r["started"], r["ended"]) for r in doc["rows"])
    assert len({r["pid"] for r in doc["rows"]}) >= 2
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:])), spans


@pytest.mark.qemu
def test_sweep_command_line_builds_that_image(first_sweep):
    """A point's command line, run as it stands, makes the image whose sizes the table shows."""
    tmp, _, _, _ = first_sweep
    (row,) = [r for r in _csv(tmp / "out" / "sweep.csv")
              if (r["model"], r["board"], r["quantize"]) == ("tiny", "mps3-an547", "int8")]
    import shlex

    args = shlex.split(row["command"])[2:] + ["--out", str(tmp / "again"), "--json"]
    rep = json.loads(mcu_gen(["build", *args], tmp).stdout)
    assert (rep["ram_bytes"], rep["flash_bytes"], rep["arena_bytes"]) == (
        int(row["ram_bytes"]), int(row["flash_bytes"]), int(row["arena_bytes"]))


@pytest.mark.qemu
def test_second_sweep_is_served_from_the_cache_and_picks_within_limits(first_sweep):
    tmp, args, _, first_seconds = first_sweep
    ok = [r for r in _csv(tmp / "out" / "sweep.csv") if r["status"] == "ok" and r["model"] == "tiny"]
    limit = min(int(r["ram_bytes"]) for r in ok)  # only the leanest tiny build(s) fit (RAM <= their own)
    fits = [r for r in ok if int(r["ram_bytes"]) <= limit]
    best = min(fits, key=lambda r: float(r["ms"]))
    assert len(fits) < len(ok)
    t0 = time.monotonic()
    p = mcu_gen(args + ["--max-ram", str(limit), "--max-flash", "512K"], tmp)
    seconds = time.monotonic() - t0
    assert "sweep: 8 of 8 task(s) served from the cache" in p.stderr
    assert "8 build(s): 8 served from the cache, no task ran" in p.stdout and "Ray (" not in p.stderr
    assert seconds < first_seconds / 2, (seconds, first_seconds)
    rows = _csv(tmp / "out" / "sweep.csv")
    assert all(r["cached"] == "True" for r in rows)
    assert f"best tiny: {best['command']}\n  why: fastest of {len(fits)} verified build(s) within RAM <= " \
           f"{limit / 1024:,.1f} KiB and flash <= 512.0 KiB ({float(best['ms']):.3g} ms" in p.stdout
    assert f"{len(ok) - len(fits)} verified build(s) exceed the limits" in p.stdout
    (mul_add,) = [l for l in p.stdout.splitlines() if "best mul_add" in l or "best mul_add" in l]
    assert "2 build(s) failed" in p.stdout.split("best mul_add", 1)[1].split("\nwrote", 1)[0], mul_add


# --- a Ray cluster: `ray start --head` on this machine -----------------------------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.qemu
def test_sweep_on_a_ray_cluster_with_a_board_resource(tmp_path, qemu_tools):
    """`ray start --head` (one CPU, offering board:rp2350 as a host with a Pico 2 would) and the sweep with
    --address: the QEMU point runs on the cluster; the rp2350 point is placed on the host offering the board
    (there is no board here, and MCU_GEN_BOARD_PORTS names none, so its row says so)."""
    need_ray()
    ray_bin = Path(sys.executable).with_name("ray")
    port = _free_port()
    env = _env(tmp_path)
    env.pop("MCU_GEN_BOARD_PORTS", None)
    log = open(tmp_path / "head.log", "w")
    head = subprocess.Popen([str(ray_bin), "start", "--head", "--port", str(port), "--num-cpus", "1",
                             "--resources", json.dumps({"board:rp2350": 1}), "--include-dashboard=false",
                             "--disable-usage-stats", "--block"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        end = time.monotonic() + 120
        while "Ray runtime started" not in (tmp_path / "head.log").read_text():
            assert head.poll() is None and time.monotonic() < end, (tmp_path / "head.log").read_text()[-2000:]
            time.sleep(0.5)
        p = mcu_gen(["sweep", "--model", str(MUL_ADD), "--board", "mps2-an505", "--board", "rp2350",
                     "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "out"),
                     "--cache", str(tmp_path / "cache"), "--no-picture"], tmp_path, env=env)
    finally:  # the head and everything it started (one process group), not any other Ray on the machine
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        head.wait()
        log.close()
    assert f"sweep: 2 task(s) on Ray (127.0.0.1:{port}: 1 node(s), 1 CPU(s), boards {{'rp2350': 1.0}})" in p.stderr, \
        p.stderr
    rows = {r["board"]: r for r in json.loads((tmp_path / "out" / "sweep.json").read_text())["rows"]}
    assert rows["mps2-an505"]["status"] == "ok" and rows["mps2-an505"]["mode"] == "run"
    assert rows["rp2350"]["mode"] == "hil" and rows["rp2350"]["status"] == "failed"
    assert "offers board:rp2350 but MCU_GEN_BOARD_PORTS names no port for it" in rows["rp2350"]["reason"]


# --- the pytest plugin under pytest-xdist --------------------------------------------------------------------
pytest_plugins = ["pytester"]

XDIST_TESTS = '''
import os, time
from pathlib import Path

BARRIER = Path(BARRIER_DIR)

def _both_up(mcu, me):
    """Holds this worker's QEMU open until the other worker's is up too: two QEMU at once."""
    result = mcu.build(MODEL)
    with mcu._device(result) as link:
        (BARRIER / me).write_text(f"{os.getpid()} {result.out}")
        end = time.monotonic() + 240
        while len(list(BARRIER.iterdir())) < 2 and time.monotonic() < end:
            time.sleep(0.2)
        assert len(list(BARRIER.iterdir())) == 2, "the other worker's QEMU never came up"
        assert link.hello().num_inputs == 2
    r = mcu.run(MODEL)
    assert r.verified and r.n_inferences == 3

def test_a(mcu):
    _both_up(mcu, "a-" + os.environ["PYTEST_XDIST_WORKER"])

def test_b(mcu):
    _both_up(mcu, "b-" + os.environ["PYTEST_XDIST_WORKER"])
'''


@pytest.mark.qemu
def test_pytest_plugin_under_xdist_two_workers(pytester, qemu_tools, tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist (the test extra) runs the plugin's tests on workers")
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    pytester.makepyfile(test_user=XDIST_TESTS.replace("BARRIER_DIR", repr(str(barrier)))
                        .replace("MODEL", repr(str(MUL_ADD))))
    res = pytester.runpytest_subprocess("-p", "mcu_gen.pytest_plugin", "-p", "no:cacheprovider", "-n", "2",
                                        "--mcu-board", "mps2-an505", timeout=600)
    res.assert_outcomes(passed=2)
    marks = {f.name: f.read_text().split() for f in barrier.iterdir()}
    workers = {name.split("-", 1)[1] for name in marks}
    assert workers == {"gw0", "gw1"}, marks
    outs = [Path(v[1]) for v in marks.values()]
    assert outs[0] != outs[1] and all(any(part.startswith("mcu-gen-gw") for part in o.parts) for o in outs), outs
