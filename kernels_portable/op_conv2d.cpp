// mcu-gen-kernel: op=mcu::conv2d.out fn=mcu_conv2d_out sig=TTtLLLIDDOO dtypes=float32
//
// mcu::conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
//     int[] padding, int[] dilation, int groups, float out_min, float out_max,
//     *, Tensor(a!) out) -> Tensor(a!)
// A (non-transposed) convolution with a fused clamp: ReLU is [0, inf], ReLU6
// [0, 6], ±inf no clamp.
#include "conv_common.h"

namespace mcu::kernels {

Error mcu_conv2d_out(const KernelContext& ctx) {
  ConvArgs a;
  int32_t bias_numel = 0;
  if (!read_bias(ctx, 2, &a.bias, &bias_numel)) return Error::KernelFailed;
  a.input = ctx.tensor(0);
  a.weight = ctx.tensor(1);
  a.stride = ctx.int_list(3);
  a.padding = ctx.int_list(4);
  a.dilation = ctx.int_list(5);
  a.groups = ctx.int_arg(6);
  const float lo = static_cast<float>(ctx.double_arg(7));
  const float hi = static_cast<float>(ctx.double_arg(8));
  if (lo > hi) return Error::KernelFailed;
  a.out = ctx.tensor(9);
  return run_conv<false>(a, bias_numel, lo, hi);
}

}  // namespace mcu::kernels
