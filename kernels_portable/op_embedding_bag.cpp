// mcu-gen-kernel: op=aten::_embedding_bag.out fn=aten__embedding_bag_out sig=TTTBIBtBIOOOOX dtypes=float32 index_outputs=1,2,10,11,12
// aten::_embedding_bag.out(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False,
//     int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1,
//     *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2, Tensor(d!) out3) -> (Tensor(a!), Tensor(b!), Tensor(c!), Tensor(d!))
// nn.EmbeddingBag: each bag's weight rows summed, averaged or their maximum (embedding_bag_common.h).
// Compiled without fp-contract, as the host reference computes it (mcu_gen/reference/fp32_emulation.py).
#pragma GCC optimize("fp-contract=off")
#include "embedding_bag_common.h"

namespace mcu {
namespace kernels {

Error aten__embedding_bag_out(const KernelContext& ctx) { return embedding_bag_out(ctx); }

}  // namespace kernels
}  // namespace mcu
