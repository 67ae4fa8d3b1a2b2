// mcu-gen-kernel: op=aten::pixel_unshuffle.out fn=aten_pixel_unshuffle_out sig=TIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::pixel_unshuffle.out(Tensor self, int downscale_factor, *, Tensor(a!) out) -> Tensor(a!)
// (*, C, H*r, W*r) -> (*, C*r*r, H, W): out[n, c*r*r + i*r + j, h, w] = self[n, c, h*r + i, w*r + j]
// (pixel_shuffle_common.h).
#include "pixel_shuffle_common.h"

namespace mcu {
namespace kernels {

Error aten_pixel_unshuffle_out(const KernelContext& ctx) { return pixel_shuffle_copy(ctx, false); }

}  // namespace kernels
}  // namespace mcu
