// mcu-gen-kernel: op=aten::avg_pool2d.out fn=aten_avg_pool2d_out sig=TLLLBBiOO dtypes=float32,int64
//
// aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[],
//     int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True,
//     int? divisor_override=None, *, Tensor(a!) out) -> Tensor(a!)
// The divisor follows ATen: the window clipped to the padded input
// (count_include_pad) or to the input, unless divisor_override is given.
// int64 (the integer dtype ATen pools): the sum wraps and the division rounds
// toward zero, as ATen's; only compiled into a program that has it.
#include "dtype_util.h"
#include "f32_pool.h"

namespace mcu::kernels {

namespace {

// A window's sum divided by its divisor (not 0).
template <typename C>
C window_average(C sum, int64_t divisor) {
  if constexpr (__is_same(C, float)) {
    return sum / static_cast<float>(divisor);
  } else {
    if (divisor == -1) return wrapping_neg(sum);  // (INT64_MIN / -1 overflows)
    return static_cast<C>(sum / divisor);
  }
}

template <typename C>
void avg_pool2d_planes(const C* in, C* o, const PoolGeometry& g, bool count_include_pad, int64_t divisor_override) {
  const int32_t in_plane = g.in_h * g.in_w;
  for (int32_t p = 0; p < g.planes; ++p) {
    const C* ip = in + static_cast<size_t>(p) * in_plane;
    for (int32_t oh = 0; oh < g.out_h; ++oh) {
      int32_t h0 = oh * g.stride_h - g.pad_h;
      int32_t h1 = h0 + g.kernel_h;
      if (h1 > g.in_h + g.pad_h) h1 = g.in_h + g.pad_h;
      const int32_t padded_h = h1 - h0;
      h0 = h0 < 0 ? 0 : h0;
      h1 = h1 > g.in_h ? g.in_h : h1;
      for (int32_t ow = 0; ow < g.out_w; ++ow) {
        int32_t w0 = ow * g.stride_w - g.pad_w;
        int32_t w1 = w0 + g.kernel_w;
        if (w1 > g.in_w + g.pad_w) w1 = g.in_w + g.pad_w;
        const int32_t padded_w = w1 - w0;
        w0 = w0 < 0 ? 0 : w0;
        w1 = w1 > g.in_w ? g.in_w : w1;
        if (h0 >= h1 || w0 >= w1) {
          *o++ = C(0);
          continue;
        }
        C sum = C(0);
        for (int32_t ih = h0; ih < h1; ++ih) {
          const C* row = ip + ih * g.in_w;
          for (int32_t iw = w0; iw < w1; ++iw) sum = wrapping_add(sum, row[iw]);
        }
        int64_t divisor = divisor_override;
        if (divisor == 0) divisor = count_include_pad ? padded_h * padded_w : (h1 - h0) * (w1 - w0);
        *o++ = window_average(sum, divisor);
      }
    }
  }
}

}  // namespace

Error aten_avg_pool2d_out(const KernelContext& ctx) {
  constexpr bool kInt64 = has_dtype(selected::aten_avg_pool2d_out, DType::Int64);
  TensorRef in = ctx.tensor(0);
  TensorRef out = ctx.tensor(7);
  const bool count_include_pad = ctx.bool_arg(5);
  int64_t divisor_override = 0;
  if (!ctx.is_none(6)) {
    divisor_override = ctx.int_arg(6);
    if (divisor_override == 0) return Error::KernelFailed;
  }
  const DType dtype = kInt64 && in.dtype == DType::Int64 ? DType::Int64 : DType::Float;
  PoolGeometry g;
  if (!pool_geometry(in, out, ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), IntList(), ctx.bool_arg(4), &g,
                     dtype)) {
    return Error::KernelFailed;
  }
  if constexpr (kInt64) {
    if (dtype == DType::Int64) {
      avg_pool2d_planes(in.i64(), out.i64(), g, count_include_pad, divisor_override);
      return Error::Ok;
    }
  }
  avg_pool2d_planes(in.f32(), out.f32(), g, count_include_pad, divisor_override);
  return Error::Ok;
}

}  // namespace mcu::kernels
