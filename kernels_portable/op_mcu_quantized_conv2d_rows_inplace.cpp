// mcu-gen-kernel: op=mcu::quantized_conv2d_rows_inplace.out fn=mcu_quantized_conv2d_rows_inplace_out sig=TTtLLLIITTIITOO dtypes=int8 inplace=0 inplace_rule=conv_rows variant_of=cortex_m::quantized_conv2d.out
//
// cortex_m::quantized_conv2d.out's arguments and results for a k x k
// convolution that keeps the spatial size (stride 1, dilation 1, padding
// (k - 1) / 2, odd k, groups 1, Cout <= Cin, batch 1), computed row by row so
// that the output may occupy the input's memory (TinyEngine / vMCU style).
// NHWC in memory. Before output row r is written, input row r is copied into
// a ring of pad_h + 1 rows in the scratch tensor (argument 12, at least
// (pad_h + 1) * W * Cin int8): output row r covers bytes [r*W*Cout,
// (r+1)*W*Cout), inside input rows <= r, so input rows r-pad_h..r are read
// from the ring and rows > r, still intact, from the input itself. The planner
// switches a convolution to this kernel where it plans the output over the
// input (mcu_gen/inplace.py, rule conv_rows). Arithmetic as int8_conv.h's
// qconv2d (same runs of taps, same requantization): bit-identical.
#include "int8_conv.h"

namespace mcu {
namespace kernels {

Error mcu_quantized_conv2d_rows_inplace_out(const KernelContext& ctx) {
  QConvArgs a;
  if (!read_qconv_args(ctx, false, false, &a)) return Error::KernelFailed;
  QConvGeometry g;
  if (!qconv_common(a, &g)) return Error::KernelFailed;
  const int32_t cin = g.in.c;
  const int32_t cout = a.weight.size(0);
  if (g.in.n != 1 || a.weight.size(3) != cin || cout > cin) return Error::KernelFailed;
  if (g.kh % 2 != 1 || g.kw % 2 != 1 || g.pad_h != g.kh / 2 || g.pad_w != g.kw / 2) return Error::KernelFailed;
  if (g.stride_h != 1 || g.stride_w != 1 || g.dil_h != 1 || g.dil_w != 1) return Error::KernelFailed;
  if (static_cast<int64_t>(g.kh) * g.kw * cin > kMaxTaps) return Error::KernelFailed;
  if (!qconv_finish(a, &g, g.in.h, g.in.w, cout)) return Error::KernelFailed;
  const int32_t ring_rows = g.pad_h + 1;
  const size_t row_bytes = static_cast<size_t>(g.in.w) * cin;
  const TensorRef scratch = ctx.tensor(12);
  if (!is_int8(scratch) || static_cast<size_t>(scratch.numel) < ring_rows * row_bytes) return Error::KernelFailed;

  const int8_t* in = a.input.i8();
  const int8_t* weight = a.weight.i8();
  int8_t* out = a.out.i8();
  int8_t* ring = scratch.i8();
  const int32_t off = static_cast<int32_t>(a.input_offset);
  const int32_t w_per_oc = g.kh * g.kw * cin;
  for (int32_t oh = 0; oh < g.in.h; ++oh) {
    const int8_t* src = in + oh * row_bytes;
    int8_t* slot = ring + (oh % ring_rows) * row_bytes;
    for (size_t i = 0; i < row_bytes; ++i) slot[i] = src[i];
    const int32_t ih0 = oh - g.pad_h;
    int32_t kh_begin, kh_end;
    tap_range(ih0, 1, g.kh, g.in.h, &kh_begin, &kh_end);
    for (int32_t ow = 0; ow < g.in.w; ++ow) {
      const int32_t iw0 = ow - g.pad_w;
      int32_t kw_begin, kw_end;
      tap_range(iw0, 1, g.kw, g.in.w, &kw_begin, &kw_end);
      int8_t* o = out + (static_cast<size_t>(oh) * g.in.w + ow) * cout;
      for (int32_t oc = 0; oc < cout; ++oc) {
        const int8_t* w_oc = weight + static_cast<size_t>(oc) * w_per_oc;
        int32_t acc = 0;
        for (int32_t kh = kh_begin; kh < kh_end; ++kh) {
          const int32_t ih = ih0 + kh;
          const int8_t* row = ih <= oh ? ring + (ih % ring_rows) * row_bytes : in + ih * row_bytes;
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
