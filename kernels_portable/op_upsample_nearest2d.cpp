// mcu-gen-kernel: op=aten::upsample_nearest2d.vec_out fn=aten_upsample_nearest2d_vec_out sig=Tl?OO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors, *, Tensor(a!) out)
// Nearest-neighbour resize of an N,C,H,W tensor to out's H,W. The scale comes
// from the shapes (in/out), with PyTorch's index formula
// src = min(floor(dst * (float)in / out), in - 1); for integer scale factors
// this equals what PyTorch computes from scale_factors.
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

namespace {

int32_t nearest_index(int32_t dst, int32_t in_size, int32_t out_size) {
  if (out_size == in_size) return dst;
  if (out_size == 2 * in_size) return dst >> 1;
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  const int32_t src = static_cast<int32_t>(floorf(static_cast<float>(dst) * scale));
  return src < in_size - 1 ? src : in_size - 1;
}

template <typename E>
void upsample(const E* src, E* dst, int32_t planes, int32_t ih, int32_t iw, int32_t oh, int32_t ow) {
  for (int32_t p = 0; p < planes; ++p) {
    const E* plane = src + static_cast<size_t>(p) * ih * iw;
    for (int32_t y = 0; y < oh; ++y) {
      const E* row = plane + static_cast<size_t>(nearest_index(y, ih, oh)) * iw;
      for (int32_t x = 0; x < ow; ++x) *dst++ = row[nearest_index(x, iw, ow)];
    }
  }
}

}  // namespace

Error aten_upsample_nearest2d_vec_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (!copyable_pair(in, out) || in.dim != 4 || out.dim != 4) return Error::KernelFailed;
  if (out.sizes[0] != in.sizes[0] || out.sizes[1] != in.sizes[1]) return Error::KernelFailed;
  if (!ctx.is_none(1)) {
    const IntList size = ctx.int_list(1);
    if (size.size() != 2 || size[0] != out.sizes[2] || size[1] != out.sizes[3]) return Error::KernelFailed;
  }
  if (out.numel == 0) return Error::Ok;
  if (in.numel == 0 || in.data == out.data) return Error::KernelFailed;
  const int32_t planes = in.sizes[0] * in.sizes[1];
  const int32_t ih = in.sizes[2];
  const int32_t iw = in.sizes[3];
  const int32_t oh = out.sizes[2];
  const int32_t ow = out.sizes[3];
  switch (element_size(in)) {
    case 1: upsample(static_cast<const uint8_t*>(in.data), static_cast<uint8_t*>(out.data), planes, ih, iw, oh, ow); break;
    case 2: upsample(static_cast<const uint16_t*>(in.data), static_cast<uint16_t*>(out.data), planes, ih, iw, oh, ow); break;
    case 4: upsample(static_cast<const uint32_t*>(in.data), static_cast<uint32_t*>(out.data), planes, ih, iw, oh, ow); break;
    default: upsample(static_cast<const uint64_t*>(in.data), static_cast<uint64_t*>(out.data), planes, ih, iw, oh, ow); break;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
