// mcu-gen-kernel: op=aten::cat.out fn=aten_cat_out sig=XIOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out)
// Concatenates the tensors along `dim`. As in ATen, 1-D empty tensors are
// skipped whatever the other tensors' rank.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

namespace {

bool is_legacy_empty(const TensorRef& t) { return t.dim == 1 && t.sizes[0] == 0; }

}  // namespace

Error aten_cat_out(const KernelContext& ctx) {
  const TensorRef out = ctx.tensor(2);
  const int32_t count = ctx.list_size(0);
  int32_t dim = 0;
  if (!wrap_dim(ctx.int_arg(1), out.dim, &dim) || out.dim == 0) return Error::KernelFailed;
  const size_t esize = element_size(out);
  // Check every input against out, and that the sizes along dim add up.
  int32_t total = 0;
  for (int32_t k = 0; k < count; ++k) {
    const TensorRef t = ctx.list_tensor(0, k);
    if (!copyable_pair(t, out)) return Error::KernelFailed;
    if (is_legacy_empty(t)) continue;
    if (t.dim != out.dim) return Error::KernelFailed;
    for (int32_t d = 0; d < out.dim; ++d) {
      if (d != dim && t.sizes[d] != out.sizes[d]) return Error::KernelFailed;
    }
    total += t.sizes[dim];
  }
  if (total != out.sizes[dim]) return Error::KernelFailed;

  int32_t out_strides[kMaxDims];
  contiguous_strides(out.sizes, out.dim, out_strides);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  int32_t start = 0;  // position along dim where the next input goes
  for (int32_t k = 0; k < count; ++k) {
    const TensorRef t = ctx.list_tensor(0, k);
    if (is_legacy_empty(t)) continue;
    int32_t in_strides[kMaxDims];
    contiguous_strides(t.sizes, t.dim, in_strides);
    strided_copy(dst + static_cast<size_t>(start) * out_strides[dim] * esize, out_strides, t.data, in_strides,
                 t.sizes, t.dim, esize);
    start += t.sizes[dim];
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
