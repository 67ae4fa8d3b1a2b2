// mcu-gen-kernel: op=aten::triu.out fn=aten_triu_out sig=TIOO dtypes=float32,int8,uint8,int16,int32,int64,bool inplace=0
// aten::triu.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out) -> Tensor(a!)
// The upper triangle of the last two dims: out[..., i, j] = self[..., i, j]
// where j - i >= diagonal, else 0 (triangle_common.h).
#include "triangle_common.h"

namespace mcu {
namespace kernels {

Error aten_triu_out(const KernelContext& ctx) { return keep_triangle(ctx, false); }

}  // namespace kernels
}  // namespace mcu
