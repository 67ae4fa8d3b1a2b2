/* Startup for Arm Corstone-300 (Cortex-M55, boots Secure, VTOR_S = 0x10000000 = ITCM).
 * Vector table, FPU enable, .data copy, .bss zero, then main(). The runtime has
 * no static constructors, so .init_array is not walked. main()'s return value
 * and newlib's _exit() both end in semihosting SYS_EXIT_EXTENDED, so QEMU exits
 * with that status (on the FVP: semihosting is on by default); faults exit with
 * 98 (HardFault) or 99 (anything else). The Ethos-U55 interrupt (IRQ 56) goes to
 * Npu_IRQHandler, defined by the Ethos-U delegate (runtime delegate_ethosu.cpp)
 * when the firmware has one, else Default_Handler. */
#include <stdint.h>

extern uint32_t __StackTop;
extern uint32_t __data_load__, __data_start__, __data_end__;
extern uint32_t __bss_start__, __bss_end__;

int main(void);
void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
/* Defined by the board PAL (pal_corstone300.cpp). */
void SysTick_Handler(void);
void Uart0_IRQHandler(void);
void mcu_pal_exit(int code) __attribute__((noreturn));
void mcu_pal_log(const char *msg);
void Npu_IRQHandler(void) __attribute__((weak, alias("Default_Handler")));

typedef void (*vec_t)(void);

/* 16 system exceptions + 64 IRQs (UART0 RX/TX: IRQ 33/34; Ethos-U55: IRQ 56). */
__attribute__((section(".vectors"), used)) const vec_t __vectors[16 + 64] = {
    [0] = (vec_t)(uintptr_t)&__StackTop,
    [1] = Reset_Handler,
    [2] = Default_Handler,   /* NMI */
    [3] = HardFault_Handler,
    [4] = Default_Handler,   /* MemManage */
    [5] = Default_Handler,   /* BusFault */
    [6] = Default_Handler,   /* UsageFault */
    [7] = Default_Handler,   /* SecureFault */
    [11] = Default_Handler,  /* SVC */
    [14] = Default_Handler,  /* PendSV */
    [15] = SysTick_Handler,
    [16 + 33] = Uart0_IRQHandler,
    [16 + 34] = Uart0_IRQHandler,
    [16 + 56] = Npu_IRQHandler,
};

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)

__attribute__((noreturn, used)) void Reset_Handler(void) {
#if defined(__ARM_FP)
  SCB_CPACR |= (0xFu << 20); /* CP10 + CP11 full access, before any FP instruction */
  __asm volatile("dsb\n isb" ::: "memory");
#endif
  SCB_VTOR = (uint32_t)(uintptr_t)__vectors;
  uint32_t *src = &__data_load__;
  for (uint32_t *dst = &__data_start__; dst < &__data_end__;) *dst++ = *src++;
  for (uint32_t *dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0;
  mcu_pal_exit(main());
}

void Default_Handler(void) {
  mcu_pal_log("fault: unhandled exception");
  mcu_pal_exit(99);
}

void HardFault_Handler(void) {
  mcu_pal_log("fault: HardFault");
  mcu_pal_exit(98);
}

/* newlib's exit()/abort() end here; libnosys's version would spin forever. */
__attribute__((noreturn)) void _exit(int code) { mcu_pal_exit(code); }
