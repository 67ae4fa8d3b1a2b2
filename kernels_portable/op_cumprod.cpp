// mcu-gen-kernel: op=aten::cumprod.out fn=aten_cumprod_out sig=TIiOO dtypes=float32,uint8,int8,int16,int32,int64,bool
// aten::cumprod.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
// Running product along dim in out's dtype (int64 for integer and bool inputs
// unless `dtype` says otherwise, as in ATen); integer products wrap.
// Float products are float32 (ATen's CPU kernel keeps a double running value:
// equal within fp32 tolerance). Compiled without fp-contract, as op_cumsum.cpp.
#pragma GCC optimize("fp-contract=off")
#include "scan_common.h"

namespace mcu {
namespace kernels {

namespace {

// y[i] = x[0] * ... * x[i] along each line of `r`, in Acc (out's C type).
template <typename Acc>
void running_product(const Reduction& r, LoadFn<Acc> load, const void* x, Acc* y) {
  r.for_each_output([&](int32_t, int32_t base) {
    Acc product = Acc(1);
    r.for_each_reduced(base, [&](int32_t offset, int32_t) {
      product = wrapping_mul(product, load(x, offset));
      y[offset] = product;
    });
  });
}

}  // namespace

Error aten_cumprod_out(const KernelContext& ctx) {
  constexpr DTypeSet kSet = selected::aten_cumprod_out & kAllTypes;
  const TensorRef in = ctx.tensor(0);
  const TensorRef out = ctx.tensor(3);
  if (!ctx.is_none(2) && ctx.int_arg(2) != static_cast<int64_t>(out.dtype)) return Error::KernelFailed;
  Reduction r;
  if (!init_scan(r, ctx, 1, in, out)) return Error::KernelFailed;
  bool ok = false;
  dispatch_dtype<kSet & kRealTypes>(out.dtype, [&](auto tag) {
    using Acc = decltype(tag);
    const LoadFn<Acc> load = loader<kSet, Acc>(in.dtype);
    if (load == nullptr) return;
    running_product<Acc>(r, load, in.data, static_cast<Acc*>(out.data));
    ok = true;
  });
  return ok ? Error::Ok : Error::KernelFailed;
}

}  // namespace kernels
}  // namespace mcu
