// mcu-gen-kernel: op=cortex_m::transpose.out fn=cmsis_nn_transpose_out sig=TLOO dtypes=int8
//
// cortex_m::transpose.out(Tensor input, int[] perm, *, Tensor(a!) out)
// On CMSIS-NN's arm_transpose_s8. The instruction is first reduced to a
// permutation of memory: the output's memory dims, each read from one of the
// input's memory dims (perm and both dim_orders), without size-1 dims and with
// neighbours that stay neighbours merged (NCHW -> NHWC of one image is a 2-D
// transpose [C, H*W]). That leaves a copy (1 dim), a 2-D transpose or a 3-/4-D
// permutation that is not the identity on the first two dims, the cases
// arm_transpose_s8 computes exactly (its MVE 4-D path assumes perm (0,1,3,2)
// when perm starts with 0, 1, and its 2-D path transposes whatever the perm;
// canonical permutations never reach either wrongly). 2-D transposes beyond its
// 16-bit sizes and gather offsets run as 3-D (1, rows, cols). More than 4 dims,
// overlapping memory and empty tensors run the portable kernel
// (kernels_portable/op_cortex_m_transpose.cpp).
#include "cmsis_nn_layout.h"

namespace mcu {
namespace kernels {

Error cortex_m_transpose_out(const KernelContext& ctx);  // the portable kernel

namespace {

// 2-D: arm_transpose_s8 keeps rows and cols in uint16_t, and on MVE gathers
// with uint16 offsets up to 7 * cols.
constexpr int32_t kMax2dRows = 65535;
constexpr int32_t kMax2dCols = 65535 / 7;

// A memory permutation: out (row-major, sizes[perm[k]]) = in (row-major, sizes) permuted.
struct Transpose {
  const int8_t* in;
  int8_t* out;
  int32_t rank;
  int32_t sizes[4];
  uint32_t perm[4];
};

bool transpose_cmsis_case(const KernelContext& ctx, Transpose* t) {
  const TensorRef in = ctx.tensor(0);
  const IntList perm = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (!is_int8(in) || !is_int8(out) || in.dim != out.dim || perm.size() != in.dim || in.numel <= 0) return false;
  if (!valid_dim_order(in) || !valid_dim_order(out) || !disjoint(in, out)) return false;
  int32_t src[kMaxDims];  // the input dim of each output dim
  uint32_t seen = 0;
  for (int32_t d = 0; d < in.dim; ++d) {
    int64_t p = perm[d];
    if (p < 0) p += in.dim;
    if (p < 0 || p >= in.dim || (seen & (1u << p)) != 0) return false;
    seen |= 1u << p;
    if (out.size(d) != in.size(static_cast<int32_t>(p))) return false;
    src[d] = static_cast<int32_t>(p);
  }
  // rank[d]: position of input dim d among the input's memory dims of size > 1.
  int32_t rank[kMaxDims];
  int32_t r = 0;
  for (int32_t p = 0; p < in.dim; ++p) {
    const int32_t d = order_at(in, p);
    rank[d] = in.size(d) != 1 ? r++ : -1;
  }
  // Runs of output memory dims that read consecutive input memory dims, in output order.
  int32_t first[kMaxDims], size[kMaxDims];
  int32_t runs = 0, last = -2;
  for (int32_t p = 0; p < out.dim; ++p) {
    const int32_t d = src[order_at(out, p)];
    if (rank[d] < 0) continue;
    if (runs > 0 && rank[d] == last + 1) {
      size[runs - 1] *= in.size(d);
    } else {
      first[runs] = rank[d];
      size[runs++] = in.size(d);
    }
    last = rank[d];
  }
  if (runs > 4) return false;
  t->in = in.i8();
  t->out = out.i8();
  if (runs <= 1) {  // the same memory order: a copy
    t->rank = 1;
    t->sizes[0] = in.numel;
    t->perm[0] = 0;
    return true;
  }
  // Input dim of each run: how many runs start before it in the input.
  t->rank = runs;
  for (int32_t k = 0; k < runs; ++k) {
    uint32_t before = 0;
    for (int32_t j = 0; j < runs; ++j) before += first[j] < first[k] ? 1u : 0u;
    t->perm[k] = before;
    t->sizes[before] = size[k];
  }
  if (runs == 2 && (t->sizes[0] > kMax2dRows || t->sizes[1] > kMax2dCols)) {  // as 3-D (1, rows, cols)
    t->rank = 3;
    t->sizes[2] = t->sizes[1];
    t->sizes[1] = t->sizes[0];
    t->sizes[0] = 1;
    t->perm[0] = 0;
    t->perm[1] = 2;
    t->perm[2] = 1;
  }
  return true;
}

}  // namespace

Error cmsis_nn_transpose_out(const KernelContext& ctx) {
  Transpose t;
  if (!transpose_cmsis_case(ctx, &t)) return cortex_m_transpose_out(ctx);
  int32_t in[4] = {1, 1, 1, 1}, out[4] = {1, 1, 1, 1};
  for (int32_t k = 0; k < t.rank; ++k) {
    in[k] = t.sizes[k];
    out[k] = t.sizes[t.perm[k]];
  }
  // Dims left-aligned: arm_transpose_s8 reads (n, h) for 2-D, (n, h, w) for 3-D.
  const cmsis_nn_dims in_dims = {in[0], in[1], in[2], in[3]};
  const cmsis_nn_dims out_dims = {out[0], out[1], out[2], out[3]};
  const cmsis_nn_transpose_params params = {t.rank, t.perm};
  return from_status(arm_transpose_s8(t.in, t.out, &in_dims, &out_dims, &params));
}

}  // namespace kernels
}  // namespace mcu
