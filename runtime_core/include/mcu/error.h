// Error codes returned by every fallible runtime call. The numeric values are
// part of the serial protocol (the host prints their names), so never reorder.
#pragma once
#include <stdint.h>

namespace mcu {

enum class Error : uint8_t {
  Ok = 0,
  // Program verification (load time).
  InvalidProgram = 1,        // malformed flatbuffer, offset or length out of bounds
  BadIdentifier = 2,         // not an ET12 program
  UnsupportedProgram = 3,    // valid ET12 but uses a feature this runtime lacks
  OperatorMissing = 4,       // an operator of the program is not in the kernel table
  BadArgument = 5,           // an instruction's arguments do not match the kernel's signature
  ArenaTooSmall = 6,         // the program needs more arena than the firmware has
  ConstantOutOfBounds = 7,   // a constant tensor points outside the constant data
  ArenaOutOfBounds = 8,      // an activation tensor points outside the arena
  Misaligned = 9,            // program data not aligned as the format requires
  // Execution.
  KernelFailed = 16,         // a kernel rejected its arguments (shape/dtype)
  NotLoaded = 17,            // no valid program
  MethodMissing = 18,        // no method of that name (or index) in the program
  // Protocol.
  BadFrame = 32,
  BadCrc = 33,
  BadRequest = 34,
  BadIndex = 35,
  BadLength = 36,
  Timeout = 37,
  ProtocolVersion = 38,
};

const char* error_name(Error e);

}  // namespace mcu
