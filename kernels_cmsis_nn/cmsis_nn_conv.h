// Convolutions on CMSIS-NN: arm_convolve_wrapper_s8 and
// arm_depthwise_conv_wrapper_s8 (which pick the 1x1, 1xN, 3x3 and generic
// paths for the core's DSP or MVE variant). Arguments are read and checked by
// the portable code (int8_conv.h); cases CMSIS-NN does not take (grouped
// convolutions, shifts outside -31..30) run the portable loops.
#pragma once
#include "cmsis_nn_common.h"
#include "int8_conv.h"

namespace mcu {
namespace kernels {

// The CMSIS-NN view of a checked convolution.
struct CmsisConv {
  cmsis_nn_dims input{}, filter{}, bias{}, output{};
  cmsis_nn_per_channel_quant_params quant{};
  cmsis_nn_tile stride{}, padding{}, dilation{};
  cmsis_nn_activation act{};
};

// Shapes as the portable kernel checks them; false: let it report the error
// (or compute a case CMSIS-NN does not take).
inline bool cmsis_conv_view(const QConvArgs& a, bool depthwise, CmsisConv* v) {
  QConvGeometry g;
  if (!qconv_common(a, &g)) return false;
  int32_t cout = 0;
  if (depthwise) {
    if (a.weight.size(0) != 1 || a.depth_multiplier < 1 || a.depth_multiplier > kMaxConvSize) return false;
    cout = a.weight.size(3);
    if (static_cast<int64_t>(g.in.c) * a.depth_multiplier != cout) return false;
    if (static_cast<int64_t>(g.kh) * g.kw > kMaxTaps) return false;
  } else {
    cout = a.weight.size(0);
    if (a.weight.size(3) != g.in.c) return false;  // groups > 1: portable
    if (static_cast<int64_t>(g.kh) * g.kw * g.in.c > kMaxTaps) return false;
  }
  int32_t out_h = 0, out_w = 0;
  if (!forward_size(g.in.h, g.pad_h, g.kh, g.dil_h, g.stride_h, &out_h) ||
      !forward_size(g.in.w, g.pad_w, g.kw, g.dil_w, g.stride_w, &out_w)) {
    return false;
  }
  if (!qconv_finish(a, &g, out_h, out_w, cout)) return false;
  if (!cmsis_shifts_ok(a.shifts.i32(), cout)) return false;
  v->input = {g.in.n, g.in.h, g.in.w, g.in.c};
  v->filter = depthwise ? cmsis_nn_dims{1, g.kh, g.kw, cout} : cmsis_nn_dims{cout, g.kh, g.kw, g.in.c};
  v->bias = {1, 1, 1, cout};
  v->output = {g.in.n, out_h, out_w, cout};
  // CMSIS-NN reads the multipliers/shifts through non-const pointers but never writes them.
  v->quant = {const_cast<int32_t*>(a.multipliers.i32()), const_cast<int32_t*>(a.shifts.i32())};
  v->stride = {g.stride_w, g.stride_h};
  v->padding = {g.pad_w, g.pad_h};
  v->dilation = {g.dil_w, g.dil_h};
  v->act = {static_cast<int32_t>(a.act_min), static_cast<int32_t>(a.act_max)};
  return true;
}

inline Error cmsis_conv2d(const QConvArgs& a, const TensorRef& scratch) {
  CmsisConv v;
  if (!cmsis_conv_view(a, false, &v)) return qconv2d(a);
  const cmsis_nn_conv_params p = {static_cast<int32_t>(a.input_offset), static_cast<int32_t>(a.output_offset),
                                  v.stride, v.padding, v.dilation, v.act};
  cmsis_nn_context c;
  if (!scratch_context(scratch, arm_convolve_wrapper_s8_get_buffer_size(&p, &v.input, &v.filter, &v.output), &c)) {
    return Error::KernelFailed;
  }
  return from_status(arm_convolve_wrapper_s8(&c, &p, &v.quant, &v.input, a.input.i8(), &v.filter, a.weight.i8(),
                                             &v.bias, a.bias, &v.output, a.out.i8()));
}

inline Error cmsis_depthwise_conv2d(const QConvArgs& a, const TensorRef& scratch) {
  CmsisConv v;
  if (!cmsis_conv_view(a, true, &v)) return qdepthwise_conv2d(a);
  const cmsis_nn_dw_conv_params p = {static_cast<int32_t>(a.input_offset), static_cast<int32_t>(a.output_offset),
                                     static_cast<int32_t>(a.depth_multiplier), v.stride, v.padding, v.dilation, v.act};
  cmsis_nn_context c;
  if (!scratch_context(scratch, arm_depthwise_conv_wrapper_s8_get_buffer_size(&p, &v.input, &v.filter, &v.output),
                       &c)) {
    return Error::KernelFailed;
  }
  return from_status(arm_depthwise_conv_wrapper_s8(&c, &p, &v.quant, &v.input, a.input.i8(), &v.filter,
                                                   a.weight.i8(), &v.bias, a.bias, &v.output, a.out.i8()));
}

}  // namespace kernels
}  // namespace mcu
