// Max pooling of integer tensors (int32/int64/..., as ATen: the window's largest
// value, the first one on ties, padding never wins). Geometry and checks are
// f32_pool.h's (pool_geometry with the tensors' dtype); only compiled into a
// program whose pooling has integer tensors.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "dtype_util.h"
#include "f32_pool.h"

namespace mcu::kernels {

// Max pooling of every plane of C; with kIndices also the int64 `indices`
// (flat within each H x W plane, as ATen writes them).
template <typename C, bool kIndices>
void max_pool2d_int(const C* in, C* out, int64_t* indices, const PoolGeometry& g) {
  const int32_t in_plane = g.in_h * g.in_w;
  for (int32_t p = 0; p < g.planes; ++p) {
    const C* ip = in + static_cast<size_t>(p) * in_plane;
    for (int32_t oh = 0; oh < g.out_h; ++oh) {
      const int32_t hstart = oh * g.stride_h - g.pad_h;
      int32_t kh0 = 0, kh1 = 0;
      window_taps(hstart, g.dil_h, g.kernel_h, g.in_h, &kh0, &kh1);
      for (int32_t ow = 0; ow < g.out_w; ++ow) {
        const int32_t wstart = ow * g.stride_w - g.pad_w;
        int32_t kw0 = 0, kw1 = 0;
        window_taps(wstart, g.dil_w, g.kernel_w, g.in_w, &kw0, &kw1);
        // pool_geometry keeps padding <= kernel / 2, so every window has a tap;
        // an empty one (not reachable) would give 0 at index 0.
        C best = C(0);
        int32_t best_index = 0;
        bool first = true;
        for (int32_t kh = kh0; kh < kh1; ++kh) {
          const int32_t row = (hstart + kh * g.dil_h) * g.in_w + wstart;
          for (int32_t kw = kw0; kw < kw1; ++kw) {
            const int32_t index = row + kw * g.dil_w;
            const C v = ip[index];
            if (first || v > best) {
              best = v;
              best_index = index;
              first = false;
            }
          }
        }
        *out++ = best;
        if (kIndices) *indices++ = best_index;
      }
    }
  }
}

// Checks `in` and `out` (one integer dtype in Set) and pools; false for any
// other dtype or bad geometry. `indices` is null for mcu::max_pool2d.
template <DTypeSet Set>
bool max_pool2d_int_planes(const TensorRef& in, const TensorRef& out, int64_t* indices, const IntList& kernel,
                           const IntList& stride, const IntList& padding, const IntList& dilation, bool ceil_mode) {
  if (!is_integral(in.dtype)) return false;
  PoolGeometry g;
  if (!pool_geometry(in, out, kernel, stride, padding, dilation, ceil_mode, &g, in.dtype)) return false;
  return dispatch_dtype<Set>(in.dtype, [&](auto zero) {
    using C = decltype(zero);
    if (indices != nullptr) {
      max_pool2d_int<C, true>(static_cast<const C*>(in.data), static_cast<C*>(out.data), indices, g);
    } else {
      max_pool2d_int<C, false>(static_cast<const C*>(in.data), static_cast<C*>(out.data), nullptr, g);
    }
  });
}

}  // namespace mcu::kernels
