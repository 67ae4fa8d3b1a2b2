"""Issue 24's OpInfo cases ExecuTorch's portable runtime passes, on mcu-gen's host runner against
PyTorch eager: integer clamp (the clamped indices of _unsafe_masked_index[_put_accumulate]), ..."""
from __future__ import annotations

import numpy as np
import torch

from tests.op_check import check
from tests.test_ops_reduce import Builder, sample


def test_clamp_integer_tensors():
    """clamp.out on integer tensors with int bounds stays integer; a float bound computes in float."""
    bld = Builder()
    for dtype in ("int64", "int32", "int8", "uint8", "int16"):
        xa = sample((3, 7), dtype) if dtype != "uint8" else np.arange(21, dtype=np.uint8).reshape(3, 7) * 7
        x = bld.input(xa, dtype)
        tx = torch.from_numpy(xa)
        for lo, hi in ((0, 4), (-5, None), (None, 3), (9, 2)):
            want = torch.clamp(tx, lo, hi)
            args = [x, bld.scalar("none") if lo is None else bld.scalar("int", lo),
                    bld.scalar("none") if hi is None else bld.scalar("int", hi)]
            o = bld.call("aten::clamp.out", args, want.shape, dtype)
            bld.expect(f"clamp {dtype} {lo} {hi}", o, want)
    xa = sample((4, 5), "int64")
    x = bld.input(xa, "int64")
    want = torch.clamp(torch.from_numpy(xa), -2.5, 7.25)
    o = bld.call("aten::clamp.out", [x, bld.scalar("float", -2.5), bld.scalar("float", 7.25)], want.shape, "float32")
    bld.expect("clamp int64 float bounds", o, want)
    bld.run_and_check(rtol=0, atol=0)


def test_unsafe_masked_index():
    """Indices the mask turns off may be out of range: ATen clamps them, masked-off positions give the fill."""
    x = torch.randn(5, 5)
    mask = torch.rand(10, 10) > 0.5
    i = torch.randint(0, 5, (10, 1))
    j = torch.randint(0, 5, (1, 10))
    mask[3, :] = False  # row 3 and column 4 masked off: their indices are out of range
    mask[:, 4] = False
    i[3, 0], j[0, 4] = 9, -8
    v = torch.randn(10, 10)
    check(lambda x, m, i, j: torch.ops.aten._unsafe_masked_index(x, m, [i, j], -1.5), x, mask, i, j)
    check(lambda x, m, i, j, v: torch.ops.aten._unsafe_masked_index_put_accumulate(x, m, [i, j], v),
          x, mask, i, j, v)


def test_pad_replicate_negative_and_circular():
    """Negative replication pads crop (as ATen); circular pad runs as empty + slice_scatter of copies."""
    import torch.nn.functional as F

    x3, x4, x5 = torch.randn(2, 3, 7), torch.randn(1, 2, 5, 6), torch.randn(1, 2, 4, 5, 6)
    check(lambda a, b, c: (F.pad(a, (-2, 3), mode="replicate"), F.pad(a, (1, -3), mode="replicate"),
                           F.pad(a, (-2, -2), mode="replicate"),
                           F.pad(b, (-1, 2, 3, -2), mode="replicate"), F.pad(b, (-2, -3, -1, -1), mode="replicate"),
                           F.pad(c, (1, -2, -1, 2, -1, 0), mode="replicate"),
                           F.pad(a, (2, 3), mode="replicate"), F.pad(b, (1, 2, 3, 0), mode="reflect")),
          x3, x4, x5, rtol=0, atol=0)
    check(lambda a, b: (F.pad(a, (1, 2), mode="circular"), F.pad(b, (2, 1, 0, 3), mode="circular"),
                        F.pad(b, (-1, 2, 1, -1), mode="circular")),
          x3, x4, rtol=0, atol=0)


def test_complex_is_refused_with_what_to_do():
    """Complex tensors are out of scope: a real FFT whose result ends real runs (tests/test_complex_to_real.py);
    one whose complex value leaves the model is refused naming the operator, the dtype and the fix."""
    import pytest

    from mcu_gen.capture.export import UnsupportedOperatorError, export_model
    from mcu_gen.capture.model_file import ModelSpec
    from tests.op_check import Fn

    x = torch.randn(64)
    for fn in (lambda x: torch.stft(x, 16, return_complex=True).abs(),
               lambda x: torch.view_as_real(torch.stft(x, 16, return_complex=True)),
               lambda x: torch.view_as_real(torch.fft.rfft(x))):
        program = export_model(ModelSpec(Fn(fn).eval(), (x,)))
        assert "mcu::rfft.out" in [i.op for i in program.instructions]
    for fn in (lambda x: torch.stft(x, 16, return_complex=True), lambda x: torch.fft.rfft(x) * torch.fft.rfft(x)):
        with pytest.raises(UnsupportedOperatorError) as e:
            export_model(ModelSpec(Fn(fn).eval(), (x,)))
        msg = str(e.value)
        assert "complex64" in msg and "aten::_fft_r2c" in msg and "out of mcu-gen's scope" in msg
        assert "view_as_real(z)" in msg and "because of" in msg and "\n  at " in msg


def test_portable_shape_copies():
    """ExecuTorch's portable out-variants mcu-gen lacked (split_copy, unbind_copy, squeeze_copy.dim, t_copy,
    transpose_copy, lift_fresh_copy, _conj_physical, dim-order _to_copy / empty), on several dtypes,
    against PyTorch element for element."""
    from mcu_gen.program.ir import Instruction

    bld = Builder()
    for dtype in ("float32", "int64", "int8", "bool"):
        xa = sample((2, 3, 5), dtype)
        x = bld.input(xa, dtype)
        tx = torch.from_numpy(xa)

        def call(label, op, args, want):
            o = bld.call(op, args, want.shape, str(want.numpy().dtype))
            bld.expect(f"{label} {dtype}", o, want.contiguous())

        def listed(label, op, args, wants):
            outs = [bld.p.add_tensor(tuple(w.shape), dtype) for w in wants]
            bld.p.instructions.append(Instruction(op, list(args) + [bld.scalar("tensor_list", outs)]))
            for k, (o, w) in enumerate(zip(outs, wants)):
                if w.numel():
                    bld.expect(f"{label} {k} {dtype}", o, w.contiguous())

        for size, dim in ((2, -1), (1, 0), (3, 1), (5, 2), (7, 2)):
            listed(f"split {size} {dim}", "aten::split_copy.Tensor_out",
                   [x, bld.scalar("int", size), bld.scalar("int", dim)], torch.split(tx, size, dim))
        for dim in (0, 1, -1):
            listed(f"unbind {dim}", "aten::unbind_copy.int_out", [x, bld.scalar("int", dim)], torch.unbind(tx, dim))
        for a, b in ((0, 1), (-1, 0), (1, 2), (2, 2)):
            call(f"transpose {a} {b}", "aten::transpose_copy.int_out", [x, bld.scalar("int", a), bld.scalar("int", b)],
                 tx.transpose(a, b))
        call("lift_fresh", "aten::lift_fresh_copy.out", [x], tx.clone())
        call("conj_physical", "aten::_conj_physical.out", [x], tx.clone())
        call("to_dim_order same dtype", "dim_order_ops::_to_dim_order_copy.out",
             [x, bld.scalar("bool", False), bld.scalar("int_list", [0, 1, 2])], tx.clone())
        ya = sample((1, 4, 1), dtype)
        y = bld.input(ya, dtype)
        ty = torch.from_numpy(ya)
        for dim in (0, 1, -1, 2):
            call(f"squeeze {dim}", "aten::squeeze_copy.dim_out", [y, bld.scalar("int", dim)], ty.squeeze(dim))
        m = bld.input(xa[0], dtype)
        call("t 2-d", "aten::t_copy.out", [m], torch.from_numpy(xa[0]).t())
        v = bld.input(xa[0, 0], dtype)
        call("t 1-d", "aten::t_copy.out", [v], torch.from_numpy(xa[0, 0]).t())
        # dtype conversions: to float32 and to int32 (ATen's casts: toward zero)
        for to, tdt in (("float32", torch.float32), ("int32", torch.int32)):
            want = tx.to(tdt)
            o = bld.call("dim_order_ops::_to_dim_order_copy.out", [x, bld.scalar("bool", False), bld.scalar("none")],
                         want.shape, to)
            bld.expect(f"to_dim_order {dtype}->{to}", o, want)
    # _empty_dim_order: the storage of the shape (contents unspecified): only that it runs
    e = bld.call("dim_order_ops::_empty_dim_order.out", [bld.scalar("int_list", [2, 3]), bld.scalar("none")], (2, 3),
                 "float32")
    bld.p.outputs.append(e)
    bld.run_and_check(rtol=0, atol=0)


def test_shape_copies_reject_bad_shapes():
    """Wrong out shapes or list lengths (a corrupt program): a clean kernel failure."""
    import pytest

    from mcu_gen.firmware.host import HostRunError, run_on_host
    from mcu_gen.program.ir import Instruction

    cases = [
        ("aten::split_copy.Tensor_out", [("int", 2), ("int", 1)], [(2, 2, 5), (2, 2, 5)]),   # 3 rows split by 2: 2 + 1
        ("aten::split_copy.Tensor_out", [("int", 2), ("int", 1)], [(2, 2, 5)]),              # too few outs
        ("aten::unbind_copy.int_out", [("int", 0)], [(3, 5)]),                               # 2 outs needed
        ("aten::unbind_copy.int_out", [("int", 3)], [(2, 3)] * 5),                           # dim out of range
        ("aten::transpose_copy.int_out", [("int", 0), ("int", 1)], (2, 3, 5)),               # not transposed
        ("aten::t_copy.out", [], (5, 3, 2)),                                                 # 3-d
        ("aten::squeeze_copy.dim_out", [("int", 1)], (2, 5)),                                # dim 1 has size 3
    ]
    for op, args, outs in cases:
        bld = Builder()
        x = bld.input(sample((2, 3, 5), "float32"))
        extra = [bld.scalar(k, v) for k, v in args]
        if isinstance(outs, list):
            vals = [bld.p.add_tensor(s, "float32") for s in outs]
            bld.p.instructions.append(Instruction(op, [x] + extra + [bld.scalar("tensor_list", vals)]))
            bld.p.outputs.extend(vals)
        else:
            bld.p.outputs.append(bld.call(op, [x] + extra, outs, "float32"))
        with pytest.raises(HostRunError, match="KernelFailed") as e:
            run_on_host(bld.p, bld.feeds)
        assert "signal" not in str(e.value).lower(), op


def test_index_put_in_place():
    """aten::index_put_ (ExecuTorch's in-place form) writes self as index_put.out does; an out-of-range index fails."""
    import pytest

    from mcu_gen.firmware.host import HostRunError, run_on_host
    from mcu_gen.program.ir import Instruction
    from tests.test_ops_index_tensor import PUT_CASES, _data, _list, _torch_indices

    def put_program(dtype, cases):
        bld = Builder()
        for shape, items, vshape, acc in cases:
            xa = _data(shape, dtype)
            tind = _torch_indices(items)
            r = torch.ops.aten.index.Tensor(torch.from_numpy(xa), tind).shape
            va = _data(r if vshape is None else vshape, dtype)
            x, v = bld.input(xa, dtype), bld.input(va, dtype)
            s = bld.call("aten::clone.out", [x, bld.scalar("none")], xa.shape, dtype)  # self: a planned tensor
            bld.p.instructions.append(Instruction("aten::index_put_", [s, _list(bld, items), v, bld.scalar("bool", acc), s]))
            bld.expect(f"{dtype} {shape} acc={acc}",
                       s, torch.ops.aten.index_put(torch.from_numpy(xa), tind, torch.from_numpy(va), acc))
        return bld

    for dtype in ("float32", "int64", "bool"):
        put_program(dtype, PUT_CASES).run_and_check(rtol=1e-6, atol=1e-6)
    b2 = Builder()
    x = b2.input(_data((3, 4), "float32"))
    i = b2.input(np.array([0, 3], dtype=np.int64), "int64")  # 3 is out of range for dim 0 (size 3)
    v = b2.input(np.zeros((2, 4), np.float32))
    s = b2.call("aten::clone.out", [x, b2.scalar("none")], (3, 4), "float32")
    b2.p.instructions.append(Instruction("aten::index_put_", [s, b2.scalar("optional_tensor_list", [i]), v,
                                                              b2.scalar("bool", False), s]))
    b2.p.outputs.append(s)
    with pytest.raises(HostRunError, match="KernelFailed"):
        run_on_host(b2.p, b2.feeds)


def test_activations_on_integer_tensors():
    """relu, relu6 / hardtanh keep integer dtypes; sigmoid and tanh of integers and bools give float (ATen)."""
    import torch.nn.functional as F

    xi = torch.randint(-9, 9, (3, 5))
    xs = xi.to(torch.int32)
    xb = torch.rand(4, 3) > 0.5
    check(lambda a, b: (F.relu(a), F.relu(b), F.relu6(a), F.hardtanh(b, -2, 3)), xi, xs, rtol=0, atol=0)
    check(lambda a, b, c: (torch.sigmoid(a), torch.tanh(a), torch.sigmoid(b), torch.tanh(b), torch.sigmoid(c),
                           torch.tanh(c)), xi, xs, xb)


def test_integer_matrix_products_and_bool_max_min():
    """mm / bmm of integer matrices in their dtype (wrapping, as ATen); maximum / minimum of bools (or / and)."""
    a, b = torch.randint(-20, 20, (3, 4)), torch.randint(-20, 20, (4, 5))
    p, q = torch.randint(-9, 9, (2, 3, 4), dtype=torch.int32), torch.randint(-9, 9, (2, 4, 2), dtype=torch.int32)
    big = torch.full((2, 2), 2**40, dtype=torch.int64)  # products wrap as in ATen
    check(lambda a, b, p, q, big: (torch.mm(a, b), torch.bmm(p, q), torch.mm(big, big), torch.mm(p[0], q[1])),
          a, b, p, q, big, rtol=0, atol=0)
    x, y = torch.rand(3, 4) > 0.5, torch.rand(4) > 0.5
    check(lambda x, y: (torch.maximum(x, y), torch.minimum(x, y)), x, y, rtol=0, atol=0)


def test_integer_addmm():
    """addmm of integer tensors (self broadcast, beta and alpha as ints), and integer linear (addmm / mm)."""
    a, b = torch.randint(-20, 20, (3, 4)), torch.randint(-20, 20, (4, 5))
    row, full = torch.randint(-9, 9, (5,)), torch.randint(-9, 9, (3, 5))
    check(lambda a, b, r, f: (torch.addmm(r, a, b), torch.addmm(f, a, b, beta=2, alpha=3),
                              torch.addmm(f, a, b, beta=0), torch.nn.functional.linear(a, b.t(), r)),
          a, b, row, full, rtol=0, atol=0)
