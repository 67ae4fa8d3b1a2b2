/* Startup for bare-metal RV32 (machine mode), shared by rv32-virt (QEMU) and
 * rp2350-riscv (the RP2350's Hazard3 cores).
 *
 * _start is the first thing in the image (section .text.entry, placed first
 * by the linker scripts): gp (linker relaxation), sp, mtvec -> mcu_riscv_trap,
 * harts other than 0 park, then mcu_riscv_start(): .data copy, .bss zero, the
 * thread pointer set to the TLS block (picolibc keeps errno there), main(),
 * mcu_pal_exit(main's result). The runtime has no static constructors, so
 * .init_array is not walked (the linker scripts fail the link if anything has
 * one). A trap (there are no interrupts: nothing enables any) logs mcause and
 * mepc and exits with status 98, as a HardFault does on the Arm QEMU boards;
 * with MCU_TRAP_STOPS (real hardware, where exit resets the chip) it stops the
 * core instead, so that a debugger sees where. */
#include <stdint.h>

extern uint32_t __data_load__, __data_start__, __data_end__;
extern uint32_t __bss_start__, __bss_end__;
extern uint8_t __tls_base[];

int main(void);
void mcu_riscv_start(void) __attribute__((noreturn, used));
void mcu_riscv_trap(void) __attribute__((noreturn, used, aligned(4)));
/* Defined by the board PAL. */
void mcu_pal_exit(int code) __attribute__((noreturn));
void mcu_pal_log(const char *msg);

__attribute__((naked, noreturn, section(".text.entry"), used)) void _start(void) {
  __asm volatile(
      ".option push\n"
      ".option norelax\n"
      "  la gp, __global_pointer$\n"
      ".option pop\n"
      "  la sp, __StackTop\n"
      "  la t0, mcu_riscv_trap\n"
      "  csrw mtvec, t0\n"
      "  csrr t0, mhartid\n"
      "  bnez t0, 2f\n"
      "  j mcu_riscv_start\n"
      "2: wfi\n"
      "  j 2b\n");
}

void mcu_riscv_start(void) {
  uint32_t *src = &__data_load__;
  for (uint32_t *dst = &__data_start__; dst < &__data_end__;) *dst++ = *src++;
  for (uint32_t *dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0;
  /* Local-exec TLS: tp points at the start of the TLS block (.tdata then
   * .tbss), which the copy and zeroing above initialised. */
  __asm volatile("mv tp, %0" ::"r"(__tls_base));
  mcu_pal_exit(main());
}

static void hex32(char *out, uint32_t v) {
  for (int i = 0; i < 8; ++i) out[i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 0xFu];
}

void mcu_riscv_trap(void) {
  uint32_t cause, epc;
  __asm volatile("csrr %0, mcause" : "=r"(cause));
  __asm volatile("csrr %0, mepc" : "=r"(epc));
  char msg[] = "fault: mcause 0x________ mepc 0x________";
  hex32(msg + 16, cause);
  hex32(msg + 32, epc);
  mcu_pal_log(msg);
#if defined(MCU_TRAP_STOPS) && MCU_TRAP_STOPS
  for (;;) {
    __asm volatile("wfi");
  }
#else
  mcu_pal_exit(98);
#endif
}

/* picolibc's exit()/abort() end here. */
__attribute__((noreturn)) void _exit(int code) { mcu_pal_exit(code); }
