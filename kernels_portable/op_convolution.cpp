// mcu-gen-kernel: op=aten::convolution.out fn=aten_convolution_out sig=TTtLLLBLIOO dtypes=float32
//
// aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
//     int[] padding, int[] dilation, bool transposed, int[] output_padding,
//     int groups, *, Tensor(a!) out) -> Tensor(a!)
// conv1d (3-D input) and conv2d (4-D), grouped and depthwise, and transposed.
#include <math.h>

#include "conv_common.h"

namespace mcu::kernels {

Error aten_convolution_out(const KernelContext& ctx) {
  ConvArgs a;
  int32_t bias_numel = 0;
  if (!read_bias(ctx, 2, &a.bias, &bias_numel)) return Error::KernelFailed;
  a.input = ctx.tensor(0);
  a.weight = ctx.tensor(1);
  a.stride = ctx.int_list(3);
  a.padding = ctx.int_list(4);
  a.dilation = ctx.int_list(5);
  a.transposed = ctx.bool_arg(6);
  a.output_padding = ctx.int_list(7);
  a.groups = ctx.int_arg(8);
  a.out = ctx.tensor(9);
  return run_conv(a, bias_numel, -INFINITY, INFINITY);
}

}  // namespace mcu::kernels
