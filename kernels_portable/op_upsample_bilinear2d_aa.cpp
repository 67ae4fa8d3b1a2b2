// mcu-gen-kernel: op=aten::_upsample_bilinear2d_aa.out fn=aten_upsample_bilinear2d_aa_out sig=TLBddOO dtypes=float32
// aten::_upsample_bilinear2d_aa.out(Tensor self, SymInt[2] output_size, bool align_corners,
//     float? scales_h=None, float? scales_w=None, *, Tensor(a!) out) -> Tensor(a!)
// F.interpolate(mode="bilinear", antialias=True) of [N, C, H, W]: each output pixel is the
// weighted mean of the input pixels under a triangle filter as wide as the scale when
// downsampling (shape_common.h: AntialiasAxis), weights of the two axes multiplied; computed
// directly per output pixel (no intermediate image).
#include <stddef.h>

#include "shape_common.h"

namespace mcu {
namespace kernels {

Error aten_upsample_bilinear2d_aa_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList size = ctx.int_list(1);
  const bool align_corners = ctx.bool_arg(2);
  const TensorRef out = ctx.tensor(5);
  if (!is_float(in) || !is_float(out) || !in.is_contiguous() || !out.is_contiguous()) return Error::KernelFailed;
  if (in.dim != 4 || out.dim != 4 || size.size() != 2) return Error::KernelFailed;
  const int32_t ih = in.sizes[2], iw = in.sizes[3], oh = out.sizes[2], ow = out.sizes[3];
  if (out.sizes[0] != in.sizes[0] || out.sizes[1] != in.sizes[1] || size[0] != oh || size[1] != ow)
    return Error::KernelFailed;
  if (out.numel == 0) return Error::Ok;
  if (ih == 0 || iw == 0) return Error::KernelFailed;
  AntialiasAxis ay, ax;
  ay.init(ih, oh, align_corners, ctx.is_none(3) ? 0.0f : static_cast<float>(ctx.double_arg(3)));
  ax.init(iw, ow, align_corners, ctx.is_none(4) ? 0.0f : static_cast<float>(ctx.double_arg(4)));
  const int32_t planes = in.sizes[0] * in.sizes[1];
  const float* x = in.f32();
  float* y = out.f32();
  for (int32_t oy = 0; oy < oh; ++oy) {
    int32_t y0 = 0, ny = 0;
    float cy = 0.0f, normy = 1.0f;
    ay.at(oy, &y0, &ny, &cy, &normy);
    for (int32_t ox = 0; ox < ow; ++ox) {
      int32_t x0 = 0, nx = 0;
      float cx = 0.0f, normx = 1.0f;
      ax.at(ox, &x0, &nx, &cx, &normx);
      for (int32_t p = 0; p < planes; ++p) {
        const float* plane = x + static_cast<size_t>(p) * ih * iw;
        float acc = 0.0f;
        for (int32_t j = y0; j < y0 + ny; ++j) {
          const float* row = plane + static_cast<size_t>(j) * iw;
          float row_acc = 0.0f;
          for (int32_t i = x0; i < x0 + nx; ++i) row_acc += ax.weight(i, cx) * normx * row[i];
          acc += ay.weight(j, cy) * normy * row_acc;
        }
        y[(static_cast<size_t>(p) * oh + oy) * ow + ox] = acc;
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
