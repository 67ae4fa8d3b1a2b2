// Loading: Executor::load verifies a whole ET12 program once, every check of the loader's contract
// (docs/loader.md), then binds the verified plan: kernels resolved by name, the value and instruction
// caches filled, kernels prepared, state tensors set to their initial values (reset_state, which the
// protocol's RESET also calls). Execution (executor.cpp) then reads the program without checks.
#include "flatbuffer.h"
#include "program_schema.h"

namespace mcu {
namespace {

// The vectors of an ExecutionPlan the loader reads, and their item sizes.
enum PlanVector { kBufferSizesVector, kDelegatesVector, kValuesVector, kInputsVector, kOutputsVector,
                  kOperatorsVector, kChainsVector, kNumPlanVectors };
struct VectorField {
  uint8_t slot;
  uint8_t elem;
};
constexpr VectorField kPlanVectors[kNumPlanVectors] = {{kPlanBufferSizes, 8}, {kPlanDelegates, 4}, {kPlanValues, 4},
                                                       {kPlanInputs, 4},      {kPlanOutputs, 4},   {kPlanOperators, 4},
                                                       {kPlanChains, 4}};

constexpr uint32_t kMaxSchemaVersion = 0;  // ExecuTorch's EXECUTORCH_SCHEMA_VERSION (1.5)
constexpr uint32_t kHeaderOffset = 8;
constexpr uint32_t kHeaderLength = 32;

bool pow2_aligned(const void* p, size_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

size_t alignment_of(DType t) {
  size_t s = dtype_size(t);
  return s > 8 ? 8 : (s == 0 ? 1 : s);
}

// A flatbuffer string (verified; nullptr: the empty string) equals the C string c.
bool str_equal(const uint8_t* s, const char* c) {
  const uint32_t n = s != nullptr ? fb::u32(s) : 0u;
  for (uint32_t i = 0; i < n; ++i) {
    if (c[i] != static_cast<char>(s[4 + i]) || c[i] == '\0') return false;
  }
  return c[n] == '\0';
}

// Four-character codes read as little-endian words: "ET12", "eh00".
constexpr uint32_t kFileIdentifier = 0x32315445u;
constexpr uint32_t kHeaderMagic = 0x30306865u;

}  // namespace

// A verified tensor value whose data is constant (in the program, not the arena).
#if MCU_EXTERNAL_CONSTANTS > 0
// A verified tensor with neither a constant index nor a place is an external constant (verify_value).
bool Executor::is_external(int32_t v) const {
  if (value_type(v) != kTensor) return false;
  const uint8_t* t = value_table(v);
  return fb::scalar<uint32_t>(t, kTensorConst, 0) == 0 && fb::ref(t, kTensorAlloc) == nullptr;
}
bool Executor::is_constant(int32_t v) const {
  return fb::scalar<uint32_t>(value_table(v), kTensorConst, 0) != 0 || is_external(v);
}
#else
bool Executor::is_constant(int32_t v) const { return fb::scalar<uint32_t>(value_table(v), kTensorConst, 0) != 0; }
#endif

[[gnu::cold]] Error Executor::verify_value(int32_t i) {
  fb::Checked c(data_, size_);
  bool ok = true;
  const uint8_t* ev = c.vec_table(values_, static_cast<uint32_t>(i));
  if (ev == nullptr || !c.field_fits(ev, 0, 1)) return Error::InvalidProgram;
  uint8_t tag = fb::scalar<uint8_t>(ev, 0, kNone);
  if (tag > kOptTensorList) return Error::InvalidProgram;
  if (!has_kind(tag)) return Error::UnsupportedProgram;
  const uint8_t* t = c.ref(ev, 1, &ok);
  // A payload, when present, is a table for every tag (None and Null too:
  // program_field reads its vtable for every value).
  if (!ok || (t != nullptr && !c.table(t))) return Error::InvalidProgram;
  if (tag == kNone || tag == kNull) return Error::Ok;
  if (t == nullptr) return Error::InvalidProgram;
  // A kind this firmware does not read was rejected above; its case is compiled out (has_kind is constant).
  switch (tag) {
    case kInt:
    case kDouble:
      if (!has_kind(kInt) && !has_kind(kDouble)) return Error::UnsupportedProgram;
      return c.field_fits(t, 0, 8) ? Error::Ok : Error::InvalidProgram;
    case kBool:
      if (!has_kind(kBool)) return Error::UnsupportedProgram;
      return c.field_fits(t, 0, 1) ? Error::Ok : Error::InvalidProgram;
    case kString: {
      if (!has_kind(kString)) return Error::UnsupportedProgram;
      const uint8_t* s = c.string_field(t, 0, &ok);
      return (ok && s != nullptr) ? Error::Ok : Error::InvalidProgram;
    }
    case kIntList:
    case kDoubleList:
    case kBoolList:
    case kTensorList:
    case kOptTensorList: {
      if (!has_value_lists() && !has_kind(kDoubleList) && !has_kind(kBoolList)) return Error::UnsupportedProgram;
      const bool int_list = has_kind(kIntList) && tag == kIntList;
      const bool opt_list = has_kind(kOptTensorList) && tag == kOptTensorList;
      const bool tensor_list = has_kind(kTensorList) && tag == kTensorList;
      const size_t elem = (int_list || (has_kind(kDoubleList) && tag == kDoubleList)) ? 8
                          : (has_kind(kBoolList) && tag == kBoolList) ? 1 : 4;
      const uint8_t* v = c.vector_field(t, 0, elem, &ok);
      if (!ok) return Error::InvalidProgram;
      if (int_list || tensor_list || opt_list) {
        // Items are value indices: checked in range here, types checked once
        // every value's tag is known (below, in load).
        for (uint32_t k = 0; k < fb::vec_len(v); ++k) {
          int64_t idx = int_list ? fb::i64(v + 4 + 8 * k) : fb::i32(v + 4 + 4 * k);
          if (idx < 0 || idx >= num_values_) {
            if (!(opt_list && idx == -1)) return Error::InvalidProgram;
          }
        }
      }
      return Error::Ok;
    }
    case kTensor:
      break;
    default:
      return Error::InvalidProgram;
  }
  // Tensor.
  if (!c.field_fits(t, kTensorType, 1) || !c.field_fits(t, kTensorConst, 4)) return Error::InvalidProgram;
  DType dt = static_cast<DType>(fb::scalar<int8_t>(t, kTensorType, 0));
  size_t esize = dtype_size(dt);
  if (esize == 0) return Error::UnsupportedProgram;
  const uint8_t* sizes = c.vector_field(t, kTensorSizes, 4, &ok);
  if (!ok) return Error::InvalidProgram;
  uint32_t dim = fb::vec_len(sizes);
  if (dim > static_cast<uint32_t>(kMaxDims)) return Error::UnsupportedProgram;
  uint32_t numel = 1;
  for (uint32_t d = 0; d < dim; ++d) {
    const int32_t s = fb::i32(sizes + 4 + 4 * d);
    if (s < 0 || __builtin_mul_overflow(numel, static_cast<uint32_t>(s), &numel) || numel > 0x7FFFFFFFu) {
      return Error::InvalidProgram;
    }
  }
  const uint8_t* order = c.vector_field(t, kTensorDimOrder, 1, &ok);
  if (!ok) return Error::InvalidProgram;
  if (fb::vec_len(order) != 0) {
    if (fb::vec_len(order) != dim) return Error::InvalidProgram;
    uint32_t seen = 0;
    for (uint32_t d = 0; d < dim; ++d) {
      uint8_t o = order[4 + d];
      if (o >= dim || (seen & (1u << o))) return Error::InvalidProgram;
      seen |= 1u << o;
    }
  }
  const uint64_t nbytes = static_cast<uint64_t>(numel) * esize;
  uint32_t cidx = fb::scalar<uint32_t>(t, kTensorConst, 0);
  const uint8_t* alloc = c.ref(t, kTensorAlloc, &ok);
  if (!ok) return Error::InvalidProgram;
#if MCU_PROGRAM_HAS_STATE
  if (cidx != 0 && alloc != nullptr) {
    // A state tensor (ExecuTorch's mutable buffer with an initial value): planned, and its
    // initial value is entry cidx of the mutable data segment (copied in by reset_state()).
    if (cidx >= static_cast<uint32_t>(num_state_offsets_)) return Error::ConstantOutOfBounds;
    const uint64_t off = fb::u64(state_offsets_ + 8 * cidx);
    if (off > state_size_ || nbytes > state_size_ - off) return Error::ConstantOutOfBounds;
    cidx = 0;  // verified as a planned tensor below
  }
#endif
  if (cidx != 0) {
    const uint8_t* p = nullptr;
#if MCU_CONSTANT_BUFFERS
    if (constant_offsets_ == nullptr) {  // inline buffers (legacy)
      if (cidx >= static_cast<uint32_t>(num_constant_buffers_)) return Error::ConstantOutOfBounds;
      const uint8_t* buf = c.vec_table(constant_buffers_, cidx);
      if (buf == nullptr) return Error::InvalidProgram;
      const uint8_t* storage = c.vector_field(buf, 0, 1, &ok);
      if (!ok || storage == nullptr) return Error::InvalidProgram;
      if (fb::vec_len(storage) < nbytes) return Error::ConstantOutOfBounds;
      p = storage + 4;
    }
#endif
    if (p == nullptr) {  // the constant segment (without one, num_constant_offsets_ is 0)
      if (cidx >= static_cast<uint32_t>(num_constant_offsets_)) return Error::ConstantOutOfBounds;
      uint64_t off = fb::u64(constant_offsets_ + 8 * cidx);
      if (off > constants_size_ || nbytes > constants_size_ - off) return Error::ConstantOutOfBounds;
      p = constants_ + off;
    }
    if (!pow2_aligned(p, alignment_of(dt))) return Error::Misaligned;
    // Without state support a planned tensor with an initial value is taken for a constant;
    // no kernel may write a constant ('O' arguments, delegate arguments, program inputs and
    // outputs: verify_instruction, load), so a program that updates state is rejected there.
    return Error::Ok;
  }
  if (alloc == nullptr) {
#if MCU_EXTERNAL_CONSTANTS > 0
    // An external constant (ExecuTorch's TensorDataLocation EXTERNAL): a key and no data; only a generated layer
    // that holds the data may read it (check_external_owners, after the kernels are prepared).
    const uint8_t* info = c.ref(t, kTensorExtraInfo, &ok);
    if (!ok || (info != nullptr && !c.table(info))) return Error::InvalidProgram;
    if (info != nullptr) {
      if (!c.field_fits(info, kExtraLocation, 1)) return Error::InvalidProgram;
      const uint8_t* key = c.string_field(info, kExtraName, &ok);
      if (!ok) return Error::InvalidProgram;
      if (fb::scalar<int8_t>(info, kExtraLocation, 0) == kLocationExternal && key != nullptr && fb::u32(key) > 0) {
        return Error::Ok;
      }
    }
#endif
    // Neither constant nor planned: ExecuTorch uses these for tensors whose
    // memory is set at run time (or, external, held in a data file), which this runtime does not do.
    return Error::UnsupportedProgram;
  }
  if (!c.scalar_table(alloc, 3, 4)) return Error::InvalidProgram;
  // Memory id k (1..MCU_ARENA_REGIONS) is planned buffer k: arena_[k - 1], arena_used_[k - 1] bytes.
  const uint32_t mem = fb::scalar<uint32_t>(alloc, 0, 0);
  if (mem < 1 || mem > MCU_ARENA_REGIONS) return Error::UnsupportedProgram;
  const size_t used = arena_used_[mem - 1];
  uint64_t off = fb::scalar<uint32_t>(alloc, 1, 0) | (static_cast<uint64_t>(fb::scalar<uint32_t>(alloc, 2, 0)) << 32);
  if (off > used || nbytes > used - off) return Error::ArenaOutOfBounds;
  if ((off & (alignment_of(dt) - 1)) != 0) return Error::Misaligned;
  return Error::Ok;
}

namespace {

// The KernelTypes tags a signature character accepts, one bit per tag ('O'
// and 'Y' also need their tensors to live in the arena): a table of 16-bit
// masks for '?'..'Z'; a small letter ('t', 'i', 's', 'l', 'd', 'z') is its capital or None.
constexpr uint16_t kOptional = 1u << kNone | 1u << kNull;
struct SignatureTags {
  uint16_t tags['Z' - '?' + 1] = {};
  constexpr SignatureTags() {
    tags[0] = 0xFFFFu;  // '?': anything (not checked, not read)
    tags['T' - '?'] = tags['O' - '?'] = 1u << kTensor;
    tags['I' - '?'] = 1u << kInt;
    tags['D' - '?'] = 1u << kDouble;
    tags['B' - '?'] = 1u << kBool;
    tags['S' - '?'] = 1u << kInt | 1u << kDouble | 1u << kBool;
    tags['L' - '?'] = 1u << kIntList;
    tags['Z' - '?'] = 1u << kString;
    tags['X' - '?'] = tags['Y' - '?'] = 1u << kTensorList;
    tags['Q' - '?'] = 1u << kOptTensorList | 1u << kTensorList;  // Tensor?[]: items checked at load
  }
};
constexpr SignatureTags kSignatureTags;

uint32_t accepted_tags(char sig) {
  const bool optional = sig >= 'a' && sig <= 'z';  // a small letter: its capital or None
  const int c = optional ? sig - ('a' - 'A') : sig;
  if (c < '?' || c > 'Z') return 0;
  return kSignatureTags.tags[c - '?'] | (optional ? kOptional : 0u);
}

}  // namespace

[[gnu::cold]] Error Executor::verify_instruction(int32_t i, const KernelTable& kernels) {
  fb::Checked c(data_, size_);
  bool ok = true;
  const uint8_t* ins = c.vec_table(instructions_, static_cast<uint32_t>(i));
  if (ins == nullptr || !c.field_fits(ins, 0, 1)) return Error::InvalidProgram;
#if MCU_MAX_DELEGATES > 0
  if (fb::scalar<uint8_t>(ins, 0, 0) == kDelegateCall) {
    const uint8_t* dc = c.ref(ins, 1, &ok);
    return ok ? verify_delegate_call(dc) : Error::InvalidProgram;
  }
#endif
  if (fb::scalar<uint8_t>(ins, 0, 0) != kKernelCall) return Error::UnsupportedProgram;
  const uint8_t* kc = c.ref(ins, 1, &ok);
  if (!ok || !c.scalar_table(kc, 1, 4)) return Error::InvalidProgram;
  int32_t op = fb::scalar<int32_t>(kc, 0, 0);
  if (op < 0 || op >= num_operators_) return Error::InvalidProgram;
  const uint8_t* args = c.vector_field(kc, 1, 4, &ok);
  if (!ok) return Error::InvalidProgram;
  const char* sig = kernels.entries[entry_of(op)].signature;
  const uint32_t n = fb::vec_len(args);
  for (uint32_t k = 0; k < n; ++k) {  // one signature character per argument
    if (sig[k] == '\0') return Error::BadArgument;
  }
  if (sig[n] != '\0') return Error::BadArgument;
  for (uint32_t k = 0; k < n; ++k) {
    const int32_t v = fb::i32(args + 4 + 4 * k);
    if (v < 0 || v >= num_values_) return Error::InvalidProgram;
    if (((accepted_tags(sig[k]) >> value_type(v)) & 1u) == 0) return Error::BadArgument;
#if MCU_PROGRAM_HAS_STATE
    // a constant may not be an out tensor; a state tensor (constant data and a planned place) may
    if (sig[k] == 'O' && is_constant(v) && fb::ref(value_table(v), kTensorAlloc) == nullptr) return Error::BadArgument;
#else
    if (sig[k] == 'O' && is_constant(v)) return Error::BadArgument;
#endif
    if (has_kind(kTensorList) && sig[k] == 'Y') {  // every tensor of an out list lives in the arena
      const uint8_t* items = fb::ref(value_table(v), 0);
      for (uint32_t j = 0; j < fb::vec_len(items); ++j) {
        if (is_constant(fb::i32(items + 4 + 4 * j))) return Error::BadArgument;
      }
    }
  }
  return Error::Ok;
}

#if MCU_MAX_DELEGATES > 0
// The program's BackendDelegates: each must be the backend the firmware's
// delegate table has at its index, with processed data in a segment inside the
// file. Compile specs are not read.
[[gnu::cold]] Error Executor::verify_delegates(const uint8_t* delegates, const uint8_t* root, uint64_t seg_base,
                                               uint64_t seg_size) {
  fb::Checked c(data_, size_);
  bool ok = true;
  num_delegates_ = 0;
  const uint32_t n = fb::vec_len(delegates);
  if (n == 0) return Error::Ok;
  if (n > static_cast<uint32_t>(MCU_MAX_DELEGATES) || n > kDelegateTable.count) {
    detail_ = static_cast<int32_t>(n);
    return Error::UnsupportedProgram;
  }
  const uint8_t* segs = c.vector_field(root, kProgSegments, 4, &ok);
  if (!ok) return Error::InvalidProgram;
  for (uint32_t k = 0; k < n; ++k) {
    detail_ = static_cast<int32_t>(k);
    const uint8_t* d = c.vec_table(delegates + 4, k);
    if (d == nullptr) return Error::InvalidProgram;
    const uint8_t* id = c.string_field(d, 0, &ok);
    if (!ok || id == nullptr) return Error::InvalidProgram;
    if (!str_equal(id, kDelegateTable.entries[k].backend)) return Error::UnsupportedProgram;
    const uint8_t* loc = c.ref(d, 1, &ok);
    if (!ok || !c.scalar_table(loc, 1, 1) || !c.field_fits(loc, 1, 4)) {
      return Error::InvalidProgram;
    }
    if (fb::scalar<int8_t>(loc, 0, 0) != kLocationSegment) return Error::UnsupportedProgram;
    const uint32_t si = fb::scalar<uint32_t>(loc, 1, 0);
    if (si >= fb::vec_len(segs)) return Error::InvalidProgram;
    const uint8_t* seg = c.vec_table(segs + 4, si);
    if (seg == nullptr || !c.fields_fit(seg, 2, 8)) return Error::InvalidProgram;
    const uint64_t off = fb::scalar<uint64_t>(seg, 0, 0), len = fb::scalar<uint64_t>(seg, 1, 0);
    if (off > seg_size || len > seg_size - off) return Error::InvalidProgram;
    delegates_[k] = Processed{data_ + seg_base + off, static_cast<size_t>(len)};
  }
  detail_ = -1;
  num_delegates_ = static_cast<int32_t>(n);
  return Error::Ok;
}

// A DelegateCall: a known delegate, arena tensors as arguments, and the
// backend's own check of its processed data against them.
[[gnu::cold]] Error Executor::verify_delegate_call(const uint8_t* dc) {
  fb::Checked c(data_, size_);
  bool ok = true;
  if (!c.scalar_table(dc, 1, 4)) return Error::InvalidProgram;
  const int32_t k = fb::scalar<int32_t>(dc, 0, 0);
  if (k < 0 || k >= num_delegates_) return Error::InvalidProgram;
  const uint8_t* args = c.vector_field(dc, 1, 4, &ok);
  if (!ok) return Error::InvalidProgram;
  const uint32_t n = fb::vec_len(args);
  if (n > 0xFFFFu) return Error::BadArgument;
  for (uint32_t a = 0; a < n; ++a) {
    const int32_t v = fb::i32(args + 4 + 4 * a);
    if (v < 0 || v >= num_values_) return Error::InvalidProgram;
    if (value_type(v) != kTensor || is_constant(v)) {
      return Error::BadArgument;
    }
  }
  KernelContext ctx;
  ctx.exec_ = this;
  ctx.args_ = fb::vec_data(args);
  ctx.num_args_ = static_cast<int32_t>(n);
  const DelegateEntry& entry = kDelegateTable.entries[k];
  return entry.prepare(k, delegates_[k].data, delegates_[k].size, ctx);
}
#endif

[[gnu::cold]] Error Executor::load(const uint8_t* data, size_t size, const KernelTable& kernels, uint8_t* arena,
                     size_t arena_size) {
  arena_[0] = arena;
  arena_size_[0] = arena_size;
  for (int k = 1; k < MCU_ARENA_REGIONS; ++k) {
    arena_[k] = nullptr;
    arena_size_[k] = 0;
  }
#if MCU_KERNEL_PREPARE && !MCU_PROGRAM_METHODS
  return load_and_prepare(data, size, kernels);
#else
  return load_program(data, size, kernels);
#endif
}

#if MCU_ARENA_REGIONS > 1
[[gnu::cold]] Error Executor::load(const uint8_t* data, size_t size, const KernelTable& kernels,
                                   const ArenaRegion* arenas) {
  for (int k = 0; k < MCU_ARENA_REGIONS; ++k) {
    arena_[k] = arenas[k].data;
    arena_size_[k] = arenas[k].data != nullptr ? arenas[k].size : 0;
  }
#if MCU_KERNEL_PREPARE && !MCU_PROGRAM_METHODS
  return load_and_prepare(data, size, kernels);
#else
  return load_program(data, size, kernels);
#endif
}
#endif

#if MCU_KERNEL_PREPARE && !MCU_PROGRAM_METHODS
[[gnu::cold]] Error Executor::load_and_prepare(const uint8_t* data, size_t size, const KernelTable& kernels) {
  Error e = load_program(data, size, kernels);
  if (e == Error::Ok) e = prepare_loaded(kernels);
  if (e != Error::Ok) loaded_ = false;
  return e;
}
#endif

#if MCU_ARENA_REGIONS > 1 || (MCU_KERNEL_PREPARE && !MCU_PROGRAM_METHODS)
[[gnu::cold, gnu::noinline]] Error Executor::load_program(const uint8_t* data, size_t size, const KernelTable& kernels) {
#else
// load()'s body (its only caller): one function less.
[[gnu::cold, gnu::always_inline]] inline Error Executor::load_program(const uint8_t* data, size_t size,
                                                                      const KernelTable& kernels) {
#endif
  loaded_ = false;
  cached_ = 0;
  cached_calls_ = 0;
#if MCU_KERNEL_PREPARE && MCU_BOUND_CALLS > 0 && MCU_BOUND_TABLE == 0
  num_bound_ = 0;
#endif
  detail_ = -1;
#if MCU_PROGRAM_METHODS
  kernels_ = &kernels;
#endif
  data_ = data;
  size_ = size;
  constant_offsets_ = nullptr;
  num_constant_offsets_ = 0;
#if MCU_CONSTANT_BUFFERS
  constant_buffers_ = nullptr;
  num_constant_buffers_ = 0;
#endif
  constants_ = nullptr;
  constants_size_ = 0;

  if (data == nullptr || size < 16) return Error::InvalidProgram;
  if (fb::u32(data + 4) != kFileIdentifier) return Error::BadIdentifier;
  if (!pow2_aligned(data, 16)) return Error::Misaligned;
  for (int k = 0; k < MCU_ARENA_REGIONS; ++k) {
    if (!pow2_aligned(arena_[k], 16)) return Error::Misaligned;
  }
  bool ok = true;

  // Extended header: where the segment data (constants) lives.
  uint64_t seg_base = 0, seg_size = 0;
  bool has_header = size >= kHeaderOffset + kHeaderLength && fb::u32(data + kHeaderOffset) == kHeaderMagic;
  if (has_header) {
    uint32_t hlen = fb::u32(data + kHeaderOffset + 4);
    uint64_t prog_size = fb::u64(data + kHeaderOffset + 8);
    seg_base = fb::u64(data + kHeaderOffset + 16);
    seg_size = fb::u64(data + kHeaderOffset + 24);
    // The segments start after the flatbuffer, and every table is read from
    // the flatbuffer alone: no constant (nor delegate blob) overlaps a table.
    if (hlen < kHeaderLength || prog_size > size || seg_base < prog_size || seg_base > size ||
        seg_size > size - seg_base) {
      return Error::InvalidProgram;
    }
    size_ = static_cast<size_t>(prog_size);
  }
  fb::Checked c(data, size_);

  const uint8_t* root = data + fb::u32(data);
  if (!c.scalar_table(root, kProgVersion + 1, 4)) return Error::InvalidProgram;
  // Schema version: like ExecuTorch's runtime, refuse anything newer than we know.
  const uint32_t version = fb::scalar<uint32_t>(root, kProgVersion, 0);
  if (version > kMaxSchemaVersion) {
    detail_ = static_cast<int32_t>(version & 0x7FFFFFFFu);
    return Error::UnsupportedProgram;
  }
  const uint8_t* plans = c.vector_field(root, kProgPlans, 4, &ok);
  if (!ok || plans == nullptr || fb::vec_len(plans) < 1) return Error::InvalidProgram;

  // Constants: a segment (current format) or inline buffers (legacy).
  const uint8_t* cseg = c.ref(root, kProgConstSegment, &ok);
  if (!ok) return Error::InvalidProgram;
  const uint8_t* offsets = nullptr;
  if (cseg != nullptr) {
    if (!c.scalar_table(cseg, 1, 4)) return Error::InvalidProgram;
    offsets = c.vector_field(cseg, 1, 8, &ok);
    if (!ok) return Error::InvalidProgram;
  }
  if (fb::vec_len(offsets) > 0) {
    if (!has_header) return Error::InvalidProgram;
    const uint8_t* segs = c.vector_field(root, kProgSegments, 4, &ok);
    if (!ok || segs == nullptr) return Error::InvalidProgram;
    uint32_t si = fb::scalar<uint32_t>(cseg, 0, 0);
    if (si >= fb::vec_len(segs)) return Error::InvalidProgram;
    const uint8_t* seg = c.vec_table(segs + 4, si);
    if (seg == nullptr || !c.fields_fit(seg, 2, 8)) return Error::InvalidProgram;
    uint64_t off = fb::scalar<uint64_t>(seg, 0, 0), len = fb::scalar<uint64_t>(seg, 1, 0);
    if (off > seg_size || len > seg_size - off) return Error::ConstantOutOfBounds;
    constants_ = data + seg_base + off;
    constants_size_ = static_cast<size_t>(len);
    constant_offsets_ = offsets + 4;
    num_constant_offsets_ = static_cast<int32_t>(fb::vec_len(offsets));
  }
#if MCU_CONSTANT_BUFFERS
  else {
    const uint8_t* bufs = c.vector_field(root, kProgConstBuffers, 4, &ok);
    if (!ok) return Error::InvalidProgram;
    constant_buffers_ = fb::vec_data(bufs);
    num_constant_buffers_ = static_cast<int32_t>(fb::vec_len(bufs));
  }
#endif

#if MCU_PROGRAM_HAS_STATE
  // Initial values of state tensors: the first mutable data segment (ExecuTorch's layout).
  state_data_ = nullptr;
  state_offsets_ = nullptr;
  num_state_offsets_ = 0;
  state_size_ = 0;
  {
    const uint8_t* mutables = c.vector_field(root, kProgMutableData, 4, &ok);
    if (!ok) return Error::InvalidProgram;
    if (fb::vec_len(mutables) > 0) {
      const uint8_t* m = c.vec_table(mutables + 4, 0);
      if (m == nullptr || !c.field_fits(m, 0, 4) || !has_header) return Error::InvalidProgram;
      const uint8_t* moffs = c.vector_field(m, 1, 8, &ok);
      if (!ok) return Error::InvalidProgram;
      const uint8_t* segs = c.vector_field(root, kProgSegments, 4, &ok);
      if (!ok || segs == nullptr) return Error::InvalidProgram;
      const uint32_t si = fb::scalar<uint32_t>(m, 0, 0);
      if (si >= fb::vec_len(segs)) return Error::InvalidProgram;
      const uint8_t* seg = c.vec_table(segs + 4, si);
      if (seg == nullptr || !c.fields_fit(seg, 2, 8)) return Error::InvalidProgram;
      const uint64_t off = fb::scalar<uint64_t>(seg, 0, 0), len = fb::scalar<uint64_t>(seg, 1, 0);
      if (off > seg_size || len > seg_size - off) return Error::ConstantOutOfBounds;
      state_data_ = data + seg_base + off;
      state_size_ = static_cast<size_t>(len);
      state_offsets_ = fb::vec_data(moffs);
      num_state_offsets_ = static_cast<int32_t>(fb::vec_len(moffs));
    }
  }
#endif

#if MCU_PROGRAM_METHODS
  // Every execution plan (method) is verified; the last one bound is method 0, the active one.
  plans_ = plans + 4;
  num_plans_ = fb::vec_len(plans);
  seg_base_ = seg_base;
  seg_size_ = seg_size;
  for (uint32_t k = num_plans_; k-- > 0;) {
    const Error e = bind_plan(k, kernels, true);
    if (e != Error::Ok) return e;
  }
  active_method_ = 0;
#else
  // One method: the first execution plan (a firmware built for one method never reads the others).
  {
    const Error e = bind_plan(c.vec_table(plans + 4, 0), root, seg_base, seg_size, kernels);
    if (e != Error::Ok) return e;
  }
#endif
  loaded_ = true;
#if MCU_PROGRAM_HAS_STATE
  reset_state();
#endif
  return Error::Ok;
}

#if MCU_PROGRAM_METHODS
// Plan k of the program: verified (every check of docs/loader.md; with `check` false, the values and
// instructions are taken as verified at load), then its values, instructions and operators become the
// ones execute() runs. load() runs it for every plan; select_method() again for one, without `check`.
[[gnu::cold]] Error Executor::bind_plan(uint32_t k, const KernelTable& kernels, bool check) {
  fb::Checked c(data_, size_);
  bool ok = true;
  const uint8_t* root = data_ + fb::u32(data_);
  const uint64_t seg_base = seg_base_, seg_size = seg_size_;
  (void)root;
  (void)seg_base;
  (void)seg_size;
  const uint8_t* plan = c.vec_table(plans_, k);
  if (plan == nullptr) return Error::InvalidProgram;
  c.string_field(plan, kPlanName, &ok);
  if (!ok) return Error::InvalidProgram;
  cached_ = 0;  // the caches are the previous method's until they are decoded again below
  cached_calls_ = 0;
#if MCU_KERNEL_PREPARE && MCU_BOUND_CALLS > 0 && MCU_BOUND_TABLE == 0
  num_bound_ = 0;
#endif
#else
// The first plan (load's only caller, inlined there: a firmware for one method pays nothing for it).
[[gnu::always_inline]] inline Error Executor::bind_plan(const uint8_t* plan, const uint8_t* root, uint64_t seg_base,
                                                        uint64_t seg_size, const KernelTable& kernels) {
  fb::Checked c(data_, size_);
  bool ok = true;
  constexpr bool check = true;
  (void)root;
  (void)seg_base;
  (void)seg_size;
  if (plan == nullptr) return Error::InvalidProgram;
#endif
  // The plan's vectors, each checked once here (one loop over kPlanVectors: less code than a call each).
  const uint8_t* vectors[kNumPlanVectors];
  for (int v = 0; v < kNumPlanVectors; ++v) {
    vectors[v] = c.vector_field(plan, kPlanVectors[v].slot, kPlanVectors[v].elem, &ok);
  }
  if (!ok) return Error::InvalidProgram;
  // Arena.
  const uint8_t* bsizes = vectors[kBufferSizesVector];
  // Entry 0 is unused (ExecuTorch reserves it); entry k (1..MCU_ARENA_REGIONS) is memory id k.
  uint32_t nb = fb::vec_len(bsizes);
  for (uint32_t k = 1 + MCU_ARENA_REGIONS; k < nb; ++k) {
    if (fb::i64(bsizes + 4 + 8 * k) != 0) return Error::UnsupportedProgram;
  }
  for (uint32_t k = 1; k <= MCU_ARENA_REGIONS; ++k) {
    const int64_t need = nb > k ? fb::i64(bsizes + 4 + 8 * k) : 0;
    if (need < 0) return Error::InvalidProgram;
    if (static_cast<uint64_t>(need) > arena_size_[k - 1]) {
      detail_ = static_cast<int32_t>(need > 0x7FFFFFFF ? 0x7FFFFFFF : need);
      return Error::ArenaTooSmall;
    }
    arena_used_[k - 1] = static_cast<size_t>(need);
  }

  // Delegates: only firmware built with a delegate table runs them.
  const uint8_t* delegates = vectors[kDelegatesVector];
#if MCU_MAX_DELEGATES > 0
  {
    const Error e = verify_delegates(delegates, root, seg_base, seg_size);
    if (e != Error::Ok) return e;
  }
#else
  if (fb::vec_len(delegates) != 0) return Error::UnsupportedProgram;
#endif

  // Values.
  const uint8_t* values = vectors[kValuesVector];
  if (values == nullptr) return Error::InvalidProgram;
  values_ = values + 4;
  num_values_ = static_cast<int32_t>(fb::vec_len(values));
  for (int32_t i = 0; check && i < num_values_; ++i) {
    Error e = verify_value(i);
    if (e != Error::Ok) {
      detail_ = i;
      return e;
    }
  }
  // List items must refer to values of the right type.
  // (has_kind: a firmware without tensor lists has no code for them.)
  for (int32_t i = 0; has_value_lists() && check && i < num_values_; ++i) {
    const int32_t tag = value_type(i);
    const bool int_list = has_kind(kIntList) && tag == kIntList;
    const bool opt_list = has_kind(kOptTensorList) && tag == kOptTensorList;
    if (!int_list && !opt_list && !(has_kind(kTensorList) && tag == kTensorList)) continue;
    const uint8_t* v = fb::ref(value_table(i), 0);
    for (uint32_t k = 0; k < fb::vec_len(v); ++k) {
      int64_t idx = int_list ? fb::i64(v + 4 + 8 * k) : fb::i32(v + 4 + 4 * k);
      if (idx == -1 && opt_list) continue;
      int32_t item = value_type(static_cast<int32_t>(idx));
      bool good = int_list ? item == kInt : (item == kTensor || (opt_list && item == kNull));
      if (!good) {
        detail_ = i;
        return Error::InvalidProgram;
      }
    }
  }

  // Inputs and outputs: arena tensors.
  const uint8_t* ins = vectors[kInputsVector];
  const uint8_t* outs = vectors[kOutputsVector];
  inputs_ = fb::vec_data(ins);
  num_inputs_ = static_cast<int32_t>(fb::vec_len(ins));
  outputs_ = fb::vec_data(outs);
  num_outputs_ = static_cast<int32_t>(fb::vec_len(outs));
  for (int32_t k = 0; k < num_inputs_ + num_outputs_; ++k) {
    int32_t v = k < num_inputs_ ? fb::i32(inputs_ + 4 * k) : fb::i32(outputs_ + 4 * (k - num_inputs_));
    if (v < 0 || v >= num_values_ || value_type(v) != kTensor || is_constant(v)) {
      detail_ = v;
      return Error::UnsupportedProgram;
    }
  }

  // Operators: resolved against the kernel table once, by name.
  const uint8_t* ops = vectors[kOperatorsVector];
  num_operators_ = static_cast<int32_t>(fb::vec_len(ops));
  if (num_operators_ > MCU_MAX_OPERATORS) {
    detail_ = num_operators_;
    return Error::UnsupportedProgram;
  }
  for (int32_t k = 0; k < num_operators_; ++k) {
    const uint8_t* op = c.vec_table(ops + 4, static_cast<uint32_t>(k));
    if (op == nullptr) return Error::InvalidProgram;
    const uint8_t* name = c.string_field(op, 0, &ok);
    const uint8_t* overload = c.string_field(op, 1, &ok);  // absent: no overload name
    if (!ok || name == nullptr) return Error::InvalidProgram;
    size_t found = kernels.count;
#if MCU_OPERATOR_ORDER
    // The build put operator k at entry k of the kernel table, and its kernel at kOperatorFns[k].
    if (k < MCU_OPERATOR_ORDER && static_cast<size_t>(k) < kernels.count &&
        str_equal(overload, kernels.entries[k].overload) && str_equal(name, kernels.entries[k].name) &&
        kOperatorFns[k] == kernels.entries[k].fn) {
      found = static_cast<size_t>(k);
    }
#else
    for (size_t e = 0; e < kernels.count; ++e) {
      const KernelEntry& ke = kernels.entries[e];
      if (str_equal(overload, ke.overload) && str_equal(name, ke.name)) {
        found = e;
        break;
      }
    }
#endif
    if (found == kernels.count) {
      detail_ = k;
      return Error::OperatorMissing;
    }
#if !MCU_OPERATOR_ORDER
    fns_[k] = kernels.entries[found].fn;
    op_entry_[k] = static_cast<uint16_t>(found);
#endif
  }
#if MCU_MAX_DELEGATES > 0
  // A DelegateCall of delegate k runs fns_[num_operators_ + k] (see decode_call).
  for (int32_t k = 0; k < num_delegates_; ++k) fns_[num_operators_ + k] = kDelegateTable.entries[k].execute;
#endif

  // Instructions: one chain of kernel calls.
  const uint8_t* chains = vectors[kChainsVector];
  if (fb::vec_len(chains) > 1) return Error::UnsupportedProgram;  // read only once verified
  instructions_ = nullptr;
  num_instructions_ = 0;
  if (fb::vec_len(chains) == 1) {
    const uint8_t* chain = c.vec_table(chains + 4, 0);
    if (chain == nullptr) return Error::InvalidProgram;
    const uint8_t* list = c.vector_field(chain, 2, 4, &ok);
    if (!ok) return Error::InvalidProgram;
    instructions_ = fb::vec_data(list);
    num_instructions_ = static_cast<int32_t>(fb::vec_len(list));
  }
  for (int32_t i = 0; check && i < num_instructions_; ++i) {
    Error e = verify_instruction(i, kernels);
    if (e != Error::Ok) {
      detail_ = i;
      return e;
    }
  }
  // Everything is verified: decode the first values once.
  const int32_t n = num_values_ < MCU_VALUE_CACHE ? num_values_ : MCU_VALUE_CACHE;
  for (int32_t v = 0; v < n; ++v) {
    int32_t tag;
    const uint8_t* field = program_field(v, &tag);
    const TensorRef t = tag == kTensor ? decode_tensor(v) : TensorRef{};
    cache_[v] = DecodedValue{tag == kTensor ? t.data : const_cast<uint8_t*>(field), t.sizes, t.dim_order, t.numel,
                             static_cast<uint8_t>(t.dim), t.dtype, static_cast<uint8_t>(tag)};
  }
  cached_ = n;
  if (MCU_ALL_CALLS_CACHED && num_instructions_ > MCU_INSTRUCTION_CACHE) {
    detail_ = num_instructions_;
    return Error::UnsupportedProgram;
  }
  const int32_t m = num_instructions_ < MCU_INSTRUCTION_CACHE ? num_instructions_ : MCU_INSTRUCTION_CACHE;
  for (int32_t i = 0; i < m; ++i) calls_[i] = decode_call(i);
  cached_calls_ = m;
#if MCU_KERNEL_PREPARE && MCU_PROGRAM_METHODS
  return prepare_loaded(kernels);
#else
  return Error::Ok;  // one method: load() runs the prepare functions, off load_program()'s frame
#endif
}

#if MCU_KERNEL_PREPARE
// The prepare functions over the bound plan. Called by load() after load_program() returned (one method):
// the prepare functions and the generated layers' checks then stack on load()'s small frame, not on the
// frame of the program's decoding (168 B), which made the load path the image's deepest.
[[gnu::cold]] Error Executor::prepare_loaded(const KernelTable& kernels) {
#if MCU_EXTERNAL_CONSTANTS > 0
  const Error e = kernels.prepare != nullptr ? prepare_calls(kernels) : Error::UnsupportedProgram;
  return e == Error::Ok ? check_external_owners() : e;
#else
  if (kernels.prepare != nullptr) return prepare_calls(kernels);
#if MCU_BOUND_TABLE > 0
  return Error::UnsupportedProgram;  // a bound table without prepare functions: not this build's table
#else
  return Error::Ok;
#endif
#endif
}
#endif

#if MCU_EXTERNAL_CONSTANTS > 0
#if !MCU_KERNEL_PREPARE
#error "MCU_EXTERNAL_CONSTANTS needs MCU_KERNEL_PREPARE: only layers chosen by prepare functions hold external data"
#endif
const uint8_t* Executor::external_key(int32_t v) const {
  if (!is_external(v)) return nullptr;
  return fb::ref(fb::ref(value_table(v), kTensorExtraInfo), kExtraName);  // verified present at load
}

// After the kernels are prepared: every instruction with an external constant among its arguments (or in a
// tensor list argument) runs one of the layers that hold that data (kExternalOwners); no other kernel may be
// given a tensor without data. Delegate calls take no constants (verify_delegate_call).
[[gnu::cold]] Error Executor::check_external_owners() {
  for (int32_t i = 0; i < num_instructions_; ++i) {
    const Call call = call_at(i);
    bool owner = false;
    for (int32_t k = 0; k < MCU_EXTERNAL_CONSTANTS; ++k) owner = owner || call.fn == kExternalOwners[k];
    if (owner) continue;
    for (uint32_t a = 0; a < call.num_args; ++a) {
      const int32_t v = fb::i32(call.args + 4 * a);
      bool external = is_external(v);
      const int32_t tag = value_type(v);
      if (tag == kTensorList || tag == kOptTensorList) {
        const uint8_t* items = fb::ref(value_table(v), 0);
        for (uint32_t j = 0; j < fb::vec_len(items); ++j) {
          const int32_t item = fb::i32(items + 4 + 4 * j);
          external = external || (item >= 0 && is_external(item));
        }
      }
      if (external) {
        detail_ = i;
        return Error::UnsupportedProgram;
      }
    }
  }
  return Error::Ok;
}
#endif

#if MCU_PROGRAM_HAS_STATE
// Every state tensor (planned, with an initial value; verified at load) gets its initial value:
// those of every method (several methods share a state at one offset).
void Executor::reset_state() {
  if (!loaded_) return;
#if MCU_PROGRAM_METHODS
  const uint8_t* const active_values = values_;
  const int32_t active_count = num_values_;
  for (uint32_t k = 0; k < num_plans_; ++k) {
    const uint8_t* values = fb::ref(fb::vec_table(plans_, k), kPlanValues);
    values_ = values + 4;
    num_values_ = static_cast<int32_t>(fb::vec_len(values));
    reset_plan_state();
  }
  values_ = active_values;
  num_values_ = active_count;
}

void Executor::reset_plan_state() {
#endif
  for (int32_t v = 0; v < num_values_; ++v) {
    if (value_type(v) != kTensor) continue;
    const uint8_t* t = value_table(v);
    const uint32_t c = fb::scalar<uint32_t>(t, kTensorConst, 0);
    if (c == 0 || fb::ref(t, kTensorAlloc) == nullptr) continue;
    const TensorRef r = decode_tensor(v);
    memcpy(r.data, state_data_ + fb::u64(state_offsets_ + 8 * c), r.nbytes());
  }
}
#endif

#if MCU_KERNEL_PREPARE
// Kernels with a prepare function choose, once, the function each cached
// instruction runs (kernel.h PrepareFn). Delegate calls have none.
[[gnu::cold]] Error Executor::prepare_calls(const KernelTable& kernels) {
  KernelContext ctx = context();
  for (int32_t i = 0; i < cached_calls_; ++i) {
    Call& call = calls_[i];
    if (call.op >= num_operators_) continue;
    const PrepareFn prepare = kernels.prepare[entry_of(call.op)];
    if (prepare == nullptr) continue;
    ctx.args_ = call.args;
    ctx.num_args_ = call.num_args;
    ctx.instruction_ = i;
    const KernelFn chosen = prepare(ctx);
    if (chosen != nullptr) call.fn = chosen;
  }
#if MCU_BOUND_TABLE > 0
  // The build's table of the layers it generated after the instruction cache: each must be chosen by its
  // instruction's prepare function (its load-time checks hold), else the program is not the one the
  // firmware was generated for.
  for (int32_t k = 0; k < MCU_BOUND_TABLE; ++k) {
    const int32_t i = kBoundCalls[k].instruction;
    detail_ = i;
    if (i < cached_calls_ || i >= num_instructions_ || (k > 0 && i <= kBoundCalls[k - 1].instruction)) {
      return Error::UnsupportedProgram;
    }
    const Call call = decode_call(i);
    const PrepareFn prepare = call.op < num_operators_ ? kernels.prepare[entry_of(call.op)] : nullptr;
    if (prepare == nullptr) return Error::UnsupportedProgram;
    ctx.args_ = call.args;
    ctx.num_args_ = call.num_args;
    ctx.instruction_ = i;
    if (prepare(ctx) != kBoundCalls[k].fn) return Error::UnsupportedProgram;
  }
  detail_ = -1;
#elif MCU_BOUND_CALLS > 0
  num_bound_ = 0;
  for (int32_t i = cached_calls_; i < num_instructions_ && num_bound_ < MCU_BOUND_CALLS; ++i) {
    const Call call = decode_call(i);
    if (call.op >= num_operators_) continue;
    const PrepareFn prepare = kernels.prepare[entry_of(call.op)];
    if (prepare == nullptr) continue;
    ctx.args_ = call.args;
    ctx.num_args_ = call.num_args;
    ctx.instruction_ = i;
    const KernelFn chosen = prepare(ctx);
    if (chosen != nullptr && chosen != call.fn) bound_[num_bound_++] = BoundCall{i, chosen};
  }
#endif
  return Error::Ok;
}
#endif  // MCU_KERNEL_PREPARE

}  // namespace mcu
