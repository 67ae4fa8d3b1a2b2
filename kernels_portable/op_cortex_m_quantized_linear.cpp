// mcu-gen-kernel: op=cortex_m::quantized_linear.out fn=cortex_m_quantized_linear_out sig=TTttIIILLIIOO dtypes=int8
//
// cortex_m::quantized_linear.out(Tensor input, Tensor weights, Tensor? bias,
//     Tensor? kernel_sum, int input_offset, int filter_offset, int output_offset,
//     int[] requantize_multipliers, int[] requantize_shifts, int activation_max,
//     int activation_min, *, Tensor(a!) out)
// input [..., K] int8, weights [N, K] int8, out [..., N] int8, all contiguous;
// bias and kernel_sum int32 with N elements. As the reference:
//   kernel_sum given: acc = sum(x * w) + filter_offset * sum(x) + kernel_sum[n]
//                     (bias and input_offset are not read: kernel_sum already
//                     holds input_offset * sum(w + filter_offset) + bias)
//   otherwise:        acc = sum((x + input_offset) * (w + filter_offset)) + bias[n]
//   out = clamp(requantize(acc, m, s) + output_offset, activation_min, activation_max)
// The multiplier/shift lists hold one value (per tensor, what ExecuTorch
// emits) or N values (per output channel; the Python reference would read
// only the first).
#include "int8_dot.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_linear_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef w = ctx.tensor(1);
  const TensorRef out = ctx.tensor(11);
  const int64_t input_offset = ctx.int_arg(4);
  const int64_t filter_offset = ctx.int_arg(5);
  const int64_t output_offset = ctx.int_arg(6);
  const IntList mults = ctx.int_list(7);
  const IntList shifts = ctx.int_list(8);
  const int64_t act_max = ctx.int_arg(9);
  const int64_t act_min = ctx.int_arg(10);
  if (!is_int8(in) || !is_int8(w) || !is_int8(out) || w.dim != 2 || in.dim < 1 || out.dim != in.dim) {
    return Error::KernelFailed;
  }
  if (!identity_order(in) || !identity_order(w) || !identity_order(out)) return Error::KernelFailed;
  const int32_t n_out = w.size(0);
  const int32_t k = w.size(1);
  if (k < 1 || n_out < 1 || k > kMaxLinearK || in.size(in.dim - 1) != k || out.size(out.dim - 1) != n_out) {
    return Error::KernelFailed;
  }
  for (int32_t d = 0; d + 1 < in.dim; ++d) {
    if (in.size(d) != out.size(d)) return Error::KernelFailed;
  }
  const int32_t rows = in.numel / k;
  const int32_t* bias = nullptr;
  const int32_t* kernel_sum = nullptr;
  if (!ctx.is_none(3)) {
    const TensorRef ks = ctx.tensor(3);
    if (!is_int32_vector(ks, n_out)) return Error::KernelFailed;
    kernel_sum = ks.i32();
  } else if (!ctx.is_none(2)) {
    const TensorRef b = ctx.tensor(2);
    if (!is_int32_vector(b, n_out)) return Error::KernelFailed;
    bias = b.i32();
  }
  if (input_offset < -kMaxInputOffset || input_offset > kMaxInputOffset || filter_offset < -kMaxInputOffset ||
      filter_offset > kMaxInputOffset || output_offset < INT32_MIN || output_offset > INT32_MAX) {
    return Error::KernelFailed;
  }
  if (!valid_int8_range(act_min, act_max)) return Error::KernelFailed;
  const int32_t n_params = mults.size();
  if ((n_params != 1 && n_params != n_out) || shifts.size() != n_params) return Error::KernelFailed;
  for (int32_t i = 0; i < n_params; ++i) {
    if (!valid_multiplier(mults[i]) || !valid_shift(shifts[i])) return Error::KernelFailed;
  }
  int32_t m = static_cast<int32_t>(mults[0]);
  int32_t sh = static_cast<int32_t>(shifts[0]);
  const int32_t off_x = kernel_sum != nullptr ? 0 : static_cast<int32_t>(input_offset);
  const int32_t off_w = static_cast<int32_t>(filter_offset);
  const int32_t* added = kernel_sum != nullptr ? kernel_sum : bias;  // c[n] (none: 0)
  const int32_t out_off = static_cast<int32_t>(output_offset), lo = static_cast<int32_t>(act_min),
                hi = static_cast<int32_t>(act_max);
  const int8_t* x = in.i8();
  const int8_t* weights = w.i8();
  int8_t* y = out.i8();
  for (int32_t r = 0; r < rows; ++r) {
    const int8_t* xr = x + static_cast<size_t>(r) * k;
    int8_t* yr = y + static_cast<size_t>(r) * n_out;
    for (int32_t n0 = 0; n0 < n_out; n0 += kRowsPerPass) {
      const int32_t count = n_out - n0 < kRowsPerPass ? n_out - n0 : kRowsPerPass;
      int32_t acc[kRowsPerPass];
      dot_rows(xr, weights + static_cast<size_t>(n0) * k, k, count, off_x, off_w, acc);
      for (int32_t j = 0; j < count; ++j) {
        const int32_t n = n0 + j;
        const int32_t sum = added != nullptr ? wrap_add(acc[j], added[n]) : acc[j];
        if (n_params > 1) {
          m = static_cast<int32_t>(mults[n]);
          sh = static_cast<int32_t>(shifts[n]);
        }
        yr[n] = requantize_to_int8(sum, m, sh, out_off, lo, hi);
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
