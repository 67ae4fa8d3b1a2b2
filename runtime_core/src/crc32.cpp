#include "mcu/crc32.h"

namespace mcu {

namespace {
// One entry per 4-bit nibble: 64 bytes of flash, two table steps per byte.
constexpr uint32_t kNibbleTable[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};
}  // namespace

uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    crc = (crc >> 4) ^ kNibbleTable[crc & 0xFu];
    crc = (crc >> 4) ^ kNibbleTable[crc & 0xFu];
  }
  return ~crc;
}

}  // namespace mcu
