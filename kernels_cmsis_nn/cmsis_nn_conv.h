// Convolutions on CMSIS-NN: arm_convolve_wrapper_s8 and
// arm_depthwise_conv_wrapper_s8 (which pick the 1x1, 1xN, 3x3 and generic
// paths for the core's DSP or MVE variant). Arguments are read and checked by
// the portable code (int8_conv.h); cases CMSIS-NN does not take (grouped
// convolutions, shifts outside -31..30) run the portable loops.
#pragma once
#include "arm_nnsupportfunctions.h"
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
  // CMSIS-NN's shift range (one scan; other shifts: the portable kernel).
  int32_t out_h = 0, out_w = 0;
  if (!qconv_forward_finish(a, &g, cout, &out_h, &out_w, kCmsisMinShift, kCmsisMaxShift)) return false;
  const int64_t taps = static_cast<int64_t>(g.kh) * g.kw * (depthwise ? 1 : g.in.c);
  if (!bias_fits(a.bias, cout, taps * (kMaxInputOffset + 128) * 128)) return false;
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

// Few input channels (an image model's first layer). CMSIS-NN's generic path
// spends most of its time there building im2col columns of kh*kw*cin values
// (14 instructions per MAC on a Cortex-M33 for MNIST's 1-channel 3x3 conv).
// Instead, the kh input rows an output row needs sit channel-interleaved in a
// ring, rows[x][s][c] = in[r][x - pad_w][c] with slot s = (r + pad_h) % kh
// (padding: the input zero point, so x + input_offset = 0 there). Each output
// pixel's window is then one run of kw*kh*cin bytes in (kw, slot, c) order,
// windows spaced stride_w*kh*cin apart: one output row is one
// arm_nn_mat_mult_nt_t_s8 with overlapping lhs rows, against the weights
// reordered to (o, kw, slot, c) for the row's ring rotation. With kh weight
// copies (made once per call) every input row is copied once; when those
// would exceed kStackedRotationBytes there is one copy and each output row
// copies all its kh input rows again.
// MCU_CMSIS_STACKED_CONV=0 leaves every convolution to CMSIS-NN's own paths
// (bench/bench_cmsis_nn.py builds it to measure the runtime and adapters alone).
#ifndef MCU_CMSIS_STACKED_CONV
#define MCU_CMSIS_STACKED_CONV 1
#endif
constexpr int32_t kStackedMaxCin = MCU_CMSIS_STACKED_CONV ? 3 : 0;
constexpr int32_t kStackedMaxKh = 8;
constexpr int32_t kStackedRotationBytes = 1024;

inline bool stacked_conv_applies(const CmsisConv& v, int64_t input_offset) {
  return v.input.c <= kStackedMaxCin && v.filter.h <= kStackedMaxKh && v.dilation.h == 1 && v.dilation.w == 1 &&
         -input_offset >= -128 && -input_offset <= 127;
}

// Reordered weight copies: kh (one per ring rotation) or 1.
inline int32_t stacked_rotations(const CmsisConv& v) {
  const int32_t weights = v.output.c * v.filter.w * v.filter.h * v.input.c;
  return v.filter.h * weights <= kStackedRotationBytes ? v.filter.h : 1;
}

// Scratch bytes: the weight copies + the row ring (cols x kh x cin).
inline int32_t stacked_conv_bytes(const CmsisConv& v) {
  const int32_t cols = (v.output.w - 1) * v.stride.w + v.filter.w;
  return stacked_rotations(v) * v.output.c * v.filter.w * v.filter.h * v.input.c + cols * v.filter.h * v.input.c;
}

// One ring row: columns [0, cols) of a padded input row, column x at dst +
// x * pixel. `row` is the input row (null: a padding row); padded column x is
// its column x - x_lo, and columns outside [x_lo, x_hi) hold `pad`.
[[gnu::noinline]] inline void fill_ring_row(int8_t* dst, const int8_t* row, int32_t cin, int32_t pixel, int32_t cols, int32_t x_lo,
                          int32_t x_hi, int8_t pad) {
  if (row == nullptr) x_lo = x_hi = cols;
  int32_t x = 0;
  for (; x < x_lo; ++x, dst += pixel) {
    for (int32_t c = 0; c < cin; ++c) dst[c] = pad;
  }
  const int8_t* src = row;
  if (cin == 1) {
    for (; x + 4 <= x_hi; x += 4, src += 4) {  // four bytes per load
      uint32_t four;
      memcpy(&four, src, sizeof four);
      dst[0] = static_cast<int8_t>(four);
      dst[pixel] = static_cast<int8_t>(four >> 8);
      dst[2 * pixel] = static_cast<int8_t>(four >> 16);
      dst[3 * pixel] = static_cast<int8_t>(four >> 24);
      dst += 4 * pixel;
    }
    for (; x < x_hi; ++x, dst += pixel) *dst = *src++;
  } else if (cin == 3) {  // RGB: one fixed-size copy per pixel
    for (; x < x_hi; ++x, dst += pixel, src += 3) memcpy(dst, src, 3);
  } else {
    for (; x < x_hi; ++x, dst += pixel, src += cin) {
      for (int32_t c = 0; c < cin; ++c) dst[c] = src[c];
    }
  }
  for (; x < cols; ++x, dst += pixel) {
    for (int32_t c = 0; c < cin; ++c) dst[c] = pad;
  }
}

inline Error stacked_conv2d(const QConvArgs& a, const CmsisConv& v, const TensorRef& scratch) {
  const int32_t kh = v.filter.h, kw = v.filter.w, cin = v.input.c, cout = v.output.c;
  const int32_t in_h = v.input.h, in_w = v.input.w, sh = v.stride.h, sw = v.stride.w;
  const int32_t ph = v.padding.h, pw = v.padding.w;
  const int32_t cols = (v.output.w - 1) * sw + kw;
  const int32_t window = kw * kh * cin;  // bytes per output pixel (= per filter)
  const int32_t pixel = kh * cin;        // bytes per ring column
  if (scratch.nbytes() < static_cast<size_t>(stacked_conv_bytes(v))) return Error::KernelFailed;
  int8_t* weights = reinterpret_cast<int8_t*>(scratch.data);  // [rotation][o][kw][slot][c]
  const int32_t rotations = stacked_rotations(v);
  int8_t* ring = weights + rotations * cout * window;          // [x][slot][c]
  const int8_t* w = a.weight.i8();                              // [o][kh][kw][c]
  const int32_t row_bytes = kw * cin;                           // one kernel row of one filter
  for (int32_t rot = 0; rot < rotations; ++rot) {
    int32_t row_of_slot[kStackedMaxKh];  // offset of the kernel row slot s holds: (s - rot) mod kh
    for (int32_t s = 0, i = kh - rot; s < kh; ++s, ++i) row_of_slot[s] = (i < kh ? i : i - kh) * row_bytes;
    int8_t* dst = weights + rot * cout * window;
    for (int32_t o = 0; o < cout; ++o) {
      const int8_t* filter = w + o * window;
      for (int32_t j = 0; j < row_bytes; j += cin) {
        if (cin == 1) {
          for (int32_t s = 0; s < kh; ++s) *dst++ = filter[row_of_slot[s] + j];
        } else {
          for (int32_t s = 0; s < kh; ++s) {
            const int8_t* src = filter + row_of_slot[s] + j;
            for (int32_t c = 0; c < cin; ++c) *dst++ = src[c];
          }
        }
      }
    }
  }
  const int8_t pad = static_cast<int8_t>(-a.input_offset);
  const int32_t x_lo = pw < cols ? pw : cols;                                   // first column inside the input
  const int32_t x_hi = in_w + pw < cols ? in_w + pw : cols;                     // one past the last
  for (int32_t n = 0; n < v.input.n; ++n) {
    const int8_t* image = a.input.i8() + static_cast<int32_t>(n * in_h * in_w * cin);
    int8_t* out = a.out.i8() + static_cast<int32_t>(n * v.output.h * v.output.w * cout);
    auto fill = [=](int32_t pr, int32_t s) {  // padded row pr (input row pr - ph) into ring slot s
      const int32_t r = pr - ph;
      fill_ring_row(ring + s * cin, r >= 0 && r < in_h ? image + r * in_w * cin : nullptr, cin, pixel, cols, x_lo,
                    x_hi, pad);
    };
    int32_t loaded = 0;  // kh rotations: padded rows [0, loaded) are (or were) in the ring, row pr in slot pr % kh
    for (int32_t oy = 0; oy < v.output.h; ++oy) {
      const int32_t top = oy * sh;
      if (rotations == kh) {
        for (int32_t pr = top > loaded ? top : loaded; pr < top + kh; ++pr) fill(pr, pr % kh);
        loaded = top + kh;
      } else {
        for (int32_t i = 0; i < kh; ++i) fill(top + i, i);
      }
      const int8_t* rhs = weights + (rotations == kh ? (oy * sh) % kh : 0) * cout * window;
      const arm_cmsis_nn_status st = arm_nn_mat_mult_nt_t_s8(
          ring, rhs, a.bias, out + oy * v.output.w * cout, v.quant.multiplier, v.quant.shift, v.output.w, cout,
          window, static_cast<int32_t>(a.input_offset), static_cast<int32_t>(a.output_offset), v.act.min,
          v.act.max, cout, sw * pixel);
      if (st != ARM_CMSIS_NN_SUCCESS) return Error::KernelFailed;
    }
  }
  return Error::Ok;
}

inline Error cmsis_conv2d(const QConvArgs& a, const TensorRef& scratch) {
  CmsisConv v;
  if (!cmsis_conv_view(a, false, &v)) return qconv2d(a);
  if (stacked_conv_applies(v, a.input_offset)) return stacked_conv2d(a, v, scratch);
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

// ---------------------------------------------------------------------------
// Prepared at load (kernel.h PrepareFn). prepare_conv runs every check of the
// functions above once per instruction (shapes, parameter ranges, CMSIS-NN's
// shift range, the scratch size) and, when they pass, returns run_prepared_conv,
// which reads the arguments and calls CMSIS-NN without checking them again;
// otherwise the checked adapter (which may fall back to the portable kernel).

// Everything run_prepared_conv relies on: CMSIS-NN takes the case and the
// scratch tensor is large enough for the path it takes.
inline bool conv_prepared_ok(const QConvArgs& a, bool depthwise, const TensorRef& scratch) {
  CmsisConv v;
  if (!cmsis_conv_view(a, depthwise, &v)) return false;
  int32_t need = 0;
  if (depthwise) {
    const cmsis_nn_dw_conv_params p = {static_cast<int32_t>(a.input_offset), static_cast<int32_t>(a.output_offset),
                                       static_cast<int32_t>(a.depth_multiplier), v.stride, v.padding, v.dilation,
                                       v.act};
    need = arm_depthwise_conv_wrapper_s8_get_buffer_size(&p, &v.input, &v.filter, &v.output);
  } else if (stacked_conv_applies(v, a.input_offset)) {
    need = stacked_conv_bytes(v);
  } else {
    const cmsis_nn_conv_params p = {static_cast<int32_t>(a.input_offset), static_cast<int32_t>(a.output_offset),
                                    v.stride, v.padding, v.dilation, v.act};
    need = arm_convolve_wrapper_s8_get_buffer_size(&p, &v.input, &v.filter, &v.output);
  }
  return need >= 0 && scratch.nbytes() >= static_cast<size_t>(need);
}

// A prepared convolution's arguments, read straight from the decoded values
// (read_qconv_args' order: input, weight, bias, stride, padding, dilation,
// [depth_multiplier], input_offset, output_offset, multipliers, shifts,
// act_min, act_max, scratch, out). Fills what cmsis_conv_view fills and the
// QConvArgs fields stacked_conv2d reads.
template <bool kDepthwise, bool kNhwc>
void read_prepared_conv(const KernelContext& ctx, QConvArgs* a, CmsisConv* v) {
  constexpr int32_t q = kDepthwise ? 7 : 6;  // input_offset
  const DecodedValue& in = ctx.decoded(0);
  const DecodedValue& w = ctx.decoded(1);
  const DecodedValue& out = ctx.decoded(q + 7);
  a->input.data = in.data;
  a->weight.data = w.data;
  a->out.data = out.data;
  a->bias = static_cast<const int32_t*>(ctx.decoded(2).tag == DecodedValue::kTensor ? ctx.decoded_data(2) : nullptr);
  a->input_offset = ctx.decoded_int(q);
  a->output_offset = ctx.decoded_int(q + 1);
  a->act_min = ctx.decoded_int(q + 4);
  a->act_max = ctx.decoded_int(q + 5);
  const Nhwc vi = nhwc_of(in.sizes, kNhwc);
  const Nhwc vo = nhwc_of(out.sizes, kNhwc);
  const int32_t cout = kDepthwise ? w.sizes[3] : w.sizes[0];
  v->input = {vi.n, vi.h, vi.w, vi.c};
  v->filter = kDepthwise ? cmsis_nn_dims{1, w.sizes[1], w.sizes[2], cout}
                         : cmsis_nn_dims{cout, w.sizes[1], w.sizes[2], w.sizes[3]};
  v->bias = {1, 1, 1, cout};
  v->output = {vo.n, vo.h, vo.w, cout};
  v->quant = {static_cast<int32_t*>(ctx.decoded(q + 2).data), static_cast<int32_t*>(ctx.decoded(q + 3).data)};
  v->stride = {static_cast<int32_t>(ctx.decoded_list_item(3, 1, 1)), static_cast<int32_t>(ctx.decoded_list_item(3, 0, 1))};
  v->padding = {static_cast<int32_t>(ctx.decoded_list_item(4, 1, 0)),
                static_cast<int32_t>(ctx.decoded_list_item(4, 0, 0))};
  v->dilation = {static_cast<int32_t>(ctx.decoded_list_item(5, 1, 1)),
                 static_cast<int32_t>(ctx.decoded_list_item(5, 0, 1))};
  v->act = {static_cast<int32_t>(a->act_min), static_cast<int32_t>(a->act_max)};
}

// Arguments: read_qconv_args(depthwise, nhwc); the scratch tensor is argument kScratch.
template <bool kDepthwise, bool kNhwc, int kScratch>
Error run_prepared_conv(const KernelContext& ctx) {
  QConvArgs a;
  CmsisConv v;
  read_prepared_conv<kDepthwise, kNhwc>(ctx, &a, &v);
  const DecodedValue& scratch = ctx.decoded(kScratch);
  cmsis_nn_context c = {scratch.data, scratch.numel};  // uint8 scratch: numel = bytes
  if (kDepthwise) {
    const cmsis_nn_dw_conv_params p = {static_cast<int32_t>(a.input_offset), static_cast<int32_t>(a.output_offset),
                                       static_cast<int32_t>(ctx.decoded_int(6)), v.stride, v.padding, v.dilation,
                                       v.act};
    return from_status(arm_depthwise_conv_wrapper_s8(&c, &p, &v.quant, &v.input, a.input.i8(), &v.filter,
                                                     a.weight.i8(), &v.bias, a.bias, &v.output, a.out.i8()));
  }
  if (stacked_conv_applies(v, a.input_offset)) {
    TensorRef s;
    s.data = scratch.data;
    s.numel = scratch.numel;
    s.dtype = scratch.dtype;
    return stacked_conv2d(a, v, s);
  }
  const cmsis_nn_conv_params p = {static_cast<int32_t>(a.input_offset), static_cast<int32_t>(a.output_offset),
                                  v.stride, v.padding, v.dilation, v.act};
  return from_status(arm_convolve_wrapper_s8(&c, &p, &v.quant, &v.input, a.input.i8(), &v.filter, a.weight.i8(),
                                             &v.bias, a.bias, &v.output, a.out.i8()));
}

template <bool kDepthwise, bool kNhwc, int kScratch>
KernelFn prepare_conv(const KernelContext& ctx, KernelFn checked) {
  QConvArgs a;
  const TensorRef scratch = ctx.tensor(kScratch);
  if (!ctx.all_decoded() || !read_qconv_args(ctx, kDepthwise, kNhwc, &a) || (scratch.dtype != DType::UInt8 && scratch.dtype != DType::Int8) ||
      !conv_prepared_ok(a, kDepthwise, scratch)) {
    return checked;
  }
  return &run_prepared_conv<kDepthwise, kNhwc, kScratch>;
}

}  // namespace kernels
}  // namespace mcu
