// mcu-gen-kernel: op=aten::convolution.out fn=aten_convolution_out sig=TTtLLLBLIOO dtypes=float32,uint8,int8,int16,int32,int64
//
// aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
//     int[] padding, int[] dilation, bool transposed, int[] output_padding,
//     int groups, *, Tensor(a!) out) -> Tensor(a!)
// conv1d (3-D input) and conv2d (4-D), grouped and depthwise, and transposed.
// fp32: conv_common.h; integer tensors (one dtype for all): int_conv.h, only
// compiled into a program that has them.
#include <math.h>

#include "conv_common.h"
#include "int_conv.h"

namespace mcu::kernels {

Error aten_convolution_out(const KernelContext& ctx) {
  constexpr DTypeSet kIntSet = selected::aten_convolution_out & kIntTypes;
  ConvArgs a;
  a.input = ctx.tensor(0);
  a.weight = ctx.tensor(1);
  a.stride = ctx.int_list(3);
  a.padding = ctx.int_list(4);
  a.dilation = ctx.int_list(5);
  a.transposed = ctx.bool_arg(6);
  a.output_padding = ctx.int_list(7);
  a.groups = ctx.int_arg(8);
  a.out = ctx.tensor(9);
  if constexpr (kIntSet != 0) {
    if (a.input.dtype != DType::Float) {
      const TensorRef bias = ctx.is_none(2) ? TensorRef() : ctx.tensor(2);
      return run_conv_int<kIntSet>(a, ctx.is_none(2) ? nullptr : &bias);
    }
  }
  int32_t bias_numel = 0;
  if (!read_bias(ctx, 2, &a.bias, &bias_numel)) return Error::KernelFailed;
  return run_conv(a, bias_numel, -INFINITY, INFINITY);
}

}  // namespace mcu::kernels
