/* mcu-gen's QEMU TCG plugin: counts the executed Thumb-2 / MVE instructions of an Armv8-M core
 * by class, for the cycle estimate of mcu_gen/device/cycles.py (docs/cycles.md).
 *
 *   qemu-system-arm ... -plugin insn_classes.so,out=FILE,mark=0xADDR,min=N
 *
 * Each guest instruction is decoded once, when QEMU translates it, into one class (enum Class);
 * an inline counter per class (no call) is added every time it executes. Branches also count
 * how often they were taken: every translation block (TB) gets a small exec callback that
 * compares its start with the fall-through address of the TB that ran before it.
 *
 * Windows: every execution of the instruction at `mark` (mcu-gen passes the entry of
 * mcu_pal_ticks(), which the firmware calls right before and right after an inference) closes
 * a segment; segments of at least `min` instructions are written to `out`, one line each:
 *   seg <instructions> <count[0]> ... <count[K-1]> <regs[0]> ... <taken[0]> ... <stalls[0]> ...
 * The first line names the classes ("classes name0 name1 ..."); the last, written when QEMU
 * exits, holds the totals of the whole run ("total ..."). The path from the entry of
 * mcu_pal_ticks() to its SysTick read is the same in every call, so a segment holds exactly the
 * instructions QEMU's -icount measured for the same span.
 *
 * The decoding follows the Thumb-2 encoding tables of the Armv8-M Architecture Reference
 * Manual (Arm DDI 0553), chapter C2 "Instruction Set Encoding", and the MVE / low-overhead-branch
 * encodings of Armv8.1-M in the same manual. Only what the cycle table tells apart is decoded;
 * anything else is "unknown" (counted, charged one cycle, and reported).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

MCU_PLUGIN_EXPORT int qemu_plugin_version = 1;

/* The classes, in the order of mcu_gen/device/cycles.py CLASSES (the plugin prints the names). */
enum Class {
  C_ALU,            /* data processing, moves, shifts, extends, saturation, SIMD add/sub, ADR */
  C_IT,             /* IT */
  C_HINT,           /* NOP, YIELD, WFE, WFI, SEV */
  C_MUL,            /* MUL, MLA, MLS */
  C_MAC_DSP,        /* SMLAD, SMUAD, SMLSD, SMLAxy, SMULxy, SMLAWx, SMMLA, USADA8, ... */
  C_MUL_LONG,       /* SMULL, UMULL, SMLAL, UMLAL, SMLALD, SMLSLD, UMAAL */
  C_DIV,            /* SDIV, UDIV */
  C_LOAD,           /* load single (LDR/LDRB/LDRH/LDRSB/LDRSH/LDREX), not pipelined */
  C_LOAD_PIPELINED, /* a load single followed by an independent load/store single */
  C_STORE,          /* store single */
  C_LDRD,           /* LDRD */
  C_STRD,           /* STRD */
  C_LDM,            /* LDM, POP without PC (regs: registers moved) */
  C_STM,            /* STM, PUSH (regs: registers moved) */
  C_POP_PC,         /* LDM / POP including PC (regs: registers moved, PC included) */
  C_LOAD_PC,        /* LDR PC, [...] */
  C_BRANCH,         /* B (unconditional) */
  C_BRANCH_COND,    /* B<cond>, CBZ, CBNZ */
  C_CALL,           /* BL, BLX Rm */
  C_BRANCH_REG,     /* BX Rm, MOV PC, Rm, ADD PC, Rm */
  C_TABLE_BRANCH,   /* TBB, TBH */
  C_LOB,            /* DLS, WLS, LE, LETP, LCTP, VCTP (Armv8.1-M low-overhead branches) */
  C_FP_ALU,         /* VADD, VSUB, VMUL, VNMUL, VABS, VNEG, VCVT, VCMP, VMOV (FP), VSEL, VMAXNM */
  C_FP_MAC,         /* VMLA, VMLS, VNMLA, VNMLS, VFMA, VFMS, VFNMA, VFNMS */
  C_FP_DIV,         /* VDIV, VSQRT */
  C_FP_LS,          /* VLDR, VSTR */
  C_FP_LSM,         /* VLDM, VSTM, VPUSH, VPOP (regs: words moved) */
  C_FP_MOV,         /* VMOV between core and FP / vector registers, VMRS, VMSR, VDUP */
  C_MVE_LS,         /* MVE vector load / store */
  C_MVE_LS_OVERLAP, /* ... right after an MVE data-processing instruction (beats overlap) */
  C_MVE_DP,         /* MVE vector data processing (integer and float, MACs, reductions, VPST) */
  C_MVE_DP_OVERLAP, /* ... right after an MVE load / store (beats overlap) */
  C_SYSTEM,         /* MSR, MRS, DSB, DMB, ISB, CPS, SVC, BKPT, UDF, ... */
  C_UNKNOWN,        /* not decoded: charged one cycle, reported */
  N_CLASSES
};

static const char* const kClassNames[N_CLASSES] = {
    "alu",          "it",          "hint",      "mul",          "mac_dsp",     "mul_long",        "div",
    "load",         "load_pipelined", "store",  "ldrd",         "strd",        "ldm",             "stm",
    "pop_pc",       "load_pc",     "branch",    "branch_cond",  "call",        "branch_reg",      "table_branch",
    "lob",          "fp_alu",      "fp_mac",    "fp_div",       "fp_ls",       "fp_lsm",          "fp_mov",
    "mve_ls",       "mve_ls_overlap", "mve_dp", "mve_dp_overlap", "system",    "unknown"};

/* counters[0..K): executions per class, [K..2K): registers moved, [2K..3K): branches taken,
   [3K..4K): address stalls (a load / store whose address needs the result of the data-processing
   instruction just before it). */
enum { N_COUNTERS = 4 * N_CLASSES };
static uint64_t counters[N_COUNTERS];
static uint64_t last_snapshot[N_COUNTERS];
static FILE* out;
static uint64_t mark = UINT64_MAX;
static uint64_t min_insns = 1;

/* What decode() finds out about one instruction. */
typedef struct {
  int cls;
  int regs;       /* registers (words) a multiple load / store moves */
  int ls_single;  /* a load / store single: takes part in load pipelining */
  int rt, rn, rm; /* its registers (-1: none), for the address dependency of pipelining */
  int addr_mask;  /* a load / store's address registers (base, offset) as a bit mask */
  int write_mask; /* the core registers a data-processing instruction writes, as a bit mask */
} Decoded;

static int popcount16(uint32_t v) { return __builtin_popcount(v & 0xFFFFu); }

static int is_branch_class(int c) {
  return c == C_POP_PC || c == C_LOAD_PC || (c >= C_BRANCH && c <= C_LOB);
}

static Decoded make(int cls) {
  Decoded d = {cls, 0, 0, -1, -1, -1, 0, 0};
  return d;
}

static int bit(int reg) { return reg >= 0 && reg < 15 ? 1 << reg : 0; }

/* A data-processing instruction of class `cls` writing `rd` (15 or -1: none, e.g. CMP, TST). */
static Decoded writes(int cls, int rd) {
  Decoded d = make(cls);
  d.write_mask = bit(rd);
  return d;
}

/* A load / store (multiple, dual, FP) of class `cls` whose address comes from `rn`. */
static Decoded addressed(int cls, int rn) {
  Decoded d = make(cls);
  d.addr_mask = bit(rn);
  return d;
}

static Decoded ls_single(int load, int rt, int rn, int rm) {
  Decoded d = make(load ? C_LOAD : C_STORE);
  d.ls_single = 1;
  d.rt = rt;
  d.rn = rn;
  d.rm = rm;
  d.addr_mask = bit(rn) | bit(rm);
  return d;
}

/* 16-bit Thumb (Armv8-M ARM C2.2 "16-bit T32 instruction encoding"). */
static Decoded decode16(uint32_t hw) {
  const uint32_t top6 = hw >> 10;
  const int r0 = (int)(hw & 7), r8 = (int)((hw >> 8) & 7);
  if ((hw >> 14) == 0) {                                         /* shift, add, sub, mov, cmp (imm) */
    const uint32_t op = hw >> 11;
    if (op == 5) return make(C_ALU);                             /* CMP imm */
    return writes(C_ALU, op >= 4 ? r8 : r0);
  }
  if (top6 == 0x10) {                                            /* data processing; MULS */
    const uint32_t op = (hw >> 6) & 0xF;
    if (op == 8 || op == 0xA || op == 0xB) return make(C_ALU);   /* TST, CMP, CMN */
    return writes((hw & 0xFFC0) == 0x4340 ? C_MUL : C_ALU, r0);
  }
  if (top6 == 0x11) {                                            /* special data, branch and exchange */
    if ((hw & 0xFF00) == 0x4700) return make((hw & 0x0080) ? C_CALL : C_BRANCH_REG);
    const int rd = (int)(((hw >> 4) & 8) | (hw & 7));
    if ((hw & 0xFF00) == 0x4500) return make(C_ALU);             /* CMP (high registers) */
    if (rd == 15) return make(C_BRANCH_REG);                     /* ADD / MOV to PC */
    return writes(C_ALU, rd);
  }
  if ((hw & 0xF800) == 0x4800) return ls_single(1, r8, 15, -1); /* LDR literal */
  if ((hw & 0xF000) == 0x5000) {                                 /* load/store, register offset */
    const uint32_t op = (hw >> 9) & 7;
    return ls_single(op >= 3, r0, (int)((hw >> 3) & 7), (int)((hw >> 6) & 7));
  }
  if ((hw & 0xE000) == 0x6000 || (hw & 0xF000) == 0x8000)        /* STR/LDR(B) imm, STRH/LDRH imm */
    return ls_single((hw >> 11) & 1, r0, (int)((hw >> 3) & 7), -1);
  if ((hw & 0xF000) == 0x9000) return ls_single((hw >> 11) & 1, r8, 13, -1); /* SP-relative */
  if ((hw & 0xF000) == 0xA000) return writes(C_ALU, r8);         /* ADR, ADD Rd, SP, #imm */
  if ((hw & 0xF000) == 0xB000) {                                 /* miscellaneous */
    if ((hw & 0xF500) == 0xB100) return make(C_BRANCH_COND);     /* CBZ, CBNZ */
    if ((hw & 0xFE00) == 0xB400) {                               /* PUSH */
      Decoded d = addressed(C_STM, 13);
      d.regs = popcount16(hw & 0xFF) + (int)((hw >> 8) & 1);
      return d;
    }
    if ((hw & 0xFE00) == 0xBC00) {                               /* POP */
      Decoded d = addressed((hw & 0x0100) ? C_POP_PC : C_LDM, 13);
      d.regs = popcount16(hw & 0xFF) + (int)((hw >> 8) & 1);
      return d;
    }
    if ((hw & 0xFF00) == 0xBF00) return make((hw & 0xF) ? C_IT : C_HINT);
    if ((hw & 0xFF00) == 0xBE00 || (hw & 0xFFE0) == 0xB660) return make(C_SYSTEM); /* BKPT, CPS */
    if ((hw & 0xFF00) == 0xB000) return writes(C_ALU, 13);       /* ADD/SUB SP, SP, #imm */
    return writes(C_ALU, r0);                                    /* extend, REV */
  }
  if ((hw & 0xF000) == 0xC000) {                                 /* STM, LDM */
    Decoded d = addressed((hw & 0x0800) ? C_LDM : C_STM, r8);
    d.regs = popcount16(hw & 0xFF);
    return d;
  }
  if ((hw & 0xF000) == 0xD000) {
    const uint32_t cond = (hw >> 8) & 0xF;
    return make(cond >= 0xE ? C_SYSTEM : C_BRANCH_COND);         /* UDF, SVC; B<cond> */
  }
  if ((hw & 0xF800) == 0xE000) return make(C_BRANCH);
  return make(C_UNKNOWN);
}

/* Floating point, MVE and the rest of the coprocessor space (hw1 = 111T 11xx). */
static Decoded decode_coproc(uint32_t hw1, uint32_t hw2) {
  const uint32_t cp = (hw2 >> 8) & 0xF;
  if ((hw1 & 0xEF00) == 0xEF00) return make(C_MVE_DP);           /* MVE "Neon-like" data processing */
  const int fp = (cp == 0xA || cp == 0xB);
  const int mve = (cp == 0xE || cp == 0xF);
  if ((hw1 & 0xEE00) == 0xEC00) {                                /* load/store, 64-bit transfers */
    if (mve) return make(C_MVE_LS);                              /* VLDR/VSTR (vector), VLD2/VLD4, VST2/VST4 */
    if (!fp) return make(C_UNKNOWN);
    if ((hw1 & 0xFFE0) == 0xEC40) return make(C_FP_MOV);         /* VMOV two core registers */
    const uint32_t p = (hw1 >> 8) & 1, w = (hw1 >> 5) & 1;
    const int rn = (int)(hw1 & 0xF);
    if (p == 1 && w == 0) return addressed(C_FP_LS, rn);         /* VLDR, VSTR */
    Decoded d = addressed(C_FP_LSM, rn);                         /* VLDM, VSTM, VPUSH, VPOP */
    d.regs = (int)(hw2 & 0xFF);
    return d;
  }
  if ((hw1 & 0xEF00) == 0xEE00) {                                /* data processing, register transfers */
    if (mve) return make(C_MVE_DP);                              /* VMLADAV, VADDV, VCMP, VPT, VPST, ... */
    if (!fp) return make(C_UNKNOWN);
    if (hw2 & 0x10) return make(C_FP_MOV);                       /* VMOV core<->FP, VMRS, VMSR, VDUP */
    if (hw1 & 0x1000) return make(C_FP_ALU);                     /* VSEL, VMAXNM, VRINT (T=1) */
    const uint32_t o = (((hw1 >> 7) & 1) << 2) | ((hw1 >> 4) & 3);
    switch (o) {
      case 0: case 1: case 5: case 6: return make(C_FP_MAC);     /* VMLA/VMLS, VNMLA/VNMLS, VFNMA/S, VFMA/S */
      case 2: case 3: return make(C_FP_ALU);                     /* VMUL/VNMUL, VADD/VSUB */
      case 4: return make(C_FP_DIV);                             /* VDIV */
      default:                                                   /* VMOV imm/reg, VABS, VNEG, VSQRT, VCMP, VCVT */
        return make(((hw1 & 0xF) == 1 && ((hw2 >> 6) & 3) == 3) ? C_FP_DIV : C_FP_ALU);
    }
  }
  return make(C_UNKNOWN);
}

/* 32-bit Thumb-2 (Armv8-M ARM C2.3 "32-bit T32 instruction encoding"). */
static Decoded decode32(uint32_t hw1, uint32_t hw2) {
  if ((hw1 & 0xFE00) == 0xE800) {                                /* load/store multiple, dual, exclusive, TB */
    if (hw1 & 0x0040) {
      if ((hw1 & 0xFFF0) == 0xE8D0 && (hw2 & 0x00E0) == 0x0000) return make(C_TABLE_BRANCH);
      if ((hw1 & 0x0120) == 0) /* exclusive (and TT) */
        return ls_single((hw1 >> 4) & 1, (int)(hw2 >> 12), (int)(hw1 & 0xF), -1);
      return addressed((hw1 & 0x10) ? C_LDRD : C_STRD, (int)(hw1 & 0xF));
    }
    Decoded d = addressed((hw1 & 0x10) ? ((hw2 & 0x8000) ? C_POP_PC : C_LDM) : C_STM, (int)(hw1 & 0xF));
    d.regs = popcount16(hw2);
    return d;
  }
  const int rd = (int)((hw2 >> 8) & 0xF);                        /* Rd of the data-processing forms */
  if ((hw1 & 0xFE00) == 0xEA00) return writes(C_ALU, rd);        /* data processing, shifted register */
  if ((hw1 & 0xEC00) == 0xEC00) return decode_coproc(hw1, hw2);
  if ((hw1 & 0xF800) == 0xF000) {
    if ((hw2 & 0x8000) == 0) return writes(C_ALU, rd);           /* data processing, immediate */
    switch (hw2 & 0xD000) {
      case 0x9000: return make(C_BRANCH);                        /* B.W */
      case 0xD000: return make(C_CALL);                          /* BL */
      case 0xC000: return make(C_LOB);                           /* (BLX imm is UNDEFINED in M profile) */
      default:
        if (((hw1 >> 7) & 7) != 7) return make(C_BRANCH_COND);   /* B<cond>.W */
        if ((hw1 & 0xFFF0) == 0xF3A0 && (hw2 & 0xFF00) == 0x8000)
          return make((hw2 & 0xFF) ? C_SYSTEM : C_HINT);         /* NOP.W/WFI.W/... */
        return make(C_SYSTEM);                                   /* MSR, MRS, barriers, CLREX */
    }
  }
  if ((hw1 & 0xFE00) == 0xF800) {                                /* load/store single */
    const int load = (hw1 >> 4) & 1;
    const int rt = (int)(hw2 >> 12), rn = (int)(hw1 & 0xF);
    const int rm = ((hw1 & 0x0080) == 0 && rn != 15 && (hw2 & 0x0FC0) == 0) ? (int)(hw2 & 0xF) : -1;
    if (load && rt == 15 && ((hw1 >> 5) & 3) == 2) return make(C_LOAD_PC); /* LDR PC (POP {pc} as LDR) */
    return ls_single(load, rt, rn, rm);                          /* (PLD/PLI count as loads) */
  }
  if ((hw1 & 0xFF00) == 0xFA00) return writes(C_ALU, rd);        /* data processing, register; parallel add/sub */
  if ((hw1 & 0xFF80) == 0xFB00) {                                /* multiply, multiply accumulate */
    const uint32_t op1 = (hw1 >> 4) & 7, op2 = (hw2 >> 4) & 3;
    return writes(op1 == 0 && op2 <= 1 ? C_MUL : C_MAC_DSP, rd);
  }
  if ((hw1 & 0xFF80) == 0xFB80) {                                /* long multiply, divide */
    const uint32_t op1 = (hw1 >> 4) & 7;
    if (op1 == 1 || op1 == 3) return writes(C_DIV, rd);
    Decoded d = writes(C_MUL_LONG, rd);                          /* RdHi; RdLo in bits 15:12 */
    d.write_mask |= bit((int)(hw2 >> 12));
    return d;
  }
  return make(C_UNKNOWN);
}

/* The length of a Thumb instruction, from its first halfword: 32-bit when bits 15:11 are 0b11101,
   0b11110 or 0b11111. (QEMU's insn_size can be 4 for a 16-bit instruction: near the end of a page
   the translator reads the next halfword, and the plugin sees it as part of this instruction.) */
static size_t thumb_length(uint32_t hw1) { return (hw1 >> 11) >= 0x1D ? 4 : 2; }

static Decoded decode(const struct qemu_plugin_insn* insn, size_t* length) {
  const uint8_t* b = (const uint8_t*)qemu_plugin_insn_data(insn);
  const size_t n = qemu_plugin_insn_size(insn);
  *length = n;
  if (n < 2) return make(C_UNKNOWN);
  const uint32_t hw1 = (uint32_t)b[0] | ((uint32_t)b[1] << 8);
  *length = thumb_length(hw1);
  if (*length == 2) return decode16(hw1);
  if (n >= 4) return decode32(hw1, (uint32_t)b[2] | ((uint32_t)b[3] << 8));
  return make(C_UNKNOWN);
}

/* --- what runs before a TB's first instruction: the TB before it (QEMU's translation blocks end at a branch,
   but also at a guest page boundary or after a number of instructions, where the code runs straight on) */
typedef struct {
  uint64_t start;
  uint64_t fallthrough; /* address after its last instruction */
  int branch_class;     /* class of its last instruction if that is a branch, else -1 */
  Decoded first;        /* its first instruction, cls as counted */
  Decoded last;         /* its last instruction, cls as counted */
} TbInfo;

static const TbInfo* previous_tb;

static void move_count(int from, int to) {
  counters[from] -= 1;
  counters[to] += 1;
}

/* The neighbour rules of on_tb_trans for a TB's first instruction and the last one of the TB that fell through
   into it, which translation could not see together: the same counts as if both were in one block, so the
   estimate does not depend on where QEMU happens to cut straight-line code. */
static void join_blocks(const Decoded* a, const Decoded* b) {
  if (a->cls == C_LOAD && b->ls_single && b->rn != a->rt && b->rm != a->rt) move_count(C_LOAD, C_LOAD_PIPELINED);
  int cls = b->cls;
  if (cls == C_MVE_LS && (a->cls == C_MVE_DP || a->cls == C_MVE_DP_OVERLAP)) {
    move_count(C_MVE_LS, C_MVE_LS_OVERLAP);
    cls = C_MVE_LS_OVERLAP;
  } else if (cls == C_MVE_DP && (a->cls == C_MVE_LS || a->cls == C_MVE_LS_OVERLAP)) {
    move_count(C_MVE_DP, C_MVE_DP_OVERLAP);
    cls = C_MVE_DP_OVERLAP;
  }
  if (b->addr_mask & a->write_mask) counters[3 * N_CLASSES + cls] += 1;
}

static void on_tb_exec(unsigned int vcpu, void* udata) {
  (void)vcpu;
  const TbInfo* tb = (const TbInfo*)udata;
  const TbInfo* prev = previous_tb;
  if (prev != NULL && tb->start != prev->fallthrough && prev->branch_class >= 0)
    counters[2 * N_CLASSES + prev->branch_class] += 1;
  else if (prev != NULL && tb->start == prev->fallthrough)
    join_blocks(&prev->last, &tb->first);
  previous_tb = tb;
}

static void write_line(const char* tag, const uint64_t* values) {
  uint64_t total = 0;
  for (int c = 0; c < N_CLASSES; ++c) total += values[c];
  fprintf(out, "%s %" PRIu64, tag, total);
  for (int i = 0; i < N_COUNTERS; ++i) fprintf(out, " %" PRIu64, values[i]);
  fputc('\n', out);
  fflush(out);
}

static void on_mark(unsigned int vcpu, void* udata) {
  (void)vcpu;
  (void)udata;
  uint64_t delta[N_COUNTERS];
  uint64_t total = 0;
  for (int i = 0; i < N_COUNTERS; ++i) delta[i] = counters[i] - last_snapshot[i];
  for (int c = 0; c < N_CLASSES; ++c) total += delta[c];
  memcpy(last_snapshot, counters, sizeof counters);
  if (total >= min_insns) write_line("seg", delta);
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  TbInfo* info = (TbInfo*)calloc(1, sizeof *info); /* lives as long as QEMU may run this TB */
  if (info == NULL || n == 0) return;
  info->start = qemu_plugin_tb_vaddr(tb);
  info->branch_class = -1;
  Decoded next = make(C_UNKNOWN), prev = make(C_UNKNOWN);
  struct qemu_plugin_insn* cur = qemu_plugin_tb_get_insn(tb, 0);
  size_t length = 0, next_length = 0;
  Decoded d = decode(cur, &length);
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn* following = i + 1 < n ? qemu_plugin_tb_get_insn(tb, i + 1) : NULL;
    next = following ? decode(following, &next_length) : make(C_UNKNOWN);
    int cls = d.cls;
    /* Neighbouring load/store singles pipeline their address and data phases unless the second
       one's address needs the first one's loaded value (Cortex-M4 TRM 3.3.1, Table 3-1 note). */
    if (cls == C_LOAD && next.ls_single && next.rn != d.rt && next.rm != d.rt) cls = C_LOAD_PIPELINED;
    /* MVE beats: a vector load/store and a vector data-processing instruction overlap. */
    if (cls == C_MVE_LS && (prev.cls == C_MVE_DP || prev.cls == C_MVE_DP_OVERLAP)) cls = C_MVE_LS_OVERLAP;
    if (cls == C_MVE_DP && (prev.cls == C_MVE_LS || prev.cls == C_MVE_LS_OVERLAP)) cls = C_MVE_DP_OVERLAP;
    const uint64_t vaddr = qemu_plugin_insn_vaddr(cur);
    if ((vaddr & ~(uint64_t)1) == mark)
      qemu_plugin_register_vcpu_insn_exec_cb(cur, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
    qemu_plugin_register_vcpu_insn_exec_inline(cur, QEMU_PLUGIN_INLINE_ADD_U64, &counters[cls], 1);
    if (d.regs > 0)
      qemu_plugin_register_vcpu_insn_exec_inline(cur, QEMU_PLUGIN_INLINE_ADD_U64, &counters[N_CLASSES + cls],
                                                 (uint64_t)d.regs);
    /* A load / store whose address needs the result of the data-processing instruction just before
       it waits a cycle: "There is no forwarding path for this scenario" (Cortex-M3 TRM DDI 0337,
       "Load/store timings"; the Cortex-M4 TRM's 3.3.2 says the same). Within a block only: after a
       taken branch the refill hides it. */
    if (d.addr_mask & prev.write_mask)
      qemu_plugin_register_vcpu_insn_exec_inline(cur, QEMU_PLUGIN_INLINE_ADD_U64, &counters[3 * N_CLASSES + cls], 1);
    if (i + 1 == n) {
      info->fallthrough = vaddr + length;
      info->branch_class = is_branch_class(cls) ? cls : -1;
    }
    prev = d;
    prev.cls = cls;
    if (i == 0) info->first = prev;
    if (i + 1 == n) info->last = prev;
    d = next;
    length = next_length;
    cur = following;
  }
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, info);
}

static void on_qemu_exit(qemu_plugin_id_t id, void* udata) {
  (void)id;
  (void)udata;
  if (out == NULL) return;
  write_line("total", counters);
  fclose(out);
  out = NULL;
}

MCU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  const char* path = NULL;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "out=", 4) == 0) path = argv[i] + 4;
    else if (strncmp(argv[i], "mark=", 5) == 0) mark = strtoull(argv[i] + 5, NULL, 0) & ~(uint64_t)1;
    else if (strncmp(argv[i], "min=", 4) == 0) min_insns = strtoull(argv[i] + 4, NULL, 0);
    else {
      fprintf(stderr, "insn_classes: unknown argument %s (expected out=, mark=, min=)\n", argv[i]);
      return 1;
    }
  }
  if (info == NULL || strcmp(info->target_name, "arm") != 0) {
    fprintf(stderr, "insn_classes: decodes Arm Thumb-2 only, not %s\n", info ? info->target_name : "?");
    return 1;
  }
  if (path == NULL) {
    fprintf(stderr, "insn_classes: needs out=FILE\n");
    return 1;
  }
  out = fopen(path, "w");
  if (out == NULL) {
    fprintf(stderr, "insn_classes: cannot write %s\n", path);
    return 1;
  }
  fprintf(out, "classes");
  for (int c = 0; c < N_CLASSES; ++c) fprintf(out, " %s", kClassNames[c]);
  fputc('\n', out);
  fflush(out);
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
  qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
  return 0;
}
