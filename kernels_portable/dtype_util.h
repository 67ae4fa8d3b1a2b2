// Element types for the portable kernels: which dtypes a build compiles in,
// the C type of each, converting loads and stores, and ATen's type promotion.
//
// Selective build by dtype: mcu-gen writes `mcu_selected_dtypes.h` for every
// build, with one DTypeSet per kernel function (named after it, in namespace
// mcu::selected): the dtypes of the tensors that kernel's instructions in this
// program touch, plus the types a Scalar argument can promote them to. A kernel
// passes its set to the engines (elementwise_engine.h, reduce_common.h), whose
// dtype switches instantiate only those cases, so a float-only program links
// float code only. A tensor of a dtype outside the set makes the kernel fail
// (Error::KernelFailed), never run wrong.
#pragma once
#include <stdint.h>

#include "mcu/types.h"
#include "mcu_selected_dtypes.h"

namespace mcu {
namespace kernels {

using DTypeSet = uint32_t;

constexpr DTypeSet dtype_bit(DType t) { return 1u << static_cast<uint32_t>(t); }

// The dtypes the portable kernels compute in.
constexpr DTypeSet kFloatTypes = dtype_bit(DType::Float);
constexpr DTypeSet kIntTypes = dtype_bit(DType::UInt8) | dtype_bit(DType::Int8) | dtype_bit(DType::Int16) |
                               dtype_bit(DType::Int32) | dtype_bit(DType::Int64);
constexpr DTypeSet kRealTypes = kFloatTypes | kIntTypes;               // numbers
constexpr DTypeSet kAllTypes = kRealTypes | dtype_bit(DType::Bool);  // and bool

constexpr bool has_dtype(DTypeSet set, DType t) { return (set & dtype_bit(t)) != 0; }

inline bool is_integral(DType t) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}
inline bool is_floating(DType t) { return t == DType::Float || t == DType::Double || t == DType::Half; }

// The C type of a dtype: CType<DType::Int64>::type is int64_t.
template <DType D>
struct CType;
template <> struct CType<DType::Bool> { using type = bool; };
template <> struct CType<DType::UInt8> { using type = uint8_t; };
template <> struct CType<DType::Int8> { using type = int8_t; };
template <> struct CType<DType::Int16> { using type = int16_t; };
template <> struct CType<DType::Int32> { using type = int32_t; };
template <> struct CType<DType::Int64> { using type = int64_t; };
template <> struct CType<DType::Float> { using type = float; };

// Calls f(C{}) with C the C type of `t` when `t` is in `Set`; returns false
// (f not called) for any other dtype. Only the cases of `Set` are compiled.
template <DTypeSet Set, typename F>
bool dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool:
      if constexpr (has_dtype(Set, DType::Bool)) { f(bool{}); return true; }
      break;
    case DType::UInt8:
      if constexpr (has_dtype(Set, DType::UInt8)) { f(uint8_t{}); return true; }
      break;
    case DType::Int8:
      if constexpr (has_dtype(Set, DType::Int8)) { f(int8_t{}); return true; }
      break;
    case DType::Int16:
      if constexpr (has_dtype(Set, DType::Int16)) { f(int16_t{}); return true; }
      break;
    case DType::Int32:
      if constexpr (has_dtype(Set, DType::Int32)) { f(int32_t{}); return true; }
      break;
    case DType::Int64:
      if constexpr (has_dtype(Set, DType::Int64)) { f(int64_t{}); return true; }
      break;
    case DType::Float:
      if constexpr (has_dtype(Set, DType::Float)) { f(float{}); return true; }
      break;
    default:
      break;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Conversions, as ATen casts: to bool is "not zero"; float to integer rounds
// toward zero and, where C++ leaves it undefined (NaN, out of range), gives 0
// or the nearest bound instead, so no input can make a kernel misbehave.

// Float to an integer type: NaN gives 0, values beyond the type's range its
// nearest bound (C++ leaves both undefined), others round toward zero.
template <typename To>
To float_to_integer(float x) {
  constexpr bool is_signed = To(-1) < To(0);
  constexpr int bits = static_cast<int>(sizeof(To)) * 8;
  constexpr To lowest = is_signed ? static_cast<To>(uint64_t(1) << (bits - 1)) : To(0);
  constexpr To highest = static_cast<To>(~lowest);
  constexpr float upper = static_cast<float>(uint64_t(1) << (is_signed ? bits - 1 : bits));  // exclusive
  constexpr float lower = is_signed ? -upper : 0.0f;
  if (!(x == x)) return To(0);
  if (x <= lower) return lowest;
  if (x >= upper) return highest;
  return static_cast<To>(x);
}

template <typename To, typename From>
inline To convert(From x) {
  if constexpr (__is_same(To, bool)) {
    return x != From(0);
  } else if constexpr (__is_same(From, float) && !__is_same(To, float)) {
    return float_to_integer<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// Element i of `data`, of C type T. A bool element is read as its byte (not
// zero: true): tensor memory is not always a valid C++ bool object (a corrupt
// program can alias a bool tensor with a float one), and loading a bool that
// is neither 0 nor 1 is undefined behaviour. Every kernel reads elements that
// may be bool through this function.
template <typename T>
T read_element(const void* data, int32_t i) {
  if constexpr (__is_same(T, bool)) {
    return static_cast<const uint8_t*>(data)[i] != 0;
  } else {
    return static_cast<const T*>(data)[i];
  }
}

// Element i of `data` (of dtype T) as a C.
template <typename C, typename T>
C load_element(const void* data, int32_t i) {
  return convert<C>(read_element<T>(data, i));
}

template <typename C, typename T>
void store_element(void* data, int32_t i, C v) {
  static_cast<T*>(data)[i] = convert<T>(v);
}

template <typename C>
using LoadFn = C (*)(const void* data, int32_t i);
template <typename C>
using StoreFn = void (*)(void* data, int32_t i, C v);

// A load of dtype `t` elements as C, for t in Set (nullptr otherwise).
template <DTypeSet Set, typename C>
LoadFn<C> loader(DType t) {
  LoadFn<C> fn = nullptr;
  dispatch_dtype<Set>(t, [&](auto tag) { fn = &load_element<C, decltype(tag)>; });
  return fn;
}

template <DTypeSet Set, typename C>
StoreFn<C> storer(DType t) {
  StoreFn<C> fn = nullptr;
  dispatch_dtype<Set>(t, [&](auto tag) { fn = &store_element<C, decltype(tag)>; });
  return fn;
}

// Integer arithmetic wraps around as ATen's does in practice (two's complement);
// signed overflow is undefined in C++, so these compute in the unsigned type.
// For float and bool they are the plain operations.
template <typename C>
struct Unsigned { using type = C; };
template <> struct Unsigned<int8_t> { using type = uint8_t; };
template <> struct Unsigned<int16_t> { using type = uint16_t; };
template <> struct Unsigned<int32_t> { using type = uint32_t; };
template <> struct Unsigned<int64_t> { using type = uint64_t; };

template <typename C>
C wrapping_add(C a, C b) {
  using U = typename Unsigned<C>::type;
  if constexpr (__is_same(C, bool)) return a || b;
  else return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename C>
C wrapping_sub(C a, C b) {
  using U = typename Unsigned<C>::type;
  if constexpr (__is_same(C, bool)) return a != b;
  else return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename C>
C wrapping_mul(C a, C b) {
  using U = typename Unsigned<C>::type;
  if constexpr (__is_same(C, bool)) return a && b;
  // uint16_t * uint16_t promotes to int and may overflow it: multiply in 32 or 64 bits.
  else if constexpr (sizeof(C) < 4) return static_cast<C>(static_cast<uint32_t>(static_cast<U>(a)) * static_cast<U>(b));
  else return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <typename C>
C wrapping_neg(C a) {
  return wrapping_sub(C(0), a);
}

// A Scalar as the C type C, as ATen converts it, without undefined behaviour
// (a Double beyond an integer type's range saturates, NaN gives 0).
template <typename C>
C scalar_as(const Scalar& s) {
  if (s.kind == Scalar::Kind::Double) return convert<C>(static_cast<float>(s.d));
  if constexpr (__is_same(C, bool)) return s.i != 0;
  else return static_cast<C>(s.i);
}

// ---------------------------------------------------------------------------
// Type promotion (ATen's promote_types and result_type, for the dtypes above).

// promote_types(a, b): the smallest dtype both convert to without loss of
// kind (bool < integers < float; uint8 with int8 is int16).
inline DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_floating(a) || is_floating(b)) {
    if (a == DType::Double || b == DType::Double) return DType::Double;
    return DType::Float;
  }
  if (a == DType::UInt8 || b == DType::UInt8) {
    const DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return static_cast<int8_t>(a) > static_cast<int8_t>(b) ? a : b;  // Int8 < Int16 < Int32 < Int64
}

// How an operand takes part in result_type: a tensor with dimensions decides
// over a 0-dim tensor, which decides over a Scalar, unless the weaker one is of
// a higher category (bool < integer < float).
class ResultType {
 public:
  void add_tensor(const TensorRef& t) { add(t.dim > 0 ? dim_ : zero_, t.dtype); }
  void add_scalar(const Scalar& s) {
    add(wrapped_, s.is_floating() ? DType::Float : s.is_bool() ? DType::Bool : DType::Int64);
  }
  DType get() const { return combine(dim_, combine(zero_, wrapped_)).t; }

 private:
  struct State {
    bool set = false;
    DType t = DType::Bool;
  };
  static void add(State& s, DType t) {
    s.t = s.set ? promote_types(s.t, t) : t;
    s.set = true;
  }
  static int category(DType t) { return is_floating(t) ? 2 : is_integral(t) ? 1 : 0; }
  static State combine(const State& higher, const State& lower) {
    if (!higher.set) return lower;
    if (!lower.set) return higher;
    State r = higher;
    if (category(lower.t) > category(higher.t)) r.t = promote_types(higher.t, lower.t);
    return r;
  }

  State dim_, zero_, wrapped_;
};

}  // namespace kernels
}  // namespace mcu
