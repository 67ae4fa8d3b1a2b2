/* The RP2350 boot ROM's IMAGE_DEF for a RISC-V image (a "picobin" block in the
 * first 4 KiB of flash; RP2350 datasheet 5.9 "Metadata block details"; item
 * encodings checked against pico-sdk src/common/boot_picobin_headers/include/
 * boot/picobin.h):
 *   IMAGE_TYPE (0x42, 1 word): EXE | CPU_RISCV | CHIP_RP2350 = flags 0x1101
 *   ENTRY_POINT (0x44, 3 words): initial pc = _start, initial sp = __StackTop.
 *     Without it the boot ROM enters a RISC-V image at its start (pico-sdk's
 *     crt0_riscv.S: "On RISC-V the default entry point from bootrom is the
 *     start of the binary"), which is also where rp2350_riscv.ld puts _start.
 *   LAST (0xff) with the size of the items before it (4 words), a relative link
 *   of 0 (this block loops to itself), the end marker.
 * rp2350_riscv.ld places .embedded_block right after _start's section and
 * asserts that it ends within the first 4 KiB. */
#include <stdint.h>

extern uint32_t __StackTop;
void _start(void);

__attribute__((section(".embedded_block"), used, aligned(4))) const uint32_t __picobin_block[8] = {
    0xffffded3u,                   /* PICOBIN_BLOCK_MARKER_START */
    0x11010142u,                   /* item 0x42 IMAGE_TYPE, 1 word, flags 0x1101 */
    0x00000344u,                   /* item 0x44 ENTRY_POINT, 3 words: pc, sp */
    (uint32_t)(uintptr_t)_start,
    (uint32_t)(uintptr_t)&__StackTop,
    0x000004ffu,                   /* item 0xff LAST, the items before it total 4 words */
    0x00000000u,                   /* relative link to the next block: 0 = this block loops to itself */
    0xab123579u,                   /* PICOBIN_BLOCK_MARKER_END */
};
