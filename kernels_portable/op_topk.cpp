// mcu-gen-kernel: op=aten::topk.values fn=aten_topk_values sig=TIIBBOOX dtypes=float32,uint8,int8,int16,int32,int64
// aten::topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *,
//     Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
// The k largest (or smallest) elements along dim and their int64 indices, best first. NaN
// counts as larger than any number, as in ATen (first when largest, last when smallest).
// Equal elements: ATen's CPU kernel orders them by its selection algorithm (std::partial_sort
// when k * 64 <= n, else std::nth_element then std::sort of the first k - 1), whose tie order
// is the standard library's. For a slice of up to kOrderedMax elements this kernel runs the
// same algorithms with the same comparison on a stack array of element numbers (uint16_t,
// 256 bytes), so indices of ties and sorted=False's order match PyTorch's: sort_common.h writes out
// libstdc++'s partial_sort, nth_element and std::sort (that one as a loop, which the image's static
// stack bound can bound), step for step.
// Longer slices need no scratch: each output is the successor of the previous one in the
// (value, index) order, one pass per output (k * n comparisons): equal values come lowest
// index first there, and sorted=False returns them sorted.
#include <stddef.h>

#include "dtype_util.h"
#include "elementwise_common.h"
#include "sort_common.h"

namespace mcu {
namespace kernels {

namespace {

// Whether element (a, i) comes before (b, j) in the order of the long-slice walk.
template <typename C>
bool comes_before(C a, int32_t i, C b, int32_t j, bool largest) {
  const bool a_nan = a != a, b_nan = b != b;  // always false for integers
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return i < j;
    return largest ? a_nan : b_nan;
  }
  if (a != b) return largest ? a > b : a < b;
  return i < j;
}

constexpr int32_t kOrderedMax = 128;

template <typename C>
void topk_slices(const TensorRef& in, C* values, int64_t* indices, int32_t dim, int32_t k, bool largest,
                 bool sorted) {
  const C* x = static_cast<const C*>(in.data);
  const int32_t n = in.sizes[dim];
  const int32_t outer = size_product(in, 0, dim);
  const int32_t inner = size_product(in, dim + 1, in.dim);
  uint16_t order[kOrderedMax];
  for (int32_t o = 0; o < outer; ++o) {
    for (int32_t s = 0; s < inner; ++s) {
      const C* xs = x + static_cast<size_t>(o) * n * inner + s;
      const size_t out_base = static_cast<size_t>(o) * k * inner + s;
      if (n <= kOrderedMax) {
        for (int32_t i = 0; i < n; ++i) order[i] = static_cast<uint16_t>(i);
        const SortBefore<C> before{xs, inner, largest};  // largest first: ATen's descending order
        if (static_cast<int64_t>(k) * 64 <= n) {
          partial_sort(order, order + k, order + n, before);
        } else {
          nth_element(order, order + k - 1, order + n, before);
          if (sorted) introsort<14>(order, order + k - 1, before);  // depth limit 2 * 6 for kOrderedMax
        }
        for (int32_t r = 0; r < k; ++r) {
          values[out_base + static_cast<size_t>(r) * inner] = xs[static_cast<size_t>(order[r]) * inner];
          indices[out_base + static_cast<size_t>(r) * inner] = order[r];
        }
        continue;
      }
      int32_t prev = -1;
      for (int32_t r = 0; r < k; ++r) {
        int32_t best = -1;
        for (int32_t i = 0; i < n; ++i) {
          const C v = xs[static_cast<size_t>(i) * inner];
          if (prev >= 0 && !comes_before(xs[static_cast<size_t>(prev) * inner], prev, v, i, largest)) continue;
          if (best < 0 || comes_before(v, i, xs[static_cast<size_t>(best) * inner], best, largest)) best = i;
        }
        values[out_base + static_cast<size_t>(r) * inner] = xs[static_cast<size_t>(best) * inner];
        indices[out_base + static_cast<size_t>(r) * inner] = best;
        prev = best;
      }
    }
  }
}

}  // namespace

Error aten_topk_values(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_topk_values & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef values = ctx.tensor(5);
  const TensorRef indices = ctx.tensor(6);
  const bool largest = ctx.bool_arg(3);
  int32_t dim = 0;
  if (values.dtype != in.dtype || indices.dtype != DType::Int64) return Error::KernelFailed;
  if (!in.is_contiguous() || !values.is_contiguous() || !indices.is_contiguous()) return Error::KernelFailed;
  const int32_t ndim = in.dim == 0 ? 1 : in.dim;  // a 0-dim input is one slice of one element
  if (!wrap_dim(ctx.int_arg(2), ndim, &dim)) return Error::KernelFailed;
  const int64_t k = ctx.int_arg(1);
  const int32_t n = in.dim == 0 ? 1 : in.sizes[dim];
  if (k < 0 || k > n || values.dim != in.dim || indices.dim != in.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < in.dim; ++d) {
    const int32_t want = d == dim ? static_cast<int32_t>(k) : in.sizes[d];
    if (values.sizes[d] != want || indices.sizes[d] != want) return Error::KernelFailed;
  }
  if (in.dim == 0) {  // k is 0 or 1
    if (k == 0) return Error::KernelFailed;  // a 0-dim out holds one element
    move_bytes(values.data, in.data, element_size(in));
    static_cast<int64_t*>(indices.data)[0] = 0;
    return Error::Ok;
  }
  if (k == 0 || values.numel == 0) return Error::Ok;
  const bool ok = dispatch_dtype<kSet>(in.dtype, [&](auto tag) {
    using C = decltype(tag);
    topk_slices<C>(in, static_cast<C*>(values.data), static_cast<int64_t*>(indices.data), dim,
                   static_cast<int32_t>(k), largest, ctx.bool_arg(4));
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
