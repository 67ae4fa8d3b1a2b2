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

// An int8 program's float kernels run its fp32 islands, whose outputs must equal the host integer
// reference's bit for bit; the reference computes without fused multiply-adds, and GCC would contract
// a * b + c into one VFMA (one rounding, not two) on a core with an FPU. The build defines
// MCU_FLOAT_EXACT for an int8 program (mcu_gen/firmware/project.py, float_exact): every function after
// this point in a kernel's file is compiled without that contraction. fp32 programs keep it.
#if defined(MCU_FLOAT_EXACT) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

// Planned buffers (memory ids) of a program: see program.h.
#ifndef MCU_ARENA_REGIONS
#define MCU_ARENA_REGIONS 1
#endif

namespace mcu {

class Executor;

// A value the executor decoded once, at load, so that kernel calls do not walk
// the program's tables: a tensor's fields (TensorRef without its defaults, so
// that a static Executor is all zeros, .bss), or for any other value its
// KernelTypes tag and where its first field lies in the program (the Int,
// Double or Bool itself, or the offset of a list or string; null when absent).
struct DecodedValue {
  void* data;  // tensor data, or the other value's field in the program
  const int32_t* sizes;
  const uint8_t* dim_order;
  int32_t numel;
  uint8_t dim;
  DType dtype;
  uint8_t tag;  // KernelTypes: 5 tensor (kTensor), 1 none, 2 int, 7 int list, ... (docs/schema/program.fbs)

  static constexpr uint8_t kTensor = 5;

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
  const uint8_t* field() const { return static_cast<const uint8_t*>(data); }
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
  bool is_none(int32_t i) const;       // signature 't', 'i', 's', 'l', 'd', 'z'
  int64_t int_arg(int32_t i) const;    // 'I'
  double double_arg(int32_t i) const;  // 'D'; for 'S' (Scalar) use scalar_arg
  double scalar_arg(int32_t i) const;  // 'S': Int, Double or Bool as a double
  Scalar scalar(int32_t i) const;      // 'S' (or 's': none reads as Int 0), with its kind
  bool bool_arg(int32_t i) const;      // 'B'
  // 'Z': the string's bytes (not NUL-terminated) and its length.
  const char* string_arg(int32_t i, int32_t* length) const;
  IntList int_list(int32_t i) const;   // 'L'
  int32_t list_size(int32_t i) const;  // 'X': number of tensors in a tensor list
  TensorRef list_tensor(int32_t i, int32_t k) const;  // 'X': k-th tensor
  // 'Q' (Tensor?[], list_size gives its length): the k-th item into *t, false when it is None.
  bool list_tensor_or_none(int32_t i, int32_t k, TensorRef* t) const;

  // For kernels prepared at load (PrepareFn): a prepare function that checked
  // all_decoded() may pick a variant that reads its arguments with these,
  // straight from the executor's decoded values, without bounds checks.
  bool all_decoded() const;  // every argument (and every item of its int lists) is decoded
  const DecodedValue& decoded(int32_t i) const { return decoded_[value_index(i)]; }
  // 'I': the Int argument i (absent: 0).
  int64_t decoded_int(int32_t i) const { return field_int(decoded(i).field()); }
  // 'L': item k of the int list argument i, or the only item, or `fallback`
  // when empty (IntList::get_or).
  int64_t decoded_list_item(int32_t i, int32_t k, int64_t fallback) const {
    const uint8_t* f = decoded(i).field();
    if (f == nullptr) return fallback;
    const uint8_t* v = f + read_le<uint32_t>(f);  // the list's vector of int64 value indices
    const uint32_t n = read_le<uint32_t>(v);
    if (n == 0) return fallback;
    const int64_t item = read_le<int64_t>(v + 4 + 8 * (n == 1 ? 0 : k));
    return field_int(decoded_[item].field());
  }
  // 'L' whose prepare checked it is not empty: its first item.
  int64_t decoded_list_first(int32_t i) const {
    const uint8_t* f = decoded(i).field();
    const uint8_t* v = f + read_le<uint32_t>(f);
    return field_int(decoded_[read_le<int64_t>(v + 4)].field());
  }
  const void* decoded_data(int32_t i) const { return decoded(i).data; }
  // The planned buffer of memory id `mem_id` (1: the main arena): where a layer generated for this program
  // finds the tensors the build planned at fixed offsets (checked at load by its matches()).
  // Defined only in builds with prepare functions (MCU_KERNEL_PREPARE, program_view.cpp), the only way to a
  // generated layer: a call from any other build fails to link. Read through the executor, not a field of
  // its own: the context, on the stack of the executor's run loop, keeps the size of a build without
  // prepare functions. Declared in every build, so a kernel's object is the same with and without them.
  uint8_t* planned(int32_t mem_id) const;
  int32_t decoded_size(int32_t i, int32_t d) const { return decoded(i).sizes[d]; }
#if defined(MCU_EXTERNAL_CONSTANTS) && MCU_EXTERNAL_CONSTANTS > 0
  // Tensor argument i's data is external (its data pointer is null): its key's bytes and length, else
  // nullptr. Only a generated layer's load-time check reads it (kExternalOwners, program.h).
  const char* external_key(int32_t i, int32_t* length) const;
#endif

  // Set by the executor only: the instruction's arguments as value indices,
  // and the values it decoded at load (values [0, num_decoded_); none is
  // always correct, only slower).
  const Executor* exec_ = nullptr;
  const uint8_t* args_ = nullptr;  // flatbuffer vector data of int32 value indices
  int32_t num_args_ = 0;
  const DecodedValue* decoded_ = nullptr;
  int32_t num_decoded_ = 0;
  // In a prepare function (PrepareFn) only: the index of the instruction being prepared, so that a
  // layer generated for one instruction binds to that one (mcu_gen/backends/generated.py); else -1.
  int32_t instruction_ = -1;

 private:
  int32_t value_index(int32_t i) const { return read_le<int32_t>(args_ + 4 * i); }
  static int64_t field_int(const uint8_t* f) { return f != nullptr ? read_le<int64_t>(f) : 0; }
  TensorRef decode_tensor(int32_t value_index) const;  // from the program (program_view.cpp)
};

using KernelFn = Error (*)(const KernelContext& ctx);

// One entry of the generated kernel table.
//   name      "aten::convolution"     overload "out"
//   signature one char per argument (schema order, then returns):
//     T tensor   t tensor or None   O out tensor (must live in the arena)
//     I int      i int or None      D double    B bool
//     S scalar (int, double or bool)            s scalar or None
//     L int list l int list or None Z string    z string or None   d double or None
//     X tensor list (read, or not touched)
//     Q optional tensor list (Tensor?[]: every item a tensor or None; read)
//     Y tensor list the kernel writes (every tensor must live in the arena)
//     ? anything (not checked, not to be read)
struct KernelEntry {
  const char* name;
  const char* overload;
  const char* signature;
  KernelFn fn;
};

// Optional, per kernel: called once per instruction at load, after the
// signature check, with the instruction's arguments. It checks everything a
// faster variant of the kernel relies on (shapes, sizes, parameter ranges: all
// fixed by the program) and returns that variant, or the kernel's own checked
// function (KernelEntry::fn) when in doubt. Only instructions the executor
// caches (MCU_INSTRUCTION_CACHE) are prepared, and only in builds with
// MCU_KERNEL_PREPARE=1; the others run KernelEntry::fn.
using PrepareFn = KernelFn (*)(const KernelContext& ctx);

struct KernelTable {
  const KernelEntry* entries;
  size_t count;
  const PrepareFn* prepare = nullptr;  // one per entry (nullptr: none), or none at all
};

}  // namespace mcu
