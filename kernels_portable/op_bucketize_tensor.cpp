// mcu-gen-kernel: op=aten::bucketize.Tensor_out fn=aten_bucketize_tensor_out sig=TTBBOO dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=4
// aten::bucketize.Tensor_out(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False, Tensor(a!) out) -> Tensor(a!)
// out[i] = the bucket of self[i] among the sorted 1-d `boundaries`, as PyTorch counts it: the first k with
// boundaries[k] >= self[i] (right: > self[i]), boundaries.numel() when there is none (and for NaN). Both
// tensors are compared in their promoted dtype; out is int64, or int32 with out_int32.
#include "search_common.h"

namespace mcu {
namespace kernels {

Error aten_bucketize_tensor_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_bucketize_tensor_out & kRealTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef boundaries = ctx.tensor(1);
  const bool out_int32 = ctx.bool_arg(2);
  const bool right = ctx.bool_arg(3);
  const TensorRef out = ctx.tensor(4);
  if (boundaries.dim != 1 || out.dtype != (out_int32 ? DType::Int32 : DType::Int64)) return Error::KernelFailed;
  if (!in.same_shape(out) || !in.is_contiguous() || !out.is_contiguous() || !boundaries.is_contiguous())
    return Error::KernelFailed;
  const DType common = promote_types(in.dtype, boundaries.dtype);
  bool ok = false;
  dispatch_dtype<kSet>(common, [&](auto tag) {
    using C = decltype(tag);
    const LoadFn<C> load_in = loader<kSet, C>(in.dtype);
    const LoadFn<C> load_b = loader<kSet, C>(boundaries.dtype);
    if (load_in == nullptr || load_b == nullptr) return;
    const void* b = boundaries.data;
    for (int32_t i = 0; i < in.numel; ++i) {
      const int64_t k = sorted_position<C>(load_in(in.data, i), [&](int32_t j) { return load_b(b, j); },
                                           boundaries.numel, right);
      store_position(out, i, k);
    }
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
