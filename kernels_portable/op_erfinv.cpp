// mcu-gen-kernel: op=aten::erfinv.out fn=aten_erfinv_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::erfinv.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = the inverse error function of self, in float32 as ATen's calc_erfinv computes it: Pavlis' rational
// approximation (|y| <= 0.7 and above), then two Newton steps on erff; +-inf at +-1, NaN beyond. Integer and
// bool inputs are computed in float32 (out is float32).
// Compiled without fp-contract (no fused multiply-adds), as PyTorch computes it on the host, so an int8 program's
// fp32 island computes the same floats.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

namespace {

float erfinv_of(float y) {
  const float y_abs = fabsf(y);
  if (y_abs > 1.0f) return NAN;
  if (y_abs == 1.0f) return copysignf(INFINITY, y);
  float x;
  if (y_abs <= 0.7f) {
    const float z = y * y;
    const float num = ((-0.140543331f * z + 0.914624893f) * z - 1.645349621f) * z + 0.886226899f;
    const float dem = (((0.012229801f * z - 0.329097515f) * z + 1.442710462f) * z - 2.118377725f) * z + 1.0f;
    x = y * num / dem;
  } else {
    const float z = sqrtf(-logf((1.0f - y_abs) / 2.0f));
    const float num = ((1.641345311f * z + 3.429567803f) * z - 1.624906493f) * z - 1.970840454f;
    const float dem = (1.637067800f * z + 3.543889200f) * z + 1.0f;
    x = copysignf(num, y) / dem;
  }
  const float two_over_sqrt_pi = 2.0f * 0.564189583547756286948f;
  for (int step = 0; step < 2; ++step) x = x - (erff(x) - y) / (two_over_sqrt_pi * expf(-x * x));
  return x;
}

}  // namespace

Error aten_erfinv_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_erfinv_out>(ctx, erfinv_of);
}

}  // namespace kernels
}  // namespace mcu
