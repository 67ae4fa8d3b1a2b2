// The loaded program, read in place: dtype sizes and tensor shapes, the decoding of a value (its tag, its
// scalar or list field, a tensor's data, shape and dtype), and KernelContext (mcu/kernel.h), a kernel's
// reads of its call's arguments built on it. Nothing here checks: load (verifier.cpp) verified every byte
// these functions read. The argument readers and the decoding they call are one file on purpose: they run
// for every argument of every kernel call, and the compiler keeps values in registers across a call only
// when it sees the callee (in another file each read would reload the context: more instructions).
#include <string.h>

#include "flatbuffer.h"
#include "program_schema.h"

namespace mcu {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::UInt8:
    case DType::Int8:
    case DType::Bool:
      return 1;
    case DType::Int16:
    case DType::Half:
      return 2;
    case DType::Int32:
    case DType::Float:
      return 4;
    case DType::Int64:
    case DType::Double:
      return 8;
  }
  return 0;
}

bool TensorRef::is_contiguous() const {
  if (dim_order == nullptr) return true;
  for (int32_t i = 0; i < dim; ++i) {
    if (dim_order[i] != i) return false;
  }
  return true;
}

bool TensorRef::is_channels_last() const {
  return dim == 4 && dim_order != nullptr && dim_order[0] == 0 && dim_order[1] == 2 && dim_order[2] == 3 &&
         dim_order[3] == 1;
}

bool TensorRef::same_shape(const TensorRef& o) const {
  if (dim != o.dim) return false;
  if (sizes == o.sizes) return true;  // the writer shares equal size vectors
  for (int32_t i = 0; i < dim; ++i) {
    if (sizes[i] != o.sizes[i]) return false;
  }
  return true;
}

const uint8_t* Executor::value_table(int32_t v) const {
  const uint8_t* ev = fb::vec_table(values_, static_cast<uint32_t>(v));
  return fb::ref(ev, 1);
}

int32_t Executor::value_type(int32_t v) const {
  const uint8_t* ev = fb::vec_table(values_, static_cast<uint32_t>(v));
  return fb::scalar<uint8_t>(ev, 0, kNone);
}

// Plain loads instead of the fb:: helpers: at -Os those stay calls, and this
// runs for every scalar or list argument of every kernel call.
const uint8_t* Executor::value_field(int32_t v, int32_t* tag) const {
  if (static_cast<uint32_t>(v) < static_cast<uint32_t>(cached_)) {
    *tag = cache_[v].tag;
    return cache_[v].field();
  }
  return program_field(v, tag);
}

const uint8_t* Executor::program_field(int32_t v, int32_t* tag) const {
  const uint8_t* ev = values_ + 4 * v;
  ev += fb::u32(ev);
  const uint8_t* vt = ev - fb::i32(ev);
  const uint32_t vt_size = fb::u16(vt);
  const uint32_t f_tag = vt_size > 4 ? fb::u16(vt + 4) : 0u;
  const uint32_t f_val = vt_size > 6 ? fb::u16(vt + 6) : 0u;
  *tag = f_tag ? ev[f_tag] : kNone;
  if (f_val == 0) return nullptr;
  const uint8_t* t = ev + f_val;
  t += fb::u32(t);
  const uint8_t* tvt = t - fb::i32(t);
  const uint32_t f = fb::u16(tvt) > 4 ? fb::u16(tvt + 4) : 0u;
  return f ? t + f : nullptr;
}

namespace {
// A verified table and its vtable, read once for several fields.
struct TableView {
  explicit TableView(const uint8_t* table)
      : t(table), vt(table - fb::i32(table)), vt_size(fb::u16(table - fb::i32(table))) {}
  uint32_t field(int slot) const {
    const uint32_t at = 4u + 2u * static_cast<uint32_t>(slot);
    return at < vt_size ? fb::u16(vt + at) : 0u;
  }
  const uint8_t* ref(int slot) const {
    const uint32_t f = field(slot);
    return f ? fb::deref(t + f) : nullptr;
  }
  const uint8_t* t;
  const uint8_t* vt;
  uint32_t vt_size;
};
}  // namespace

TensorRef Executor::decode_tensor(int32_t v) const {
  // Every field is read before the result is written: writes through the
  // result could alias the program bytes, which would force reloads.
  const TableView t(value_table(v));
  const uint32_t f_type = t.field(kTensorType);
  const int8_t dtype = f_type ? static_cast<int8_t>(t.t[f_type]) : 0;
  const uint8_t* sizes = t.ref(kTensorSizes);
  const uint8_t* order = t.ref(kTensorDimOrder);
  const uint32_t f_const = t.field(kTensorConst);
  const uint32_t c = f_const ? fb::u32(t.t + f_const) : 0u;
  const uint8_t* data;
#if MCU_PROGRAM_HAS_STATE
  // A state tensor (planned, with an initial value in the constants) lives in the arena.
  if (c != 0 && t.field(kTensorAlloc) == 0) {
#else
  if (c != 0) {
#endif
#if MCU_CONSTANT_BUFFERS
    if (constant_offsets_ != nullptr) {
      data = constants_ + fb::u64(constant_offsets_ + 8 * c);
    } else {
      data = fb::vec_data(fb::ref(fb::vec_table(constant_buffers_, c), 0));
    }
#else
    data = constants_ + fb::u64(constant_offsets_ + 8 * c);
#endif
  } else if (const uint8_t* alloc = t.ref(kTensorAlloc); MCU_EXTERNAL_CONSTANTS == 0 || alloc != nullptr) {
#if MCU_ARENA_REGIONS > 1
    data = arena_[fb::scalar<uint32_t>(alloc, 0, 1) - 1] + fb::scalar<uint32_t>(alloc, 1, 0);
#else
    data = arena_[0] + fb::scalar<uint32_t>(alloc, 1, 0);
#endif
  } else {
    data = nullptr;  // an external constant: no data in the program (only the layer that holds it reads it)
  }
  const int32_t dim = static_cast<int32_t>(fb::vec_len(sizes));
  const int32_t* dims = reinterpret_cast<const int32_t*>(fb::vec_data(sizes));
  int32_t numel = 1;
  for (int32_t i = 0; i < dim; ++i) numel *= dims[i];
  TensorRef r;
  r.data = const_cast<uint8_t*>(data);
  r.sizes = dims;
  r.dim_order = fb::vec_len(order) ? fb::vec_data(order) : nullptr;
  r.dim = dim;
  r.numel = numel;
  r.dtype = static_cast<DType>(dtype);
  return r;
}

int32_t Executor::num_inputs() const { return loaded_ ? num_inputs_ : 0; }
int32_t Executor::num_outputs() const { return loaded_ ? num_outputs_ : 0; }
TensorRef Executor::input(int32_t i) const { return tensor_at(fb::i32(inputs_ + 4 * i)); }
TensorRef Executor::output(int32_t i) const { return tensor_at(fb::i32(outputs_ + 4 * i)); }

// ---------------------------------------------------------------- KernelContext
namespace {
inline int32_t arg_value(const KernelContext& ctx, int32_t i) { return fb::i32(ctx.args_ + 4 * i); }

// int32 -> double, exact, in a few integer instructions: on a single-precision
// FPU the compiler calls soft-float __aeabi_i2d (~25 instructions) instead, and
// every add/sub kernel converts its alpha (usually 1) on every call.
double int32_to_double(int32_t x) {
  if (x == 0) return 0.0;
  const uint32_t sign = x < 0 ? 0x80000000u : 0u;
  const uint32_t m = x < 0 ? 0u - static_cast<uint32_t>(x) : static_cast<uint32_t>(x);
  const int lz = __builtin_clz(m);
  const uint32_t fraction = (m << lz) << 1;  // the bits after the leading 1, left-aligned
  const uint32_t exponent = static_cast<uint32_t>(1023 + 31 - lz);
  const uint64_t bits = (static_cast<uint64_t>(sign | exponent << 20 | fraction >> 12) << 32) |
                        static_cast<uint64_t>(fraction << 20);
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}
}  // namespace

TensorRef KernelContext::decode_tensor(int32_t value_index) const { return exec_->tensor_at(value_index); }
#if MCU_KERNEL_PREPARE
uint8_t* KernelContext::planned(int32_t mem_id) const { return exec_->planned(mem_id); }
#endif

bool KernelContext::is_none(int32_t i) const {
  int32_t tag;
  exec_->value_field(arg_value(*this, i), &tag);
  return tag == kNull || tag == kNone;
}

namespace {
// Field readers: a null field is absent and has its schema default.
int64_t int_at(const uint8_t* f) { return f ? fb::i64(f) : 0; }
const uint8_t* vector_at(const uint8_t* f) { return f ? fb::deref(f) : nullptr; }
}  // namespace

bool KernelContext::all_decoded() const {
  for (int32_t i = 0; i < num_args_; ++i) {
    const int32_t v = arg_value(*this, i);
    if (v < 0 || v >= num_decoded_) return false;
    if (decoded_[v].tag != kIntList) continue;
    const uint8_t* items = vector_at(decoded_[v].field());
    for (uint32_t k = 0; k < fb::vec_len(items); ++k) {
      const int64_t item = fb::i64(items + 4 + 8 * k);
      if (item < 0 || item >= num_decoded_) return false;
    }
  }
  return true;
}

int64_t KernelContext::int_arg(int32_t i) const {
  int32_t tag;
  return int_at(exec_->value_field(arg_value(*this, i), &tag));
}

double KernelContext::double_arg(int32_t i) const {
  int32_t tag;
  const uint8_t* f = exec_->value_field(arg_value(*this, i), &tag);
  return f ? fb::f64(f) : 0.0;
}

double KernelContext::scalar_arg(int32_t i) const {
  int32_t tag;
  const uint8_t* f = exec_->value_field(arg_value(*this, i), &tag);
  if (f == nullptr) return 0.0;  // 0, 0.0 or false
  switch (tag) {
    case kInt: {
      // Through int32 when it fits: int64 -> double is a long soft-float call.
      const int64_t x = fb::i64(f);
      const int32_t x32 = static_cast<int32_t>(x);
      return x32 == x ? int32_to_double(x32) : static_cast<double>(x);
    }
    case kDouble:
      return fb::f64(f);
    case kBool:
      return *f ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

Scalar KernelContext::scalar(int32_t i) const {
  int32_t tag;
  const uint8_t* f = exec_->value_field(arg_value(*this, i), &tag);
  Scalar s;
  if (f == nullptr) return s;
  switch (tag) {
    case kInt:
      s.i = fb::i64(f);
      break;
    case kDouble:
      s.kind = Scalar::Kind::Double;
      s.d = fb::f64(f);
      break;
    case kBool:
      s.kind = Scalar::Kind::Bool;
      s.i = *f != 0;
      break;
    default:
      break;
  }
  return s;
}

bool KernelContext::bool_arg(int32_t i) const {
  int32_t tag;
  const uint8_t* f = exec_->value_field(arg_value(*this, i), &tag);
  return f != nullptr && *f != 0;
}

#if MCU_EXTERNAL_CONSTANTS > 0
const char* KernelContext::external_key(int32_t i, int32_t* length) const {
  const uint8_t* s = exec_->external_key(arg_value(*this, i));
  *length = s != nullptr ? static_cast<int32_t>(fb::u32(s)) : 0;
  return s != nullptr ? reinterpret_cast<const char*>(s + 4) : nullptr;
}
#endif

const char* KernelContext::string_arg(int32_t i, int32_t* length) const {
  int32_t tag;
  const uint8_t* s = vector_at(exec_->value_field(arg_value(*this, i), &tag));  // verified present at load
  *length = static_cast<int32_t>(fb::u32(s));
  return reinterpret_cast<const char*>(s + 4);
}

IntList KernelContext::int_list(int32_t i) const {
  int32_t tag;
  const uint8_t* v = vector_at(exec_->value_field(arg_value(*this, i), &tag));
  return IntList(fb::vec_data(v), reinterpret_cast<const uint8_t*>(exec_), static_cast<int32_t>(fb::vec_len(v)));
}

int32_t KernelContext::list_size(int32_t i) const {
  int32_t tag;
  return static_cast<int32_t>(fb::vec_len(vector_at(exec_->value_field(arg_value(*this, i), &tag))));
}

TensorRef KernelContext::list_tensor(int32_t i, int32_t k) const {
  int32_t tag;
  const uint8_t* v = vector_at(exec_->value_field(arg_value(*this, i), &tag));
  return exec_->tensor_at(fb::i32(v + 4 + 4 * k));
}

bool KernelContext::list_tensor_or_none(int32_t i, int32_t k, TensorRef* t) const {
  int32_t tag;
  const uint8_t* v = vector_at(exec_->value_field(arg_value(*this, i), &tag));
  const int32_t item = fb::i32(v + 4 + 4 * k);  // -1 or a Tensor or Null value (checked at load)
  if (item < 0 || exec_->value_type(item) != kTensor) return false;
  *t = exec_->tensor_at(item);
  return true;
}

int64_t IntList::operator[](int32_t i) const {
  const Executor* exec = reinterpret_cast<const Executor*>(values_);
  int32_t tag;
  return int_at(exec->value_field(static_cast<int32_t>(fb::i64(items_ + 8 * i)), &tag));
}

}  // namespace mcu
