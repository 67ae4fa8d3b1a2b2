// mcu-gen-kernel: op=aten::index_put.out fn=aten_index_put_out sig=TQTBOO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::index_put.out(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False, *, Tensor(a!) out) -> Tensor(a!)
// out = self, then out[indices] = values (or += with accumulate: every
// occurrence of a repeated index adds; bool adds as `or`, integers wrap).
// Advanced indexing as aten::index.Tensor (advanced_index.h: int32/int64 index
// tensors, None, bool masks); values (self's dtype) broadcast to the shape
// self[indices] has. Every index is checked (out of range: the call fails).
// In place (out over self) is fine: self is copied first, then only out is read.
#include "advanced_index.h"
#include "dtype_util.h"

namespace mcu {
namespace kernels {

Error aten_index_put_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_index_put_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef values = ctx.tensor(2);
  const bool accumulate = ctx.bool_arg(3);
  const TensorRef out = ctx.tensor(4);
  if (out.dtype != in.dtype || values.dtype != in.dtype || !same_layout(in, out)) return Error::KernelFailed;
  AdvancedIndex ix;
  int32_t value_strides[kMaxDims];
  if (!ix.init(ctx, 1, in) || !ix.broadcast_strides(values, value_strides)) return Error::KernelFailed;
  move_bytes(out.data, in.data, in.nbytes());
  bool ok = false;
  const bool known = dispatch_dtype<kSet>(in.dtype, [&](auto zero) {
    using C = decltype(zero);
    C* dst = static_cast<C*>(out.data);
    if (accumulate) {
      ok = ix.for_each(ix.dim(), value_strides, [&](int32_t at, int32_t from, int32_t) {
        const C v = read_element<C>(values.data, from);
        if constexpr (__is_same(C, float)) dst[at] += v;
        else dst[at] = wrapping_add(read_element<C>(out.data, at), v);
      });
    } else {
      ok = ix.for_each(ix.dim(), value_strides,
                       [&](int32_t at, int32_t from, int32_t) { dst[at] = read_element<C>(values.data, from); });
    }
  });
  return known && ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
