// Arithmetic of the portable elementwise math kernels, as ATen computes it on
// the CPU, for float and every integer C type: Python's remainder and floor
// division, fmod, integer powers, NaN-propagating maximum/minimum. Integer
// division by zero (which ATen raises on) is recorded in a Status and makes the
// kernel fail; it never reaches the hardware divider (or undefined behaviour).
#pragma once
#include <math.h>
#include <stdint.h>

#include "elementwise_engine.h"

namespace mcu {
namespace kernels {

// Failure found while computing (integer division by zero).
struct Status {
  bool failed = false;
  Error result(Error e) const { return e != Error::Ok ? e : failed ? Error::KernelFailed : Error::Ok; }
};

template <typename C>
constexpr bool is_signed_c() { return C(-1) < C(0); }

// a / b and a % b for integers without undefined behaviour: b == 0 records a
// failure (result 0); the lowest value / -1 wraps, as two's complement does.
template <typename C>
C int_div(C a, C b, Status& st) {
  if (b == C(0)) { st.failed = true; return C(0); }
  if constexpr (is_signed_c<C>()) {
    if (b == C(-1)) return wrapping_neg(a);
  }
  return static_cast<C>(a / b);
}
template <typename C>
C int_mod(C a, C b, Status& st) {
  if (b == C(0)) { st.failed = true; return C(0); }
  if constexpr (is_signed_c<C>()) {
    if (b == C(-1)) return C(0);
  }
  return static_cast<C>(a % b);
}

template <typename C>
C maximum_of(C a, C b) {
  if constexpr (__is_same(C, float)) {
    if (a != a || b != b) return NAN;
  }
  return a > b ? a : b;
}
template <typename C>
C minimum_of(C a, C b) {
  if constexpr (__is_same(C, float)) {
    if (a != a || b != b) return NAN;
  }
  return a < b ? a : b;
}

// Python's %: the result has the sign of b.
template <typename C>
C remainder_of(C a, C b, Status& st) {
  if constexpr (__is_same(C, float)) {
    float m = fmodf(a, b);
    if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) m += b;
    return m;
  } else {
    C r = int_mod(a, b, st);
    if constexpr (is_signed_c<C>()) {
      if (r != C(0) && ((r < C(0)) != (b < C(0)))) r = wrapping_add(r, b);
    }
    return r;
  }
}

// C's fmod / %: the result has the sign of a.
template <typename C>
C fmod_of(C a, C b, Status& st) {
  if constexpr (__is_same(C, float)) return fmodf(a, b);
  else return int_mod(a, b, st);
}

// a // b rounded toward negative infinity (ATen's div_floor).
template <typename C>
C floor_div(C a, C b, Status& st) {
  if constexpr (__is_same(C, float)) {
    if (b == 0.0f) return a / b;
    const float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
    if (div == 0.0f) return copysignf(0.0f, a / b);
    float f = floorf(div);
    if (div - f > 0.5f) f += 1.0f;
    return f;
  } else {
    const C q = int_div(a, b, st);
    if constexpr (is_signed_c<C>()) {
      if ((a < C(0)) != (b < C(0)) && b != C(0) && b != C(-1)) {
        const C r = static_cast<C>(a % b);
        return r != C(0) ? static_cast<C>(q - 1) : q;
      }
    }
    return q;
  }
}

// a / b rounded toward zero.
template <typename C>
C trunc_div(C a, C b, Status& st) {
  if constexpr (__is_same(C, float)) return truncf(a / b);
  else return int_div(a, b, st);
}

// |a| as ATen's integer abs gives it: the lowest value of a signed type wraps to itself; unsigned unchanged.
template <typename C>
C abs_wrapping(C a) {
  if constexpr (is_signed_c<C>()) return a < C(0) ? wrapping_neg(a) : a;
  else return a;
}

// ATen's calc_gcd: Euclid's algorithm on |a| and |b| (gcd(0, 0) = 0). Only a wrapped lowest value is negative,
// and its remainders never make a divisor of -1 meet it; the check keeps % defined anyway.
template <typename C>
C gcd_of(C a, C b) {
  a = abs_wrapping(a);
  b = abs_wrapping(b);
  while (a != C(0)) {
    const C c = a;
    a = is_signed_c<C>() && a == C(-1) ? C(0) : static_cast<C>(b % a);
    b = c;
  }
  return b;
}

// a ** b: powf for float; integers by squaring (wrapping), a negative exponent
// gives 0 except for a of 1 or -1 (ATen's integer pow).
template <typename C>
C power(C a, C b) {
  if constexpr (__is_same(C, float)) {
    return powf(a, b);
  } else if constexpr (__is_same(C, bool)) {
    return a || !b;
  } else {
    if constexpr (is_signed_c<C>()) {
      if (b < C(0)) {
        if (a == C(1)) return C(1);
        if (a == C(-1)) return (b & C(1)) ? C(-1) : C(1);
        return C(0);
      }
    }
    C result = C(1);
    using U = typename Unsigned<C>::type;
    U e = static_cast<U>(b);
    C base = a;
    while (e != 0) {
      if (e & 1u) result = wrapping_mul(result, base);
      e = static_cast<U>(e >> 1);
      base = wrapping_mul(base, base);
    }
    return result;
  }
}

}  // namespace kernels
}  // namespace mcu
