// ---------------------------------------------------------------------------
// 3x3 depthwise of a channel count kC that is not a multiple of 4 (emit_mve.source appends this only to a program
// with such a layer): depthwise3x3 (above) with passes of kG channels (a multiple of 4: the ring's pixel stride)
// but for the last, of kC - (passes before it) * kG channels, whose last group of 4 has kC % 4 channels: its lanes
// past them read the ring pixel's spare bytes against zero weights (MveLayer.packed_weights pads the channels to
// whole groups of 4, the Requant tables are padded likewise) and are not stored (store4<kC % 4>, a predicated
// store: in place, the bytes past a pixel's channels are the next pixel's input). In place it is safe as
// depthwise3x3: a pass writes only its own channels, of pixels whose input rows are in the ring already (so the
// passes may run in any order: the pass of the rest first).
template <class Dw, int32_t kH, int32_t kW, int32_t kC, int32_t kG, int32_t kOH, int32_t kOW, int32_t kStride,
          int32_t kPadH, int32_t kPadW, int8_t kZeroPoint, int kMode, int32_t kOut, int32_t kMin, int32_t kMax>
void depthwise3x3_part(const int8_t* in, int8_t* out, int8_t* ring, const int8_t* weights, Requant q) {
  static_assert(kC % 4 != 0 && kG % 4 == 0 && kG < kC + 4 && kPadH <= 1 && kOH * kOW <= kH * kW,
                "the generator emits these only");
  constexpr int32_t kLast = kDwRest<kC, kG>;  // the first channel of the pass of the rest
  depthwise3x3_pass<Dw, kH, kW, kC, kG, kC - kLast, kOH, kOW, kStride, kPadH, kPadW, kZeroPoint, kMode, kOut, kMin,
                    kMax>(in, out, ring, weights, q, kLast);
  for (int32_t c0 = 0; c0 < kLast; c0 += kG) {
    depthwise3x3_pass<Dw, kH, kW, kC, kG, kG, kOH, kOW, kStride, kPadH, kPadW, kZeroPoint, kMode, kOut, kMin, kMax>(
        in, out, ring, weights, q, c0);
  }
}
