// Register-blocked fp32 forward convolution (issue 27; docs/fp32_kernels.md),
// used by aten::convolution (1-D and 2-D, grouped, depthwise) and mcu::conv2d.
//
// Output-stationary: a block of OB output channels x PB output pixels of one
// output row is held in OB*PB float accumulators (FPU registers on an M33/M4F/M55)
// for the whole reduction, so every output is stored once and never reloaded, and
// each loaded input value is used by OB output channels (and, for a kernel row of
// KW taps held in registers, by up to KW taps). Blocks: 4 channels x 4 pixels for
// convolutions with several output channels per group, 1 channel x 8 pixels for
// depthwise convolutions and channel tails. A 1x1 convolution's 4x4 block runs in
// assembly on FPU cores without MVE (VLDM) and with MVE-F intrinsics on the M55; a
// 3x3 stride-1 one's (with bias, clamp and stores, 4-, 3- and 2-pixel forms on the
// M33/M4F) in assembly on both.
//
// Paths per output row: the interior columns (every tap inside the input) in
// blocks, a tail shorter than a block as one more block overlapping the one
// before, the border columns per pixel with their tap range; or, where a row has
// padding columns and the rows fit 1 KB, "padded rows": the kernel rows of every
// input channel copied into a stack buffer with zero columns, every pixel then in
// blocks (the last one partial).
//
// Summation order (the reference order; every path below follows it, so a result
// does not depend on which path or block an output fell into):
//     acc = bias[oc] (0 without bias)
//     for ic in the group's input channels, ascending
//       for kh ascending, for kw ascending, over the taps inside the input
//         acc = acc + (w[oc][ic][kh][kw] * x)      -- product rounded, then sum rounded
//     out = clamp(acc, lo, hi)
// The product and the sum are two IEEE single operations (no fused multiply-add:
// fp-contract is off here; the MVE path uses VMUL + VADD too): 1 + 1 cycles in the
// Cortex-M4 TRM's FPU table against 3 for VFMA/VMLA, and what the host computes,
// so the host runner and the devices agree bit for bit (tests/test_fp32_fast.py).
// Taps in the padding are skipped on the per-pixel path and multiplied by +0 on
// the padded-rows path: the same result except for inf/NaN weights (and the sign
// of an all-zero sum).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "conv_common.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <arm_mve.h>
#endif

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off", "no-schedule-insns", "no-tree-loop-distribute-patterns")

namespace mcu::kernels::f32fast {

struct Conv {
  const float* in;      // batch n, first input channel of the group
  const float* weight;  // first output channel of the block
  const float* bias;    // null: 0
  float* out;           // batch n, first output channel of the block
  int32_t cin_g, in_plane, in_w, out_plane, out_w;
  int32_t ic_step, row_step;  // between the input channels / kernel rows a block reads
  int32_t taps, kernel_w, stride_w, dil_w, dil_h, pad_w;
  float lo, hi;  // the clamp; -inf, +inf for none
  bool exact_tail;  // a row's last 2-3 interior pixels as one partial block (3x3 assembly)
};

// clamp(v, lo, hi) for lo <= hi, NaN kept: two compare-and-selects (VSEL on fpv5).
inline float clamp1(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// Stores the first n pixels of a block, clamped (an unclamped convolution has
// lo = -inf, hi = +inf: clamp1 is then the identity, NaN included). Constant
// indices only, so that GCC keeps `acc` in registers; one store sequence per
// block shape (flash).
template <int OB, int PB>
inline void store_block(const Conv& c, float* o, const float (&acc)[OB][PB], int32_t n = PB) {
  const float lo = c.lo, hi = c.hi;
#pragma GCC unroll 4
  for (int q = 0; q < OB; ++q) {
#pragma GCC unroll 8
    for (int p = 0; p < PB; ++p) {
      if (p < n) o[q * c.out_plane + p] = clamp1(acc[q][p], lo, hi);
    }
  }
}

// One kernel row of KW taps (dilation 1, stride S) over PB pixels: the
// (PB - 1) * S + KW inputs it reads are loaded once.
template <int OB, int PB, int KW, int S>
struct RowFixed {
  static constexpr bool kPointwise4x4 = OB == 4 && PB == 4 && KW == 1 && S == 1;
  static constexpr bool kOneTap = KW == 1;
  static constexpr bool kConv3x3 = OB == 4 && PB == 4 && KW == 3 && S == 1;
  static inline void run(float (&acc)[OB][PB], const float* x, const float* w, int32_t w_oc, const Conv&) {
    constexpr int kN = (PB - 1) * S + KW;
    float xr[kN];
#pragma GCC unroll 32
    for (int j = 0; j < kN; ++j) xr[j] = x[j];
#pragma GCC unroll 8
    for (int k = 0; k < KW; ++k) {
#pragma GCC unroll 4
      for (int q = 0; q < OB; ++q) {
        const float wv = w[q * w_oc + k];
#pragma GCC unroll 8
        for (int p = 0; p < PB; ++p) acc[q][p] = acc[q][p] + wv * xr[p * S + k];
      }
    }
  }
};

// Any kernel width, stride and dilation: PB inputs loaded per tap.
template <int OB, int PB>
struct RowAny {
  static constexpr bool kPointwise4x4 = false;
  static constexpr bool kOneTap = false;
  static constexpr bool kConv3x3 = false;
  static inline void run(float (&acc)[OB][PB], const float* x, const float* w, int32_t w_oc, const Conv& c) {
    const int32_t s = c.stride_w, d = c.dil_w;
    for (int32_t k = 0; k < c.kernel_w; ++k) {
      float xr[PB];
#pragma GCC unroll 8
      for (int p = 0; p < PB; ++p) xr[p] = x[p * s + k * d];
#pragma GCC unroll 4
      for (int q = 0; q < OB; ++q) {
        const float wv = w[q * w_oc + k];
#pragma GCC unroll 8
        for (int p = 0; p < PB; ++p) acc[q][p] = acc[q][p] + wv * xr[p];
      }
    }
  }
};

// Arguments of the 3x3 stride-1 assembly blocks below (the M33/M4F and the M55 forms).
struct Conv3x3Args {
  const float* x;      // input of kernel row 0, input channel 0, the first block's first pixel
  const float* w;      // w[oc0][0][0][0]
  const float* bias;   // 4 values (zeros without bias)
  float* out;          // output of oc0, the first block's first pixel
  int32_t w_oc;        // bytes between output channels' weights
  int32_t out_plane;   // bytes between output channels' planes
  int32_t row_step;    // bytes between kernel rows' inputs
  int32_t ic_adj;      // bytes from the third kernel row to the next channel's first: ic_step - 3 row_step
  int32_t cin;         // input channels (>= 1)
  int32_t blocks;      // >= 1
  int32_t clamp;       // bit 0: clamp below at lo, bit 1: above at hi
  float lo, hi;
};
#if defined(__arm__)
static_assert(offsetof(Conv3x3Args, w_oc) == 16 && offsetof(Conv3x3Args, blocks) == 36 &&
                  offsetof(Conv3x3Args, hi) == 48,
              "the assembly reads Conv3x3Args at these offsets");
#endif

// Arguments of the conv -> clamp -> 2x2 max pool blocks (conv3x3_pool_rows, conv3x3_pool_mve).
struct ConvPool3x3Args {
  Conv3x3Args c;  // out: the pooled output of oc0; out_plane: bytes between pooled planes
#if defined(__ARM_FEATURE_MVE)
  float spill[16];  // row 2r's horizontal maxima: 4 vectors
#else
  float spill[8];  // row 2r's horizontal maxima: 8 values
#endif
};
#if defined(__arm__)
static_assert(offsetof(ConvPool3x3Args, spill) == 52, "the assembly reads the spill area at offset 52");
#endif

// Not on MVE cores: there GCC 12 vectorizes the C block (VMUL/VADD.F32 on 4 pixels),
// which the scalar assembly is slower than (M55 KWS 14.1 M -> 15.1 M estimated cycles).
#if defined(__arm__) && defined(__ARM_FP) && !defined(__ARM_FEATURE_MVE)
#define MCU_F32_POINTWISE_ASM 1
// 4 output channels x 4 pixels of a 1x1 convolution over `pairs` pairs of input
// channels, in assembly: GCC 12 neither forms VLDM from the C loop nor keeps 16
// accumulators and the loads in registers without spilling. Per pair of input
// channels: 4 VLDM of a weight pair (w[oc][ic], w[oc][ic + 1]), 2 VLDM of 4
// inputs, 32 VMUL + 32 VADD into s16-s31 (loaded from and stored to `acc` once
// per call; 4 product registers in rotation, so no add reads the product of the
// instruction just before it): 4 x 3 + 2 x 5 + 64 + loop ~ 92 cycles per 32
// MACs by the M4 table, against ~108 for the C loop (a VLDR per value). Same
// order as the C path: ic, then ic + 1, each a rounded product and a rounded sum.
#define MCU_F32_MAC4(w, a0, a1, a2, a3)                                     \
  "vmul.f32 s12, " w ", s8\n\t"                                             \
  "vmul.f32 s13, " w ", s9\n\t"                                             \
  "vadd.f32 " a0 ", " a0 ", s12\n\t"                                        \
  "vmul.f32 s14, " w ", s10\n\t"                                            \
  "vadd.f32 " a1 ", " a1 ", s13\n\t"                                        \
  "vmul.f32 s15, " w ", s11\n\t"                                            \
  "vadd.f32 " a2 ", " a2 ", s14\n\t"                                        \
  "vadd.f32 " a3 ", " a3 ", s15\n\t"
inline void pointwise4x4_pairs(float (&acc)[4][4], const float* x, const float* w, int32_t pairs, int32_t x_step,
                               int32_t w_oc) {
  const int32_t xs = x_step * 4, ws = w_oc * 4;
  int32_t t0, t1, t2;
  float* const accp = &acc[0][0];
  asm volatile(
      "vldmia %[acc], {s16-s31}\n\t"
      "1:\n\t"
      "add %[t0], %[w], %[ws]\n\t"
      "vldmia %[w], {s0-s1}\n\t"
      "add %[t1], %[t0], %[ws]\n\t"
      "vldmia %[t0], {s2-s3}\n\t"
      "add %[t2], %[t1], %[ws]\n\t"
      "vldmia %[t1], {s4-s5}\n\t"
      "vldmia %[t2], {s6-s7}\n\t"
      "vldmia %[x], {s8-s11}\n\t"
      "add %[x], %[x], %[xs]\n\t"
      MCU_F32_MAC4("s0", "s16", "s17", "s18", "s19")
      MCU_F32_MAC4("s2", "s20", "s21", "s22", "s23")
      MCU_F32_MAC4("s4", "s24", "s25", "s26", "s27")
      MCU_F32_MAC4("s6", "s28", "s29", "s30", "s31")
      "vldmia %[x], {s8-s11}\n\t"
      "add %[x], %[x], %[xs]\n\t"
      MCU_F32_MAC4("s1", "s16", "s17", "s18", "s19")
      MCU_F32_MAC4("s3", "s20", "s21", "s22", "s23")
      MCU_F32_MAC4("s5", "s24", "s25", "s26", "s27")
      MCU_F32_MAC4("s7", "s28", "s29", "s30", "s31")
      "add %[w], %[w], #8\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "vstmia %[acc], {s16-s31}\n\t"
      : [x] "+r"(x), [w] "+r"(w), [n] "+r"(pairs), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2)
      : [xs] "r"(xs), [ws] "r"(ws), [acc] "r"(accp)
      : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
        "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
        "memory");
}
#undef MCU_F32_MAC4

// The 3x3 stride-1 block (4 output channels x 4 pixels; 3 or 2 pixels for the last
// of a row) of `blocks` consecutive blocks of one output row, in assembly, bias, clamp and stores included: per input
// channel and kernel row one VLDM of the 6 inputs the row's 3 taps read and, per
// output channel, one VLDM (with writeback) of its 3 weights -- the kernel rows of
// consecutive input channels are consecutive in OIHW when every kernel row is
// inside the input -- then 12 VMUL + 12 VADD, products in 4 registers in rotation.
// ~121 cycles per 48 MACs by the M4 table against ~160 for GCC's code of the C
// block. Same order as the C path (ic, kh, kw ascending; each product and each sum
// rounded); the clamp is clamp1's two compare-and-selects (VSELGT, NaN kept).
#define MCU_F32_MAC4R(w, x0, x1, x2, x3, a0, a1, a2, a3) \
  "vmul.f32 s6, " w ", " x0 "\n\t"                       \
  "vmul.f32 s7, " w ", " x1 "\n\t"                       \
  "vadd.f32 " a0 ", " a0 ", s6\n\t"                      \
  "vmul.f32 s14, " w ", " x2 "\n\t"                      \
  "vadd.f32 " a1 ", " a1 ", s7\n\t"                      \
  "vmul.f32 s15, " w ", " x3 "\n\t"                      \
  "vadd.f32 " a2 ", " a2 ", s14\n\t"                     \
  "vadd.f32 " a3 ", " a3 ", s15\n\t"

#define MCU_F32_TAPS4(w0, w1, w2, a0, a1, a2, a3)               \
  MCU_F32_MAC4R(w0, "s8", "s9", "s10", "s11", a0, a1, a2, a3)   \
  MCU_F32_MAC4R(w1, "s9", "s10", "s11", "s12", a0, a1, a2, a3)  \
  MCU_F32_MAC4R(w2, "s10", "s11", "s12", "s13", a0, a1, a2, a3)

#define MCU_F32_KROW4                                         \
  "vldmia %[x], {s8-s13}\n\t"                                 \
  "add %[x], %[x], %[rs]\n\t"                                 \
  "vldmia %[w0]!, {s0-s2}\n\t"                                \
  MCU_F32_TAPS4("s0", "s1", "s2", "s16", "s17", "s18", "s19") \
  "vldmia %[w1]!, {s3-s5}\n\t"                                \
  MCU_F32_TAPS4("s3", "s4", "s5", "s20", "s21", "s22", "s23") \
  "vldmia %[w2]!, {s0-s2}\n\t"                                \
  MCU_F32_TAPS4("s0", "s1", "s2", "s24", "s25", "s26", "s27") \
  "vldmia %[w3]!, {s3-s5}\n\t"                                \
  MCU_F32_TAPS4("s3", "s4", "s5", "s28", "s29", "s30", "s31")

#define MCU_F32_BIAS4                                                                         \
  "vmov.f32 s16, s0\n\t" "vmov.f32 s17, s0\n\t" "vmov.f32 s18, s0\n\t" "vmov.f32 s19, s0\n\t" \
  "vmov.f32 s20, s1\n\t" "vmov.f32 s21, s1\n\t" "vmov.f32 s22, s1\n\t" "vmov.f32 s23, s1\n\t" \
  "vmov.f32 s24, s2\n\t" "vmov.f32 s25, s2\n\t" "vmov.f32 s26, s2\n\t" "vmov.f32 s27, s2\n\t" \
  "vmov.f32 s28, s3\n\t" "vmov.f32 s29, s3\n\t" "vmov.f32 s30, s3\n\t" "vmov.f32 s31, s3\n\t"

#define MCU_F32_EACH4(M)                                                  \
  M("s16") M("s17") M("s18") M("s19") M("s20") M("s21") M("s22") M("s23") \
  M("s24") M("s25") M("s26") M("s27") M("s28") M("s29") M("s30") M("s31")

#define MCU_F32_STORE4          \
  "ldr %[x], [%[a], #12]\n\t"   \
  "ldr %[t], [%[a], #20]\n\t"   \
  "add %[w1], %[x], %[t]\n\t"   \
  "vstmia %[x]!, {s16-s19}\n\t" \
  "add %[w2], %[w1], %[t]\n\t"  \
  "vstmia %[w1], {s20-s23}\n\t" \
  "add %[w3], %[w2], %[t]\n\t"  \
  "vstmia %[w2], {s24-s27}\n\t" \
  "vstmia %[w3], {s28-s31}\n\t" \
  "str %[x], [%[a], #12]\n\t"   \
  "ldr %[x], [%[a], #0]\n\t"    \
  "adds %[x], %[x], #16\n\t"

#define MCU_F32_MAC3R(w, x0, x1, x2, a0, a1, a2) \
  "vmul.f32 s6, " w ", " x0 "\n\t"               \
  "vmul.f32 s7, " w ", " x1 "\n\t"               \
  "vadd.f32 " a0 ", " a0 ", s6\n\t"              \
  "vmul.f32 s14, " w ", " x2 "\n\t"              \
  "vadd.f32 " a1 ", " a1 ", s7\n\t"              \
  "vadd.f32 " a2 ", " a2 ", s14\n\t"

#define MCU_F32_TAPS3(w0, w1, w2, a0, a1, a2)        \
  MCU_F32_MAC3R(w0, "s8", "s9", "s10", a0, a1, a2)   \
  MCU_F32_MAC3R(w1, "s9", "s10", "s11", a0, a1, a2)  \
  MCU_F32_MAC3R(w2, "s10", "s11", "s12", a0, a1, a2)

#define MCU_F32_KROW3                                  \
  "vldmia %[x], {s8-s12}\n\t"                          \
  "add %[x], %[x], %[rs]\n\t"                          \
  "vldmia %[w0]!, {s0-s2}\n\t"                         \
  MCU_F32_TAPS3("s0", "s1", "s2", "s16", "s17", "s18") \
  "vldmia %[w1]!, {s3-s5}\n\t"                         \
  MCU_F32_TAPS3("s3", "s4", "s5", "s19", "s20", "s21") \
  "vldmia %[w2]!, {s0-s2}\n\t"                         \
  MCU_F32_TAPS3("s0", "s1", "s2", "s22", "s23", "s24") \
  "vldmia %[w3]!, {s3-s5}\n\t"                         \
  MCU_F32_TAPS3("s3", "s4", "s5", "s25", "s26", "s27")

#define MCU_F32_BIAS3                                                  \
  "vmov.f32 s16, s0\n\t" "vmov.f32 s17, s0\n\t" "vmov.f32 s18, s0\n\t" \
  "vmov.f32 s19, s1\n\t" "vmov.f32 s20, s1\n\t" "vmov.f32 s21, s1\n\t" \
  "vmov.f32 s22, s2\n\t" "vmov.f32 s23, s2\n\t" "vmov.f32 s24, s2\n\t" \
  "vmov.f32 s25, s3\n\t" "vmov.f32 s26, s3\n\t" "vmov.f32 s27, s3\n\t"

#define MCU_F32_EACH3(M)                                                  \
  M("s16") M("s17") M("s18") M("s19") M("s20") M("s21") M("s22") M("s23") \
  M("s24") M("s25") M("s26") M("s27")

#define MCU_F32_STORE3          \
  "ldr %[x], [%[a], #12]\n\t"   \
  "ldr %[t], [%[a], #20]\n\t"   \
  "add %[w1], %[x], %[t]\n\t"   \
  "vstmia %[x]!, {s16-s18}\n\t" \
  "add %[w2], %[w1], %[t]\n\t"  \
  "vstmia %[w1], {s19-s21}\n\t" \
  "add %[w3], %[w2], %[t]\n\t"  \
  "vstmia %[w2], {s22-s24}\n\t" \
  "vstmia %[w3], {s25-s27}\n\t" \
  "str %[x], [%[a], #12]\n\t"   \
  "ldr %[x], [%[a], #0]\n\t"    \
  "adds %[x], %[x], #12\n\t"

#define MCU_F32_MAC2R(w, x0, x1, a0, a1) \
  "vmul.f32 s6, " w ", " x0 "\n\t"       \
  "vmul.f32 s7, " w ", " x1 "\n\t"       \
  "vadd.f32 " a0 ", " a0 ", s6\n\t"      \
  "vadd.f32 " a1 ", " a1 ", s7\n\t"

#define MCU_F32_TAPS2(w0, w1, w2, a0, a1) \
  MCU_F32_MAC2R(w0, "s8", "s9", a0, a1)   \
  MCU_F32_MAC2R(w1, "s9", "s10", a0, a1)  \
  MCU_F32_MAC2R(w2, "s10", "s11", a0, a1)

#define MCU_F32_KROW2                           \
  "vldmia %[x], {s8-s11}\n\t"                   \
  "add %[x], %[x], %[rs]\n\t"                   \
  "vldmia %[w0]!, {s0-s2}\n\t"                  \
  MCU_F32_TAPS2("s0", "s1", "s2", "s16", "s17") \
  "vldmia %[w1]!, {s3-s5}\n\t"                  \
  MCU_F32_TAPS2("s3", "s4", "s5", "s18", "s19") \
  "vldmia %[w2]!, {s0-s2}\n\t"                  \
  MCU_F32_TAPS2("s0", "s1", "s2", "s20", "s21") \
  "vldmia %[w3]!, {s3-s5}\n\t"                  \
  MCU_F32_TAPS2("s3", "s4", "s5", "s22", "s23")

#define MCU_F32_BIAS2                           \
  "vmov.f32 s16, s0\n\t" "vmov.f32 s17, s0\n\t" \
  "vmov.f32 s18, s1\n\t" "vmov.f32 s19, s1\n\t" \
  "vmov.f32 s20, s2\n\t" "vmov.f32 s21, s2\n\t" \
  "vmov.f32 s22, s3\n\t" "vmov.f32 s23, s3\n\t"

#define MCU_F32_EACH2(M)                                                  \
  M("s16") M("s17") M("s18") M("s19") M("s20") M("s21") M("s22") M("s23")

#define MCU_F32_STORE2          \
  "ldr %[x], [%[a], #12]\n\t"   \
  "ldr %[t], [%[a], #20]\n\t"   \
  "add %[w1], %[x], %[t]\n\t"   \
  "vstmia %[x]!, {s16-s17}\n\t" \
  "add %[w2], %[w1], %[t]\n\t"  \
  "vstmia %[w1], {s18-s19}\n\t" \
  "add %[w3], %[w2], %[t]\n\t"  \
  "vstmia %[w2], {s20-s21}\n\t" \
  "vstmia %[w3], {s22-s23}\n\t" \
  "str %[x], [%[a], #12]\n\t"   \
  "ldr %[x], [%[a], #0]\n\t"    \
  "adds %[x], %[x], #8\n\t"

#if __ARM_ARCH >= 8  // VSEL (FPv5 of Armv8-M)
#define MCU_F32_LO(a) "vcmp.f32 s0, " a "\n\tvmrs APSR_nzcv, fpscr\n\tvselgt.f32 " a ", s0, " a "\n\t"
#define MCU_F32_HI(a) "vcmp.f32 " a ", s1\n\tvmrs APSR_nzcv, fpscr\n\tvselgt.f32 " a ", s1, " a "\n\t"
#else  // Cortex-M4F/M7: a conditional move
#define MCU_F32_LO(a) "vcmp.f32 s0, " a "\n\tvmrs APSR_nzcv, fpscr\n\tit gt\n\tvmovgt.f32 " a ", s0\n\t"
#define MCU_F32_HI(a) "vcmp.f32 " a ", s1\n\tvmrs APSR_nzcv, fpscr\n\tit gt\n\tvmovgt.f32 " a ", s1\n\t"
#endif
// The end of both 3x3 routines (after the block's sums, in s16-s31): the clamp to [lo, hi] (argument block
// offsets 40: which bounds are finite, 44/48: lo/hi), the stores, the next block; then the operands.
#define MCU_F32_CLAMP_STORE_NEXT(EACH, STORE)                                                                \
      "ldr %[t], [%[a], #40]\n\t"                                                                            \
      "vldr.32 s0, [%[a], #44]\n\t"                                                                          \
      "vldr.32 s1, [%[a], #48]\n\t"                                                                          \
      "lsls %[n], %[t], #31\n\t"                                                                             \
      "beq 3f\n\t"                                                                                           \
      EACH(MCU_F32_LO)                                                                                       \
      "3:\n\t"                                                                                               \
      "lsls %[n], %[t], #30\n\t"                                                                             \
      "bpl 4f\n\t"                                                                                           \
      EACH(MCU_F32_HI)                                                                                       \
      "4:\n\t"                                                                                               \
      STORE                                                                                                  \
      "str %[x], [%[a], #0]\n\t"                                                                             \
      "ldr %[n], [%[a], #36]\n\t"                                                                            \
      "subs %[n], %[n], #1\n\t"                                                                              \
      "str %[n], [%[a], #36]\n\t"                                                                            \
      "bne 2b\n\t"                                                                                           \
      : [x] "=&r"(x), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3), [n] "=&r"(n),           \
        [rs] "=&r"(rs), [ica] "=&r"(ica), [t] "=&r"(t)                                                       \
      : [a] "r"(a)                                                                                           \
      : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",  \
        "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29",       \
        "s30", "s31", "cc", "memory")

// The routine for one block width from its bias, kernel-row, clamp and store
// sequences: one asm statement per width (4 pixels for a row, 3 and 2 for its last
// ones, so that no pixel is computed twice).
#define MCU_F32_CONV3X3_ASM(BIAS, KROW, EACH, STORE)                                                          \
  int32_t x, w0, w1, w2, w3, n, rs, ica, t;                                                                  \
  asm volatile(                                                                                              \
      "ldr %[rs], [%[a], #24]\n\t"                                                                           \
      "ldr %[ica], [%[a], #28]\n\t"                                                                          \
      "2:\n\t"                                                                                               \
      "ldr %[x], [%[a], #0]\n\t"                                                                             \
      "ldr %[w0], [%[a], #4]\n\t"                                                                            \
      "ldr %[t], [%[a], #16]\n\t"                                                                            \
      "add %[w1], %[w0], %[t]\n\t"                                                                           \
      "add %[w2], %[w1], %[t]\n\t"                                                                           \
      "add %[w3], %[w2], %[t]\n\t"                                                                           \
      "ldr %[t], [%[a], #8]\n\t"                                                                             \
      "ldr %[n], [%[a], #32]\n\t"                                                                            \
      "vldmia %[t], {s0-s3}\n\t"                                                                             \
      BIAS                                                                                                   \
      "1:\n\t"                                                                                               \
      KROW KROW KROW                                                                                         \
      "add %[x], %[x], %[ica]\n\t"                                                                           \
      "subs %[n], %[n], #1\n\t"                                                                              \
      "bne 1b\n\t"                                                                                           \
      MCU_F32_CLAMP_STORE_NEXT(EACH, STORE)
// `blocks` blocks of PB (4, 3 or 2) pixels x 4 output channels.
template <int PB>
inline void conv3x3_4xpb_rows(Conv3x3Args* a) {
  static_assert(PB >= 2 && PB <= 4, "block widths 2..4");
  if constexpr (PB == 4) {
    MCU_F32_CONV3X3_ASM(MCU_F32_BIAS4, MCU_F32_KROW4, MCU_F32_EACH4, MCU_F32_STORE4);
  } else if constexpr (PB == 3) {
    MCU_F32_CONV3X3_ASM(MCU_F32_BIAS3, MCU_F32_KROW3, MCU_F32_EACH3, MCU_F32_STORE3);
  } else {
    MCU_F32_CONV3X3_ASM(MCU_F32_BIAS2, MCU_F32_KROW2, MCU_F32_EACH2, MCU_F32_STORE2);
  }
}

// Conv -> clamp -> 2x2 max pool (mcu::conv2d_max_pool2d, f32_conv_pool.h): the same
// 3x3 block for output rows 2r and 2r + 1 (4 channels x PB = 4 or 2 pixels each),
// then per channel and pair of columns the window's maximum, the clamp and one
// store per pooled pixel; the convolution's output is never stored. Row 2r's
// horizontal maxima wait in `spill` (VSTM/VLDM of 8 or 4 values) while row 2r + 1
// is computed. The maximum is max_keep_nan (f32_pool.h) in the order
// max(max(v00, v01), max(v10, v11)): v wins when v > best or v is NaN. The clamp
// then runs once per pooled pixel (clamp1; NaN kept).
#if __ARM_ARCH >= 8  // VSEL
// d = max_keep_nan(best, v); best is overwritten.
#define MCU_F32_MAXKN(d, best, v)                                                                \
  "vcmp.f32 " v ", " v "\n\tvmrs APSR_nzcv, fpscr\n\tvselvs.f32 " best ", " v ", " best "\n\t" \
  "vcmp.f32 " v ", " best "\n\tvmrs APSR_nzcv, fpscr\n\tvselgt.f32 " d ", " v ", " best "\n\t"
#else
#define MCU_F32_MAXKN(d, best, v)                                                      \
  "vcmp.f32 " v ", " v "\n\tvmrs APSR_nzcv, fpscr\n\tit vs\n\tvmovvs.f32 " best ", " v "\n\t" \
  "vcmp.f32 " v ", " best "\n\tvmrs APSR_nzcv, fpscr\n\tite gt\n\tvmovgt.f32 " d ", " v "\n\t"    \
  "vmovle.f32 " d ", " best "\n\t"
#endif
#define MCU_F32_HMAX4                                                                              \
  MCU_F32_MAXKN("s0", "s16", "s17") MCU_F32_MAXKN("s1", "s18", "s19") MCU_F32_MAXKN("s2", "s20", "s21") \
  MCU_F32_MAXKN("s3", "s22", "s23") MCU_F32_MAXKN("s4", "s24", "s25") MCU_F32_MAXKN("s5", "s26", "s27") \
  MCU_F32_MAXKN("s6", "s28", "s29") MCU_F32_MAXKN("s7", "s30", "s31")
#define MCU_F32_VMAX4                                                                              \
  MCU_F32_MAXKN("s16", "s8", "s0") MCU_F32_MAXKN("s17", "s9", "s1") MCU_F32_MAXKN("s18", "s10", "s2")   \
  MCU_F32_MAXKN("s19", "s11", "s3") MCU_F32_MAXKN("s20", "s12", "s4") MCU_F32_MAXKN("s21", "s13", "s5") \
  MCU_F32_MAXKN("s22", "s14", "s6") MCU_F32_MAXKN("s23", "s15", "s7")
#define MCU_F32_POOL_EACH4(M) M("s16") M("s17") M("s18") M("s19") M("s20") M("s21") M("s22") M("s23")
#define MCU_F32_POOL_STORE4     \
  "ldr %[x], [%[a], #12]\n\t"   \
  "ldr %[t], [%[a], #20]\n\t"   \
  "add %[w1], %[x], %[t]\n\t"   \
  "vstmia %[x]!, {s16-s17}\n\t" \
  "add %[w2], %[w1], %[t]\n\t"  \
  "vstmia %[w1], {s18-s19}\n\t" \
  "add %[w3], %[w2], %[t]\n\t"  \
  "vstmia %[w2], {s20-s21}\n\t" \
  "vstmia %[w3], {s22-s23}\n\t" \
  "str %[x], [%[a], #12]\n\t"   \
  "ldr %[x], [%[a], #0]\n\t"    \
  "adds %[x], %[x], #16\n\t"
#define MCU_F32_HMAX2 \
  MCU_F32_MAXKN("s0", "s16", "s17") MCU_F32_MAXKN("s1", "s18", "s19") MCU_F32_MAXKN("s2", "s20", "s21") \
  MCU_F32_MAXKN("s3", "s22", "s23")
#define MCU_F32_VMAX2 \
  MCU_F32_MAXKN("s16", "s8", "s0") MCU_F32_MAXKN("s17", "s9", "s1") MCU_F32_MAXKN("s18", "s10", "s2") \
  MCU_F32_MAXKN("s19", "s11", "s3")
#define MCU_F32_POOL_EACH2(M) M("s16") M("s17") M("s18") M("s19")
#define MCU_F32_POOL_STORE2     \
  "ldr %[x], [%[a], #12]\n\t"   \
  "ldr %[t], [%[a], #20]\n\t"   \
  "add %[w1], %[x], %[t]\n\t"   \
  "vstmia %[x]!, {s16}\n\t"     \
  "add %[w2], %[w1], %[t]\n\t"  \
  "vstmia %[w1], {s17}\n\t"     \
  "add %[w3], %[w2], %[t]\n\t"  \
  "vstmia %[w2], {s18}\n\t"     \
  "vstmia %[w3], {s19}\n\t"     \
  "str %[x], [%[a], #12]\n\t"   \
  "ldr %[x], [%[a], #0]\n\t"    \
  "adds %[x], %[x], #8\n\t"
// One output row's block: weights' pointers, bias, the input channels' kernel rows (x set before).
#define MCU_F32_POOL_BODY(BIAS, KROW) \
  "ldr %[w0], [%[a], #4]\n\t"         \
  "ldr %[t], [%[a], #16]\n\t"         \
  "add %[w1], %[w0], %[t]\n\t"        \
  "add %[w2], %[w1], %[t]\n\t"        \
  "add %[w3], %[w2], %[t]\n\t"        \
  "ldr %[t], [%[a], #8]\n\t"          \
  "ldr %[n], [%[a], #32]\n\t"         \
  "vldmia %[t], {s0-s3}\n\t"          \
  BIAS                                \
  "1:\n\t"                            \
  KROW KROW KROW                      \
  "add %[x], %[x], %[ica]\n\t"        \
  "subs %[n], %[n], #1\n\t"           \
  "bne 1b\n\t"
#define MCU_F32_CONV3X3_POOL_ASM(BIAS, KROW, HMAX, SPILL_ST, SPILL_LD, VMAX, EACH, STORE)                   \
  int32_t x, w0, w1, w2, w3, n, rs, ica, t;                                                                  \
  asm volatile(                                                                                              \
      "ldr %[rs], [%[a], #24]\n\t"                                                                           \
      "ldr %[ica], [%[a], #28]\n\t"                                                                          \
      "2:\n\t"                                                                                               \
      "ldr %[x], [%[a], #0]\n\t"                                                                             \
      MCU_F32_POOL_BODY(BIAS, KROW)                                                                          \
      HMAX                                                                                                   \
      "add %[t], %[a], #52\n\t"                                                                              \
      SPILL_ST                                                                                               \
      "ldr %[x], [%[a], #0]\n\t"                                                                             \
      "add %[x], %[x], %[rs]\n\t"                                                                            \
      MCU_F32_POOL_BODY(BIAS, KROW)                                                                          \
      HMAX                                                                                                   \
      "add %[t], %[a], #52\n\t"                                                                              \
      SPILL_LD                                                                                               \
      VMAX                                                                                                   \
      MCU_F32_CLAMP_STORE_NEXT(EACH, STORE)
// `c.blocks` pooled blocks along one pooled row: 4 output channels x PB / 2 pooled
// pixels each (PB = 4 or 2 convolution columns), from output rows 2r and 2r + 1.
// Advances c.x and c.out past them.
template <int PB>
inline void conv3x3_pool_rows(ConvPool3x3Args* a) {
  static_assert(PB == 4 || PB == 2, "block widths 4 and 2");
  if constexpr (PB == 4) {
    MCU_F32_CONV3X3_POOL_ASM(MCU_F32_BIAS4, MCU_F32_KROW4, MCU_F32_HMAX4, "vstmia %[t], {s0-s7}\n\t",
                             "vldmia %[t], {s8-s15}\n\t", MCU_F32_VMAX4, MCU_F32_POOL_EACH4, MCU_F32_POOL_STORE4);
  } else {
    MCU_F32_CONV3X3_POOL_ASM(MCU_F32_BIAS2, MCU_F32_KROW2, MCU_F32_HMAX2, "vstmia %[t], {s0-s3}\n\t",
                             "vldmia %[t], {s8-s11}\n\t", MCU_F32_VMAX2, MCU_F32_POOL_EACH2, MCU_F32_POOL_STORE2);
  }
}
#define MCU_F32_CONV_POOL_ASM 1
#undef MCU_F32_CONV3X3_POOL_ASM
#undef MCU_F32_POOL_BODY
#undef MCU_F32_MAXKN
#undef MCU_F32_HMAX4
#undef MCU_F32_VMAX4
#undef MCU_F32_POOL_EACH4
#undef MCU_F32_POOL_STORE4
#undef MCU_F32_HMAX2
#undef MCU_F32_VMAX2
#undef MCU_F32_POOL_EACH2
#undef MCU_F32_POOL_STORE2
#undef MCU_F32_CONV3X3_ASM
#undef MCU_F32_LO
#undef MCU_F32_HI
#undef MCU_F32_MAC4R
#undef MCU_F32_TAPS4
#undef MCU_F32_KROW4
#undef MCU_F32_BIAS4
#undef MCU_F32_EACH4
#undef MCU_F32_STORE4
#undef MCU_F32_MAC3R
#undef MCU_F32_TAPS3
#undef MCU_F32_KROW3
#undef MCU_F32_BIAS3
#undef MCU_F32_EACH3
#undef MCU_F32_STORE3
#undef MCU_F32_MAC2R
#undef MCU_F32_TAPS2
#undef MCU_F32_KROW2
#undef MCU_F32_BIAS2
#undef MCU_F32_EACH2
#undef MCU_F32_STORE2
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#define MCU_F32_POINTWISE_MVE 1
// The same 4 x 4 block with MVE-F (Cortex-M55): 4 pixels per vector, 4 vector
// accumulators; per input channel one VLDRW of the 4 inputs, per output channel
// a scalar weight, VMUL.F32 (vector by scalar) and VADD.F32: the same rounded
// product and rounded sum per output as the scalar path (no VFMA).
inline void pointwise4x4_mve(float (&acc)[4][4], const float* x, const float* w, int32_t n, int32_t x_step,
                             int32_t w_oc) {
  float32x4_t a0 = vld1q_f32(acc[0]), a1 = vld1q_f32(acc[1]), a2 = vld1q_f32(acc[2]), a3 = vld1q_f32(acc[3]);
  const float* w1 = w + w_oc;
  const float* w2 = w1 + w_oc;
  const float* w3 = w2 + w_oc;
  for (int32_t i = 0; i < n; ++i, x += x_step) {
    const float32x4_t xv = vld1q_f32(x);
    a0 = vaddq_f32(a0, vmulq_n_f32(xv, w[i]));
    a1 = vaddq_f32(a1, vmulq_n_f32(xv, w1[i]));
    a2 = vaddq_f32(a2, vmulq_n_f32(xv, w2[i]));
    a3 = vaddq_f32(a3, vmulq_n_f32(xv, w3[i]));
  }
  vst1q_f32(acc[0], a0);
  vst1q_f32(acc[1], a1);
  vst1q_f32(acc[2], a2);
  vst1q_f32(acc[3], a3);
}

// The 3x3 stride-1 4 x 4 block with MVE-F, `blocks` whole blocks of a row, every
// kernel row inside the input, in assembly (GCC 12 spills the C form of it: it
// hoists the 12 products of a kernel row above their adds): per input channel and
// kernel row 3 VLDRW of the inputs of the 3 taps (4 pixels each), per output
// channel an LDM of its 3 weights (with writeback: the kernel rows of consecutive
// input channels are consecutive in OIHW) and 3 VMUL.F32 by a scalar + 3 VADD.F32.
// The clamp per lane as clamp1 (VCMP + VPSEL, NaN kept: `lo > v` and `v > hi` as GT,
// false for a NaN lane; the LT condition is true for unordered lanes and turned NaN
// into lo). Same order and rounding as the C path.
#define MCU_F32_MVE_OC(wq, aq)                      \
  "ldmia %[" wq "]!, {%[ra], %[rb], %[rc]}\n\t"     \
  "vmul.f32 q7, q4, %[ra]\n\t"                      \
  "vadd.f32 " aq ", " aq ", q7\n\t"                 \
  "vmul.f32 q7, q5, %[rb]\n\t"                      \
  "vadd.f32 " aq ", " aq ", q7\n\t"                 \
  "vmul.f32 q7, q6, %[rc]\n\t"                      \
  "vadd.f32 " aq ", " aq ", q7\n\t"
#define MCU_F32_MVE_KROW                            \
  "vldrw.32 q4, [%[x]]\n\t"                         \
  "vldrw.32 q5, [%[x], #4]\n\t"                     \
  "vldrw.32 q6, [%[x], #8]\n\t"                     \
  "ldr %[ra], [%[a], #24]\n\t"                      \
  "add %[x], %[x], %[ra]\n\t"                       \
  MCU_F32_MVE_OC("w0", "q0")                        \
  MCU_F32_MVE_OC("w1", "q1")                        \
  MCU_F32_MVE_OC("w2", "q2")                        \
  MCU_F32_MVE_OC("w3", "q3")
inline void conv3x3_4x4_mve(Conv3x3Args* a) {
  int32_t x, w0, w1, w2, w3, n;
  // LDM fills ascending registers: the three weights' registers are fixed.
  register int32_t ra asm("r4");
  register int32_t rb asm("r5");
  register int32_t rc asm("r6");
  asm volatile(
      "2:\n\t"
      "ldr %[x], [%[a], #0]\n\t"
      "ldr %[w0], [%[a], #4]\n\t"
      "ldr %[ra], [%[a], #16]\n\t"
      "add %[w1], %[w0], %[ra]\n\t"
      "add %[w2], %[w1], %[ra]\n\t"
      "add %[w3], %[w2], %[ra]\n\t"
      "ldr %[n], [%[a], #8]\n\t"
      "ldmia %[n], {%[ra], %[rb], %[rc]}\n\t"
      "vdup.32 q0, %[ra]\n\t"
      "vdup.32 q1, %[rb]\n\t"
      "vdup.32 q2, %[rc]\n\t"
      "ldr %[ra], [%[n], #12]\n\t"
      "vdup.32 q3, %[ra]\n\t"
      "ldr %[n], [%[a], #32]\n\t"
      "1:\n\t"
      MCU_F32_MVE_KROW
      MCU_F32_MVE_KROW
      MCU_F32_MVE_KROW
      "ldr %[ra], [%[a], #28]\n\t"
      "add %[x], %[x], %[ra]\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "ldr %[rc], [%[a], #40]\n\t"
      "lsls %[n], %[rc], #31\n\t"
      "beq 3f\n\t"
      "ldr %[ra], [%[a], #44]\n\t"
      "vdup.32 q4, %[ra]\n\t"
      "vcmp.f32 gt, q4, q0\n\t"
      "vpsel q0, q4, q0\n\t"
      "vcmp.f32 gt, q4, q1\n\t"
      "vpsel q1, q4, q1\n\t"
      "vcmp.f32 gt, q4, q2\n\t"
      "vpsel q2, q4, q2\n\t"
      "vcmp.f32 gt, q4, q3\n\t"
      "vpsel q3, q4, q3\n\t"
      "3:\n\t"
      "lsls %[n], %[rc], #30\n\t"
      "bpl 4f\n\t"
      "ldr %[ra], [%[a], #48]\n\t"
      "vdup.32 q4, %[ra]\n\t"
      "vcmp.f32 gt, q0, q4\n\t"
      "vpsel q0, q4, q0\n\t"
      "vcmp.f32 gt, q1, q4\n\t"
      "vpsel q1, q4, q1\n\t"
      "vcmp.f32 gt, q2, q4\n\t"
      "vpsel q2, q4, q2\n\t"
      "vcmp.f32 gt, q3, q4\n\t"
      "vpsel q3, q4, q3\n\t"
      "4:\n\t"
      "ldr %[x], [%[a], #12]\n\t"
      "ldr %[ra], [%[a], #20]\n\t"
      "vstrw.32 q0, [%[x]]\n\t"
      "add %[w1], %[x], %[ra]\n\t"
      "vstrw.32 q1, [%[w1]]\n\t"
      "add %[w1], %[w1], %[ra]\n\t"
      "vstrw.32 q2, [%[w1]]\n\t"
      "add %[w1], %[w1], %[ra]\n\t"
      "vstrw.32 q3, [%[w1]]\n\t"
      "adds %[x], %[x], #16\n\t"
      "str %[x], [%[a], #12]\n\t"
      "ldr %[x], [%[a], #0]\n\t"
      "adds %[x], %[x], #16\n\t"
      "str %[x], [%[a], #0]\n\t"
      "ldr %[n], [%[a], #36]\n\t"
      "subs %[n], %[n], #1\n\t"
      "str %[n], [%[a], #36]\n\t"
      "bne 2b\n\t"
      : [x] "=&r"(x), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3), [n] "=&r"(n),
        [ra] "=&r"(ra), [rb] "=&r"(rb), [rc] "=&r"(rc)
      : [a] "r"(a)
      : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory");
}

// conv3x3_pool_rows (above) with MVE-F: the 4 x 4 block of conv3x3_4x4_mve for rows
// 2r and 2r + 1; per channel vector the horizontal maximum against VREV64 of it
// (lanes 0 and 2 hold max_keep_nan(v0, v1), max_keep_nan(v2, v3)), row 2r's four
// vectors wait in `spill`, then the vertical maximum, the clamp per lane and lanes
// 0 and 2 stored (two VMOV.32 to core registers, STRD). max_keep_nan per lane: VCMP NE of v
// with itself (NaN lanes) and VPSEL, then VCMP GT and VPSEL.
#define MCU_F32_MVE_POOL_BODY                       \
  "ldr %[w0], [%[a], #4]\n\t"                       \
  "ldr %[ra], [%[a], #16]\n\t"                      \
  "add %[w1], %[w0], %[ra]\n\t"                     \
  "add %[w2], %[w1], %[ra]\n\t"                     \
  "add %[w3], %[w2], %[ra]\n\t"                     \
  "ldr %[n], [%[a], #8]\n\t"                        \
  "ldmia %[n], {%[ra], %[rb], %[rc]}\n\t"           \
  "vdup.32 q0, %[ra]\n\t"                           \
  "vdup.32 q1, %[rb]\n\t"                           \
  "vdup.32 q2, %[rc]\n\t"                           \
  "ldr %[ra], [%[n], #12]\n\t"                      \
  "vdup.32 q3, %[ra]\n\t"                           \
  "ldr %[n], [%[a], #32]\n\t"                       \
  "1:\n\t"                                          \
  MCU_F32_MVE_KROW                                  \
  MCU_F32_MVE_KROW                                  \
  MCU_F32_MVE_KROW                                  \
  "ldr %[ra], [%[a], #28]\n\t"                      \
  "add %[x], %[x], %[ra]\n\t"                       \
  "subs %[n], %[n], #1\n\t"                         \
  "bne 1b\n\t"
#define MCU_F32_MVE_HMAX(q)                         \
  "vrev64.32 q4, " q "\n\t"                         \
  "vcmp.f32 ne, q4, q4\n\t"                         \
  "vpsel " q ", q4, " q "\n\t"                      \
  "vcmp.f32 gt, q4, " q "\n\t"                      \
  "vpsel " q ", q4, " q "\n\t"
#define MCU_F32_MVE_HMAX4 \
  MCU_F32_MVE_HMAX("q0") MCU_F32_MVE_HMAX("q1") MCU_F32_MVE_HMAX("q2") MCU_F32_MVE_HMAX("q3")
#define MCU_F32_MVE_VMAX(q, off)                    \
  "vldrw.32 q4, [%[n], #" off "]\n\t"               \
  "vcmp.f32 ne, " q ", " q "\n\t"                   \
  "vpsel q4, " q ", q4\n\t"                         \
  "vcmp.f32 gt, " q ", q4\n\t"                      \
  "vpsel " q ", " q ", q4\n\t"
#define MCU_F32_MVE_STORE2(q, p)                    \
  "vmov.32 %[ra], " q "[0]\n\t"                     \
  "vmov.32 %[rb], " q "[2]\n\t"                     \
  "strd %[ra], %[rb], [%[" p "]]\n\t"
// `c.blocks` blocks of 4 convolution columns (2 pooled pixels) x 4 channels along
// one pooled row; advances c.x and c.out past them.
inline void conv3x3_pool_mve(ConvPool3x3Args* a) {
  int32_t x, w0, w1, w2, w3, n;
  register int32_t ra asm("r4");
  register int32_t rb asm("r5");
  register int32_t rc asm("r6");
  asm volatile(
      "2:\n\t"
      "ldr %[x], [%[a], #0]\n\t"
      MCU_F32_MVE_POOL_BODY
      MCU_F32_MVE_HMAX4
      "add %[n], %[a], #52\n\t"
      "vstrw.32 q0, [%[n]]\n\t"
      "vstrw.32 q1, [%[n], #16]\n\t"
      "vstrw.32 q2, [%[n], #32]\n\t"
      "vstrw.32 q3, [%[n], #48]\n\t"
      "ldr %[x], [%[a], #0]\n\t"
      "ldr %[ra], [%[a], #24]\n\t"
      "add %[x], %[x], %[ra]\n\t"
      MCU_F32_MVE_POOL_BODY
      MCU_F32_MVE_HMAX4
      "add %[n], %[a], #52\n\t"
      MCU_F32_MVE_VMAX("q0", "0")
      MCU_F32_MVE_VMAX("q1", "16")
      MCU_F32_MVE_VMAX("q2", "32")
      MCU_F32_MVE_VMAX("q3", "48")
      "ldr %[rc], [%[a], #40]\n\t"
      "lsls %[n], %[rc], #31\n\t"
      "beq 3f\n\t"
      "ldr %[ra], [%[a], #44]\n\t"
      "vdup.32 q4, %[ra]\n\t"
      "vcmp.f32 gt, q4, q0\n\t"
      "vpsel q0, q4, q0\n\t"
      "vcmp.f32 gt, q4, q1\n\t"
      "vpsel q1, q4, q1\n\t"
      "vcmp.f32 gt, q4, q2\n\t"
      "vpsel q2, q4, q2\n\t"
      "vcmp.f32 gt, q4, q3\n\t"
      "vpsel q3, q4, q3\n\t"
      "3:\n\t"
      "lsls %[n], %[rc], #30\n\t"
      "bpl 4f\n\t"
      "ldr %[ra], [%[a], #48]\n\t"
      "vdup.32 q4, %[ra]\n\t"
      "vcmp.f32 gt, q0, q4\n\t"
      "vpsel q0, q4, q0\n\t"
      "vcmp.f32 gt, q1, q4\n\t"
      "vpsel q1, q4, q1\n\t"
      "vcmp.f32 gt, q2, q4\n\t"
      "vpsel q2, q4, q2\n\t"
      "vcmp.f32 gt, q3, q4\n\t"
      "vpsel q3, q4, q3\n\t"
      "4:\n\t"
      "ldr %[x], [%[a], #12]\n\t"
      "ldr %[rc], [%[a], #20]\n\t"
      MCU_F32_MVE_STORE2("q0", "x")
      "add %[w1], %[x], %[rc]\n\t"
      MCU_F32_MVE_STORE2("q1", "w1")
      "add %[w1], %[w1], %[rc]\n\t"
      MCU_F32_MVE_STORE2("q2", "w1")
      "add %[w1], %[w1], %[rc]\n\t"
      MCU_F32_MVE_STORE2("q3", "w1")
      "adds %[x], %[x], #8\n\t"
      "str %[x], [%[a], #12]\n\t"
      "ldr %[x], [%[a], #0]\n\t"
      "adds %[x], %[x], #16\n\t"
      "str %[x], [%[a], #0]\n\t"
      "ldr %[n], [%[a], #36]\n\t"
      "subs %[n], %[n], #1\n\t"
      "str %[n], [%[a], #36]\n\t"
      "bne 2b\n\t"
      : [x] "=&r"(x), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3), [n] "=&r"(n),
        [ra] "=&r"(ra), [rb] "=&r"(rb), [rc] "=&r"(rc)
      : [a] "r"(a)
      : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory");
}
#define MCU_F32_CONV_POOL_MVE 1
#undef MCU_F32_MVE_POOL_BODY
#undef MCU_F32_MVE_HMAX
#undef MCU_F32_MVE_HMAX4
#undef MCU_F32_MVE_VMAX
#undef MCU_F32_MVE_STORE2
#undef MCU_F32_MVE_KROW
#undef MCU_F32_MVE_OC
#endif

// The 3x3 assembly's arguments for `blocks` blocks from x, w, o (every kernel row inside the input).
inline Conv3x3Args conv3x3_args(const Conv& c, const float* x, const float* w, float* o, int32_t blocks) {
  static const float kZeros[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  Conv3x3Args a;
  a.x = x;
  a.w = w;
  a.bias = c.bias != nullptr ? c.bias : kZeros;
  a.out = o;
  a.w_oc = c.cin_g * c.taps * 4;
  a.out_plane = c.out_plane * 4;
  a.row_step = c.row_step * 4;
  a.ic_adj = (c.ic_step - 3 * c.row_step) * 4;
  a.cin = c.cin_g;
  a.blocks = blocks;
  a.clamp = (c.lo != -INFINITY ? 1 : 0) | (c.hi != INFINITY ? 2 : 0);
  a.lo = c.lo;
  a.hi = c.hi;
  return a;
}

// `blocks` blocks of PB pixels of one output row, the last with `last` pixels;
// `x` the input of kernel row kh_lo at the first block's first pixel, `w` the
// weights of kernel row kh_lo.
template <int OB, int PB, class Row>
void run_blocks(const Conv& c, float* o, const float* x, const float* w, int32_t nkh, int32_t blocks, int32_t last) {
  const int32_t w_oc = c.cin_g * c.taps;
  const int32_t step = PB * c.stride_w;
  const int32_t row_step = c.row_step;
  int32_t b = 0;
#ifdef MCU_F32_POINTWISE_ASM
  if constexpr (Row::kConv3x3) {
    // Every kernel row inside the input (the weights' rows then run on without
    // gaps); a last block of 3 or 2 pixels by the narrower routines (1: the C block).
    if (nkh == 3 && c.taps == 9) {
      const int32_t whole = last == PB ? blocks : blocks - 1;
      Conv3x3Args a = conv3x3_args(c, x, w, o, whole);
      if (whole > 0) conv3x3_4xpb_rows<4>(&a);  // advances a.x and a.out
      a.blocks = 1;
      if (last == 3) conv3x3_4xpb_rows<3>(&a);
      if (last == 2) conv3x3_4xpb_rows<2>(&a);
      if (last != 1) return;
      b = whole;  // a last block of 1 pixel: the C block
      o += static_cast<size_t>(whole) * PB;
      x += static_cast<size_t>(whole) * step;
    }
  }
#endif
#ifdef MCU_F32_POINTWISE_MVE
  if constexpr (Row::kConv3x3) {
    const int32_t whole = last == PB ? blocks : blocks - 1;
    if (nkh == 3 && c.taps == 9 && whole > 0) {
      Conv3x3Args a = conv3x3_args(c, x, w, o, whole);
      conv3x3_4x4_mve(&a);
      b = whole;
      o += static_cast<size_t>(whole) * PB;
      x += static_cast<size_t>(whole) * step;
    }
  }
#endif
  for (; b < blocks; ++b, o += PB, x += step) {
    float acc[OB][PB];
#pragma GCC unroll 4
    for (int q = 0; q < OB; ++q) {
      const float b0 = c.bias != nullptr ? c.bias[q] : 0.0f;
#pragma GCC unroll 8
      for (int p = 0; p < PB; ++p) acc[q][p] = b0;
    }
    const float* xi = x;
    const float* wi = w;
    if (Row::kOneTap && nkh == 1) {  // a 1x1 kernel: no row loop
      int32_t ic = 0;
#ifdef MCU_F32_POINTWISE_ASM
      if constexpr (Row::kPointwise4x4) {
        if (c.taps == 1 && c.cin_g >= 2) {
          const int32_t pairs = c.cin_g / 2;
          pointwise4x4_pairs(reinterpret_cast<float(&)[4][4]>(acc), xi, wi, pairs, c.ic_step, w_oc);
          ic = 2 * pairs;
          xi += static_cast<size_t>(ic) * c.ic_step;
          wi += ic;
        }
      }
#endif
#ifdef MCU_F32_POINTWISE_MVE
      if constexpr (Row::kPointwise4x4) {
        if (c.taps == 1) {
          pointwise4x4_mve(reinterpret_cast<float(&)[4][4]>(acc), xi, wi, c.cin_g, c.ic_step, w_oc);
          ic = c.cin_g;
        }
      }
#endif
      for (; ic < c.cin_g; ++ic, xi += c.ic_step, wi += c.taps) Row::run(acc, xi, wi, w_oc, c);
    } else {
      for (int32_t ic = 0; ic < c.cin_g; ++ic, xi += c.ic_step, wi += c.taps) {
        const float* xr = xi;
        const float* wr = wi;
        for (int32_t kh = 0; kh < nkh; ++kh, xr += row_step, wr += c.kernel_w) Row::run(acc, xr, wr, w_oc, c);
      }
    }
    store_block<OB, PB>(c, o, acc, b + 1 == blocks ? last : PB);
  }
}

// One output pixel with bounds: taps [kw_lo, kw_hi) of kernel rows [0, nkh).
template <int OB>
void run_pixel(const Conv& c, float* o, const float* x, const float* w, int32_t nkh, int32_t kw_lo, int32_t kw_hi) {
  const int32_t w_oc = c.cin_g * c.taps;
  float acc[OB][1];
  for (int q = 0; q < OB; ++q) acc[q][0] = c.bias != nullptr ? c.bias[q] : 0.0f;
  for (int32_t ic = 0; ic < c.cin_g; ++ic, x += c.ic_step, w += c.taps) {
    const float* xr = x;
    const float* wr = w;
    for (int32_t kh = 0; kh < nkh; ++kh, xr += c.row_step, wr += c.kernel_w) {
      for (int32_t k = kw_lo; k < kw_hi; ++k) {
        const float xv = xr[k * c.dil_w];
#pragma GCC unroll 4
        for (int q = 0; q < OB; ++q) acc[q][0] = acc[q][0] + wr[q * w_oc + k] * xv;
      }
    }
  }
  store_block<OB, 1>(c, o, acc);
}

using BlocksFn = void (*)(const Conv&, float*, const float*, const float*, int32_t, int32_t, int32_t);

// Channel blocks (4 x 4): 1x1, 3x3 stride 1; everything else by RowAny (flash: each
// fixed shape is 1-2.5 KB of code; a 3x3 stride-2 stem or 5x5 depthwise layers
// run ~10% slower on RowAny, MNASNet-0.5 6.66x -> 6.15x fewer cycles than before).
inline BlocksFn pick4(const ConvGeometry& g) {
  if (g.dil_w == 1) {
    if (g.kernel_w == 1 && g.stride_w == 1) return &run_blocks<4, 4, RowFixed<4, 4, 1, 1>>;
    if (g.kernel_w == 3 && g.stride_w == 1) return &run_blocks<4, 4, RowFixed<4, 4, 3, 1>>;
  }
  return &run_blocks<4, 4, RowAny<4, 4>>;
}

// Single channels (1 x 8: depthwise, channel tails): 3x3, stride 1 and 2.
inline BlocksFn pick1(const ConvGeometry& g) {
  if (g.dil_w == 1) {
    if (g.kernel_w == 3 && g.stride_w == 1) return &run_blocks<1, 8, RowFixed<1, 8, 3, 1>>;
    if (g.kernel_w == 3 && g.stride_w == 2) return &run_blocks<1, 8, RowFixed<1, 8, 3, 2>>;
  }
  return &run_blocks<1, 8, RowAny<1, 8>>;
}

// One block of OB output channels over the whole output plane.
template <int OB, int PB>
void run_channels(const Conv& c, const ConvGeometry& g, RowSpan span, BlocksFn blocks_fn) {
  const int32_t n_int = span.end - span.begin;
  const int32_t blocks = n_int > 0 ? n_int / PB : 0;
  // A tail of the interior shorter than a block: one more block ending at the
  // interior's end, recomputing (identically) a few pixels of the one before.
  const bool overlap = blocks > 0 && blocks * PB < n_int;
  const int32_t tail_begin = overlap ? span.end : span.begin + blocks * PB;
  for (int32_t oh = 0; oh < g.out_h; ++oh) {
    // Kernel rows whose input row exists.
    const int32_t base = oh * g.stride_h - g.pad_h;
    const int32_t kh_lo = clamp_i32(ceil_div(-base, g.dil_h), 0, g.kernel_h);
    const int32_t kh_hi = clamp_i32(floor_div(g.in_h - 1 - base, g.dil_h) + 1, kh_lo, g.kernel_h);
    const int32_t nkh = kh_hi - kh_lo;
    float* orow = c.out + oh * g.out_w;
    const float* xrow = c.in + (base + kh_lo * g.dil_h) * g.in_w;
    const float* wrow = c.weight + kh_lo * g.kernel_w;
    if (nkh <= 0) {  // every kernel row in the padding: bias only
      for (int32_t ow = 0; ow < g.out_w; ++ow) run_pixel<OB>(c, orow + ow, xrow, wrow, 0, 0, 0);
      continue;
    }
    const int32_t tail = n_int - blocks * PB;
    const bool exact_tail = OB == 4 && c.exact_tail && overlap && tail >= 2;
    if (exact_tail) {  // the tail as a partial block: it reads only its own inputs
      blocks_fn(c, orow + span.begin, xrow + span.begin * g.stride_w - g.pad_w, wrow, nkh, blocks + 1, tail);
    } else if (blocks > 0) {
      blocks_fn(c, orow + span.begin, xrow + span.begin * g.stride_w - g.pad_w, wrow, nkh, blocks, PB);
    }
    if (overlap && !exact_tail) {
      const int32_t ow0 = span.end - PB;
      blocks_fn(c, orow + ow0, xrow + ow0 * g.stride_w - g.pad_w, wrow, nkh, 1, PB);
    }
    for (int32_t ow = 0; ow < g.out_w; ++ow) {
      if (ow == span.begin) {
        ow = tail_begin;
        if (ow >= g.out_w) break;
      }
      const int32_t start = ow * g.stride_w - g.pad_w;
      const int32_t kw_lo = clamp_i32(ceil_div(-start, g.dil_w), 0, g.kernel_w);
      const int32_t kw_hi = clamp_i32(floor_div(g.in_w - 1 - start, g.dil_w) + 1, kw_lo, g.kernel_w);
      run_pixel<OB>(c, orow + ow, xrow + start, wrow, nkh, kw_lo, kw_hi);
    }
  }
}

// Padded rows: floats of the stack buffer that holds, for one output row, the
// kernel rows of every input channel of a group with the padding columns as
// zeros, wide enough for whole blocks of 8 pixels. Used where a row has padding
// columns and the rows fit: every pixel then takes the blocked path (the taps in
// the padding are multiplied by +0 there; see the summation order above).
constexpr int32_t kPadBufFloats = 256;

inline int32_t padded_row_width(const ConvGeometry& g) {
  const int32_t blocks8 = (g.out_w + 7) / 8;
  return (blocks8 * 8 - 1) * g.stride_w + (g.kernel_w - 1) * g.dil_w + 1;
}

inline bool use_padded_rows(const ConvGeometry& g) {
  if (g.pad_w == 0) return false;
  const int64_t floats = static_cast<int64_t>(g.in_channels / g.groups) * g.kernel_h * padded_row_width(g);
  return floats <= kPadBufFloats;
}

// One group over the whole output plane, rows padded into the stack buffer.
__attribute__((noinline)) inline void run_group_padded(Conv c, const ConvGeometry& g, const float* weight,
                                                       const float* bias, float* out, int32_t oc_begin,
                                                       int32_t oc_end, BlocksFn f4, BlocksFn f1) {
  float buf[kPadBufFloats];
  const int32_t wp = padded_row_width(g);
  const float* in = c.in;
  for (int32_t i = 0, used = c.cin_g * g.kernel_h * wp; i < used; ++i) buf[i] = 0.0f;
  c.ic_step = g.kernel_h * wp;
  c.row_step = wp;
  for (int32_t oh = 0; oh < g.out_h; ++oh) {
    const int32_t base = oh * g.stride_h - g.pad_h;
    const int32_t kh_lo = clamp_i32(ceil_div(-base, g.dil_h), 0, g.kernel_h);
    const int32_t kh_hi = clamp_i32(floor_div(g.in_h - 1 - base, g.dil_h) + 1, kh_lo, g.kernel_h);
    const int32_t nkh = kh_hi - kh_lo;
    // buf[ic][r][j] = input (ic, row base + (kh_lo + r) * dil_h, column j - pad_w);
    // the padding columns stay zero from the start.
    const int32_t left = g.pad_w < wp ? g.pad_w : wp;
    const int32_t n = clamp_i32(wp - left, 0, g.in_w);
    for (int32_t ic = 0; ic < c.cin_g; ++ic) {
      float* d = buf + ic * g.kernel_h * wp + left;
      for (int32_t r = 0; r < nkh; ++r, d += wp) {
        const float* src = in + static_cast<size_t>(ic) * c.in_plane + (base + (kh_lo + r) * g.dil_h) * g.in_w;
        for (int32_t k = 0; k < n; ++k) d[k] = src[k];
      }
    }
    int32_t oc = oc_begin;
    for (; f4 != nullptr && oc + 4 <= oc_end; oc += 4) {
      c.weight = weight + static_cast<size_t>(oc) * c.cin_g * c.taps;
      c.bias = bias != nullptr ? bias + oc : nullptr;
      float* o = out + static_cast<size_t>(oc) * c.out_plane + oh * g.out_w;
      if (nkh <= 0) {
        for (int32_t ow = 0; ow < g.out_w; ++ow) run_pixel<4>(c, o + ow, buf, c.weight, 0, 0, 0);
      } else {
        f4(c, o, buf, c.weight + kh_lo * g.kernel_w, nkh, (g.out_w + 3) / 4, g.out_w - ((g.out_w + 3) / 4 - 1) * 4);
      }
    }
    for (; oc < oc_end; ++oc) {
      c.weight = weight + static_cast<size_t>(oc) * c.cin_g * c.taps;
      c.bias = bias != nullptr ? bias + oc : nullptr;
      float* o = out + static_cast<size_t>(oc) * c.out_plane + oh * g.out_w;
      if (nkh <= 0) {
        for (int32_t ow = 0; ow < g.out_w; ++ow) run_pixel<1>(c, o + ow, buf, c.weight, 0, 0, 0);
      } else {
        f1(c, o, buf, c.weight + kh_lo * g.kernel_w, nkh, (g.out_w + 7) / 8, g.out_w - ((g.out_w + 7) / 8 - 1) * 8);
      }
    }
  }
}

// Forward convolution (arguments checked by conv_geometry; a 1x1 stride-1
// unpadded convolution may come flattened to one row per plane).
inline void conv2d(const float* in, const float* weight, const float* bias, float* out, const ConvGeometry& g,
                   float lo, float hi) {
  const int32_t cin_g = g.in_channels / g.groups;
  const int32_t cout_g = g.out_channels / g.groups;
  const RowSpan span = interior_columns(g);
  Conv c;
  c.cin_g = cin_g;
  c.in_plane = g.in_h * g.in_w;
  c.in_w = g.in_w;
  c.out_plane = g.out_h * g.out_w;
  c.out_w = g.out_w;
  c.ic_step = c.in_plane;
  c.row_step = g.dil_h * g.in_w;
  c.taps = g.kernel_h * g.kernel_w;
  c.kernel_w = g.kernel_w;
  c.stride_w = g.stride_w;
  c.dil_w = g.dil_w;
  c.dil_h = g.dil_h;
  c.pad_w = g.pad_w;
  c.lo = lo;
  c.hi = hi;
  const BlocksFn f4 = cout_g >= 4 ? pick4(g) : nullptr;
  const BlocksFn f1 = pick1(g);
  c.exact_tail = false;
#ifdef MCU_F32_POINTWISE_ASM
  // Every output row with all 3 kernel rows inside the input: the assembly takes
  // every block, the partial last one included.
  c.exact_tail = f4 == &run_blocks<4, 4, RowFixed<4, 4, 3, 1>> && g.kernel_h == 3 && g.pad_h == 0 && g.dil_h == 1;
#endif
  const bool padded = use_padded_rows(g);
  for (int32_t n = 0; n < g.batch; ++n) {
    for (int32_t grp = 0; grp < g.groups; ++grp) {
      c.in = in + (static_cast<size_t>(n) * g.in_channels + static_cast<size_t>(grp) * cin_g) * c.in_plane;
      int32_t oc = grp * cout_g;
      const int32_t oc_end = oc + cout_g;
      float* out_n = out + static_cast<size_t>(n) * g.out_channels * c.out_plane;
      if (padded) {
        run_group_padded(c, g, weight, bias, out_n, oc, oc_end, f4, f1);
        continue;
      }
      for (; oc + 4 <= oc_end; oc += 4) {
        c.weight = weight + static_cast<size_t>(oc) * cin_g * c.taps;
        c.bias = bias != nullptr ? bias + oc : nullptr;
        c.out = out_n + static_cast<size_t>(oc) * c.out_plane;
        run_channels<4, 4>(c, g, span, f4);
      }
      for (; oc < oc_end; ++oc) {
        c.weight = weight + static_cast<size_t>(oc) * cin_g * c.taps;
        c.bias = bias != nullptr ? bias + oc : nullptr;
        c.out = out_n + static_cast<size_t>(oc) * c.out_plane;
        run_channels<1, 8>(c, g, span, f1);
      }
    }
  }
}

}  // namespace mcu::kernels::f32fast

#pragma GCC pop_options
