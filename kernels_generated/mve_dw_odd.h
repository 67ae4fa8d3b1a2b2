// ---------------------------------------------------------------------------
// 3x3 depthwise of a channel count kC that is not a multiple of 4 (emit_mve.source appends this only to a program
// with such a layer): depthwise3x3 (above) with passes of kG channels (a multiple of 4: the ring's pixel stride)
// but for the last, of kC - (passes before it) * kG channels, whose last group of 4 has kC % 4 channels: its lanes
// past them read the ring pixel's spare bytes against zero weights (MveLayer.packed_weights pads the channels to
// whole groups of 4, the Requant tables are padded likewise) and are not stored (store4<kC % 4>, a predicated
// store: in place, the bytes past a pixel's channels are the next pixel's input). In place it is safe as
// depthwise3x3: a pass writes only its own channels, of pixels whose input rows are in the ring already (so the
// passes may run in any order: the pass of the rest first).
// One pass: channels c0..c0 + kN - 1 (kN <= kG) through the ring.
template <class Dw, int32_t kH, int32_t kW, int32_t kC, int32_t kG, int32_t kN, int32_t kOH, int32_t kOW,
          int32_t kStride, int32_t kPadH, int32_t kPadW, int8_t kZeroPoint, int kMode, int32_t kOut, int32_t kMin,
          int32_t kMax>
void depthwise3x3_pass(const int8_t* in, int8_t* out, int8_t* ring, const int8_t* weights, const Requant& q,
                       int32_t c0) {
  constexpr int32_t kRow = (kW + 2 * kPadW) * kG;
  constexpr int32_t kWhole = kN / 4 * 4;  // the channels in whole groups of 4
  int32_t next = -kPadH;  // the next input row to copy into the ring
  for (int32_t oy = 0; oy < kOH; ++oy) {
    const int32_t iy0 = oy * kStride - kPadH;
    if (next < iy0) next = iy0;
    for (; next <= iy0 + 2; ++next) {
      ring_row<kH, kW, kC, kG, kN, kPadW, kZeroPoint>(in, next, c0, ring + ring_slot(next) * kRow);
    }
    const int8_t* r0 = ring + ring_slot(iy0) * kRow;
    const int8_t* r1 = ring + ring_slot(iy0 + 1) * kRow;
    const int8_t* r2 = ring + ring_slot(iy0 + 2) * kRow;
    if constexpr (kN % 4 != 0) {  // the last group, kN % 4 channels stored, first (and its pass the first): its
      // predicated stores reach into the next pixel, whose whole groups are stored after (GCC models a predicated store
      // as one of all its bytes: no later store covers all of them, no earlier one meets them)
      int8_t* y = out + oy * kOW * kC + c0 + kWhole;
      for (int32_t ox = 0; ox < kOW; ++ox, y += kC) {
        const int32_t col = ox * kStride * kG + kWhole;
        const int8_t* w = weights + 9 * (c0 + kWhole);
        int32x4_t acc = vldrwq_s32(q.init + c0 + kWhole);
        Dw::taps(r0 + col, r1 + col, r2 + col, w, acc);
        store4<kN % 4>(y, requant4<kMode, kOut, kMin, kMax>(acc, q, c0 + kWhole));
      }
    }
    if constexpr (kMode == 0 && Dw::kFused) {  // per whole group of 4 channels the output row, one block per pixel
      for (int32_t g = 0; g < kWhole; g += 4) {
        const int8_t* p0 = r0 + g;
        const int8_t* p1 = r1 + g;
        const int8_t* p2 = r2 + g;
        int8_t* y = out + oy * kOW * kC + c0 + g;
        const int8_t* w = weights + 9 * (c0 + g);
        const int32_t* c = q.fused + 3 * (c0 + g);
        for (int32_t ox = 0; ox < kOW; ++ox) Dw::template pixel<kOut, kMin, kMax>(p0, p1, p2, w, c, y);
      }
    } else if constexpr (kWhole > 0) {
      int8_t* y = out + oy * kOW * kC + c0;
      for (int32_t ox = 0; ox < kOW; ++ox, y += kC) {
        const int32_t col = ox * kStride * kG;
        const int8_t* w = weights + 9 * c0;
        for (int32_t g = 0; g < kWhole; g += 4) {
          int32x4_t acc = vldrwq_s32(q.init + c0 + g);
          Dw::taps(r0 + col + g, r1 + col + g, r2 + col + g, w, acc);
          store4<4>(y + g, requant4<kMode, kOut, kMin, kMax>(acc, q, c0 + g));
        }
      }
    }
  }
}

template <class Dw, int32_t kH, int32_t kW, int32_t kC, int32_t kG, int32_t kOH, int32_t kOW, int32_t kStride,
          int32_t kPadH, int32_t kPadW, int8_t kZeroPoint, int kMode, int32_t kOut, int32_t kMin, int32_t kMax>
void depthwise3x3_part(const int8_t* in, int8_t* out, int8_t* ring, const int8_t* weights, Requant q) {
  static_assert(kC % 4 != 0 && kG % 4 == 0 && kG < kC + 4 && kPadH <= 1 && kOH * kOW <= kH * kW,
                "the generator emits these only");
  constexpr int32_t kLast = (kC - 1) / kG * kG;  // the first channel of the pass of the rest
  depthwise3x3_pass<Dw, kH, kW, kC, kG, kC - kLast, kOH, kOW, kStride, kPadH, kPadW, kZeroPoint, kMode, kOut, kMin,
                    kMax>(in, out, ring, weights, q, kLast);
  for (int32_t c0 = 0; c0 < kLast; c0 += kG) {
    depthwise3x3_pass<Dw, kH, kW, kC, kG, kG, kOH, kOW, kStride, kPadH, kPadW, kZeroPoint, kMode, kOut, kMin, kMax>(
        in, out, ring, weights, q, c0);
  }
}
