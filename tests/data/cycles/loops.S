/* Hand-written loops whose instruction classes are known exactly (tests/test_cycles.py,
 * docs/cycles.md "Known error"). Each loop runs between two calls of mcu_pal_ticks, the
 * symbol the cycle plugin's segments are delimited by; then the program exits through
 * semihosting. Built for mps2-an505 (Cortex-M33) and, with -DWITH_MVE, mps3-an547 (Cortex-M55):
 * both load it at 0x10000000 (AN505 flash, AN547 ITCM). */
  .syntax unified
  .thumb
  .text
vectors:                       /* the reset vector table, first in .text (at 0x10000000) */
  .word STACK_TOP
  .word reset + 1

  .thumb_func
  .global mcu_pal_ticks
mcu_pal_ticks:
  bx lr

  .thumb_func
  .global reset
reset:
  ldr r0, =0xE000ED88          /* CPACR: full access to CP10/CP11 (FPU, MVE) */
  ldr r1, [r0]
  orr r1, r1, #(0xF << 20)
  str r1, [r0]
  dsb
  isb
  ldr r5, =DATA
  bl mcu_pal_ticks

  /* loop 1: a load whose next instruction is no load/store, a dual 16-bit MAC, a counter */
  mov r0, r5
  movs r1, #100
1:
  ldr r3, [r0], #4
  smlad r2, r3, r3, r2
  subs r1, #1
  bne 1b
  bl mcu_pal_ticks

  /* loop 2: two independent loads back to back (the first pipelines), two adds */
  mov r0, r5
  movs r1, #100
2:
  ldr r3, [r0], #4
  ldr r4, [r0], #4
  add r2, r3
  add r2, r4
  subs r1, #1
  bne 2b
  bl mcu_pal_ticks

  /* loop 3: single-precision load and fused multiply-add */
  mov r0, r5
  movs r1, #100
3:
  vldr s0, [r0]
  vfma.f32 s1, s0, s0
  subs r1, #1
  bne 3b
  bl mcu_pal_ticks

  /* loop 4: a load whose address the add just before computes (no forwarding path: a stall),
     then a store addressed by a register the load did not write (no stall) */
  mov r0, r5
  movs r1, #100
4:
  add r3, r0, #4
  ldr r2, [r3]
  str r2, [r0]
  subs r1, #1
  bne 4b
  bl mcu_pal_ticks

  /* Loops 6-8: the same neighbours as loops 2, 4 and 5 with a 1 KB page boundary between them, where QEMU
     ends a translation block in straight-line code: the plugin must count them as in one block. Each loop
     head is the last 4 bytes of a page (a branch over the padding gets there). */
  /* loop 6: a load, the page boundary, an independent load (the first pipelines, as in loop 2) */
  mov r0, r5
  movs r1, #100
  b 6f
  .ltorg                       /* the literals above, within reach of their loads */
  .balign 1024
  .skip 1020
6:
  ldr.w r3, [r0], #4
  ldr r4, [r0], #4
  add r2, r3
  add r2, r4
  subs r1, #1
  bne 6b
  bl mcu_pal_ticks

  /* loop 7: the add computing a load's address, the page boundary, the load (a stall, as in loop 4) */
  mov r0, r5
  movs r1, #100
  b 7f
  .balign 1024
  .skip 1020
7:
  add.w r3, r0, #4
  ldr r2, [r3]
  str r2, [r0]
  subs r1, #1
  bne 7b
  bl mcu_pal_ticks

#ifdef WITH_MVE
  /* loop 8: an MVE load, the page boundary, the MAC across it (beats overlap, as in loop 5) */
  mov r0, r5
  movs r1, #100
  b 8f
  .balign 1024
  .skip 1020
8:
  vldrb.s8 q0, [r0]
  vmladava.s8 r2, q0, q0
  subs r1, #1
  bne 8b
  bl mcu_pal_ticks

  /* loop 5: MVE: a 16-byte vector load, then a multiply-accumulate across it (beats overlap) */
  mov r0, r5
  movs r1, #100
5:
  vldrb.s8 q0, [r0]
  vmladava.s8 r2, q0, q0
  subs r1, #1
  bne 5b
  bl mcu_pal_ticks
#endif

  movs r0, #0x18               /* SYS_EXIT (ADP_Stopped_ApplicationExit) */
  ldr r1, =0x20026
  bkpt 0xab
9:
  b 9b
  .ltorg

  .bss
  .align 4
DATA:
  .space 1024
