"""mcu-gen as a user installs it: the sdist and the wheel built from it carry every subpackage and
every non-Python part (runtime, kernels, boards, templates, schema, examples), and the wheel alone,
installed into a fresh virtual environment and used from a folder outside the checkout, lists the
boards, builds, runs MNIST to VERIFIED (fp32 and int8) and serves the pytest plugin.

The fresh environment does not download torch again: it sees the set-up environment's copies of
exactly the distributions mcu-gen's declared requirements need (and pytest's), through a .pth file
that adds a folder of links to them. Nothing else of the set-up environment (not its editable
mcu-gen) is visible there, so a run-time import that pyproject.toml does not declare fails here."""
from __future__ import annotations

import email.parser
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from mcu_gen.paths import DATA_DIRS

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.qemu


def _name(s: str) -> str:
    return re.sub(r"[-_.]+", "-", s).lower()


def _requirement_closure(roots: list[str]) -> dict[str, md.Distribution]:
    """name -> installed distribution, for `roots` (requirement strings) and all they require."""
    from packaging.requirements import Requirement

    found: dict[str, md.Distribution] = {}
    todo = [(Requirement(r), "") for r in roots]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        key = _name(req.name)
        if key in found:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            pytest.fail(f"{req.name} (needed by mcu-gen's wheel) is not installed here: run scripts/setup.sh")
        found[key] = dist
        for r in dist.requires or []:
            r = Requirement(r)
            for e in [""] + sorted(req.extras):
                todo.append((r, e))
    return found


def _link_distributions(dists: dict[str, md.Distribution], dest: Path) -> None:
    """dest/ gets a link to each top-level file or folder of each distribution (package, modules,
    .dist-info, .libs), so that a site directory made of it sees these distributions and no others."""
    dest.mkdir()
    for dist in dists.values():
        tops = {Path(str(f)).parts[0] for f in dist.files or []}
        tops.add(Path(str(dist._path)).name)  # its .dist-info
        for top in tops:
            if top in ("..", "__pycache__") or top.startswith("__editable__"):
                continue
            src = Path(str(dist.locate_file(top)))
            if src.exists() and not (dest / top).exists():
                (dest / top).symlink_to(src)


def _wheel_requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    reqs = email.parser.Parser().parsestr(meta).get_all("Requires-Dist") or []
    # the base requirements, plus pytest for the plugin
    return [r for r in reqs if "extra ==" not in r] + ["pytest"]


def _checkout_data_files() -> set[str]:
    out = set()
    for d in DATA_DIRS:
        for p in (ROOT / d).rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
                out.add(p.relative_to(ROOT).as_posix())
    return out


def _run(cmd, cwd, env, timeout=900) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory):
    """The sdist (built from the checkout) and the wheel (built from the unpacked sdist)."""
    import setuptools  # noqa: F401  (the test extra, scripts/setup.sh, installs it)
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-c", f"from setuptools import build_meta as b; b.build_sdist({str(out)!r})"], ROOT,
         dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    sdist = next(out.glob("mcu_gen-*.tar.gz"))
    with tarfile.open(sdist) as t:
        t.extractall(out / "src", filter="data")
    src = next((out / "src").iterdir())
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
         out, os.environ)
    return out


def test_sdist_and_wheel_carry_everything(dist_dir):
    sdist = next(dist_dir.glob("mcu_gen-*.tar.gz"))
    wheel = next(dist_dir.glob("mcu_gen-*.whl"))
    with tarfile.open(sdist) as t:
        in_sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    with zipfile.ZipFile(wheel) as z:
        in_wheel = set(z.namelist())
    data = _checkout_data_files()
    assert len(data) > 150 and any(f.startswith("docs/schema/") for f in data)
    # the templates of the C++ the backends write per build (generated kernels, kernel tables)
    assert {"templates/generated/macros.j2", "templates/generated/dsp_gemm_layer.cpp.j2",
            "templates/generated/mve_layer.cpp.j2", "templates/kernels/kernel_table.cpp.j2"} <= data
    assert not data - in_sdist, f"missing from the sdist: {sorted(data - in_sdist)[:10]}"
    assert not {f"mcu_gen/_data/{f}" for f in data} - in_wheel, "data missing from the wheel"
    # every Python module of every subpackage
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "mcu_gen").rglob("*.py") if "_data" not in p.parts}
    assert {"mcu_gen/quantize/lowering.py", "mcu_gen/backends/ethosu/vela.py", "mcu_gen/device/runner.py"} <= modules
    assert not modules - in_wheel, f"modules missing from the wheel: {sorted(modules - in_wheel)}"
    assert not any(n.endswith(".pyc") or "__pycache__" in n for n in in_wheel)


@pytest.fixture(scope="module")
def fresh(dist_dir, tmp_path_factory, qemu_tools):
    """(python, bin dir, env, workdir): a fresh venv with only the wheel installed, and a folder outside the checkout."""
    wheel = next(dist_dir.glob("mcu_gen-*.whl"))
    base = tmp_path_factory.mktemp("fresh")
    venv = base / "venv"
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)], base, os.environ)
    py = venv / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base,
                     os.environ).stdout.strip())
    deps = base / "deps"
    _link_distributions(_requirement_closure(_wheel_requirements(wheel)), deps)
    (site / "_mcu_gen_test_deps.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", PYTHONNOUSERSITE="1")
    # pip of this environment installs into the fresh one; --no-index: every requirement must already be there
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-index", "-q", str(wheel)], base, env)
    _run([sys.executable, "-m", "pip", "--python", str(py), "check"], base, env)
    work = base / "work"
    work.mkdir()
    shutil.copy(ROOT / "examples" / "mnist" / "model.py", work / "my_model.py")
    return py, venv / "bin", env, work


def test_installed_mcu_gen_is_the_wheel(fresh):
    py, _, env, work = fresh
    out = _run([str(py), "-c", "import mcu_gen, mcu_gen.paths as p; print(mcu_gen.__file__); print(p.ROOT)"],
               work, env).stdout.split()
    site = py.parents[1]
    assert Path(out[0]).is_relative_to(site) and Path(out[1]) == Path(out[0]).parent / "_data", out
    assert not any(Path(x).is_relative_to(ROOT) for x in out)


def test_boards_lists_every_board(fresh):
    import json

    _, bin_dir, env, work = fresh
    boards = {p.parent.name for p in (ROOT / "boards").glob("*/board.toml")}
    listed = json.loads(_run([str(bin_dir / "mcu-gen"), "boards", "--json"], work, env).stdout)
    assert {b["board"] for b in listed} == boards and len(boards) >= 7
    table = _run([str(bin_dir / "mcu-gen"), "boards"], work, env).stdout.splitlines()
    assert table[0].startswith("board") and len(table) == len(boards) + 1


def test_build_and_run_mnist_fp32_and_int8(fresh):
    _, bin_dir, env, work = fresh
    mcu_gen = str(bin_dir / "mcu-gen")
    built = _run([mcu_gen, "build", "--board", "mps2-an505", "--model", "./my_model.py", "--out", "b"], work, env)
    assert "built my_model for mps2-an505" in built.stdout
    assert (work / "b" / "firmware.elf").is_file() and (work / "b" / "firmware" / "CMakeLists.txt").is_file()
    assert (work / "b" / "firmware" / "platformio.ini").is_file()
    # int8 says BIT-EXACT: the device's integers equal the host integer reference's
    # (a cache of its own: the cycle-counting QEMU plugin is compiled from the wheel's copy of its source)
    run_env = dict(env, MCU_GEN_CACHE=str(work / "cache"))
    for extra, status in (([], "VERIFIED"), (["--quantize", "int8"], "BIT-EXACT")):
        r = _run([mcu_gen, "run", "--board", "mps2-an505", "--model", "./my_model.py", *extra], work, run_env)
        assert re.search(rf"^{status}: 3 inference\(s\) on mps2-an505", r.stdout, re.M), r.stdout + r.stderr
        assert re.search(r"^  estimated cycles per inference: [\d,]+ ", r.stdout, re.M), r.stdout + r.stderr
    assert list((work / "cache" / "qemu-plugin").glob("*/insn_classes.so"))
    assert (work / "mcu-gen-out").is_dir()


def test_pytest_plugin_from_the_wheel(fresh):
    py, _, env, work = fresh
    (work / "test_user.py").write_text('''
def test_my_model(mcu):
    result = mcu.run("my_model.py")
    assert result.verified and result.board == "mps2-an505" and result.n_inferences >= 1
''')
    env = {k: v for k, v in env.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}  # the entry point must load it
    r = _run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--mcu-board", "mps2-an505", "test_user.py"],
             work, env)
    assert re.search(r"^1 passed", r.stdout, re.M), r.stdout
