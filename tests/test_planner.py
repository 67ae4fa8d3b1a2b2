"""Memory planner: valid plans on random graphs, optimal on small ones, and in-place
execution that gives the same bytes as out-of-place execution.

- Random graphs (hypothesis): check_plan (run by every plan) accepts the result,
  the arena is never below the packing bound, and on graphs of at most four
  buffers it equals the optimum found by trying every offset.
- check_plan rejects overlapping tensors and in-place pairs no kernel allows.
- fp32 elementwise chains and the int8 in-place variant kernels (depthwise,
  1x1 convolution, max pool) run natively with their out over their input and
  match the out-of-place result bit for bit (max pool also PyTorch's).
"""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcu_gen.plan import inplace_pass, placement, planner
from mcu_gen.firmware.host import run_on_host
from mcu_gen.program.ir import Instruction, Program, TensorValue
from mcu_gen.backends.kernels import Kernel

CL = (0, 2, 3, 1)
FAKE = {
    "t::ew.out": Kernel("t::ew.out", "f", "TTOO", None, inplace=(0, 1)),  # elementwise, two inputs
    "t::op.out": Kernel("t::op.out", "f", "TTOO", None),  # not in place
}


# -- random graphs -----------------------------------------------------------------------------
@st.composite
def graphs(draw, max_steps=8):
    """A program of 1..max_steps instructions; each reads one or two earlier tensors."""
    p = Program()
    sizes = st.sampled_from([16, 32, 48, 64, 100, 256, 1000])
    x = p.add_tensor((draw(sizes) // 4,), "float32")
    p.inputs.append(x)
    made = [x]
    n = draw(st.integers(1, max_steps))
    for _ in range(n):
        a = draw(st.sampled_from(made))
        b = draw(st.sampled_from(made))
        op = draw(st.sampled_from(sorted(FAKE)))
        if op == "t::ew.out":
            shape = p.values[a].shape
            b = a if draw(st.booleans()) else b
            if p.values[b].shape != shape:
                b = a
        else:
            shape = (draw(sizes) // 4,)
        out = p.add_tensor(shape, "float32")
        p.instructions.append(Instruction(op, [a, b, out, out]))
        made.append(out)
    k = draw(st.integers(1, min(2, len(made) - 1)))
    p.outputs.extend(made[-k:])
    return p


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_random_graphs_get_valid_plans(p):
    inplace_pass.plan_memory(p, available=FAKE)  # raises PlanError if the plan is not valid
    iv = planner.lifetimes(p)
    bufs = placement.make_buffers(iv, [])
    assert p.lower_bound == planner.lower_bound(list(iv.values()))
    assert p.arena_size >= p.meta["plan"]["packing_bound"]
    plain = copy.deepcopy(p)
    plain.meta.pop("inplace", None)
    planner.plan(plain, available=FAKE)
    assert plain.arena_size >= placement.packing_bound(bufs) >= plain.lower_bound
    assert p.arena_size <= plain.arena_size  # in place is only kept when it helps
    for step, out, src in p.meta["inplace"]:
        assert p.values[out].offset == p.values[src].offset
        assert p.instructions[step].op == "t::ew.out"


def _optimum(specs) -> int:
    """Smallest arena over every assignment of 16-byte aligned offsets (tiny cases only), computed
    from the (start, duration, size) specs alone, not from the planner's buffers or conflict table:
    two buffers may not share a byte when their lifetimes [start, start + duration] share a step."""
    live = [(s, s + d, size) for s, d, size in specs]
    together = [(i, j) for i in range(len(live)) for j in range(i + 1, len(live))
                if live[i][0] <= live[j][1] and live[j][0] <= live[i][1]]
    limit = sum(size for _, _, size in live)
    best = limit
    grid = range(0, limit, 16)
    for offs in itertools.product(grid, repeat=len(live)):
        top = max(o + size for o, (_, _, size) in zip(offs, live))
        if top >= best:
            continue
        if all(offs[i] + live[i][2] <= offs[j] or offs[j] + live[j][2] <= offs[i] for i, j in together):
            best = top
    return best


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.sampled_from([16, 32, 48, 80])),
                min_size=2, max_size=4))
def test_placement_is_optimal_on_small_cases(specs):
    bufs = [placement.Buffer([k], s, s + d, [size] * (d + 1)) for k, (s, d, size) in enumerate(specs)]
    pl = placement.place(bufs, node_limit=10**7)
    assert pl.top == _optimum(specs)
    # and the placement itself is valid by the same independent rule (not only its size optimal)
    off = pl.offsets
    for i, (si, di, zi) in enumerate(specs):
        for j, (sj, dj, zj) in enumerate(specs[:i]):
            if si <= sj + dj and sj <= si + di:
                assert off[i] + zi <= off[j] or off[j] + zj <= off[i], (specs, off)


def test_exact_search_beats_greedy_and_stops_at_the_bound():
    # Two long-lived and four short-lived buffers where size-ordered greedy leaves a hole.
    spec = [(0, 5, 32), (0, 1, 64), (2, 3, 48), (2, 5, 16), (4, 5, 48), (1, 2, 32)]
    bufs = [placement.Buffer([k], s, e, [size] * (e - s + 1)) for k, (s, e, size) in enumerate(spec)]
    pl = placement.place(bufs, node_limit=10**7)
    assert pl.bound <= pl.top <= min(pl.tried.values())
    assert pl.top == 128 and pl.exact_complete


# -- the checker --------------------------------------------------------------------------------
def chain_program():
    p = Program()
    x = p.add_tensor((16,), "float32")
    y = p.add_tensor((16,), "float32")
    z = p.add_tensor((16,), "float32")
    p.inputs.append(x)
    p.outputs.append(z)
    p.instructions += [Instruction("t::op.out", [x, x, y, y]), Instruction("t::op.out", [y, y, z, z])]
    return p, x, y, z


def test_check_plan_rejects_overlap_of_live_tensors():
    p, x, y, z = chain_program()
    inplace_pass.plan_memory(p, available=FAKE)
    assert p.values[x].offset != p.values[y].offset
    p.values[y].offset = p.values[x].offset
    with pytest.raises(planner.PlanError, match=r"live together at steps 0\.\.0 and overlap"):
        planner.check_plan(p, FAKE)


def test_check_plan_rejects_inplace_the_kernel_does_not_allow():
    p, x, y, z = chain_program()
    inplace_pass.plan_memory(p, available=FAKE)
    p.values[y].offset = p.values[x].offset
    p.meta["inplace"] = [[0, y, x]]
    with pytest.raises(planner.PlanError, match="its kernel does not allow"):
        planner.check_plan(p, FAKE)


def test_check_plan_rejects_misalignment_and_overflow():
    p, x, y, z = chain_program()
    inplace_pass.plan_memory(p, available=FAKE)
    p.values[z].offset += 8
    with pytest.raises(planner.PlanError, match="not aligned"):
        planner.check_plan(p, FAKE)
    p.values[z].offset += 8 + p.arena_size
    with pytest.raises(planner.PlanError, match="past the arena"):
        planner.check_plan(p, FAKE)


def test_scratch_lives_for_its_step_only():
    p = Program()
    x = p.add_tensor((64,), "float32")
    s = p.add_tensor((256,), "uint8")  # scratch of the first instruction only
    y = p.add_tensor((64,), "float32")
    z = p.add_tensor((64,), "float32")
    p.inputs.append(x)
    p.outputs.append(z)
    p.instructions += [Instruction("t::op.out", [x, s, y, y]), Instruction("t::op.out", [y, y, z, z])]
    inplace_pass.plan_memory(p, available=FAKE)
    iv = planner.lifetimes(p)
    assert (iv[s].start, iv[s].end) == (0, 0)
    assert p.arena_size == 256 + 256 + 256  # step 0: x, s, y; step 1 reuses x and s for z


# -- fp32 elementwise in place, run natively ---------------------------------------------------
def test_fp32_elementwise_chain_runs_in_place():
    rng = np.random.default_rng(0)
    p = Program()
    x = p.add_tensor((4, 33), "float32")
    c = p.add_tensor((4, 33), "float32", data=rng.standard_normal((4, 33)).astype(np.float32))
    p.inputs.append(x)
    a = p.add_tensor((4, 33), "float32")
    b = p.add_tensor((4, 33), "float32")
    d = p.add_tensor((4, 33), "float32")
    one = p.add_scalar("float", 1.0)
    p.instructions += [
        Instruction("aten::relu.out", [x, a, a]),
        Instruction("aten::add.out", [a, c, one, b, b]),
        Instruction("aten::mul.out", [c, b, d, d]),
    ]
    p.outputs.append(d)
    inplace_pass.plan_memory(p)
    assert p.meta["inplace"] == [[0, a, x], [1, b, a], [2, d, b]]
    assert len({p.values[v].offset for v in (x, a, b, d)}) == 1
    assert p.arena_size == placement.align(4 * 33 * 4)
    xin = rng.standard_normal((4, 33)).astype(np.float32)
    (got,) = run_on_host(p, [xin])
    cc = p.values[c].data
    np.testing.assert_array_equal(got, cc * (np.maximum(xin, 0) + cc))


# -- int8 in-place variants, run natively -----------------------------------------------------
def _requant(rng, n):
    m = rng.integers(1 << 29, (1 << 31) - 1, size=n).astype(np.int32)
    s = rng.integers(-10, -6, size=n).astype(np.int32)
    return m, s


def _run_both(build):
    """Plan a one-instruction program out of place and in place; run both; return (plain, inplace, program)."""
    rng = np.random.default_rng(1)
    p, x_shape = build(rng)
    xin = rng.integers(-128, 128, size=x_shape).astype(np.int8)
    plain = copy.deepcopy(p)
    planner.plan(plain)
    inplace_pass.plan_memory(p)
    assert p.meta["inplace"], "the planner did not place the out over the input"
    ins = p.instructions[0]
    assert ins.op.startswith("mcu::") and ins.op != plain.instructions[0].op
    assert p.values[p.outputs[0]].offset == p.values[p.inputs[0]].offset
    assert p.arena_size < plain.arena_size
    return run_on_host(plain, [xin])[0], run_on_host(p, [xin])[0], xin


def _conv_program(x_shape, w_shape, stride, padding, dilation, depthwise):
    def build(rng):
        n, c, h, w = x_shape
        p = Program()
        x = p.add_tensor(x_shape, "int8", dim_order=CL)
        p.inputs.append(x)
        cout = w_shape[3] if depthwise else w_shape[0]
        kh, kw = w_shape[1], w_shape[2]
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        weight = p.add_tensor(w_shape, "int8", data=rng.integers(-127, 128, size=w_shape).astype(np.int8))
        bias = p.add_tensor((cout,), "int32", data=rng.integers(-3000, 3000, size=cout).astype(np.int32))
        m, s = _requant(rng, cout)
        mi = p.add_tensor((cout,), "int32", data=m)
        si = p.add_tensor((cout,), "int32", data=s)
        out = p.add_tensor((n, cout, oh, ow), "int8", dim_order=CL)
        ints = lambda v: p.add_scalar("int_list", list(v))  # noqa: E731
        i = lambda v: p.add_scalar("int", v)  # noqa: E731
        scratch = p.add_tensor((0,), "uint8")
        if depthwise:
            args = [x, weight, bias, ints(stride), ints(padding), ints(dilation), i(1), i(7), i(-3), mi, si,
                    i(-128), i(127), scratch, out, out]
            op = "cortex_m::quantized_depthwise_conv2d.out"
        else:
            args = [x, weight, bias, ints(stride), ints(padding), ints(dilation), i(7), i(-3), mi, si,
                    i(-100), i(120), scratch, out, out]
            op = "cortex_m::quantized_conv2d.out"
        p.instructions.append(Instruction(op, args))
        p.outputs.append(out)
        return p, x_shape
    return build


@pytest.mark.parametrize("x_shape,k,stride,padding,dilation", [
    ((1, 64, 25, 5), (3, 3), (1, 1), (1, 1), (1, 1)),  # KWS
    ((1, 8, 12, 9), (3, 3), (2, 2), (1, 1), (1, 1)),
    ((2, 5, 9, 7), (3, 2), (1, 2), (1, 0), (2, 1)),
    ((1, 16, 10, 8), (3, 3), (2, 2), (0, 0), (1, 1)),
])
def test_depthwise_in_place_matches_out_of_place(x_shape, k, stride, padding, dilation):
    c = x_shape[1]
    got_plain, got, _ = _run_both(_conv_program(x_shape, (1, *k, c), stride, padding, dilation, True))
    np.testing.assert_array_equal(got, got_plain)


@pytest.mark.parametrize("x_shape,cout", [((1, 64, 25, 5), 64), ((2, 16, 3, 5), 9), ((1, 7, 8, 8), 3),
                                         ((1, 8, 12, 12), 16), ((2, 3, 5, 7), 8)])  # widening: reverse order
def test_pointwise_in_place_matches_out_of_place(x_shape, cout):
    cin = x_shape[1]
    got_plain, got, _ = _run_both(_conv_program(x_shape, (cout, 1, 1, cin), (1, 1), (0, 0), (1, 1), False))
    np.testing.assert_array_equal(got, got_plain)


@pytest.mark.parametrize("x_shape,k,stride", [((1, 8, 26, 26), (2, 2), (2, 2)), ((2, 3, 9, 7), (3, 2), (3, 2)),
                                              ((1, 4, 7, 7), (2, 2), (2, 2))])
def test_max_pool_in_place_matches_pytorch(x_shape, k, stride):
    def build(rng):
        n, c, h, w = x_shape
        p = Program()
        x = p.add_tensor(x_shape, "int8", dim_order=CL)
        oh, ow = (h - k[0]) // stride[0] + 1, (w - k[1]) // stride[1] + 1
        out = p.add_tensor((n, c, oh, ow), "int8", dim_order=CL)
        ints = lambda v: p.add_scalar("int_list", list(v))  # noqa: E731
        i = lambda v: p.add_scalar("int", v)  # noqa: E731
        p.inputs.append(x)
        p.outputs.append(out)
        p.instructions.append(Instruction("cortex_m::quantized_max_pool2d.out", [
            x, ints(k), ints(stride), ints([0, 0]), ints([1, 1]), p.add_scalar("bool", False), i(5), i(5),
            i(-100), i(127), out, out]))
        return p, x_shape
    got_plain, got, xin = _run_both(build)
    np.testing.assert_array_equal(got, got_plain)
    # Host bytes are NHWC: view them as such and compare with PyTorch's max pool.
    nhwc = xin.reshape(x_shape[0], x_shape[2], x_shape[3], x_shape[1])
    want = torch.nn.functional.max_pool2d(torch.from_numpy(nhwc.transpose(0, 3, 1, 2).astype(np.float32)), k, stride)
    want = want.clamp(-100, 127).numpy().astype(np.int8).transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_unsafe_geometries_stay_out_of_place():
    # A strided 1x1 conv (neither the pointwise rule nor conv_rows), and a depthwise conv with depth multiplier 2.
    p, _ = _conv_program((1, 4, 5, 5), (8, 1, 1, 4), (2, 2), (0, 0), (1, 1), False)(np.random.default_rng(0))
    inplace_pass.plan_memory(p)
    assert p.meta["inplace"] == [] and p.instructions[0].op == "cortex_m::quantized_conv2d.out"
    from mcu_gen.plan import inplace

    p, _ = _conv_program((1, 4, 6, 6), (1, 3, 3, 4), (1, 1), (1, 1), (1, 1), True)(np.random.default_rng(0))
    p.values[p.instructions[0].args[6]].value = 2  # depth multiplier 2: not this kernel's case
    assert inplace.depthwise_channel(p, p.instructions[0], 0, p.values[p.outputs[0]]) is None


def test_views_planned_at_their_source_offset_survive_replanning():
    """ExecuTorch drops a reshape by planning the view at its source's offset (nothing writes it).
    plan.views.read_program records it as an alias, so re-planning (CMSIS-NN builds re-plan ExecuTorch programs)
    keeps the view inside its source instead of giving it memory nothing writes."""
    from mcu_gen.plan.views import planned_views
    from mcu_gen.program import pte
    from mcu_gen.program.ir import Instruction, Program, TensorValue

    p = Program()
    x = p.add(TensorValue((2, 8), offset=0))
    a = p.add(TensorValue((2, 8), offset=64))      # relu(x)
    view = p.add(TensorValue((16,), offset=64))    # a reshaped: never written, same offset
    out = p.add(TensorValue((16,), offset=0))      # relu(view), over x (dead by then)
    p.inputs.append(x)
    p.outputs.append(out)
    p.instructions += [Instruction("aten::relu.out", [x, a, a]), Instruction("aten::relu.out", [view, out, out])]
    p.arena_size = 128
    from mcu_gen.plan.views import read_program

    read = read_program(pte.write(p))
    assert read.meta["aliases"] == {2: 1}
    inplace_pass.plan_memory(read)
    assert read.tensor(2).offset == read.tensor(1).offset
    xv = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    got = run_on_host(read, [xv])[0]
    np.testing.assert_array_equal(got, np.maximum(xv, 0).reshape(16))


def test_a_program_output_that_is_a_dropped_view_reads_its_source():
    """The last reshape before a program output is dropped the same way: the output is planned at the
    classifier's offset and nothing writes it. Read back from the .pte it must be recorded as a view
    (mcu-gen verify of an int8 build read model.pte and compared the device with all zeros), and a
    program output that nothing writes at all is an error of the host reference, never zeros."""
    from mcu_gen.plan.views import read_program
    from mcu_gen.program import pte
    from mcu_gen.program.ir import Instruction, Program, TensorValue
    from mcu_gen.reference import ReferenceError, run_reference

    p = Program()
    x = p.add(TensorValue((2, 8), offset=0))
    a = p.add(TensorValue((2, 8), offset=64))      # relu(x)
    view = p.add(TensorValue((16,), offset=64))    # the output: a reshaped, never written
    p.inputs.append(x)
    p.outputs.append(view)
    p.instructions.append(Instruction("aten::relu.out", [x, a, a]))
    p.arena_size = 128
    read = read_program(pte.write(p))
    assert read.meta["aliases"] == {view: a}
    xv = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_array_equal(run_on_host(read, [xv])[0], np.maximum(xv, 0).reshape(16))
    read.values[view].offset = 96  # now nothing writes the output's bytes
    read.meta.pop("aliases")
    read.arena_size = 160
    with pytest.raises(ReferenceError, match="never written"):
        run_reference(read, [xv])


def test_kernel_scratch_is_not_taken_for_a_view():
    """A kernel's scratch tensor is also read before anything writes it, often planned over a dead
    tensor: plan.views.planned_views must not tie it to that tensor (re-planning would then let the
    kernel's working memory overwrite it). Nor is a tensor of another size or dtype a view."""
    from mcu_gen.plan.views import planned_views
    from mcu_gen.program import pte
    from mcu_gen.program.ir import Instruction, Program, TensorValue

    p = Program()
    x = p.add(TensorValue((1, 4, 4, 4), "int8", offset=0))
    a = p.add(TensorValue((1, 4, 4, 4), "int8", offset=64))
    scratch = p.add(TensorValue((64,), "uint8", offset=64))  # over `a`, same bytes, another dtype
    other = p.add(TensorValue((32,), "int8", offset=64))     # over `a`, fewer bytes
    out = p.add(TensorValue((1, 4, 2, 2), "int8", offset=128))
    i = lambda v: p.add_scalar("int", v)  # noqa: E731
    il = lambda v: p.add_scalar("int_list", v)  # noqa: E731
    p.inputs.append(x)
    p.outputs.append(out)
    p.instructions += [
        Instruction("cortex_m::quantize_per_tensor.out", [x, p.add_scalar("float", 0.1), i(0), i(-128), i(127), i(0), a, a]),
        Instruction("cortex_m::quantized_avg_pool2d.out",
                    [a, il([2, 2]), il([2, 2]), il([0, 0]), p.add_scalar("bool", False), i(0), i(1 << 30), i(0),
                     scratch, out, out]),
        Instruction("cortex_m::maximum.out", [other, other, out, out]),
    ]
    assert planned_views(p) == {}
    p.values[scratch] = TensorValue((1, 4, 4, 4), "int8", offset=64)  # the same tensor, as a view would be
    p.instructions[1].args[8] = p.add(TensorValue((0,), "uint8", offset=192))
    p.instructions[2].args[:2] = [scratch, scratch]
    assert planned_views(p) == {scratch: a}


def test_an_in_place_variants_scratch_is_not_taken_for_a_view():
    """An in-place variant (mcu::..._inplace) takes its operator's arguments, its scratch tensor included (a
    convolution's argument 12: the ring of saved rows). Planned over a dead tensor of its dtype and size, it was taken
    for a view of that tensor: the program read back from its .pte then kept the dead tensor live up to the variant,
    and the build's plan check failed ("tensors ... are live together ... and overlap": the M55 layer cases of
    tests/test_generated_mve.py, a 40-byte ring over a 1x40 linear input)."""
    from mcu_gen.plan.views import planned_views, scratch_arg

    assert scratch_arg("mcu::quantized_conv2d_pointwise_inplace.out") == 12
    assert scratch_arg("mcu::quantized_depthwise_conv2d_inplace.out") == 13
    assert scratch_arg("cortex_m::quantized_conv2d.out") == 12 and scratch_arg("aten::relu.out") is None
    p = Program()
    x = p.add(TensorValue((1, 40), "int8", offset=0))
    b = p.add(TensorValue((1, 40), "int8", offset=64))
    a = p.add(TensorValue((1, 8, 1, 5), "int8", dim_order=(0, 2, 3, 1), offset=128))
    ring = p.add(TensorValue((40,), "int8", offset=0))  # over x, dead by then: same dtype and size
    i = lambda v: p.add_scalar("int", v)  # noqa: E731
    il = lambda v: p.add_scalar("int_list", v)  # noqa: E731
    const = lambda shape, dt: p.add(TensorValue(shape, dt, data=np.zeros(shape, dt)))  # noqa: E731
    p.inputs += [x, a]
    p.outputs += [b, a]
    p.instructions += [
        Instruction("cortex_m::maximum.out", [x, x, b, b]),
        Instruction("mcu::quantized_conv2d_pointwise_inplace.out",
                    [a, const((8, 1, 1, 8), "int8"), p.add_scalar("none"), il([1, 1]), il([0, 0]), il([1, 1]), i(0),
                     i(0), const((8,), "int32"), const((8,), "int32"), i(-128), i(127), ring, a, a]),
    ]
    assert planned_views(p) == {}


@pytest.mark.parametrize("x_shape,w_shape,stride,padding", [
    ((1, 16, 32, 32), (16, 3, 3, 16), (1, 1), (1, 1)),  # ResNet-8's second conv of a block
    ((1, 8, 7, 5), (6, 5, 5, 8), (1, 1), (2, 2)),       # 5x5, Cout < Cin, rows narrower than the kernel
    ((1, 4, 6, 9), (4, 3, 1, 4), (1, 1), (1, 0)),       # 3x1
    ((1, 6, 9, 10), (6, 3, 3, 6), (1, 1), (1, 1)),      # odd sizes
    ((1, 3, 24, 24), (8, 3, 3, 3), (2, 2), (1, 1)),     # VWW's first conv: strided, Cout > Cin per row
    ((1, 1, 28, 28), (8, 3, 3, 1), (1, 1), (0, 0)),     # MNIST's first conv: no padding, widening
    ((1, 1, 49, 10), (16, 10, 4, 1), (2, 2), (5, 1)),   # KWS's first conv: even kernel, strided
    ((1, 4, 11, 9), (4, 3, 3, 4), (2, 1), (0, 1)),      # stride differs by axis
])
def test_kxk_conv_in_place_row_by_row_matches_out_of_place(x_shape, w_shape, stride, padding):
    got_plain, got, _ = _run_both(_conv_program(x_shape, w_shape, stride, padding, (1, 1), False))
    np.testing.assert_array_equal(got, got_plain)


def test_kxk_conv_rows_rule_refuses_what_the_kernel_cannot_do():
    from mcu_gen.plan import inplace

    for x_shape, w_shape, stride, padding, dilation in [
            ((2, 4, 8, 8), (4, 3, 3, 4), (1, 1), (1, 1), (1, 1)),   # batch 2
            ((1, 4, 8, 8), (4, 3, 3, 4), (1, 1), (2, 2), (2, 2)),   # dilated
            ((1, 4, 8, 8), (4, 1, 1, 4), (1, 1), (0, 0), (1, 1))]:  # 1x1: the pointwise rule's
        p, _ = _conv_program(x_shape, w_shape, stride, padding, dilation, False)(np.random.default_rng(0))
        assert inplace.conv_rows(p, p.instructions[0], 0, p.values[p.outputs[0]]) is None, (x_shape, w_shape)
    p, _ = _conv_program((1, 4, 8, 8), (4, 3, 3, 4), (1, 1), (1, 1), (1, 1), False)(np.random.default_rng(0))
    assert inplace.conv_rows(p, p.instructions[0], 0, p.values[p.outputs[0]]).scratch == (12, 2 * 8 * 4)
    # VWW's first conv (96x96x3 -> 48x48x8, stride 2): output rows (384 B) outrun input rows (288 B) for the
    # first rows only; two input rows are saved at once at most.
    assert inplace.conv_ring_rows(96, 288, 48, 384, 2, 1) == 2


def test_int8_add_in_place_matches_out_of_place():
    def build(rng):
        p = Program()
        shape = (1, 8, 5, 6)
        x = p.add_tensor(shape, "int8", dim_order=CL)
        y = p.add_tensor(shape, "int8", dim_order=CL)
        t = p.add_tensor(shape, "int8", dim_order=CL)
        out = p.add_tensor(shape, "int8", dim_order=CL)
        i = lambda v: p.add_scalar("int", v)  # noqa: E731
        p.inputs.append(x)
        p.outputs.append(out)
        # t = x + x (x still needed), out = t + x: out may go over t (t dies there), not over x (an input kept).
        add = lambda a, b, o: Instruction("cortex_m::quantized_add.out", [  # noqa: E731
            a, i(3), i(1 << 30), i(-1), b, i(-5), i(1 << 30), i(-2), i(7), i(1 << 30), i(0), i(-128), i(127), o, o])
        p.instructions += [add(x, x, t), add(t, x, out)]
        del y
        return p, shape

    rng = np.random.default_rng(1)
    p, shape = build(rng)
    xin = rng.integers(-128, 128, size=shape).astype(np.int8)
    plain = copy.deepcopy(p)
    planner.plan(plain)
    inplace_pass.plan_memory(p)
    assert [step for step, _out, _src in p.meta["inplace"]] == [1]
    assert p.values[p.outputs[0]].offset == p.values[p.instructions[1].args[0]].offset
    np.testing.assert_array_equal(run_on_host(p, [xin])[0], run_on_host(plain, [xin])[0])


def _naive_exact(bufs, conf, best_top, bound, node_limit):
    """The exact search as first written: every unplaced buffer's first fit computed again at every node."""
    n = len(bufs)
    shape = [(b.start, b.end, tuple(b.sizes)) for b in bufs]
    by_size = sorted(range(n), key=lambda i: (-bufs[i].size, bufs[i].start))
    best, complete, nodes = [best_top, None], [True], [0]

    def dfs(offsets, top):
        if len(offsets) == n:
            if top < best[0]:
                best[0], best[1] = top, dict(offsets)
            return
        nodes[0] += 1
        if nodes[0] > node_limit:
            complete[0] = False
            return
        tried = set()
        for i in by_size:
            if i in offsets or shape[i] in tried:
                continue
            tried.add(shape[i])
            o = placement.first_fit(i, offsets, conf)
            t = max(top, o + bufs[i].size)
            if t >= best[0]:
                continue
            offsets[i] = o
            dfs(offsets, t)
            del offsets[i]
            if best[0] <= bound or not complete[0]:
                return

    dfs({}, 0)
    return best[0], best[1], complete[0], nodes[0]


def test_exact_search_keeps_first_fits_between_nodes_without_changing_a_placement():
    # The search carries each unplaced buffer's first fit from a node to its children and computes it again
    # only where the buffer placed last blocks it (the ~100-layer program of the generated layer cases went
    # from minutes to seconds). Same offsets, same node count as computing every fit at every node.
    import random

    rng = random.Random(7)
    for _ in range(120):
        bufs = []
        for k in range(rng.randint(2, 30)):
            s, d = rng.randint(0, 25), rng.randint(0, 6)
            bufs.append(placement.Buffer([k], s, s + d, [16 * rng.randint(1, 12) for _ in range(d + 1)]))
        conf = placement.conflicts(bufs)
        greedy = min(placement.place_in_order(o, bufs, conf, placement.first_fit)[0]
                     for o in placement.orders(bufs, conf).values())
        bound = placement.packing_bound(bufs)
        for limit in (3, 40, 3000):
            want = _naive_exact(bufs, conf, greedy, bound, limit)
            got = placement.exact_search(bufs, conf, greedy, bound, limit)
            assert got + (placement.exact_search.last_nodes,) == want


def test_exact_search_is_not_bounded_by_the_call_stack():
    """The exact search went one Python call deeper per buffer: an int8 GRU unrolled over 49 steps (1,380
    instructions) stopped the build with 'maximum recursion depth exceeded'. Its frames are a list now: 1,500
    buffers of 16 B, each overlapping the next, pack into 32 B."""
    from mcu_gen.plan.placement import Buffer, conflicts, exact_search

    bufs = [Buffer([k], k, k + 1, [16, 16]) for k in range(1500)]
    top, offsets, complete = exact_search(bufs, conflicts(bufs), 10**9, 32, 3000)
    assert top == 32 and len(offsets) == 1500 and complete


def test_fits_and_conflicts_match_their_definitions():
    """first_fit, best_fit and conflicts run in one sorted pass (a 2,000-buffer elementwise test program took
    107 s to place when each candidate offset was checked against every placed buffer); here they are checked
    against the definitions, on buffers of one size and of sizes that change (and drop to 0) step by step."""
    import random

    def conflict(a, b):
        steps = [s for s in range(max(a.start, b.start), min(a.end, b.end) + 1) if a.at(s) and b.at(s)]
        return (max(a.at(s) for s in steps), max(b.at(s) for s in steps)) if steps else None

    def free(i, o, offsets, conf):  # o does not overlap any placed buffer that conflicts with i
        return all(conf[i][j] is None or o + conf[i][j][0] <= off or o >= off + conf[i][j][1]
                   for j, off in offsets.items())

    rng = random.Random(11)
    for _ in range(150):
        bufs = []
        for k in range(rng.randint(1, 30)):
            s, d = rng.randint(0, 25), rng.randint(0, 8)
            if rng.random() < 0.5:
                sizes = [16 * rng.randint(1, 8)] * (d + 1)
            else:
                sizes = [16 * rng.randint(0, 8) for _ in range(d + 1)]
            bufs.append(placement.Buffer([k], s, s + d, sizes))
        conf = placement.conflicts(bufs)
        for i, a in enumerate(bufs):
            for j, b in enumerate(bufs):
                assert conf[i][j] == (conflict(a, b) if i != j else None)
        order = list(range(len(bufs)))
        rng.shuffle(order)
        offsets = {}
        for i in order:
            cands = sorted({0} | {off + conf[i][j][1] for j, off in offsets.items() if conf[i][j]}
                           | {off - conf[i][j][0] for j, off in offsets.items() if conf[i][j]
                              and off - conf[i][j][0] >= 0})
            ok = [o for o in cands if free(i, o, offsets, conf)]
            assert placement.first_fit(i, offsets, conf) == ok[0]
            los = [off - conf[i][j][0] for j, off in offsets.items() if conf[i][j]]
            slack = {o: min([lo - o for lo in los if lo >= o], default=float("inf")) for o in ok}
            assert placement.best_fit(i, offsets, conf) == min(ok, key=lambda o: (slack[o], o))
            offsets[i] = placement.first_fit(i, offsets, conf) if rng.random() < 0.5 else \
                placement.best_fit(i, offsets, conf)
