// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the same function as
// zlib's crc32() and Python's zlib.crc32(): crc32(b"123456789") == 0xCBF43926.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace mcu {

// Continues a running CRC: crc32(b, n2, crc32(a, n1)) == crc32(a + b, n1 + n2).
uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc = 0);

}  // namespace mcu
