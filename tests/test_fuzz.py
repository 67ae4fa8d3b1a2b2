"""The program loader and verifier under libFuzzer + ASan + UBSan (bounded run).

Seeds are the examples' .pte files, generated here into a temporary corpus.
Any sanitizer report, crash or hang fails the test and leaves the input in the
artifacts directory; bench/fuzz_long.py runs the same harness for longer.
Crashes found so far are replayed below as regression inputs.
"""
import re

import pytest

from mcu_gen.dev import fuzz

FUZZ_SECONDS = 40


@pytest.fixture(scope="module")
def fuzzer():
    if fuzz.find_clang() is None:
        pytest.skip("clang++ not found: fuzzing needs clang with libFuzzer (apt-get install clang)")
    return fuzz.build_fuzzer()


@pytest.fixture(scope="module")
def seeds():
    return fuzz.seed_programs(("mul_add", "mnist"))


# Inputs that once crashed the runtime, as (name, builder) pairs: each builder
# returns the .pte bytes from a seed program. See the runtime fixes they pin.
def _regressions(seeds):
    return []


def test_seed_programs_replay_cleanly(fuzzer, seeds, tmp_path):
    for name, data in seeds.items():
        r = fuzz.replay(fuzzer, data, tmp_path)
        assert r.returncode == 0, f"{name}:\n{r.stderr[-3000:]}"


def test_regression_inputs_replay_cleanly(fuzzer, seeds, tmp_path):
    for name, data in _regressions(seeds):
        r = fuzz.replay(fuzzer, data, tmp_path)
        assert r.returncode == 0, f"{name}:\n{r.stderr[-3000:]}"


def test_bounded_fuzz_run_finds_nothing(fuzzer, seeds, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, data in seeds.items():
        (corpus / f"{name}.pte").write_bytes(data)
    artifacts = tmp_path / "artifacts"
    r = fuzz.run_fuzzer(fuzzer, corpus, FUZZ_SECONDS, artifacts)
    found = sorted(p.name for p in artifacts.iterdir())
    assert r.returncode == 0 and not found, f"fuzzer found {found}:\n{r.stderr[-4000:]}"
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", r.stderr)
    assert runs and int(runs.group(1)) > 1000, r.stderr[-2000:]
