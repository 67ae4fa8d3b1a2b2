// mcu-gen-kernel: op=aten::logcumsumexp.out fn=aten_logcumsumexp_out sig=TIOO dtypes=float32
// aten::logcumsumexp.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
// Running log(sum(exp(x))) along dim, float32 only (ATen rejects integer and
// bool inputs). The running value starts at -inf; each step is ATen's
// _log_add_exp_helper, so -inf elements add nothing, +inf gives +inf and a
// NaN makes the rest of the line NaN.
#include <math.h>

#include "scan_common.h"

namespace mcu {
namespace kernels {

namespace {

// log(exp(x) + exp(acc)) as ATen's _log_add_exp_helper(x, acc): the larger
// plus log1p(exp(smaller - larger)); when both are the same infinity, x
// (their difference would be NaN). A NaN in either gives NaN.
inline float log_add_exp(float x, float acc) {
  const bool acc_nan = acc != acc;
  const float lo = acc_nan ? acc : (acc < x ? acc : x);  // std::min(x, acc): x when x is NaN
  const float hi = acc_nan ? acc : (x < acc ? acc : x);  // std::max(x, acc): x when x is NaN
  if (lo != hi || isfinite(lo)) return hi + log1pf(expf(lo - hi));
  return x;
}

}  // namespace

Error aten_logcumsumexp_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  Reduction r;
  if (in.dtype != DType::Float || out.dtype != DType::Float || !init_scan(r, ctx, 1, in, out)) {
    return Error::KernelFailed;
  }
  const float* x = static_cast<const float*>(in.data);
  float* y = static_cast<float*>(out.data);
  r.for_each_output([&](int32_t, int32_t base) {
    float acc = -INFINITY;
    r.for_each_reduced(base, [&](int32_t offset, int32_t) {
      acc = log_add_exp(x[offset], acc);
      y[offset] = acc;
    });
  });
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
