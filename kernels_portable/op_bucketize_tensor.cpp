// mcu-gen-kernel: op=aten::bucketize.Tensor_out fn=aten_bucketize_tensor_out sig=TTBBOO dtypes=float32,uint8,int8,int16,int32,int64 index_outputs=4
// aten::bucketize.Tensor_out(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False, Tensor(a!) out) -> Tensor(a!)
// out[i] = the bucket of self[i] among the sorted 1-d `boundaries`, as PyTorch counts it: the first k with
// boundaries[k] >= self[i] (right: > self[i]), boundaries.numel() when there is none (and for NaN). Both
// tensors are compared in their promoted dtype; out is int64, or int32 with out_int32.
#include "dtype_util.h"
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

namespace {

// PyTorch's binary search (ATen's cus_lower_bound / cus_upper_bound): "not >=" / "not >" moves right, so a
// NaN value (and a NaN boundary it meets) lands after every boundary.
template <typename C>
int64_t bucket(C value, LoadFn<C> load, const void* boundaries, int32_t n, bool right) {
  int32_t start = 0;
  int32_t end = n;
  while (start < end) {
    const int32_t mid = start + ((end - start) >> 1);
    const C b = load(boundaries, mid);
    const bool go_right = right ? !(b > value) : !(b >= value);
    if (go_right) {
      start = mid + 1;
    } else {
      end = mid;
    }
  }
  return start;
}

}  // namespace

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
    for (int32_t i = 0; i < in.numel; ++i) {
      const int64_t k = bucket<C>(load_in(in.data, i), load_b, boundaries.data, boundaries.numel, right);
      if (out_int32) {
        static_cast<int32_t*>(out.data)[i] = static_cast<int32_t>(k);
      } else {
        static_cast<int64_t*>(out.data)[i] = k;
      }
    }
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
