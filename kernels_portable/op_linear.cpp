// mcu-gen-kernel: op=aten::linear.out fn=aten_linear_out sig=TTtOO dtypes=float32
//
// aten::linear.out(Tensor input, Tensor weight, Tensor? bias=None, *,
//     Tensor(a!) out) -> Tensor(a!)
// input [..., in], weight [out, in] (read row by row), out [..., out].
#include <math.h>

#include "f32_matrix.h"

namespace mcu::kernels {

Error aten_linear_out(const KernelContext& ctx) { return run_linear(ctx, 3, -INFINITY, INFINITY); }

}  // namespace mcu::kernels
