// mcu-gen-kernel: op=aten::i0.out fn=aten_i0_out sig=TOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::i0.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// out = I0(self), the modified Bessel function of the first kind of order zero (torch.i0, the Kaiser window's),
// in float32 as ATen's calc_i0 computes it: |x| <= 8 by the Chebyshev series of exp(-x) I0(x) on [0, 8],
// beyond by that of exp(-x) sqrt(x) I0(x) on [8, inf), each summed by Clenshaw's recurrence (Cephes' chbevl;
// the coefficients are the Cephes Math Library's, 3-clause BSD, Copyright (c) 2018 Steven Moshier). Integer and
// bool inputs are computed in float32 (out is float32).
// Compiled without fp-contract (no fused multiply-adds), as PyTorch computes it on the host, so an int8 program's
// fp32 island computes the same floats.
#pragma GCC optimize("fp-contract=off")
#include <math.h>

#include "elementwise_math.h"

namespace mcu {
namespace kernels {

namespace {

// Chebyshev coefficients of exp(-x) I0(x) on [0, 8], highest order first.
constexpr float kI0eSmall[30] = {
    -4.41534164647933937950E-18f, 3.33079451882223809783E-17f, -2.43127984654795469359E-16f,
    1.71539128555513303061E-15f,  -1.16853328779934516808E-14f, 7.67618549860493561688E-14f,
    -4.85644678311192946090E-13f, 2.95505266312963983461E-12f,  -1.72682629144155570723E-11f,
    9.67580903537323691224E-11f,  -5.18979560163526290666E-10f, 2.65982372468238665035E-9f,
    -1.30002500998624804212E-8f,  6.04699502254191894932E-8f,   -2.67079385394061173391E-7f,
    1.11738753912010371815E-6f,   -4.41673835845875056359E-6f,  1.64484480707288970893E-5f,
    -5.75419501008210370398E-5f,  1.88502885095841655729E-4f,   -5.76375574538582365885E-4f,
    1.63947561694133579842E-3f,   -4.32430999505057594430E-3f,  1.05464603945949983183E-2f,
    -2.37374148058994688156E-2f,  4.93052842396707084878E-2f,   -9.49010970480476444210E-2f,
    1.71620901522208775349E-1f,   -3.04682672343198398683E-1f,  6.76795274409476084995E-1f};

// Chebyshev coefficients of exp(-x) sqrt(x) I0(x) on [8, inf) (in 32 / x - 2), highest order first.
constexpr float kI0eLarge[25] = {
    -7.23318048787475395456E-18f, -4.83050448594418207126E-18f, 4.46562142029675999901E-17f,
    3.46122286769746109310E-17f,  -2.82762398051658348494E-16f, -3.42548561967721913462E-16f,
    1.77256013305652638360E-15f,  3.81168066935262242075E-15f,  -9.55484669882830764870E-15f,
    -4.15056934728722208663E-14f, 1.54008621752140982691E-14f,  3.85277838274214270114E-13f,
    7.18012445138366623367E-13f,  -1.79417853150680611778E-12f, -1.32158118404477131188E-11f,
    -3.14991652796324136454E-11f, 1.18891471078464383424E-11f,  4.94060238822496958910E-10f,
    3.39623202570838634515E-9f,   2.26666899049817806459E-8f,   2.04891858946906374183E-7f,
    2.89137052083475648297E-6f,   6.88975834691682398426E-5f,   3.36911647825569408990E-3f,
    8.04490411014108831608E-1f};

// Clenshaw's sum of the Chebyshev series `c` (highest order first) at x / 2.
float chebyshev(float x, const float* c, int n) {
  float b0 = c[0];
  float b1 = 0.0f;
  float b2 = 0.0f;
  for (int i = 1; i < n; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + c[i];
  }
  return 0.5f * (b0 - b2);
}

float i0_of(float v) {
  const float x = fabsf(v);
  if (x <= 8.0f) return expf(x) * chebyshev(x / 2.0f - 2.0f, kI0eSmall, 30);
  return expf(x) * chebyshev(32.0f / x - 2.0f, kI0eLarge, 25) / sqrtf(x);
}

}  // namespace

Error aten_i0_out(const KernelContext& ctx) {
  return unary_to_float<selected::aten_i0_out>(ctx, i0_of);
}

}  // namespace kernels
}  // namespace mcu
