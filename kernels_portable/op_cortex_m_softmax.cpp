// mcu-gen-kernel: op=cortex_m::softmax.out fn=cortex_m_softmax_out sig=TIIIIIIOO dtypes=int8
//
// cortex_m::softmax.out(Tensor input, int dim, int input_zero_point,
//     int output_zero_point, int input_multiplier, int input_shift, int diff_min,
//     *, Tensor(a!) out)
// As the Python reference, in float32 (diff_min is not used, as there):
//   input_scale = multiplier * 2^shift / 2^31 / 2^26   (input_multiplier and
//                 input_shift encode scale * 2^(31 - 5), CMSIS-NN's convention)
//   x = ((float)(q - zp)) * input_scale; p = softmax(x) along dim
//   out = clamp(round_half_even(p * 256) + output_zero_point, -128, 127)
// output_zero_point must be -128 (output scale 1/256). exp is expf and the
// sum runs in element order, so an output can differ by one step from
// torch.softmax's vectorised exp/sum where p * 256 lies within float rounding
// of a half-integer (rare; see docs/int8.md). Any rank and dim_order; input
// and output share shape and dim_order.
#include <math.h>

#include "int8_common.h"

namespace mcu {
namespace kernels {

// A row's expf values kept between its sum and its outputs (256 B of stack; longer rows compute the rest twice).
constexpr int32_t kCached = 64;

Error cortex_m_softmax_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(7);
  const int64_t zero_point = ctx.int_arg(2), out_zp = ctx.int_arg(3);
  const int64_t multiplier = ctx.int_arg(4), shift = ctx.int_arg(5);
  if (!is_int8(in) || !is_int8(out) || !in.same_shape(out) || in.dim < 1 || !valid_dim_order(in)) {
    return Error::KernelFailed;
  }
  for (int32_t p = 0; p < in.dim; ++p) {
    if ((in.dim_order ? in.dim_order[p] : p) != (out.dim_order ? out.dim_order[p] : p)) return Error::KernelFailed;
  }
  int64_t dim = ctx.int_arg(1);
  if (dim < 0) dim += in.dim;
  if (dim < 0 || dim >= in.dim) return Error::KernelFailed;
  if (out_zp != -128 || zero_point < -128 || zero_point > 127 || multiplier <= 0 || multiplier > INT32_MAX ||
      shift < -200 || shift > 200) {
    return Error::KernelFailed;
  }
  const double real = ldexp(static_cast<double>(multiplier) / 2147483648.0, static_cast<int>(shift));
  const float scale = static_cast<float>(real / static_cast<double>(1 << 26));
  if (!(scale > 0.0f)) return Error::KernelFailed;
  int32_t strides[kMaxDims];
  memory_strides(in, strides);
  const int32_t d = static_cast<int32_t>(dim);
  const int32_t len = in.sizes[d];
  const int32_t step = strides[d];
  if (len == 0) return Error::Ok;
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  const int32_t zp = static_cast<int32_t>(zero_point);
  // Every row: the elements whose index along `dim` is 0 start one.
  for (int32_t start = 0; start < in.numel; ++start) {
    if ((start / step) % len != 0) continue;
    // The largest value is the value of the largest code (scale > 0: the float product is monotonic).
    int32_t max_q = -128;
    for (int32_t i = 0; i < len; ++i) max_q = x[start + i * step] > max_q ? x[start + i * step] : max_q;
    const float max_v = static_cast<float>(max_q - zp) * scale;
    // expf of the row's first kCached elements kept for the last pass (the same floats, not computed twice)
    float cached[kCached];
    float sum = 0.0f;
    for (int32_t i = 0; i < len; ++i) {
      const float e = expf(static_cast<float>(x[start + i * step] - zp) * scale - max_v);
      if (i < kCached) cached[i] = e;
      sum += e;
    }
    const float inv_sum = 1.0f / sum;
    for (int32_t i = 0; i < len; ++i) {
      const float e = i < kCached ? cached[i] : expf(static_cast<float>(x[start + i * step] - zp) * scale - max_v);
      const float q = round_half_even(e * inv_sum * 256.0f) - 128.0f;
      y[start + i * step] = static_cast<int8_t>(float_to_int_clamped(q, -128, 127));
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
