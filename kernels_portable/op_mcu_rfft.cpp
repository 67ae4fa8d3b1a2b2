// mcu-gen-kernel: op=mcu::rfft.out fn=mcu_rfft_out sig=TTIDOO dtypes=float32
//
// mcu::rfft.out(Tensor self, Tensor twiddle, int n_out, float scale, *, Tensor(a!) out) -> Tensor(a!)
// The DFT of a real float32 input along its last dimension (length N), as (real, imaginary) pairs:
//   out[..., k, :] = scale * sum_n self[..., n] * e^(-2 pi i k n / N),  k < n_out,
// n_out = N / 2 + 1 (torch.fft.rfft) or N (torch.fft.fft of a real input). `twiddle` [N, 2] holds
// (cos(2 pi j / N), -sin(2 pi j / N)), computed at build time (mcu_gen/capture/complex_to_real.py), so
// the kernel needs no libm.
// N a power of two (>= 2): the N/2-point complex FFT of the pairs (x[2m], x[2m+1]), in place in out's
// first N/2 pairs (bit-reversal permutation, then radix-2 butterflies), then the split into the
// spectrum of the real input; the two-sided upper half is the conjugate mirror. Other N: the direct sum
// (N * n_out multiply-adds per row), twiddle index (k n) mod N.
#include "mcu/kernel.h"

// Every product rounded before its sum (no fused multiply-add): the host build, the device and the
// host's integer-program reference (reference/fp32_emulation.py: rfft_f32) compute the same bits.
#pragma GCC optimize("fp-contract=off")

namespace mcu::kernels {

namespace {

struct Cpx {
  float re, im;
};

inline Cpx mul(Cpx a, Cpx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }

void fft_pairs(Cpx* z, int32_t m, const Cpx* tw, int32_t n) {
  for (int32_t i = 1, j = 0; i < m; ++i) {  // bit-reversal permutation
    int32_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      const Cpx t = z[i];
      z[i] = z[j];
      z[j] = t;
    }
  }
  for (int32_t len = 2; len <= m; len <<= 1) {
    const int32_t half = len >> 1, step = n / len;  // e^(-2 pi i j / len) = twiddle[j * n / len]
    for (int32_t i = 0; i < m; i += len) {
      for (int32_t j = 0; j < half; ++j) {
        const Cpx u = z[i + j];
        const Cpx v = mul(z[i + j + half], tw[j * step]);
        z[i + j] = {u.re + v.re, u.im + v.im};
        z[i + j + half] = {u.re - v.re, u.im - v.im};
      }
    }
  }
}

// X[k] from Z = FFT of the pairs: E = (Z[k] + conj Z[m-k]) / 2, O = -i (Z[k] - conj Z[m-k]) / 2,
// X[k] = E + w^k O.
inline Cpx split(Cpx a, Cpx c, Cpx w) {
  const Cpx e = {0.5f * (a.re + c.re), 0.5f * (a.im - c.im)};
  const Cpx o = {0.5f * (a.im + c.im), -0.5f * (a.re - c.re)};
  const Cpx wo = mul(w, o);
  return {e.re + wo.re, e.im + wo.im};
}

void rfft_pow2(const float* x, Cpx* out, int32_t n, const Cpx* tw) {
  const int32_t m = n / 2;
  for (int32_t i = 0; i < m; ++i) out[i] = {x[2 * i], x[2 * i + 1]};
  fft_pairs(out, m, tw, n);
  const Cpx z0 = out[0];
  for (int32_t k = 1; 2 * k <= m; ++k) {
    const Cpx a = out[k], c = out[m - k];
    out[k] = split(a, c, tw[k]);
    if (2 * k != m) out[m - k] = split(c, a, tw[m - k]);
  }
  out[0] = {z0.re + z0.im, 0.0f};
  out[m] = {z0.re - z0.im, 0.0f};
}

void dft_direct(const float* x, Cpx* out, int32_t n, int32_t n_out, const Cpx* tw) {
  for (int32_t k = 0; k < n_out; ++k) {
    float re = 0.0f, im = 0.0f;
    int32_t idx = 0;
    for (int32_t i = 0; i < n; ++i) {
      re += x[i] * tw[idx].re;
      im += x[i] * tw[idx].im;
      idx += k;
      if (idx >= n) idx -= n;
    }
    out[k] = {re, im};
  }
}

}  // namespace

Error mcu_rfft_out(const KernelContext& ctx) {
  const TensorRef in = ctx.tensor(0);
  const TensorRef tw = ctx.tensor(1);
  const TensorRef out = ctx.tensor(4);
  const int64_t n_out = ctx.int_arg(2);
  const float scale = static_cast<float>(ctx.double_arg(3));
  if (in.dtype != DType::Float || tw.dtype != DType::Float || out.dtype != DType::Float) return Error::KernelFailed;
  if (!in.is_contiguous() || !out.is_contiguous() || in.dim < 1 || out.dim != in.dim + 1) return Error::KernelFailed;
  const int32_t n = in.size(in.dim - 1);
  if (n < 1 || tw.dim != 2 || tw.size(0) != n || tw.size(1) != 2) return Error::KernelFailed;
  if (n_out != n && n_out != n / 2 + 1) return Error::KernelFailed;
  for (int32_t d = 0; d + 1 < in.dim; ++d) {
    if (out.size(d) != in.size(d)) return Error::KernelFailed;
  }
  if (out.size(in.dim - 1) != n_out || out.size(in.dim) != 2) return Error::KernelFailed;
  const int32_t rows = in.numel / n;  // n >= 1
  const int32_t k_out = static_cast<int32_t>(n_out);
  const Cpx* w = static_cast<const Cpx*>(tw.data);
  const bool pow2 = n >= 2 && (n & (n - 1)) == 0;
  for (int32_t r = 0; r < rows; ++r) {
    const float* x = in.f32() + static_cast<int64_t>(r) * n;
    Cpx* y = reinterpret_cast<Cpx*>(out.f32()) + static_cast<int64_t>(r) * k_out;
    if (pow2) {
      rfft_pow2(x, y, n, w);
      for (int32_t k = n / 2 + 1; k < k_out; ++k) y[k] = {y[n - k].re, -y[n - k].im};  // two-sided
    } else {
      dft_direct(x, y, n, k_out, w);
    }
    if (scale != 1.0f) {
      for (int32_t k = 0; k < k_out; ++k) y[k] = {y[k].re * scale, y[k].im * scale};
    }
  }
  return Error::Ok;
}

}  // namespace mcu::kernels
