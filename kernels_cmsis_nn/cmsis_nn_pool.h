// Pools on CMSIS-NN: arm_avgpool_s8 and arm_max_pool_s8, one image at a time.
// The portable kernels (int8_pool.h) use the same integer arithmetic (average:
// raw sum over the taps inside the input, rounded half away from zero), and
// take the cases CMSIS-NN does not (ceil_mode, input and output zero points
// that differ, dilation).
#pragma once
#include "cmsis_nn_common.h"
#include "int8_pool.h"

namespace mcu {
namespace kernels {

// The CMSIS-NN view of a checked pool; false: the portable kernel's case.
inline bool cmsis_pool_view(const KernelContext& ctx, bool nhwc, int32_t out_arg, Nhwc* vi, Nhwc* vo, PoolParams* p) {
  if (!read_pool_params(ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), p)) return false;
  return pool_shapes(ctx.tensor(0), ctx.tensor(out_arg), nhwc, *p, false, vi, vo);
}

inline Error cmsis_avg_pool2d(const KernelContext& ctx, bool nhwc) {
  Nhwc vi, vo;
  PoolParams p;
  const int64_t zp = ctx.int_arg(5);
  if (ctx.bool_arg(4) || zp < -128 || zp > 127 || !valid_multiplier(ctx.int_arg(6)) || ctx.int_arg(7) < -200 ||
      ctx.int_arg(7) > 200 || !cmsis_pool_view(ctx, nhwc, 9, &vi, &vo, &p)) {
    return qavg_pool2d(ctx, nhwc);
  }
  const cmsis_nn_pool_params pp = {{p.sw, p.sh}, {p.pw, p.ph}, {-128, 127}};
  const cmsis_nn_dims in_dims = {1, vi.h, vi.w, vi.c};
  const cmsis_nn_dims filter_dims = {1, p.kh, p.kw, 1};
  const cmsis_nn_dims out_dims = {1, vo.h, vo.w, vo.c};
  cmsis_nn_context c;
  if (!scratch_context(ctx.tensor(8), arm_avgpool_s8_get_buffer_size(vo.w, vi.c), &c)) return Error::KernelFailed;
  const int8_t* x = ctx.tensor(0).i8();
  int8_t* y = ctx.tensor(9).i8();
  for (int32_t n = 0; n < vi.n; ++n) {
    const arm_cmsis_nn_status s = arm_avgpool_s8(&c, &pp, &in_dims, x + static_cast<size_t>(n) * vi.h * vi.w * vi.c,
                                                 &filter_dims, &out_dims, y + static_cast<size_t>(n) * vo.h * vo.w * vo.c);
    if (s != ARM_CMSIS_NN_SUCCESS) return Error::KernelFailed;
  }
  return Error::Ok;
}

inline Error cmsis_max_pool2d(const KernelContext& ctx, bool nhwc) {
  Nhwc vi, vo;
  PoolParams p;
  const IntList dilation = ctx.int_list(4);
  const int64_t lo = ctx.int_arg(8), hi = ctx.int_arg(9);
  if (dilation.size() > 2 || dilation.get_or(0, 1) != 1 || dilation.get_or(1, 1) != 1 || ctx.bool_arg(5) ||
      ctx.int_arg(6) != ctx.int_arg(7) || !valid_int8_range(lo, hi) || !cmsis_pool_view(ctx, nhwc, 10, &vi, &vo, &p)) {
    return qmax_pool2d(ctx, nhwc);
  }
  const cmsis_nn_pool_params pp = {{p.sw, p.sh}, {p.pw, p.ph}, {static_cast<int32_t>(lo), static_cast<int32_t>(hi)}};
  const cmsis_nn_dims in_dims = {1, vi.h, vi.w, vi.c};
  const cmsis_nn_dims filter_dims = {1, p.kh, p.kw, 1};
  const cmsis_nn_dims out_dims = {1, vo.h, vo.w, vo.c};
  const cmsis_nn_context c = {nullptr, 0};
  const int8_t* x = ctx.tensor(0).i8();
  int8_t* y = ctx.tensor(10).i8();
  for (int32_t n = 0; n < vi.n; ++n) {
    const arm_cmsis_nn_status s = arm_max_pool_s8(&c, &pp, &in_dims, x + static_cast<size_t>(n) * vi.h * vi.w * vi.c,
                                                  &filter_dims, &out_dims, y + static_cast<size_t>(n) * vo.h * vo.w * vo.c);
    if (s != ARM_CMSIS_NN_SUCCESS) return Error::KernelFailed;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
