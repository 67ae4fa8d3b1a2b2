// mcu-gen-kernel: op=aten::addmm.out fn=aten_addmm_out sig=TTTSSOO dtypes=float32,uint8,int8,int16,int32,int64
//
// aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1,
//     Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to [M, N]
// (shapes [], [N], [1, N], [M, 1], [M, N], ...); with beta == 0 it is ignored.
// Integer tensors compute in their dtype, wrapping (int_matrix.h), beta and alpha converted to it.
#include <stddef.h>

#include "f32_matrix.h"
#include "int_matrix.h"

namespace mcu::kernels {

namespace {

// Strides (0 when broadcast) of `self` along the rows and columns of [M, N].
bool broadcast_strides(const TensorRef& self, int32_t m, int32_t n, int32_t* row_stride, int32_t* col_stride) {
  if (self.dim > 2) return false;
  const int32_t rows = self.dim == 2 ? self.size(0) : 1;
  const int32_t cols = self.dim >= 1 ? self.size(self.dim - 1) : 1;
  if ((rows != 1 && rows != m) || (cols != 1 && cols != n)) return false;
  *col_stride = cols == 1 ? 0 : 1;
  *row_stride = rows == 1 ? 0 : cols;
  return true;
}

// out = beta * self + alpha * (a @ b) of one integer dtype (checked: same dtype, contiguous).
template <DTypeSet Set>
Error addmm_int(const TensorRef& self, const TensorRef& a, const TensorRef& b, const TensorRef& out, Scalar beta,
                Scalar alpha) {
  if (a.dim != 2 || b.dim != 2 || out.dim != 2 || self.dtype != a.dtype || !self.is_contiguous()) {
    return Error::KernelFailed;
  }
  const int32_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (b.size(0) != k || out.size(0) != m || out.size(1) != n) return Error::KernelFailed;
  int32_t rs = 0, cs = 0;
  if (!broadcast_strides(self, m, n, &rs, &cs) || self.data == out.data) return Error::KernelFailed;
  if (!batch_matmul_int<Set>(a, b, out, 1, m, k, n)) return Error::KernelFailed;
  dispatch_dtype<Set>(out.dtype, [&](auto zero) {
    using C = decltype(zero);
    const C be = scalar_as<C>(beta);
    const C al = scalar_as<C>(alpha);
    const C* s = static_cast<const C*>(self.data);
    C* o = static_cast<C*>(out.data);
    for (int32_t r = 0; r < m; ++r) {
      for (int32_t j = 0; j < n; ++j) {
        C v = wrapping_mul(al, o[static_cast<size_t>(r) * n + j]);
        if (be != C(0)) v = wrapping_add(v, wrapping_mul(be, s[static_cast<size_t>(r) * rs + j * cs]));
        o[static_cast<size_t>(r) * n + j] = v;
      }
    }
  });
  return Error::Ok;
}

}  // namespace

Error aten_addmm_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_addmm_out & kIntTypes;
  TensorRef self = ctx.tensor(0);
  TensorRef a = ctx.tensor(1);
  TensorRef b = ctx.tensor(2);
  TensorRef out = ctx.tensor(5);
  if constexpr (kSet != 0) {  // integer matrices only in a program that has them
    if (a.dtype != DType::Float) return addmm_int<kSet>(self, a, b, out, ctx.scalar(3), ctx.scalar(4));
  }
  const float beta = static_cast<float>(ctx.scalar_arg(3));
  const float alpha = static_cast<float>(ctx.scalar_arg(4));
  if (!is_f32_contiguous(self) || !is_f32_contiguous(a) || !is_f32_contiguous(b) || !is_f32_contiguous(out)) {
    return Error::KernelFailed;
  }
  if (a.dim != 2 || b.dim != 2 || out.dim != 2) return Error::KernelFailed;
  const int32_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (b.size(0) != k || out.size(0) != m || out.size(1) != n) return Error::KernelFailed;
  int32_t rs = 0, cs = 0;
  if (!broadcast_strides(self, m, n, &rs, &cs)) return Error::KernelFailed;
  const float* s = self.f32();
  float* o = out.f32();
  matmul_f32(a.f32(), b.f32(), o, m, k, n);
  for (int32_t r = 0; r < m; ++r) {
    float* orow = o + static_cast<size_t>(r) * n;
    const float* srow = s + static_cast<size_t>(r) * rs;
    for (int32_t j = 0; j < n; ++j) {
      float v = alpha == 1.0f ? orow[j] : alpha * orow[j];
      if (beta != 0.0f) v += beta * srow[j * cs];
      orow[j] = v;
    }
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
