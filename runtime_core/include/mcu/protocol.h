// Device side of the verify protocol (docs/protocol.md is the specification).
//
// Frame: 0xA5 0x5A | type u8 | seq u8 | len u16 LE | payload[len] | crc32 LE
// (the CRC covers type..payload). A reply has type = request | 0x80, the
// request's seq, and a payload that starts with a status byte (an mcu::Error);
// an error reply's payload is exactly status u8 + detail i32.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "mcu/kernel.h"
#include "mcu/program.h"

namespace mcu {

constexpr uint16_t kProtocolVersion = 1;
// Bytes of a frame's payload, request or reply. A build sizes it with
// MCU_MAX_PAYLOAD (compile definition) to what its transfers use; HELLO
// reports it and the host chunks transfers to it. 128 holds every fixed reply.
#ifndef MCU_MAX_PAYLOAD
#define MCU_MAX_PAYLOAD 1024
#endif
constexpr size_t kMaxPayload = MCU_MAX_PAYLOAD;
static_assert(kMaxPayload >= 128 && kMaxPayload <= 1024, "MCU_MAX_PAYLOAD must be 128..1024");
// Whether LOAD_PROGRAM_* is compiled in (MCU_UPLOADS=0: a deployable image
// without an upload buffer; the requests then answer BadRequest, detail 0).
#ifndef MCU_UPLOADS
#define MCU_UPLOADS 1
#endif
constexpr bool kUploads = MCU_UPLOADS != 0;
// Whether the profiling and debugging requests (RUN_PROFILED, RUN_RANGE, READ_VALUE) are compiled in
// (MCU_DEBUG_REQUESTS=0: the deployable image `mcu-gen build` makes, ~0.5 KB less code; they then
// answer BadRequest, detail = the type). `mcu-gen profile` / `debug` and images with uploads have them.
#ifndef MCU_DEBUG_REQUESTS
#define MCU_DEBUG_REQUESTS 1
#endif
constexpr bool kDebugRequests = MCU_DEBUG_REQUESTS != 0;
constexpr uint8_t kSync0 = 0xA5;
constexpr uint8_t kSync1 = 0x5A;
constexpr uint8_t kReplyBit = 0x80;

enum class Msg : uint8_t {
  Hello = 0x01,        // u16 host protocol version
  TensorInfo = 0x02,   // u8 kind (0 input, 1 output), u8 index
  WriteInput = 0x03,   // u8 index, u32 offset, bytes
  Run = 0x04,          // (empty)
  ReadOutput = 0x05,   // u8 index, u32 offset, u16 length
  LoadBegin = 0x06,    // u32 size
  LoadChunk = 0x07,    // u32 offset, bytes
  LoadEnd = 0x08,      // u32 crc32 of the whole program
  UseBuiltin = 0x09,   // (empty)
  Exit = 0x0A,         // i32 exit code
  Echo = 0x0B,         // bytes (link test)
  Spin = 0x0C,         // u32 n: runs a 2n-instruction loop, replies its ticks (calibration)
  RunProfiled = 0x0D,  // u16 first: runs once reading ticks around every instruction, replies a window of them
  RunRange = 0x0E,     // u16 begin, u16 end: executes instructions [begin, end) only (debugging)
  ReadValue = 0x0F,    // u32 value index, u32 offset, u16 length: bytes of any tensor value
  Reset = 0x10,        // (empty): state tensors back to their initial values (firmware with MCU_PROGRAM_HAS_STATE)
  SelectMethod = 0x11, // method name: the method RUN executes (firmware with MCU_PROGRAM_METHODS)
};

enum class ProgramSource : uint8_t { None = 0, Builtin = 1, Uploaded = 2 };

// Scale and zero point of one int8 input or output of the builtin program,
// reported in its TENSOR_INFO reply (flags bit 0). The build generates them.
struct IoQuantParams {
  uint8_t is_output;  // 0 input, 1 output
  uint8_t index;
  float scale;
  int32_t zero_point;
};

struct ServerConfig {
  const uint8_t* builtin_program;  // the embedded .pte (16-byte aligned), or null
  size_t builtin_size;
  const KernelTable* kernels;
  uint8_t* arena;                  // 16-byte aligned: memory id 1 (the main RAM region)
  size_t arena_size;
#if MCU_ARENA_REGIONS > 1
  const ArenaRegion* extra_arenas;  // memory ids 2..MCU_ARENA_REGIONS (MCU_ARENA_REGIONS - 1 entries)
#endif
  uint8_t* upload_buffer;          // 16-byte aligned; null/0 disables LOAD_PROGRAM_*
  size_t upload_size;
  uint64_t program_id;             // id of the builtin program (first 8 bytes of its sha256, LE)
  const char* firmware_version;    // reported by HELLO (at most 64 bytes are sent)
  const IoQuantParams* builtin_quant;  // quantized inputs/outputs of the builtin program, or null
  size_t builtin_quant_count;
};

// Verifies the builtin program, then answers requests forever. Returns only
// through mcu_pal_exit (EXIT request).
[[noreturn]] void serve(const ServerConfig& config);

}  // namespace mcu
