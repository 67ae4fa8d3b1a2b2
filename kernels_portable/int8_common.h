// Shared by the int8 kernels of ExecuTorch's cortex_m:: operators: the
// fixed-point requantization of CMSIS-NN / TFLite, layout helpers and a small
// strided iterator for the shape and broadcasting kernels.
//
// Bit-exactness: every kernel reproduces the Python reference implementation
// in executorch/backends/cortex_m/ops/operators.py (docs/int8.md gives the
// arithmetic). requantize() is that file's `requantize_cmsis`, which is
// CMSIS-NN's arm_nn_requantize evaluated in 64 bits: identical to CMSIS-NN
// whenever CMSIS-NN's 32-bit intermediate `val << left_shift` does not
// overflow (it never does for real requantization parameters).
//
// Layout: int8 activations of the 4-D operators are NHWC in memory. The
// legacy operators see them as logical NCHW tensors with dim_order (0,2,3,1);
// the *_nhwc operators see logical NHWC tensors with the identity dim_order.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "mcu/error.h"
#include "mcu/kernel.h"
#include "mcu/types.h"

namespace mcu {
namespace kernels {

// ---------------------------------------------------------------------------
// Fixed-point arithmetic

// Accepted requantization shifts: left shifts up to 31, right shifts up to 63.
constexpr int64_t kMinShift = -63;
constexpr int64_t kMaxShift = 31;

inline bool valid_shift(int64_t shift) { return shift >= kMinShift && shift <= kMaxShift; }
inline bool valid_multiplier(int64_t m) { return m >= INT32_MIN && m <= INT32_MAX; }

// round(a * b / 2^31) with ties toward +inf, in 64 bits; products wrap modulo
// 2^64 like the int64 tensors of the reference (only with absurd shifts).
inline int64_t doubling_high_mult_i64(int64_t a, int32_t b) {
  const uint64_t product = static_cast<uint64_t>(a) * static_cast<uint64_t>(static_cast<int64_t>(b));
  return static_cast<int64_t>(product + (uint64_t{1} << 30)) >> 31;
}

// x / 2^exponent rounded to nearest, ties away from zero (gemmlowp
// RoundingDivideByPOT), for 0 <= exponent <= 63.
inline int64_t rounding_divide_by_pot(int64_t x, int32_t exponent) {
  if (exponent == 0) return x;
  const int64_t mask = static_cast<int64_t>((uint64_t{1} << exponent) - 1);
  const int64_t remainder = x & mask;
  const int64_t result = x >> exponent;
  const int64_t threshold = (mask >> 1) + (result < 0 ? 1 : 0);
  return result + (remainder > threshold ? 1 : 0);
}

// CMSIS-NN arm_nn_requantize: val * multiplier * 2^shift / 2^31, rounded as
// described above; shift > 0 shifts left before the multiplication. The result
// is truncated to 32 bits like the reference's `.to(torch.int32)`.
inline int32_t requantize(int32_t val, int32_t multiplier, int32_t shift) {
  const int32_t left = shift > 0 ? shift : 0;
  const int32_t right = shift < 0 ? -shift : 0;
  const int64_t value = static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(val)) << left);
  const int64_t r = rounding_divide_by_pot(doubling_high_mult_i64(value, multiplier), right);
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(r)));
}

// int32 addition with two's complement wrap-around (torch int32 semantics).
inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

inline int32_t clamp_i32(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Four int8 at any address as one word (memcpy: one LDR on cores that allow unaligned access, the
// Cortex-M33/M4/M55 among them), for the kernels' 4-lanes-a-word paths.
inline uint32_t load4(const int8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

// An activation range [lo, hi] inside int8.
inline bool valid_int8_range(int64_t lo, int64_t hi) { return lo >= -128 && hi <= 127 && lo <= hi; }

// Requantizes an int32 accumulator to int8: requantize, add the output offset,
// clamp to [lo, hi].
inline int8_t requantize_to_int8(int32_t acc, int32_t multiplier, int32_t shift, int32_t out_offset, int32_t lo,
                                 int32_t hi) {
  return static_cast<int8_t>(clamp_i32(wrap_add(requantize(acc, multiplier, shift), out_offset), lo, hi));
}

// Round half to even (torch.round) of a float; rint in the default rounding mode.
inline float round_half_even(float x) { return __builtin_rintf(x); }

// Clamps a float to [lo, hi] and converts it; NaN becomes lo.
inline int32_t float_to_int_clamped(float v, int32_t lo, int32_t hi) {
  if (!(v >= static_cast<float>(lo))) return lo;
  if (v > static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(v);
}

// ---------------------------------------------------------------------------
// Argument checks

inline bool is_int8(const TensorRef& t) { return t.dtype == DType::Int8; }

// A 1-D (or any-rank) int32 tensor with exactly n elements.
inline bool is_int32_vector(const TensorRef& t, int32_t n) { return t.dtype == DType::Int32 && t.numel == n; }

inline bool identity_order(const TensorRef& t) { return t.is_contiguous(); }

// The NHWC memory layout of a 4-D int8 activation.
struct Nhwc {
  int32_t n = 0, h = 0, w = 0, c = 0;
  int32_t pixels() const { return n * h * w; }
};

// A 4-D logical NCHW tensor whose dim_order gives NHWC memory: (0,2,3,1), or
// any order that differs from it only in where size-1 dims go (e.g. the
// identity when C == 1, or ExecuTorch's (0,2,1,3) for a 1-channel input).
inline bool nhwc_memory(const TensorRef& t) {
  constexpr uint8_t kNhwc[4] = {0, 2, 3, 1};
  if (t.dim != 4) return false;
  int32_t k = 0;
  uint32_t seen = 0;
  for (int32_t p = 0; p < 4; ++p) {
    const uint32_t d = t.dim_order != nullptr ? t.dim_order[p] : static_cast<uint32_t>(p);
    if (d >= 4 || (seen & (1u << d)) != 0) return false;
    seen |= 1u << d;
    if (t.size(static_cast<int32_t>(d)) == 1) continue;
    while (k < 4 && t.size(kNhwc[k]) == 1) ++k;
    if (k == 4 || kNhwc[k] != d) return false;
    ++k;
  }
  return true;
}

// Reads a 4-D activation whose memory is NHWC. Legacy operators (nhwc_logical
// false): logical NCHW with dim_order (0,2,3,1), or another order that is the
// same memory (nhwc_memory). *_nhwc operators: logical NHWC, contiguous.
// The NHWC view of 4-D sizes: logical NHWC (the _nhwc operators), else
// logical NCHW stored channels-last. Unchecked: read_nhwc checks.
inline Nhwc nhwc_of(const int32_t* s, bool nhwc_logical) {
  return nhwc_logical ? Nhwc{s[0], s[1], s[2], s[3]} : Nhwc{s[0], s[2], s[3], s[1]};
}

inline bool read_nhwc(const TensorRef& t, bool nhwc_logical, Nhwc* v) {
  if (t.dim != 4) return false;
  if (nhwc_logical ? !identity_order(t) : !t.is_channels_last() && !nhwc_memory(t)) return false;
  *v = nhwc_of(t.sizes, nhwc_logical);
  return v->n >= 0 && v->h >= 0 && v->w >= 0 && v->c >= 0;
}

// ---------------------------------------------------------------------------
// Strided iteration for shape, broadcasting and reduction kernels

// Memory strides (in elements) of each logical dim, from the dim_order.
inline void memory_strides(const TensorRef& t, int32_t* strides) {
  int32_t s = 1;
  for (int32_t p = t.dim - 1; p >= 0; --p) {
    const int32_t d = t.dim_order != nullptr ? t.dim_order[p] : p;
    strides[d] = s;
    s *= t.sizes[d];
  }
}

// A dim_order is a permutation of 0..dim-1.
inline bool valid_dim_order(const TensorRef& t) {
  if (t.dim > kMaxDims) return false;
  if (t.dim_order == nullptr) return true;
  uint32_t seen = 0;
  for (int32_t p = 0; p < t.dim; ++p) {
    const uint32_t d = t.dim_order[p];
    if (d >= static_cast<uint32_t>(t.dim) || (seen & (1u << d)) != 0) return false;
    seen |= 1u << d;
  }
  return true;
}

// Walks every element of an output in its memory order, keeping the element
// offsets of up to two inputs whose logical dims are mapped by `strides`
// (0 for a broadcast dim).
struct StridedWalk {
  int32_t ndim = 0;
  int32_t order[kMaxDims] = {};  // logical dim of each memory position of the output
  int32_t sizes[kMaxDims] = {};  // logical sizes of the output
  int32_t stride_a[kMaxDims] = {};
  int32_t stride_b[kMaxDims] = {};
  int32_t index[kMaxDims] = {};
  int32_t offset_a = 0, offset_b = 0;

  void init(const TensorRef& out) {
    ndim = out.dim;
    for (int32_t p = 0; p < ndim; ++p) order[p] = out.dim_order != nullptr ? out.dim_order[p] : p;
    for (int32_t d = 0; d < ndim; ++d) {
      sizes[d] = out.sizes[d];
      index[d] = 0;
    }
    offset_a = offset_b = 0;
  }

  // Advances to the next output element (memory order).
  void next() {
    for (int32_t p = ndim - 1; p >= 0; --p) {
      const int32_t d = order[p];
      if (++index[d] < sizes[d]) {
        offset_a += stride_a[d];
        offset_b += stride_b[d];
        return;
      }
      offset_a -= stride_a[d] * (sizes[d] - 1);
      offset_b -= stride_b[d] * (sizes[d] - 1);
      index[d] = 0;
    }
  }
};

// Strides of `in` for iterating the output's logical shape with numpy
// broadcasting (trailing dims aligned; a size-1 dim is broadcast). False if
// the shapes do not broadcast to `out`.
inline bool broadcast_strides(const TensorRef& in, const TensorRef& out, int32_t* strides) {
  if (in.dim > out.dim || !valid_dim_order(in)) return false;
  int32_t own[kMaxDims] = {};
  memory_strides(in, own);
  const int32_t lead = out.dim - in.dim;
  for (int32_t d = 0; d < out.dim; ++d) {
    if (d < lead) {
      strides[d] = 0;
      continue;
    }
    const int32_t size = in.sizes[d - lead];
    if (size == out.sizes[d]) {
      strides[d] = own[d - lead];
    } else if (size == 1) {
      strides[d] = 0;
    } else {
      return false;
    }
  }
  return true;
}

// The broadcast shape of a and b equals out's shape.
inline bool broadcast_shape_matches(const TensorRef& a, const TensorRef& b, const TensorRef& out) {
  if (out.dim < a.dim || out.dim < b.dim) return false;
  for (int32_t d = 0; d < out.dim; ++d) {
    const int32_t da = d - (out.dim - a.dim), db = d - (out.dim - b.dim);
    const int32_t sa = da >= 0 ? a.sizes[da] : 1;
    const int32_t sb = db >= 0 ? b.sizes[db] : 1;
    int32_t want = sa;
    if (sa == 1) {
      want = sb;
    } else if (sb != 1 && sb != sa) {
      return false;
    }
    if (out.sizes[d] != want) return false;
  }
  return true;
}

// Applies f(a_element, b_element) -> int8 over the broadcast of a and b into
// out (any layouts). Both inputs int8.
template <typename F>
inline Error broadcast_binary_int8(const TensorRef& a, const TensorRef& b, const TensorRef& out, F f) {
  if (!is_int8(a) || !is_int8(b) || !is_int8(out)) return Error::KernelFailed;
  if (!valid_dim_order(out) || !broadcast_shape_matches(a, b, out)) return Error::KernelFailed;
  const int8_t* pa = a.i8();
  const int8_t* pb = b.i8();
  int8_t* po = out.i8();
  if (a.same_shape(b) && a.same_shape(out) && a.numel == out.numel) {
    // Same shape: fast path when all three share a dim_order.
    bool same = true;
    for (int32_t p = 0; p < out.dim && same; ++p) {
      const int32_t o = out.dim_order ? out.dim_order[p] : p;
      same = (a.dim_order ? a.dim_order[p] : p) == o && (b.dim_order ? b.dim_order[p] : p) == o;
    }
    if (same) {
      for (int32_t i = 0; i < out.numel; ++i) po[i] = f(pa[i], pb[i]);
      return Error::Ok;
    }
  }
  StridedWalk walk;
  walk.init(out);
  if (!broadcast_strides(a, out, walk.stride_a) || !broadcast_strides(b, out, walk.stride_b)) {
    return Error::KernelFailed;
  }
  for (int32_t i = 0; i < out.numel; ++i) {
    po[i] = f(pa[walk.offset_a], pb[walk.offset_b]);
    walk.next();
  }
  return Error::Ok;
}

// Per-output-channel requantization parameters (int32 tensors of n values),
// checked once.
inline bool read_requant_tensors(const TensorRef& multipliers, const TensorRef& shifts, int32_t n,
                                 int32_t min_shift = static_cast<int32_t>(kMinShift),
                                 int32_t max_shift = static_cast<int32_t>(kMaxShift)) {
  if (!is_int32_vector(multipliers, n) || !is_int32_vector(shifts, n)) return false;
  // One unsigned compare per channel: this runs on every call of every conv.
  const uint32_t span = static_cast<uint32_t>(max_shift - min_shift);
  const int32_t* s = shifts.i32();
  for (int32_t i = 0; i < n; ++i) {
    if (static_cast<uint32_t>(s[i]) - static_cast<uint32_t>(min_shift) > span) return false;
  }
  return true;
}

}  // namespace kernels
}  // namespace mcu
