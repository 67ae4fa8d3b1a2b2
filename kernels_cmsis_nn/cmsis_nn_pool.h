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

// Arguments: avg (input, kernel_size, stride, padding, ceil_mode, zero_point,
// multiplier, shift, scratch, out); max (input, kernel_size, stride, padding,
// dilation, ceil_mode, input zero point, output zero point, act_min, act_max, out).
constexpr int32_t kAvgScratch = 8, kAvgOut = 9, kMaxOut = 10;

// The cases CMSIS-NN computes exactly (else the portable kernel's).
inline bool avg_pool_cmsis_case(const KernelContext& ctx, bool nhwc, Nhwc* vi, Nhwc* vo, PoolParams* p) {
  return !ctx.bool_arg(4) && qavg_pool_params_ok(ctx) && cmsis_pool_view(ctx, nhwc, kAvgOut, vi, vo, p);
}

inline bool max_pool_cmsis_case(const KernelContext& ctx, bool nhwc, Nhwc* vi, Nhwc* vo, PoolParams* p) {
  return qmax_pool_params_ok(ctx) && cmsis_pool_view(ctx, nhwc, kMaxOut, vi, vo, p);
}

// One arm_avgpool_s8 / arm_max_pool_s8 call per image.
inline Error run_pool(bool avg, const cmsis_nn_context& c, const cmsis_nn_pool_params& pp, const Nhwc& vi,
                      const Nhwc& vo, int32_t kh, int32_t kw, const int8_t* x, int8_t* y) {
  const cmsis_nn_dims in_dims = {1, vi.h, vi.w, vi.c};
  const cmsis_nn_dims filter_dims = {1, kh, kw, 1};
  const cmsis_nn_dims out_dims = {1, vo.h, vo.w, vo.c};
  const int32_t in_image = vi.h * vi.w * vi.c, out_image = vo.h * vo.w * vo.c;
  for (int32_t n = 0; n < vi.n; ++n) {
    const arm_cmsis_nn_status s = avg ? arm_avgpool_s8(&c, &pp, &in_dims, x, &filter_dims, &out_dims, y)
                                      : arm_max_pool_s8(&c, &pp, &in_dims, x, &filter_dims, &out_dims, y);
    if (s != ARM_CMSIS_NN_SUCCESS) return Error::KernelFailed;
    x += in_image;
    y += out_image;
  }
  return Error::Ok;
}

inline Error cmsis_avg_pool2d(const KernelContext& ctx, bool nhwc) {
  Nhwc vi, vo;
  PoolParams p;
  if (!avg_pool_cmsis_case(ctx, nhwc, &vi, &vo, &p)) return qavg_pool2d(ctx, nhwc);
  const cmsis_nn_pool_params pp = {{p.sw, p.sh}, {p.pw, p.ph}, {-128, 127}};
  cmsis_nn_context c;
  if (!scratch_context(ctx.tensor(kAvgScratch), arm_avgpool_s8_get_buffer_size(vo.w, vi.c), &c)) {
    return Error::KernelFailed;
  }
  return run_pool(true, c, pp, vi, vo, p.kh, p.kw, ctx.tensor(0).i8(), ctx.tensor(kAvgOut).i8());
}

inline Error cmsis_max_pool2d(const KernelContext& ctx, bool nhwc) {
  Nhwc vi, vo;
  PoolParams p;
  if (!max_pool_cmsis_case(ctx, nhwc, &vi, &vo, &p)) return qmax_pool2d(ctx, nhwc);
  const cmsis_nn_pool_params pp = {
      {p.sw, p.sh}, {p.pw, p.ph}, {static_cast<int32_t>(ctx.int_arg(8)), static_cast<int32_t>(ctx.int_arg(9))}};
  const cmsis_nn_context c = {nullptr, 0};
  return run_pool(false, c, pp, vi, vo, p.kh, p.kw, ctx.tensor(0).i8(), ctx.tensor(kMaxOut).i8());
}

// ---------------------------------------------------------------------------
// Prepared at load (kernel.h PrepareFn, as cmsis_nn_conv.h prepare_conv): the
// checks above once per instruction, then run_prepared_pool without them.

template <bool kAvg, bool kNhwc>
Error run_prepared_pool(const KernelContext& ctx) {
  const DecodedValue& in = ctx.decoded(0);
  const DecodedValue& out = ctx.decoded(kAvg ? kAvgOut : kMaxOut);
  const Nhwc vi = nhwc_of(in.sizes, kNhwc);
  const Nhwc vo = nhwc_of(out.sizes, kNhwc);
  const int32_t kh = static_cast<int32_t>(ctx.decoded_list_item(1, 0, 1));
  const int32_t kw = static_cast<int32_t>(ctx.decoded_list_item(1, 1, 1));
  cmsis_nn_pool_params pp;
  pp.stride = {static_cast<int32_t>(ctx.decoded_list_item(2, 1, kw)), static_cast<int32_t>(ctx.decoded_list_item(2, 0, kh))};
  pp.padding = {static_cast<int32_t>(ctx.decoded_list_item(3, 1, 0)), static_cast<int32_t>(ctx.decoded_list_item(3, 0, 0))};
  cmsis_nn_context c = {nullptr, 0};
  if (kAvg) {
    pp.activation = {-128, 127};
    const DecodedValue& scratch = ctx.decoded(kAvgScratch);
    c = {scratch.data, scratch.numel};
  } else {
    pp.activation = {static_cast<int32_t>(ctx.decoded_int(8)), static_cast<int32_t>(ctx.decoded_int(9))};
  }
  return run_pool(kAvg, c, pp, vi, vo, kh, kw, static_cast<const int8_t*>(in.data), static_cast<int8_t*>(out.data));
}

template <bool kAvg, bool kNhwc>
KernelFn prepare_pool(const KernelContext& ctx, KernelFn checked) {
  Nhwc vi, vo;
  PoolParams p;
  if (!ctx.all_decoded()) return checked;
  if (kAvg) {
    const TensorRef scratch = ctx.tensor(kAvgScratch);
    if (!avg_pool_cmsis_case(ctx, kNhwc, &vi, &vo, &p) || dtype_size(scratch.dtype) != 1) return checked;
    const int32_t need = arm_avgpool_s8_get_buffer_size(vo.w, vi.c);
    if (need < 0 || scratch.nbytes() < static_cast<size_t>(need)) return checked;
  } else if (!max_pool_cmsis_case(ctx, kNhwc, &vi, &vo, &p)) {
    return checked;
  }
  return &run_prepared_pool<kAvg, kNhwc>;
}

}  // namespace kernels
}  // namespace mcu
