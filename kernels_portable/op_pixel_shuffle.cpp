// mcu-gen-kernel: op=aten::pixel_shuffle.out fn=aten_pixel_shuffle_out sig=TIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::pixel_shuffle.out(Tensor self, int upscale_factor, *, Tensor(a!) out) -> Tensor(a!)
// (*, C*r*r, H, W) -> (*, C, H*r, W*r): out[n, c, h*r + i, w*r + j] = self[n, c*r*r + i*r + j, h, w]
// (pixel_shuffle_common.h).
#include "pixel_shuffle_common.h"

namespace mcu {
namespace kernels {

Error aten_pixel_shuffle_out(const KernelContext& ctx) { return pixel_shuffle_copy(ctx, true); }

}  // namespace kernels
}  // namespace mcu
