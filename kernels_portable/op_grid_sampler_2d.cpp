// mcu-gen-kernel: op=aten::grid_sampler_2d.out fn=aten_grid_sampler_2d_out sig=TTIIBOO dtypes=float32
// aten::grid_sampler_2d.out(Tensor input, Tensor grid, int interpolation_mode, int padding_mode,
//     bool align_corners, *, Tensor(a!) out) -> Tensor(a!)
// F.grid_sample of an N,C,H,W float input at grid (N,Ho,Wo,2; x then y in [-1, 1]):
// bilinear interpolation (mode 0) or nearest (mode 1, round half to even as ATen),
// padding zeros (0) or border (1). Reflection padding and bicubic are refused.
#include "shape_common.h"

namespace mcu {
namespace kernels {

namespace {

inline float unnormalize(float c, int32_t size, bool align_corners) {
  return align_corners ? (c + 1.0f) * 0.5f * static_cast<float>(size - 1)
                       : ((c + 1.0f) * static_cast<float>(size) - 1.0f) * 0.5f;
}

inline float clip(float v, int32_t size) {
  if (!(v > 0.0f)) return 0.0f;  // also NaN -> 0, as ATen's clip_coordinates
  const float hi = static_cast<float>(size - 1);
  return v < hi ? v : hi;
}

}  // namespace

Error aten_grid_sampler_2d_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef grid = ctx.tensor(1);
  const int64_t mode = ctx.int_arg(2);
  const int64_t padding = ctx.int_arg(3);
  const bool align_corners = ctx.bool_arg(4);
  const TensorRef out = ctx.tensor(5);
  if (in.dtype != DType::Float || grid.dtype != DType::Float || out.dtype != DType::Float) return Error::KernelFailed;
  if (in.dim != 4 || grid.dim != 4 || out.dim != 4 || grid.sizes[3] != 2) return Error::KernelFailed;
  if (!in.is_contiguous() || !grid.is_contiguous() || !out.is_contiguous()) return Error::KernelFailed;
  if (mode != 0 && mode != 1) return Error::KernelFailed;
  if (padding != 0 && padding != 1) return Error::KernelFailed;
  const int32_t n = in.sizes[0], c = in.sizes[1], h = in.sizes[2], w = in.sizes[3];
  const int32_t oh = grid.sizes[1], ow = grid.sizes[2];
  if (grid.sizes[0] != n || out.sizes[0] != n || out.sizes[1] != c || out.sizes[2] != oh || out.sizes[3] != ow)
    return Error::KernelFailed;
  if (out.numel == 0) return Error::Ok;
  if (in.numel == 0) return Error::KernelFailed;
  const float* x = static_cast<const float*>(in.data);
  const float* g = static_cast<const float*>(grid.data);
  float* y = static_cast<float*>(out.data);
  const size_t plane = static_cast<size_t>(h) * w;
  const size_t oplane = static_cast<size_t>(oh) * ow;
  for (int32_t b = 0; b < n; ++b) {
    const float* xb = x + static_cast<size_t>(b) * c * plane;
    float* yb = y + static_cast<size_t>(b) * c * oplane;
    for (int32_t p = 0; p < oh * ow; ++p) {
      const float* gp = g + (static_cast<size_t>(b) * oplane + p) * 2;
      float ix = unnormalize(gp[0], w, align_corners);
      float iy = unnormalize(gp[1], h, align_corners);
      if (padding == 1) {
        ix = clip(ix, w);
        iy = clip(iy, h);
      }
      if (mode == 1) {
        const float rx = nearbyintf(ix), ry = nearbyintf(iy);
        const bool inside = rx >= 0.0f && rx < static_cast<float>(w) && ry >= 0.0f && ry < static_cast<float>(h);
        const size_t off = inside ? static_cast<size_t>(ry) * w + static_cast<size_t>(rx) : 0;
        for (int32_t ch = 0; ch < c; ++ch) yb[ch * oplane + p] = inside ? xb[ch * plane + off] : 0.0f;
        continue;
      }
      if (!(ix > -2.0f && ix < static_cast<float>(w) + 1.0f && iy > -2.0f && iy < static_cast<float>(h) + 1.0f)) {
        // no corner inside (or NaN): zero
        for (int32_t ch = 0; ch < c; ++ch) yb[ch * oplane + p] = 0.0f;
        continue;
      }
      const float fx = floorf(ix), fy = floorf(iy);
      const int32_t x0 = static_cast<int32_t>(fx), y0 = static_cast<int32_t>(fy);
      const float tx = ix - fx, ty = iy - fy;
      const float wt[4] = {(1.0f - tx) * (1.0f - ty), tx * (1.0f - ty), (1.0f - tx) * ty, tx * ty};
      const int32_t cx[4] = {x0, x0 + 1, x0, x0 + 1};
      const int32_t cy[4] = {y0, y0, y0 + 1, y0 + 1};
      bool in_b[4];
      size_t off[4];
      for (int32_t k = 0; k < 4; ++k) {
        in_b[k] = cx[k] >= 0 && cx[k] < w && cy[k] >= 0 && cy[k] < h;
        off[k] = in_b[k] ? static_cast<size_t>(cy[k]) * w + cx[k] : 0;
      }
      for (int32_t ch = 0; ch < c; ++ch) {
        const float* xc = xb + ch * plane;
        float v = 0.0f;
        for (int32_t k = 0; k < 4; ++k) {
          if (in_b[k]) v += xc[off[k]] * wt[k];
        }
        yb[ch * oplane + p] = v;
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
