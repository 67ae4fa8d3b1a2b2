// Platform abstraction layer: the few C functions a board implements. Each has
// a weak default in runtime_core/src/pal_default.cpp so a board overrides only
// what it has.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void mcu_pal_init(void);
// Blocking read of one byte; returns -1 if nothing arrived within timeout_ms
// (boards without a timer may block; the host side always has a timeout).
int mcu_pal_read_byte(uint32_t timeout_ms);
void mcu_pal_write(const uint8_t* data, size_t n);
// Free-running counter and its unit: on QEMU boards under -icount this counts
// instructions (times a board constant), on hardware it counts cycles.
uint64_t mcu_pal_ticks(void);
// Log a line on the board's log channel (semihosting on QEMU, never the
// protocol UART).
void mcu_pal_log(const char* msg);
// Stop: QEMU exits with `code`; hardware resets or halts.
void mcu_pal_exit(int code) __attribute__((noreturn));
void mcu_pal_abort(const char* why) __attribute__((noreturn));
// Bytes of stack used since boot (the high-water mark of a stack the startup
// painted), or 0 if the board does not measure it. HELLO reports it.
uint32_t mcu_pal_stack_used(void);

#ifdef __cplusplus
}
#endif
