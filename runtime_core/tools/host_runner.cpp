// Native test driver: loads a .pte, fills the inputs from files, executes once
// and writes the outputs to files. Used by the host kernel tests (built with
// AddressSanitizer and UBSan), not part of any firmware.
//
//   host_runner PROGRAM.pte ARENA_BYTES OUT_DIR [INPUT.bin ...]
//
// Built with MCU_ARENA_REGIONS=N > 1, ARENA_BYTES is N sizes separated by commas: one arena
// per memory id (1..N), each in its own exactly sized block.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcu/program.h"

namespace mcu {
extern const KernelTable kKernelTable;
}

// Blocks of exactly the requested size (16-byte aligned, as the runtime wants):
// no slack after the program or the arena hides a read or write past its end
// from AddressSanitizer.
static uint8_t* exact_block(size_t n) {
  void* p = nullptr;
  return posix_memalign(&p, 16, n > 0 ? n : 1) == 0 ? static_cast<uint8_t*>(p) : nullptr;
}

static uint8_t* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return nullptr;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* buf = exact_block(static_cast<size_t>(n));
  *size = buf != nullptr ? fread(buf, 1, static_cast<size_t>(n), f) : 0;
  fclose(f);
  return buf;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s PROGRAM.pte ARENA_BYTES OUT_DIR [INPUT.bin ...]\n", argv[0]);
    return 64;
  }
  size_t size = 0;
  uint8_t* program = read_file(argv[1], &size);
  if (program == nullptr) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 66;
  }
  static mcu::Executor exec;
#if MCU_ARENA_REGIONS > 1
  mcu::ArenaRegion arenas[MCU_ARENA_REGIONS] = {};
  const char* sizes = argv[2];
  for (int k = 0; k < MCU_ARENA_REGIONS; ++k) {
    char* end = nullptr;
    const size_t n = strtoul(sizes, &end, 10);
    arenas[k] = mcu::ArenaRegion{exact_block(n), n};
    memset(arenas[k].data, 0xA5, n);
    sizes = *end == ',' ? end + 1 : end;
  }
  mcu::Error e = exec.load(program, size, mcu::kKernelTable, arenas);
#else
  size_t arena_size = strtoul(argv[2], nullptr, 10);
  uint8_t* arena = exact_block(arena_size);
  memset(arena, 0xA5, arena_size);
  mcu::Error e = exec.load(program, size, mcu::kKernelTable, arena, arena_size);
#endif
  if (e != mcu::Error::Ok) {
    printf("load-error %d %s %d\n", static_cast<int>(e), mcu::error_name(e), exec.error_detail());
    return 2;
  }
  int n_inputs = argc - 4;
  if (n_inputs != exec.num_inputs()) {
    printf("input-count %d %d\n", n_inputs, exec.num_inputs());
    return 3;
  }
  for (int i = 0; i < n_inputs; ++i) {
    size_t n = 0;
    uint8_t* data = read_file(argv[4 + i], &n);
    mcu::TensorRef t = exec.input(i);
    if (data == nullptr || n != t.nbytes()) {
      printf("input-size %d %zu %zu\n", i, n, t.nbytes());
      return 3;
    }
    memcpy(t.data, data, n);
    free(data);
  }
  e = exec.execute();
  if (e != mcu::Error::Ok) {
    printf("run-error %d %s %d\n", static_cast<int>(e), mcu::error_name(e), exec.error_detail());
    return 4;
  }
  for (int i = 0; i < exec.num_outputs(); ++i) {
    mcu::TensorRef t = exec.output(i);
    char path[4096];
    snprintf(path, sizeof path, "%s/out_%d.bin", argv[3], i);
    FILE* f = fopen(path, "wb");
    if (f == nullptr) return 73;
    fwrite(t.data, 1, t.nbytes(), f);
    fclose(f);
  }
  printf("ok\n");
#if MCU_ARENA_REGIONS > 1
  for (int k = 0; k < MCU_ARENA_REGIONS; ++k) free(arenas[k].data);
#else
  free(arena);
#endif
  free(program);
  return 0;
}
