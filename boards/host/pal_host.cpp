// PAL for native (host) builds: the test runner talks to the process over two
// file descriptors, stdin/stdout by default, or the ones named by the
// environment variables MCU_PAL_IN_FD / MCU_PAL_OUT_FD. Ticks are
// CLOCK_MONOTONIC nanoseconds; log goes to stderr; exit is _exit().
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcu/pal.h"

namespace {

int g_in_fd = 0;
int g_out_fd = 1;

int fd_from_env(const char* name, int fallback) {
  const char* v = getenv(name);
  return (v != nullptr && *v != '\0') ? atoi(v) : fallback;
}

}  // namespace

extern "C" {

void mcu_pal_init(void) {
  g_in_fd = fd_from_env("MCU_PAL_IN_FD", 0);
  g_out_fd = fd_from_env("MCU_PAL_OUT_FD", 1);
}

int mcu_pal_read_byte(uint32_t timeout_ms) {
  pollfd p = {g_in_fd, POLLIN, 0};
  const int ready = poll(&p, 1, static_cast<int>(timeout_ms));
  if (ready <= 0) return -1;
  uint8_t byte = 0;
  const ssize_t n = read(g_in_fd, &byte, 1);
  if (n == 1) return byte;
  if (n == 0) _exit(0);  // the runner closed the link: nothing more will come
  return -1;
}

void mcu_pal_write(const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = write(g_out_fd, data, n);
    if (w <= 0) _exit(1);
    data += w;
    n -= static_cast<size_t>(w);
  }
}

uint64_t mcu_pal_ticks(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void mcu_pal_log(const char* msg) { fprintf(stderr, "%s\n", msg); }

void mcu_pal_exit(int code) {
  fflush(stderr);
  _exit(code);
}

void mcu_pal_abort(const char* why) {
  fprintf(stderr, "abort: %s\n", why);
  mcu_pal_exit(134);
}

}  // extern "C"
