// PAL on an Arduino core (runtime_core/include/mcu/pal.h): the verify protocol
// runs over `Serial` (USB CDC on the Pico 2 with Arduino-Pico, the debugger's
// virtual COM port on Nucleo / nRF52 DK boards).
//   ticks: CPU cycles. Arduino-Pico: rp2040.getCycleCount64(); elsewhere the
//          Cortex-M DWT cycle counter, widened to 64 bits at every reading
//          (one inference must stay below 2^32 cycles: 8.9 s at 480 MHz)
//   log:   dropped (Serial carries the protocol)
//   exit:  resets the board
#include <Arduino.h>
#include <stdint.h>

#include "mcu/pal.h"

namespace {

#if !defined(ARDUINO_ARCH_RP2040)
volatile uint32_t& reg(uint32_t addr) { return *reinterpret_cast<volatile uint32_t*>(addr); }
constexpr uint32_t kDemcr = 0xE000EDFCu, kDwtCtrl = 0xE0001000u, kDwtCycCnt = 0xE0001004u;
constexpr uint32_t kDwtLar = 0xE0001FB0u;  // Cortex-M7: DWT is locked until this is written
uint32_t g_last;
uint32_t g_high;
#endif

}  // namespace

extern "C" {

void mcu_pal_init(void) {
  Serial.begin(115200);
#if !defined(ARDUINO_ARCH_RP2040)
  reg(kDemcr) |= 1u << 24;  // TRCENA
#if defined(__ARM_ARCH_7EM__)
  reg(kDwtLar) = 0xC5ACCE55u;
#endif
  reg(kDwtCycCnt) = 0;
  reg(kDwtCtrl) |= 1u;  // CYCCNTENA
#endif
}

uint64_t mcu_pal_ticks(void) {
#if defined(ARDUINO_ARCH_RP2040)
  return rp2040.getCycleCount64();
#else
  noInterrupts();
  const uint32_t now = reg(kDwtCycCnt);
  if (now < g_last) ++g_high;
  g_last = now;
  const uint64_t ticks = (uint64_t{g_high} << 32) | now;
  interrupts();
  return ticks;
#endif
}

int mcu_pal_read_byte(uint32_t timeout_ms) {
  const uint32_t start = millis();
  while (Serial.available() <= 0) {
    if (millis() - start >= timeout_ms) return -1;
    yield();
  }
  return Serial.read();
}

void mcu_pal_write(const uint8_t* data, size_t n) {
  Serial.write(data, n);
  Serial.flush();
}

void mcu_pal_log(const char* msg) { (void)msg; }

void mcu_pal_exit(int code) {
  (void)code;
  Serial.flush();
  delay(20);
#if defined(ARDUINO_ARCH_RP2040)
  rp2040.reboot();
#else
  NVIC_SystemReset();
#endif
  for (;;) {
  }
}

void mcu_pal_abort(const char* why) {
  mcu_pal_log(why);
  mcu_pal_exit(134);
}

}  // extern "C"
