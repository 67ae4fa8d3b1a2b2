// The kernel ABI. A kernel is a plain function that receives the arguments of
// one instruction, in the order of the operator's out-variant schema followed
// by the returned values (ExecuTorch's convention), and returns an Error.
//
// Argument types are checked once, when the program is loaded, against the
// kernel's signature string (see KernelEntry), so accessors here do not check
// types again; kernels check shapes and dtypes, which the signature does not
// cover, and return Error::KernelFailed when they do not match.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/error.h"
#include "mcu/types.h"

namespace mcu {

class Executor;

// A tensor the executor decoded once, at load: TensorRef's fields without its
// default values, so that a static Executor is all zeros (.bss).
struct DecodedTensor {
  void* data;
  const int32_t* sizes;
  const uint8_t* dim_order;
  int32_t dim;
  int32_t numel;
  DType dtype;

  TensorRef ref() const {
    TensorRef t;
    t.data = data;
    t.sizes = sizes;
    t.dim_order = dim_order;
    t.dim = dim;
    t.numel = numel;
    t.dtype = dtype;
    return t;
  }
};

class KernelContext {
 public:
  int32_t num_args() const { return num_args_; }
  // Signature 'T', 'O' (or 't' when not none). Inline: a tensor the executor
  // decoded at load is a copy, others are decoded from the program.
  TensorRef tensor(int32_t i) const {
    const int32_t v = value_index(i);
    if (static_cast<uint32_t>(v) < static_cast<uint32_t>(num_decoded_)) return decoded_[v].ref();
    return decode_tensor(v);
  }
  bool is_none(int32_t i) const;       // signature 't', 'i', 's', 'l'
  int64_t int_arg(int32_t i) const;    // 'I'
  double double_arg(int32_t i) const;  // 'D'; for 'S' (Scalar) use scalar_arg
  double scalar_arg(int32_t i) const;  // 'S': Int, Double or Bool as a double
  bool bool_arg(int32_t i) const;      // 'B'
  // 'Z': the string's bytes (not NUL-terminated) and its length.
  const char* string_arg(int32_t i, int32_t* length) const;
  IntList int_list(int32_t i) const;   // 'L'
  int32_t list_size(int32_t i) const;  // 'X': number of tensors in a tensor list
  TensorRef list_tensor(int32_t i, int32_t k) const;  // 'X': k-th tensor

  // Set by the executor only: the instruction's arguments as value indices,
  // and the tensors it decoded at load (values [0, num_decoded_); none is
  // always correct, only slower).
  const Executor* exec_ = nullptr;
  const uint8_t* args_ = nullptr;  // flatbuffer vector data of int32 value indices
  int32_t num_args_ = 0;
  const DecodedTensor* decoded_ = nullptr;
  int32_t num_decoded_ = 0;

 private:
  int32_t value_index(int32_t i) const {
    int32_t v;
    memcpy(&v, args_ + 4 * i, sizeof v);
    return v;
  }
  TensorRef decode_tensor(int32_t value_index) const;  // from the program (executor.cpp)
};

using KernelFn = Error (*)(const KernelContext& ctx);

// One entry of the generated kernel table.
//   name      "aten::convolution"     overload "out"
//   signature one char per argument (schema order, then returns):
//     T tensor   t tensor or None   O out tensor (must live in the arena)
//     I int      i int or None      D double    B bool
//     S scalar (int, double or bool)            s scalar or None
//     L int list l int list or None Z string    X tensor list (out lists too)
//     ? anything (not checked, not to be read)
struct KernelEntry {
  const char* name;
  const char* overload;
  const char* signature;
  KernelFn fn;
};

struct KernelTable {
  const KernelEntry* entries;
  size_t count;
};

}  // namespace mcu
