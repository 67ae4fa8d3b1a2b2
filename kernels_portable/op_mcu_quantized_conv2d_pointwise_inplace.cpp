// mcu-gen-kernel: op=mcu::quantized_conv2d_pointwise_inplace.out fn=mcu_quantized_conv2d_pointwise_inplace_out sig=TTtLLLIITTIITOO dtypes=int8 inplace=0 inplace_rule=pointwise variant_of=cortex_m::quantized_conv2d.out
//
// cortex_m::quantized_conv2d.out's arguments and results for a 1x1
// convolution (stride 1, no padding, groups 1), computed so that the output
// may occupy the input's memory. NHWC in memory. For each pixel: copy its Cin
// input bytes into the scratch tensor (argument 12, at least Cin int8), then
// write its Cout outputs. Cout <= Cin: pixels in order; output pixel p only
// lands on input pixels <= p. Cout > Cin (widening): pixels in reverse order;
// output pixel p starts at p * Cout >= p * Cin, so it only lands on input
// pixels >= p, which are consumed already. The planner switches a convolution to this
// kernel where it plans the output over the input (mcu_gen/inplace.py, rule
// pointwise). Arithmetic as int8_conv.h.
#include "int8_conv.h"

namespace mcu {
namespace kernels {

Error mcu_quantized_conv2d_pointwise_inplace_out(const KernelContext& ctx) {
  QConvArgs a;
  if (!read_qconv_args(ctx, false, false, &a)) return Error::KernelFailed;
  QConvGeometry g;
  if (!qconv_common(a, &g)) return Error::KernelFailed;
  const int32_t cin = g.in.c;
  const int32_t cout = a.weight.size(0);
  if (g.kh != 1 || g.kw != 1 || a.weight.size(3) != cin) return Error::KernelFailed;
  if (g.stride_h != 1 || g.stride_w != 1 || g.pad_h != 0 || g.pad_w != 0) return Error::KernelFailed;
  if (static_cast<int64_t>(cin) > kMaxTaps) return Error::KernelFailed;
  if (!qconv_finish(a, &g, g.in.h, g.in.w, cout)) return Error::KernelFailed;
  const TensorRef scratch = ctx.tensor(12);
  if (!is_int8(scratch) || scratch.numel < cin) return Error::KernelFailed;

  const int8_t* in = a.input.i8();
  const int8_t* weight = a.weight.i8();
  int8_t* out = a.out.i8();
  int8_t* pixel = scratch.i8();
  const int32_t off = static_cast<int32_t>(a.input_offset);
  const int64_t pixels = static_cast<int64_t>(g.in.n) * g.in.h * g.in.w;
  const bool widening = cout > cin;
  for (int64_t k = 0; k < pixels; ++k) {
    const int64_t p = widening ? pixels - 1 - k : k;
    const int8_t* src = in + p * cin;
    for (int32_t ic = 0; ic < cin; ++ic) pixel[ic] = src[ic];
    int8_t* o = out + p * cout;
    for (int32_t oc = 0; oc < cout; ++oc) {
      o[oc] = finish_channel(a, dot_offset(pixel, weight + static_cast<size_t>(oc) * cin, cin, off), oc);
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
