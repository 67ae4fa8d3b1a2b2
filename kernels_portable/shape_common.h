// Helpers of the shape and nn kernels (pads, norms, resampling).
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype_util.h"
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

// Sets every element of the contiguous tensor t (of C type C) to v.
template <typename C>
void fill_elements(const TensorRef& t, C v) {
  C* p = static_cast<C*>(t.data);
  for (int32_t i = 0; i < t.numel; ++i) p[i] = v;
}

// A contiguous float32 tensor of n elements.
inline bool is_f32_vector(const TensorRef& t, int64_t n) {
  return t.dtype == DType::Float && t.is_contiguous() && t.numel == n;
}

// Optional float32 tensor of n elements (weight/bias of a norm): nullptr when
// None; false when present but malformed.
inline bool optional_f32(const KernelContext& ctx, int32_t i, int32_t n, const float** data) {
  *data = nullptr;
  if (ctx.is_none(i)) return true;
  const TensorRef t = ctx.tensor(i);
  if (t.dtype != DType::Float || !t.is_contiguous() || t.numel != n) return false;
  *data = static_cast<const float*>(t.data);
  return true;
}

// Mean and 1/sqrt(var + eps) (biased variance) of n floats at x, the
// two-pass way ATen's CPU norms compute in float.
inline void mean_rstd(const float* x, int32_t n, float eps, float* mean, float* rstd) {
  float sum = 0.0f;
  for (int32_t i = 0; i < n; ++i) sum += x[i];
  const float m = n > 0 ? sum / static_cast<float>(n) : 0.0f;
  float sq = 0.0f;
  for (int32_t i = 0; i < n; ++i) {
    const float c = x[i] - m;
    sq += c * c;
  }
  const float var = n > 0 ? sq / static_cast<float>(n) : 0.0f;
  *mean = m;
  *rstd = 1.0f / sqrtf(var + eps);
}

// Source coordinate of linear interpolation along one axis: src = dst * scale + offset,
// clamped at 0 (align_corners=False), with scale and offset set once per axis.
struct LinearAxis {
  float scale = 0.0f;
  float offset = 0.0f;
  int32_t in_size = 0;
  void init(int32_t in, int32_t out, bool align_corners) {
    in_size = in;
    if (align_corners) {
      scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
      offset = 0.0f;
    } else {
      scale = static_cast<float>(in) / static_cast<float>(out);
      offset = 0.5f * scale - 0.5f;
    }
  }
  // Lower index, upper index and the upper one's weight of output position dst.
  void at(int32_t dst, int32_t* i0, int32_t* i1, float* w1) const {
    float src = static_cast<float>(dst) * scale + offset;
    if (src < 0.0f) src = 0.0f;
    int32_t lo = static_cast<int32_t>(src);
    if (lo > in_size - 1) lo = in_size - 1;
    *i0 = lo;
    *i1 = lo < in_size - 1 ? lo + 1 : lo;
    *w1 = src - static_cast<float>(lo);
  }
};

// One axis of antialiased bilinear resampling (F.interpolate(antialias=True)): output
// position i averages the inputs within `support` of its center with triangle weights
// (stretched by the scale when downsampling), normalized to sum 1. No tables: the caller
// asks for the range, then each weight.
struct AntialiasAxis {
  float scale = 0.0f;
  float support = 1.0f;
  float invscale = 1.0f;
  int32_t in_size = 0;
  // opt_scale > 0: the user's scale factor (out = in * opt_scale), as ATen uses it.
  void init(int32_t in, int32_t out, bool align_corners, float opt_scale) {
    in_size = in;
    if (align_corners) scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    else scale = opt_scale > 0.0f ? 1.0f / opt_scale : static_cast<float>(in) / static_cast<float>(out);
    support = scale >= 1.0f ? scale : 1.0f;
    invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  }
  // The inputs [*first, *first + *count) output i reads, its center and 1 / (sum of weights).
  void at(int32_t i, int32_t* first, int32_t* count, float* center, float* norm) const {
    const float c = scale * (static_cast<float>(i) + 0.5f);
    int32_t lo = static_cast<int32_t>(c - support + 0.5f);  // truncation toward zero, as ATen's cast
    int32_t hi = static_cast<int32_t>(c + support + 0.5f);
    if (lo < 0) lo = 0;
    if (hi > in_size) hi = in_size;
    *first = lo;
    *count = hi > lo ? hi - lo : 0;
    *center = c;
    float total = 0.0f;
    for (int32_t j = lo; j < hi; ++j) total += weight(j, c);
    *norm = total != 0.0f ? 1.0f / total : 1.0f;
  }
  float weight(int32_t j, float center) const {
    const float x = fabsf((static_cast<float>(j) - center + 0.5f) * invscale);
    return x < 1.0f ? 1.0f - x : 0.0f;
  }
};

}  // namespace kernels
}  // namespace mcu

namespace mcu {
namespace kernels {

// Reflection / replication padding of the last `k` (1, 2 or 3) dims of a
// contiguous tensor: pad = (left, right[, top, bottom[, front, back]]), as
// ATen's reflection_pad{1,2,3}d / replication_pad{1,2,3}d. Reflection needs
// each pad < that dim's size (ATen's check); a negative replication pad crops
// (output index o reads input clamp(o - before, 0, size - 1) either way).
inline int32_t edge_index(int32_t o, int32_t lo, int32_t size, bool reflect) {
  int32_t j = o - lo;
  if (reflect) {
    if (j < 0) j = -j;
    if (j >= size) j = 2 * (size - 1) - j;
  } else {
    j = j < 0 ? 0 : (j >= size ? size - 1 : j);
  }
  return j;
}

// Padded sizes of one plane: in[3] = (depth, height, width) and the pads
// before each of them; out[3] the padded sizes.
struct EdgePadGeometry {
  int32_t in[3];
  int32_t out[3];
  int32_t before[3];
};

template <typename E>
void edge_pad_planes(const E* src, E* dst, int32_t planes, const EdgePadGeometry& g, bool reflect) {
  const int32_t id = g.in[0], ih = g.in[1], iw = g.in[2];
  const int32_t left = g.before[2];
  for (int32_t p = 0; p < planes; ++p) {
    const E* plane = src + static_cast<size_t>(p) * id * ih * iw;
    for (int32_t z = 0; z < g.out[0]; ++z) {
      const E* slab = plane + static_cast<size_t>(edge_index(z, g.before[0], id, reflect)) * ih * iw;
      for (int32_t y = 0; y < g.out[1]; ++y) {
        const E* row = slab + static_cast<size_t>(edge_index(y, g.before[1], ih, reflect)) * iw;
        // Columns [x0, x1) copy the row straight; a negative pad crops (x0 = 0, x1 <= the width).
        const int32_t x0 = left > 0 ? left : 0;
        const int32_t x1 = left + iw < g.out[2] ? left + iw : g.out[2];
        for (int32_t x = 0; x < x0; ++x) *dst++ = row[edge_index(x, left, iw, reflect)];
        for (int32_t x = x0; x < x1; ++x) *dst++ = row[x - left];
        for (int32_t x = x1 > x0 ? x1 : x0; x < g.out[2]; ++x) *dst++ = row[edge_index(x, left, iw, reflect)];
      }
    }
  }
}

inline Error edge_pad(const KernelContext& ctx, int32_t k, bool reflect) {
  const TensorRef in = ctx.tensor(0);
  const IntList pad = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (k < 1 || k > 3 || !copyable_pair(in, out) || pad.size() != 2 * k || in.dim != out.dim) return Error::KernelFailed;
  if (in.dim != k + 1 && in.dim != k + 2) return Error::KernelFailed;  // (C, ...) or (N, C, ...)
  EdgePadGeometry g;
  bool too_wide = false;
  for (int32_t a = 0; a < 3; ++a) {  // a: depth, height, width; pad pairs run width first
    const int32_t j = 2 - a;           // index of this axis' pair in `pad`
    g.in[a] = a >= 3 - k ? in.sizes[in.dim - 1 - j] : 1;
    if (j >= k) {
      g.before[a] = 0;
      g.out[a] = g.in[a];
      continue;
    }
    const int64_t lo = pad[2 * j], hi = pad[2 * j + 1];
    // Replication takes negative pads (cropping, as ATen); reflection does not.
    const int64_t least = reflect ? 0 : -65535;
    if (lo < least || hi < least || lo > 65535 || hi > 65535) return Error::KernelFailed;
    if (out.sizes[out.dim - 1 - j] != g.in[a] + lo + hi) return Error::KernelFailed;
    if (reflect && (lo >= g.in[a] || hi >= g.in[a])) too_wide = true;
    g.before[a] = static_cast<int32_t>(lo);
    g.out[a] = out.sizes[out.dim - 1 - j];
  }
  for (int32_t d = 0; d < in.dim - k; ++d) {
    if (in.sizes[d] != out.sizes[d]) return Error::KernelFailed;
  }
  if (out.numel == 0) return Error::Ok;
  if (too_wide || in.numel == 0 || in.data == out.data) return Error::KernelFailed;
  const int32_t planes = size_product(in, 0, in.dim - k);
  switch (element_size(in)) {
    case 1: edge_pad_planes(static_cast<const uint8_t*>(in.data), static_cast<uint8_t*>(out.data), planes, g, reflect); break;
    case 2: edge_pad_planes(static_cast<const uint16_t*>(in.data), static_cast<uint16_t*>(out.data), planes, g, reflect); break;
    case 4: edge_pad_planes(static_cast<const uint32_t*>(in.data), static_cast<uint32_t*>(out.data), planes, g, reflect); break;
    default: edge_pad_planes(static_cast<const uint64_t*>(in.data), static_cast<uint64_t*>(out.data), planes, g, reflect); break;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu

namespace mcu {
namespace kernels {

// The p-norm distance of two float vectors of m elements (a and b stepping by
// 1), as cdist/pdist define it: p = 0 counts the differing elements, p = inf
// is the largest |a - b|, p = 1 the sum, p = 2 the Euclidean distance, other p
// (sum |a - b|^p)^(1/p).
inline float p_distance(const float* a, const float* b, int32_t m, float p) {
  float acc = 0.0f;
  if (p == 0.0f) {
    for (int32_t i = 0; i < m; ++i) acc += a[i] != b[i] ? 1.0f : 0.0f;
    return acc;
  }
  if (isinf(p)) {
    for (int32_t i = 0; i < m; ++i) acc = fmaxf(acc, fabsf(a[i] - b[i]));
    return acc;
  }
  if (p == 1.0f) {
    for (int32_t i = 0; i < m; ++i) acc += fabsf(a[i] - b[i]);
    return acc;
  }
  if (p == 2.0f) {
    for (int32_t i = 0; i < m; ++i) {
      const float d = a[i] - b[i];
      acc += d * d;
    }
    return sqrtf(acc);
  }
  for (int32_t i = 0; i < m; ++i) acc += powf(fabsf(a[i] - b[i]), p);
  return powf(acc, 1.0f / p);
}

}  // namespace kernels
}  // namespace mcu

namespace mcu {
namespace kernels {

// Training-mode batch norm of a contiguous [N, C, *] float tensor with the batch's
// statistics: per channel, mean and biased variance over N and the trailing dims,
// y = (x - mean) * invstd * weight + bias (weight, bias may be null). save_mean /
// save_invstd (may be null) get mean and 1 / sqrt(var + eps); running_mean /
// running_var (may be null) are updated in place as ATen does:
// r = (1 - momentum) r + momentum s, with the unbiased variance for running_var.
struct BatchNormTraining {
  const float* weight = nullptr;
  const float* bias = nullptr;
  float eps = 0.0f;
  float momentum = 0.0f;
  float* save_mean = nullptr;
  float* save_invstd = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
};

inline void batch_norm_training(const float* x, float* y, int32_t n, int32_t c, int32_t inner,
                                const BatchNormTraining& bn) {
  const float count = static_cast<float>(n) * static_cast<float>(inner);
  for (int32_t ch = 0; ch < c; ++ch) {
    float sum = 0.0f;
    for (int32_t s = 0; s < n; ++s) {
      const float* xs = x + (static_cast<size_t>(s) * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) sum += xs[i];
    }
    const float mean = count > 0 ? sum / count : 0.0f;
    float sq = 0.0f;
    for (int32_t s = 0; s < n; ++s) {
      const float* xs = x + (static_cast<size_t>(s) * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) {
        const float d = xs[i] - mean;
        sq += d * d;
      }
    }
    const float invstd = 1.0f / sqrtf((count > 0 ? sq / count : 0.0f) + bn.eps);
    const float scale = invstd * (bn.weight != nullptr ? bn.weight[ch] : 1.0f);
    const float shift = (bn.bias != nullptr ? bn.bias[ch] : 0.0f) - mean * scale;
    for (int32_t s = 0; s < n; ++s) {
      const size_t base = (static_cast<size_t>(s) * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) y[base + i] = x[base + i] * scale + shift;
    }
    if (bn.save_mean != nullptr) bn.save_mean[ch] = mean;
    if (bn.save_invstd != nullptr) bn.save_invstd[ch] = invstd;
    if (bn.running_mean != nullptr) bn.running_mean[ch] = (1.0f - bn.momentum) * bn.running_mean[ch] + bn.momentum * mean;
    if (bn.running_var != nullptr) {
      const float unbiased = sq / (count - 1.0f);  // count 1: inf/NaN, as in ATen
      bn.running_var[ch] = (1.0f - bn.momentum) * bn.running_var[ch] + bn.momentum * unbiased;
    }
  }
}

}  // namespace kernels
}  // namespace mcu

namespace mcu {
namespace kernels {

// out = elements [start, start + n) of contiguous `in` along `dim` (split_copy,
// unbind_copy). out has in's shape with n at dim, or, when `drop_dim` (n must be
// 1), in's shape without dim. Checks out's dtype, shape and layout and the range.
inline Error copy_chunk(const TensorRef& in, int32_t dim, int32_t start, int32_t n, const TensorRef& out,
                        bool drop_dim) {
  if (!copyable_pair(in, out) || dim < 0 || dim >= in.dim || start < 0 || n < 0) return Error::KernelFailed;
  if (n > in.sizes[dim] - start || (drop_dim && n != 1)) return Error::KernelFailed;
  if (out.dim != (drop_dim ? in.dim - 1 : in.dim)) return Error::KernelFailed;
  int32_t sizes[kMaxDims];
  for (int32_t d = 0; d < in.dim; ++d) {
    sizes[d] = d == dim ? n : in.sizes[d];
    const int32_t o = drop_dim && d > dim ? d - 1 : d;
    if (drop_dim && d == dim) continue;
    if (out.sizes[o] != sizes[d]) return Error::KernelFailed;
  }
  int32_t in_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  int32_t out_strides[kMaxDims];
  contiguous_strides(sizes, in.dim, out_strides);
  const size_t esize = element_size(in);
  const uint8_t* src = static_cast<const uint8_t*>(in.data) + static_cast<size_t>(start) * in_strides[dim] * esize;
  strided_copy(out.data, out_strides, src, in_strides, sizes, in.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
