// mcu-gen-kernel: op=aten::repeat.out fn=aten_repeat_out sig=TLOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out) -> Tensor(a!)
// Tiles self `repeats[d]` times along each dim (self's shape is padded with
// leading 1s to len(repeats) dims). Each output row of the last dim is built
// from whole copies of the matching input row.
#include <string.h>

#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_repeat_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList repeats = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  const int32_t nd = repeats.size();
  if (!copyable_pair(in, out) || nd < in.dim || nd != out.dim || nd > kMaxDims) return Error::KernelFailed;
  int32_t in_size[kMaxDims];
  for (int32_t d = 0; d < nd; ++d) {
    const int32_t lead = nd - in.dim;
    in_size[d] = d < lead ? 1 : in.sizes[d - lead];
    if (repeats[d] < 0 || in_size[d] * repeats[d] != out.sizes[d]) return Error::KernelFailed;
  }
  if (out.numel == 0) return Error::Ok;
  const size_t esize = element_size(out);
  if (nd == 0) {
    memcpy(out.data, in.data, esize);
    return Error::Ok;
  }
  int32_t in_strides[kMaxDims];
  contiguous_strides(in_size, nd, in_strides);
  const int32_t row = in_size[nd - 1];  // one input row of the last dim
  const size_t row_bytes = static_cast<size_t>(row) * esize;
  const int32_t out_rows = out.numel / out.sizes[nd - 1];
  int32_t idx[kMaxDims] = {};  // index of the current output row (dims 0 .. nd-2)
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  for (int32_t r = 0; r < out_rows; ++r) {
    size_t in_offset = 0;
    for (int32_t d = 0; d + 1 < nd; ++d) in_offset += static_cast<size_t>(idx[d] % in_size[d]) * in_strides[d];
    for (int64_t k = 0; k < repeats[nd - 1]; ++k) {
      memcpy(dst, src + in_offset * esize, row_bytes);
      dst += row_bytes;
    }
    for (int32_t d = nd - 2; d >= 0; --d) {
      if (++idx[d] < out.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
