// mcu-gen-kernel: op=cortex_m::pad.out fn=cortex_m_pad_out sig=TLLIOO dtypes=int8
//
// cortex_m::pad.out(Tensor input, int[] pre_pad, int[] post_pad, int pad_value, *, Tensor(a!) out)
// Constant padding of a rank <= 4 tensor. pre_pad / post_pad hold 4 values,
// right-aligned to the dims; as the reference they are in memory order
// (N, H, W, C) when the input counts as channels-last (4-D with dim_order
// (0,2,3,1), or C == 1, or H == W == 1) and in logical order otherwise.
// Pads are >= 0; pad_value is an int8; int8 tensors, any dim_order.
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_pad_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList pre = ctx.int_list(1);
  const IntList post = ctx.int_list(2);
  const int64_t value = ctx.int_arg(3);
  const TensorRef out = ctx.tensor(4);
  if (!is_int8(in) || !is_int8(out) || in.dim < 1 || in.dim > 4 || out.dim != in.dim) return Error::KernelFailed;
  if (!valid_dim_order(in) || !valid_dim_order(out) || pre.size() != 4 || post.size() != 4) return Error::KernelFailed;
  if (value < -128 || value > 127) return Error::KernelFailed;
  const bool channels_last = in.dim == 4 && (in.size(1) == 1 || (in.size(2) == 1 && in.size(3) == 1) ||
                                             (in.dim_order != nullptr && in.dim_order[0] == 0 && in.dim_order[1] == 2));
  static constexpr int32_t kNhwcInverse[4] = {0, 3, 1, 2};  // logical dim -> position in (N, H, W, C)
  const int32_t offset = 4 - in.dim;
  int32_t lo[4] = {}, in_strides[kMaxDims], out_strides[kMaxDims];
  for (int32_t d = 0; d < in.dim; ++d) {
    const int32_t src = channels_last ? kNhwcInverse[d] : offset + d;
    const int64_t a = pre[src], b = post[src];
    if (a < 0 || b < 0 || in.size(d) + a + b != out.size(d)) return Error::KernelFailed;
    lo[d] = static_cast<int32_t>(a);
  }
  memory_strides(in, in_strides);
  memory_strides(out, out_strides);
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  int32_t index[4] = {};
  for (int32_t i = 0; i < out.numel; ++i) {
    // Logical index of element i (row-major over the logical shape).
    int32_t rest = i, out_off = 0, in_off = 0;
    bool inside = true;
    for (int32_t d = in.dim - 1; d >= 0; --d) {
      index[d] = rest % out.size(d);
      rest /= out.size(d);
      const int32_t src = index[d] - lo[d];
      if (src < 0 || src >= in.size(d)) inside = false;
      out_off += index[d] * out_strides[d];
      in_off += src * in_strides[d];
    }
    y[out_off] = inside ? x[in_off] : static_cast<int8_t>(value);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
