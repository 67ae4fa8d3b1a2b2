// Integer matrix products (mm / bmm of integer tensors, as ATen: arithmetic in
// the tensors' dtype, wrapping on overflow).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "dtype_util.h"

namespace mcu {
namespace kernels {

// out[m, n] = a[m, k] @ b[k, n], contiguous.
template <typename C>
void matmul_wrapping(const C* a, const C* b, C* out, int32_t m, int32_t k, int32_t n) {
  for (int32_t i = 0; i < m; ++i) {
    for (int32_t j = 0; j < n; ++j) {
      C acc = C(0);
      for (int32_t p = 0; p < k; ++p) {
        acc = wrapping_add(acc, wrapping_mul(a[static_cast<size_t>(i) * k + p], b[static_cast<size_t>(p) * n + j]));
      }
      out[static_cast<size_t>(i) * n + j] = acc;
    }
  }
}

// batch products of contiguous [batch, m, k] @ [batch, k, n] of one integer dtype in Set.
template <DTypeSet Set>
bool batch_matmul_int(const TensorRef& a, const TensorRef& b, const TensorRef& out, int32_t batch, int32_t m,
                      int32_t k, int32_t n) {
  if (a.dtype != b.dtype || a.dtype != out.dtype || !a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous()) {
    return false;
  }
  return dispatch_dtype<Set>(a.dtype, [&](auto zero) {
    using C = decltype(zero);
    for (int32_t i = 0; i < batch; ++i) {
      matmul_wrapping(static_cast<const C*>(a.data) + static_cast<size_t>(i) * m * k,
                      static_cast<const C*>(b.data) + static_cast<size_t>(i) * k * n,
                      static_cast<C*>(out.data) + static_cast<size_t>(i) * m * n, m, k, n);
    }
  });
}

}  // namespace kernels
}  // namespace mcu
