// Delegates: parts of a program that run on an accelerator (ExecuTorch's
// DelegateCall). Compiled in only when a program has delegates (the build
// defines MCU_MAX_DELEGATES > 0 and generates `mcu::kDelegateTable`).
//
// A DelegateCall's arguments are value indices of arena tensors. For the
// Ethos-U backend they are: inputs..., scratch, outputs... (docs/ethos_u.md).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "mcu/error.h"
#include "mcu/kernel.h"

#ifndef MCU_MAX_DELEGATES
#define MCU_MAX_DELEGATES 0
#endif

namespace mcu {

// One entry per delegate index of the program the firmware was built for.
//   backend   BackendDelegate.id the entry runs ("EthosUBackend")
//   prepare   called at load for every call of delegate `index`, with its processed
//             data (read in place) and the call's arguments; checks the data and the
//             arguments against each other and returns Ok, or the reason to refuse
//             the program. Must never read outside [processed, processed + size).
//   execute   runs one call (the context's arguments are the call's)
struct DelegateEntry {
  const char* backend;
  Error (*prepare)(int32_t index, const uint8_t* processed, size_t size, const KernelContext& args);
  KernelFn execute;
};

struct DelegateTable {
  const DelegateEntry* entries;
  size_t count;
};

extern const DelegateTable kDelegateTable;  // generated (src/kernel_table.cpp)

namespace ethosu {

// Arm Ethos-U (runtime_core/src/delegate_ethosu.cpp). The processed data is
// Vela's output in ExecuTorch's vela_bin_stream layout.
Error prepare(int32_t index, const uint8_t* processed, size_t size, const KernelContext& args);
Error execute(int32_t index, const KernelContext& args);

// What prepare() found in a vela_bin_stream; exposed for tests and tools.
struct VelaIo {
  uint32_t offset;  // in the scratch region (region 1)
  uint32_t bytes;
};
constexpr int32_t kMaxIo = 8;
struct VelaStream {
  const uint8_t* cmd;
  uint32_t cmd_bytes;
  const uint8_t* weights;
  uint32_t weight_bytes;
  uint32_t scratch_bytes;
  int32_t num_inputs;
  int32_t num_outputs;
  VelaIo io[2 * kMaxIo];  // inputs, then outputs
};
// Parses and checks a vela_bin_stream (block names and order, lengths,
// padding, I/O tables, offsets inside the scratch). Ok or InvalidProgram /
// UnsupportedProgram / Misaligned.
Error parse_stream(const uint8_t* data, size_t size, VelaStream* out);

}  // namespace ethosu
}  // namespace mcu
