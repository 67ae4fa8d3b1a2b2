// Arm Ethos-U delegate: runs an "EthosUBackend" DelegateCall on the NPU with
// Arm's ethos-u core driver (ethosu_invoke_v3). Compiled only into firmware
// whose program has delegates (MCU_MAX_DELEGATES > 0); the driver part only
// when the driver is there (MCU_ETHOSU_DRIVER, set by the build).
//
// Processed data: Vela's output in ExecuTorch's vela_bin_stream layout, read in
// place from flash. Blocks, in this order, each a 16-byte NUL-padded name, a
// uint32 length, a 1-byte flag, 11 reserved bytes, then the data padded to 16:
//   vela_bin_stream (empty), cmd_data, weight_data, scratch_size (uint32),
//   inputs, outputs (int32 count, then per tensor int32 shape[6], elem_size,
//   offset, region), vela_end_stream (empty).
//
// Call arguments: inputs..., scratch, outputs... (arena tensors). The scratch is
// region 1 of the command stream; inputs are copied into it at their Vela
// offsets before the run and outputs copied out after. Region 0 is the weights.
#include <string.h>

#include "mcu/delegate.h"

#if MCU_MAX_DELEGATES > 0

#if defined(MCU_ETHOSU_DRIVER)
#include "ethosu_driver.h"
#include "mcu/pal.h"
#endif

namespace mcu {
namespace ethosu {
namespace {

constexpr uint32_t kHeaderBytes = 32;
constexpr uint32_t kIoEntryBytes = 36;  // int32 shape[6], elem_size, offset, region
constexpr int32_t kScratchRegion = 1;

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

int32_t read_i32(const uint8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

// A block header at `pos` named `name` whose data fits in `size`; sets the data
// start and length and moves `pos` past the padded data.
bool next_block(const uint8_t* data, size_t size, size_t* pos, const char* name, const uint8_t** block,
                uint32_t* length) {
  if (size - *pos < kHeaderBytes) return false;
  const uint8_t* h = data + *pos;
  const size_t n = strlen(name);
  if (memcmp(h, name, n) != 0) return false;
  for (size_t k = n; k < 16; ++k) {
    if (h[k] != 0) return false;
  }
  const uint32_t len = read_u32(h + 16);
  const uint32_t padded = len + ((16u - (len & 15u)) & 15u);
  if (padded < len || size - *pos - kHeaderBytes < padded) return false;
  *block = h + kHeaderBytes;
  *length = len;
  *pos += kHeaderBytes + padded;
  return true;
}

// The I/O table of one block into out[0..count).
Error parse_io(const uint8_t* block, uint32_t length, uint32_t scratch_bytes, int32_t* count, VelaIo* out) {
  if (length < 4) return Error::InvalidProgram;
  const int32_t n = read_i32(block);
  if (n < 0 || n > kMaxIo) return n < 0 ? Error::InvalidProgram : Error::UnsupportedProgram;
  if (length != 4u + static_cast<uint32_t>(n) * kIoEntryBytes) return Error::InvalidProgram;
  for (int32_t i = 0; i < n; ++i) {
    const uint8_t* e = block + 4 + i * kIoEntryBytes;
    uint64_t bytes = 1;
    for (int32_t d = 0; d < 6; ++d) {
      const int32_t s = read_i32(e + 4 * d);
      if (s < 0) return Error::InvalidProgram;
      bytes *= static_cast<uint64_t>(s);
      if (bytes > 0x7FFFFFFFu) return Error::InvalidProgram;
    }
    const int32_t elem = read_i32(e + 24), offset = read_i32(e + 28), region = read_i32(e + 32);
    if (elem != 1 && elem != 2 && elem != 4) return Error::UnsupportedProgram;
    if (region != kScratchRegion) return Error::UnsupportedProgram;
    bytes *= static_cast<uint64_t>(elem);
    if (offset < 0 || bytes > scratch_bytes || static_cast<uint64_t>(offset) > scratch_bytes - bytes) {
      return Error::InvalidProgram;
    }
    out[i].offset = static_cast<uint32_t>(offset);
    out[i].bytes = static_cast<uint32_t>(bytes);
  }
  *count = n;
  return Error::Ok;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

VelaStream g_streams[MCU_MAX_DELEGATES];  // zero-initialized (.bss)

}  // namespace

Error parse_stream(const uint8_t* data, size_t size, VelaStream* out) {
  if (data == nullptr || size < 2 * kHeaderBytes) return Error::InvalidProgram;
  if (!aligned16(data)) return Error::Misaligned;
  size_t pos = 0;
  const uint8_t* b = nullptr;
  uint32_t len = 0;
  if (!next_block(data, size, &pos, "vela_bin_stream", &b, &len) || len != 0) return Error::InvalidProgram;
  if (!next_block(data, size, &pos, "cmd_data", &out->cmd, &out->cmd_bytes)) return Error::InvalidProgram;
  // The driver reads a command stream of whole words that starts with "COP1".
  if (out->cmd_bytes < 8 || (out->cmd_bytes & 3u) != 0 || memcmp(out->cmd, "COP1", 4) != 0) {
    return Error::InvalidProgram;
  }
  if (!next_block(data, size, &pos, "weight_data", &out->weights, &out->weight_bytes)) return Error::InvalidProgram;
  if (!next_block(data, size, &pos, "scratch_size", &b, &len) || len != 4) return Error::InvalidProgram;
  out->scratch_bytes = read_u32(b);
  if (out->scratch_bytes > 0x7FFFFFFFu) return Error::InvalidProgram;
  if (!next_block(data, size, &pos, "inputs", &b, &len)) return Error::InvalidProgram;
  Error e = parse_io(b, len, out->scratch_bytes, &out->num_inputs, out->io);
  if (e != Error::Ok) return e;
  if (!next_block(data, size, &pos, "outputs", &b, &len)) return Error::InvalidProgram;
  e = parse_io(b, len, out->scratch_bytes, &out->num_outputs, out->io + kMaxIo);
  if (e != Error::Ok) return e;
  if (!next_block(data, size, &pos, "vela_end_stream", &b, &len) || len != 0) return Error::InvalidProgram;
  return Error::Ok;
}

Error prepare(int32_t index, const uint8_t* processed, size_t size, const KernelContext& args) {
  if (index < 0 || index >= MCU_MAX_DELEGATES) return Error::UnsupportedProgram;
  VelaStream s;
  const Error e = parse_stream(processed, size, &s);
  if (e != Error::Ok) return e;
  // Arguments: inputs..., scratch, outputs... with the sizes the stream expects.
  if (args.num_args() != s.num_inputs + 1 + s.num_outputs) return Error::BadArgument;
  const TensorRef scratch = args.tensor(s.num_inputs);
  if (scratch.nbytes() < s.scratch_bytes) return Error::BadArgument;
  if (!aligned16(scratch.data)) return Error::Misaligned;
  for (int32_t i = 0; i < s.num_inputs + s.num_outputs; ++i) {
    const int32_t arg = i < s.num_inputs ? i : i + 1;
    const VelaIo& io = i < s.num_inputs ? s.io[i] : s.io[kMaxIo + i - s.num_inputs];
    const TensorRef t = args.tensor(arg);
    if (t.nbytes() != io.bytes) return Error::BadArgument;
  }
  g_streams[index] = s;
  return Error::Ok;
}

#if defined(MCU_ETHOSU_DRIVER)

#ifndef MCU_ETHOSU_BASE_ADDRESS
#error "the board must define MCU_ETHOSU_BASE_ADDRESS (NPU register base) and MCU_ETHOSU_IRQ"
#endif

namespace {
ethosu_driver g_npu;  // zero-initialized (.bss)
bool g_npu_ready;
}  // namespace

Error execute(int32_t index, const KernelContext& args) {
  const VelaStream& s = g_streams[index];
  if (!g_npu_ready) {
    // Secure, privileged: the firmware runs in the Secure state (docs/ethos_u.md).
    if (ethosu_init(&g_npu, reinterpret_cast<void*>(MCU_ETHOSU_BASE_ADDRESS), nullptr, 0, 1, 1) != 0) {
      return Error::KernelFailed;
    }
    volatile uint32_t* nvic_iser = reinterpret_cast<volatile uint32_t*>(0xE000E100u);
    nvic_iser[MCU_ETHOSU_IRQ / 32] = 1u << (MCU_ETHOSU_IRQ % 32);
    g_npu_ready = true;
  }
  uint8_t* scratch = static_cast<uint8_t*>(args.tensor(s.num_inputs).data);
  for (int32_t i = 0; i < s.num_inputs; ++i) {
    const TensorRef t = args.tensor(i);
    memcpy(scratch + s.io[i].offset, t.data, s.io[i].bytes);
  }
  uint64_t bases[3] = {reinterpret_cast<uintptr_t>(s.weights), reinterpret_cast<uintptr_t>(scratch),
                       reinterpret_cast<uintptr_t>(scratch)};
  size_t base_sizes[3] = {s.weight_bytes, s.scratch_bytes, 0};
  ethosu_driver* drv = ethosu_reserve_driver();
  if (drv == nullptr) return Error::KernelFailed;
  const int rc = ethosu_invoke_v3(drv, s.cmd, static_cast<int>(s.cmd_bytes), bases, base_sizes, 3, nullptr);
  ethosu_release_driver(drv);
  if (rc != 0) return Error::KernelFailed;
  for (int32_t i = 0; i < s.num_outputs; ++i) {
    const TensorRef t = args.tensor(s.num_inputs + 1 + i);
    const VelaIo& io = s.io[kMaxIo + i];
    memcpy(t.data, scratch + io.offset, io.bytes);
  }
  return Error::Ok;
}

}  // namespace ethosu
}  // namespace mcu

// The driver's hooks, without a heap: its default semaphore calls malloc.
namespace {
struct NpuSemaphore {
  volatile uint32_t count;
};
NpuSemaphore g_semaphores[4];  // the driver makes one, plus one per NPU
uint32_t g_num_semaphores;
}  // namespace

extern "C" {

void* ethosu_semaphore_create(void) {
  if (g_num_semaphores >= sizeof g_semaphores / sizeof g_semaphores[0]) return nullptr;
  NpuSemaphore* s = &g_semaphores[g_num_semaphores++];
  s->count = 0;
  return s;
}

void ethosu_semaphore_destroy(void*) {}

int ethosu_semaphore_take(void* sem, uint64_t) {
  NpuSemaphore* s = static_cast<NpuSemaphore*>(sem);
  // The interrupt's SEV sets the event register, so a give between the
  // check and the WFE still ends the wait.
  while (s->count == 0) __asm volatile("wfe" ::: "memory");
  s->count = s->count - 1;
  return 0;
}

int ethosu_semaphore_give(void* sem) {
  NpuSemaphore* s = static_cast<NpuSemaphore*>(sem);
  s->count = s->count + 1;
  __asm volatile("dsb\n sev" ::: "memory");
  return 0;
}

// Vector table entry of the NPU interrupt (boards/corstone-300/startup.c).
void Npu_IRQHandler(void) { ethosu_irq_handler(&mcu::ethosu::g_npu); }

// The driver's assert()s end in the PAL's abort, not in newlib's, which would
// link fprintf and malloc (~3 KB) for a message the board may not be able to print.
[[noreturn]] void __assert_func(const char*, int, const char*, const char* expr) {
  mcu_pal_abort(expr);
}

}  // extern "C"

#else  // no driver: the program loads (and is checked), the NPU cannot run it

Error execute(int32_t, const KernelContext&) { return Error::KernelFailed; }

}  // namespace ethosu
}  // namespace mcu

#endif  // MCU_ETHOSU_DRIVER
#endif  // MCU_MAX_DELEGATES > 0
