// Device side of the verify protocol; docs/protocol.md is the specification.
// No heap. The server's state is three statics, constant-initialized (no
// constructor runs) so the size report can name them: g_server (the
// executors and a few counters), g_request and g_reply (one frame each).
#include "mcu/protocol.h"

#include <string.h>

#include "mcu/crc32.h"
#include "mcu/error.h"
#include "mcu/pal.h"
#include "mcu/program.h"

namespace mcu {

namespace {

constexpr uint32_t kIdlePollMs = 1000;   // waiting for the next frame (forever)
constexpr uint32_t kByteTimeoutMs = 500; // between bytes inside one frame
constexpr size_t kHeaderSize = 4;        // type, seq, len u16
constexpr size_t kMaxFirmwareVersion = 64;
// RUN_PROFILED reply: status, u32 instructions, u16 first, u16 count, u64 total ticks, then u32 ticks per instruction.
constexpr size_t kProfileHeader = 1 + 4 + 2 + 2 + 8;
constexpr int32_t kProfileWindow = static_cast<int32_t>((kMaxPayload - kProfileHeader) / 4);
constexpr int32_t kTensorValue = 5;  // EValue union tag of a Tensor (docs/schema/program.fbs)

uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

#if MCU_DEBUG_REQUESTS
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
#endif

uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

// Appends little-endian values to a reply payload. Fixed-size fields are stored in place (every
// reply's fixed part fits in the smallest frame, kMaxPayload >= 128: HELLO, the longest, is 100 bytes);
// put() bounds what a reply copies in.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the protocol stores fields in memory order");
class Writer {
 public:
  explicit Writer(uint8_t* buf) : buf_(buf) {}
  void u8(uint8_t v) { buf_[size_++] = v; }
  void u16(uint16_t v) { store(v); }
  void u32(uint32_t v) { store(v); }
  void u64(uint64_t v) { store(v); }
  void i32(int32_t v) { store(v); }
  void f32(float v) { store(v); }
  void put(const void* data, size_t n) {
    if (n > kMaxPayload - size_) n = kMaxPayload - size_;  // never overflows; callers size replies
    memcpy(buf_ + size_, data, n);
    size_ += n;
  }
  size_t size() const { return size_; }

 private:
  template <typename T>
  void store(T v) {
    memcpy(buf_ + size_, &v, sizeof v);
    size_ += sizeof v;
  }
  uint8_t* buf_;
  size_t size_ = 0;
};

// Runs exactly 2n instructions (subs + bne on Arm, addi + bnez on RISC-V); used to calibrate ticks.
__attribute__((noinline)) void spin(uint32_t n) {
  if (n == 0) return;
#if defined(__arm__)
  __asm volatile("1: subs %0, %0, #1\n bne 1b" : "+r"(n) : : "cc");
#elif defined(__riscv)
  __asm volatile("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(n));
#else
  for (volatile uint32_t i = n; i != 0;) i = i - 1;
#endif
}

// What a request needs before its handler runs, checked once by Server::handle() in this order: its
// payload length (else BadLength, detail = the length), then a loaded program (else NotLoaded, -1).
enum RequestNeeds : uint8_t {
  kAnyLength = 0x40,    // no length check (else: the low 4 bits are the exact length)
  kAtLeast = 0x10,      // the low 4 bits are the least length
  kLoadedProgram = 0x20,
};
constexpr uint8_t kNeeds[] = {
    kAnyLength,                   // Hello
    2 | kLoadedProgram,           // TensorInfo: u8 kind, u8 index
    5 | kAtLeast | kLoadedProgram,  // WriteInput: u8 index, u32 offset, bytes
    kAnyLength | kLoadedProgram,  // Run
    7 | kLoadedProgram,           // ReadOutput: u8 index, u32 offset, u16 length
    kUploads ? 4 : kAnyLength,    // LoadBegin: u32 size (without uploads: BadRequest, whatever the length)
    kUploads ? 4 | kAtLeast : kAnyLength,  // LoadChunk: u32 offset, bytes
    kUploads ? 4 : kAnyLength,    // LoadEnd: u32 crc
    kAnyLength,                   // UseBuiltin
    4,                            // Exit: i32 code
    kAnyLength,                   // Echo
    4,                            // Spin: u32 n
    kDebugRequests ? 2 | kLoadedProgram : kAnyLength,   // RunProfiled: u16 first (without: BadRequest)
    kDebugRequests ? 4 | kLoadedProgram : kAnyLength,   // RunRange: u16 begin, u16 end
    kDebugRequests ? 10 | kLoadedProgram : kAnyLength,  // ReadValue: u32 index, u32 offset, u16 length
    MCU_PROGRAM_HAS_STATE ? 0 | kLoadedProgram : kAnyLength,  // Reset (firmware without state: BadRequest)
    MCU_PROGRAM_METHODS ? kAnyLength | kLoadedProgram : kAnyLength,  // SelectMethod: name (one method: BadRequest)
};
static_assert(sizeof kNeeds == static_cast<size_t>(Msg::SelectMethod), "one entry per request type");

struct Frame {
  uint8_t type = 0;
  uint8_t seq = 0;
  uint16_t len = 0;
  uint8_t payload[kMaxPayload] = {};
};

Frame g_request;                  // the request being handled
uint8_t g_reply[kMaxPayload] = {};  // the reply's payload being built

enum class ReadResult { Ok, Dropped, BadLength, BadCrc };

class Server {
 public:
  void start(const ServerConfig& config) {
    cfg_ = &config;
    builtin_status_ = Error::NotLoaded;
  }

  // Loads a program into `e` with the firmware's arenas (one per RAM region).
  Error load_into(Executor& e, const uint8_t* program, size_t size) const {
#if MCU_ARENA_REGIONS > 1
    ArenaRegion arenas[MCU_ARENA_REGIONS];
    arenas[0] = ArenaRegion{cfg_->arena, cfg_->arena_size};
    for (int k = 1; k < MCU_ARENA_REGIONS; ++k) arenas[k] = cfg_->extra_arenas[k - 1];
    return e.load(program, size, *cfg_->kernels, arenas);
#else
    return e.load(program, size, *cfg_->kernels, cfg_->arena, cfg_->arena_size);
#endif
  }

  void load_builtin() {
    if (cfg_->builtin_program == nullptr || cfg_->builtin_size == 0) {
      builtin_status_ = Error::NotLoaded;
      return;
    }
    // With uploads the candidate is verified on the stack (the active program stays if it is
    // rejected); without, nothing else can be active and it is verified in place.
    Executor candidate;
    Executor& e = kUploads ? candidate : active_;
    builtin_status_ = load_into(e, cfg_->builtin_program, cfg_->builtin_size);
    builtin_detail_ = e.error_detail();
    if (builtin_status_ == Error::Ok) {
      if (kUploads) active_ = candidate;
      source_ = ProgramSource::Builtin;
      program_id_ = cfg_->program_id;
    } else {
      mcu_pal_log("mcu: builtin program rejected");
    }
  }

  [[noreturn]] void run() {
    for (;;) {
      ReadResult r = read_frame();
      if (r == ReadResult::Dropped) continue;
      if (r == ReadResult::BadLength) {
        send_error(Error::BadFrame, static_cast<int32_t>(g_request.len));
      } else if (r == ReadResult::BadCrc) {
        send_error(Error::BadCrc, 0);
      } else {
        handle();
      }
    }
  }

 private:
  // --- framing -------------------------------------------------------------
  ReadResult read_frame() {
    int prev = -1;
    for (;;) {  // hunt for the sync pair, discarding everything else
      int b = mcu_pal_read_byte(kIdlePollMs);
      if (b < 0) continue;
      if (prev == kSync0 && b == kSync1) break;
      prev = b;
    }
    uint8_t header[kHeaderSize];
    if (!read_bytes(header, kHeaderSize)) return ReadResult::Dropped;
    g_request.type = header[0];
    g_request.seq = header[1];
    g_request.len = get_u16(header + 2);
    if (g_request.len > kMaxPayload) return ReadResult::BadLength;
    uint8_t crc_bytes[4];
    if (!read_bytes(g_request.payload, g_request.len) || !read_bytes(crc_bytes, 4)) return ReadResult::Dropped;
    uint32_t crc = crc32(header, kHeaderSize);
    crc = crc32(g_request.payload, g_request.len, crc);
    return crc == get_u32(crc_bytes) ? ReadResult::Ok : ReadResult::BadCrc;
  }

  static bool read_bytes(uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      int b = mcu_pal_read_byte(kByteTimeoutMs);
      if (b < 0) return false;  // partial frame: drop it, the host retries
      dst[i] = static_cast<uint8_t>(b);
    }
    return true;
  }

  void send(const uint8_t* payload, size_t n) {
    uint8_t header[2 + kHeaderSize] = {kSync0, kSync1, static_cast<uint8_t>(g_request.type | kReplyBit), g_request.seq,
                                       static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8)};
    uint32_t crc = crc32(header + 2, kHeaderSize);
    crc = crc32(payload, n, crc);
    const uint8_t trailer[4] = {static_cast<uint8_t>(crc), static_cast<uint8_t>(crc >> 8),
                                static_cast<uint8_t>(crc >> 16), static_cast<uint8_t>(crc >> 24)};
    mcu_pal_write(header, sizeof header);
    mcu_pal_write(payload, n);
    mcu_pal_write(trailer, sizeof trailer);
  }

  void send_error(Error e, int32_t detail) {
    Writer w(g_reply);
    w.u8(static_cast<uint8_t>(e));
    w.i32(detail);
    send(g_reply, w.size());
  }

  // Starts an Ok reply: the caller appends the body and calls send().
  Writer ok_reply() {
    Writer w(g_reply);
    w.u8(static_cast<uint8_t>(Error::Ok));
    return w;
  }

  // --- requests ------------------------------------------------------------
  void handle() {
    const uint8_t* p = g_request.payload;
    const size_t n = g_request.len;
    const uint32_t index = g_request.type - 1u;
    const uint8_t needs = index < sizeof kNeeds ? kNeeds[index] : static_cast<uint8_t>(kAnyLength);
    if ((needs & kAnyLength) == 0) {
      const size_t length = needs & 0x0Fu;
      if ((needs & kAtLeast) ? n < length : n != length) return send_error(Error::BadLength, static_cast<int32_t>(n));
    }
    if ((needs & kLoadedProgram) && !active_.loaded()) return send_error(Error::NotLoaded, -1);
    switch (static_cast<Msg>(g_request.type)) {
      case Msg::Hello: return hello(p, n);
      case Msg::TensorInfo: return tensor_info(p);
      case Msg::WriteInput: return write_input(p, n);
      case Msg::Run: return run_program();
      case Msg::ReadOutput: return read_output(p);
      case Msg::LoadBegin: return kUploads ? load_begin(p) : send_error(Error::BadRequest, 0);
      case Msg::LoadChunk: return kUploads ? load_chunk(p, n) : send_error(Error::BadRequest, 0);
      case Msg::LoadEnd: return kUploads ? load_end(p) : send_error(Error::BadRequest, 0);
      case Msg::UseBuiltin: return use_builtin();
      case Msg::Exit: return exit_request(p);
      case Msg::Echo: return echo(p, n);
      case Msg::Spin: return spin_request(p);
#if MCU_DEBUG_REQUESTS
      case Msg::RunProfiled: return run_profiled(p);
      case Msg::RunRange: return run_range(p);
      case Msg::ReadValue: return read_value(p);
#else
      case Msg::RunProfiled:  // a deployable image without profiling and debugging: BadRequest
      case Msg::RunRange:
      case Msg::ReadValue:
        break;
#endif
#if MCU_PROGRAM_HAS_STATE
      case Msg::Reset: return reset_request();
#else
      case Msg::Reset: break;  // no state support in this firmware: BadRequest
#endif
#if MCU_PROGRAM_METHODS
      case Msg::SelectMethod: return select_method(p, n);
#else
      case Msg::SelectMethod: break;  // firmware for one method: BadRequest
#endif
    }
    send_error(Error::BadRequest, g_request.type);
  }

  void hello(const uint8_t* p, size_t n) {
    if (n >= 2 && get_u16(p) != kProtocolVersion) return send_error(Error::ProtocolVersion, kProtocolVersion);
    bool loaded = active_.loaded();
    Writer w = ok_reply();
    w.u16(kProtocolVersion);
    w.u16(static_cast<uint16_t>(kMaxPayload));
    w.u64(program_id_);
    w.u8(static_cast<uint8_t>(source_));
    w.u8(static_cast<uint8_t>(builtin_status_));
    w.u8(static_cast<uint8_t>(loaded ? active_.num_inputs() : 0));
    w.u8(static_cast<uint8_t>(loaded ? active_.num_outputs() : 0));
    w.u32(static_cast<uint32_t>(cfg_->arena_size));
    w.u32(static_cast<uint32_t>(loaded ? active_.arena_used() : 0));
    w.u32(static_cast<uint32_t>(cfg_->upload_buffer != nullptr ? cfg_->upload_size : 0));
    const char* version = cfg_->firmware_version != nullptr ? cfg_->firmware_version : "";
    size_t len = 0;
    while (len < kMaxFirmwareVersion && version[len] != '\0') ++len;
    w.u8(static_cast<uint8_t>(len));
    w.put(version, len);
    w.u32(mcu_pal_stack_used());
#if MCU_PROGRAM_METHODS
    w.u8(static_cast<uint8_t>(active_.num_methods()));
    w.u8(static_cast<uint8_t>(active_.active_method()));
#endif
    send(g_reply, w.size());
  }

  // The build's quantization parameters of an input/output; only the builtin program has them.
  const IoQuantParams* quant_params(bool is_output, int32_t index) const {
    if (source_ != ProgramSource::Builtin || cfg_->builtin_quant == nullptr) return nullptr;
    for (size_t i = 0; i < cfg_->builtin_quant_count; ++i) {
      const IoQuantParams& q = cfg_->builtin_quant[i];
      if ((q.is_output != 0) == is_output && q.index == index) return &q;
    }
    return nullptr;
  }

  void tensor_info(const uint8_t* p) {
    const bool is_output = p[0] != 0;
    const int32_t index = p[1];
    if (index >= (is_output ? active_.num_outputs() : active_.num_inputs())) return send_error(Error::BadIndex, index);
    const TensorRef t = is_output ? active_.output(index) : active_.input(index);
    const IoQuantParams* q = quant_params(is_output, index);
    Writer w = ok_reply();
    w.u8(static_cast<uint8_t>(t.dtype));
    w.u8(static_cast<uint8_t>(t.dim));
    w.u8(q != nullptr ? 1 : 0);  // flags: bit 0 = scale and zero point present
    w.u8(0);
    w.u32(static_cast<uint32_t>(t.nbytes()));
    w.f32(q != nullptr ? q->scale : 0.0f);
    w.i32(q != nullptr ? q->zero_point : 0);
    for (int32_t d = 0; d < t.dim; ++d) w.i32(t.sizes[d]);
    for (int32_t d = 0; d < t.dim; ++d) w.u8(t.dim_order != nullptr ? t.dim_order[d] : static_cast<uint8_t>(d));
    send(g_reply, w.size());
  }

  // Checks index, offset and length of an input/output access of the loaded program; returns the
  // tensor's data or null.
  uint8_t* tensor_window(bool is_output, uint32_t index, uint32_t offset, size_t length) {
    const int32_t count = is_output ? active_.num_outputs() : active_.num_inputs();
    if (index >= static_cast<uint32_t>(count)) {
      send_error(Error::BadIndex, static_cast<int32_t>(index));
      return nullptr;
    }
    const TensorRef t = is_output ? active_.output(static_cast<int32_t>(index)) : active_.input(static_cast<int32_t>(index));
    if (offset > t.nbytes() || length > t.nbytes() - offset) {
      send_error(Error::BadLength, static_cast<int32_t>(t.nbytes()));
      return nullptr;
    }
    return static_cast<uint8_t*>(t.data) + offset;
  }

  void write_input(const uint8_t* p, size_t n) {
    uint8_t* dst = tensor_window(false, p[0], get_u32(p + 1), n - 5);
    if (dst == nullptr) return;
    memcpy(dst, p + 5, n - 5);
    Writer w = ok_reply();
    send(g_reply, w.size());
  }

  void run_program() {
    const uint64_t start = mcu_pal_ticks();
    const Error e = active_.execute();
    const uint64_t ticks = mcu_pal_ticks() - start;
    if (e != Error::Ok) return send_error(e, active_.error_detail());
    Writer w = ok_reply();
    w.u64(ticks);
    send(g_reply, w.size());
  }

#if MCU_PROGRAM_METHODS
  // SELECT_METHOD(name): the method RUN (and TENSOR_INFO, WRITE_INPUT, ...) addresses from now on.
  // Replies u8 index, u8 number of methods, u64 ticks of the switch; MethodMissing (detail = the
  // number of methods) for a name the program does not have.
  void select_method(const uint8_t* p, size_t n) {
    const int32_t k = active_.find_method(reinterpret_cast<const char*>(p), n);
    if (k < 0) return send_error(Error::MethodMissing, static_cast<int32_t>(active_.num_methods()));
    const uint64_t start = mcu_pal_ticks();
    const Error e = active_.select_method(static_cast<uint32_t>(k));
    const uint64_t ticks = mcu_pal_ticks() - start;
    if (e != Error::Ok) return send_error(e, active_.error_detail());
    Writer w = ok_reply();
    w.u8(static_cast<uint8_t>(k));
    w.u8(static_cast<uint8_t>(active_.num_methods()));
    w.u64(ticks);
    send(g_reply, w.size());
  }
#endif

#if MCU_PROGRAM_HAS_STATE
  // RESET: the active program's state tensors back to their initial values.
  void reset_request() {
    active_.reset_state();
    Writer w = ok_reply();
    send(g_reply, w.size());
  }
#endif

  void read_output(const uint8_t* p) {
    const uint16_t length = get_u16(p + 5);
    if (length > kMaxPayload - 1) return send_error(Error::BadLength, static_cast<int32_t>(kMaxPayload - 1));
    const uint8_t* src = tensor_window(true, p[0], get_u32(p + 1), length);
    if (src == nullptr) return;
    Writer w = ok_reply();
    w.put(src, length);
    send(g_reply, w.size());
  }

  void load_begin(const uint8_t* p) {
    if (cfg_->upload_buffer == nullptr || cfg_->upload_size == 0) return send_error(Error::BadRequest, 0);
    const uint32_t size = get_u32(p);
    if (size > cfg_->upload_size) return send_error(Error::BadLength, static_cast<int32_t>(cfg_->upload_size));
    if (source_ == ProgramSource::Uploaded) {
      // The upload overwrites the running program: fall back to the builtin one first.
      active_.unload();
      source_ = ProgramSource::None;
      program_id_ = 0;
      load_builtin();
    }
    upload_expected_ = size;
    upload_received_ = 0;
    Writer w = ok_reply();
    send(g_reply, w.size());
  }

  void load_chunk(const uint8_t* p, size_t n) {
    const uint32_t offset = get_u32(p);
    const size_t length = n - 4;
    // Chunks arrive in order; a repeated chunk (a retry) is accepted again.
    if (offset > upload_received_ || offset > upload_expected_ || length > upload_expected_ - offset) {
      return send_error(Error::BadLength, static_cast<int32_t>(upload_received_));
    }
    memcpy(cfg_->upload_buffer + offset, p + 4, length);
    if (offset + length > upload_received_) upload_received_ = offset + length;
    Writer w = ok_reply();
    send(g_reply, w.size());
  }

  void load_end(const uint8_t* p) {
    if (upload_expected_ == 0 || upload_received_ != upload_expected_) {
      return send_error(Error::BadLength, static_cast<int32_t>(upload_received_));
    }
    const uint32_t crc = get_u32(p);
    if (crc32(cfg_->upload_buffer, upload_expected_) != crc) return send_error(Error::BadCrc, 1);
    Executor candidate;  // becomes active only if it loads
    const Error e = load_into(candidate, cfg_->upload_buffer, upload_expected_);
    if (e != Error::Ok) return send_error(e, candidate.error_detail());  // the active program stays
    // The buffer now holds the running, verified program: no chunk may write
    // it again before the next LOAD_PROGRAM_BEGIN (which switches back first).
    upload_expected_ = upload_received_ = 0;
    active_ = candidate;
    source_ = ProgramSource::Uploaded;
    program_id_ = crc;
    Writer w = ok_reply();
    send(g_reply, w.size());
  }

  void use_builtin() {
    // Only an upload replaces the builtin program (or a rejected one is verified again).
    if (kUploads && source_ != ProgramSource::Builtin) load_builtin();
    if (source_ != ProgramSource::Builtin) return send_error(builtin_status_, builtin_detail_);
    Writer w = ok_reply();
    send(g_reply, w.size());
  }

  void exit_request(const uint8_t* p) {
    Writer w = ok_reply();
    send(g_reply, w.size());
    mcu_pal_exit(static_cast<int32_t>(get_u32(p)));
  }

  void echo(const uint8_t* p, size_t n) {
    if (n > kMaxPayload - 1) return send_error(Error::BadLength, static_cast<int32_t>(kMaxPayload - 1));
    Writer w = ok_reply();
    w.put(p, n);
    send(g_reply, w.size());
  }

  void spin_request(const uint8_t* p) {
    const uint32_t count = get_u32(p);
    const uint64_t start = mcu_pal_ticks();
    spin(count);
    const uint64_t ticks = mcu_pal_ticks() - start;
    Writer w = ok_reply();
    w.u64(ticks);
    send(g_reply, w.size());
  }

#if MCU_DEBUG_REQUESTS
  // --- profiling and debugging (never on the RUN path) -----------------------
  // Runs the whole program once with a tick read after every instruction; the
  // reply carries the ticks of instructions [first, first + count), written
  // straight into the reply buffer (no other RAM). The host asks again with
  // the next `first` for programs longer than one window.
  void run_profiled(const uint8_t* p) {
    const int32_t count = active_.num_instructions();
    const int32_t first = get_u16(p);
    int32_t window = count - first;
    if (window < 0) window = 0;
    if (window > kProfileWindow) window = kProfileWindow;
    uint8_t* slots = g_reply + kProfileHeader;
    const uint64_t start = mcu_pal_ticks();
    uint64_t before = start;
    for (int32_t i = 0; i < count; ++i) {
      const Error e = active_.execute_one(i);
      const uint64_t after = mcu_pal_ticks();
      if (e != Error::Ok) return send_error(e, active_.error_detail());
      if (i >= first && i - first < window) {
        const uint64_t span = after - before;
        put_u32(slots + 4 * (i - first), span > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<uint32_t>(span));
      }
      before = after;
    }
    Writer w = ok_reply();
    w.u32(static_cast<uint32_t>(count));
    w.u16(static_cast<uint16_t>(first));
    w.u16(static_cast<uint16_t>(window));
    w.u64(before - start);
    send(g_reply, kProfileHeader + 4 * static_cast<size_t>(window));
  }

  void run_range(const uint8_t* p) {
    const int32_t begin = get_u16(p);
    const int32_t end = get_u16(p + 2);
    if (begin > end || end > active_.num_instructions()) return send_error(Error::BadIndex, end);
    const uint64_t start = mcu_pal_ticks();
    for (int32_t i = begin; i < end; ++i) {
      const Error e = active_.execute_one(i);
      if (e != Error::Ok) return send_error(e, active_.error_detail());
    }
    const uint64_t ticks = mcu_pal_ticks() - start;
    Writer w = ok_reply();
    w.u64(ticks);
    send(g_reply, w.size());
  }

  void read_value(const uint8_t* p) {
    const uint32_t index = get_u32(p);
    const uint32_t offset = get_u32(p + 4);
    const uint16_t length = get_u16(p + 8);
    if (index >= static_cast<uint32_t>(active_.num_values()) ||
        active_.value_type(static_cast<int32_t>(index)) != kTensorValue) {
      return send_error(Error::BadIndex, static_cast<int32_t>(index));
    }
    if (length > kMaxPayload - 1) return send_error(Error::BadLength, static_cast<int32_t>(kMaxPayload - 1));
    const TensorRef t = active_.tensor_at(static_cast<int32_t>(index));
    if (t.data == nullptr) return send_error(Error::BadIndex, static_cast<int32_t>(index));  // external: no data here
    if (offset > t.nbytes() || length > t.nbytes() - offset) {
      return send_error(Error::BadLength, static_cast<int32_t>(t.nbytes()));
    }
    Writer w = ok_reply();
    w.put(static_cast<const uint8_t*>(t.data) + offset, length);
    send(g_reply, w.size());
  }
#endif  // MCU_DEBUG_REQUESTS

  const ServerConfig* cfg_ = nullptr;
  Executor active_;     // the program RUN executes
  ProgramSource source_ = ProgramSource::None;
  Error builtin_status_ = Error::Ok;  // set by start(); zero here keeps g_server in .bss
  int32_t builtin_detail_ = 0;
  uint64_t program_id_ = 0;
  size_t upload_expected_ = 0;
  size_t upload_received_ = 0;
};

Server g_server;

}  // namespace

// Cold: nothing here is on the inference path (execute() is timed on its own),
// so GCC optimises the server for size.
[[gnu::cold]] void serve(const ServerConfig& config) {
  g_server.start(config);
  g_server.load_builtin();
  g_server.run();
}

}  // namespace mcu
