// mcu-gen-kernel: op=aten::embedding.out fn=aten_embedding_out sig=TTIBBOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False,
//     bool sparse=False, *, Tensor(a!) out) -> Tensor(a!)
// out[..., :] = weight[indices[...], :]: one row of the [num, dim] table per
// index (int64 or int32). An index outside [0, num) fails the call (no
// wrap-around: ATen rejects negative ids too). padding_idx only matters for
// training.
#include <string.h>

#include "elementwise_common.h"
#include "index_common.h"

namespace mcu {
namespace kernels {

Error aten_embedding_out(const KernelContext& ctx) {
  const TensorRef weight = ctx.tensor(0);
  const TensorRef indices = ctx.tensor(1);
  const TensorRef out = ctx.tensor(5);
  if (weight.dim != 2 || !is_index_dtype(indices.dtype) || out.dtype != weight.dtype) return Error::KernelFailed;
  if (!weight.is_contiguous() || !indices.is_contiguous() || !out.is_contiguous()) return Error::KernelFailed;
  // out's shape is indices' shape plus the embedding dim.
  if (out.dim != indices.dim + 1 || out.sizes[out.dim - 1] != weight.sizes[1]) return Error::KernelFailed;
  for (int32_t d = 0; d < indices.dim; ++d) {
    if (out.sizes[d] != indices.sizes[d]) return Error::KernelFailed;
  }
  const size_t row = static_cast<size_t>(weight.sizes[1]) * dtype_size(weight.dtype);
  const int32_t num = weight.sizes[0];
  const uint8_t* table = static_cast<const uint8_t*>(weight.data);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  for (int32_t i = 0; i < indices.numel; ++i) {
    const int64_t id = index_at(indices, i);
    if (id < 0 || id >= num) return Error::KernelFailed;
    memcpy(dst + static_cast<size_t>(i) * row, table + static_cast<size_t>(id) * row, row);
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
