// mcu-gen-kernel: op=aten::repeat_interleave.Tensor_out fn=aten_repeat_interleave_tensor_out sig=TiOO dtypes=int32,int64
// aten::repeat_interleave.Tensor_out(Tensor repeats, *, SymInt? output_size=None, Tensor(a!) out) -> Tensor(a!)
// out = [0] * repeats[0] + [1] * repeats[1] + ... (repeats 1-D int32/int64, out
// of its dtype). The program fixes out's length: repeats must add up to it (and
// to output_size when given) and none may be negative, else the kernel fails.
#include "elementwise_common.h"
#include "index_common.h"

namespace mcu {
namespace kernels {

Error aten_repeat_interleave_tensor_out(const KernelContext& ctx) {
  const TensorRef repeats = ctx.tensor(0);
  const TensorRef out = ctx.tensor(2);
  if (!is_index_dtype(repeats.dtype) || out.dtype != repeats.dtype || repeats.dim > 1 || out.dim != 1)
    return Error::KernelFailed;
  if (!ctx.is_none(1) && ctx.int_arg(1) != out.numel) return Error::KernelFailed;
  int64_t total = 0;
  for (int32_t i = 0; i < repeats.numel; ++i) {
    const int64_t r = index_at(repeats, i);
    if (r < 0 || r > out.numel) return Error::KernelFailed;
    total += r;
    if (total > out.numel) return Error::KernelFailed;
  }
  if (total != out.numel) return Error::KernelFailed;
  int32_t k = 0;
  for (int32_t i = 0; i < repeats.numel; ++i) {
    const int64_t r = index_at(repeats, i);
    for (int64_t j = 0; j < r; ++j, ++k) {
      if (out.dtype == DType::Int64) out.i64()[k] = i;
      else out.i32()[k] = i;
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
