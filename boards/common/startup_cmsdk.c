/* Startup shared by the Arm MPS2/MPS3 and Corstone boards (Cortex-M4/M33/M55).
 * Vector table, FPU/MVE enable, .data copy, .bss zero, then main(). The runtime has
 * no static constructors, so .init_array is not walked. main()'s return value and
 * newlib's _exit() both end in semihosting SYS_EXIT_EXTENDED (pal_cmsdk.cpp), so
 * QEMU exits with that status; faults exit with 98 (HardFault) or 99 (anything else).
 * board.toml defines MCU_UART0_IRQ / MCU_UART0_IRQ_COUNT (UART0's interrupts, which
 * wake the CPU from WFI) and, on boards with an Ethos-U NPU, MCU_ETHOSU_IRQ, whose
 * handler Npu_IRQHandler the Ethos-U delegate defines. */
#include <stdint.h>

extern uint32_t __StackTop, __StackLimit;
extern uint32_t __data_load__, __data_start__, __data_end__;
extern uint32_t __bss_start__, __bss_end__;

int main(void);
void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
/* Defined by the PAL (pal_cmsdk.cpp). */
void SysTick_Handler(void);
void Uart0_IRQHandler(void);
void mcu_pal_exit(int code) __attribute__((noreturn));
void mcu_pal_log(const char *msg);
uint32_t mcu_pal_stack_used(void);
#ifdef MCU_ETHOSU_IRQ
void Npu_IRQHandler(void) __attribute__((weak, alias("Default_Handler")));
#endif

#if !defined(MCU_UART0_IRQ) || !defined(MCU_UART0_IRQ_COUNT)
#error "board.toml must define MCU_UART0_IRQ and MCU_UART0_IRQ_COUNT"
#endif

typedef void (*vec_t)(void);

/* 16 system exceptions + 64 IRQs. */
__attribute__((section(".vectors"), used)) const vec_t __vectors[16 + 64] = {
    [0] = (vec_t)(uintptr_t)&__StackTop,
    [1] = Reset_Handler,
    [2] = Default_Handler,   /* NMI */
    [3] = HardFault_Handler,
    [4] = Default_Handler,   /* MemManage */
    [5] = Default_Handler,   /* BusFault */
    [6] = Default_Handler,   /* UsageFault */
    [7] = Default_Handler,   /* SecureFault (v8-M; reserved on v7-M) */
    [11] = Default_Handler,  /* SVC */
    [14] = Default_Handler,  /* PendSV */
    [15] = SysTick_Handler,
    [16 + MCU_UART0_IRQ] = Uart0_IRQHandler,
#if MCU_UART0_IRQ_COUNT > 1
    [16 + MCU_UART0_IRQ + 1] = Uart0_IRQHandler,
#endif
#if MCU_UART0_IRQ_COUNT > 2
    [16 + MCU_UART0_IRQ + 2] = Uart0_IRQHandler,
#endif
#ifdef MCU_ETHOSU_IRQ
    [16 + MCU_ETHOSU_IRQ] = Npu_IRQHandler,
#endif
};

/* Stack painting: Reset_Handler fills the free stack with this word, and
 * mcu_pal_stack_used() (pal.h; HELLO reports it) finds the lowest word that is
 * no longer painted: the stack's high-water mark since boot, interrupts included. */
static const uint32_t kStackPaint = 0xC5AC5AC5u;

/* Paints [__StackLimit, sp): everything below the running frame. */
static inline __attribute__((always_inline)) void paint_stack(void) {
  uint32_t *sp;
  __asm volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = &__StackLimit; p < sp;) *p++ = kStackPaint;
}

uint32_t mcu_pal_stack_used(void) {
  const uint32_t *p = &__StackLimit;
  while (p < &__StackTop && *p == kStackPaint) ++p;
  return (uint32_t)((uintptr_t)&__StackTop - (uintptr_t)p);
}

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
  paint_stack();
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
