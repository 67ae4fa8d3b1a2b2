// mcu-gen-kernel: op=aten::roll.out fn=aten_roll_out sig=TLLOO dtypes=float32,int8,uint8,int16,int32,int64,bool
// aten::roll.out(Tensor self, SymInt[1] shifts, int[1] dims=[], *, Tensor(a!) out) -> Tensor(a!)
// out[(i + shift) mod n] = self[i] along each dim of `dims` (negative dims count
// from the end; a dim listed twice rolls by the sum). No dims: self is rolled as
// one flat row by the single shift. Rows of the last dim move as two blocks.
#include "elementwise_common.h"

namespace mcu {
namespace kernels {

namespace {

// shift mod n in [0, n), for n > 0.
int32_t wrap_shift(int64_t shift, int32_t n) {
  int64_t s = shift % n;
  if (s < 0) s += n;
  return static_cast<int32_t>(s);
}

}  // namespace

Error aten_roll_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const IntList shifts = ctx.int_list(1);
  const IntList dims = ctx.int_list(2);
  const TensorRef out = ctx.tensor(3);
  if (!copyable_pair(in, out) || !in.same_shape(out)) return Error::KernelFailed;
  if (shifts.size() == 0 || (dims.size() == 0 ? shifts.size() != 1 : dims.size() != shifts.size()))
    return Error::KernelFailed;
  for (int32_t k = 0; k < dims.size(); ++k) {
    int32_t d = 0;
    if (!wrap_dim(dims[k], in.dim, &d)) return Error::KernelFailed;
  }
  if (in.numel == 0) return Error::Ok;
  if (in.data == out.data) return Error::KernelFailed;
  // Rows of `cols` elements; each row's dims (all but the last, or none when flat).
  const bool flat = dims.size() == 0 || in.dim == 0;
  const int32_t nd = flat ? 0 : in.dim - 1;
  const int32_t cols = flat ? in.numel : in.sizes[in.dim - 1];
  int32_t shift[kMaxDims] = {};  // per dim, in [0, size)
  int32_t col_shift = 0;
  if (flat) {
    col_shift = wrap_shift(shifts[0], cols);
  } else {
    for (int32_t k = 0; k < dims.size(); ++k) {
      int32_t d = 0;
      wrap_dim(dims[k], in.dim, &d);
      const int32_t s = wrap_shift(shifts[k], in.sizes[d]);
      if (d == in.dim - 1) col_shift = wrap_shift(static_cast<int64_t>(col_shift) + s, cols);
      else shift[d] = wrap_shift(static_cast<int64_t>(shift[d]) + s, in.sizes[d]);
    }
  }
  int32_t strides[kMaxDims] = {};
  if (!flat) contiguous_strides(in.sizes, in.dim, strides);
  const size_t esize = element_size(in);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  const size_t head = static_cast<size_t>(cols - col_shift) * esize;  // self's row [0, cols - shift)
  const size_t tail = static_cast<size_t>(col_shift) * esize;         // self's row [cols - shift, cols)
  int32_t pos[kMaxDims] = {};  // output row position
  const int32_t rows = in.numel / cols;
  for (int32_t r = 0; r < rows; ++r) {
    int32_t from = 0;  // element offset of the source row
    for (int32_t d = 0; d < nd; ++d) {
      int32_t p = pos[d] - shift[d];
      if (p < 0) p += in.sizes[d];
      from += p * strides[d];
    }
    const uint8_t* row = src + static_cast<size_t>(from) * esize;
    uint8_t* to = dst + static_cast<size_t>(r) * cols * esize;
    memcpy(to, row + head, tail);
    memcpy(to + tail, row, head);
    for (int32_t d = nd - 1; d >= 0; --d) {
      if (++pos[d] < in.sizes[d]) break;
      pos[d] = 0;
    }
  }
  return Error::Ok;
}

}  // namespace kernels
}  // namespace mcu
