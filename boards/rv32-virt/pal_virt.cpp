// PAL for QEMU's riscv32 `virt` machine (runtime_core/include/mcu/pal.h).
//   bytes: the NS16550A UART at 0x10000000 (QEMU's -serial), by polling LSR
//   ticks:  minstret/minstreth, the retired-instruction counter. QEMU 7.2 reads
//           it (and mcycle) from the virtual clock: under `-icount shift=0` one
//           instruction is one nanosecond, so ticks are instructions, exactly
//           (docs/boards.md, rv32-virt)
//   log:    RISC-V semihosting SYS_WRITE0 (QEMU -semihosting-config, its stderr)
//   exit:   the SiFive test finisher at 0x100000: 0x5555 = pass (status 0),
//           (code << 16) | 0x3333 = fail with `code`
#include <stdint.h>

#include "mcu/pal.h"

#ifndef MCU_UART0_BASE
#define MCU_UART0_BASE 0x10000000u
#endif
#ifndef MCU_TEST_FINISHER
#define MCU_TEST_FINISHER 0x00100000u
#endif
#ifndef MCU_BOARD_CLOCK_HZ
#define MCU_BOARD_CLOCK_HZ 1000000000u
#endif

namespace {

// 16550 registers (byte wide, stride 1 on virt).
volatile uint8_t* uart() { return reinterpret_cast<volatile uint8_t*>(MCU_UART0_BASE); }
constexpr unsigned kRbrThr = 0, kIer = 1, kFcr = 2, kLcr = 3, kLsr = 5;
constexpr uint8_t kLsrDataReady = 0x01, kLsrThrEmpty = 0x20;

uint64_t instret() {
  uint32_t hi, lo, hi2;
  do {  // the high word may roll over between the two reads
    __asm volatile("csrr %0, minstreth" : "=r"(hi));
    __asm volatile("csrr %0, minstret" : "=r"(lo));
    __asm volatile("csrr %0, minstreth" : "=r"(hi2));
  } while (hi != hi2);
  return (uint64_t{hi} << 32) | lo;
}

// Semihosting call: the three-instruction sequence QEMU recognises, uncompressed.
long semihost(long op, const void* arg) {
  register long a0 asm("a0") = op;
  register const void* a1 asm("a1") = arg;
  __asm volatile(
      ".option push\n"
      ".option norvc\n"
      ".balign 16\n"
      "slli x0, x0, 0x1f\n"
      "ebreak\n"
      "srai x0, x0, 7\n"
      ".option pop\n"
      : "+r"(a0)
      : "r"(a1)
      : "memory");
  return a0;
}
constexpr long kSysWrite0 = 0x04;

}  // namespace

extern "C" {

void mcu_pal_init(void) {
  volatile uint8_t* u = uart();
  u[kIer] = 0;         // no interrupts: everything polls
  u[kLcr] = 0x03;      // 8N1 (QEMU ignores the baud rate)
  u[kFcr] = 0x07;      // FIFOs on and cleared
}

uint64_t mcu_pal_ticks(void) { return instret(); }

int mcu_pal_read_byte(uint32_t timeout_ms) {
  volatile uint8_t* u = uart();
  const uint64_t start = instret();
  const uint64_t limit = uint64_t{timeout_ms} * (MCU_BOARD_CLOCK_HZ / 1000u);
  while (!(u[kLsr] & kLsrDataReady)) {
    if (instret() - start >= limit) return -1;
  }
  return u[kRbrThr];
}

void mcu_pal_write(const uint8_t* data, size_t n) {
  volatile uint8_t* u = uart();
  for (size_t i = 0; i < n; ++i) {
    while (!(u[kLsr] & kLsrThrEmpty)) {
    }
    u[kRbrThr] = data[i];
  }
}

void mcu_pal_log(const char* msg) {
  semihost(kSysWrite0, msg);
  semihost(kSysWrite0, "\n");
}

void mcu_pal_exit(int code) {
  volatile uint32_t* finisher = reinterpret_cast<volatile uint32_t*>(MCU_TEST_FINISHER);
  *finisher = code == 0 ? 0x5555u : ((static_cast<uint32_t>(code) & 0xFFFFu) << 16) | 0x3333u;
  for (;;) {
    __asm volatile("wfi");
  }
}

void mcu_pal_abort(const char* why) {
  mcu_pal_log("abort:");
  mcu_pal_log(why);
  mcu_pal_exit(134);
}

}  // extern "C"
