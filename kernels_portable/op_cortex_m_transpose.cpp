// mcu-gen-kernel: op=cortex_m::transpose.out fn=cortex_m_transpose_out sig=TLOO dtypes=int8
//
// cortex_m::transpose.out(Tensor input, int[] perm, *, Tensor(a!) out)
// out = input.permute(perm) (logical dims; out.size(d) == input.size(perm[d])),
// written in out's dim_order. Any rank up to 8; int8 (1-byte) elements.
#include "int8_common.h"

namespace mcu {
namespace kernels {

Error cortex_m_transpose_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList perm = ctx.int_list(1);
  const TensorRef out = ctx.tensor(2);
  if (!is_int8(in) || !is_int8(out) || in.dim != out.dim || perm.size() != in.dim) return Error::KernelFailed;
  if (!valid_dim_order(in) || !valid_dim_order(out) || in.data == out.data) return Error::KernelFailed;
  int32_t in_strides[kMaxDims];
  memory_strides(in, in_strides);
  StridedWalk walk;
  walk.init(out);
  uint32_t seen = 0;
  for (int32_t d = 0; d < in.dim; ++d) {
    int64_t p = perm[d];
    if (p < 0) p += in.dim;
    if (p < 0 || p >= in.dim || (seen & (1u << p)) != 0) return Error::KernelFailed;
    seen |= 1u << p;
    if (out.size(d) != in.size(static_cast<int32_t>(p))) return Error::KernelFailed;
    walk.stride_a[d] = in_strides[p];
  }
  const int8_t* x = in.i8();
  int8_t* y = out.i8();
  if (out.numel == 0) return Error::Ok;
  if (out.dim == 0) {
    y[0] = x[0];
    return Error::Ok;
  }
  // Tiles of the output's two innermost memory dims of more than one element (dims of size 1 between and after
  // them change nothing): `rows` rows of `n`, a row one copy (the input's stride 1) or one loop of loads at the
  // input's stride, or, where the rows are shorter than the tile is tall, one loop down each column; then the walk
  // steps to the next tile. A channel shuffle's rows are 2 elements long: a tile of C / 2 of them makes the walk's
  // step (an index per dim) rare, and its columns are C / 2 long.
  int32_t p = out.dim - 1;
  while (p > 0 && out.size(walk.order[p]) == 1) --p;
  int32_t q = p - 1;
  while (q > 0 && out.size(walk.order[q]) == 1) --q;
  const int32_t inner = walk.order[p];
  const int32_t outer = q >= 0 ? walk.order[q] : inner;
  const int32_t n = out.size(inner);
  const int32_t rows = outer != inner ? out.size(outer) : 1;
  const int32_t step = walk.stride_a[inner];
  const int32_t row_step = outer != inner ? walk.stride_a[outer] : 0;
  for (int32_t i = 0; i < out.numel; i += rows * n) {
    const int8_t* src = x + walk.offset_a;
    int8_t* dst = y + i;
    if (n >= rows || step == 1) {
      for (int32_t r = 0; r < rows; ++r, src += row_step, dst += n) {
        if (step == 1) {
          memcpy(dst, src, static_cast<size_t>(n));
        } else {
          for (int32_t j = 0; j < n; ++j) dst[j] = src[j * step];
        }
      }
    } else {  // rows shorter than the tile is tall (a shuffle's 2): down the columns, the longer loop inside
      for (int32_t j = 0; j < n; ++j, src += step, ++dst) {
        for (int32_t r = 0; r < rows; ++r) dst[r * n] = src[r * row_step];
      }
    }
    walk.index[inner] = n - 1;  // the tile's last element, then one step on
    walk.offset_a += step * (n - 1);
    if (outer != inner) {
      walk.index[outer] = rows - 1;
      walk.offset_a += row_step * (rows - 1);
    }
    walk.next();
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
