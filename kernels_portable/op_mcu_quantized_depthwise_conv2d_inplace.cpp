// mcu-gen-kernel: op=mcu::quantized_depthwise_conv2d_inplace.out fn=mcu_quantized_depthwise_conv2d_inplace_out sig=TTtLLLIIITTIITOO dtypes=int8 inplace=0 inplace_rule=depthwise_channel variant_of=cortex_m::quantized_depthwise_conv2d.out
//
// cortex_m::quantized_depthwise_conv2d.out's arguments and results, computed
// so that the output may occupy the input's memory (TinyEngine's in-place
// depthwise convolution). Depth multiplier 1, NHWC in memory. For each image
// and channel c: copy input channel c (H*W bytes) into the scratch tensor
// (argument 13, at least H*W int8), then compute output channel c from it.
// Output channel c only lands on channel-c bytes of the current or earlier
// images (Hout*Wout <= H*W), which are no longer needed. The planner switches
// a depthwise convolution to this kernel where it plans the output over the
// input (mcu_gen/inplace.py, rule depthwise_channel). Arithmetic as int8_conv.h.
#include "int8_conv.h"

namespace mcu {
namespace kernels {

Error mcu_quantized_depthwise_conv2d_inplace_out(const KernelContext& ctx) {
  QConvArgs a;
  if (!read_qconv_args(ctx, true, false, &a)) return Error::KernelFailed;
  QConvGeometry g;
  if (!qconv_common(a, &g)) return Error::KernelFailed;
  if (a.weight.size(0) != 1 || a.depth_multiplier != 1) return Error::KernelFailed;
  const int32_t channels = g.in.c;
  if (a.weight.size(3) != channels) return Error::KernelFailed;
  if (static_cast<int64_t>(g.kh) * g.kw > kMaxTaps) return Error::KernelFailed;  // acc stays in int32
  int32_t out_h = 0, out_w = 0;
  if (!qconv_forward_finish(a, &g, channels, &out_h, &out_w)) return Error::KernelFailed;
  const int64_t plane = static_cast<int64_t>(g.in.h) * g.in.w;
  if (static_cast<int64_t>(out_h) * out_w > plane) return Error::KernelFailed;
  const TensorRef scratch = ctx.tensor(13);
  if (!is_int8(scratch) || scratch.numel < plane) return Error::KernelFailed;

  const int8_t* in = a.input.i8();
  const int8_t* weight = a.weight.i8();
  int8_t* out = a.out.i8();
  int8_t* buf = scratch.i8();
  const int32_t off = static_cast<int32_t>(a.input_offset);
  for (int32_t n = 0; n < g.in.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * plane * channels;
    int8_t* out_image = out + static_cast<size_t>(n) * out_h * out_w * channels;
    for (int32_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < plane; ++p) buf[p] = image[p * channels + c];
      for (int32_t oh = 0; oh < out_h; ++oh) {
        const int32_t ih0 = oh * g.stride_h - g.pad_h;
        int32_t kh_begin, kh_end;
        tap_range(ih0, g.dil_h, g.kh, g.in.h, &kh_begin, &kh_end);
        for (int32_t ow = 0; ow < out_w; ++ow) {
          const int32_t iw0 = ow * g.stride_w - g.pad_w;
          int32_t kw_begin, kw_end;
          tap_range(iw0, g.dil_w, g.kw, g.in.w, &kw_begin, &kw_end);
          int32_t acc = 0;
          for (int32_t kh = kh_begin; kh < kh_end; ++kh) {
            const int8_t* row = buf + static_cast<size_t>(ih0 + kh * g.dil_h) * g.in.w;
            const int8_t* w_row = weight + static_cast<size_t>(kh) * g.kw * channels + c;
            for (int32_t kw = kw_begin; kw < kw_end; ++kw) {
              acc += (row[iw0 + kw * g.dil_w] + off) * w_row[static_cast<size_t>(kw) * channels];
            }
          }
          out_image[(static_cast<size_t>(oh) * out_w + ow) * channels + c] = finish_channel(a, acc, c);
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
