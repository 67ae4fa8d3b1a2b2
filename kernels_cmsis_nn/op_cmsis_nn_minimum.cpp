// mcu-gen-kernel: op=cortex_m::minimum.out fn=cmsis_nn_minimum_out prepare=cmsis_nn_minimum_prepare sig=TTOO dtypes=int8
//
// cortex_m::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out)
// On CMSIS-NN's arm_minimum_s8, given canonical 4-D shapes (cmsis_nn_layout.h):
// same shapes, one-element operands and broadcasts that merge into at most 4
// dims, in any dim_order the operands share with the output. Other broadcasts,
// memory orders that differ and overlapping memory run the portable kernel
// (kernels_portable/op_cortex_m_minimum.cpp). Prepared at load: flat operands.
#include "cmsis_nn_layout.h"

namespace mcu {
namespace kernels {

Error cortex_m_minimum_out(const KernelContext& ctx);  // the portable kernel

namespace {

Error call_minimum(const MinMaxView& v) {
  const cmsis_nn_context c = {nullptr, 0};  // unused by arm_minimum_s8
  return from_status(arm_minimum_s8(&c, v.a, &v.da, v.b, &v.db, v.out, &v.dout));
}

// Prepared at load (kernel.h PrepareFn): no checks, decoded arguments.
Error run_prepared_minimum(const KernelContext& ctx) { return call_minimum(prepared_minmax_view(ctx)); }

}  // namespace

Error cmsis_nn_minimum_out(const KernelContext& ctx) {
  MinMaxView v;
  if (!minmax_cmsis_case(ctx, &v)) return cortex_m_minimum_out(ctx);
  return call_minimum(v);
}

// Prepared at load (kernel.h PrepareFn): the checks once, then run_prepared_minimum.
KernelFn cmsis_nn_minimum_prepare(const KernelContext& ctx) {
  MinMaxView v;
  if (!ctx.all_decoded() || !minmax_cmsis_case(ctx, &v) || !minmax_flat_case(ctx)) return &cmsis_nn_minimum_out;
  return &run_prepared_minimum;
}

}  // namespace kernels
}  // namespace mcu
