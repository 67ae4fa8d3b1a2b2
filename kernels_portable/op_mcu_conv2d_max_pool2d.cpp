// mcu-gen-kernel: op=mcu::conv2d_max_pool2d.out fn=mcu_conv2d_max_pool2d_out sig=TTtLLLIDDOO dtypes=float32
//
// mcu::conv2d_max_pool2d.out(Tensor input, Tensor weight, Tensor? bias,
//     int[] stride, int[] padding, int[] dilation, int groups, float out_min,
//     float out_max, *, Tensor(a!) out) -> Tensor(a!)
// mcu::conv2d's convolution and clamp, then a 2x2 max pool of stride 2 (no
// padding, no dilation, floor): out is [N, C, H / 2, W / 2] of the convolution's
// [N, C, H, W], which is never stored (f32_conv_pool.h states the order).
#include "f32_conv_pool.h"

namespace mcu::kernels {

Error mcu_conv2d_max_pool2d_out(const KernelContext& ctx) {
  ConvArgs a;
  int32_t bias_numel = 0;
  float lo = 0.0f, hi = 0.0f;
  if (!read_mcu_conv_args(ctx, &a, &bias_numel, &lo, &hi)) return Error::KernelFailed;
  if (a.input.dim != 4) return Error::KernelFailed;  // 2-D only
  ConvGeometry g;
  if (!conv_geometry(a, &g, bias_numel, /*check_out=*/false)) return Error::KernelFailed;
  const TensorRef& out = a.out;
  if (g.out_h < 2 || g.out_w < 2 || !is_f32_contiguous(out) || out.dim != 4) return Error::KernelFailed;
  if (out.size(0) != g.batch || out.size(1) != g.out_channels || out.size(2) != g.out_h / 2 ||
      out.size(3) != g.out_w / 2) {
    return Error::KernelFailed;
  }
  if (g.batch == 0) return Error::Ok;
  f32fast::conv2d_max_pool2x2(a.input.f32(), a.weight.f32(), a.bias, out.f32(), g, lo, hi);
  return Error::Ok;
}

}  // namespace mcu::kernels
