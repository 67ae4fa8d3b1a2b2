// Memory views shared by the layout adapters (pad, transpose, minimum, maximum,
// batch matmul): CMSIS-NN walks plain row-major memory, the portable kernels
// walk logical dims in any dim_order. An adapter describes an instruction's
// memory in CMSIS-NN's 4-D terms when that is the same computation, and
// otherwise leaves it to the portable kernel.
#pragma once
#include "cmsis_nn_common.h"

namespace mcu {
namespace kernels {

// The memory of a and b is disjoint, or the very same bytes (same start and
// size; with sizes_in_order_of, the same elements in the same order): an
// elementwise CMSIS-NN kernel reads each element before writing it. Other
// overlaps run the portable kernel, which defines their result.
inline bool disjoint_or_same(const TensorRef& a, const TensorRef& b) {
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a.data), pb = reinterpret_cast<uintptr_t>(b.data);
  if (pa == pb) return a.nbytes() == b.nbytes();
  return pa + a.nbytes() <= pb || pb + b.nbytes() <= pa;
}

// No byte of a is a byte of b (for kernels that read and write in different orders).
inline bool disjoint(const TensorRef& a, const TensorRef& b) {
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a.data), pb = reinterpret_cast<uintptr_t>(b.data);
  return pa + a.nbytes() <= pb || pb + b.nbytes() <= pa || a.numel == 0 || b.numel == 0;
}

inline int32_t order_at(const TensorRef& t, int32_t p) { return t.dim_order != nullptr ? t.dim_order[p] : p; }

// The sizes of t at each memory position of `out` (out.dim entries): t's size
// along the logical dim of out stored there, with t's dims right-aligned to
// out's (1 where t has no such dim). True when t's memory walks its dims of
// size > 1 in the same order as out's memory does, i.e. t's elements are laid
// out as a row-major array of these sizes (size-1 dims may sit anywhere).
inline bool sizes_in_order_of(const TensorRef& t, const TensorRef& out, int32_t* sizes) {
  const int32_t lead = out.dim - t.dim;
  if (lead < 0) return false;
  int32_t walk[kMaxDims];  // t's dims of size > 1 in its memory order, as dims of out
  int32_t n = 0;
  for (int32_t p = 0; p < t.dim; ++p) {
    const int32_t d = order_at(t, p);
    if (t.sizes[d] != 1) walk[n++] = d + lead;
  }
  int32_t k = 0;
  for (int32_t p = 0; p < out.dim; ++p) {
    const int32_t d = order_at(out, p);
    sizes[p] = d >= lead ? t.sizes[d - lead] : 1;
    if (sizes[p] == 1) continue;
    if (k == n || walk[k] != d) return false;
    ++k;
  }
  return k == n;
}

// ---------------------------------------------------------------------------
// minimum / maximum: arm_minimum_s8 / arm_maximum_s8 on 4-D shapes.
//
// CMSIS-NN broadcasts (n, h, w, c) shapes with pointer arithmetic that is right
// for some shapes only: e.g. (1,1,2,1) against (1,2,1,1) reads past the first
// operand. The adapter therefore gives it canonical shapes only: the output's
// memory dims without the size-1 ones, neighbours that both operands walk the
// same way merged (both full, or the same operand broadcast), right-aligned
// into 4 dims. Every canonical pattern of up to 4 dims (3 kinds per dim, no
// two equal neighbours: 46 patterns) was checked against numpy broadcasting
// with sizes 2, 3, 4, 7, 16 and 33 per dim on the host, for both functions,
// under ASan; non-canonical shapes fail there in 25 of 81 patterns.
// More than 4 canonical dims, layouts whose memory orders differ, overlapping
// memory and empty tensors run the portable kernel.
struct MinMaxView {
  const int8_t* a;
  const int8_t* b;
  int8_t* out;
  cmsis_nn_dims da, db, dout;
};

// Merges the operands' sizes per memory position of out (n positions) into at
// most 4 canonical dims; false when more remain.
inline bool canonical_minmax_dims(const int32_t* sa, const int32_t* sb, int32_t n, MinMaxView* v) {
  int32_t a[4], b[4], kind[4];
  int32_t m = 0;
  for (int32_t p = 0; p < n; ++p) {
    if (sa[p] == 1 && sb[p] == 1) continue;
    const int32_t k = sa[p] == sb[p] ? 0 : (sa[p] == 1 ? 1 : 2);  // both full, a broadcast, b broadcast
    if (m > 0 && kind[m - 1] == k) {
      a[m - 1] *= sa[p];
      b[m - 1] *= sb[p];
      continue;
    }
    if (m == 4) return false;
    kind[m] = k;
    a[m] = sa[p];
    b[m] = sb[p];
    ++m;
  }
  int32_t ra[4] = {1, 1, 1, 1}, rb[4] = {1, 1, 1, 1};
  for (int32_t i = 0; i < m; ++i) {
    ra[4 - m + i] = a[i];
    rb[4 - m + i] = b[i];
  }
  v->da = {ra[0], ra[1], ra[2], ra[3]};
  v->db = {rb[0], rb[1], rb[2], rb[3]};
  v->dout = {ra[0] > rb[0] ? ra[0] : rb[0], ra[1] > rb[1] ? ra[1] : rb[1], ra[2] > rb[2] ? ra[2] : rb[2],
             ra[3] > rb[3] ? ra[3] : rb[3]};
  return true;
}

// cortex_m::minimum.out / maximum.out (self, other, out): fills *v when
// CMSIS-NN computes the instruction exactly (else the portable kernel's case,
// including its errors).
inline bool minmax_cmsis_case(const KernelContext& ctx, MinMaxView* v) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(1), out = ctx.tensor(2);
  if (!is_int8(a) || !is_int8(b) || !is_int8(out) || out.numel <= 0) return false;
  if (!valid_dim_order(a) || !valid_dim_order(b) || !valid_dim_order(out) || !broadcast_shape_matches(a, b, out)) {
    return false;
  }
  if (!disjoint_or_same(a, out) || !disjoint_or_same(b, out)) return false;
  int32_t sa[kMaxDims], sb[kMaxDims];
  if (!sizes_in_order_of(a, out, sa) || !sizes_in_order_of(b, out, sb)) return false;
  if (!canonical_minmax_dims(sa, sb, out.dim, v)) return false;
  v->a = a.i8();
  v->b = b.i8();
  v->out = out.i8();
  return true;
}

// The flat case, prepared at load: each operand has one element or the
// output's shape and memory order, so the canonical shapes are (1,1,1,numel).
inline bool minmax_flat_case(const KernelContext& ctx) {
  const TensorRef a = ctx.tensor(0), b = ctx.tensor(1), out = ctx.tensor(2);
  return (a.numel == 1 || same_layout(a, out)) && (b.numel == 1 || same_layout(b, out));
}

inline MinMaxView prepared_minmax_view(const KernelContext& ctx) {
  const DecodedValue& a = ctx.decoded(0);
  const DecodedValue& b = ctx.decoded(1);
  const DecodedValue& out = ctx.decoded(2);
  return {static_cast<const int8_t*>(a.data), static_cast<const int8_t*>(b.data), static_cast<int8_t*>(out.data),
          {1, 1, 1, a.numel}, {1, 1, 1, b.numel}, {1, 1, 1, out.numel}};
}

}  // namespace kernels
}  // namespace mcu
