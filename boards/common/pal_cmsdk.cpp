// PAL shared by the Arm MPS2/MPS3 and Corstone boards (runtime_core/include/mcu/pal.h).
// Each board.toml sets the defines below; only addresses and IRQ numbers differ.
//   bytes: CMSDK APB UART0 at MCU_UART0_BASE, RX sleeps in WFI (its interrupt only wakes the CPU)
//   ticks: SysTick on the CPU clock (MCU_BOARD_CLOCK_HZ) with a wrap interrupt -> 64 bits;
//          under QEMU's `-icount shift=N` one instruction is 2^N ns of virtual time,
//          so ticks are proportional to instructions (docs/boards.md); on an FVP or
//          hardware they are only time
//   log / exit: Arm semihosting SYS_WRITE0 / SYS_EXIT_EXTENDED (QEMU's stderr / exit status)
// Defines: MCU_BOARD_CLOCK_HZ, MCU_UART0_BASE, MCU_UART0_IRQ (first UART0 interrupt) and
// MCU_UART0_IRQ_COUNT (how many consecutive interrupts UART0 has: RX, TX, overrun).
#include <stdint.h>

#include "mcu/pal.h"

#if !defined(MCU_BOARD_CLOCK_HZ) || !defined(MCU_UART0_BASE) || !defined(MCU_UART0_IRQ) || \
    !defined(MCU_UART0_IRQ_COUNT)
#error "board.toml must define MCU_BOARD_CLOCK_HZ, MCU_UART0_BASE, MCU_UART0_IRQ and MCU_UART0_IRQ_COUNT"
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
// NVIC set-enable register holding interrupt `irq`, and its bit.
volatile uint32_t& nvic_iser(uint32_t irq) { return reinterpret_cast<volatile uint32_t*>(0xE000E100u)[irq / 32u]; }
constexpr uint32_t kPendStSet = 1u << 26;

static_assert(MCU_UART0_IRQ % 32u + MCU_UART0_IRQ_COUNT <= 32u, "UART0's interrupts must share one NVIC register");
constexpr uint32_t kUart0IrqMask = ((1u << MCU_UART0_IRQ_COUNT) - 1u) << (MCU_UART0_IRQ % 32u);

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
  // Dummy read: makes QEMU poll the chardev again, else the first host byte
  // can wait ~1 s (docs/boards.md). Harmless elsewhere.
  (void)u.data;
  nvic_iser(MCU_UART0_IRQ) = kUart0IrqMask;

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
