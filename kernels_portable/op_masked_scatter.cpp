// mcu-gen-kernel: op=aten::masked_scatter.out fn=aten_masked_scatter_out sig=TTTOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::masked_scatter.out(Tensor self, Tensor mask, Tensor source, *, Tensor(a!) out) -> Tensor(a!)
// out = self (broadcast with the bool mask), with the positions where mask is true, in
// row-major order, taking source's elements one after another (source read flattened). The
// out shape is static; when mask has more true positions than source has elements the
// kernel fails (ATen raises).
#include <string.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_masked_scatter_out(const KernelContext& ctx) {
  const TensorRef self = ctx.tensor(0);
  const TensorRef mask = ctx.tensor(1);
  const TensorRef source = ctx.tensor(2);
  const TensorRef out = ctx.tensor(3);
  if (mask.dtype != DType::Bool || source.dtype != self.dtype || out.dtype != self.dtype) return Error::KernelFailed;
  if (!self.is_contiguous() || !mask.is_contiguous() || !source.is_contiguous() || !out.is_contiguous())
    return Error::KernelFailed;
  if (!broadcasts_to(self, mask, out) || out.dim > kMaxDims) return Error::KernelFailed;
  const size_t size = element_size(out);
  if (size == 0) return Error::KernelFailed;
  int32_t out_strides[kMaxDims], self_strides[kMaxDims], mask_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  if (!broadcast_strides(self, out, self_strides) || !broadcast_strides(mask, out, mask_strides))
    return Error::KernelFailed;
  const int32_t* strides[3] = {out_strides, self_strides, mask_strides};
  LoopNestN<3> loop;
  loop.init(out.sizes, out.dim, strides);
  if (out.numel == 0) return Error::Ok;
  uint8_t* y = static_cast<uint8_t*>(out.data);
  const uint8_t* x = static_cast<const uint8_t*>(self.data);
  const uint8_t* src = static_cast<const uint8_t*>(source.data);
  const uint8_t* m = static_cast<const uint8_t*>(mask.data);  // any nonzero byte is true
  const int32_t len = loop.row_length();
  int32_t taken = 0;
  bool enough = true;
  loop.for_each_row([&](const int32_t* off) {
    for (int32_t i = 0; i < len; ++i) {
      const int32_t o = off[0] + i * loop.row_stride(0);
      if (m[off[2] + i * loop.row_stride(2)] != 0) {
        if (taken >= source.numel) {
          enough = false;
          return;
        }
        memcpy(y + static_cast<size_t>(o) * size, src + static_cast<size_t>(taken++) * size, size);
      } else {
        memcpy(y + static_cast<size_t>(o) * size, x + static_cast<size_t>(off[1] + i * loop.row_stride(1)) * size,
               size);
      }
    }
  });
  return enough ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
