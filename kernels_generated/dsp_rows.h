// ---------------------------------------------------------------------------
// The input rows a generated convolution reads (its template parameter Rows): straight from the
// input, or, in place (mcu::quantized_conv2d_rows_inplace: the output at the input's address),
// through a ring of kRing saved rows in the variant's scratch tensor.
template <int32_t kW, int32_t kCin>
struct InputRows {
  const int8_t* in;
  const int8_t* row(int32_t iy) const { return in + iy * kW * kCin; }
  void before_write(int32_t, int32_t) {}
  bool readable_after(int32_t, int32_t) const { return true; }
};

// Before output pixels [p0, p1) are written, every input row their bytes reach that pixel p1 or
// a later one still reads is copied to the ring (slot iy % kRing). Rows up to `saved` are read
// from the ring (those not saved are read by no later pixel); the others are still intact in
// the input. Output pixels only reach rows a row-by-row schedule reaches before the same output
// row, so the ring the planner sized (conv_ring_rows, mcu_gen/plan/inplace.py) holds them.
template <int32_t kH, int32_t kW, int32_t kCin, int32_t kSH, int32_t kPH, int32_t kOW, int32_t kN, int32_t kRing>
struct RingRows {
  const int8_t* in;
  int8_t* ring;
  int32_t saved;  // the last input row (-1: none) whose bytes an output may have overwritten
  const int8_t* row(int32_t iy) const { return iy <= saved ? ring + (iy % kRing) * kW * kCin : in + iy * kW * kCin; }
  void before_write(int32_t p0, int32_t p1) {
    constexpr int32_t kRow = kW * kCin;
    (void)p0;
    int32_t last = static_cast<int32_t>((static_cast<int64_t>(p1) * kN - 1) / kRow);
    if (last >= kH) last = kH - 1;
    int32_t needed = (p1 / kOW) * kSH - kPH;  // the first row pixel p1 reads (later pixels: not less)
    if (needed < saved + 1) needed = saved + 1;
    for (int32_t iy = needed; iy <= last; ++iy) memcpy(ring + (iy % kRing) * kRow, in + iy * kRow, kRow);
    if (last > saved) saved = last;
  }
  // Whether row(iy) still reads input row iy once before_write(.., p1) has run: no later row took its
  // ring slot (the MVE convolution's in-place windows ask before reading without a gathered copy).
  bool readable_after(int32_t p1, int32_t iy) const {
    int32_t last = static_cast<int32_t>((static_cast<int64_t>(p1) * kN - 1) / (kW * kCin));
    if (last >= kH) last = kH - 1;
    return iy > (last > saved ? last : saved) - kRing;
  }
};
