// libFuzzer harness for the verify protocol server (runtime_core/src/protocol.cpp):
// every input is the byte stream a serial peer sends. The real frame parser and
// request handlers run on it, with a builtin program, an arena and an upload
// buffer of exactly their sizes on the heap (ASan sees one byte too far), so
// uploads, verification of uploaded programs, RUN and every other request are
// reached. The end of the input ends the session.
//
// The mutator repairs the CRC of every complete frame after libFuzzer's
// mutation (seven times in eight), so that mutated requests reach the handlers
// instead of stopping at the CRC check.
//
//   MCU_FUZZ_BUILTIN=mul_add.pte fuzz_protocol CORPUS_DIR [libFuzzer flags]
//   MCU_FUZZ_REPLIES=out.bin ... fuzz_protocol SESSION_FILE   replay, writing the replies
//
// The server's sources are included, not linked: each input starts from a
// fresh server (its statics are in this translation unit). Test code only.
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32.cpp"
#include "protocol.cpp"

namespace mcu {
extern const KernelTable kKernelTable;
}

namespace {
const uint8_t* g_in = nullptr;
size_t g_in_size = 0;
size_t g_pos = 0;
jmp_buf g_stop;
FILE* g_replies = nullptr;

uint8_t* g_builtin = nullptr;
size_t g_builtin_size = 0;
size_t g_arena_size = 64u << 10;
size_t g_upload_size = 96u << 10;
uint8_t* g_arena = nullptr;
uint8_t* g_upload = nullptr;

uint8_t* exact_block(size_t n) {
  void* p = nullptr;
  return posix_memalign(&p, 16, n > 0 ? n : 1) == 0 ? static_cast<uint8_t*>(p) : nullptr;
}

size_t env_size(const char* name, size_t fallback) {
  const char* v = getenv(name);
  return v != nullptr ? strtoul(v, nullptr, 10) : fallback;
}
}  // namespace

extern "C" {
int mcu_pal_read_byte(uint32_t) {
  if (g_pos < g_in_size) return g_in[g_pos++];
  longjmp(g_stop, 1);  // the peer has nothing more to say: end of this session
}
void mcu_pal_write(const uint8_t* data, size_t n) {
  if (g_replies != nullptr) fwrite(data, 1, n, g_replies);
}
uint64_t mcu_pal_ticks(void) { return 0; }
void mcu_pal_log(const char*) {}
void mcu_pal_exit(int) { longjmp(g_stop, 1); }
void mcu_pal_abort(const char*) { abort(); }
void mcu_pal_init(void) {}
uint32_t mcu_pal_stack_used(void) { return 0; }

size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

int LLVMFuzzerInitialize(int*, char***) {
  g_arena_size = env_size("MCU_FUZZ_ARENA", g_arena_size);
  g_upload_size = env_size("MCU_FUZZ_UPLOAD", g_upload_size);
  if (const char* path = getenv("MCU_FUZZ_BUILTIN")) {
    FILE* f = fopen(path, "rb");
    if (f == nullptr) {
      fprintf(stderr, "cannot read MCU_FUZZ_BUILTIN=%s\n", path);
      abort();
    }
    fseek(f, 0, SEEK_END);
    g_builtin_size = static_cast<size_t>(ftell(f));
    fseek(f, 0, SEEK_SET);
    g_builtin = exact_block(g_builtin_size);
    if (fread(g_builtin, 1, g_builtin_size, f) != g_builtin_size) abort();
    fclose(f);
  }
  if (const char* path = getenv("MCU_FUZZ_REPLIES")) g_replies = fopen(path, "wb");
  g_arena = exact_block(g_arena_size);
  g_upload = exact_block(g_upload_size);
  return 0;
}

// libFuzzer's mutation, then a valid CRC on every complete frame (mostly).
size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (seed % 8 == 0) return size;
  for (size_t p = 0; p + 10 <= size; ++p) {
    if (data[p] != mcu::kSync0 || data[p + 1] != mcu::kSync1) continue;
    const size_t len = data[p + 4] | (data[p + 5] << 8);
    if (len > mcu::kMaxPayload || p + 6 + len + 4 > size) continue;
    const uint32_t crc = mcu::crc32(data + p + 2, 4 + len);
    for (int i = 0; i < 4; ++i) data[p + 6 + len + i] = static_cast<uint8_t>(crc >> (8 * i));
    p += 6 + len + 3;
  }
  return size;
}

// SPIN busy-waits 2n instructions by design (calibration): n is clamped in a
// copy of the input (CRC repaired) so that one input cannot stall the fuzzer.
void clamp_spins(uint8_t* d, size_t size) {
  for (size_t p = 0; p + 14 <= size; ++p) {
    if (d[p] != mcu::kSync0 || d[p + 1] != mcu::kSync1 || d[p + 2] != static_cast<uint8_t>(mcu::Msg::Spin) ||
        d[p + 4] != 4 || d[p + 5] != 0 || mcu::crc32(d + p + 2, 8) != mcu::get_u32(d + p + 10)) {
      continue;
    }
    d[p + 8] = d[p + 9] = 0;  // n < 65536
    const uint32_t crc = mcu::crc32(d + p + 2, 8);
    for (int i = 0; i < 4; ++i) d[p + 10 + i] = static_cast<uint8_t>(crc >> (8 * i));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  uint8_t* data = static_cast<uint8_t*>(malloc(size > 0 ? size : 1));
  memcpy(data, input, size);
  clamp_spins(data, size);
  g_in = data;
  g_in_size = size;
  g_pos = 0;
  if (g_replies != nullptr) {  // the replies of this session only
    rewind(g_replies);
    if (ftruncate(fileno(g_replies), 0) != 0) abort();
  }
  mcu::g_server = mcu::Server();  // a fresh device for every session
  memset(g_arena, 0, g_arena_size);
  memset(g_upload, 0, g_upload_size);
  static mcu::ServerConfig config;
  config = mcu::ServerConfig{g_builtin, g_builtin_size, &mcu::kKernelTable, g_arena, g_arena_size, g_upload,
                             g_upload_size, 0x1122334455667788ull, "fuzz", nullptr, 0};
  if (setjmp(g_stop) == 0) mcu::serve(config);
  if (g_replies != nullptr) fflush(g_replies);
  free(data);
  return 0;
}
}  // extern "C"
