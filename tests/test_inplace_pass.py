"""Planning is planning (issue 26, item 3): the in-place pass (mcu_gen/plan/inplace_pass.py) chooses
which outs go over an input, once, after the build has chosen its kernels; the planner only places
what the program says; the checker (mcu_gen/plan/check.py) computes lifetimes itself."""
import copy
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from mcu_gen.firmware import builder
from mcu_gen.plan import check, inplace_pass, planner
from mcu_gen.program.ir import Instruction, Program

sys.path.insert(0, str(Path(__file__).parent))
from test_planner import FAKE, chain_program, graphs  # noqa: E402


def _overlapping_live_pairs(p) -> list:
    """(a, b) arena tensors live at a common step whose bytes overlap (from offsets and the
    checker's live steps, not from the planner's buffers)."""
    live = list(check.live_steps(p).values())
    bad = []
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            if a.size and b.size and a.first <= b.last and b.first <= a.last:
                oa, ob = p.values[a.root].offset, p.values[b.root].offset
                if oa < ob + b.size and ob < oa + a.size:
                    bad.append((a.root, b.root))
    return bad


@pytest.fixture(scope="module")
def mnist_int8():
    program, data, _ = builder.load_program("examples/mnist/model.py", quantize="int8", io="int8", plan=False)
    assert data is None  # not planned
    return program


def test_the_planner_alone_places_no_tensor_over_another(mnist_int8):
    """MNIST int8 has in-place opportunities (variants included): the pass takes them, the planner
    on its own takes none, switches no operator and adds no scratch."""
    alone = copy.deepcopy(mnist_int8)
    ops, nvalues = [ins.op for ins in alone.instructions], len(alone.values)
    planner.plan(alone)
    assert alone.meta["inplace"] == [] and alone.meta["plan"]["inplace"] == []
    assert [ins.op for ins in alone.instructions] == ops and len(alone.values) == nvalues
    assert _overlapping_live_pairs(alone) == []
    with_pass = inplace_pass.plan_memory(copy.deepcopy(mnist_int8))
    assert with_pass.meta["inplace"] and with_pass.arena_size < alone.arena_size
    assert _overlapping_live_pairs(with_pass)  # so the helper sees in-place when there is some
    assert len(with_pass.meta["plan"]["inplace"]) == len(with_pass.meta["inplace"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graphs_the_planner_alone_overlaps_nothing(p):
    planner.plan(p, available=FAKE)
    assert p.meta["inplace"] == []
    assert _overlapping_live_pairs(p) == []


def test_the_pass_keeps_in_place_only_when_it_helps():
    p, x, y, z = chain_program()  # t::op.out allows no in-place
    inplace_pass.plan_memory(p, available=FAKE)
    assert p.meta["inplace"] == []
    p, x, y, z = chain_program()
    for ins in p.instructions:
        ins.op = "t::ew.out"
    inplace_pass.plan_memory(p, available=FAKE)
    assert p.meta["inplace"] == [[0, y, x], [1, z, y]]
    q, *_ = chain_program()
    for ins in q.instructions:
        ins.op = "t::ew.out"
    inplace_pass.plan_memory(q, available=FAKE, allow_inplace=False)
    assert q.meta["inplace"] == [] and q.arena_size > p.arena_size


def test_a_refusal_that_costs_arena_bytes_is_not_taken():
    """Refusing either in-place step of the chain would make the arena larger: both variants stay (the default
    build's RAM within the library build's, issue 25), though the build was asked about each, one at a time."""
    p, x, y, z = chain_program()
    for ins in p.instructions:
        ins.op = "t::ew.out"
    asked = []

    def refuse(program, step, op):
        asked.append((step, op))
        return True  # the build would rather not run t::ew.out in place anywhere

    inplace_pass.plan_memory(p, available=FAKE, refuse=refuse)
    assert sorted(set(asked)) == [(0, "t::ew.out"), (1, "t::ew.out")]
    assert p.meta["inplace"] == [[0, y, x], [1, z, y]]


def test_a_refusal_that_costs_nothing_is_taken_at_its_step_only():
    """x -> b (64 floats, in place: the peak) -> s (4 floats) -> t (in place, off the peak): refusing step 2
    costs no arena byte and is taken; refusing step 0 would (512 B instead of 272 B) and is not."""
    p = Program()
    x, b, s, t = (p.add_tensor((n,), "float32") for n in (64, 64, 4, 4))
    p.inputs.append(x)
    p.outputs.append(t)
    p.instructions += [Instruction("t::ew.out", [x, x, b, b]), Instruction("t::op.out", [b, b, s, s]),
                       Instruction("t::ew.out", [s, s, t, t])]
    inplace_pass.plan_memory(p, available=FAKE, refuse=lambda program, step, op: True)
    assert p.meta["inplace"] == [[0, b, x]]
    assert p.arena_size == 272


def test_check_plan_computes_lifetimes_itself(monkeypatch):
    """The checker never asks the planner: with the planner's lifetime and link helpers broken, a
    good plan still passes and an overlapping one is still caught."""
    p, x, y, z = chain_program()
    inplace_pass.plan_memory(p, available=FAKE)

    def broken(*a, **k):
        raise AssertionError("the checker used the planner's helpers")

    for name in ("lifetimes", "links", "resolve", "alias_root", "tensor_args", "sliced_roots"):
        monkeypatch.setattr(planner, name, broken)
    check.check_plan(p, FAKE)
    bad = copy.deepcopy(p)
    bad.values[y].offset = bad.values[x].offset
    with pytest.raises(check.PlanError, match="overlap"):
        check.check_plan(bad, FAKE)


def test_a_build_plans_once(monkeypatch, tmp_path):
    """The build plans after its kernels are chosen, once: no step undoes the in-place choice and
    plans again (the backend step and the generated kernels used to)."""
    calls = []
    real = planner.plan

    def counting(program, *a, **k):
        calls.append(len(program.instructions))
        return real(program, *a, **k)

    monkeypatch.setattr(planner, "plan", counting)
    r = builder.build("examples/mnist/model.py", board="mps2-an505", out=tmp_path, compile=False,
                      quantize="int8", io="int8")
    assert len(calls) == 1
    assert r.program.meta["inplace"]  # and the pass did choose in-place


def test_the_build_leaves_out_a_variant_the_generated_kernels_do_not_take():
    """A 4x400 depthwise layer: in place, its window of rows (4,800 B) is neither on the stack nor in
    the variant's scratch, so the generated DSP kernels take only the base operator's form. The build
    refuses the variant there, but leaving it out would make the arena larger than the library build's
    (issue 25): the variant (and its portable kernel) stays. A refusal that costs no byte is taken:
    test_a_refusal_that_costs_nothing_is_taken_at_its_step_only."""
    import numpy as np
    from test_generated_kernels import depthwise_program

    from mcu_gen.boards import get_board

    base = "cortex_m::quantized_depthwise_conv2d.out"
    refuse = builder.variant_refusal(get_board("mps2-an505"), "auto")
    free = inplace_pass.plan_memory(depthwise_program(np.random.default_rng(0), 4, 400, 8))
    assert free.instructions[0].op != base and free.meta["inplace"]  # the pass alone takes the variant
    assert refuse(free, 0, free.instructions[0].op)
    kept = inplace_pass.plan_memory(depthwise_program(np.random.default_rng(0), 4, 400, 8), refuse=refuse)
    assert kept.instructions[0].op != base and kept.meta["inplace"] and kept.arena_size == free.arena_size
    assert builder.variant_refusal(get_board("mps2-an505"), "library") is None
