"""Run conformance cases in ExecuTorch's portable runtime (the executorch wheel's pybind runtime), in
a subprocess: it aborts the whole process on some inputs, and then only that case counts as a crash.

    results = run_in_executorch(case_ids)       # {case id: (status, detail)}, {} without the wheel

The worker (``python -m mcu_gen.dev.conformance.executorch ID...``) rebuilds every case from its id
(cases.case_by_id), exports it with ExecuTorch's default lowering (to_edge_transform_and_lower, no
delegate: the portable kernels), runs it and prints one JSON line per case. When the worker dies, the
case it was on is a ``crash`` and a new worker continues with the next one.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

WORKER_TIMEOUT_S = 900


def available() -> bool:
    return importlib.util.find_spec("executorch") is not None


def run_in_executorch(case_ids: list, batch: int = 200) -> dict:
    """{case id: (status, detail)}: status correct / incorrect / unsupported / crash."""
    if not available():
        return {}
    results, todo = {}, list(case_ids)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    while todo:
        part = todo[:batch]
        try:
            r = subprocess.run([sys.executable, "-m", "mcu_gen.dev.conformance.executorch", *part],
                               capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, env=env)
            out, code = r.stdout, r.returncode
        except subprocess.TimeoutExpired as e:
            out, code = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), -9
        done = 0
        for line in out.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                results[row["case"]] = (row["status"], row["detail"])
                done += 1
        if done < len(part):  # the worker died on part[done]
            if code == 0:  # (it finished: the case could not be rebuilt)
                for cid in part[done:]:
                    results.setdefault(cid, ("unsupported", "case not rebuilt"))
                todo = todo[len(part):]
                continue
            results[part[done]] = ("crash", f"ExecuTorch's runtime ended the process (exit {code})")
            todo = todo[done + 1:]
        else:
            todo = todo[len(part):]
    return results


def _run_one(case) -> tuple:
    import torch
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime

    from mcu_gen.dev.conformance.host import compare

    try:
        ep = torch.export.export(case.module, case.fresh_inputs())
        buf = to_edge_transform_and_lower(ep).to_executorch().buffer
    except Exception as e:
        return "unsupported", f"export/lowering: {type(e).__name__}: {str(e)[:300]}"
    try:
        program = Runtime.get().load_program(buf)
        method = program.load_method("forward")
        got = method.execute(list(case.fresh_inputs()))
        got = [g.detach().numpy() if isinstance(g, torch.Tensor) else g for g in got]
        del method, program
    except Exception as e:
        return "unsupported", f"runtime: {type(e).__name__}: {str(e)[:300]}"
    ok, why = compare(got, case.expected)
    return ("correct" if ok else "incorrect"), why


def main(argv: list) -> int:
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    from mcu_gen.dev.conformance.cases import case_by_id, op_database

    db = op_database()
    for cid in argv:
        case = case_by_id(cid, db)
        if case is None:
            status, detail = "unsupported", "case not rebuilt"
        else:
            status, detail = _run_one(case)
        print(json.dumps({"case": cid, "status": status, "detail": detail}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
