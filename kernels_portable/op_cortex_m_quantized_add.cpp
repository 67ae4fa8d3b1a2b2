// mcu-gen-kernel: op=cortex_m::quantized_add.out fn=cortex_m_quantized_add_out sig=TIIITIIIIIIIIOO dtypes=int8 inplace=0,4 inplace_rule=binary_same
//
// cortex_m::quantized_add.out(Tensor self, int self_zero_point, int self_multiplier,
//     int self_shift, Tensor other, int other_zero_point, int other_multiplier,
//     int other_shift, int output_zero_point, int output_multiplier, int output_shift,
//     int activation_min, int activation_max, *, Tensor(a!) out)
// As CMSIS-NN arm_elementwise_add_s8 and the reference:
//   a = requantize((x - x_zp) << 20, x_mult, x_shift)   (same for y)
//   out = clamp(requantize(a + b, out_mult, out_shift) + out_zp, act_min, act_max)
// Shapes broadcast (numpy rules, any dim_order; ExecuTorch only emits equal
// shapes or a [1, C, 1, 1] operand).
// Equal shapes and dim_orders with at least kTableMin elements (the residual
// adds): a and b depend on one int8 each, so both are tabulated first (256
// values each, exact) and one loop over the elements adds two table entries and
// requantizes the sum, in 32 bits where the output shift and the tables allow
// it (requantize_doubled). The loop reads index i of both operands before it
// writes index i, so the output may lie over either operand (rule binary_same
// in mcu_gen/plan/inplace.py); so does the per-element path of
// broadcast_binary_int8 that smaller adds and the broadcasts take.
#include "int8_common.h"

namespace mcu {
namespace kernels {

namespace {
bool valid_zero_point(int64_t zp) { return zp >= -256 && zp <= 256; }

constexpr int32_t kLeftShift = 20;  // SHIFT_INT8
// From this many elements on, the two tables (512 requantizations) cost less than
// the two requantizations per element they save.
constexpr int32_t kTableMin = 256;

// The output requantization of a doubled sum s2 = 2 * (a + b), |a + b| < 2^30, for a right
// shift of 1..30, in 32 bits: the doubling high multiply round(2 * s * mult / 2^32) is the
// rounded high word of s2 * mult (|h| <= 2^30), and the rounding division (ties away from
// zero) is one add of 2^(right - 1) - [h < 0] (no overflow) and a shift; equal to
// requantize(s, mult, -right).
inline int32_t requantize_doubled(int32_t s2, int32_t mult, int32_t right, int32_t round) {
  const int32_t h = static_cast<int32_t>((static_cast<int64_t>(s2) * mult + (int64_t{1} << 31)) >> 32);
  return (h + round + (h >> 31)) >> right;
}

// The equal-shape loop over tables of a and b (indexed by the int8's bit pattern); out may be
// a or b. kDoubled: the tables hold 2a and 2b, requantize_doubled applies.
template <bool kDoubled>
__attribute__((noinline)) void add_tables(const int32_t* ta, const int32_t* tb, const int8_t* a, const int8_t* b,
                                          int8_t* out, int32_t n, int32_t mult, int32_t shift, int32_t zp,
                                          int32_t lo, int32_t hi) {
  const int32_t right = -shift, round = kDoubled ? 1 << (right - 1) : 0;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t sum = wrap_add(ta[static_cast<uint8_t>(a[i])], tb[static_cast<uint8_t>(b[i])]);
    const int32_t r = kDoubled ? requantize_doubled(sum, mult, right, round) : requantize(sum, mult, shift);
    out[i] = static_cast<int8_t>(clamp_i32(wrap_add(r, zp), lo, hi));
  }
}

// The largest |value| of a table of 256.
int32_t table_bound(const int32_t* t) {
  uint32_t m = 0;
  for (int32_t i = 0; i < 256; ++i) {
    const uint32_t v = t[i] < 0 ? 0u - static_cast<uint32_t>(t[i]) : static_cast<uint32_t>(t[i]);
    m = v > m ? v : m;
  }
  return m > static_cast<uint32_t>(INT32_MAX) ? INT32_MAX : static_cast<int32_t>(m);
}

// Equal shapes and one dim_order for the operands and the output.
bool same_layout(const TensorRef& a, const TensorRef& b, const TensorRef& out) {
  if (!a.same_shape(b) || !a.same_shape(out) || a.numel != out.numel || b.numel != out.numel) return false;
  for (int32_t p = 0; p < out.dim; ++p) {
    const int32_t o = out.dim_order ? out.dim_order[p] : p;
    if ((a.dim_order ? a.dim_order[p] : p) != o || (b.dim_order ? b.dim_order[p] : p) != o) return false;
  }
  return true;
}
}  // namespace

Error cortex_m_quantized_add_out(const KernelContext& ctx) {
  const int64_t a_zp = ctx.int_arg(1), a_m = ctx.int_arg(2), a_s = ctx.int_arg(3);
  const int64_t b_zp = ctx.int_arg(5), b_m = ctx.int_arg(6), b_s = ctx.int_arg(7);
  const int64_t o_zp = ctx.int_arg(8), o_m = ctx.int_arg(9), o_s = ctx.int_arg(10);
  const int64_t lo = ctx.int_arg(11), hi = ctx.int_arg(12);
  if (!valid_zero_point(a_zp) || !valid_zero_point(b_zp) || !valid_zero_point(o_zp)) return Error::KernelFailed;
  if (!valid_multiplier(a_m) || !valid_multiplier(b_m) || !valid_multiplier(o_m)) return Error::KernelFailed;
  if (!valid_shift(a_s) || !valid_shift(b_s) || !valid_shift(o_s) || !valid_int8_range(lo, hi)) {
    return Error::KernelFailed;
  }
  const int32_t azp = static_cast<int32_t>(a_zp), am = static_cast<int32_t>(a_m), as = static_cast<int32_t>(a_s);
  const int32_t bzp = static_cast<int32_t>(b_zp), bm = static_cast<int32_t>(b_m), bs = static_cast<int32_t>(b_s);
  const int32_t ozp = static_cast<int32_t>(o_zp), om = static_cast<int32_t>(o_m), os = static_cast<int32_t>(o_s);
  const int32_t l = static_cast<int32_t>(lo), h = static_cast<int32_t>(hi);
  const auto operand_a = [=](int32_t x) { return requantize((x - azp) * (1 << kLeftShift), am, as); };
  const auto operand_b = [=](int32_t y) { return requantize((y - bzp) * (1 << kLeftShift), bm, bs); };
  const TensorRef &ta = ctx.tensor(0), &tb = ctx.tensor(4), &to = ctx.tensor(13);
  if (is_int8(ta) && is_int8(tb) && is_int8(to) && to.numel >= kTableMin && same_layout(ta, tb, to)) {
    int32_t table_a[256], table_b[256];
    for (int32_t v = -128; v < 128; ++v) {
      table_a[static_cast<uint8_t>(v)] = operand_a(v);
      table_b[static_cast<uint8_t>(v)] = operand_b(v);
    }
    if (os <= -1 && os >= -30 && int64_t{table_bound(table_a)} + table_bound(table_b) < (int64_t{1} << 30)) {
      for (int32_t i = 0; i < 256; ++i) {
        table_a[i] *= 2;
        table_b[i] *= 2;
      }
      add_tables<true>(table_a, table_b, ta.i8(), tb.i8(), to.i8(), to.numel, om, os, ozp, l, h);
    } else {
      add_tables<false>(table_a, table_b, ta.i8(), tb.i8(), to.i8(), to.numel, om, os, ozp, l, h);
    }
    return Error::Ok;
  }
  return broadcast_binary_int8(ta, tb, to, [=](int8_t x, int8_t y) {
    return static_cast<int8_t>(clamp_i32(wrap_add(requantize(wrap_add(operand_a(x), operand_b(y)), om, os), ozp), l, h));
  });
}

}  // namespace kernels
}  // namespace mcu
