// mcu-gen-kernel: op=cortex_m::quantized_batch_matmul.out fn=cortex_m_quantized_batch_matmul_out sig=TITIIIITOO dtypes=int8
//
// cortex_m::quantized_batch_matmul.out(Tensor lhs, int lhs_zero_point,
//     Tensor rhs_transposed, int rhs_zero_point, int output_zero_point,
//     int output_multiplier, int output_shift, Tensor scratch, *, Tensor(a!) out)
// lhs [B, M, K], rhs_transposed [B, N, K], out [B, M, N], int8, contiguous.
// As the reference, the "zero points" of lhs and rhs are offsets (negated
// zero points, CMSIS-NN convention) and are added:
//   acc = sum_k (lhs + lhs_zp) * (rhs + rhs_zp)
//   out = clamp(requantize(acc, m, s) + output_zero_point, -128, 127)
// The accumulation is exact in int32 (the reference sums in float32, which
// is exact while |partial sums| < 2^24). scratch is accepted, not used.
#include "int8_dot.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_batch_matmul_out(const KernelContext& ctx) {
  const TensorRef lhs = ctx.tensor(0);
  const TensorRef rhs = ctx.tensor(2);
  const TensorRef out = ctx.tensor(8);
  const int64_t l_off = ctx.int_arg(1), r_off = ctx.int_arg(3), o_zp = ctx.int_arg(4);
  const int64_t m = ctx.int_arg(5), s = ctx.int_arg(6);
  if (!is_int8(lhs) || !is_int8(rhs) || !is_int8(out) || lhs.dim != 3 || rhs.dim != 3 || out.dim != 3) {
    return Error::KernelFailed;
  }
  if (!identity_order(lhs) || !identity_order(rhs) || !identity_order(out)) return Error::KernelFailed;
  const int32_t b = lhs.size(0), rows = lhs.size(1), k = lhs.size(2), cols = rhs.size(1);
  if (rhs.size(0) != b || rhs.size(2) != k || out.size(0) != b || out.size(1) != rows || out.size(2) != cols) {
    return Error::KernelFailed;
  }
  if (k > kMaxLinearK || l_off < -256 || l_off > 256 || r_off < -256 || r_off > 256 || o_zp < -256 || o_zp > 256) {
    return Error::KernelFailed;
  }
  if (!valid_multiplier(m) || !valid_shift(s)) return Error::KernelFailed;
  const int32_t lo = static_cast<int32_t>(l_off), ro = static_cast<int32_t>(r_off);
  const int32_t mult = static_cast<int32_t>(m), shift = static_cast<int32_t>(s), zp = static_cast<int32_t>(o_zp);
  int8_t* y = out.i8();
  for (int32_t bi = 0; bi < b; ++bi) {
    const int8_t* w = rhs.i8() + static_cast<size_t>(bi) * cols * k;
    for (int32_t r = 0; r < rows; ++r, y += cols) {
      const int8_t* a = lhs.i8() + (static_cast<size_t>(bi) * rows + r) * k;
      // a row of lhs against up to kRowsPerPass rows of rhs^T at a time (int8_dot.h: the fully connected kernel's)
      for (int32_t c0 = 0; c0 < cols; c0 += kRowsPerPass) {
        const int32_t count = cols - c0 < kRowsPerPass ? cols - c0 : kRowsPerPass;
        int32_t acc[kRowsPerPass];
        dot_rows(a, w + static_cast<size_t>(c0) * k, k, count, lo, ro, acc);
        for (int32_t j = 0; j < count; ++j) y[c0 + j] = requantize_to_int8(acc[j], mult, shift, zp, -128, 127);
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
