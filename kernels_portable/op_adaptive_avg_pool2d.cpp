// mcu-gen-kernel: op=aten::_adaptive_avg_pool2d.out fn=aten_adaptive_avg_pool2d_out sig=TLOO dtypes=float32
//
// aten::_adaptive_avg_pool2d.out(Tensor self, int[2] output_size, *,
//     Tensor(a!) out) -> Tensor(a!)
// Output cell o averages input rows [floor(o*H/OH), ceil((o+1)*H/OH)).
#include "f32_pool.h"

namespace mcu::kernels {

Error aten_adaptive_avg_pool2d_out(const KernelContext& ctx) {
  TensorRef in = ctx.tensor(0);
  IntList size = ctx.int_list(1);
  TensorRef out = ctx.tensor(2);
  if (!is_f32_contiguous(in) || !is_f32_contiguous(out)) return Error::KernelFailed;
  if ((in.dim != 3 && in.dim != 4) || out.dim != in.dim) return Error::KernelFailed;
  int32_t out_h = 0, out_w = 0;
  if (size.size() < 1 || !read_param(size, 0, 1, 1, &out_h) || !read_param(size, 1, 1, 1, &out_w)) {
    return Error::KernelFailed;
  }
  const int32_t lead = in.dim - 2;
  int32_t planes = 1;
  for (int32_t d = 0; d < lead; ++d) {
    if (in.size(d) != out.size(d)) return Error::KernelFailed;
    planes *= in.size(d);
  }
  const int32_t in_h = in.size(lead), in_w = in.size(lead + 1);
  if (in_h < 1 || in_w < 1 || out.size(lead) != out_h || out.size(lead + 1) != out_w) return Error::KernelFailed;
  float* o = out.f32();
  for (int32_t p = 0; p < planes; ++p) {
    const float* ip = in.f32() + static_cast<size_t>(p) * in_h * in_w;
    for (int32_t oh = 0; oh < out_h; ++oh) {
      const int32_t h0 = static_cast<int32_t>(static_cast<int64_t>(oh) * in_h / out_h);
      const int32_t h1 = static_cast<int32_t>((static_cast<int64_t>(oh + 1) * in_h + out_h - 1) / out_h);
      for (int32_t ow = 0; ow < out_w; ++ow) {
        const int32_t w0 = static_cast<int32_t>(static_cast<int64_t>(ow) * in_w / out_w);
        const int32_t w1 = static_cast<int32_t>((static_cast<int64_t>(ow + 1) * in_w + out_w - 1) / out_w);
        float sum = 0.0f;
        for (int32_t ih = h0; ih < h1; ++ih) {
          const float* row = ip + ih * in_w;
          for (int32_t iw = w0; iw < w1; ++iw) sum += row[iw];
        }
        *o++ = sum / static_cast<float>((h1 - h0) * (w1 - w0));
      }
    }
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
