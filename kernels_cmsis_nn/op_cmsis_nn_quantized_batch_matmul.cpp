// mcu-gen-kernel: op=cortex_m::quantized_batch_matmul.out fn=cmsis_nn_quantized_batch_matmul_out sig=TITIIIITOO dtypes=int8
//
// cortex_m::quantized_batch_matmul.out(Tensor lhs, int lhs_zero_point,
//     Tensor rhs_transposed, int rhs_zero_point, int output_zero_point,
//     int output_multiplier, int output_shift, Tensor scratch, *, Tensor(a!) out)
// On CMSIS-NN's arm_batch_matmul_s8, which takes the rhs transposed like the
// schema: lhs (1, B, M, K), rhs (1, B, N, K), out (1, B, M, N). Its "zero
// points" are offsets added to the values (fc_params input_offset /
// filter_offset), as in the portable kernel:
//   acc = sum_k (lhs + lhs_zp) * (rhs + rhs_zp), exact in int32 (K <= 14563)
//   out = clamp(requantize(acc, m, s) + output_zero_point, -128, 127)
// DSP/scalar builds sum (lhs + lhs_zp) * (rhs + rhs_zp) directly; MVE builds
// sum lhs * rhs and add the offset terms from a kernel sum per rhs row, which
// they compute into ctx->buf (N int32s: the scratch tensor, sized by mcu_gen
// for the variant, arm_fully_connected_s8_get_buffer_size): the same int32
// value. Requantization is arm_nn_requantize, the portable requantize while
// `acc << shift` fits in 32 bits: shifts outside -31..30, left shifts that
// could overflow for this K and these offsets, overlapping memory and empty
// tensors run the portable kernel
// (kernels_portable/op_cortex_m_quantized_batch_matmul.cpp).
#include "cmsis_nn_layout.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_batch_matmul_out(const KernelContext& ctx);  // the portable kernel

namespace {

int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

struct BatchMatmul {
  const int8_t* lhs;
  const int8_t* rhs;
  int8_t* out;
  int32_t b, m, n, k;
  cmsis_nn_fc_params fc;
  cmsis_nn_per_tensor_quant_params q;
};

bool bmm_cmsis_case(const KernelContext& ctx, BatchMatmul* x) {
  const TensorRef lhs = ctx.tensor(0), rhs = ctx.tensor(2), out = ctx.tensor(8);
  const int64_t l_off = ctx.int_arg(1), r_off = ctx.int_arg(3), o_zp = ctx.int_arg(4);
  const int64_t mult = ctx.int_arg(5), shift = ctx.int_arg(6);
  if (!is_int8(lhs) || !is_int8(rhs) || !is_int8(out) || lhs.dim != 3 || rhs.dim != 3 || out.dim != 3) return false;
  if (!identity_order(lhs) || !identity_order(rhs) || !identity_order(out)) return false;
  const int32_t b = lhs.size(0), m = lhs.size(1), k = lhs.size(2), n = rhs.size(1);
  if (rhs.size(0) != b || rhs.size(2) != k || out.size(0) != b || out.size(1) != m || out.size(2) != n) return false;
  if (b < 1 || m < 1 || n < 1 || k < 1 || k > kMaxMatmulK) return false;
  if (!matmul_offset_ok(l_off) || !matmul_offset_ok(r_off) ||
      !matmul_offset_ok(o_zp) || !valid_multiplier(mult) || !cmsis_shift_ok(shift)) {
    return false;
  }
  if (shift > 0) {  // CMSIS-NN shifts acc left in 32 bits: only where no |acc| can overflow
    const int64_t max_acc = k * (128 + magnitude(l_off)) * (128 + magnitude(r_off));
    if ((max_acc << shift) > INT32_MAX) return false;
  }
  if (!disjoint(lhs, out) || !disjoint(rhs, out)) return false;
  x->lhs = lhs.i8();
  x->rhs = rhs.i8();
  x->out = out.i8();
  x->b = b;
  x->m = m;
  x->n = n;
  x->k = k;
  x->fc = {static_cast<int32_t>(l_off), static_cast<int32_t>(r_off), static_cast<int32_t>(o_zp), {-128, 127}};
  x->q = {static_cast<int32_t>(mult), static_cast<int32_t>(shift)};
  return true;
}

}  // namespace

Error cmsis_nn_quantized_batch_matmul_out(const KernelContext& ctx) {
  BatchMatmul x;
  if (!bmm_cmsis_case(ctx, &x)) return cortex_m_quantized_batch_matmul_out(ctx);
  const cmsis_nn_dims lhs_dims = {1, x.b, x.m, x.k};
  const cmsis_nn_dims rhs_dims = {1, x.b, x.n, x.k};
  const cmsis_nn_dims out_dims = {1, x.b, x.m, x.n};
  cmsis_nn_context c;
  if (!scratch_context(ctx.tensor(7), arm_fully_connected_s8_get_buffer_size(&out_dims), &c)) {
    return Error::KernelFailed;
  }
  const cmsis_nn_bmm_params params = {false, false, x.fc};
  return from_status(arm_batch_matmul_s8(&c, &params, &x.q, &lhs_dims, x.lhs, &rhs_dims, x.rhs, &out_dims, x.out));
}

}  // namespace kernels
}  // namespace mcu
