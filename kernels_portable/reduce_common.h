// The reduction engine of the portable kernels: the walk behind sum, mean,
// prod, amax/amin, argmax/argmin, var/std, any/all, max/min.dim, logsumexp
// and the norms. A Reduction knows which dims of the input are reduced (ATen's
// dim list; None or [] means all), checks the out shape for keepdim, and walks
// the input as one sequence of reduced elements per output element:
//
//   Reduction r;
//   if (!r.init(in, dims_from_list(ctx.int_list(1)), ...) || !r.matches(out, keepdim)) return Error::KernelFailed;
//   r.for_each_output([&](int32_t o, int32_t base) {
//     float s = 0;
//     r.for_each_reduced(base, [&](int32_t offset, int32_t k) { s += x[offset]; });
//     y[o] = s;
//   });
//
// Output elements come in the out tensor's (contiguous) order; the reduced
// elements of one output in the input's row-major order, k counting them from
// 0, so k is the index along the dim for a one-dim reduction and the flattened
// index for a reduction over all dims (argmax's convention). The input must be
// contiguous; any dtype (the walk is in elements).
#pragma once
#include <stdint.h>

#include "elementwise_common.h"
#include "mcu/kernel.h"

namespace mcu {
namespace kernels {

// Which dims a reduction reduces, as a mask over the input's dims.
struct ReducedDims {
  bool dim[kMaxDims] = {};
  bool all = true;  // None or an empty list: every dim
  bool valid = true;
};

// From an int[]? argument (nullptr or empty: all dims). Repeated or
// out-of-range dims make it invalid.
inline ReducedDims reduced_dims(const KernelContext& ctx, int32_t arg, int32_t ndim) {
  ReducedDims r;
  if (ctx.is_none(arg)) return r;
  const IntList dims = ctx.int_list(arg);
  if (dims.size() == 0) return r;
  r.all = false;
  for (int32_t i = 0; i < dims.size(); ++i) {
    int32_t d = 0;
    if (!wrap_dim(dims[i], ndim, &d) || (ndim > 0 && r.dim[d])) {
      r.valid = false;
      return r;
    }
    if (ndim > 0) r.dim[d] = true;
  }
  return r;
}

// From a single int dim argument (an int? that is None reduces all dims).
inline ReducedDims reduced_dim(const KernelContext& ctx, int32_t arg, int32_t ndim) {
  ReducedDims r;
  if (ctx.is_none(arg)) return r;
  int32_t d = 0;
  r.all = false;
  if (!wrap_dim(ctx.int_arg(arg), ndim, &d)) {
    r.valid = false;
    return r;
  }
  if (ndim > 0) r.dim[d] = true;
  return r;
}

class Reduction {
 public:
  // False for an invalid dim list, a non-contiguous input or more than kMaxDims dims.
  bool init(const TensorRef& in, const ReducedDims& dims) {
    if (!dims.valid || !in.is_contiguous() || in.dim > kMaxDims) return false;
    in_ = in;
    int32_t stride[kMaxDims];
    contiguous_strides(in.sizes, in.dim, stride);
    int32_t kept_size[kMaxDims], kept_stride[kMaxDims], red_size[kMaxDims], red_stride[kMaxDims];
    int32_t nk = 0, nr = 0;
    count_ = 1;
    for (int32_t d = 0; d < in.dim; ++d) {
      reduce_[d] = dims.all || dims.dim[d];
      if (reduce_[d]) {
        red_size[nr] = in.sizes[d];
        red_stride[nr++] = stride[d];
        count_ *= in.sizes[d];
      } else {
        kept_size[nk] = in.sizes[d];
        kept_stride[nk++] = stride[d];
      }
    }
    const int32_t* ks[1] = {kept_stride};
    const int32_t* rs[1] = {red_stride};
    kept_.init(kept_size, nk, ks);
    reduced_.init(red_size, nr, rs);
    out_numel_ = 1;
    for (int32_t d = 0; d < nk; ++d) out_numel_ *= kept_size[d];
    empty_ = in.numel == 0;
    return true;
  }

  // Whether `out` has the reduced shape: the kept dims, and with keepdim a 1
  // in place of each reduced dim. Also demands a contiguous out.
  bool matches(const TensorRef& out, bool keepdim) const {
    if (!out.is_contiguous()) return false;
    int32_t od = 0;
    for (int32_t d = 0; d < in_.dim; ++d) {
      if (reduce_[d] && !keepdim) continue;
      if (od >= out.dim || out.sizes[od] != (reduce_[d] ? 1 : in_.sizes[d])) return false;
      ++od;
    }
    return od == out.dim;
  }

  int32_t count() const { return count_; }          // reduced elements per output element
  int32_t out_numel() const { return out_numel_; }  // output elements

  // f(o, base): o the output element's index, base the input offset of its first reduced element.
  template <typename F>
  void for_each_output(F f) const {
    if (out_numel_ == 0) return;
    int32_t o = 0;
    const int32_t len = kept_.row_length();
    const int32_t step = kept_.row_stride(0);
    kept_.for_each_row([&](const int32_t* off) {
      for (int32_t i = 0; i < len; ++i) f(o++, off[0] + i * step);
    });
  }

  // f(offset, k) for each reduced element of the output at `base`, k = 0, 1, ...
  template <typename F>
  void for_each_reduced(int32_t base, F f) const {
    if (empty_) return;
    int32_t k = 0;
    const int32_t len = reduced_.row_length();
    const int32_t step = reduced_.row_stride(0);
    reduced_.for_each_row([&](const int32_t* off) {
      const int32_t start = base + off[0];
      for (int32_t i = 0; i < len; ++i) f(start + i * step, k++);
    });
  }

 private:
  TensorRef in_;
  bool reduce_[kMaxDims] = {};
  int32_t count_ = 1;
  int32_t out_numel_ = 1;
  bool empty_ = false;
  LoopNestN<1> kept_;
  LoopNestN<1> reduced_;
};

}  // namespace kernels
}  // namespace mcu

// ---------------------------------------------------------------------------
// Shared bodies of amax/amin and argmax/argmin (NaN propagates as in ATen: a
// NaN is the max and the min; argmax/argmin give the first NaN's index).
#include "dtype_util.h"

namespace mcu {
namespace kernels {

template <typename C>
inline bool is_nan_value(C x) {
  if constexpr (__is_same(C, float)) return x != x;
  else return false;
}

// Whether `x` replaces the current best `best` (first occurrence wins on ties).
template <bool kMax, typename C>
inline bool better(C x, C best) {
  if (is_nan_value(best)) return false;
  if (is_nan_value(x)) return true;
  return kMax ? x > best : x < best;
}

// amax/amin: out (same dtype as in) the extreme over the reduced dims; an
// empty reduction fails (ATen raises).
template <DTypeSet Set, bool kMax>
Error reduce_extreme(const TensorRef& in, const TensorRef& out, const ReducedDims& dims, bool keepdim) {
  Reduction r;
  if (in.dtype != out.dtype || !r.init(in, dims) || !r.matches(out, keepdim)) return Error::KernelFailed;
  if (r.count() == 0 && r.out_numel() > 0) return Error::KernelFailed;
  const bool ok = dispatch_dtype<Set>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    C* y = static_cast<C*>(out.data);
    r.for_each_output([&](int32_t o, int32_t base) {
      C best = read_element<C>(in.data, base);
      r.for_each_reduced(base, [&](int32_t offset, int32_t) {
        const C e = read_element<C>(in.data, offset);
        if (better<kMax>(e, best)) best = e;
      });
      y[o] = best;
    });
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

// argmax/argmin: out int64, the index of the (first) extreme along the
// reduced dim (flattened index when dim is None).
template <DTypeSet Set, bool kMax>
Error reduce_arg(const TensorRef& in, const TensorRef& out, const ReducedDims& dims, bool keepdim) {
  Reduction r;
  if (out.dtype != DType::Int64 || !r.init(in, dims)) return Error::KernelFailed;
  if (!r.matches(out, keepdim)) return Error::KernelFailed;  // dim=None: 0-dim, or all ones with keepdim
  if (r.count() == 0 && r.out_numel() > 0) return Error::KernelFailed;
  const bool ok = dispatch_dtype<Set>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    int64_t* y = static_cast<int64_t*>(out.data);
    r.for_each_output([&](int32_t o, int32_t base) {
      C best = read_element<C>(in.data, base);
      int64_t at = 0;
      r.for_each_reduced(base, [&](int32_t offset, int32_t k) {
        const C e = read_element<C>(in.data, offset);
        if (better<kMax>(e, best)) {
          best = e;
          at = k;
        }
      });
      y[o] = at;
    });
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu

namespace mcu {
namespace kernels {

// var over the reduced dims with `correction` (N - correction in the
// denominator; <= 0 gives inf/NaN as in ATen), two passes in float. With
// `mean_out` (var_mean) also the mean, same shape as out.
inline Error reduce_var(const TensorRef& in, const TensorRef& out, const ReducedDims& dims, bool keepdim,
                        float correction, const TensorRef* mean_out = nullptr) {
  Reduction r;
  if (in.dtype != DType::Float || out.dtype != DType::Float || !r.init(in, dims) || !r.matches(out, keepdim))
    return Error::KernelFailed;
  if (mean_out != nullptr && (mean_out->dtype != DType::Float || !r.matches(*mean_out, keepdim)))
    return Error::KernelFailed;
  const float* x = static_cast<const float*>(in.data);
  float* y = static_cast<float*>(out.data);
  float* m = mean_out != nullptr ? static_cast<float*>(mean_out->data) : nullptr;
  const float n = static_cast<float>(r.count());
  const float denom = n - correction > 0.0f ? n - correction : 0.0f;
  r.for_each_output([&](int32_t o, int32_t base) {
    float s = 0.0f;
    r.for_each_reduced(base, [&](int32_t offset, int32_t) { s += x[offset]; });
    const float mean = s / n;
    float ss = 0.0f;
    r.for_each_reduced(base, [&](int32_t offset, int32_t) {
      const float d = x[offset] - mean;
      ss += d * d;
    });
    y[o] = ss / denom;
    if (m != nullptr) m[o] = mean;
  });
  return Error::Ok;
}

// prod over the reduced dims, accumulating in out's dtype (ATen: int64 for
// integer and bool inputs unless a dtype is given; the caller checks it);
// integer products wrap. An empty reduction gives 1.
template <DTypeSet Set>
Error reduce_prod(const TensorRef& in, const TensorRef& out, const ReducedDims& dims, bool keepdim) {
  Reduction r;
  if (!r.init(in, dims) || !r.matches(out, keepdim)) return Error::KernelFailed;
  bool ok = false;
  dispatch_dtype<Set & kRealTypes>(out.dtype, [&](auto acc_tag) {
    using Acc = decltype(acc_tag);
    const LoadFn<Acc> load = loader<Set, Acc>(in.dtype);
    if (load == nullptr) return;
    Acc* y = static_cast<Acc*>(out.data);
    r.for_each_output([&](int32_t o, int32_t base) {
      Acc p = Acc(1);
      r.for_each_reduced(base, [&](int32_t offset, int32_t) { p = wrapping_mul(p, load(in.data, offset)); });
      y[o] = p;
    });
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

// mean over the reduced dims into a float out (any real input, converted to
// float as ATen does for mean(dtype=float)); an empty reduction gives NaN.
template <DTypeSet Set>
Error reduce_mean_f32(const TensorRef& in, const TensorRef& out, const ReducedDims& dims, bool keepdim) {
  Reduction r;
  if (out.dtype != DType::Float || !r.init(in, dims) || !r.matches(out, keepdim)) return Error::KernelFailed;
  const LoadFn<float> load = loader<Set, float>(in.dtype);
  if (load == nullptr) return Error::KernelFailed;
  float* y = static_cast<float*>(out.data);
  const float n = static_cast<float>(r.count());
  r.for_each_output([&](int32_t o, int32_t base) {
    float s = 0.0f;
    r.for_each_reduced(base, [&](int32_t offset, int32_t) { s += load(in.data, offset); });
    y[o] = s / n;
  });
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
