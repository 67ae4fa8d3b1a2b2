// mcu-gen-kernel: op=cortex_m::pad.out fn=cmsis_nn_pad_out sig=TLLIOO dtypes=int8
//
// cortex_m::pad.out(Tensor input, int[] pre_pad, int[] post_pad, int pad_value, *, Tensor(a!) out)
// On CMSIS-NN's arm_pad_s8, which pads a row-major (n, h, w, c) array: the
// output's memory dims, right-aligned into those four, with each dim's pads
// read as the portable kernel reads them (4 values right-aligned to the dims,
// in (N, H, W, C) order when the input counts as channels-last). The input's
// memory must walk its dims of size > 1 in the output's order (the same
// dim_order, or one differing only in where size-1 dims go). Other layouts,
// overlapping memory and empty inputs run the portable kernel
// (kernels_portable/op_cortex_m_pad.cpp).
#include "cmsis_nn_layout.h"

namespace mcu {
namespace kernels {

Error cortex_m_pad_out(const KernelContext& ctx);  // the portable kernel

namespace {

struct Pad {
  const int8_t* in;
  int8_t* out;
  int8_t value;
  cmsis_nn_dims size, pre, post;
};

bool pad_cmsis_case(const KernelContext& ctx, Pad* pad) {
  const TensorRef in = ctx.tensor(0);
  const IntList pre = ctx.int_list(1);
  const IntList post = ctx.int_list(2);
  const int64_t value = ctx.int_arg(3);
  const TensorRef out = ctx.tensor(4);
  if (!is_int8(in) || !is_int8(out) || in.dim < 1 || in.dim > 4 || out.dim != in.dim || in.numel <= 0) return false;
  if (!valid_dim_order(in) || !valid_dim_order(out) || pre.size() != 4 || post.size() != 4) return false;
  if (value < -128 || value > 127 || !disjoint(in, out)) return false;
  // The portable kernel's reading of the pads (logical dim d -> pad index).
  const bool channels_last = in.dim == 4 && (in.size(1) == 1 || (in.size(2) == 1 && in.size(3) == 1) ||
                                             (in.dim_order != nullptr && in.dim_order[0] == 0 && in.dim_order[1] == 2));
  static constexpr int32_t kNhwcInverse[4] = {0, 3, 1, 2};  // logical dim -> position in (N, H, W, C)
  const int32_t offset = 4 - in.dim;
  int32_t lo[4] = {}, hi[4] = {};
  for (int32_t d = 0; d < in.dim; ++d) {
    const int32_t src = channels_last ? kNhwcInverse[d] : offset + d;
    const int64_t a = pre[src], b = post[src];
    if (a < 0 || b < 0 || in.size(d) + a + b != out.size(d)) return false;
    lo[d] = static_cast<int32_t>(a);
    hi[d] = static_cast<int32_t>(b);
  }
  int32_t sizes[4];
  if (!sizes_in_order_of(in, out, sizes)) return false;
  int32_t s[4] = {1, 1, 1, 1}, a[4] = {}, b[4] = {};  // (n, h, w, c): the output's memory dims, right-aligned
  for (int32_t p = 0; p < in.dim; ++p) {
    const int32_t d = order_at(out, p);
    s[offset + p] = sizes[p];
    a[offset + p] = lo[d];
    b[offset + p] = hi[d];
  }
  pad->in = in.i8();
  pad->out = out.i8();
  pad->value = static_cast<int8_t>(value);
  pad->size = {s[0], s[1], s[2], s[3]};
  pad->pre = {a[0], a[1], a[2], a[3]};
  pad->post = {b[0], b[1], b[2], b[3]};
  return true;
}

}  // namespace

Error cmsis_nn_pad_out(const KernelContext& ctx) {
  Pad p;
  if (!pad_cmsis_case(ctx, &p)) return cortex_m_pad_out(ctx);
  return from_status(arm_pad_s8(p.in, p.out, p.value, &p.size, &p.pre, &p.post));
}

}  // namespace kernels
}  // namespace mcu
