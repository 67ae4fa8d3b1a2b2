// PAL for Arm Corstone-300 (FVP_Corstone_SSE-300_Ethos-U55; runtime_core/include/mcu/pal.h).
//   bytes: CMSDK APB UART0 at MCU_UART0_BASE (board.toml), RX sleeps in WFI
//   ticks: SysTick on the CPU clock with a wrap interrupt -> 64 bits (the FVP
//          is not cycle-accurate: ticks are only a rough time)
//   log / exit: Arm semihosting SYS_WRITE0 / SYS_EXIT_EXTENDED (the FVP's console / exit)
#include <stdint.h>

#include "mcu/pal.h"

#ifndef MCU_UART0_BASE
#define MCU_UART0_BASE 0x49303000u
#endif
#ifndef MCU_BOARD_CLOCK_HZ
#define MCU_BOARD_CLOCK_HZ 32000000u
#endif

namespace {

constexpr uint32_t kClockHz = MCU_BOARD_CLOCK_HZ;
constexpr uint32_t kTicksPerMs = kClockHz / 1000u;
constexpr uint32_t kSysTickReload = 0x00FFFFFFu;  // 24-bit counter

struct CmsdkUart {
  volatile uint32_t data;       // read: RX byte (clears RXFULL); write: TX byte
  volatile uint32_t state;      // bit 0 TXFULL, bit 1 RXFULL
  volatile uint32_t ctrl;       // bit 0 TX enable, bit 1 RX enable, bit 3 RX interrupt enable
  volatile uint32_t intstatus;  // write 1 to clear
  volatile uint32_t bauddiv;    // >= 16; QEMU ignores the baud rate
};
constexpr uint32_t kTxFull = 1u;
constexpr uint32_t kRxFull = 2u;

struct SysTick {
  volatile uint32_t csr;
  volatile uint32_t rvr;
  volatile uint32_t cvr;
  volatile uint32_t calib;
};

CmsdkUart& uart0() { return *reinterpret_cast<CmsdkUart*>(MCU_UART0_BASE); }
SysTick& systick() { return *reinterpret_cast<SysTick*>(0xE000E010u); }
volatile uint32_t& scb_icsr() { return *reinterpret_cast<volatile uint32_t*>(0xE000ED04u); }
volatile uint32_t& nvic_iser1() { return *reinterpret_cast<volatile uint32_t*>(0xE000E104u); }
constexpr uint32_t kPendStSet = 1u << 26;

volatile uint32_t g_systick_wraps;  // zero-initialized (.bss)

uint32_t irq_save() {
  uint32_t primask;
  __asm volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  return primask;
}
void irq_restore(uint32_t primask) { __asm volatile("msr primask, %0" ::"r"(primask) : "memory"); }

int semihost(int op, const void* arg) {
  register int r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
constexpr int kSysWrite0 = 0x04;
constexpr int kSysExitExtended = 0x20;
constexpr uint32_t kApplicationExit = 0x20026u;

}  // namespace

extern "C" {

void SysTick_Handler(void) { g_systick_wraps = g_systick_wraps + 1; }

// The RX interrupt only wakes the CPU from WFI; the byte stays in DATA.
void Uart0_IRQHandler(void) { uart0().intstatus = 0xFu; }

void mcu_pal_init(void) {
  CmsdkUart& u = uart0();
  u.bauddiv = kClockHz / 115200u;
  u.ctrl = 0x1u | 0x2u | 0x8u;  // TX, RX, RX interrupt
  nvic_iser1() = 0x6u;  // IRQ 33, 34: UART0 RX, TX

  SysTick& st = systick();
  st.rvr = kSysTickReload;
  st.cvr = 0;
  st.csr = 0x7u;  // enable, wrap interrupt, CPU clock
  while (st.cvr == 0) {
  }  // the first reload must happen before the first reading
  __asm volatile("cpsie i" ::: "memory");
}

uint64_t mcu_pal_ticks(void) {
  const uint32_t primask = irq_save();
  uint32_t value = systick().cvr;
  uint64_t wraps = g_systick_wraps;
  if (scb_icsr() & kPendStSet) {  // wrapped, handler not yet run
    value = systick().cvr;
    wraps += 1;
  }
  irq_restore(primask);
  return wraps * (uint64_t{kSysTickReload} + 1u) + (kSysTickReload - value);
}

int mcu_pal_read_byte(uint32_t timeout_ms) {
  CmsdkUart& u = uart0();
  const uint64_t start = mcu_pal_ticks();
  const uint64_t limit = uint64_t{timeout_ms} * kTicksPerMs;
  for (;;) {
    // Check and sleep with interrupts masked: an interrupt that arrives in
    // between still ends the WFI, and its handler runs at cpsie.
    __asm volatile("cpsid i" ::: "memory");
    if (u.state & kRxFull) {
      const int byte = static_cast<int>(u.data & 0xFFu);
      __asm volatile("cpsie i" ::: "memory");
      return byte;
    }
    if (mcu_pal_ticks() - start >= limit) {
      __asm volatile("cpsie i" ::: "memory");
      return -1;
    }
    __asm volatile("wfi\n cpsie i" ::: "memory");
  }
}

void mcu_pal_write(const uint8_t* data, size_t n) {
  CmsdkUart& u = uart0();
  for (size_t i = 0; i < n; ++i) {
    while (u.state & kTxFull) {
    }
    u.data = data[i];
  }
}

void mcu_pal_log(const char* msg) {
  semihost(kSysWrite0, msg);
  semihost(kSysWrite0, "\n");
}

void mcu_pal_exit(int code) {
  while (uart0().state & kTxFull) {
  }
  const uint32_t block[2] = {kApplicationExit, static_cast<uint32_t>(code)};
  semihost(kSysExitExtended, block);
  for (;;) {
  }
}

void mcu_pal_abort(const char* why) {
  semihost(kSysWrite0, "abort: ");
  mcu_pal_log(why);
  mcu_pal_exit(134);
}

}  // extern "C"
