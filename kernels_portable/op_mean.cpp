// mcu-gen-kernel: op=aten::mean.out fn=aten_mean_out sig=TlBiOO dtypes=float32
//
// aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *,
//     ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
// Any set of dims (None or [] reduces all). When the reduced dims are
// adjacent (H,W of NCHW, the last dim, ...) each mean is a sum over a
// contiguous run or a strided set of rows; otherwise a general walk.
#include <stddef.h>

#include "conv_common.h"

namespace mcu::kernels {

namespace {

// Sum of n contiguous floats, four partial sums.
float sum_f32(const float* x, int32_t n) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  for (; i < n; ++i) s0 += x[i];
  return (s0 + s1) + (s2 + s3);
}

// Reads the dim list into a mask; false on an out-of-range or repeated dim.
bool reduced_dims(const KernelContext& ctx, int32_t dim, bool reduce[kMaxDims]) {
  for (int32_t d = 0; d < kMaxDims; ++d) reduce[d] = false;
  if (ctx.is_none(1) || ctx.int_list(1).size() == 0) {
    for (int32_t d = 0; d < dim; ++d) reduce[d] = true;
    return true;
  }
  IntList dims = ctx.int_list(1);
  for (int32_t i = 0; i < dims.size(); ++i) {
    int64_t d = dims[i];
    if (d < 0) d += dim;
    if (d < 0 || d >= dim || reduce[d]) return false;
    reduce[d] = true;
  }
  return true;
}

}  // namespace

Error aten_mean_out(const KernelContext& ctx) {
  TensorRef in = ctx.tensor(0);
  const bool keepdim = ctx.bool_arg(2);
  TensorRef out = ctx.tensor(4);
  if (!ctx.is_none(3) && ctx.int_arg(3) != static_cast<int64_t>(DType::Float)) return Error::KernelFailed;
  if (!is_f32_contiguous(in) || !is_f32_contiguous(out)) return Error::KernelFailed;
  if (in.dim > kMaxDims) return Error::KernelFailed;
  bool reduce[kMaxDims];
  if (!reduced_dims(ctx, in.dim, reduce)) return Error::KernelFailed;

  // Check the out shape, and find the reduced count and whether the reduced
  // dims are one adjacent block [first, last].
  int32_t count = 1, first = -1, last = -1, od = 0;
  bool adjacent = true;
  for (int32_t d = 0; d < in.dim; ++d) {
    if (reduce[d]) {
      count *= in.size(d);
      if (first < 0) first = d;
      else if (last != d - 1) adjacent = false;
      last = d;
      if (keepdim && (od >= out.dim || out.size(od++) != 1)) return Error::KernelFailed;
    } else if (od >= out.dim || out.size(od++) != in.size(d)) {
      return Error::KernelFailed;
    }
  }
  if (od != out.dim) return Error::KernelFailed;
  const float* x = in.f32();
  float* y = out.f32();
  if (first < 0) {  // nothing reduced (a 0-d input): a copy
    for (int32_t i = 0; i < out.numel; ++i) y[i] = x[i];
    return Error::Ok;
  }
  const float scale = 1.0f / static_cast<float>(count);
  if (adjacent) {
    int32_t outer = 1, inner = 1;
    for (int32_t d = 0; d < first; ++d) outer *= in.size(d);
    for (int32_t d = last + 1; d < in.dim; ++d) inner *= in.size(d);
    for (int32_t o = 0; o < outer; ++o) {
      const float* xo = x + static_cast<size_t>(o) * count * inner;
      float* yo = y + static_cast<size_t>(o) * inner;
      if (inner == 1) {
        yo[0] = sum_f32(xo, count) / static_cast<float>(count);
        continue;
      }
      for (int32_t i = 0; i < inner; ++i) yo[i] = 0.0f;
      for (int32_t r = 0; r < count; ++r) {
        const float* row = xo + static_cast<size_t>(r) * inner;
        for (int32_t i = 0; i < inner; ++i) yo[i] += row[i];
      }
      for (int32_t i = 0; i < inner; ++i) yo[i] *= scale;
    }
    return Error::Ok;
  }
  // General: walk the input in order, tracking the matching out offset.
  int32_t out_stride[kMaxDims];
  int32_t stride = 1;
  for (int32_t d = in.dim - 1; d >= 0; --d) {
    out_stride[d] = reduce[d] ? 0 : stride;
    if (!reduce[d]) stride *= in.size(d);
  }
  for (int32_t i = 0; i < out.numel; ++i) y[i] = 0.0f;
  int32_t index[kMaxDims] = {};
  int32_t offset = 0;
  for (int32_t i = 0; i < in.numel; ++i) {
    y[offset] += x[i];
    for (int32_t d = in.dim - 1; d >= 0; --d) {
      offset += out_stride[d];
      if (++index[d] < in.size(d)) break;
      offset -= out_stride[d] * in.size(d);
      index[d] = 0;
    }
  }
  for (int32_t i = 0; i < out.numel; ++i) y[i] *= scale;
  return Error::Ok;
}

}  // namespace mcu::kernels
