"""`mcu-gen sweep`: models x boards x build options, every point an independent task on Ray.

    from mcu_gen.dev.sweep import sweep
    s = sweep(["examples/mnist/model.py"], ["mps2-an505", "mps3-an547"], {"quantize": [None, "int8"]},
              out="mcu-gen-out/sweep")
    s.rows, s.picks, s.files

Each point (grid.Point) is one task (task.run_point, a pure function of the model file's bytes, the board
and the options). Results are cached by content hash (cache.py): a second sweep of the same inputs is
served from the cache without starting Ray. Tasks run on Ray (the `sweep` extra, `pip install
mcu-gen[sweep]`): a local Ray started in-process on the machine's cores, or the cluster at `address` /
$RAY_ADDRESS. QEMU boards need one CPU per task; a board without emulator runs on the host that offers it
as the Ray resource `board:<name>` (one task per board at a time), else it is built only. docs/sweep.md.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mcu_gen.dev.sweep.cache import Cache, task_key, tool_versions
from mcu_gen.dev.sweep.grid import Point, expand, split_values  # noqa: F401 (API)
from mcu_gen.dev.sweep.task import board_ports, run_point
from mcu_gen.errors import McuGenError


class SweepError(McuGenError, RuntimeError):
    pass


RESOURCE_PREFIX = "board:"


@dataclass
class SweepResult:
    rows: list
    picks: list  # choose(): per model the best build within the limits, and why
    files: list = field(default_factory=list)
    merged: list = field(default_factory=list)  # grid points that were the same build as another
    cached: int = 0
    ran: int = 0
    seconds: float = 0.0
    ray: dict | None = None  # where the tasks ran: address, nodes, CPUs


def _ray():
    try:
        import ray
    except ImportError:
        raise SweepError("mcu-gen sweep runs its tasks on Ray, which is not installed: pip install 'mcu-gen[sweep]' "
                         "(or pip install 'ray[default]>=2.9')") from None
    return ray


def _mode(board, resources: dict | None) -> str:
    from mcu_gen.boards import get_board

    if get_board(board).runs_here:
        return "run"
    return "hil" if resources and resources.get(RESOURCE_PREFIX + board, 0) >= 1 else "build"


def start_ray(address: str | None, num_cpus: int | None, verbose: bool = False):
    """Connects to the cluster at address (or $RAY_ADDRESS), else starts a local Ray on this machine's cores,
    offering the boards of MCU_GEN_BOARD_PORTS as resources. Returns (ray, started_here, description)."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address and "RAY_AUTH_MODE" not in os.environ and "ray" not in sys.modules and (
            os.environ.get("RAY_AUTH_TOKEN") or Path(os.environ.get("RAY_AUTH_TOKEN_PATH", "~/.ray/auth_token"))
            .expanduser().is_file()):
        # `ray start` (Ray 2.5x) makes clusters that want the token it saved in ~/.ray/auth_token, which a driver
        # sends only in token mode (read when ray is imported)
        os.environ["RAY_AUTH_MODE"] = "token"
    ray = _ray()
    if ray.is_initialized():
        return ray, False, {"address": "already initialized"}
    kw = {"log_to_driver": verbose, "logging_level": "INFO" if verbose else "WARNING"}
    if address:
        ray.init(address=address, **kw)
    else:
        env = {k: os.environ[k] for k in ("PYTHONPATH", "MCU_GEN_CACHE") if os.environ.get(k)}
        # address="local": a new Ray of our own, even when `ray start` left a cluster on this machine (which
        # ray.init() without an address would join)
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count(), include_dashboard=False,
                 resources={RESOURCE_PREFIX + b: 1 for b in board_ports()},
                 object_store_memory=200 * 1024 ** 2, runtime_env={"env_vars": env} if env else None, **kw)
    res = ray.cluster_resources()
    desc = {"address": address or "local", "nodes": len([n for n in ray.nodes() if n.get("Alive")]),
            "cpus": res.get("CPU", 0), "boards": {k[len(RESOURCE_PREFIX):]: v for k, v in res.items()
                                                  if k.startswith(RESOURCE_PREFIX)}}
    return ray, True, desc


def sweep(models, boards, grid: dict, out="mcu-gen-out/sweep", cache_dir=None, use_cache: bool = True,
          address: str | None = None, num_cpus: int | None = None, n: int | None = None, timeout: float = 60.0,
          limits: dict | None = None, prefer: str = "ms", picture: bool = True, log=None, progress=None,
          verbose: bool = False) -> SweepResult:
    """Runs every point of models x boards x grid (cached ones from the cache), writes sweep.csv, sweep.json,
    pareto.png / pareto.svg and builds/<point>/ (its artifacts) into `out`."""
    from mcu_gen.dev.sweep import table

    t0 = time.monotonic()
    log = log or (lambda s: print(s, file=sys.stderr))
    for m in models:
        if not Path(m).is_file():
            raise FileNotFoundError(f"model file {m} does not exist")
    points, merged = expand(models, boards, grid)
    cache = Cache(cache_dir, enabled=use_cache)
    data = {str(p.model): Path(p.model).read_bytes() for p in points}
    need_cluster_resources = address or os.environ.get("RAY_ADDRESS")
    ray = started = None
    desc = None
    resources = {RESOURCE_PREFIX + b: 1 for b in board_ports()}
    if need_cluster_resources and any(_mode(p.board, None) != "run" for p in points):
        ray, started, desc = start_ray(address, num_cpus, verbose)  # which boards the cluster offers
        resources = ray.cluster_resources()
    jobs, rows = [], [None] * len(points)
    for i, p in enumerate(points):
        mode = _mode(p.board, resources)
        key = task_key(data[str(p.model)], p.board, p.options, mode, n)
        hit = cache.get(key)
        if hit is not None:
            hit["artifacts"] = str(cache.folder(key))
            rows[i] = _row(p, hit, key, cached=True)
        else:
            jobs.append((i, p, mode, key))
    n_cached = len(points) - len(jobs)
    if n_cached:
        log(f"sweep: {n_cached} of {len(points)} task(s) served from the cache ({cache.root})")
    if jobs:
        if ray is None:
            ray, started, desc = start_ray(address, num_cpus, verbose)
        log(f"sweep: {len(jobs)} task(s) on Ray ({desc['address']}: {desc['nodes']} node(s), "
            f"{desc['cpus']:g} CPU(s)" + (f", boards {desc['boards']}" if desc.get("boards") else "") + ")")
        try:
            _run_jobs(ray, jobs, data, rows, cache, n, timeout, log, progress)
        finally:
            if started:
                ray.shutdown()
    rows = [r for r in rows if r is not None]
    table.mark_pareto(rows)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "builds", ignore_errors=True)  # this sweep's points only
    for r in rows:  # each point's artifacts beside the table
        src = Path(r["artifacts"]) if r.get("artifacts") else None
        if src is not None and src.is_dir():
            dst = out / "builds" / f"{r['model']}-{r['board']}-{r['key'][:10]}"
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)
            r["artifacts"] = str(dst)
    lim = limits or {}
    picks = table.choose(rows, prefer=prefer, **lim)
    import shlex

    meta = {"command": "mcu-gen " + shlex.join(sys.argv[1:]), "tools": tool_versions(), "ray": desc, "cached": n_cached,
            "ran": len(jobs), "merged": merged, "limits": lim, "picks": [
                {"model": p["model"], "why": p["why"], "command": p["row"]["command"] if p["row"] else None}
                for p in picks]}
    files = [out / "sweep.csv", out / "sweep.json"]
    table.write_csv(rows, files[0])
    table.write_json(rows, files[1], meta)
    files = [str(f) for f in files]
    if picture:
        files += table.write_picture(rows, [out / "pareto.png", out / "pareto.svg"],
                                     f"mcu-gen sweep: {len(rows)} build(s)")
    return SweepResult(rows=rows, picks=picks, files=files, merged=merged, cached=n_cached, ran=len(jobs),
                       seconds=time.monotonic() - t0, ray=desc)


def _row(p: Point, got: dict, key: str, cached: bool) -> dict:
    r = {"model": p.name, "board": p.board, "quantize": None, **p.options, **got}
    r.update(cached=cached, key=key, notes=p.notes,
             command=p.command(got.get("stack_bytes") if got.get("mode") == "run" else None))
    r.setdefault("reason", "")
    return r


def _run_jobs(ray, jobs, data, rows, cache, n, timeout, log, progress) -> None:
    refs = {}
    for i, p, mode, key in jobs:
        res = {RESOURCE_PREFIX + p.board: 1} if mode == "hil" else {}
        remote = ray.remote(num_cpus=1, resources=res, max_retries=0)(run_point)
        ref = remote.remote(str(p.model), data[str(p.model)], p.board, p.options, mode, n, timeout)
        refs[ref] = (i, p, mode, key)
    done = 0
    if progress is not None:
        progress(0, len(jobs))  # the bar from the start, not from the first result
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        i, p, mode, key = refs[ready[0]]
        try:
            got = ray.get(ready[0])
            row, artifacts = got["row"], got["artifacts"]
            if row.get("status") != "failed" or row.get("deterministic"):
                row["artifacts"] = str(cache.put(key, row, artifacts))
        except Exception as e:  # the task itself died (worker crashed, out of memory): a row, not the end
            row = {"status": "failed", "reason": f"task died: {type(e).__name__}: {str(e).splitlines()[-1][:300]}",
                   "mode": mode}
        rows[i] = _row(p, row, key, cached=False)
        done += 1
        r = rows[i]
        what = r["status"] if r["status"] != "failed" else f"FAILED: {r['reason'][:160]}"
        ms = f", {r['ms']:.3g} ms" if r.get("ms") is not None else ""
        log(f"[{done}/{len(jobs)}] {p.label()}: {what}{ms} ({r.get('seconds', 0):.0f} s on {r.get('host', '?')})")
        if progress is not None:
            progress(done, len(jobs))
