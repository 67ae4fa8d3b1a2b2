// mcu-gen-kernel: op=aten::index.Tensor_out fn=aten_index_tensor_out sig=TQOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)
// out = self[indices] (advanced indexing, advanced_index.h): int32/int64 index
// tensors, None for a whole dim, bool masks. The out's shape is fixed by the
// program: with a mask, its number of true elements must be the one the out
// was planned for, else the call fails (as does any index out of range).
#include <string.h>

#include "advanced_index.h"

namespace mcu {
namespace kernels {

Error aten_index_tensor_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  const size_t esize = element_size(in);
  if (esize == 0 || out.dtype != in.dtype || !out.is_contiguous()) return Error::KernelFailed;
  AdvancedIndex ix;
  if (!ix.init(ctx, 1, in) || !ix.is_result_shape(out)) return Error::KernelFailed;
  // One block of the trailing whole dims per step: a row of x[:, idx] at a time for x[idx].
  const size_t block = static_cast<size_t>(ix.inner()) * esize;
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  const bool ok = ix.for_each(ix.dim() - ix.inner_dims(), nullptr, [&](int32_t from, int32_t, int32_t k) {
    memcpy(dst + static_cast<size_t>(k) * block, src + static_cast<size_t>(from) * esize, block);
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
