// libFuzzer harness for the program loader and verifier: every input is a
// candidate .pte. Executor::load must reject it cleanly or accept it; an
// accepted program is executed once (with every kernel in the table) and must
// run to completion or fail with an error code. Built with clang
// -fsanitize=fuzzer,address,undefined by mcu_gen/fuzz.py; any out-of-bounds
// access, undefined behaviour or hang is a bug in the runtime or a kernel.
//
// Variants (mcu_gen/fuzz.py builds each): the portable kernels; the prepared
// build (MCU_KERNEL_PREPARE=1, every value and instruction cached, CMSIS-NN
// adapters when their sources are available); the delegate build
// (MCU_MAX_DELEGATES=2: the Ethos-U backend's load-time checks and a stub
// backend that reads its whole blob and writes every argument tensor); the methods build
// (MCU_PROGRAM_METHODS=1 with state: every execution plan verified, each method selected and run).
//
// Mutation is structure-aware (fuzz_mutator.h) two times in three, libFuzzer's
// own byte-level mutation otherwise.
//
//   fuzz_program CORPUS_DIR [libFuzzer flags]   fuzz
//   fuzz_program CRASH_FILE                     replay one input
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_mutator.h"
#include "mcu/program.h"
#if MCU_MAX_DELEGATES > 0
#include "delegate_ethosu.cpp"  // the Ethos-U backend's checks, without its driver
#endif

namespace mcu {
extern const KernelTable kKernelTable;  // generated: every kernel of this build

#if MCU_MAX_DELEGATES > 0
namespace {
// A delegate that trusts nothing it was not given: prepare reads every byte of
// its processed data and the size of every argument; execute writes every
// argument tensor (all verified to be arena tensors).
volatile uint8_t g_sink;

Error stub_prepare(int32_t, const uint8_t* processed, size_t size, const KernelContext& args) {
  uint8_t x = 0;
  for (size_t i = 0; i < size; ++i) x ^= processed[i];
  for (int32_t a = 0; a < args.num_args(); ++a) x ^= static_cast<uint8_t>(args.tensor(a).nbytes());
  g_sink = x;
  return size > 0 && processed[0] == 0xEE ? Error::UnsupportedProgram : Error::Ok;
}

Error stub_execute(const KernelContext& args) {
  for (int32_t a = 0; a < args.num_args(); ++a) {
    const TensorRef t = args.tensor(a);
    memset(t.data, 0x5A, t.nbytes());
  }
  return Error::Ok;
}

Error ethosu_execute(const KernelContext& args) { return ethosu::execute(0, args); }

const DelegateEntry kDelegates[] = {
    {"StubBackend", &stub_prepare, &stub_execute},
    {"EthosUBackend", &ethosu::prepare, &ethosu_execute},
};
}  // namespace

extern const DelegateTable kDelegateTable = {kDelegates, sizeof kDelegates / sizeof kDelegates[0]};
#endif
}  // namespace mcu

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {
constexpr size_t kMaxProgram = 2u << 20;  // larger inputs are ignored
constexpr size_t kArenaSize = 64u << 10;  // bounds a kernel's work per input
alignas(16) uint8_t g_arena[kArenaSize];
mcu::Executor g_exec;
}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  if (seed % 3 != 0) {
    const size_t n = mcu_fuzz::mutate_program(data, size, seed);
    if (n != 0) return n;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

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
    size_t used = g_exec.arena_used();
#if MCU_PROGRAM_METHODS
    // Several methods: the largest method's arena; then every method runs, switched to by select_method.
    for (uint32_t k = 1; k < g_exec.num_methods(); ++k) {
      if (g_exec.select_method(k) == mcu::Error::Ok && g_exec.arena_used() > used) used = g_exec.arena_used();
    }
#endif
    void* arena = nullptr;
    if (posix_memalign(&arena, 16, used > 0 ? used : 1) == 0) {
      memset(arena, 0, used);
      if (g_exec.load(p, size, mcu::kKernelTable, static_cast<uint8_t*>(arena), used) == mcu::Error::Ok) {
        (void)g_exec.execute();
#if MCU_PROGRAM_METHODS
        for (uint32_t k = g_exec.num_methods(); k-- > 0;) {
          if (g_exec.select_method(k) == mcu::Error::Ok) (void)g_exec.execute();
        }
#if MCU_PROGRAM_HAS_STATE
        g_exec.reset_state();
#endif
#endif
      }
      free(arena);
    }
  }
  free(program);
  return 0;
}
