// mcu-gen-kernel: op=mcu::quantized_max_pool2d_inplace.out fn=mcu_quantized_max_pool2d_inplace_out sig=TLLLLBIIIIOO dtypes=int8 inplace=0 inplace_rule=pool_forward variant_of=cortex_m::quantized_max_pool2d.out
//
// cortex_m::quantized_max_pool2d.out's arguments and results, computed so that
// the output may occupy the input's memory: output pixels in raster order, and
// each output byte is written only after every input byte of its window was
// read. Safe in place when no output pixel's window starts before that pixel's
// own index (e.g. 2x2 stride 2, no padding); the planner checks this (rule
// pool_forward in mcu_gen/inplace.py) before switching to this kernel.
// Arithmetic as quantized_max_pool2d (int8_pool.h).
#include "int8_pool.h"

namespace mcu {
namespace kernels {

Error mcu_quantized_max_pool2d_inplace_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(10);
  PoolParams p;
  if (!read_pool_params(ctx.int_list(1), ctx.int_list(2), ctx.int_list(3), &p)) return Error::KernelFailed;
  const IntList dilation = ctx.int_list(4);
  if (dilation.size() > 2 || dilation.get_or(0, 1) != 1 || dilation.get_or(1, 1) != 1) return Error::KernelFailed;
  if (ctx.bool_arg(5)) return Error::KernelFailed;  // ceil_mode
  if (ctx.int_arg(6) != ctx.int_arg(7)) return Error::KernelFailed;
  const int64_t lo = ctx.int_arg(8), hi = ctx.int_arg(9);
  if (!valid_int8_range(lo, hi)) return Error::KernelFailed;
  Nhwc vi, vo;
  if (!pool_shapes(in, out, false, p, false, &vi, &vo)) return Error::KernelFailed;
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  const int32_t c = vi.c;
  for (int32_t n = 0; n < vi.n; ++n) {
    for (int32_t oh = 0; oh < vo.h; ++oh) {
      int32_t h0, h1;
      pool_window(oh, p.sh, p.ph, p.kh, vi.h, &h0, &h1);
      for (int32_t ow = 0; ow < vo.w; ++ow) {
        int32_t w0, w1;
        pool_window(ow, p.sw, p.pw, p.kw, vi.w, &w0, &w1);
        int8_t* o = y + ((static_cast<size_t>(n) * vo.h + oh) * vo.w + ow) * c;
        for (int32_t ch = 0; ch < c; ++ch) {
          int32_t m = -128;
          for (int32_t ih = h0; ih < h1; ++ih) {
            for (int32_t iw = w0; iw < w1; ++iw) {
              const int32_t v = x[((static_cast<size_t>(n) * vi.h + ih) * vi.w + iw) * c + ch];
              m = v > m ? v : m;
            }
          }
          o[ch] = static_cast<int8_t>(clamp_i32(m, static_cast<int32_t>(lo), static_cast<int32_t>(hi)));
        }
      }
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
