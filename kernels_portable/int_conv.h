// Integer convolutions (aten::convolution of int64/int32/... tensors), as ATen
// computes them: every product and sum in the tensors' own dtype, wrapping on
// overflow (dtype_util.h: wrapping_add/mul), so the result is exact and does
// not depend on the summation order. Plain loops: integer convolutions are
// rare in models (integer inputs), the fp32 ones keep f32_conv_fast.h.
//
// Geometry, layouts and argument checks are conv_common.h's (conv_geometry
// with the tensors' dtype); the bias, when given, is a [out_channels] tensor of
// the same dtype.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "conv_common.h"
#include "dtype_util.h"

namespace mcu::kernels {

// Forward convolution, gather form: out[n, oc, oh, ow] = bias[oc] + sum over the
// group's input channels and the taps inside the input.
template <typename C>
void conv2d_wrapping(const C* in, const C* weight, const C* bias, C* out, const ConvGeometry& g) {
  const int32_t cin_g = g.in_channels / g.groups;
  const int32_t cout_g = g.out_channels / g.groups;
  const int32_t in_plane = g.in_h * g.in_w;
  const int32_t taps = g.kernel_h * g.kernel_w;
  for (int32_t n = 0; n < g.batch; ++n) {
    const C* in_n = in + static_cast<size_t>(n) * g.in_channels * in_plane;
    for (int32_t oc = 0; oc < g.out_channels; ++oc) {
      const C* in_g = in_n + static_cast<size_t>(oc / cout_g) * cin_g * in_plane;
      const C* w_oc = weight + static_cast<size_t>(oc) * cin_g * taps;
      for (int32_t oh = 0; oh < g.out_h; ++oh) {
        for (int32_t ow = 0; ow < g.out_w; ++ow) {
          C acc = bias != nullptr ? bias[oc] : C(0);
          for (int32_t icg = 0; icg < cin_g; ++icg) {
            const C* ip = in_g + static_cast<size_t>(icg) * in_plane;
            const C* wk = w_oc + static_cast<size_t>(icg) * taps;
            for (int32_t kh = 0; kh < g.kernel_h; ++kh) {
              const int32_t ih = oh * g.stride_h - g.pad_h + kh * g.dil_h;
              if (ih < 0 || ih >= g.in_h) continue;
              for (int32_t kw = 0; kw < g.kernel_w; ++kw) {
                const int32_t iw = ow * g.stride_w - g.pad_w + kw * g.dil_w;
                if (iw < 0 || iw >= g.in_w) continue;
                acc = wrapping_add(acc, wrapping_mul(ip[ih * g.in_w + iw], wk[kh * g.kernel_w + kw]));
              }
            }
          }
          *out++ = acc;
        }
      }
    }
  }
}

// Transposed convolution, scatter form (conv_common.h conv_transpose2d_scatter), wrapping: the order of
// the additions does not change an integer result.
template <typename C>
void conv_transpose2d_wrapping(const C* in, const C* weight, const C* bias, C* out, const ConvGeometry& g) {
  conv_transpose2d_scatter(in, weight, bias, out, g, [](C y, C w, C x) { return wrapping_add(y, wrapping_mul(x, w)); });
}

// Checks and runs an integer convolution (input, weight, out and the optional
// bias of one integer dtype in Set); Error::KernelFailed for anything else.
template <DTypeSet Set>
Error run_conv_int(const ConvArgs& a, const TensorRef* bias) {
  const DType dtype = a.input.dtype;
  if (!is_integral(dtype)) return Error::KernelFailed;
  ConvGeometry g;
  if (!conv_geometry(a, &g, 0, /*check_out=*/true, dtype)) return Error::KernelFailed;
  if (bias != nullptr && (bias->dtype != dtype || bias->dim != 1 || bias->numel != g.out_channels)) {
    return Error::KernelFailed;
  }
  if (g.batch == 0) return Error::Ok;
  const bool ok = dispatch_dtype<Set>(dtype, [&](auto zero) {
    using C = decltype(zero);
    const C* b = bias != nullptr ? static_cast<const C*>(bias->data) : nullptr;
    const C* in = static_cast<const C*>(a.input.data);
    const C* w = static_cast<const C*>(a.weight.data);
    C* out = static_cast<C*>(a.out.data);
    if (g.transposed) {
      conv_transpose2d_wrapping(in, w, b, out, g);
    } else {
      conv2d_wrapping(in, w, b, out, g);
    }
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace mcu::kernels
