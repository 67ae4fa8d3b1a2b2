// Loading (verifying) and executing an ET12 program read in place.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu/delegate.h"
#include "mcu/error.h"
#include "mcu/kernel.h"
#include "mcu/types.h"

#ifndef MCU_MAX_OPERATORS
#define MCU_MAX_OPERATORS 32
#endif
// Values [0, MCU_VALUE_CACHE) are decoded once, at load, into the executor
// (20 bytes each: DecodedValue); the rest are decoded from the program on each
// use. mcu-gen sets it per program (mcu_gen/builder.py value_cache): every
// value for CMSIS-NN builds, where decoding would otherwise be a visible share
// of an inference, else the default, which keeps the executor small.
#ifndef MCU_VALUE_CACHE
#define MCU_VALUE_CACHE 8
#endif
// Likewise the first instructions' kernel and argument list (12 bytes each);
// these are also the instructions whose kernels are prepared at load
// (KernelTable::prepare). mcu-gen sets it with MCU_VALUE_CACHE.
#ifndef MCU_INSTRUCTION_CACHE
#define MCU_INSTRUCTION_CACHE 8
#endif
// 1: every instruction of a program is in the instruction cache (mcu-gen sets it for an image without
// uploads whose program has at most MCU_INSTRUCTION_CACHE instructions): the loader rejects a longer
// program (UnsupportedProgram) and execution never decodes an instruction from the program.
#ifndef MCU_ALL_CALLS_CACHED
#define MCU_ALL_CALLS_CACHED 0
#endif
// Instructions after the instruction cache whose kernel a prepare function (KernelTable::prepare)
// replaced at load, e.g. a layer generated for this program (mcu_gen/backends/generated.py): one
// (instruction, function) pair each, 8 bytes, instead of caching every instruction's call.
#ifndef MCU_BOUND_CALLS
#define MCU_BOUND_CALLS 0
#endif
// N > 0: those pairs are instead a table in flash the build generates (mcu::kBoundCalls, N entries in
// instruction order, for an image that only runs its builtin program): load() calls each listed
// instruction's prepare function and rejects the program (UnsupportedProgram, detail = the instruction)
// unless it chooses the listed function; no RAM.
#ifndef MCU_BOUND_TABLE
#define MCU_BOUND_TABLE 0
#endif
// N > 0: the kernel table's entry k is the program's operator k, and kOperatorFns[k] (flash, N entries)
// its kernel (mcu-gen orders the table so for an image that only runs its builtin program, with one
// method, no delegates): the loader checks operator k against entry k alone and keeps neither a kernel
// table index nor a kernel per operator in RAM; a program whose operators are in another order (or
// more than N of them) is rejected (OperatorMissing).
#ifndef MCU_OPERATOR_ORDER
#define MCU_OPERATOR_ORDER 0
#endif
// N > 0: the builtin program may hold external constants (ExecuTorch's TensorDataLocation EXTERNAL: a
// constant tensor with a key, ExtraTensorInfo.fully_qualified_name, and no data in the program), whose data the
// firmware's generated layers hold in their own form: kExternalOwners (flash, N entries, generated into
// kernels/generated_kernels.cpp) lists those layers' functions. A tensor without data decodes to a null data
// pointer; load() rejects the program (UnsupportedProgram, detail = the instruction) unless every
// instruction with such an argument runs one of kExternalOwners, which read no constant of the program.
// 0: such a tensor is rejected at load (UnsupportedProgram), as any tensor without data or place is.
#ifndef MCU_EXTERNAL_CONSTANTS
#define MCU_EXTERNAL_CONSTANTS 0
#endif
// 1: KernelTable::prepare is used (mcu-gen sets it when a selected kernel has
// a prepare function; without it, firmware carries no prepare code).
#ifndef MCU_KERNEL_PREPARE
#define MCU_KERNEL_PREPARE 0
#endif
// 1: programs may have state tensors (mutable buffers: planned tensors with an initial
// value, kept from one execute() to the next; reset_state()). mcu-gen sets it only for
// programs with state; without it the loader rejects them (UnsupportedProgram).
#ifndef MCU_PROGRAM_HAS_STATE
#define MCU_PROGRAM_HAS_STATE 0
#endif

// The value kinds (KernelTypes tags of docs/schema/program.fbs, bit 1 << tag) programs may have:
// the loader rejects a value of any other kind (UnsupportedProgram) and its checks for them are
// compiled out. mcu-gen sets it to the kinds of the builtin program for an image without uploads;
// by default every kind.
#ifndef MCU_VALUE_KINDS
#define MCU_VALUE_KINDS 0xFFFu
#endif

// 1: constants may also be buffers inline in the flatbuffer (the legacy layout, Program.constant_buffer)
// instead of the constant segment. mcu-gen sets 0 for an image without uploads whose builtin program
// has none; the loader then rejects a constant tensor outside the segment (ConstantOutOfBounds).
#ifndef MCU_CONSTANT_BUFFERS
#define MCU_CONSTANT_BUFFERS 1
#endif

// 1: programs may have several methods (execution plans sharing the constant segment,
// docs/methods.md): load() verifies every plan and binds method 0; select_method() switches.
// mcu-gen sets it for programs with several methods; without it only the first plan is read.
#ifndef MCU_PROGRAM_METHODS
#define MCU_PROGRAM_METHODS 0
#endif

// Planned buffers (ExecuTorch's allocation_info.memory_id 1..MCU_ARENA_REGIONS): one arena per
// RAM region of the board (memory id 1 = the main region). mcu-gen sets it, for every file, only
// for programs planned over several regions (docs/memory_planning.md).
#ifndef MCU_ARENA_REGIONS
#define MCU_ARENA_REGIONS 1
#endif

namespace mcu {

// An instruction after the instruction cache and the kernel a prepare function chose for it.
struct BoundCall {
  int32_t instruction;
  KernelFn fn;
};
#if MCU_OPERATOR_ORDER > 0 && MCU_MAX_DELEGATES > 0
#error "MCU_OPERATOR_ORDER is for images without delegates"
#endif
#if MCU_OPERATOR_ORDER > 0
extern const KernelFn kOperatorFns[MCU_OPERATOR_ORDER];  // generated into src/kernel_table.cpp
#endif
#if MCU_EXTERNAL_CONSTANTS > 0
extern const KernelFn kExternalOwners[MCU_EXTERNAL_CONSTANTS];  // generated into kernels/generated_kernels.cpp
#endif
#if MCU_BOUND_TABLE > 0
extern const BoundCall kBoundCalls[MCU_BOUND_TABLE];  // generated into src/kernel_table.cpp
#endif

// One planned buffer: `data` 16-byte aligned, `size` bytes (memory id k + 1 is arenas[k]).
struct ArenaRegion {
  uint8_t* data;
  size_t size;
};

class Executor {
 public:
  // Verifies `data` (the whole .pte file) once: every table, vector, string and
  // offset the executor will read is bounds-checked here, every instruction's
  // arguments are checked against its kernel's signature, and every tensor is
  // checked to lie inside the arena or the constant data. On success the
  // executor refers into `data` and `arena`, which must outlive it. On failure
  // the executor is left unloaded and `error_detail()` gives the index of the
  // offending value or instruction (or -1).
  Error load(const uint8_t* data, size_t size, const KernelTable& kernels, uint8_t* arena, size_t arena_size);
#if MCU_ARENA_REGIONS > 1
  // The same for a program with several planned buffers: arenas[k] holds memory id k + 1
  // (MCU_ARENA_REGIONS entries); every tensor is checked against its own buffer's planned size.
  Error load(const uint8_t* data, size_t size, const KernelTable& kernels, const ArenaRegion* arenas);
#endif

  bool loaded() const { return loaded_; }
  void unload() { loaded_ = false; }
  int32_t error_detail() const { return detail_; }

  int32_t num_inputs() const;
  int32_t num_outputs() const;
  TensorRef input(int32_t i) const;
  TensorRef output(int32_t i) const;
  size_t arena_used() const { return arena_used_[0]; }  // planned bytes of memory id 1
  int32_t num_instructions() const { return num_instructions_; }
  int32_t num_operators() const { return num_operators_; }

  // Runs every instruction in order. On failure, `error_detail()` is the
  // index of the failing instruction.
  Error execute();

  // Runs instruction i (0 <= i < num_instructions()) alone, for profiling and
  // step-by-step debugging over the verify protocol; execute() does not use it.
  // On failure `error_detail()` is i. Out of range: Error::BadIndex.
  Error execute_one(int32_t i);
  int32_t num_values() const { return num_values_; }
#if MCU_PROGRAM_HAS_STATE
  // Sets every state tensor (of every method) to its initial value (load does it too).
  void reset_state();
#endif
#if MCU_PROGRAM_METHODS
  uint32_t num_methods() const { return loaded_ ? num_plans_ : 0; }
  uint32_t active_method() const { return active_method_; }
  // Makes method k the one execute() runs; the arena (state tensors, inputs written) is untouched.
  // k out of range: Error::MethodMissing, error_detail() = the number of methods.
  Error select_method(uint32_t k);
  // The index of the method called `name` (`length` bytes, no terminator), or -1.
  int32_t find_method(const char* name, size_t length) const;
#endif

  // Decoding used by KernelContext (values are verified at load).
#if MCU_KERNEL_PREPARE  // only layers chosen by a prepare function (generated ones) read it: KernelContext::planned
  uint8_t* planned(int32_t mem_id) const { return arena_[mem_id - 1]; }
#endif
  TensorRef tensor_at(int32_t value_index) const {
    if (static_cast<uint32_t>(value_index) < static_cast<uint32_t>(cached_)) return cache_[value_index].ref();
    return decode_tensor(value_index);
  }
  // KernelTypes union tag. Pure (reads the program only): the loader's loops keep fields in registers across it.
  [[gnu::pure]] int32_t value_type(int32_t value_index) const;
  const uint8_t* value_table(int32_t value_index) const;
  // The first field of a value's table (an Int, Double or Bool's value, the
  // offset of a list or string), or nullptr when absent (the default); sets
  // *tag to the value's KernelTypes tag. What kernel argument reads use.
  const uint8_t* value_field(int32_t value_index, int32_t* tag) const;
#if MCU_EXTERNAL_CONSTANTS > 0
  // The key (a verified string: length, bytes) of a tensor whose data is external, else nullptr.
  const uint8_t* external_key(int32_t value_index) const;
#endif

 private:
  Error load_program(const uint8_t* data, size_t size, const KernelTable& kernels);
  Error load_and_prepare(const uint8_t* data, size_t size, const KernelTable& kernels);
#if MCU_PROGRAM_METHODS
  Error bind_plan(uint32_t k, const KernelTable& kernels, bool check);
#if MCU_PROGRAM_HAS_STATE
  void reset_plan_state();
#endif
#else
  Error bind_plan(const uint8_t* plan, const uint8_t* root, uint64_t seg_base, uint64_t seg_size,
                  const KernelTable& kernels);
#endif
  Error verify_value(int32_t i);
  Error verify_instruction(int32_t i, const KernelTable& kernels);
#if MCU_MAX_DELEGATES > 0
  Error verify_delegates(const uint8_t* delegates, const uint8_t* root, uint64_t seg_base, uint64_t seg_size);
  Error verify_delegate_call(const uint8_t* call);
#endif
  TensorRef decode_tensor(int32_t value_index) const;
  bool is_constant(int32_t value_index) const;  // a verified tensor's data is in the program (or external)
#if MCU_EXTERNAL_CONSTANTS > 0
  bool is_external(int32_t value_index) const;  // a verified tensor without data in the program
  Error check_external_owners();
#endif
  const uint8_t* program_field(int32_t value_index, int32_t* tag) const;  // value_field without the cache
  struct Call {
    const uint8_t* args;  // int32 value indices (flatbuffer vector data)
    KernelFn fn;          // the operator's kernel, or the variant its prepare chose
    uint16_t num_args;
    uint16_t op;          // operator index (delegates: num_operators_ + delegate index)
  };
  Call decode_call(int32_t instruction) const;
  const uint8_t* call_args(int32_t instruction, int32_t* op) const;
  KernelFn decode_into(int32_t instruction, KernelContext& ctx) const;
#if MCU_KERNEL_PREPARE
  Error prepare_calls(const KernelTable& kernels);
  Error prepare_loaded(const KernelTable& kernels);
#endif
#if MCU_KERNEL_PREPARE && MCU_BOUND_TABLE > 0
  static constexpr int32_t num_bound() { return MCU_BOUND_TABLE; }
  static const BoundCall& bound_call(int32_t k) { return kBoundCalls[k]; }
#elif MCU_KERNEL_PREPARE && MCU_BOUND_CALLS > 0
  int32_t num_bound() const { return num_bound_; }
  const BoundCall& bound_call(int32_t k) const { return bound_[k]; }
#endif
  KernelContext context() const {
    KernelContext ctx;
    ctx.exec_ = this;
    ctx.decoded_ = cache_;
    ctx.num_decoded_ = cached_;
    return ctx;
  }
  Call call_at(int32_t i) const {
    if (MCU_ALL_CALLS_CACHED || i < cached_calls_) return calls_[i];
    Call c = decode_call(i);
#if MCU_KERNEL_PREPARE && (MCU_BOUND_CALLS > 0 || MCU_BOUND_TABLE > 0)
    c.fn = bound_or(i, c.fn);
#endif
    return c;
  }
#if MCU_KERNEL_PREPARE && (MCU_BOUND_CALLS > 0 || MCU_BOUND_TABLE > 0)
  // The generated layer bound to instruction i, else fn. A search of a few entries, not a running index in
  // execute()'s loop: that took one more register there (8 B on the image's deepest stack path).
  // execute()'s path for an instruction past the cache: decoded into ctx, its bound layer if any (one call: no
  // locals of the decoding in execute()'s frame).
  __attribute__((noinline)) KernelFn decode_bound(int32_t i, KernelContext& ctx) const {
    return bound_or(i, decode_into(i, ctx));
  }
  __attribute__((noinline)) KernelFn bound_or(int32_t i, KernelFn fn) const {
    for (int32_t k = 0; k < num_bound(); ++k) {
      if (bound_call(k).instruction == i) return bound_call(k).fn;
    }
    return fn;
  }
#endif

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  uint8_t* arena_[MCU_ARENA_REGIONS] = {};       // per memory id - 1
  size_t arena_size_[MCU_ARENA_REGIONS] = {};
  size_t arena_used_[MCU_ARENA_REGIONS] = {};
  const uint8_t* values_ = nullptr;        // vector<EValue> (after length)
  int32_t num_values_ = 0;
  const uint8_t* instructions_ = nullptr;  // vector<Instruction>
  int32_t num_instructions_ = 0;
  const uint8_t* inputs_ = nullptr;        // vector<int>
  int32_t num_inputs_ = 0;
  const uint8_t* outputs_ = nullptr;
  int32_t num_outputs_ = 0;
  const uint8_t* constants_ = nullptr;     // segment data (or null when inline buffers)
  size_t constants_size_ = 0;
  const uint8_t* constant_offsets_ = nullptr;  // vector<uint64>
  int32_t num_constant_offsets_ = 0;
#if MCU_CONSTANT_BUFFERS
  const uint8_t* constant_buffers_ = nullptr;  // vector<Buffer> (legacy inline)
  int32_t num_constant_buffers_ = 0;
#endif
  int32_t num_operators_ = 0;
  int32_t detail_ = 0;  // zero-initialized so a static Executor lives in .bss
  bool loaded_ = false;
#if MCU_MAX_DELEGATES > 0
  struct Processed {
    const uint8_t* data;
    size_t size;
  };
  Processed delegates_[MCU_MAX_DELEGATES] = {};  // verified processed data per delegate
  int32_t num_delegates_ = 0;
#endif
#if MCU_OPERATOR_ORDER
  static int32_t entry_of(int32_t op) { return op; }  // operator k is kernel table entry k
  static KernelFn fn_of(int32_t op) { return kOperatorFns[op]; }
#else
  int32_t entry_of(int32_t op) const { return op_entry_[op]; }
  KernelFn fn_of(int32_t op) const { return fns_[op]; }
  uint16_t op_entry_[MCU_MAX_OPERATORS] = {};  // kernel table index per operator
  // Kernel per operator, then (delegate builds) the execute function per delegate.
  KernelFn fns_[MCU_MAX_OPERATORS + MCU_MAX_DELEGATES] = {};
#endif
  int32_t cached_ = 0;                        // values [0, cached_) are in cache_
  DecodedValue cache_[MCU_VALUE_CACHE] = {};  // decoded values
  int32_t cached_calls_ = 0;                   // instructions [0, cached_calls_) are in calls_
  Call calls_[MCU_INSTRUCTION_CACHE] = {};
#if MCU_KERNEL_PREPARE && MCU_BOUND_CALLS > 0 && MCU_BOUND_TABLE == 0
  int32_t num_bound_ = 0;  // bound_[0, num_bound_): uncached instructions with a prepared kernel, in order
  BoundCall bound_[MCU_BOUND_CALLS] = {};
#endif
#if MCU_PROGRAM_METHODS
  const uint8_t* plans_ = nullptr;  // vector<ExecutionPlan> data
  uint32_t num_plans_ = 0;
  uint32_t active_method_ = 0;
  const KernelTable* kernels_ = nullptr;
  uint64_t seg_base_ = 0;
  uint64_t seg_size_ = 0;
#endif
#if MCU_PROGRAM_HAS_STATE
  const uint8_t* state_data_ = nullptr;     // mutable data segment: initial values of state tensors
  size_t state_size_ = 0;
  const uint8_t* state_offsets_ = nullptr;  // vector<uint64> data
  int32_t num_state_offsets_ = 0;
#endif
};

}  // namespace mcu
