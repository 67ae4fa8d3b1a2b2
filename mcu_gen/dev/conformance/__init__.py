"""Conformance against PyTorch's own operator test inputs (OpInfo): cases.py makes the cases,
host.py runs them on one native build of every portable kernel, executorch.py runs them in
ExecuTorch's portable runtime (a subprocess), qemu.py a sample on an emulated board.
bench/bench_ops.py prints the table; tests/test_conformance.py checks the harness."""
