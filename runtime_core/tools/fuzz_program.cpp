// libFuzzer harness for the program loader and verifier: every input is a
// candidate .pte. Executor::load must reject it cleanly or accept it; an
// accepted program is executed once (with every portable kernel in the table)
// and must run to completion or fail with an error code. Built with clang
// -fsanitize=fuzzer,address,undefined by mcu_gen/fuzz.py; any out-of-bounds
// access, undefined behaviour or hang is a bug in the runtime or a kernel.
//
//   fuzz_program CORPUS_DIR [libFuzzer flags]   fuzz
//   fuzz_program CRASH_FILE                     replay one input
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcu/program.h"

namespace mcu {
extern const KernelTable kKernelTable;  // generated: every portable kernel
}

namespace {
constexpr size_t kMaxProgram = 2u << 20;  // larger inputs are ignored
constexpr size_t kArenaSize = 64u << 10;  // bounds a kernel's work per input
alignas(16) uint8_t g_arena[kArenaSize];
mcu::Executor g_exec;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxProgram) return 0;
  // The runtime wants the program 16-byte aligned: copy it into a heap block
  // of exactly `size` bytes, so ASan flags any read past its end.
  void* program = nullptr;
  if (posix_memalign(&program, 16, size > 0 ? size : 1) != 0) return 0;
  memcpy(program, data, size);
  const uint8_t* p = static_cast<const uint8_t*>(program);
  if (g_exec.load(p, size, mcu::kKernelTable, g_arena, kArenaSize) == mcu::Error::Ok) {
    // Load again with an arena of exactly the planned size, so a kernel that
    // writes past the plan is caught too.
    const size_t used = g_exec.arena_used();
    void* arena = nullptr;
    if (posix_memalign(&arena, 16, used > 0 ? used : 1) == 0) {
      memset(arena, 0, used);
      if (g_exec.load(p, size, mcu::kKernelTable, static_cast<uint8_t*>(arena), used) == mcu::Error::Ok) {
        (void)g_exec.execute();
      }
      free(arena);
    }
  }
  free(program);
  return 0;
}
