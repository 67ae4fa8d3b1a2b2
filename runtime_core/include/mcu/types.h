// Tensor and argument views handed to kernels. Everything here points into the
// program (flash) or the arena; nothing is copied and nothing is owned.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace mcu {

// A T stored at p in the program (little endian, maybe unaligned).
template <typename T>
inline T read_le(const uint8_t* p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

// ExecuTorch ScalarType numbering (scalar_type.fbs).
enum class DType : int8_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Half = 5,
  Float = 6,
  Double = 7,
  Bool = 11,
};

// Bytes per element, 0 for a type the runtime does not know.
size_t dtype_size(DType t);

constexpr int kMaxDims = 8;

struct TensorRef {
  void* data = nullptr;
  const int32_t* sizes = nullptr;      // `dim` sizes, in the program (read only)
  const uint8_t* dim_order = nullptr;  // `dim` entries; (0,1,..) is contiguous NCHW,
                                       // (0,2,3,1) is channels-last
  int32_t dim = 0;
  int32_t numel = 0;
  DType dtype = DType::Float;

  int32_t size(int32_t d) const { return sizes[d]; }
  size_t nbytes() const { return static_cast<size_t>(numel) * dtype_size(dtype); }
  bool is_contiguous() const;          // dim_order is the identity
  bool is_channels_last() const;       // 4-D with dim_order (0,2,3,1)
  bool same_shape(const TensorRef& o) const;

  float* f32() const { return static_cast<float*>(data); }
  int8_t* i8() const { return static_cast<int8_t*>(data); }
  int32_t* i32() const { return static_cast<int32_t*>(data); }
  int64_t* i64() const { return static_cast<int64_t*>(data); }
};

// An ATen Scalar argument as the program stores it: an Int, a Double or a Bool
// (its kind decides type promotion: an int tensor plus 2.5 is a float tensor).
struct Scalar {
  enum class Kind : uint8_t { Int, Double, Bool };
  Kind kind = Kind::Int;
  int64_t i = 0;   // Int and Bool (0 or 1)
  double d = 0.0;  // Double

  bool is_floating() const { return kind == Kind::Double; }
  bool is_bool() const { return kind == Kind::Bool; }
  // The value as a C type (float, int64_t, bool, ...), as ATen converts a Scalar.
  template <typename C>
  C as() const {
    return kind == Kind::Double ? static_cast<C>(d) : static_cast<C>(i);
  }
};

// A list of ints (an ATen int[] argument). Items live in the program.
class IntList {
 public:
  IntList() = default;
  IntList(const uint8_t* items, const uint8_t* values, int32_t n) : items_(items), values_(values), n_(n) {}
  int32_t size() const { return n_; }
  int64_t operator[](int32_t i) const;
  // ATen convention for int[2] args that may be given as one value or empty:
  // returns the i-th entry, the only entry, or `fallback` when empty.
  int64_t get_or(int32_t i, int64_t fallback) const {
    if (n_ == 0) return fallback;
    return (*this)[n_ == 1 ? 0 : i];
  }

 private:
  const uint8_t* items_ = nullptr;   // flatbuffer vector of int64 value indices
  const uint8_t* values_ = nullptr;  // opaque: the executor's value table
  int32_t n_ = 0;
};

}  // namespace mcu
