// The scan kernels (cumprod, cummax/cummin, logcumsumexp): a running value
// along one dim, written at every step, so each out has the input's shape.
// They walk the input with reduce_common.h's Reduction over that one dim:
// for_each_output gives the start of each line along dim, for_each_reduced its
// elements in order, k being the index along dim. Input and outs are
// contiguous with the same shape, so an input offset is also the out offset.
#pragma once
#include <stdint.h>

#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

// Sets up `r` to walk `in` along the dim of int argument `dim_arg` (negative
// counts from the end; a 0-dim tensor is one line of one element). False
// unless `out` is contiguous with in's shape (and in is contiguous).
inline bool init_scan(Reduction& r, const KernelContext& ctx, int32_t dim_arg, const TensorRef& in,
                      const TensorRef& out) {
  if (!out.is_contiguous() || !out.same_shape(in)) return false;
  return r.init(in, reduced_dim(ctx, dim_arg, in.dim));
}

// cummax (kMax) / cummin: the running extreme along dim and the int64 index of
// the element it came from, as ATen's CPU kernel: an element replaces the
// running value when it is NaN, or when neither is NaN and it is >= (<= for
// cummin) the running value. So ties take the later index, and once a NaN is
// seen the value stays NaN with the index of the latest NaN.
// Arguments: self, dim, values (self's dtype), indices (int64).
template <DTypeSet Set, bool kMax>
Error cumulative_extreme(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef values = ctx.tensor(2);
  const TensorRef indices = ctx.tensor(3);
  Reduction r;
  if (values.dtype != in.dtype || indices.dtype != DType::Int64) return Error::KernelFailed;
  if (!indices.is_contiguous() || !indices.same_shape(in) || !init_scan(r, ctx, 1, in, values)) {
    return Error::KernelFailed;
  }
  int64_t* at = static_cast<int64_t*>(indices.data);
  const bool ok = dispatch_dtype<Set>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    C* y = static_cast<C*>(values.data);
    r.for_each_output([&](int32_t, int32_t base) {
      C best = read_element<C>(in.data, base);
      int64_t best_at = 0;
      r.for_each_reduced(base, [&](int32_t offset, int32_t k) {
        const C x = read_element<C>(in.data, offset);
        if (is_nan_value(x) || (!is_nan_value(best) && (kMax ? x >= best : x <= best))) {
          best = x;
          best_at = k;
        }
        y[offset] = best;
        at[offset] = best_at;
      });
    });
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
