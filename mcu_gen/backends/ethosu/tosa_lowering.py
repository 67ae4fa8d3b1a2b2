"""One subgraph of an int8 program -> a TOSA 1.0 flatbuffer (INT profile), with tosa-tools' serializer.

Tensors are NHWC as on the device. Each cortex_m:: operator becomes the TOSA sequence that
computes the same integers:

- quantized_conv2d / depthwise: CONV2D / DEPTHWISE_CONV2D (int32 accumulator, bias added,
  input zero point as TOSA's input_zp) -> RESCALE int32->int8, per channel, DOUBLE_ROUND,
  TOSA shift = 31 - CMSIS-NN shift (TOSA's double rounding equals arm_nn_requantize's
  doubling-high-multiply + rounding divide) -> CLAMP when the activation range is narrower.
- quantized_linear: RESHAPE [N,K] -> [N,1,1,K], CONV2D 1x1 with weight [O,1,1,K], RESCALE,
  CLAMP, RESHAPE back to [N,O].
- quantized_max_pool2d: MAX_POOL2D (+ CLAMP); quantized_avg_pool2d: AVG_POOL2D (integer
  average, see docs/ethos_u.md for its rounding).
- A view between two operators of the subgraph (flatten) becomes a RESHAPE.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcu_gen.program.ir import Program, ScalarValue, TensorValue
from mcu_gen.backends.ethosu.partition import NPU_OPS, Subgraph, alias_root, pool_stride
from mcu_gen.errors import McuGenError

NHWC = (0, 2, 3, 1)


class TosaLoweringError(McuGenError, RuntimeError):
    pass


def _ts():
    try:
        import tosa_serializer as ts
    except ImportError as e:
        raise TosaLoweringError(
            "the Ethos-U path needs tosa-tools and ethos-u-vela: pip install 'mcu-gen[ethos-u]' "
            f"(tosa-tools, ethos-u-vela) ({e})") from None
    return ts


def stored_shape(t: TensorValue) -> list:
    """The tensor's shape in memory order (NHWC for channels-last int8 activations)."""
    return [int(t.shape[d]) for d in t.dim_order]


@dataclass
class TosaGraph:
    flatbuffer: bytes
    inputs: list  # IR value indices, in TOSA input order
    outputs: list  # IR value indices, in TOSA output order
    input_shapes: list
    output_shapes: list
    operators: list  # TOSA op names, for the report


class _Lowering:
    def __init__(self, program: Program, sg: Subgraph):
        self.ts = _ts()
        self.p = program
        self.sg = sg
        ts = self.ts
        self.g = ts.TosaSerializer("", targetMajor=1, targetMinor=0, targetPatch=0, targetDraft=False)
        self.names = {}  # IR value -> TOSA tensor name
        self.ops = []
        self.n = 0

    # helpers
    def s(self, v):
        x = self.p.values[v]
        return x.value if isinstance(x, ScalarValue) else None

    def const(self, shape, dtype, vals, what):
        self.n += 1
        return self.g.addConst(list(shape), dtype, np.asarray(vals).reshape(-1).tolist() if dtype != self.ts.DType.SHAPE
                               else list(vals), name=f"c{self.n}_{what}").name

    def tmp(self, shape, dtype):
        return self.g.addIntermediate(list(shape), dtype).name

    def op(self, op, ins, outs, attr):
        self.g.addOperator(op, ins, outs, attr)
        self.ops.append(str(op).rsplit(".", 1)[-1])

    def zp(self, dtype, value):
        return self.const([1], dtype, [int(value)], "zp")

    def rescale(self, src, shape, mults, shifts, out_zp, out_name, in_zp=0, in_dtype=None):
        ts = self.ts
        in_dtype = in_dtype or ts.DType.INT32
        tosa_shifts = [31 - int(s) for s in shifts]
        for m, s in zip(mults, tosa_shifts):
            if not (2 <= s <= 62) or not (0 <= int(m) < 2**31):
                raise TosaLoweringError(f"requantization multiplier {m} shift {s} outside TOSA's RESCALE range")
        attr = ts.TosaSerializerAttribute()
        attr.RescaleAttribute(scale32=True, rounding_mode=ts.RoundingMode.DOUBLE_ROUND,
                              per_channel=len(mults) > 1, input_unsigned=False, output_unsigned=False)
        ins = [src, self.const([len(mults)], ts.DType.INT32, [int(m) for m in mults], "mult"),
               self.const([len(mults)], ts.DType.INT8, tosa_shifts, "shift"),
               self.zp(in_dtype, in_zp), self.zp(ts.DType.INT8, out_zp)]
        self.op(ts.Op.RESCALE, ins, [out_name], attr)

    def clamp(self, src, lo, hi, out_name):
        ts = self.ts
        attr = ts.TosaSerializerAttribute()
        attr.ClampAttribute(min_val=np.array([lo], np.int8).tobytes(), max_val=np.array([hi], np.int8).tobytes(),
                            nan_mode=ts.NanPropagationMode.PROPAGATE)
        self.op(ts.Op.CLAMP, [src], [out_name], attr)

    def reshape(self, src, shape, out_name):
        ts = self.ts
        attr = ts.TosaSerializerAttribute()
        attr.ReshapeAttribute()
        self.op(ts.Op.RESHAPE, [src, self.const([len(shape)], ts.DType.SHAPE, list(shape), "shape")], [out_name],
                attr)

    def finish_int8(self, acc_or_src, shape, lo, hi, out_v, requant=None):
        """requant (mults, shifts, out_zp) then clamp into the IR output tensor's TOSA name."""
        ts = self.ts
        target = self.out_name(out_v, shape)
        need_clamp = (lo, hi) != (-128, 127)
        if requant is not None:
            mid = self.tmp(shape, ts.DType.INT8) if need_clamp else target
            self.rescale(acc_or_src, shape, *requant, out_name=mid)
            acc_or_src = mid
        if need_clamp:
            self.clamp(acc_or_src, lo, hi, target)
        return target

    def out_name(self, v, shape):
        if v not in self.names:
            self.names[v] = self.tmp(shape, self.ts.DType.INT8)
        return self.names[v]

    def fitted(self, src, in_shape, kernel, stride, dilation, pad):
        """(source, TOSA pad) so that the window count is exact, as TOSA requires: PyTorch floors
        the output size, so the unused bottom/right rows come off the padding, or the input
        is sliced when there is too little padding to take them from."""
        ts = self.ts
        tpad, crop = [], []
        for d in range(2):
            size, k, s, dil, p = in_shape[1 + d], kernel[d], stride[d], dilation[d], pad[d]
            rem = (size + 2 * p - (k - 1) * dil - 1) % s
            after = p - rem
            tpad += [p, max(after, 0)]
            crop.append(max(-after, 0))
        if any(crop):
            shape = [in_shape[0], in_shape[1] - crop[0], in_shape[2] - crop[1], in_shape[3]]
            out = self.tmp(shape, ts.DType.INT8)
            attr = ts.TosaSerializerAttribute()
            attr.SliceAttribute()
            self.op(ts.Op.SLICE, [src, self.const([4], ts.DType.SHAPE, [0, 0, 0, 0], "start"),
                                  self.const([4], ts.DType.SHAPE, shape, "size")], [out], attr)
            src = out
        return src, tpad

    def input_of(self, v):
        """TOSA name of IR value v, inserting a RESHAPE when v views a tensor of the subgraph."""
        if v in self.names:
            return self.names[v]
        root = alias_root(self.p, v)
        if root in self.names:
            shape = stored_shape(self.p.tensor(v))
            name = self.tmp(shape, self.ts.DType.INT8)
            self.reshape(self.names[root], shape, name)
            self.names[v] = name
            return name
        raise TosaLoweringError(f"value {v} is neither a subgraph input nor produced inside it")

    # operators
    def conv(self, ins, depthwise):
        ts = self.ts
        a = ins.args
        x, w, out = self.p.tensor(a[0]), self.p.tensor(a[1]), self.p.tensor(a[-1])
        bias = self.p.values[a[2]]
        stride, pad, dil = self.s(a[3]), self.s(a[4]), self.s(a[5])
        k = 6 + (1 if depthwise else 0)
        in_off, out_off = self.s(a[k]), self.s(a[k + 1])
        mults = self.p.tensor(a[k + 2]).data.reshape(-1)
        shifts = self.p.tensor(a[k + 3]).data.reshape(-1)
        lo, hi = self.s(a[k + 4]), self.s(a[k + 5])
        oshape = stored_shape(out)
        cout = oshape[3]
        if depthwise:  # IHWO [1,kh,kw,C*M] -> [kh,kw,C,M]
            c = stored_shape(x)[3]
            wdata = w.data.reshape(w.data.shape[1], w.data.shape[2], c, cout // c)
        else:
            wdata = w.data  # OHWI
        wname = self.const(wdata.shape, ts.DType.INT8, wdata.astype(np.int8), "w")
        bdata = bias.data.reshape(-1) if isinstance(bias, TensorValue) else np.zeros(cout, np.int32)
        bname = self.const([cout], ts.DType.INT32, bdata.astype(np.int32), "b")
        acc = self.tmp(oshape, ts.DType.INT32)
        attr = ts.TosaSerializerAttribute()
        fn = attr.DepthwiseConv2dAttribute if depthwise else attr.Conv2dAttribute
        kh, kw = (wdata.shape[0], wdata.shape[1]) if depthwise else (wdata.shape[1], wdata.shape[2])
        src, tpad = self.fitted(self.input_of(a[0]), stored_shape(x), [kh, kw], stride, dil, pad)
        fn(pad=tpad, stride=list(stride), dilation=list(dil), local_bound=False, acc_type=ts.DType.INT32)
        op = ts.Op.DEPTHWISE_CONV2D if depthwise else ts.Op.CONV2D
        self.op(op, [src, wname, bname, self.zp(ts.DType.INT8, -in_off), self.zp(ts.DType.INT8, 0)],
                [acc], attr)
        self.finish_int8(acc, oshape, lo, hi, a[-1], (mults, shifts, out_off))

    def linear(self, ins):
        ts = self.ts
        a = ins.args
        x, w, out = self.p.tensor(a[0]), self.p.tensor(a[1]), self.p.tensor(a[-1])
        bias = self.p.values[a[2]]
        in_off, w_off, out_off = self.s(a[4]), self.s(a[5]), self.s(a[6])
        if w_off:
            raise TosaLoweringError("linear with a weight offset")
        mults, shifts = self.s(a[7]), self.s(a[8])
        hi, lo = self.s(a[9]), self.s(a[10])
        n, kdim = x.shape[0], x.shape[-1]
        o = w.shape[0]
        x4 = self.tmp([n, 1, 1, kdim], ts.DType.INT8)
        self.reshape(self.input_of(a[0]), [n, 1, 1, kdim], x4)
        wname = self.const([o, 1, 1, kdim], ts.DType.INT8, w.data.astype(np.int8), "w")
        ksum = self.p.values[a[3]]
        if isinstance(ksum, TensorValue):
            # Kernel-sum form (ExecuTorch's): kernel_sum = bias + input_offset * sum(w). TOSA applies
            # the input zero point itself, so its bias is kernel_sum - input_offset * sum(w).
            b64 = ksum.data.reshape(-1).astype(np.int64) - in_off * w.data.astype(np.int64).reshape(o, -1).sum(axis=1)
            if np.any(np.abs(b64) >= 2**31):
                raise TosaLoweringError("linear: bias from the kernel sum does not fit int32")
            bdata = b64
        else:
            bdata = bias.data.reshape(-1) if isinstance(bias, TensorValue) else np.zeros(o, np.int32)
        bname = self.const([o], ts.DType.INT32, bdata.astype(np.int32), "b")
        acc = self.tmp([n, 1, 1, o], ts.DType.INT32)
        attr = ts.TosaSerializerAttribute()
        attr.Conv2dAttribute(pad=[0, 0, 0, 0], stride=[1, 1], dilation=[1, 1], local_bound=False,
                             acc_type=ts.DType.INT32)
        self.op(ts.Op.CONV2D, [x4, wname, bname, self.zp(ts.DType.INT8, -in_off), self.zp(ts.DType.INT8, 0)], [acc],
                attr)
        y4 = self.tmp([n, 1, 1, o], ts.DType.INT8)
        need_clamp = (lo, hi) != (-128, 127)
        mid = self.tmp([n, 1, 1, o], ts.DType.INT8) if need_clamp else y4
        self.rescale(acc, [n, 1, 1, o], [mults[0]], [shifts[0]], out_off, mid)
        if need_clamp:
            self.clamp(mid, lo, hi, y4)
        self.reshape(y4, stored_shape(out), self.out_name(a[-1], stored_shape(out)))

    def pool(self, ins, kind):
        ts = self.ts
        a = ins.args
        x, out = self.p.tensor(a[0]), self.p.tensor(a[-1])
        kernel, stride, pad = self.s(a[1]), pool_stride(self.p, ins), self.s(a[3])
        oshape = stored_shape(out)
        attr = ts.TosaSerializerAttribute()
        src, tpad = self.fitted(self.input_of(a[0]), stored_shape(x), kernel, stride, [1, 1], pad)
        if kind == "max":
            lo, hi = self.s(a[8]), self.s(a[9])
            attr.MaxPool2dAttribute(kernel=list(kernel), stride=list(stride), pad=tpad,
                                    nan_mode=ts.NanPropagationMode.PROPAGATE)
            need_clamp = (lo, hi) != (-128, 127)
            dst = self.tmp(oshape, ts.DType.INT8) if need_clamp else self.out_name(a[-1], oshape)
            self.op(ts.Op.MAX_POOL2D, [src], [dst], attr)
            if need_clamp:
                self.clamp(dst, lo, hi, self.out_name(a[-1], oshape))
        else:
            zp = self.s(a[5])
            attr.AvgPool2dAttribute(kernel=list(kernel), stride=list(stride), pad=tpad, acc_type=ts.DType.INT32)
            self.op(ts.Op.AVG_POOL2D, [src, self.zp(ts.DType.INT8, zp), self.zp(ts.DType.INT8, zp)],
                    [self.out_name(a[-1], oshape)], attr)

    def lower(self) -> TosaGraph:
        ts = self.ts
        in_shapes = []
        for v in self.sg.inputs:
            t = self.p.tensor(v)
            shape = stored_shape(t)
            tensor = ts.TosaSerializerTensor(f"in{len(in_shapes)}", shape, ts.DType.INT8, data=None)
            self.g.addInputTensor(tensor)
            self.names[v] = tensor.name
            in_shapes.append(shape)
        for i in self.sg.instructions:
            ins = self.p.instructions[i]
            name = ins.op.split("::")[1].rsplit(".", 1)[0]
            if name == "quantized_conv2d":
                self.conv(ins, False)
            elif name == "quantized_depthwise_conv2d":
                self.conv(ins, True)
            elif name == "quantized_linear":
                self.linear(ins)
            elif name == "quantized_max_pool2d":
                self.pool(ins, "max")
            elif name == "quantized_avg_pool2d":
                self.pool(ins, "avg")
            else:  # pragma: no cover - the partitioner only selects the ops above
                raise TosaLoweringError(f"{ins.op}: no TOSA lowering")
        out_shapes = []
        blk = self.g.currRegion.currBasicBlock
        for v in self.sg.outputs:
            self.g.addOutputTensor(blk.tensors[self.names[v]])
            out_shapes.append(stored_shape(self.p.tensor(v)))
        return TosaGraph(bytes(self.g.serialize()), list(self.sg.inputs), list(self.sg.outputs), in_shapes,
                         out_shapes, self.ops)


def lower_subgraph(program: Program, sg: Subgraph) -> TosaGraph:
    for i in sg.instructions:
        if program.instructions[i].op not in NPU_OPS:
            raise TosaLoweringError(f"{program.instructions[i].op} is not an NPU operator")
    return _Lowering(program, sg).lower()
