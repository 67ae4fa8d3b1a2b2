// PAL for the Raspberry Pi Pico 2 (RP2350, Arm core 0 or Hazard3 RISC-V core 0), bare metal
// (runtime_core/include/mcu/pal.h). Register addresses and fields are from the
// RP2350 datasheet (chapters 2.2 address map, 7.5 resets, 8.1 clocks, 8.2
// XOSC, 8.6 PLL, 9.11 IO/pads, 12.1 UART) and match pico-sdk's hardware_regs.
//   init:  XOSC 12 MHz -> PLL_SYS 1500 MHz VCO / 5 / 2 = 150 MHz -> clk_sys;
//          clk_ref = XOSC; clk_peri = clk_sys; UART0 115200 8N1 on GP0 (TX) / GP1 (RX)
//   bytes: UART0 (PL011) by polling its flag register
//   ticks: DWT CYCCNT (clk_sys cycles), widened to 64 bits; SysTick interrupts
//          every 2^24 cycles (112 ms) so a wrap of CYCCNT (28.6 s) is never missed
//   log:   a RAM ring buffer (g_mcu_log, read it with a debugger): the protocol
//          UART carries nothing else
//   exit:  drains the UART and resets the chip (AIRCR.SYSRESETREQ)
// Built for RISC-V (board rp2350-riscv, the Hazard3 cores) only the core parts
// differ: ticks are mcycle/mcycleh (64-bit clk_sys cycles, no wrap handling,
// no SysTick), interrupts are masked with mstatus.MIE, and exit resets the
// chip through the watchdog (PSM WDSEL: everything but the oscillators, then
// WATCHDOG CTRL.TRIGGER), as pico-sdk's watchdog_reboot() does.
#include <stdint.h>

#include "mcu/pal.h"

#ifndef MCU_BOARD_CLOCK_HZ
#define MCU_BOARD_CLOCK_HZ 150000000u
#endif

namespace {

constexpr uint32_t kXoscHz = 12000000u;
constexpr uint32_t kSysHz = MCU_BOARD_CLOCK_HZ;
constexpr uint32_t kBaud = 115200u;

// Every APB register has atomic aliases: +0x2000 sets bits, +0x3000 clears bits.
constexpr uint32_t kAliasSet = 0x2000u;
constexpr uint32_t kAliasClear = 0x3000u;

volatile uint32_t& reg(uint32_t addr) { return *reinterpret_cast<volatile uint32_t*>(addr); }
void set_bits(uint32_t addr, uint32_t bits) { reg(addr + kAliasSet) = bits; }
void clear_bits(uint32_t addr, uint32_t bits) { reg(addr + kAliasClear) = bits; }

// --- RESETS (0x40020000) -------------------------------------------------------
constexpr uint32_t kResets = 0x40020000u;
constexpr uint32_t kResetsReset = kResets + 0x0u;
constexpr uint32_t kResetsDone = kResets + 0x8u;
constexpr uint32_t kResetIoBank0 = 1u << 6;
constexpr uint32_t kResetPadsBank0 = 1u << 9;
constexpr uint32_t kResetPllSys = 1u << 14;
constexpr uint32_t kResetUart0 = 1u << 26;

void reset_cycle(uint32_t bits) {
  set_bits(kResetsReset, bits);
  clear_bits(kResetsReset, bits);
  while ((reg(kResetsDone) & bits) != bits) {
  }
}

// --- XOSC (0x40048000) ---------------------------------------------------------
constexpr uint32_t kXosc = 0x40048000u;
constexpr uint32_t kXoscCtrl = kXosc + 0x00u;
constexpr uint32_t kXoscStatus = kXosc + 0x04u;
constexpr uint32_t kXoscStartup = kXosc + 0x0Cu;
constexpr uint32_t kXoscRange1To15MHz = 0xAA0u;  // CTRL.FREQ_RANGE
constexpr uint32_t kXoscEnable = 0xFABu << 12;   // CTRL.ENABLE
constexpr uint32_t kXoscStable = 1u << 31;       // STATUS.STABLE
// STARTUP.DELAY counts 256 XOSC cycles: ~1 ms, times 6 as pico-sdk does for slow crystals.
constexpr uint32_t kXoscStartupDelay = ((kXoscHz / 1000u + 128u) / 256u) * 6u;

// --- PLL_SYS (0x40050000) ------------------------------------------------------
constexpr uint32_t kPllSys = 0x40050000u;
constexpr uint32_t kPllCs = kPllSys + 0x00u;  // bits 5:0 REFDIV, bit 31 LOCK
constexpr uint32_t kPllPwr = kPllSys + 0x04u;
constexpr uint32_t kPllFbdiv = kPllSys + 0x08u;
constexpr uint32_t kPllPrim = kPllSys + 0x0Cu;  // POSTDIV1 bits 18:16, POSTDIV2 bits 14:12
constexpr uint32_t kPllLock = 1u << 31;
constexpr uint32_t kPllPwrPd = 1u << 0;
constexpr uint32_t kPllPwrPostdivPd = 1u << 3;
constexpr uint32_t kPllPwrVcoPd = 1u << 5;
// 12 MHz / REFDIV 1 * FBDIV 125 = 1500 MHz VCO; / POSTDIV1 5 / POSTDIV2 2 = 150 MHz.
constexpr uint32_t kPllRefdiv = 1u, kPllFbdivValue = 125u, kPllPostdiv1 = 5u, kPllPostdiv2 = 2u;
static_assert(kXoscHz / kPllRefdiv * kPllFbdivValue / kPllPostdiv1 / kPllPostdiv2 == kSysHz,
              "PLL_SYS settings must give MCU_BOARD_CLOCK_HZ");

// --- CLOCKS (0x40010000) -------------------------------------------------------
constexpr uint32_t kClocks = 0x40010000u;
constexpr uint32_t kClkRefCtrl = kClocks + 0x30u;  // SRC bits 1:0 (2 = XOSC), glitchless
constexpr uint32_t kClkRefDiv = kClocks + 0x34u;
constexpr uint32_t kClkRefSelected = kClocks + 0x38u;  // one-hot: bit SRC
constexpr uint32_t kClkSysCtrl = kClocks + 0x3Cu;      // SRC bit 0 (1 = aux), AUXSRC bits 7:5 (0 = PLL_SYS)
constexpr uint32_t kClkSysDiv = kClocks + 0x40u;       // INT bits 31:16
constexpr uint32_t kClkSysSelected = kClocks + 0x44u;
constexpr uint32_t kClkPeriCtrl = kClocks + 0x48u;  // AUXSRC bits 7:5 (0 = clk_sys), ENABLE bit 11
constexpr uint32_t kClkPeriDiv = kClocks + 0x4Cu;
constexpr uint32_t kClkSysResusCtrl = kClocks + 0x84u;
constexpr uint32_t kClkRefSrcXosc = 2u;
constexpr uint32_t kClkSysSrcAux = 1u;
constexpr uint32_t kClkPeriEnable = 1u << 11;
constexpr uint32_t kDivBy1 = 1u << 16;

// --- IO_BANK0 (0x40028000), PADS_BANK0 (0x40038000) ----------------------------
constexpr uint32_t kIoBank0 = 0x40028000u;
constexpr uint32_t kPadsBank0 = 0x40038000u;
uint32_t gpio_ctrl(uint32_t pin) { return kIoBank0 + 8u * pin + 4u; }  // GPIOn_CTRL, FUNCSEL bits 4:0
uint32_t pad(uint32_t pin) { return kPadsBank0 + 4u + 4u * pin; }      // GPIOn pad control
constexpr uint32_t kFuncUart = 2u;                                      // GP0 = UART0 TX, GP1 = UART0 RX
constexpr uint32_t kPadIe = 1u << 6, kPadOd = 1u << 7, kPadIso = 1u << 8;

// --- UART0 (0x40070000), Arm PL011 ---------------------------------------------
struct Pl011 {
  volatile uint32_t dr;       // 0x00
  volatile uint32_t rsr;      // 0x04
  uint32_t reserved0[4];      // 0x08..0x14
  volatile uint32_t fr;       // 0x18: bit 3 BUSY, bit 4 RXFE, bit 5 TXFF
  uint32_t reserved1;         // 0x1C
  volatile uint32_t ilpr;     // 0x20
  volatile uint32_t ibrd;     // 0x24
  volatile uint32_t fbrd;     // 0x28
  volatile uint32_t lcr_h;    // 0x2C: bits 6:5 WLEN, bit 4 FEN
  volatile uint32_t cr;       // 0x30: bit 0 UARTEN, bit 8 TXE, bit 9 RXE
};
static_assert(__builtin_offsetof(Pl011, fr) == 0x18 && __builtin_offsetof(Pl011, cr) == 0x30, "PL011 layout");
Pl011& uart0() { return *reinterpret_cast<Pl011*>(0x40070000u); }
constexpr uint32_t kFrBusy = 1u << 3, kFrRxFifoEmpty = 1u << 4, kFrTxFifoFull = 1u << 5;
constexpr uint32_t kLcrWlen8 = 3u << 5, kLcrFifoEnable = 1u << 4;
constexpr uint32_t kCrEnable = 1u << 0, kCrTx = 1u << 8, kCrRx = 1u << 9;
// PL011 divisor = clk_peri / (16 * baud) in 16.6 fixed point, rounded (as pico-sdk).
constexpr uint32_t kBaudDiv = 8u * kSysHz / kBaud + 1u;
constexpr uint32_t kIbrd = kBaudDiv >> 7;
constexpr uint32_t kFbrd = (kBaudDiv & 0x7Fu) >> 1;
static_assert(kIbrd == 81u && kFbrd == 24u, "115200 baud from 150 MHz: 81 + 24/64");

#if defined(__riscv)
// --- Hazard3 (RISC-V) core: counters, watchdog reset ---------------------------
constexpr uint32_t kWatchdogCtrl = 0x400D8000u;  // WATCHDOG_BASE + CTRL
constexpr uint32_t kWatchdogTrigger = 1u << 31;
constexpr uint32_t kWatchdogEnable = 1u << 30;
constexpr uint32_t kPsmWdsel = 0x40018000u + 0x8u;  // PSM_BASE + WDSEL
constexpr uint32_t kPsmWdselAll = 0x01FFFFFFu, kPsmWdselRosc = 1u << 2, kPsmWdselXosc = 1u << 3;

char g_mcu_log[256];
uint32_t g_mcu_log_head;

uint32_t irq_save() {
  uint32_t mstatus;
  __asm volatile("csrrci %0, mstatus, 8" : "=r"(mstatus)::"memory");  // clear MIE, return the old value
  return mstatus;
}
void irq_restore(uint32_t mstatus) {
  if (mstatus & 8u) __asm volatile("csrsi mstatus, 8" ::: "memory");
}

uint64_t cycles_locked() {
  uint32_t hi, lo, hi2;
  do {  // the high word may roll over between the two reads
    __asm volatile("csrr %0, mcycleh" : "=r"(hi));
    __asm volatile("csrr %0, mcycle" : "=r"(lo));
    __asm volatile("csrr %0, mcycleh" : "=r"(hi2));
  } while (hi != hi2);
  return (uint64_t{hi} << 32) | lo;
}
#else
// --- Cortex-M33 core peripherals -----------------------------------------------
constexpr uint32_t kDemcr = 0xE000EDFCu;
constexpr uint32_t kDemcrTrcEna = 1u << 24;
constexpr uint32_t kDwtCtrl = 0xE0001000u;
constexpr uint32_t kDwtCycCnt = 0xE0001004u;
constexpr uint32_t kDwtCycCntEna = 1u << 0;
constexpr uint32_t kSysTickCsr = 0xE000E010u, kSysTickRvr = 0xE000E014u, kSysTickCvr = 0xE000E018u;
constexpr uint32_t kAircr = 0xE000ED0Cu;
constexpr uint32_t kAircrSysResetReq = (0x05FAu << 16) | (1u << 2);

// 64-bit cycle count: the high word counts CYCCNT wraps, noticed at every read
// (and at least every 2^24 cycles by the SysTick interrupt).
uint32_t g_cycles_last;
uint32_t g_cycles_high;

char g_mcu_log[256];
uint32_t g_mcu_log_head;

uint32_t irq_save() {
  uint32_t primask;
  __asm volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  return primask;
}
void irq_restore(uint32_t primask) { __asm volatile("msr primask, %0" ::"r"(primask) : "memory"); }

uint64_t cycles_locked() {
  const uint32_t now = reg(kDwtCycCnt);
  if (now < g_cycles_last) g_cycles_high = g_cycles_high + 1u;
  g_cycles_last = now;
  return (uint64_t{g_cycles_high} << 32) | now;
}
#endif  // __riscv

void clocks_init() {
  reg(kClkSysResusCtrl) = 0;  // no resuscitation while clk_sys is being switched

  reg(kXoscCtrl) = kXoscRange1To15MHz;
  reg(kXoscStartup) = kXoscStartupDelay;
  set_bits(kXoscCtrl, kXoscEnable);
  while ((reg(kXoscStatus) & kXoscStable) == 0) {
  }

  // Move clk_sys and clk_ref off anything the bootrom left them on (glitchless
  // muxes: wait until SELECTED says so), then (re)start PLL_SYS.
  clear_bits(kClkSysCtrl, 1u);  // SRC = clk_ref
  while (reg(kClkSysSelected) != 1u) {
  }
  clear_bits(kClkRefCtrl, 3u);  // SRC = ROSC
  while (reg(kClkRefSelected) != 1u) {
  }

  reset_cycle(kResetPllSys);
  reg(kPllCs) = kPllRefdiv;
  reg(kPllFbdiv) = kPllFbdivValue;
  clear_bits(kPllPwr, kPllPwrPd | kPllPwrVcoPd);
  while ((reg(kPllCs) & kPllLock) == 0) {
  }
  reg(kPllPrim) = (kPllPostdiv1 << 16) | (kPllPostdiv2 << 12);
  clear_bits(kPllPwr, kPllPwrPostdivPd);

  // clk_ref = XOSC / 1
  reg(kClkRefDiv) = kDivBy1;
  reg(kClkRefCtrl) = kClkRefSrcXosc;
  while (reg(kClkRefSelected) != (1u << kClkRefSrcXosc)) {
  }
  // clk_sys = PLL_SYS / 1: AUXSRC (bits 7:5) = 0 = PLL_SYS while SRC is clk_ref, then SRC = aux
  reg(kClkSysDiv) = kDivBy1;
  reg(kClkSysCtrl) = 0u;
  reg(kClkSysCtrl) = kClkSysSrcAux;
  while (reg(kClkSysSelected) != (1u << kClkSysSrcAux)) {
  }
  // clk_peri = clk_sys (AUXSRC 0), enabled: the UART's clock
  reg(kClkPeriCtrl) = 0u;
  reg(kClkPeriDiv) = kDivBy1;
  reg(kClkPeriCtrl) = kClkPeriEnable;
}

void uart_init() {
  reset_cycle(kResetIoBank0 | kResetPadsBank0 | kResetUart0);
  Pl011& u = uart0();
  u.ibrd = kIbrd;
  u.fbrd = kFbrd;
  u.lcr_h = kLcrWlen8 | kLcrFifoEnable;  // 8N1, FIFOs on (writing LCR_H latches the divisor)
  u.cr = kCrEnable | kCrTx | kCrRx;
  for (uint32_t pin = 0; pin < 2; ++pin) {  // as pico-sdk gpio_set_function()
    reg(pad(pin)) = (reg(pad(pin)) & ~kPadOd) | kPadIe;
    reg(gpio_ctrl(pin)) = kFuncUart;
    clear_bits(pad(pin), kPadIso);  // pads come out of reset isolated
  }
}

#if defined(__riscv)
void ticks_init() {
  __asm volatile("csrw mcountinhibit, zero");  // mcycle and minstret count (they may come out of reset inhibited)
  __asm volatile("csrw mcycle, zero\n csrw mcycleh, zero");
}
#else
void ticks_init() {
  reg(kDemcr) |= kDemcrTrcEna;
  reg(kDwtCycCnt) = 0;
  reg(kDwtCtrl) |= kDwtCycCntEna;
  reg(kSysTickRvr) = 0x00FFFFFFu;
  reg(kSysTickCvr) = 0;
  reg(kSysTickCsr) = 0x7u;  // enable, interrupt, processor clock
}
#endif

}  // namespace

extern "C" {

#if defined(__riscv)
void mcu_pal_init(void) {
  clocks_init();
  uart_init();
  ticks_init();
}
#else
void SysTick_Handler(void) { (void)cycles_locked(); }

void mcu_pal_init(void) {
  clocks_init();
  uart_init();
  ticks_init();
  __asm volatile("cpsie i" ::: "memory");
}
#endif

uint64_t mcu_pal_ticks(void) {
  const uint32_t primask = irq_save();
  const uint64_t now = cycles_locked();
  irq_restore(primask);
  return now;
}

int mcu_pal_read_byte(uint32_t timeout_ms) {
  Pl011& u = uart0();
  const uint64_t start = mcu_pal_ticks();
  const uint64_t limit = uint64_t{timeout_ms} * (kSysHz / 1000u);
  while (u.fr & kFrRxFifoEmpty) {
    if (mcu_pal_ticks() - start >= limit) return -1;
  }
  return static_cast<int>(u.dr & 0xFFu);  // bits 11:8 are error flags
}

void mcu_pal_write(const uint8_t* data, size_t n) {
  Pl011& u = uart0();
  for (size_t i = 0; i < n; ++i) {
    while (u.fr & kFrTxFifoFull) {
    }
    u.dr = data[i];
  }
}

void mcu_pal_log(const char* msg) {
  const uint32_t primask = irq_save();
  for (const char* p = msg;; ++p) {
    const char c = *p ? *p : '\n';
    g_mcu_log[g_mcu_log_head % sizeof(g_mcu_log)] = c;
    g_mcu_log_head = g_mcu_log_head + 1u;
    if (!*p) break;
  }
  irq_restore(primask);
}

void mcu_pal_exit(int code) {
  (void)code;
  while (uart0().fr & kFrBusy) {  // let the last reply leave
  }
#if defined(__riscv)
  clear_bits(kWatchdogCtrl, kWatchdogEnable);
  set_bits(kPsmWdsel, kPsmWdselAll & ~(kPsmWdselRosc | kPsmWdselXosc));
  set_bits(kWatchdogCtrl, kWatchdogTrigger);
#else
  __asm volatile("dsb" ::: "memory");
  reg(kAircr) = kAircrSysResetReq;
  __asm volatile("dsb" ::: "memory");
#endif
  for (;;) {
  }
}

void mcu_pal_abort(const char* why) {
  mcu_pal_log("abort:");
  mcu_pal_log(why);
  mcu_pal_exit(134);
}

}  // extern "C"
