// mcu-gen-kernel: op=aten::gelu.out fn=aten_gelu_out sig=TZOO dtypes=float32 inplace=0
// aten::gelu.out(Tensor self, *, str approximate="none", Tensor(a!) out)
// approximate "none": out = x/2 * (1 + erf(x / sqrt(2)));
// approximate "tanh": out = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
// Compiled without fp-contract (no fused multiply-adds), as the host reference's emulation computes it
// (mcu_gen/reference/fp32_emulation.py): an int8 program's fp32 island stays bit-exact.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_gelu_out(const KernelContext& ctx) {
  int32_t length = 0;
  const char* mode = ctx.string_arg(1, &length);
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  if (length == 4 && memcmp(mode, "none", 4) == 0) {
    return unary_float(in, out, [](float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); });
  }
  if (length == 4 && memcmp(mode, "tanh", 4) == 0) {
    return unary_float(in, out, [](float x) {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    });
  }
  return Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
