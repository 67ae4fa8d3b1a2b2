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
  float lo = 0.0f, hi = 0.0f;
  if (!read_mcu_conv_args(ctx, &a, &bias_numel, &lo, &hi)) return Error::KernelFailed;
  return run_conv<false>(a, bias_numel, lo, hi);
}

}  // namespace mcu::kernels
