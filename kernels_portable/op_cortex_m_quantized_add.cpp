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
// adds): a depends on one int8, so it is tabulated first (256 values, exact; one
// table of 1 KB, in the frame of the equal-shape path only: two took 2.3 KB, the deepest frame of many images)
// and one loop over the elements adds a's table entry and b, and requantizes the
// sum, in 32 bits where the output shift and the operands' range allow it
// (requantize_doubled). The loop reads index i of both operands before it
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

// One operand's value for an int8 x: requantize((x - zp) << kLeftShift, mult, shift).
struct Operand {
  int32_t zp, mult, shift;
  int32_t operator()(int32_t x) const { return requantize((x - zp) * (1 << kLeftShift), mult, shift); }
};

// The equal-shape loop over a's table (indexed by the int8's bit pattern) and b computed per
// element; out may be a or b. kDoubled: the table holds 2a, b is doubled, requantize_doubled applies.
template <bool kDoubled>
inline void add_table(const int32_t* ta, Operand ob, const int8_t* a, const int8_t* b,
                                         int8_t* out, int32_t n, int32_t mult, int32_t shift, int32_t zp,
                                         int32_t lo, int32_t hi) {
  const int32_t right = -shift, round = kDoubled ? 1 << (right - 1) : 0;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t vb = ob(b[i]);
    const int32_t sum = wrap_add(ta[static_cast<uint8_t>(a[i])], kDoubled ? 2 * vb : vb);
    const int32_t r = kDoubled ? requantize_doubled(sum, mult, right, round) : requantize(sum, mult, shift);
    out[i] = static_cast<int8_t>(clamp_i32(wrap_add(r, zp), lo, hi));
  }
}

// The largest |operand(x)| over the 256 int8 values.
__attribute__((noinline)) int32_t operand_bound(Operand op) {
  uint32_t m = 0;
  for (int32_t x = -128; x < 128; ++x) {
    const int32_t t = op(x);
    const uint32_t v = t < 0 ? 0u - static_cast<uint32_t>(t) : static_cast<uint32_t>(t);
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

// The add's parameters, read and checked from the instruction's arguments.
struct AddParams {
  Operand a, b;
  int32_t om, os, ozp, lo, hi;
};

__attribute__((noinline)) bool read_params(const KernelContext& ctx, AddParams& p) {
  const int64_t a_zp = ctx.int_arg(1), a_m = ctx.int_arg(2), a_s = ctx.int_arg(3);
  const int64_t b_zp = ctx.int_arg(5), b_m = ctx.int_arg(6), b_s = ctx.int_arg(7);
  const int64_t o_zp = ctx.int_arg(8), o_m = ctx.int_arg(9), o_s = ctx.int_arg(10);
  const int64_t lo = ctx.int_arg(11), hi = ctx.int_arg(12);
  if (!valid_zero_point(a_zp) || !valid_zero_point(b_zp) || !valid_zero_point(o_zp)) return false;
  if (!valid_multiplier(a_m) || !valid_multiplier(b_m) || !valid_multiplier(o_m)) return false;
  if (!valid_shift(a_s) || !valid_shift(b_s) || !valid_shift(o_s) || !valid_int8_range(lo, hi)) return false;
  p.a = Operand{static_cast<int32_t>(a_zp), static_cast<int32_t>(a_m), static_cast<int32_t>(a_s)};
  p.b = Operand{static_cast<int32_t>(b_zp), static_cast<int32_t>(b_m), static_cast<int32_t>(b_s)};
  p.om = static_cast<int32_t>(o_m), p.os = static_cast<int32_t>(o_s), p.ozp = static_cast<int32_t>(o_zp);
  p.lo = static_cast<int32_t>(lo), p.hi = static_cast<int32_t>(hi);
  return true;
}

// The equal-shape path. a's table (1 KB) lives in this frame only: the parameters are read, and
// whether the doubled 32-bit requantization applies is decided, in frames that have returned before
// it is called, so the deepest path of the kernel is this frame plus add_table's, not their sum with
// the argument reading's (the image's stack bound counts the deepest path).
__attribute__((noinline)) void add_by_table(const AddParams& p, bool doubled, const int8_t* a, const int8_t* b,
                                            int8_t* out, int32_t n) {
  int32_t table_a[256];
  for (int32_t v = -128; v < 128; ++v) table_a[static_cast<uint8_t>(v)] = (doubled ? 2 : 1) * p.a(v);
  if (doubled) {
    add_table<true>(table_a, p.b, a, b, out, n, p.om, p.os, p.ozp, p.lo, p.hi);
  } else {
    add_table<false>(table_a, p.b, a, b, out, n, p.om, p.os, p.ozp, p.lo, p.hi);
  }
}

// Smaller adds and broadcasts: two requantizations per element (its own frame, as add_by_table's).
__attribute__((noinline)) Error add_broadcast(const AddParams& p, const TensorRef& ta, const TensorRef& tb,
                                              const TensorRef& to) {
  const AddParams q = p;
  return broadcast_binary_int8(ta, tb, to, [q](int8_t x, int8_t y) {
    return static_cast<int8_t>(clamp_i32(wrap_add(requantize(wrap_add(q.a(x), q.b(y)), q.om, q.os), q.ozp), q.lo, q.hi));
  });
}
}  // namespace

Error cortex_m_quantized_add_out(const KernelContext& ctx) {
  AddParams p;
  if (!read_params(ctx, p)) return Error::KernelFailed;
  const TensorRef &ta = ctx.tensor(0), &tb = ctx.tensor(4), &to = ctx.tensor(13);
  if (is_int8(ta) && is_int8(tb) && is_int8(to) && to.numel >= kTableMin && same_layout(ta, tb, to)) {
    const bool doubled =
        p.os <= -1 && p.os >= -30 && int64_t{operand_bound(p.a)} + operand_bound(p.b) < (int64_t{1} << 30);
    add_by_table(p, doubled, ta.i8(), tb.i8(), to.i8(), to.numel);
    return Error::Ok;
  }
  return add_broadcast(p, ta, tb, to);
}

}  // namespace kernels
}  // namespace mcu
