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
