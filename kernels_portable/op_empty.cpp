// mcu-gen-kernel: op=aten::empty.out fn=aten_empty_out sig=L?OO dtypes=float32,uint8,int8,int16,int32,int64,bool inplace=0
// aten::empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
// out's storage, contents unspecified (as ATen: nothing is written). Decompositions
// that build a tensor piece by piece start from it, e.g. F.pad(mode="circular"):
// empty, then slice_scatter (in place) of the copied pieces. That form is kept
// rather than a circular-pad kernel: it needs no operator outside ATen, and costs
// the padded output plus one slice's copy at a time.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

Error aten_empty_out(const KernelContext& ctx) {
  const IntList size = ctx.int_list(0);
  const TensorRef out = ctx.tensor(2);
  if (size.size() != out.dim) return Error::KernelFailed;
  for (int32_t d = 0; d < out.dim; ++d) {
    if (size[d] != out.sizes[d]) return Error::KernelFailed;
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
