// Execution of a loaded program (loading and its checks: verifier.cpp): execute() and execute_one() run
// the instructions, decoded here when not cached, and method selection.
#include <string.h>

#include "flatbuffer.h"
#include "program_schema.h"

namespace mcu {

#if MCU_PROGRAM_METHODS
Error Executor::select_method(uint32_t k) {
  if (!loaded_) return Error::NotLoaded;
  if (k >= num_plans_) {
    detail_ = static_cast<int32_t>(num_plans_);
    return Error::MethodMissing;
  }
  if (k == active_method_) return Error::Ok;
  // Verified at load (the program's bytes do not change while it is loaded): binding skips the
  // per-value and per-instruction checks. The arena, and every state tensor in it, is left as it is.
  loaded_ = false;
  const Error e = bind_plan(k, *kernels_, false);
  if (e != Error::Ok) return e;
  active_method_ = k;
  loaded_ = true;
  return Error::Ok;
}

int32_t Executor::find_method(const char* name, size_t length) const {
  if (!loaded_) return -1;
  for (uint32_t k = 0; k < num_plans_; ++k) {
    const uint8_t* s = fb::ref(fb::vec_table(plans_, k), kPlanName);  // a verified string, or absent
    const size_t n = s != nullptr ? fb::u32(s) : 0;
    if (n == length && (n == 0 || memcmp(s + 4, name, n) == 0)) return static_cast<int32_t>(k);
  }
  return -1;
}
#endif

// Instruction i's arguments (its flatbuffer vector) and operator index (delegates: num_operators_ + delegate).
[[gnu::always_inline]] inline const uint8_t* Executor::call_args(int32_t i, int32_t* op) const {
  const uint8_t* kc = fb::ref(fb::vec_table(instructions_, static_cast<uint32_t>(i)), 1);
  *op = fb::scalar<int32_t>(kc, 0, 0);
#if MCU_MAX_DELEGATES > 0
  if (fb::scalar<uint8_t>(fb::vec_table(instructions_, static_cast<uint32_t>(i)), 0, 0) == kDelegateCall) {
    *op += num_operators_;
  }
#endif
  return fb::ref(kc, 1);
}

Executor::Call Executor::decode_call(int32_t i) const {
  int32_t op;
  const uint8_t* args = call_args(i, &op);
  Call call;
  call.args = fb::vec_data(args);
  call.num_args = static_cast<uint16_t>(fb::vec_len(args));
  call.op = static_cast<uint16_t>(op);
  call.fn = fn_of(op);
  return call;
}

// An instruction after the cache, decoded straight into the context execute() calls it with (no Call
// on the stack): its arguments into ctx, its kernel returned.
KernelFn Executor::decode_into(int32_t i, KernelContext& ctx) const {
  int32_t op;
  const uint8_t* args = call_args(i, &op);
  ctx.args_ = fb::vec_data(args);
  ctx.num_args_ = static_cast<uint16_t>(fb::vec_len(args));
  return fn_of(op);
}

Error Executor::execute() {
  if (!loaded_) return Error::NotLoaded;
  KernelContext ctx = context();
  const int32_t n = num_instructions_, cached = cached_calls_;
  // Cached instructions (the first cached_calls_) come from calls_, the rest are decoded.
  for (int32_t i = 0; i < n; ++i) {
    KernelFn fn;
    if (MCU_ALL_CALLS_CACHED || i < cached) {
      const Call& call = calls_[i];
      ctx.args_ = call.args;
      ctx.num_args_ = call.num_args;
      fn = call.fn;
    } else {
#if MCU_KERNEL_PREPARE && (MCU_BOUND_CALLS > 0 || MCU_BOUND_TABLE > 0)
      fn = decode_bound(i, ctx);
#else
      fn = decode_into(i, ctx);
#endif
    }
    const Error e = fn(ctx);
    if (__builtin_expect(e != Error::Ok, 0)) {  // the failure exit, off the loop (one compare-and-branch)
      detail_ = i;
      return e;
    }
  }
  return Error::Ok;
}

Error Executor::execute_one(int32_t i) {
  if (!loaded_) return Error::NotLoaded;
  if (i < 0 || i >= num_instructions_) {
    detail_ = i;
    return Error::BadIndex;
  }
  KernelContext ctx = context();
  const Call call = call_at(i);
  ctx.args_ = call.args;
  ctx.num_args_ = call.num_args;
  const Error e = call.fn(ctx);
  if (e != Error::Ok) detail_ = i;
  return e;
}

[[gnu::cold]] const char* error_name(Error e) {
  switch (e) {
    case Error::Ok: return "Ok";
    case Error::InvalidProgram: return "InvalidProgram";
    case Error::BadIdentifier: return "BadIdentifier";
    case Error::UnsupportedProgram: return "UnsupportedProgram";
    case Error::OperatorMissing: return "OperatorMissing";
    case Error::BadArgument: return "BadArgument";
    case Error::ArenaTooSmall: return "ArenaTooSmall";
    case Error::ConstantOutOfBounds: return "ConstantOutOfBounds";
    case Error::ArenaOutOfBounds: return "ArenaOutOfBounds";
    case Error::Misaligned: return "Misaligned";
    case Error::KernelFailed: return "KernelFailed";
    case Error::NotLoaded: return "NotLoaded";
    case Error::MethodMissing: return "MethodMissing";
    case Error::BadFrame: return "BadFrame";
    case Error::BadCrc: return "BadCrc";
    case Error::BadRequest: return "BadRequest";
    case Error::BadIndex: return "BadIndex";
    case Error::BadLength: return "BadLength";
    case Error::Timeout: return "Timeout";
    case Error::ProtocolVersion: return "ProtocolVersion";
  }
  return "Unknown";
}

}  // namespace mcu
