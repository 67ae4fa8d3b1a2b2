// Minimal flatbuffer access for reading an ET12 program in place.
//
// Two layers: `Checked` functions validate a table, vector or string against
// the buffer bounds (used once, by Executor::load), and the unchecked `fb::`
// readers are used at run time on data that load already verified.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/types.h"

namespace mcu {
namespace fb {

inline uint8_t u8(const uint8_t* p) { return *p; }
inline uint16_t u16(const uint8_t* p) { return read_le<uint16_t>(p); }
inline uint32_t u32(const uint8_t* p) { return read_le<uint32_t>(p); }
inline int32_t i32(const uint8_t* p) { return read_le<int32_t>(p); }
inline int64_t i64(const uint8_t* p) { return read_le<int64_t>(p); }
inline uint64_t u64(const uint8_t* p) { return read_le<uint64_t>(p); }
inline double f64(const uint8_t* p) { return read_le<double>(p); }

// Offset of field `slot` inside the table at `t`, or 0 when absent.
inline uint16_t field(const uint8_t* t, int slot) {
  const uint8_t* vt = t - i32(t);
  uint16_t vt_size = u16(vt);
  uint16_t at = static_cast<uint16_t>(4 + 2 * slot);
  return at < vt_size ? u16(vt + at) : 0;
}
// Follows a uoffset stored at `p`.
inline const uint8_t* deref(const uint8_t* p) { return p + u32(p); }
// Sub-table, vector or string referenced by field `slot`; nullptr when absent. Not inlined: one copy for
// the runtime's files (at -Os GCC decides per file, and would inline a file's few calls: more code).
[[gnu::noinline]] inline const uint8_t* ref(const uint8_t* t, int slot) {
  uint16_t f = field(t, slot);
  return f ? deref(t + f) : nullptr;
}
inline uint32_t vec_len(const uint8_t* v) { return v ? u32(v) : 0; }
inline const uint8_t* vec_data(const uint8_t* v) { return v ? v + 4 : nullptr; }
// The i-th table of a vector of tables.
inline const uint8_t* vec_table(const uint8_t* data, uint32_t i) { return deref(data + 4 * i); }

// Scalar field `slot` of the table at `t`, or `fallback` (the schema default) when absent.
template <typename T>
inline T scalar(const uint8_t* t, int slot, T fallback) {
  const uint16_t f = field(t, slot);
  return f ? read_le<T>(t + f) : fallback;
}
// The uint32 fields (constant and segment indices, memory ids, offsets): one copy, as ref.
template <>
[[gnu::noinline]] inline uint32_t scalar<uint32_t>(const uint8_t* t, int slot, uint32_t fallback) {
  const uint16_t f = field(t, slot);
  return f ? read_le<uint32_t>(t + f) : fallback;
}

// Bounds-checked view of the whole buffer, for verification.
class Checked {
 public:
  Checked(const uint8_t* base, size_t size) : base_(base), size_(size) {}

  bool in(const uint8_t* p, size_t n) const {
    if (p < base_) return false;
    size_t off = static_cast<size_t>(p - base_);
    return off <= size_ && n <= size_ - off;
  }
  // A table at `t` and its vtable lie inside the buffer. Fields are checked
  // where they are read (field_fits, ref): like FlatBuffers' own verifier we
  // do not trust the vtable's table size for that, since some writers share
  // one vtable between tables of different sizes.
  bool table(const uint8_t* t) const {
    if (!in(t, 4) || ((t - base_) & 3) != 0) return false;
    int64_t vt_off = static_cast<int64_t>(t - base_) - i32(t);
    if (vt_off < 0 || (vt_off & 1) != 0) return false;
    const uint8_t* vt = base_ + vt_off;
    if (!in(vt, 4)) return false;
    uint16_t vt_size = u16(vt);
    uint16_t t_size = u16(vt + 2);
    return vt_size >= 4 && (vt_size & 1) == 0 && in(vt, vt_size) && t_size >= 4 && in(t, t_size);
  }
  // Field `slot` of a verified table (when present) holds `n` bytes inside the buffer.
  bool field_fits(const uint8_t* t, int slot, size_t n) const {
    uint16_t f = field(t, slot);
    return f == 0 || in(t + f, n);
  }
  // The string in field `slot`: nullptr when absent, or (with *ok set to false) when it is not one.
  const uint8_t* string_field(const uint8_t* t, int slot, bool* ok) const {
    const uint8_t* s = ref(t, slot, ok);
    if (s == nullptr || string(s)) return s;
    *ok = false;
    return nullptr;
  }
  // Fields 0..count-1 of a verified table (those present) each hold `n` bytes inside the buffer.
  bool fields_fit(const uint8_t* t, int count, size_t n) const {
    for (int slot = 0; slot < count; ++slot) {
      if (!field_fits(t, slot, n)) return false;
    }
    return true;
  }
  // `t` (maybe null: false) is a table whose fields 0..count-1 each hold `n` bytes.
  bool scalar_table(const uint8_t* t, int count, size_t n) const {
    return t != nullptr && table(t) && fields_fit(t, count, n);
  }
  // Follows the uoffset in field `slot` (0 when absent, else the target, or
  // sets *ok=false when it points outside).
  const uint8_t* ref(const uint8_t* t, int slot, bool* ok) const {
    uint16_t f = field(t, slot);
    if (f == 0) return nullptr;
    const uint32_t o = in(t + f, 4) ? u32(t + f) : 0u;
    const uint8_t* p = t + f + o;
    if (o == 0 || !in(p, 0)) {
      *ok = false;
      return nullptr;
    }
    return p;
  }
  // The vector of `elem`-byte items in field `slot`: nullptr when absent, or
  // (with *ok set to false) when the field is not such a vector. *ok is never
  // set back to true, so several fields can be read before one check.
  const uint8_t* vector_field(const uint8_t* t, int slot, size_t elem, bool* ok) const {
    const uint8_t* v = ref(t, slot, ok);
    if (v == nullptr || vector(v, elem)) return v;
    *ok = false;
    return nullptr;
  }
  // A vector of `elem`-byte items at `v`, aligned as flatbuffers aligns them.
  bool vector(const uint8_t* v, size_t elem) const {
    if (!in(v, 4) || ((v - base_) & 3) != 0) return false;
    uint32_t n = u32(v);
    if (n > (size_ / (elem ? elem : 1))) return false;
    return in(v + 4, static_cast<size_t>(n) * elem);
  }
  bool string(const uint8_t* s) const { return vector(s, 1) && in(s + 4, u32(s) + 1) && s[4 + u32(s)] == 0; }
  // A table referenced by the i-th entry of a verified vector of offsets.
  const uint8_t* vec_table(const uint8_t* data, uint32_t i) const {
    const uint8_t* p = data + 4 * i;
    uint32_t o = u32(p);
    const uint8_t* t = p + o;
    return (o != 0 && table(t)) ? t : nullptr;
  }

 private:
  const uint8_t* base_;
  size_t size_;
};

}  // namespace fb
}  // namespace mcu
