// mcu-gen-kernel: op=cortex_m::quantized_activation.out fn=cortex_m_quantized_activation_out sig=TTOO dtypes=int8
//
// cortex_m::quantized_activation.out(Tensor input, Tensor lut, *, Tensor(a!) out)
// Table lookup: out[i] = lut[input[i] + 128]; lut is 256 int8 values built
// ahead of time from the activation and both quantizations. Input and output
// share shape and dim_order (in place is fine).
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_quantized_activation_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef lut = ctx.tensor(1);
  const TensorRef out = ctx.tensor(2);
  if (!is_int8(in) || !is_int8(lut) || !is_int8(out) || lut.numel != 256 || !in.same_shape(out)) {
    return Error::KernelFailed;
  }
  for (int32_t p = 0; p < in.dim; ++p) {
    if ((in.dim_order ? in.dim_order[p] : p) != (out.dim_order ? out.dim_order[p] : p)) return Error::KernelFailed;
  }
  const int8_t* table = lut.i8() + 128;  // indexed by the int8 code itself
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  const int32_t n = in.numel;  // (a local: the stores through y could alias the tensor's fields)
  int32_t i = 0;
#if defined(__ARM_FEATURE_UNALIGNED)
  // Four codes a word (Cortex-M33/M4/M55: unaligned LDR/STR): per 4 values LDR, 4 SXTB (ROR), 4 LDRB from the
  // table, 3 ORR, STR; the byte loop takes LDRSB, LDRB, STRB and its own loop step per value. In place
  // (y == x) each word is read before it is written.
  for (; i + 4 <= n; i += 4) {
    const uint32_t v = load4(x + i);
    const uint32_t r = static_cast<uint8_t>(table[static_cast<int8_t>(v)]) |
                       static_cast<uint32_t>(static_cast<uint8_t>(table[static_cast<int8_t>(v >> 8)])) << 8 |
                       static_cast<uint32_t>(static_cast<uint8_t>(table[static_cast<int8_t>(v >> 16)])) << 16 |
                       static_cast<uint32_t>(static_cast<uint8_t>(table[static_cast<int8_t>(v >> 24)])) << 24;
    memcpy(y + i, &r, 4);
  }
#endif
  for (; i < n; ++i) y[i] = table[x[i]];
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
