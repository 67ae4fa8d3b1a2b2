// ---------------------------------------------------------------------------
// Elementwise add: y[i] = requant_smmlar(ta[x[i]] + tb[y[i]]), the tables holding 2a and 2b per int8
// bit pattern (the doubled sum of requant_smmlar). Per element 2 LDRB, 2 LDR, ADD, ASR/ADD, SMMLAR, ASR,
// SSAT, STRB. Element i of both operands is read before output i is written: in place is safe.
template <int32_t kN, int32_t kActMin, int32_t kActMax>
void add_tables(const int8_t* a, const int8_t* b, int8_t* y, const int32_t* ta, const int32_t* tb, int32_t mult,
                int32_t ra, int32_t right) {
  for (int32_t i = 0; i < kN; ++i) {
    const int32_t s2 = ta[static_cast<uint8_t>(a[i])] + tb[static_cast<uint8_t>(b[i])];
    y[i] = requant_smmlar<kActMin, kActMax>(s2, mult, ra, right);
  }
}
