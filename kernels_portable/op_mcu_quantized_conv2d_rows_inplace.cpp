// mcu-gen-kernel: op=mcu::quantized_conv2d_rows_inplace.out fn=mcu_quantized_conv2d_rows_inplace_out sig=TTtLLLIITTIITOO dtypes=int8 inplace=0 inplace_rule=conv_rows variant_of=cortex_m::quantized_conv2d.out
//
// cortex_m::quantized_conv2d.out's arguments and results for a k x k
// convolution (any stride and padding, dilation 1, groups 1, batch 1), computed
// row by row so that the output may occupy the input's memory (TinyEngine /
// vMCU style). NHWC in memory: output row r covers bytes [r*OW*Cout,
// (r+1)*OW*Cout) of the shared buffer, input row i bytes [i*W*Cin, (i+1)*W*Cin).
// Before output row r is written, every input row its bytes reach that this or
// a later output row still reads (rows >= r*stride - pad) is copied into a ring
// of rows in the scratch tensor (argument 12, at least ring_rows() * W * Cin
// int8); reads of saved rows come from the ring, the others from the input,
// which is intact there. The planner switches a convolution to this kernel
// where it plans the output over the input (mcu_gen/inplace.py, rule
// conv_rows, which computes the same ring size). Arithmetic as int8_conv.h's
// qconv2d (same runs of taps, same requantization): bit-identical.
#include "int8_conv.h"

namespace mcu {
namespace kernels {

namespace {

// The input rows that output rows [0, r] overwrite: [0, last_row_written(r)].
int32_t last_row_written(int32_t r, size_t out_row, size_t in_row, int32_t in_h) {
  const size_t end = static_cast<size_t>(r + 1) * out_row;
  const size_t row = (end - 1) / in_row;
  return row < static_cast<size_t>(in_h) ? static_cast<int32_t>(row) : in_h - 1;
}

// Lowest input row that output row r (and every later one) reads.
int32_t first_row_needed(int32_t r, int32_t stride, int32_t pad) {
  const int32_t row = r * stride - pad;
  return row > 0 ? row : 0;
}

// Rows of the ring: the most input rows, over all output rows, that are
// overwritten (saved) and still needed at once. Never less than 1.
int32_t ring_rows(const QConvGeometry& g, int32_t out_h, size_t out_row, size_t in_row) {
  int32_t saved_hi = -1, most = 1;
  for (int32_t oh = 0; oh < out_h; ++oh) {
    const int32_t hi = last_row_written(oh, out_row, in_row, g.in.h);
    if (hi > saved_hi) saved_hi = hi;
    const int32_t live = saved_hi - first_row_needed(oh, g.stride_h, g.pad_h) + 1;
    if (live > most) most = live;
  }
  return most;
}

}  // namespace

Error mcu_quantized_conv2d_rows_inplace_out(const KernelContext& ctx) {
  QConvArgs a;
  if (!read_qconv_args(ctx, false, false, &a)) return Error::KernelFailed;
  QConvGeometry g;
  if (!qconv_common(a, &g)) return Error::KernelFailed;
  const int32_t cin = g.in.c;
  const int32_t cout = a.weight.size(0);
  if (g.in.n != 1 || a.weight.size(3) != cin || g.dil_h != 1 || g.dil_w != 1) return Error::KernelFailed;
  if (static_cast<int64_t>(g.kh) * g.kw * cin > kMaxTaps) return Error::KernelFailed;
  int32_t out_h = 0, out_w = 0;
  if (!qconv_forward_finish(a, &g, cout, &out_h, &out_w)) return Error::KernelFailed;
  const size_t in_row = static_cast<size_t>(g.in.w) * cin;
  const size_t out_row = static_cast<size_t>(out_w) * cout;
  const int32_t ring_n = ring_rows(g, out_h, out_row, in_row);
  const TensorRef scratch = ctx.tensor(12);
  if (!is_int8(scratch) || static_cast<size_t>(scratch.numel) < ring_n * in_row) return Error::KernelFailed;

  const int8_t* in = a.input.i8();
  const int8_t* weight = a.weight.i8();
  int8_t* out = a.out.i8();
  int8_t* ring = scratch.i8();
  const int32_t off = static_cast<int32_t>(a.input_offset);
  const int32_t w_per_oc = g.kh * g.kw * cin;
  int32_t saved_hi = -1;  // input rows <= saved_hi (and still needed) are read from the ring
  for (int32_t oh = 0; oh < out_h; ++oh) {
    const int32_t hi = last_row_written(oh, out_row, in_row, g.in.h);
    for (int32_t r = saved_hi + 1 > first_row_needed(oh, g.stride_h, g.pad_h) ? saved_hi + 1
                                                                                : first_row_needed(oh, g.stride_h, g.pad_h);
         r <= hi; ++r) {
      const int8_t* src = in + r * in_row;
      int8_t* slot = ring + (r % ring_n) * in_row;
      for (size_t i = 0; i < in_row; ++i) slot[i] = src[i];
    }
    if (hi > saved_hi) saved_hi = hi;
    const int32_t ih0 = oh * g.stride_h - g.pad_h;
    int32_t kh_begin, kh_end;
    tap_range(ih0, 1, g.kh, g.in.h, &kh_begin, &kh_end);
    for (int32_t ow = 0; ow < out_w; ++ow) {
      const int32_t iw0 = ow * g.stride_w - g.pad_w;
      int32_t kw_begin, kw_end;
      tap_range(iw0, 1, g.kw, g.in.w, &kw_begin, &kw_end);
      int8_t* o = out + static_cast<size_t>(oh) * out_row + static_cast<size_t>(ow) * cout;
      for (int32_t oc = 0; oc < cout; ++oc) {
        const int8_t* w_oc = weight + static_cast<size_t>(oc) * w_per_oc;
        int32_t acc = 0;
        for (int32_t kh = kh_begin; kh < kh_end; ++kh) {
          const int32_t ih = ih0 + kh;
          const int8_t* row = ih <= saved_hi ? ring + (ih % ring_n) * in_row : in + ih * in_row;
          acc += dot_offset(row + (iw0 + kw_begin) * cin, w_oc + (kh * g.kw + kw_begin) * cin,
                            (kw_end - kw_begin) * cin, off);
        }
        o[oc] = finish_channel(a, acc, oc);
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
