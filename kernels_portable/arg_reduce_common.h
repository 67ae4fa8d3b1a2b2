// argmax/argmin and max.dim/min.dim (owned by red2): the index of the
// largest/smallest element along the reduced dims, the first one on ties, the
// first NaN when there is one (ATen's convention). k is the flattened index
// over the reduced elements (Reduction's walk), so for a reduction over all
// dims it is the index into the flattened input, as argmax(dim=None) returns.
#pragma once
#include <stdint.h>

#include "dtype_util.h"
#include "reduce_common.h"

namespace mcu {
namespace kernels {

// values may be nullptr (argmax/argmin); indices is int64.
template <DTypeSet kSet, bool kMax>
bool arg_reduce(const Reduction& r, const TensorRef& in, void* values, int64_t* indices) {
  return dispatch_dtype<kSet>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    C* v = static_cast<C*>(values);
    r.for_each_output([&](int32_t o, int32_t base) {
      C m = read_element<C>(in.data, base);
      int32_t best = 0;
      bool nan = (m != m);
      r.for_each_reduced(base, [&](int32_t offset, int32_t k) {
        if (nan) return;
        const C e = read_element<C>(in.data, offset);
        if (e != e) {
          nan = true;
          m = e;
          best = k;
        } else if (kMax ? (e > m) : (e < m)) {
          m = e;
          best = k;
        }
      });
      if (v != nullptr) v[o] = m;
      indices[o] = best;
    });
  });
}

}  // namespace kernels
}  // namespace mcu
