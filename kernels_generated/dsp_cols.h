// ---------------------------------------------------------------------------
// A convolution (groups 1, kCin % 4 == 0, kOW even) on the two-row smmlar GEMM without gathered windows
// (mcu_gen/backends/generated/dsp_conv_cols.py): per chunk of up to kChunk output pixels of one output row, the
// input columns their windows read are widened once, straight from the input rows, into `cols_at` (kKH window
// rows of kRowWords words: per input column, per 4 channels SXTB16 x and SXTB16 x, ROR #8; columns outside the
// input and rows outside it hold the input zero point, so that x + input_offset = 0 there as the folded init
// assumes); then `fn` runs the chunk's pixels in pairs, window j of a pair at column kx + j * kSW.
// `rows` as for conv_stream: each input row's address, and the saving of rows an output overwrites
// (before_write runs after the chunk's columns are widened, before its outputs are written).

// Widens `words` input words at s (4 channels each) into 2 * words words at d. On DSP cores 4 words per
// iteration with each load but the second followed by a store (estimated M33 cycles: 25 per 4 words).
inline void widen_words(const int8_t* s, uint32_t* d, int32_t words) {
#if defined(__ARM_FEATURE_DSP)
  if (words >= 4) {
    const int8_t* const end = s + (words & ~3) * 4;
    uint32_t a, b, c, t;
    __asm__ volatile(
        "1:\n\t"
        "ldr    %[a], [%[s]], #16\n\t"
        "ldr    %[b], [%[s], #-12]\n\t"
        "sxtb16 %[t], %[a]\n\t"
        "sxtb16 %[a], %[a], ror #8\n\t"
        "str    %[t], [%[d]], #32\n\t"
        "ldr    %[c], [%[s], #-8]\n\t"
        "str    %[a], [%[d], #-28]\n\t"
        "sxtb16 %[t], %[b]\n\t"
        "sxtb16 %[b], %[b], ror #8\n\t"
        "str    %[t], [%[d], #-24]\n\t"
        "ldr    %[a], [%[s], #-4]\n\t"
        "str    %[b], [%[d], #-20]\n\t"
        "sxtb16 %[t], %[c]\n\t"
        "sxtb16 %[c], %[c], ror #8\n\t"
        "str    %[t], [%[d], #-16]\n\t"
        "str    %[c], [%[d], #-12]\n\t"
        "sxtb16 %[t], %[a]\n\t"
        "sxtb16 %[a], %[a], ror #8\n\t"
        "str    %[t], [%[d], #-8]\n\t"
        "str    %[a], [%[d], #-4]\n\t"
        "cmp    %[s], %[end]\n\t"
        "bne    1b\n\t"
        : [s] "+r"(s), [d] "+r"(d), [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [t] "=&r"(t)
        : [end] "r"(end)
        : "cc", "memory");
    words &= 3;
  }
#endif
  for (; words >= 2; words -= 2, s += 8, d += 4) {
    const uint32_t a = load32(s), b = load32(s + 4);
    d[0] = sxtb16(a);
    d[1] = sxtb16_ror8(a);
    d[2] = sxtb16(b);
    d[3] = sxtb16_ror8(b);
  }
  if (words) {
    const uint32_t a = load32(s);
    d[0] = sxtb16(a);
    d[1] = sxtb16_ror8(a);
  }
}

inline void fill_words(uint32_t* d, int32_t words, uint32_t v) {
  for (int32_t i = 0; i < words; ++i) d[i] = v;
}

template <int32_t kH, int32_t kW, int32_t kCin, int32_t kKH, int32_t kKW, int32_t kSH, int32_t kSW, int32_t kPH,
          int32_t kPW, int32_t kOH, int32_t kOW, int32_t kN, int8_t kZeroPoint, int32_t kChunk, class Rows>
__attribute__((noinline)) void conv_cols(Rows rows, int8_t* out, const GemmDesc& d, GemmFn fn, int8_t* cols_at) {
  static_assert(kCin % 4 == 0 && kOW % 2 == 0 && kChunk % 2 == 0, "the generator emits these only");
  constexpr int32_t kColWords = kCin / 2;                          // one input column, widened
  constexpr int32_t kRowWords = ((kChunk - 1) * kSW + kKW) * kColWords;  // one window row of a full chunk
  constexpr uint32_t kPad = pair(kZeroPoint, kZeroPoint);
  uint32_t* const cols = static_cast<uint32_t*>(__builtin_assume_aligned(cols_at, 4));
  int32_t p = 0;
  for (int32_t oy = 0; oy < kOH; ++oy) {
    for (int32_t ox = 0; ox < kOW; ox += kChunk) {
      const int32_t q = kOW - ox < kChunk ? kOW - ox : kChunk;
      const int32_t ix0 = ox * kSW - kPW;
      const int32_t ncols = (q - 1) * kSW + kKW;
      // the columns inside the input: [lo, hi) of the chunk's ncols
      const int32_t lo = ix0 < 0 ? -ix0 : 0;
      const int32_t hi = kW - ix0 < ncols ? kW - ix0 : ncols;
      for (int32_t ky = 0; ky < kKH; ++ky) {
        uint32_t* const dst = cols + ky * kRowWords;
        const int32_t iy = oy * kSH - kPH + ky;
        if (iy < 0 || iy >= kH) {
          fill_words(dst, ncols * kColWords, kPad);
          continue;
        }
        fill_words(dst, lo * kColWords, kPad);
        widen_words(rows.row(iy) + (ix0 + lo) * kCin, dst + lo * kColWords, (hi - lo) * (kCin / 4));
        fill_words(dst + hi * kColWords, (ncols - hi) * kColWords, kPad);
      }
      rows.before_write(p, p + q);
      fn(reinterpret_cast<const int8_t*>(cols), &d, out + p * kN, q, nullptr);
      p += q;
    }
  }
}

// The GEMM of conv_cols' pixels where the assembly is not (the host tests, cores without DSP): each window
// rebuilt from the widened columns, then gemm_stream_c.
template <int32_t kK, bool kTail, int32_t kActMin, int32_t kActMax, int32_t kN, int32_t kCin, int32_t kKW, int32_t kSW,
          int32_t kRowBytes>
void gemm_cols_c(const int8_t* cols, const GemmDesc* d, int8_t* y, int32_t pixels, int16_t* /*wide*/) {
  int8_t window[kK];
  for (int32_t p = 0; p < pixels; ++p, y += kN) {
    const int8_t* const pair = cols + (p / 2) * 4 * kSW * kCin;
    for (int32_t k = 0; k < kK; k += 4) {
      const int32_t tap = k / kCin, c = k % kCin;
      const int32_t off = (tap / kKW) * kRowBytes + (tap % kKW + (p % 2) * kSW) * kCin * 2 + c * 2;
      narrow_group(window + k, load32(pair + off), load32(pair + off + 4));
    }
    gemm_stream_c<kK, kTail, kActMin, kActMax>(window, d, y, 1, nullptr);
  }
}
