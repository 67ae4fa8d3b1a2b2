/* Startup for the Raspberry Pi Pico 2 (RP2350, Arm Cortex-M33 core 0, Secure).
 *
 * The bootrom looks in the first 4 KiB of flash for a block loop holding an
 * IMAGE_DEF item (RP2350 datasheet 5.9.5.1, "minimum Arm IMAGE_DEF"); with no
 * VECTOR_TABLE/ENTRY_POINT item it enters through the vector table at the
 * start of the image: SP = word 0, PC = word 1. rp2350.ld puts .vectors at
 * 0x10000000 and .embedded_block right after it.
 *
 * Reset_Handler: stack limit off, VTOR, FPU (CP10/CP11) on, .data copy, .bss
 * zero, main(). The runtime has no static constructors, so .init_array is not
 * walked (the linker script fails the link if anything has one). Faults log a
 * line (mcu_pal_log) and stop the core; a debugger shows where. */
#include <stdint.h>

extern uint32_t __StackTop, __StackLimit;
extern uint32_t __data_load__, __data_start__, __data_end__;
extern uint32_t __bss_start__, __bss_end__;

int main(void);
void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
/* Defined by the board PAL (pal_rp2350.cpp). */
void SysTick_Handler(void);
void mcu_pal_exit(int code) __attribute__((noreturn));
void mcu_pal_log(const char *msg);
uint32_t mcu_pal_stack_used(void);

/* Stack painting, as boards/common/startup_cmsdk.c: Reset_Handler fills the free stack
 * with this word; mcu_pal_stack_used() (HELLO reports it) finds the lowest word no longer
 * painted: the stack's high-water mark since boot. */
static const uint32_t kStackPaint = 0xC5AC5AC5u;

uint32_t mcu_pal_stack_used(void) {
  const uint32_t *p = &__StackLimit;
  while (p < &__StackTop && *p == kStackPaint) ++p;
  return (uint32_t)((uintptr_t)&__StackTop - (uintptr_t)p);
}

typedef void (*vec_t)(void);

/* 16 system exceptions + 52 RP2350 IRQs. 68 words: VTOR needs 512-byte
 * alignment, which the start of flash has. Unused IRQs stay 0: none is enabled. */
__attribute__((section(".vectors"), used)) const vec_t __vectors[16 + 52] = {
    [0] = (vec_t)(uintptr_t)&__StackTop,
    [1] = Reset_Handler,
    [2] = Default_Handler,   /* NMI */
    [3] = HardFault_Handler,
    [4] = Default_Handler,   /* MemManage */
    [5] = Default_Handler,   /* BusFault */
    [6] = Default_Handler,   /* UsageFault */
    [7] = Default_Handler,   /* SecureFault */
    [11] = Default_Handler,  /* SVC */
    [12] = Default_Handler,  /* DebugMonitor */
    [14] = Default_Handler,  /* PendSV */
    [15] = SysTick_Handler,
};

/* The RP2350 bootrom's IMAGE_DEF ("picobin" block), checked against pico-sdk
 * boot/picobin.h: Arm, Secure, executable, chip RP2350; the block links to itself. */
__attribute__((section(".embedded_block"), used, aligned(4))) const uint32_t __picobin_block[5] = {
    0xffffded3u, /* PICOBIN_BLOCK_MARKER_START */
    0x10210142u, /* item 0x42 IMAGE_TYPE, 1 word, flags 0x1021 = EXE | SECURITY_S | CPU_ARM | CHIP_RP2350 */
    0x000001ffu, /* item 0xff LAST, the items before it total 1 word */
    0x00000000u, /* relative link to the next block: 0 = this block loops to itself */
    0xab123579u, /* PICOBIN_BLOCK_MARKER_END */
};

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)

__attribute__((noreturn, used)) void Reset_Handler(void) {
  /* The bootrom set SP and MSPLIM; a debugger entry may not have: no stack limit. */
  __asm volatile("msr msplim, %0" ::"r"(0u));
  SCB_VTOR = (uint32_t)(uintptr_t)__vectors;
#if defined(__ARM_FP)
  SCB_CPACR |= (0xFu << 20); /* CP10 + CP11 full access, before any FP instruction */
  __asm volatile("dsb\n isb" ::: "memory");
#endif
  uint32_t *src = &__data_load__;
  for (uint32_t *dst = &__data_start__; dst < &__data_end__;) *dst++ = *src++;
  for (uint32_t *dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0;
  uint32_t *sp;
  __asm volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = &__StackLimit; p < sp;) *p++ = kStackPaint; /* everything below this frame */
  mcu_pal_exit(main());
}

static __attribute__((noreturn)) void stop(void) {
  __asm volatile("cpsid i" ::: "memory");
  for (;;) {
    __asm volatile("wfi");
  }
}

void Default_Handler(void) {
  mcu_pal_log("fault: unhandled exception");
  stop();
}

void HardFault_Handler(void) {
  mcu_pal_log("fault: HardFault");
  stop();
}

/* newlib's exit()/abort() end here; libnosys's version would spin forever. */
__attribute__((noreturn)) void _exit(int code) { mcu_pal_exit(code); }
