// mcu-gen-kernel: op=aten::tril.out fn=aten_tril_out sig=TIOO dtypes=float32,int8,uint8,int16,int32,int64,bool inplace=0
// aten::tril.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out) -> Tensor(a!)
// The lower triangle of the last two dims: out[..., i, j] = self[..., i, j]
// where j - i <= diagonal, else 0 (triangle_common.h).
#include "triangle_common.h"

namespace mcu {
namespace kernels {

Error aten_tril_out(const KernelContext& ctx) { return keep_triangle(ctx, true); }

}  // namespace kernels
}  // namespace mcu
