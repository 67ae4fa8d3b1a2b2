// mcu-gen-kernel: op=cortex_m::quantized_linear.out fn=cmsis_nn_quantized_linear_out prepare=cmsis_nn_quantized_linear_prepare sig=TTttIIILLIIOO dtypes=int8
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
// Prepared at load (kernel.h PrepareFn): cmsis_nn_quantized_linear_prepare.
#include "cmsis_nn_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_linear_out(const KernelContext& ctx);  // the portable kernel

namespace {

// A linear instruction CMSIS-NN computes: the checked parameters of one call.
struct Linear {
  const int8_t* in;
  const int8_t* w;
  int8_t* out;
  const int32_t* kernel_sum;  // or null
  const int32_t* bias;        // or null (used without kernel_sum)
  int32_t rows, k, n_out;
  cmsis_nn_fc_params p;
  cmsis_nn_per_tensor_quant_params q;
};

// Fills *l when CMSIS-NN takes the instruction (else the portable kernel's case).
bool linear_cmsis_case(const KernelContext& ctx, Linear* l) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef w = ctx.tensor(1);
  const TensorRef out = ctx.tensor(11);
  const int64_t input_offset = ctx.int_arg(4), filter_offset = ctx.int_arg(5), output_offset = ctx.int_arg(6);
  const IntList mults = ctx.int_list(7);
  const IntList shifts = ctx.int_list(8);
  const int64_t act_max = ctx.int_arg(9), act_min = ctx.int_arg(10);
  const bool simple = is_int8(in) && is_int8(w) && is_int8(out) && w.dim == 2 && in.dim >= 1 && out.dim == in.dim &&
                      identity_order(in) && identity_order(w) && identity_order(out) && mults.size() == 1 &&
                      shifts.size() == 1 && valid_multiplier(mults[0]) && cmsis_shift_ok(shifts[0]) &&
                      matmul_offset_ok(input_offset) && matmul_offset_ok(filter_offset) &&
                      matmul_offset_ok(output_offset) && valid_int8_range(act_min, act_max);
  if (!simple) return false;
  const int32_t n_out = w.size(0), k = w.size(1);
  if (k < 1 || n_out < 1 || k > kMaxMatmulK || in.size(in.dim - 1) != k || out.size(out.dim - 1) != n_out) return false;
  for (int32_t d = 0; d + 1 < in.dim; ++d) {
    if (in.size(d) != out.size(d)) return false;
  }
  l->kernel_sum = nullptr;
  l->bias = nullptr;
  if (!ctx.is_none(3)) {
    const TensorRef ks = ctx.tensor(3);
    if (!is_int32_vector(ks, n_out)) return false;
    l->kernel_sum = ks.i32();
  } else if (!ctx.is_none(2)) {
    const TensorRef b = ctx.tensor(2);
    if (!is_int32_vector(b, n_out)) return false;
    l->bias = b.i32();
  }
  if (!bias_fits(l->kernel_sum != nullptr ? l->kernel_sum : l->bias, n_out, kMaxMatmulProduct * k)) return false;
  l->in = in.i8();
  l->w = w.i8();
  l->out = out.i8();
  l->rows = in.numel / k;
  l->k = k;
  l->n_out = n_out;
  l->p = {static_cast<int32_t>(input_offset), static_cast<int32_t>(filter_offset), static_cast<int32_t>(output_offset),
          {static_cast<int32_t>(act_min), static_cast<int32_t>(act_max)}};
  l->q = {static_cast<int32_t>(mults[0]), static_cast<int32_t>(shifts[0])};
  return true;
}

[[gnu::always_inline]] inline Error run_linear(Linear& l) {
  const cmsis_nn_dims in_dims = {l.rows, 1, 1, l.k};
  const cmsis_nn_dims filter_dims = {l.k, 1, 1, l.n_out};
  const cmsis_nn_dims bias_dims = {1, 1, 1, l.n_out};
  const cmsis_nn_dims out_dims = {l.rows, 1, 1, l.n_out};
  if (l.kernel_sum != nullptr) {
    l.p.input_offset = 0;
    cmsis_nn_context c = {const_cast<int32_t*>(l.kernel_sum), static_cast<int32_t>(l.n_out * sizeof(int32_t))};
    return from_status(arm_fully_connected_s8(&c, &l.p, &l.q, &in_dims, l.in, &filter_dims, l.w, &bias_dims,
                                              l.kernel_sum, &out_dims, l.out));
  }
#if defined(ARM_MATH_MVEI)
  constexpr int32_t kBlock = 64;  // output channels per kernel-sum block (256 bytes of stack)
  int32_t sums[kBlock];
  for (int32_t n0 = 0; n0 < l.n_out; n0 += kBlock) {
    const int32_t nb = l.n_out - n0 < kBlock ? l.n_out - n0 : kBlock;
    const int8_t* wb = l.w + static_cast<size_t>(n0) * l.k;
    if (arm_vector_sum_s8(sums, l.k, nb, wb, l.p.input_offset, l.p.filter_offset,
                          l.bias != nullptr ? l.bias + n0 : nullptr) != ARM_CMSIS_NN_SUCCESS) {
      return Error::KernelFailed;
    }
    cmsis_nn_context c = {sums, static_cast<int32_t>(sizeof(sums))};
    const cmsis_nn_dims row_dims = {1, 1, 1, l.k};
    const cmsis_nn_dims fb_dims = {l.k, 1, 1, nb};
    const cmsis_nn_dims ob_dims = {1, 1, 1, nb};
    for (int32_t r = 0; r < l.rows; ++r) {
      const arm_cmsis_nn_status s =
          arm_fully_connected_s8(&c, &l.p, &l.q, &row_dims, l.in + static_cast<size_t>(r) * l.k, &fb_dims, wb,
                                 &ob_dims, sums, &ob_dims, l.out + static_cast<size_t>(r) * l.n_out + n0);
      if (s != ARM_CMSIS_NN_SUCCESS) return Error::KernelFailed;
    }
  }
  return Error::Ok;
#else
  cmsis_nn_context c = {nullptr, 0};
  return from_status(arm_fully_connected_s8(&c, &l.p, &l.q, &in_dims, l.in, &filter_dims, l.w, &bias_dims, l.bias,
                                            &out_dims, l.out));
#endif
}

// Prepared at load (kernel.h PrepareFn): the checks once, then this.
Error run_prepared_linear(const KernelContext& ctx) {
  const DecodedValue& in = ctx.decoded(0);
  const DecodedValue& w = ctx.decoded(1);
  Linear l;
  l.in = static_cast<const int8_t*>(in.data);
  l.w = static_cast<const int8_t*>(w.data);
  l.out = static_cast<int8_t*>(ctx.decoded(11).data);
  const DecodedValue& ks = ctx.decoded(3);
  const DecodedValue& b = ctx.decoded(2);
  l.kernel_sum = ks.tag == DecodedValue::kTensor ? static_cast<const int32_t*>(ks.data) : nullptr;
  l.bias = b.tag == DecodedValue::kTensor ? static_cast<const int32_t*>(b.data) : nullptr;
  l.n_out = w.sizes[0];
  l.k = w.sizes[1];
  l.rows = in.numel / l.k;
  l.p = {static_cast<int32_t>(ctx.decoded_int(4)), static_cast<int32_t>(ctx.decoded_int(5)),
         static_cast<int32_t>(ctx.decoded_int(6)),
         {static_cast<int32_t>(ctx.decoded_int(10)), static_cast<int32_t>(ctx.decoded_int(9))}};
  l.q = {static_cast<int32_t>(ctx.decoded_list_first(7)), static_cast<int32_t>(ctx.decoded_list_first(8))};
  return run_linear(l);
}

}  // namespace

Error cmsis_nn_quantized_linear_out(const KernelContext& ctx) {
  Linear l;
  if (!linear_cmsis_case(ctx, &l)) return cortex_m_quantized_linear_out(ctx);
  return run_linear(l);
}

KernelFn cmsis_nn_quantized_linear_prepare(const KernelContext& ctx) {
  Linear l;
  if (!ctx.all_decoded() || !linear_cmsis_case(ctx, &l)) return &cmsis_nn_quantized_linear_out;
  return &run_prepared_linear;
}

}  // namespace kernels
}  // namespace mcu
