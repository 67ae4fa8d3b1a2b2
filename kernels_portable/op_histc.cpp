// mcu-gen-kernel: op=aten::histc.out fn=aten_histc_out sig=TISSOO dtypes=float32 inplace=0
// aten::histc.out(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *, Tensor(a!) out) -> Tensor(a!)
// out = the counts of self's elements in `bins` equal bins over [min, max] (out has self's dtype, float32), as
// ATen's CPU kernel counts them: bin (x - min) * bins / (max - min) in float32, truncated, the last bin closed
// on the right; elements outside [min, max] and NaN are not counted. min == max takes the range of the data
// (widened by 1 on both sides when all elements are equal). Fails where ATen raises: a range that is not finite,
// min > max, bins < 1.
#include <math.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_histc_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(4);
  const int64_t bins = ctx.int_arg(1);
  if (in.dtype != DType::Float || out.dtype != DType::Float || !in.is_contiguous() || !out.is_contiguous() ||
      bins < 1 || out.numel != bins) {
    return Error::KernelFailed;
  }
  const float* x = static_cast<const float*>(in.data);
  double low = ctx.scalar_arg(2);
  double high = ctx.scalar_arg(3);
  if (low == high && in.numel > 0) {  // the data's range; NaN in it makes ATen's range not finite
    float lo = x[0];
    float hi = x[0];
    for (int32_t i = 0; i < in.numel; ++i) {
      if (x[i] != x[i]) return Error::KernelFailed;
      lo = x[i] < lo ? x[i] : lo;
      hi = x[i] > hi ? x[i] : hi;
    }
    low = lo;
    high = hi;
  }
  if (low == high) {
    low -= 1.0;
    high += 1.0;
  }
  if (!(isfinite(low) && isfinite(high)) || low > high) return Error::KernelFailed;
  // The outer edges of ATen's float32 bin edges (linspace(low, high, bins + 1) starts and ends on them exactly).
  const float left = static_cast<float>(low);
  const float right = static_cast<float>(high);
  float* hist = static_cast<float*>(out.data);
  for (int64_t b = 0; b < bins; ++b) hist[b] = 0.0f;
  const float count = static_cast<float>(bins);
  for (int32_t i = 0; i < in.numel; ++i) {
    const float v = x[i];
    if (!(v >= left && v <= right)) continue;
    const float at = (v - left) * count / (right - left);  // NaN only for a range that float32 rounds to 0 wide
    // The last bin includes its right edge.
    const int64_t pos = at >= count ? bins - 1 : at > 0.0f ? static_cast<int64_t>(at) : 0;
    hist[pos] += 1.0f;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
