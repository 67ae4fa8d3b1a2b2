// mcu-gen-kernel: op=cortex_m::quantized_linear.out fn=cmsis_nn_quantized_linear_out sig=TTttIIILLIIOO dtypes=int8
//
// cortex_m::quantized_linear.out(Tensor input, Tensor weights, Tensor? bias,
//     Tensor? kernel_sum, int input_offset, int filter_offset, int output_offset,
//     int[] requantize_multipliers, int[] requantize_shifts, int activation_max,
//     int activation_min, *, Tensor(a!) out)
// On CMSIS-NN's arm_fully_connected_s8, with the portable kernel's arithmetic
// (kernels_portable/op_cortex_m_quantized_linear.cpp):
//   kernel_sum given: acc = sum(x * w) + filter_offset * sum(x) + kernel_sum[n]
//   otherwise:        acc = sum((x + input_offset) * (w + filter_offset)) + bias[n]
//
// The ISA trap: on MVE builds arm_fully_connected_s8 reads a precomputed
// kernel sum from ctx->buf and ignores the bias and the input offset; on DSP
// and scalar builds it reads the bias and the input offset and ignores ctx->buf.
// Both are served exactly:
//   kernel_sum given: input_offset 0, bias = kernel_sum, ctx->buf = kernel_sum
//     (DSP: sum(x * (w + f)) + kernel_sum; MVE: kernel_sum + sum(x * w) + f * sum(x))
//   otherwise, DSP/scalar: input_offset, bias as given
//   otherwise, MVE: the kernel sum bias + input_offset * sum(w + f) is computed
//     (arm_vector_sum_s8) for blocks of output channels on the stack.
// Per-channel requantization lists and shifts outside -31..30 run the portable kernel.
#include "cmsis_nn_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_linear_out(const KernelContext& ctx);  // the portable kernel

namespace {

// The portable kernel's limits (it reports the errors).
constexpr int32_t kMaxK = 14563;
constexpr int64_t kMaxOffset = 256;

bool in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

}  // namespace

Error cmsis_nn_quantized_linear_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef w = ctx.tensor(1);
  const TensorRef out = ctx.tensor(11);
  const int64_t input_offset = ctx.int_arg(4), filter_offset = ctx.int_arg(5), output_offset = ctx.int_arg(6);
  const IntList mults = ctx.int_list(7);
  const IntList shifts = ctx.int_list(8);
  const int64_t act_max = ctx.int_arg(9), act_min = ctx.int_arg(10);
  const bool simple = is_int8(in) && is_int8(w) && is_int8(out) && w.dim == 2 && in.dim >= 1 && out.dim == in.dim &&
                      identity_order(in) && identity_order(w) && identity_order(out) && mults.size() == 1 &&
                      shifts.size() == 1 && valid_multiplier(mults[0]) && in_range(shifts[0], -31, 30) &&
                      in_range(input_offset, -kMaxOffset, kMaxOffset) && in_range(filter_offset, -kMaxOffset, kMaxOffset) &&
                      in_range(output_offset, -kMaxOffset, kMaxOffset) && valid_int8_range(act_min, act_max);
  if (!simple) return cortex_m_quantized_linear_out(ctx);
  const int32_t n_out = w.size(0), k = w.size(1);
  if (k < 1 || n_out < 1 || k > kMaxK || in.size(in.dim - 1) != k || out.size(out.dim - 1) != n_out) {
    return Error::KernelFailed;
  }
  for (int32_t d = 0; d + 1 < in.dim; ++d) {
    if (in.size(d) != out.size(d)) return Error::KernelFailed;
  }
  const int32_t* kernel_sum = nullptr;
  const int32_t* bias = nullptr;
  if (!ctx.is_none(3)) {
    const TensorRef ks = ctx.tensor(3);
    if (!is_int32_vector(ks, n_out)) return Error::KernelFailed;
    kernel_sum = ks.i32();
  } else if (!ctx.is_none(2)) {
    const TensorRef b = ctx.tensor(2);
    if (!is_int32_vector(b, n_out)) return Error::KernelFailed;
    bias = b.i32();
  }
  const int32_t rows = in.numel / k;
  cmsis_nn_fc_params p = {static_cast<int32_t>(input_offset), static_cast<int32_t>(filter_offset),
                          static_cast<int32_t>(output_offset),
                          {static_cast<int32_t>(act_min), static_cast<int32_t>(act_max)}};
  const cmsis_nn_per_tensor_quant_params q = {static_cast<int32_t>(mults[0]), static_cast<int32_t>(shifts[0])};
  const cmsis_nn_dims in_dims = {rows, 1, 1, k};
  const cmsis_nn_dims filter_dims = {k, 1, 1, n_out};
  const cmsis_nn_dims bias_dims = {1, 1, 1, n_out};
  const cmsis_nn_dims out_dims = {rows, 1, 1, n_out};
  if (kernel_sum != nullptr) {
    p.input_offset = 0;
    cmsis_nn_context c = {const_cast<int32_t*>(kernel_sum), static_cast<int32_t>(n_out * sizeof(int32_t))};
    return from_status(arm_fully_connected_s8(&c, &p, &q, &in_dims, in.i8(), &filter_dims, w.i8(), &bias_dims,
                                              kernel_sum, &out_dims, out.i8()));
  }
#if defined(ARM_MATH_MVEI)
  constexpr int32_t kBlock = 64;  // output channels per kernel-sum block (256 bytes of stack)
  int32_t sums[kBlock];
  for (int32_t n0 = 0; n0 < n_out; n0 += kBlock) {
    const int32_t nb = n_out - n0 < kBlock ? n_out - n0 : kBlock;
    const int8_t* wb = w.i8() + static_cast<size_t>(n0) * k;
    if (arm_vector_sum_s8(sums, k, nb, wb, p.input_offset, p.filter_offset, bias != nullptr ? bias + n0 : nullptr) !=
        ARM_CMSIS_NN_SUCCESS) {
      return Error::KernelFailed;
    }
    cmsis_nn_context c = {sums, static_cast<int32_t>(sizeof(sums))};
    const cmsis_nn_dims row_dims = {1, 1, 1, k};
    const cmsis_nn_dims fb_dims = {k, 1, 1, nb};
    const cmsis_nn_dims ob_dims = {1, 1, 1, nb};
    for (int32_t r = 0; r < rows; ++r) {
      const arm_cmsis_nn_status s =
          arm_fully_connected_s8(&c, &p, &q, &row_dims, in.i8() + static_cast<size_t>(r) * k, &fb_dims, wb,
                                 &ob_dims, sums, &ob_dims, out.i8() + static_cast<size_t>(r) * n_out + n0);
      if (s != ARM_CMSIS_NN_SUCCESS) return Error::KernelFailed;
    }
  }
  return Error::Ok;
#else
  cmsis_nn_context c = {nullptr, 0};
  return from_status(arm_fully_connected_s8(&c, &p, &q, &in_dims, in.i8(), &filter_dims, w.i8(), &bias_dims, bias,
                                            &out_dims, out.i8()));
#endif
}

}  // namespace kernels
}  // namespace mcu
