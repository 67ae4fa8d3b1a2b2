// mcu-gen-kernel: op=aten::upsample_bilinear2d.vec_out fn=aten_upsample_bilinear2d_vec_out sig=TlB?OO dtypes=float32
// aten::upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size, bool align_corners,
//     float[]? scale_factors, *, Tensor(a!) out) -> Tensor(a!)
// Bilinear resize of NCHW float planes to out's H x W. The source coordinate
// of an output pixel is ATen's: align_corners maps the corner pixels onto each
// other ((in - 1) / (out - 1)); otherwise (dst + 0.5) * in / out - 0.5,
// clamped at 0. The export keeps scale_factors only when in / out equals
// 1 / scale exactly, so out's size says everything. The column indices and
// weights are computed once per plane row set, not per pixel.
#include <stddef.h>

#include "conv_common.h"

namespace mcu::kernels {

namespace {

struct Tap {
  int32_t i0;  // first source index
  int32_t step;  // 1, or 0 at the last source index
  float w1;    // weight of i0 + step; i0 gets 1 - w1
};

float source_scale(int32_t in, int32_t out, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  return static_cast<float>(in) / static_cast<float>(out);
}

Tap tap(int32_t dst, float scale, int32_t in, bool align_corners) {
  float src = align_corners ? scale * static_cast<float>(dst) : scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
  if (src < 0.0f) src = 0.0f;
  int32_t i0 = static_cast<int32_t>(src);
  if (i0 > in - 1) i0 = in - 1;
  const int32_t step = i0 < in - 1 ? 1 : 0;
  return Tap{i0, step, src - static_cast<float>(i0)};
}

}  // namespace

Error aten_upsample_bilinear2d_vec_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const bool align_corners = ctx.bool_arg(2);
  const TensorRef out = ctx.tensor(4);
  if (!is_f32_contiguous(in) || !is_f32_contiguous(out) || in.dim != 4 || out.dim != 4) return Error::KernelFailed;
  if (in.sizes[0] != out.sizes[0] || in.sizes[1] != out.sizes[1]) return Error::KernelFailed;
  const int32_t ih = in.sizes[2], iw = in.sizes[3], oh = out.sizes[2], ow = out.sizes[3];
  if (out.numel == 0) return Error::Ok;
  if (ih <= 0 || iw <= 0) return Error::KernelFailed;
  if (!ctx.is_none(1)) {
    const IntList size = ctx.int_list(1);
    if (size.size() != 2 || size[0] != oh || size[1] != ow) return Error::KernelFailed;
  }
  const float sh = source_scale(ih, oh, align_corners);
  const float sw = source_scale(iw, ow, align_corners);
  const int32_t planes = in.sizes[0] * in.sizes[1];
  for (int32_t y = 0; y < oh; ++y) {
    const Tap ty = tap(y, sh, ih, align_corners);
    const float wy0 = 1.0f - ty.w1;
    for (int32_t p = 0; p < planes; ++p) {
      const float* r0 = in.f32() + (static_cast<size_t>(p) * ih + ty.i0) * iw;
      const float* r1 = r0 + static_cast<size_t>(ty.step) * iw;
      float* dst = out.f32() + (static_cast<size_t>(p) * oh + y) * ow;
      for (int32_t x = 0; x < ow; ++x) {
        const Tap tx = tap(x, sw, iw, align_corners);
        const float wx0 = 1.0f - tx.w1;
        const int32_t a = tx.i0, b = tx.i0 + tx.step;
        dst[x] = wy0 * (wx0 * r0[a] + tx.w1 * r0[b]) + ty.w1 * (wx0 * r1[a] + tx.w1 * r1[b]);
      }
    }
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
