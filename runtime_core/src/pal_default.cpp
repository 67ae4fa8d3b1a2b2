// Weak defaults for the PAL (runtime_core/include/mcu/pal.h). A board defines
// the functions it has; whatever it leaves out falls back to these, which do
// nothing useful but keep every build linkable.
#include "mcu/pal.h"

extern "C" {

__attribute__((weak)) void mcu_pal_init(void) {}

__attribute__((weak)) int mcu_pal_read_byte(uint32_t timeout_ms) {
  (void)timeout_ms;
  return -1;
}

__attribute__((weak)) void mcu_pal_write(const uint8_t* data, size_t n) {
  (void)data;
  (void)n;
}

__attribute__((weak)) uint64_t mcu_pal_ticks(void) { return 0; }

__attribute__((weak)) void mcu_pal_log(const char* msg) { (void)msg; }

__attribute__((weak)) void mcu_pal_exit(int code) {
  (void)code;
  for (;;) {
  }
}

__attribute__((weak)) void mcu_pal_abort(const char* why) {
  mcu_pal_log(why);
  mcu_pal_exit(134);
}

__attribute__((weak)) uint32_t mcu_pal_stack_used(void) { return 0; }

}  // extern "C"
