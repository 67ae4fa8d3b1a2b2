// mcu-gen-kernel: op=aten::constant_pad_nd.out fn=aten_constant_pad_nd_out sig=TLSOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out) -> Tensor(a!)
// pad = (before, after) pairs from the last dim backwards; a negative amount
// crops. out is filled with `value`, then the part of self that survives the
// crop is copied to its place.
#include "dtype_util.h"
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_constant_pad_nd_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_constant_pad_nd_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const IntList pad = ctx.int_list(1);
  const Scalar value = ctx.scalar(2);
  const TensorRef out = ctx.tensor(3);
  if (!copyable_pair(in, out) || in.dim != out.dim || pad.size() % 2 != 0 || pad.size() / 2 > in.dim) {
    return Error::KernelFailed;
  }
  int32_t in_start[kMaxDims];   // first element of self that is kept, per dim
  int32_t out_start[kMaxDims];  // where it goes in out
  int32_t len[kMaxDims];        // kept elements per dim
  bool empty = false;
  for (int32_t d = 0; d < in.dim; ++d) {
    const int32_t k = in.dim - 1 - d;  // pair index of dim d
    const int64_t before = k < pad.size() / 2 ? pad[2 * k] : 0;
    const int64_t after = k < pad.size() / 2 ? pad[2 * k + 1] : 0;
    if (in.sizes[d] + before + after != out.sizes[d]) return Error::KernelFailed;
    in_start[d] = before < 0 ? static_cast<int32_t>(-before) : 0;
    out_start[d] = before > 0 ? static_cast<int32_t>(before) : 0;
    const int64_t kept = in.sizes[d] - in_start[d] - (after < 0 ? -after : 0);
    len[d] = kept > 0 ? static_cast<int32_t>(kept) : 0;
    empty = empty || len[d] == 0;
  }
  const bool filled = dispatch_dtype<kSet>(out.dtype, [&](auto tag) {
    using C = decltype(tag);
    const C v = value.as<C>();
    C* y = static_cast<C*>(out.data);
    for (int32_t i = 0; i < out.numel; ++i) y[i] = v;
  });
  if (!filled) return Error::KernelFailed;
  if (empty || out.numel == 0) return Error::Ok;
  const size_t esize = element_size(out);
  int32_t in_strides[kMaxDims];
  int32_t out_strides[kMaxDims];
  contiguous_strides(in.sizes, in.dim, in_strides);
  contiguous_strides(out.sizes, out.dim, out_strides);
  size_t in_offset = 0;
  size_t out_offset = 0;
  for (int32_t d = 0; d < in.dim; ++d) {
    in_offset += static_cast<size_t>(in_start[d]) * in_strides[d];
    out_offset += static_cast<size_t>(out_start[d]) * out_strides[d];
  }
  strided_copy(static_cast<uint8_t*>(out.data) + out_offset * esize, out_strides,
               static_cast<const uint8_t*>(in.data) + in_offset * esize, in_strides, len, in.dim, esize);
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
