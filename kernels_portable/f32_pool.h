// Pooling geometry shared by the fp32 max/avg pooling kernels: ATen's output
// size rule (including ceil_mode) and the argument checks. Tensors are
// contiguous [N, C, H, W] or [C, H, W]; every (n, c) plane is pooled alone.
#pragma once
#include <stdint.h>
#include <string.h>

#include "conv_common.h"

namespace mcu::kernels {

struct PoolGeometry {
  int32_t planes = 0;  // N * C
  int32_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int32_t kernel_h = 1, kernel_w = 1;
  int32_t stride_h = 1, stride_w = 1;
  int32_t pad_h = 0, pad_w = 0;
  int32_t dil_h = 1, dil_w = 1;
};

// ATen's pooling_output_shape: false if the result is empty.
inline bool pool_out_size(int32_t in, int32_t k, int32_t pad, int32_t stride, int32_t dil, bool ceil_mode,
                          int32_t* out) {
  const int32_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int32_t n = floor_div(num, stride) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (n - 1) * stride >= in + pad) --n;
  if (n < 1) return false;
  *out = n;
  return true;
}

// Reads kernel_size, stride (empty: = kernel_size), padding and dilation
// (pass an empty list for none) and checks them against input and out, both
// contiguous tensors of `dtype` (fp32 unless an integer pooling says otherwise).
inline bool pool_geometry(const TensorRef& in, const TensorRef& out, const IntList& kernel, const IntList& stride,
                          const IntList& padding, const IntList& dilation, bool ceil_mode, PoolGeometry* g,
                          DType dtype = DType::Float) {
  if (in.dtype != dtype || out.dtype != dtype || !in.is_contiguous() || !out.is_contiguous()) return false;
  if ((in.dim != 3 && in.dim != 4) || out.dim != in.dim) return false;
  if (kernel.size() < 1) return false;
  if (!read_param(kernel, 0, 1, 1, &g->kernel_h) || !read_param(kernel, 1, 1, 1, &g->kernel_w)) return false;
  if (!read_param(stride, 0, g->kernel_h, 1, &g->stride_h) || !read_param(stride, 1, g->kernel_w, 1, &g->stride_w)) {
    return false;
  }
  if (!read_param(padding, 0, 0, 0, &g->pad_h) || !read_param(padding, 1, 0, 0, &g->pad_w)) return false;
  if (!read_param(dilation, 0, 1, 1, &g->dil_h) || !read_param(dilation, 1, 1, 1, &g->dil_w)) return false;
  // ATen: padding at most half the kernel, so every window touches the input.
  if (g->pad_h > g->kernel_h / 2 || g->pad_w > g->kernel_w / 2) return false;
  const int32_t lead = in.dim - 2;
  g->planes = 1;
  for (int32_t d = 0; d < lead; ++d) {
    if (in.size(d) != out.size(d)) return false;
    g->planes *= in.size(d);
  }
  g->in_h = in.size(lead);
  g->in_w = in.size(lead + 1);
  if (g->in_h < 1 || g->in_w < 1) return false;
  int32_t oh = 0, ow = 0;
  if (!pool_out_size(g->in_h, g->kernel_h, g->pad_h, g->stride_h, g->dil_h, ceil_mode, &oh)) return false;
  if (!pool_out_size(g->in_w, g->kernel_w, g->pad_w, g->stride_w, g->dil_w, ceil_mode, &ow)) return false;
  if (out.size(lead) != oh || out.size(lead + 1) != ow) return false;
  g->out_h = oh;
  g->out_w = ow;
  return true;
}

// Taps [begin, end) of a window starting at `start` that fall inside [0, size).
inline void window_taps(int32_t start, int32_t dil, int32_t kernel, int32_t size, int32_t* begin, int32_t* end) {
  *begin = clamp_i32(ceil_div(-start, dil), 0, kernel);
  *end = clamp_i32(floor_div(size - 1 - start, dil) + 1, 0, kernel);
}

// Max of the taps [kh0, kh1) x [kw0, kw1) of the window at (hstart, wstart),
// as ATen finds it: padding never wins, NaN propagates, and the index (flat
// within the H x W plane) is that of the first maximum.
inline float window_max(const float* plane, const PoolGeometry& g, int32_t hstart, int32_t wstart, int32_t kh0,
                        int32_t kh1, int32_t kw0, int32_t kw1, int32_t* best_index) {
  float best = -INFINITY;
  *best_index = kh0 < kh1 && kw0 < kw1 ? (hstart + kh0 * g.dil_h) * g.in_w + wstart + kw0 * g.dil_w : 0;
  for (int32_t kh = kh0; kh < kh1; ++kh) {
    const int32_t row = (hstart + kh * g.dil_h) * g.in_w + wstart;
    for (int32_t kw = kw0; kw < kw1; ++kw) {
      const int32_t index = row + kw * g.dil_w;
      const float v = plane[index];
      if (v > best || v != v) {
        best = v;
        *best_index = index;
      }
    }
  }
  return best;
}

// max(best, v) as window_max takes it: v wins when greater or NaN (so the
// last NaN of a window wins, and of equal values the first stays).
inline float max_keep_nan(float best, float v) { return (v > best || v != v) ? v : best; }

// The bit pattern of the float at p (an integer load).
inline uint32_t load_bits(const float* p) {
  uint32_t u;
  memcpy(&u, p, sizeof u);
  return u;
}

// The usual 2x2 / stride 2 pool without padding or dilation: rows walked by
// pointer (max2x2_row_nonneg). A window whose four values are all in [+0, +inf] (after a ReLU: nearly
// every one) is reduced on their bit patterns: there the unsigned order is the
// float order and equal patterns are equal values, so the integer maximum is
// window_max's result bit for bit (ALU compares instead of VCMP + VMRS per tap).
// Any other window (negative values, -0, NaN) takes window_max's rule in its tap
// order (row 0: columns 0, 1; row 1: columns 0, 1): the last NaN wins, of equal
// values the first.
__attribute__((noinline)) inline float max2x2_any(const float* r0, const float* r1) {
  float best = r0[0];
  best = max_keep_nan(best, r0[1]);
  best = max_keep_nan(best, r1[0]);
  return max_keep_nan(best, r1[1]);
}

// Windows [0, n) of one output row while their values are all in [+0, +inf]:
// returns how many it reduced (stopping before the first other window). Thumb-2
// cores: in assembly (a post-indexed LDRD per input row, CMP/IT/MOV for the
// unsigned maximum; GCC 12 kept the loop counters on the stack). The row pointers
// are the caller's, so the asm's advancing them is not seen there.
inline int32_t max2x2_row_nonneg(const float* r0, const float* r1, float* out, int32_t n) {
#if defined(__arm__) && defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2
  if (n <= 0) return 0;
  int32_t left = n;
  uint32_t a, b, c, d;
  asm volatile(
      "1:\n\t"
      "ldrd %[a], %[b], [%[r0]], #8\n\t"
      "ldrd %[c], %[d], [%[r1]], #8\n\t"
      "cmp %[a], %[b]\n\t"
      "it lo\n\t"
      "movlo %[a], %[b]\n\t"
      "cmp %[c], %[d]\n\t"
      "it lo\n\t"
      "movlo %[c], %[d]\n\t"
      "cmp %[a], %[c]\n\t"
      "it lo\n\t"
      "movlo %[a], %[c]\n\t"
      "cmp %[a], #0x7f800000\n\t"
      "bhi 2f\n\t"
      "str %[a], [%[out]], #4\n\t"
      "subs %[left], %[left], #1\n\t"
      "bne 1b\n\t"
      "2:\n\t"
      : [r0] "+r"(r0), [r1] "+r"(r1), [out] "+r"(out), [left] "+r"(left), [a] "=&r"(a), [b] "=&r"(b),
        [c] "=&r"(c), [d] "=&r"(d)
      :
      : "cc", "memory");
  return n - left;
#else
  constexpr uint32_t kPlusInf = 0x7f800000u;
  int32_t i = 0;
  for (; i < n; ++i, r0 += 2, r1 += 2) {
    const uint32_t a = load_bits(r0), b = load_bits(r0 + 1), c = load_bits(r1), d = load_bits(r1 + 1);
    const uint32_t ab = a > b ? a : b, cd = c > d ? c : d;
    const uint32_t m = ab > cd ? ab : cd;
    if (m > kPlusInf) break;
    memcpy(out++, &m, sizeof m);
  }
  return i;
#endif
}

inline void max_pool2x2_f32(const float* in, float* out, const PoolGeometry& g) {
  const int32_t in_w = g.in_w, out_h = g.out_h, out_w = g.out_w, planes = g.planes;
  const int32_t in_plane = g.in_h * in_w;
  for (int32_t p = 0; p < planes; ++p) {
    const float* ip = in + static_cast<size_t>(p) * in_plane;
    for (int32_t oh = 0; oh < out_h; ++oh) {
      const float* r0 = ip + 2 * oh * in_w;
      const float* r1 = r0 + in_w;
      for (int32_t ow = 0; ow < out_w;) {
        const int32_t done = max2x2_row_nonneg(r0, r1, out, out_w - ow);
        ow += done;
        r0 += 2 * done;
        r1 += 2 * done;
        out += done;
        if (ow < out_w) {  // a window with a negative value, -0 or NaN
          *out++ = max2x2_any(r0, r1);
          ++ow;
          r0 += 2;
          r1 += 2;
        }
      }
    }
  }
}

// Max pooling of every plane; with kIndices, also the int64 `indices` as ATen writes
// them (mcu::max_pool2d has none: max_pool2d_f32<false> leaves the index code out).
template <bool kIndices>
inline void max_pool2d_f32(const float* in, float* out, int64_t* indices, const PoolGeometry& g) {
  const int32_t in_plane = g.in_h * g.in_w;
  // Without padding and with every window inside the input (the usual case)
  // no tap needs a bounds check.
  const bool all_inside = g.pad_h == 0 && g.pad_w == 0 &&
                          (g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dil_h < g.in_h &&
                          (g.out_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dil_w < g.in_w;
  for (int32_t p = 0; p < g.planes; ++p) {
    const float* ip = in + static_cast<size_t>(p) * in_plane;
    for (int32_t oh = 0; oh < g.out_h; ++oh) {
      const int32_t hstart = oh * g.stride_h - g.pad_h;
      int32_t kh0 = 0, kh1 = g.kernel_h;
      if (!all_inside) window_taps(hstart, g.dil_h, g.kernel_h, g.in_h, &kh0, &kh1);
      for (int32_t ow = 0; ow < g.out_w; ++ow) {
        const int32_t wstart = ow * g.stride_w - g.pad_w;
        int32_t kw0 = 0, kw1 = g.kernel_w;
        if (!all_inside) window_taps(wstart, g.dil_w, g.kernel_w, g.in_w, &kw0, &kw1);
        int32_t index = 0;
        *out++ = window_max(ip, g, hstart, wstart, kh0, kh1, kw0, kw1, &index);
        if (kIndices) *indices++ = index;
      }
    }
  }
}

}  // namespace mcu::kernels
