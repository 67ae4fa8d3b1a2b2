// Structure-aware mutation of ET12 programs for the libFuzzer harnesses.
//
// Byte flips rarely get past the first table check. This walker follows the
// program as the loader does (docs/schema/program.fbs slots), bounds-checking
// every step itself, and records the places where a corruption reaches deep:
// uoffsets, vtable offsets and entries, vector lengths, union tags, value
// indices and other integer fields, the extended header. A mutation edits one
// to three of them in place with values chosen for their kind (off by one,
// zero, -1, huge, another table's position). Test code, not firmware.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace mcu_fuzz {

enum class Site : uint8_t { UOffset, SOffset, VtEntry, VecLen, Tag, I32, I64, U64 };

class ProgramWalker {
 public:
  static constexpr int kMaxSites = 4096;
  static constexpr uint32_t kMaxItems = 64;  // vector items followed per vector

  ProgramWalker(const uint8_t* d, size_t n) : d_(d), n_(n) {}

  void walk() {
    if (n_ < 16) return;
    for (size_t p = 16; p + 8 <= 40 && p + 8 <= n_; p += 8) add(p, Site::U64);  // header sizes
    add(0, Site::UOffset);
    const long root = deref(0);
    program(root);
  }

  int count() const { return count_; }
  size_t pos(int i) const { return pos_[i]; }
  Site kind(int i) const { return kind_[i]; }

 private:
  uint32_t u32(size_t p) const { return static_cast<uint32_t>(d_[p] | d_[p + 1] << 8 | d_[p + 2] << 16) | static_cast<uint32_t>(d_[p + 3]) << 24; }
  uint16_t u16(size_t p) const { return static_cast<uint16_t>(d_[p] | d_[p + 1] << 8); }
  bool in(long p, size_t k) const { return p >= 0 && static_cast<size_t>(p) <= n_ && k <= n_ - static_cast<size_t>(p); }
  void add(size_t p, Site k) {
    if (count_ < kMaxSites) {
      pos_[count_] = p;
      kind_[count_++] = k;
    }
  }
  // Target of the uoffset at p, or -1.
  long deref(long p) const {
    if (!in(p, 4)) return -1;
    const long t = p + static_cast<long>(u32(static_cast<size_t>(p)));
    return in(t, 0) ? t : -1;
  }
  // Position of field `slot` of the table at t (recording the table's own sites once), or -1.
  long field(long t, int slot) {
    if (!in(t, 4)) return -1;
    const long vt = t - static_cast<long>(static_cast<int32_t>(u32(static_cast<size_t>(t))));
    if (!in(vt, 4)) return -1;
    const uint16_t vt_size = u16(static_cast<size_t>(vt));
    const long at = vt + 4 + 2 * slot;
    if (4 + 2 * slot >= vt_size || !in(at, 2)) return -1;
    add(static_cast<size_t>(at), Site::VtEntry);
    const uint16_t f = u16(static_cast<size_t>(at));
    return f != 0 && in(t + f, 1) ? t + f : -1;
  }
  long table_field(long t, int slot, Site k, size_t width) {
    const long f = field(t, slot);
    if (f >= 0 && in(f, width)) add(static_cast<size_t>(f), k);
    return f;
  }
  // Sub-table, vector or string of field `slot`.
  long ref(long t, int slot) {
    const long f = field(t, slot);
    if (f < 0 || !in(f, 4)) return -1;
    add(static_cast<size_t>(f), Site::UOffset);
    return deref(f);
  }
  void table(long t) {
    if (in(t, 4)) add(static_cast<size_t>(t), Site::SOffset);
  }
  // A vector at v: records its length; returns the number of items to follow.
  uint32_t vec(long v, size_t elem) {
    if (!in(v, 4)) return 0;
    add(static_cast<size_t>(v), Site::VecLen);
    uint32_t k = u32(static_cast<size_t>(v));
    if (k > kMaxItems) k = kMaxItems;
    while (k > 0 && !in(v + 4, static_cast<size_t>(k) * elem)) --k;
    return k;
  }
  long vec_table(long v, uint32_t i) {
    const long p = v + 4 + 4 * static_cast<long>(i);
    add(static_cast<size_t>(p), Site::UOffset);
    const long t = deref(p);
    table(t);
    return t;
  }
  void ints(long v, size_t elem) {
    const uint32_t k = vec(v, elem);
    for (uint32_t i = 0; i < k; ++i) add(static_cast<size_t>(v + 4 + static_cast<long>(elem * i)), elem == 8 ? Site::I64 : Site::I32);
  }
  void program(long root) {
    table(root);
    table_field(root, 0, Site::I32, 4);  // version
    const long plans = ref(root, 1);
    const uint32_t np = vec(plans, 4);
    for (uint32_t i = 0; i < np && i < 2; ++i) plan(vec_table(plans, i));
    const long segs = ref(root, 4);
    const uint32_t ns = vec(segs, 4);
    for (uint32_t i = 0; i < ns; ++i) {
      const long s = vec_table(segs, i);
      table_field(s, 0, Site::I64, 8);
      table_field(s, 1, Site::I64, 8);
    }
    const long cseg = ref(root, 5);
    table(cseg);
    table_field(cseg, 0, Site::I32, 4);
    ints(ref(cseg, 1), 8);
    const long bufs = ref(root, 2);
    const uint32_t nb = vec(bufs, 4);
    for (uint32_t i = 0; i < nb; ++i) vec(ref(vec_table(bufs, i), 0), 1);
  }
  void plan(long p) {
    const long values = ref(p, 2);
    const uint32_t nv = vec(values, 4);
    for (uint32_t i = 0; i < nv; ++i) value(vec_table(values, i));
    ints(ref(p, 3), 4);
    ints(ref(p, 4), 4);
    const long chains = ref(p, 5);
    const uint32_t nc = vec(chains, 4);
    for (uint32_t i = 0; i < nc && i < 2; ++i) {
      const long c = vec_table(chains, i);
      ints(ref(c, 0), 4);
      ints(ref(c, 1), 4);
      const long list = ref(c, 2);
      const uint32_t ni = vec(list, 4);
      for (uint32_t k = 0; k < ni; ++k) {
        const long ins = vec_table(list, k);
        table_field(ins, 0, Site::Tag, 1);
        const long call = ref(ins, 1);
        table(call);
        table_field(call, 0, Site::I32, 4);  // operator or delegate index
        ints(ref(call, 1), 4);
      }
    }
    const long ops = ref(p, 6);
    const uint32_t no = vec(ops, 4);
    for (uint32_t i = 0; i < no; ++i) {
      const long op = vec_table(ops, i);
      vec(ref(op, 0), 1);
      vec(ref(op, 1), 1);
    }
    const long dels = ref(p, 7);
    const uint32_t nd = vec(dels, 4);
    for (uint32_t i = 0; i < nd; ++i) {
      const long del = vec_table(dels, i);
      vec(ref(del, 0), 1);
      const long loc = ref(del, 1);
      table(loc);
      table_field(loc, 0, Site::Tag, 1);
      table_field(loc, 1, Site::I32, 4);
    }
    ints(ref(p, 8), 8);
  }
  void value(long ev) {
    const long tag_at = table_field(ev, 0, Site::Tag, 1);
    const uint8_t tag = tag_at >= 0 ? d_[tag_at] : 0;
    const long t = ref(ev, 1);
    table(t);
    switch (tag) {
      case 2: case 3: case 4:  // Int, Bool, Double
        table_field(t, 0, Site::I64, tag == 3 ? 1 : 8);
        break;
      case 5: {  // Tensor
        table_field(t, 0, Site::Tag, 1);  // scalar type
        ints(ref(t, 2), 4);               // sizes
        vec(ref(t, 3), 1);                // dim order
        table_field(t, 5, Site::I32, 4);  // constant buffer index
        const long alloc = ref(t, 6);
        table(alloc);
        for (int s = 0; s < 3; ++s) table_field(alloc, s, Site::I32, 4);
        break;
      }
      case 6: vec(ref(t, 0), 1); break;
      case 7: ints(ref(t, 0), 8); break;
      case 8: vec(ref(t, 0), 8); break;
      case 9: vec(ref(t, 0), 1); break;
      case 10: case 11: ints(ref(t, 0), 4); break;
      default: break;
    }
  }

  const uint8_t* d_;
  size_t n_;
  int count_ = 0;
  size_t pos_[kMaxSites];
  Site kind_[kMaxSites];
};

class Rng {
 public:
  explicit Rng(unsigned seed) : s_(seed * 2654435761u + 1u) {}
  uint32_t next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 17;
    s_ ^= s_ << 5;
    return s_;
  }
  uint32_t below(uint32_t n) { return n ? next() % n : 0; }

 private:
  uint32_t s_;
};

inline void put_le(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

inline uint64_t get_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// An edge value for an integer of `n` bytes that held `v`.
inline uint64_t edge(Rng& r, uint64_t v, size_t size, int n) {
  switch (r.below(10)) {
    case 0: return 0;
    case 1: return ~0ull;  // -1
    case 2: return v + 1;
    case 3: return v - 1;
    case 4: return v + 1 + r.below(16);
    case 5: return n == 2 ? 0x7FFF + r.below(2) : (n == 4 ? 0x7FFFFFFFull + r.below(2) : 0x7FFFFFFFFFFFFFFFull + r.below(2));
    case 6: return size + r.below(8) - 4;
    case 7: return v * 2 + r.below(2);
    case 8: return v ^ (1ull << r.below(8 * n));
    default: return r.below(64);
  }
}

// Mutates the program in place; returns its new size (or 0: nothing done).
inline size_t mutate_program(uint8_t* data, size_t size, unsigned seed) {
  ProgramWalker* w = new ProgramWalker(data, size);  // large: not on the stack
  w->walk();
  Rng r(seed);
  size_t done = 0;
  if (w->count() > 0) {
    const int edits = 1 + static_cast<int>(r.below(3));
    for (int e = 0; e < edits; ++e) {
      const int i = static_cast<int>(r.below(static_cast<uint32_t>(w->count())));
      const size_t p = w->pos(i);
      uint8_t* at = data + p;
      switch (w->kind(i)) {
        case Site::Tag:
          if (p < size) *at = static_cast<uint8_t>(r.below(4) == 0 ? r.next() : r.below(13));
          break;
        case Site::VtEntry:
          if (p + 2 <= size) put_le(at, edge(r, get_le(at, 2), size, 2), 2);
          break;
        case Site::UOffset: {
          if (p + 4 > size) break;
          // Another recorded place (a table, vector, field), or an edge value.
          const size_t target = w->pos(static_cast<int>(r.below(static_cast<uint32_t>(w->count()))));
          const uint64_t v = r.below(2) && target > p ? target - p : edge(r, get_le(at, 4), size, 4);
          put_le(at, v, 4);
          break;
        }
        case Site::SOffset:
        case Site::VecLen:
        case Site::I32:
          if (p + 4 <= size) put_le(at, edge(r, get_le(at, 4), size, 4), 4);
          break;
        case Site::I64:
        case Site::U64:
          if (p + 8 <= size) put_le(at, edge(r, get_le(at, 8), size, 8), 8);
          break;
      }
    }
    done = size;
  }
  delete w;
  return done;
}

}  // namespace mcu_fuzz
