// The elementwise engine of the portable kernels: out = op(inputs...) with
// NumPy broadcasting, for any mix of the dtypes a build selected.
//
//   map_elementwise<Set>(out, compute, op, a)          unary
//   map_elementwise<Set>(out, compute, op, a, b)       binary
//   map_elementwise<Set>(out, compute, op, a, b, c)    ternary (where, clamp)
//
// Every input element is converted to the compute type C (the C type of the
// dtype `compute`, which the kernel chose, usually ResultType), op is called
// with one C per input, and its result (a C, a bool, or any other C type) is
// converted to out's dtype. op is a generic lambda or a functor with a template
// call operator: it is compiled once for each C of `Set` (dtype_util.h).
//
// When every tensor already has the compute (and result) dtype the loop reads
// and writes typed pointers; mixed dtypes go through one load function per
// input, chosen once per call. `out` may be the same memory as an input of its
// own dtype and shape (each element is written after it is read, at the same
// index). Returns Error::KernelFailed for shapes that do not broadcast to out,
// broadcasting of non-contiguous tensors, or dtypes outside `Set`.
#pragma once
#include <stdint.h>

#include "dtype_util.h"
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

template <typename C>
constexpr DType dtype_of() {
  if constexpr (__is_same(C, bool)) return DType::Bool;
  else if constexpr (__is_same(C, uint8_t)) return DType::UInt8;
  else if constexpr (__is_same(C, int8_t)) return DType::Int8;
  else if constexpr (__is_same(C, int16_t)) return DType::Int16;
  else if constexpr (__is_same(C, int32_t)) return DType::Int32;
  else if constexpr (__is_same(C, int64_t)) return DType::Int64;
  else return DType::Float;
}

constexpr bool single_dtype(DTypeSet set) { return set != 0 && (set & (set - 1)) == 0; }

// True when `out`'s shape is the broadcast of the inputs' shapes.
inline bool is_broadcast_of(const TensorRef& out, const TensorRef* const* ins, int32_t n) {
  for (int32_t k = 0; k < n; ++k) {
    if (ins[k]->dim > out.dim) return false;
  }
  for (int32_t d = 0; d < out.dim; ++d) {
    int32_t size = 1;
    for (int32_t k = 0; k < n; ++k) {
      const int32_t dk = d - (out.dim - ins[k]->dim);
      const int32_t s = dk >= 0 ? ins[k]->sizes[dk] : 1;
      if (s == 1) continue;
      if (size != 1 && s != size) return false;
      size = s;
    }
    if (out.sizes[d] != size) return false;
  }
  return true;
}

namespace detail {

// The loop over rows for compute type C: typed pointers when the dtypes are
// the compute and result dtypes, else converting loads and stores.
template <DTypeSet Set, typename C, int N, typename Op>
void elementwise_rows(const TensorRef& out, const TensorRef* const* ins, const LoopNestN<N + 1>& loop, Op& op) {
  using R = decltype(op(static_cast<C>(0), static_cast<C>(0), static_cast<C>(0)));
  const int32_t len = loop.row_length();
  int32_t s[N + 1];
  for (int32_t k = 0; k <= N; ++k) s[k] = loop.row_stride(k);
  // With one dtype selected, every tensor has it (map_elementwise checked): no conversions to compile.
  // Bool inputs are read as bytes (read_element), so bool computation takes the loading path.
  constexpr bool bool_inputs = __is_same(C, bool);
  constexpr bool only_typed = single_dtype(Set) && dtype_of<R>() == dtype_of<C>() && !bool_inputs;
  bool typed = out.dtype == dtype_of<R>() && !bool_inputs;
  for (int32_t k = 0; k < N; ++k) typed = typed && ins[k]->dtype == dtype_of<C>();
  if (only_typed || typed) {  // (never for bool inputs: see above)
    R* z = static_cast<R*>(out.data);
    const C* x[N];
    for (int32_t k = 0; k < N; ++k) x[k] = static_cast<const C*>(ins[k]->data);
    loop.for_each_row([&](const int32_t* off) {
      R* zr = z + off[0];
      const C* a = x[0] + off[1];
      if constexpr (N == 1) {
        for (int32_t i = 0; i < len; ++i) zr[i * s[0]] = op(a[i * s[1]], C(0), C(0));
      } else if constexpr (N == 2) {
        const C* b = x[1] + off[2];
        for (int32_t i = 0; i < len; ++i) zr[i * s[0]] = op(a[i * s[1]], b[i * s[2]], C(0));
      } else {
        const C* b = x[1] + off[2];
        const C* c = x[2] + off[3];
        for (int32_t i = 0; i < len; ++i) zr[i * s[0]] = op(a[i * s[1]], b[i * s[2]], c[i * s[3]]);
      }
    });
    return;
  }
  if constexpr (!only_typed) {
    LoadFn<C> load[N];
    for (int32_t k = 0; k < N; ++k) load[k] = loader<Set, C>(ins[k]->dtype);
    const StoreFn<R> store = storer<Set, R>(out.dtype);
    loop.for_each_row([&](const int32_t* off) {
      for (int32_t i = 0; i < len; ++i) {
        C v[3] = {C(0), C(0), C(0)};
        for (int32_t k = 0; k < N; ++k) v[k] = load[k](ins[k]->data, off[k + 1] + i * s[k + 1]);
        store(out.data, off[0] + i * s[0], op(v[0], v[1], v[2]));
      }
    });
  }
}

// Adapts an op of N arguments to the three the row loop passes.
template <int N, typename Op>
struct Arity {
  Op& op;
  template <typename C>
  auto operator()(C a, C b, C c) const {
    if constexpr (N == 1) {
      (void)b, (void)c;
      return op(a);
    } else if constexpr (N == 2) {
      (void)c;
      return op(a, b);
    } else {
      return op(a, b, c);
    }
  }
};

}  // namespace detail

template <DTypeSet Set, typename Op, typename... In>
Error map_elementwise(const TensorRef& out, DType compute, Op op, const In&... inputs) {
  constexpr int N = sizeof...(In);
  static_assert(N >= 1 && N <= 3, "map_elementwise takes one to three inputs");
  const TensorRef* ins[N] = {&inputs...};
  if (!has_dtype(Set, out.dtype) || !has_dtype(Set, compute)) return Error::KernelFailed;
  bool flat = true;  // every input has out's shape and layout: one flat loop
  for (int32_t k = 0; k < N; ++k) {
    if (!has_dtype(Set, ins[k]->dtype)) return Error::KernelFailed;
    flat = flat && ins[k]->same_shape(out) && same_dim_order(*ins[k], out);
  }
  int32_t strides[N + 1][kMaxDims];
  const int32_t* stride_ptrs[N + 1];
  if (flat) {
    const int32_t n = out.numel;
    LoopNestN<N + 1> loop;
    const int32_t one[1] = {n};
    int32_t unit[N + 1][1];
    for (int32_t k = 0; k <= N; ++k) {
      unit[k][0] = 1;
      stride_ptrs[k] = unit[k];
    }
    loop.init(one, 1, stride_ptrs);
    if (n == 0) return Error::Ok;
    detail::Arity<N, Op> call{op};
    return dispatch_dtype<Set>(compute, [&](auto tag) {
             detail::elementwise_rows<Set, decltype(tag), N>(out, ins, loop, call);
           })
               ? Error::Ok
               : Error::KernelFailed;
  }
  if (!is_broadcast_of(out, ins, N) || !out.is_contiguous()) return Error::KernelFailed;
  contiguous_strides(out.sizes, out.dim, strides[0]);
  stride_ptrs[0] = strides[0];
  for (int32_t k = 0; k < N; ++k) {
    if (!ins[k]->is_contiguous() || !broadcast_strides(*ins[k], out, strides[k + 1])) return Error::KernelFailed;
    stride_ptrs[k + 1] = strides[k + 1];
  }
  if (out.numel == 0) return Error::Ok;
  LoopNestN<N + 1> loop;
  loop.init(out.sizes, out.dim, stride_ptrs);
  detail::Arity<N, Op> call{op};
  return dispatch_dtype<Set>(compute, [&](auto tag) {
           detail::elementwise_rows<Set, decltype(tag), N>(out, ins, loop, call);
         })
             ? Error::Ok
             : Error::KernelFailed;
}

// Unary ops ATen computes in floating point (sqrt, log, sin, ...): integer and
// bool inputs are converted to float; out is float. Signature TOO.
template <DTypeSet Selected, typename Op>
Error unary_to_float(const TensorRef& in, const TensorRef& out, Op op) {
  constexpr DTypeSet kSet = (Selected & kAllTypes) | kFloatTypes;
  if (out.dtype != DType::Float) return Error::KernelFailed;
  return map_elementwise<kSet>(out, DType::Float, [op](auto x) { return op(static_cast<float>(x)); }, in);
}
template <DTypeSet Selected, typename Op>
Error unary_to_float(const KernelContext& ctx, Op op) {
  return unary_to_float<Selected>(ctx.tensor(0), ctx.tensor(1), op);
}

// Every element of `out` set to the Scalar `value` (converted as ATen does).
template <DTypeSet Set>
Error fill_with(const TensorRef& out, const Scalar& value) {
  return dispatch_dtype<Set>(out.dtype, [&](auto tag) {
           using C = decltype(tag);
           const C v = scalar_as<C>(value);
           C* p = static_cast<C*>(out.data);
           for (int32_t i = 0; i < out.numel; ++i) p[i] = v;
         })
             ? Error::Ok
             : Error::KernelFailed;
}

// The dtype ATen computes a binary op of two tensors in (result_type).
inline DType result_type(const TensorRef& a, const TensorRef& b) {
  ResultType r;
  r.add_tensor(a);
  r.add_tensor(b);
  return r.get();
}

// The dtype ATen computes a tensor-and-Scalar op in.
inline DType result_type(const TensorRef& a, const Scalar& s) {
  ResultType r;
  r.add_tensor(a);
  r.add_scalar(s);
  return r.get();
}

}  // namespace kernels
}  // namespace mcu
