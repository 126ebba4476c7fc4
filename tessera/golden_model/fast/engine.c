/* Tessera golden model, fast engine: a compiled cycle loop over the model's numpy state.
 *
 * docs/architecture.md is the contract (timing rules of contract v2: §4 six stages, every
 * data-memory effect in M = t + 4, state changes visible from t + 5; §7 the stop at v + D);
 * tessera/golden_model/array.py (the vectorized engine) is the second, independent
 * implementation it is checked against. Every constant of the spec comes from "spec.h",
 * generated from the tessera package by tessera/golden_model/fast/build.py.
 *
 * The file has three layers, kept apart on purpose:
 *   1. ISA semantics   (decode, isa_exec): word + context registers -> effects (register/pc
 *                       writes, a checked load/store, an outcome code). No timing in here.
 *   2. Timing machinery (schedule, tile_events, do_release, exchange_step, the M-stage ring,
 *                       catch_up, issue): issue slots, the visibility delay of state changes,
 *                       division turns, data-memory effects in their M cycle, barriers (§5),
 *                       exchange (§6), faults and the stop (§7), counters (§8), the matrix
 *                       engine's cycles (§12).
 *   3. The run loop     (tsr_run). Tiles interact only at an ARRAY release, in exchange
 *                       phases, through the stop decision and at the end of the run. Outside
 *                       exchange phases, pending releases and decided stops the loop runs
 *                       **windows**: each tile alone runs ahead up to W cycles (its registers,
 *                       code and data stay in cache), then the window is resolved: the last
 *                       ecall of the array decides the stop (every tile then runs on until
 *                       t_s = v + D - 1, v = that ecall + 5), the last arrival at the ARRAY
 *                       barrier arms the release (arrived tiles are idle, so the clock is
 *                       simply set to the release), and any fault rolls the window back
 *                       (checkpoint + SRAM undo log) and re-runs it in lock step, which knows
 *                       the stop cycle from the fault's visibility on. Exchange phases,
 *                       pending releases and decided stops run in **lock step**: one global
 *                       cycle at a time over every tile, skipping cycles in which nobody can
 *                       issue.
 *
 * Memory order (§4, §12). Register and pc effects are applied at issue (a context's next slot
 * is >= t + 6 > W). Every SRAM effect is applied in its own cycle, per tile in cycle order:
 * a per-tile ring holds the M-stage work of the last issues (store, load, mrun/mwait), and
 * catch_up(i, k) brings tile i through cycle k - 1: for each cycle u, the mrun/mwait decided in
 * M = u (engine state after the steps of cycles < u), the engine step of u, then the store or
 * load whose M is u. A fetch at k (after catch_up(i, k)) therefore sees exactly the SRAM writes
 * of cycles < k, an engine read at u those of cycles < u, a load those before its M. Nothing
 * of another tile is involved (a tile's SRAM is touched only by the tile itself, its exchange
 * sequencer, in lock step, and the host), so tiles can be caught up lazily.
 *
 * Freestanding C (no libc): built with `zig cc -nostdlib -shared`, called through ctypes.
 */
#include <stdint.h>
#include "spec.h"


typedef uint8_t u8;
typedef int8_t i8;
typedef uint16_t u16;
typedef int16_t i16;
typedef uint32_t u32;
typedef int32_t i32;
typedef uint64_t u64;
typedef int64_t i64;

#define NEVER INT64_MAX
#define M32 0xFFFFFFFFu

/* ======================================================================= 1. ISA semantics */

typedef struct {
    i32 op;
    u32 rd, rs1, rs2;
    u32 imm;             /* sign-extended immediate; CSR number for CSR ops; shamt for shifts */
} Dec;

static inline u32 sext(u32 v, int bits) {
    u32 m = 1u << (bits - 1);
    v &= (bits == 32) ? M32 : ((1u << bits) - 1);
    return (v ^ m) - m;
}

/* Decode one word (docs/architecture.md §3.1 legal-encoding table, §3.2 CSR legality). */
static Dec decode(u32 w) {
    Dec d = {OP_ILLEGAL, 0, 0, 0, w};
    u32 opcode = w & 0x7F, rd = w >> 7 & 31, f3 = w >> 12 & 7, rs1 = w >> 15 & 31,
        rs2 = w >> 20 & 31, f7 = w >> 25;
    u32 imm_i = sext(w >> 20, 12);
    switch (opcode) {
    case OPC_LUI: d.op = OP_LUI; d.rd = rd; d.imm = w & 0xFFFFF000u; return d;
    case OPC_AUIPC: d.op = OP_AUIPC; d.rd = rd; d.imm = w & 0xFFFFF000u; return d;
    case OPC_JAL:
        d.op = OP_JAL; d.rd = rd;
        d.imm = sext((w >> 31 & 1) << 20 | (w >> 12 & 0xFF) << 12 | (w >> 20 & 1) << 11
                     | (w >> 21 & 0x3FF) << 1, 21);
        return d;
    case OPC_JALR:
        if (f3 != 0) return d;
        d.op = OP_JALR; d.rd = rd; d.rs1 = rs1; d.imm = imm_i; return d;
    case OPC_BRANCH: {
        static const i32 br[8] = {OP_BEQ, OP_BNE, -1, -1, OP_BLT, OP_BGE, OP_BLTU, OP_BGEU};
        if (br[f3] < 0) return d;
        d.op = br[f3]; d.rs1 = rs1; d.rs2 = rs2;
        d.imm = sext((w >> 31 & 1) << 12 | (w >> 7 & 1) << 11 | (w >> 25 & 0x3F) << 5
                     | (w >> 8 & 0xF) << 1, 13);
        return d;
    }
    case OPC_LOAD: {
        static const i32 ld[8] = {OP_LB, OP_LH, OP_LW, -1, OP_LBU, OP_LHU, -1, -1};
        if (ld[f3] < 0) return d;
        d.op = ld[f3]; d.rd = rd; d.rs1 = rs1; d.imm = imm_i; return d;
    }
    case OPC_STORE: {
        static const i32 st[8] = {OP_SB, OP_SH, OP_SW, -1, -1, -1, -1, -1};
        if (st[f3] < 0) return d;
        d.op = st[f3]; d.rs1 = rs1; d.rs2 = rs2; d.imm = sext((w >> 25) << 5 | (w >> 7 & 31), 12);
        return d;
    }
    case OPC_OP_IMM: {
        static const i32 opi[8] = {OP_ADDI, -1, OP_SLTI, OP_SLTIU, OP_XORI, -1, OP_ORI, OP_ANDI};
        d.rd = rd; d.rs1 = rs1;
        if (opi[f3] >= 0) { d.op = opi[f3]; d.imm = imm_i; return d; }
        d.imm = rs2;
        if (f3 == 1 && f7 == 0) { d.op = OP_SLLI; return d; }
        if (f3 == 5 && f7 == 0) { d.op = OP_SRLI; return d; }
        if (f3 == 5 && f7 == 0x20) { d.op = OP_SRAI; return d; }
        d.rd = d.rs1 = 0; d.imm = w; return d;
    }
    case OPC_OP: {
        static const i32 op0[8] = {OP_ADD, OP_SLL, OP_SLT, OP_SLTU, OP_XOR, OP_SRL, OP_OR, OP_AND};
        static const i32 opm[8] = {OP_MUL, OP_MULH, OP_MULHSU, OP_MULHU, OP_DIV, OP_DIVU, OP_REM,
                                   OP_REMU};
        i32 op = -1;
        if (f7 == 0) op = op0[f3];
        else if (f7 == 0x20 && f3 == 0) op = OP_SUB;
        else if (f7 == 0x20 && f3 == 5) op = OP_SRA;
        else if (f7 == 1) op = opm[f3];
        if (op < 0) return d;
        d.op = op; d.rd = rd; d.rs1 = rs1; d.rs2 = rs2; d.imm = 0; return d;
    }
    case OPC_MISC_MEM:
        if (f3 == 0) { d.op = OP_FENCE; d.imm = 0; }
        return d;
    case OPC_SYSTEM: {
        if (w == INSN_ECALL) { d.op = OP_ECALL; d.imm = 0; return d; }
        if (w == INSN_EBREAK) { d.op = OP_EBREAK; d.imm = 0; return d; }
        static const i32 csr[8] = {-1, OP_CSRRW, OP_CSRRS, OP_CSRRC, -1, OP_CSRRWI, OP_CSRRSI,
                                   OP_CSRRCI};
        if (csr[f3] < 0) return d;
        u32 num = w >> 20;
        int writes = f3 == 1 || f3 == 5 || rs1 != 0;
        if (!csr_known(num) || (writes && csr_read_only(num))) return d;
        d.op = csr[f3]; d.rd = rd; d.rs1 = rs1; d.imm = num; return d;
    }
    case OPC_CUSTOM_0:
        /* mrun/mwait decode always (as the Python decoder); without an engine they are
         * illegal at execution (isa_exec faults, issue decides) */
        if (f7 == 0 && f3 == FUNCT3_DOT4) { d.op = OP_DOT4; }
        else if (f7 == 0 && f3 == FUNCT3_DOT4SU) { d.op = OP_DOT4SU; }
        else if ((w & INSN_MRUN_MASK) == INSN_MRUN_MATCH) { d.op = OP_MRUN; d.rs1 = rs1; d.imm = 0; return d; }
        else if ((w & INSN_MWAIT_MASK) == INSN_MWAIT_MATCH) { d.op = OP_MWAIT; d.imm = 0; return d; }
        else return d;
        d.rd = rd; d.rs1 = rs1; d.rs2 = rs2; d.imm = 0; return d;
    case OPC_CUSTOM_1:
        if (w == INSN_SYNC_TILE) { d.op = OP_SYNC_TILE; d.imm = 0; }
        else if (w == INSN_SYNC_ARRAY) { d.op = OP_SYNC_ARRAY; d.imm = 0; }
        return d;
    }
    return d;
}

static inline int is_div_op(i32 op) {
    return op == OP_DIV || op == OP_DIVU || op == OP_REM || op == OP_REMU;
}

/* Two-operand ALU ops (register and immediate forms), §3.1 incl. table 7.1. */
static inline u32 alu(i32 op, u32 a, u32 b) {
    switch (op) {
    case OP_ADD: case OP_ADDI: return a + b;
    case OP_SUB: return a - b;
    case OP_SLL: case OP_SLLI: return a << (b & 31);
    case OP_SRL: case OP_SRLI: return a >> (b & 31);
    case OP_SRA: case OP_SRAI: return (u32)((i32)a >> (b & 31));
    case OP_SLT: case OP_SLTI: return (i32)a < (i32)b;
    case OP_SLTU: case OP_SLTIU: return a < b;
    case OP_XOR: case OP_XORI: return a ^ b;
    case OP_OR: case OP_ORI: return a | b;
    case OP_AND: case OP_ANDI: return a & b;
    case OP_MUL: return a * b;
    case OP_MULH: return (u32)((u64)((i64)(i32)a * (i64)(i32)b) >> 32);
    case OP_MULHSU: return (u32)((u64)((i64)(i32)a * (i64)(u64)b) >> 32);
    case OP_MULHU: return (u32)(((u64)a * (u64)b) >> 32);
    case OP_DIV:
        if (b == 0) return M32;
        if (a == 0x80000000u && b == M32) return 0x80000000u;
        return (u32)((i32)a / (i32)b);
    case OP_DIVU: return b == 0 ? M32 : a / b;
    case OP_REM:
        if (b == 0) return a;
        if (a == 0x80000000u && b == M32) return 0;
        return (u32)((i32)a % (i32)b);
    case OP_REMU: return b == 0 ? a : a % b;
    }
    return 0;
}

static inline u32 dot4(u32 acc, u32 a, u32 b, int b_signed) {
    i32 s = 0;
    for (int i = 0; i < 4; i++) {
        i32 x = (i8)(a >> (8 * i));
        i32 y = b_signed ? (i32)(i8)(b >> (8 * i)) : (i32)(u8)(b >> (8 * i));
        s += x * y;
    }
    return acc + (u32)s;
}

/* What an instruction asks of the timing layer. */
enum { R_RETIRE = 0, R_FAULT, R_ECALL, R_SYNC_TILE, R_SYNC_ARRAY, R_LOAD, R_STORE };

/* The architectural view one instruction executes against. */
typedef struct {
    u32 *x;          /* the context's 32 registers (x0 stays 0) */
    i64 nbytes;
    u32 pc;          /* issue pc */
    u32 npc;         /* out: next pc */
    /* CSR inputs */
    i64 cycle, tile, ctx, ntiles, nctx;
    u64 instret;
    u32 *xprog;      /* the tile's xprog CSR */
    u32 *slimit;     /* the context's stack_limit CSR (§3.2, §7) */
    /* outputs */
    u32 cause, faddr;         /* R_FAULT */
    u32 m_addr, m_size, m_val;   /* R_LOAD / R_STORE: byte address, bytes, store value */
    int m_signed;                /* R_LOAD: sign-extended (LB, LH) */
    u32 macs;
} Exec;

static inline void wr(u32 *x, u32 rd, u32 v) { if (rd) x[rd] = v; }

#define FAULT(c, a) do { e->cause = (c); e->faddr = (a); return R_FAULT; } while (0)
/* Write v to rd unless rd = sp and v is below the stack limit (§7): then stack_overflow. */
#define WR(v) do { u32 v_ = (v); \
    if (d->rd == 2 && v_ < *e->slimit) FAULT(FAULT_STACK_OVERFLOW, v_); \
    wr(x, d->rd, v_); } while (0)

/* Execute decoded ``d`` (word ``w``): register, pc and CSR effects, and the outcome; a load or
 * store is checked and returned as R_LOAD / R_STORE (its SRAM access is the timing layer's, in
 * M). A faulting instruction has no effect. */
static inline int isa_exec(Exec *e, u32 w, const Dec *d) {
    u32 *x = e->x;
    u32 pc = e->pc;
    e->npc = pc + 4;
    i32 op = d->op;
    switch (op) {
    /* one case per ALU op, so that alu() folds to a single operation (one dispatch) */
#define ALU_R(o) case o: WR(alu(o, x[d->rs1], x[d->rs2])); return R_RETIRE;
#define ALU_I(o) case o: WR(alu(o, x[d->rs1], d->imm)); return R_RETIRE;
    ALU_R(OP_ADD) ALU_R(OP_SUB) ALU_R(OP_SLL) ALU_R(OP_SLT) ALU_R(OP_SLTU) ALU_R(OP_XOR)
    ALU_R(OP_SRL) ALU_R(OP_SRA) ALU_R(OP_OR) ALU_R(OP_AND) ALU_R(OP_MUL) ALU_R(OP_MULH)
    ALU_R(OP_MULHSU) ALU_R(OP_MULHU) ALU_R(OP_DIV) ALU_R(OP_DIVU) ALU_R(OP_REM) ALU_R(OP_REMU)
    ALU_I(OP_ADDI) ALU_I(OP_SLTI) ALU_I(OP_SLTIU) ALU_I(OP_XORI) ALU_I(OP_ORI) ALU_I(OP_ANDI)
    ALU_I(OP_SLLI) ALU_I(OP_SRLI) ALU_I(OP_SRAI)
#undef ALU_R
#undef ALU_I
    case OP_LUI: WR(d->imm); return R_RETIRE;
    case OP_AUIPC: WR(pc + d->imm); return R_RETIRE;
    case OP_LB: case OP_LH: case OP_LW: case OP_LBU: case OP_LHU: {
        /* checked here (X: the address); the SRAM is read in M = t + 4 (the timing layer) */
        u32 a = x[d->rs1] + d->imm;
        u32 size = (op == OP_LW) ? 4 : (op == OP_LH || op == OP_LHU) ? 2 : 1;
        if (a & (size - 1)) FAULT(FAULT_MISALIGNED_LOAD, a);
        if ((i64)a >= e->nbytes) FAULT(FAULT_ACCESS_FAULT_LOAD, a);
        e->m_addr = a; e->m_size = size; e->m_signed = op == OP_LB || op == OP_LH;
        return R_LOAD;
    }
    case OP_SB: case OP_SH: case OP_SW: {
        /* checked here; the SRAM is written in M = t + 4 (the timing layer) */
        u32 a = x[d->rs1] + d->imm;
        u32 size = (op == OP_SW) ? 4 : (op == OP_SH) ? 2 : 1;
        if (a & (size - 1)) FAULT(FAULT_MISALIGNED_STORE, a);
        if ((i64)a >= e->nbytes) FAULT(FAULT_ACCESS_FAULT_STORE, a);
        e->m_addr = a; e->m_size = size; e->m_val = x[d->rs2];
        return R_STORE;
    }
    case OP_BEQ: case OP_BNE: case OP_BLT: case OP_BGE: case OP_BLTU: case OP_BGEU: {
        u32 a = x[d->rs1], b = x[d->rs2];
        int taken;
        switch (op) {
        case OP_BEQ: taken = a == b; break;
        case OP_BNE: taken = a != b; break;
        case OP_BLT: taken = (i32)a < (i32)b; break;
        case OP_BGE: taken = (i32)a >= (i32)b; break;
        case OP_BLTU: taken = a < b; break;
        default: taken = a >= b; break;
        }
        if (taken) {
            u32 t = pc + d->imm;
            if (t & 3) FAULT(FAULT_MISALIGNED_FETCH, t);
            e->npc = t;
        }
        return R_RETIRE;
    }
    case OP_JAL: case OP_JALR: {
        u32 t = (op == OP_JAL) ? pc + d->imm : (x[d->rs1] + d->imm) & ~1u;
        if (t & 3) FAULT(FAULT_MISALIGNED_FETCH, t);
        WR(pc + 4);
        e->npc = t;
        return R_RETIRE;
    }
    case OP_DOT4: case OP_DOT4SU:
        WR(dot4(x[d->rd], x[d->rs1], x[d->rs2], op == OP_DOT4));
        e->macs = MACS_PER_DOT4;
        return R_RETIRE;
    case OP_CSRRW: case OP_CSRRS: case OP_CSRRC: case OP_CSRRWI: case OP_CSRRSI:
    case OP_CSRRCI: {
        u32 num = d->imm, old;
        switch (num) {
        case CSR_CYCLE: old = (u32)e->cycle; break;
        case CSR_CYCLEH: old = (u32)((u64)e->cycle >> 32); break;
        case CSR_INSTRET: old = (u32)e->instret; break;
        case CSR_INSTRETH: old = (u32)(e->instret >> 32); break;
        case CSR_TILE_ID: old = (u32)e->tile; break;
        case CSR_CONTEXT_ID: old = (u32)e->ctx; break;
        case CSR_TILE_COUNT: old = (u32)e->ntiles; break;
        case CSR_CONTEXT_COUNT: old = (u32)e->nctx; break;
        case CSR_SRAM_BYTES: old = (u32)e->nbytes; break;
        case CSR_XPROG: old = *e->xprog; break;
        case CSR_STACK_LIMIT: old = *e->slimit; break;
        default: old = 0; break;   /* unreachable: decode() made unlisted CSRs illegal */
        }
        if (d->rd == 2 && old < *e->slimit) FAULT(FAULT_STACK_OVERFLOW, old);
        if (num == CSR_XPROG || num == CSR_STACK_LIMIT) {  /* decode() rejected RO writes */
            int imm_form = op == OP_CSRRWI || op == OP_CSRRSI || op == OP_CSRRCI;
            u32 src = imm_form ? d->rs1 : x[d->rs1];
            int writes = d->rs1 != 0 || op == OP_CSRRW || op == OP_CSRRWI;
            u32 nv = (op == OP_CSRRW || op == OP_CSRRWI) ? src
                   : (op == OP_CSRRS || op == OP_CSRRSI) ? (old | src) : (old & ~src);
            if (writes) *(num == CSR_XPROG ? e->xprog : e->slimit) = nv;
        }
        wr(x, d->rd, old);
        return R_RETIRE;
    }
    case OP_FENCE: return R_RETIRE;
    /* mrun / mwait (OP_MRUN, OP_MWAIT) take the fault exit: the timing layer decides (§12) */
    case OP_ECALL: return R_ECALL;
    case OP_SYNC_TILE: return R_SYNC_TILE;
    case OP_SYNC_ARRAY: return R_SYNC_ARRAY;
    case OP_EBREAK: FAULT(FAULT_BREAKPOINT, pc);
    default: FAULT(FAULT_ILLEGAL_INSTRUCTION, w);
    }
}

/* ==================================================================== 2. timing machinery */

/* M-stage work of one issue (§4: every data-memory effect in M = t + 4; §12: mrun/mwait
 * decided in M). Per tile a ring of MQ_RING entries indexed by the M cycle: the issue at t
 * writes entry (t + M_DELAY) & (MQ_RING - 1) after catch_up(i, t) consumed the entry of cycle
 * t - MQ_RING + M_DELAY, so MQ_RING > M_DELAY suffices; 8 also keeps an entry of the cycles
 * C .. C + 3 after a run ends (the LOAD/STORE flags a continued run's engine needs). */
#define MQ_RING 8
_Static_assert(MQ_RING > M_DELAY && (MQ_RING & (MQ_RING - 1)) == 0, "MQ ring size");
enum { MQ_NONE = 0, MQ_STORE, MQ_LOAD, MQ_MRUN, MQ_MWAIT };
typedef struct {
    i64 cyc;          /* the M cycle this entry belongs to (t + 4 of its issue) */
    u32 addr;         /* store/load: byte address; mrun: descriptor address d (rs1 in R) */
    u32 val;          /* store: rs2 as read in R */
    u32 pc;           /* mrun/mwait: the issue pc */
    u8 kind;          /* MQ_*: the work still to do (MQ_NONE: done or none) */
    u8 ls;            /* the word issued at t has opcode LOAD/STORE (§12 "Engine cycles") */
    u8 ifault;        /* the instruction issued at t faulted (visible from t + 5, §12 ties) */
    u8 size;          /* store/load bytes */
    u8 sgn;           /* load: sign-extended */
    u8 rd;            /* load: destination register */
    u16 ctx;          /* the issuing context */
} MQ;

/* One retired store of the store log (Array(stores=...), the checked graph runs): the
 * fields of its retire record (tessera.spec.trace) — issue cycle, tile, context, pc, the
 * word-aligned address, the write-port word (bytes in their lanes) and the byte enables. */
typedef struct {
    i64 cycle;
    u32 pc, addr, data, tile;
    u16 ctx;
    u8 mask, pad;
} SLog;

/* The model's state: numpy arrays owned by tessera.golden_model.Array (see fast/run.py for the
 * order of the pointer table) plus scratch arrays rebuilt at every call. */
typedef struct {
    i64 n, t, nbytes, words, lat, sync_lat, dlat;
    /* per context [N*T] */
    u32 *regs;            /* [N*T*32] */
    u32 *pc;
    u8 *vis, *pend_state;
    i64 *pend_cycle;
    u64 *retired;
    u32 *exitc;
    u8 *dturn;
    u32 *dword;
    /* per tile [N] */
    u64 *macs;
    u32 *xprog;
    u32 *slimit;     /* [N*T] stack_limit CSRs */
    u32 *sram;            /* [N*words] */
    u8 *xphase;
    i64 *xphase_end;
    i8 *cat;
    i64 *since;
    i64 *acc;             /* [4*N] */
    /* exchange engine */
    u8 *x_inprog;
    i64 *x_next;
    i64 *x_ptr;
    i64 *x_run_i;    /* [N] cycle index of a STEP run in progress (0: none), §6 "Runs" */
    i64 *x_run_w;    /* [2N] the run's step words (read at its first cycle) */
    u32 *bus_val;         /* [(L+1)*N] */
    u8 *bus_valid;
    i64 *slot_cycle;      /* [L+1] */
    /* M-stage work (the MQ ring, [N*MQ_RING]) and per tile the first cycle not caught up */
    MQ *mq;
    i64 *cur;             /* [N] catch_up(i, k) has done every cycle < cur[i] */
    i64 *mq_n;            /* [N] entries of the ring with work (derived) */
    i64 mq_total, n_mrun_pend;
    /* fault records out */
    u8 *f_has;
    i64 *f_ctx, *f_cause, *f_pc, *f_addr;
    i64 *f_vis;           /* [N] the cycle from which the kept record is visible (§7) */
    /* scratch */
    i64 *tev;             /* [N] next event cycle of a tile (pending change or xphase end) */
    i64 *cnt;             /* [N*8] visible contexts per state */
    u8 *arrived;          /* [N] */
    i64 *nrun_ctx;        /* [T] tiles whose context c is visibly RUNNING */
    i64 *tile_live;       /* [N] contexts that have not issued ecall */
    i64 *e_last;          /* [N] issue cycle of the tile's latest ecall */
    i64 *arr_cycle;       /* [N] cycle from which the tile is arrived */
    i64 *lk;              /* [N] a tile's own clock inside a window */
    u32 *ulog;            /* SRAM undo log of a window: (absolute word index, old word) */
    i64 ulog_n, ulog_cap;
    u8 *ckpt;             /* checkpoint of the per-context / per-tile state of a window */
    SLog *slog;           /* store log (NULL: off); slog_n counts past slog_cap (overflow) */
    i64 slog_n, slog_cap;
    /* matrix engines (§12) */
    i64 lanes;            /* M (0: no engine, mrun/mwait are illegal) */
    u8 *eng;              /* [N] Eng records (see below), the engines' state */
    u8 *ebusy;            /* [N] derived: the tile's engine is busy */
    i64 n_ebusy;
    u8 *esnap;            /* [N] Eng snapshots of the current window (first touch) */
    u8 *eacc, *esnap_acc; /* [N] accumulators of the engines, and their snapshots */
    i64 *esnap_gen;       /* [N] window generation of each snapshot */
    i64 *etouched, n_etouched, gen;
    /* scalars */
    i64 maxc;             /* the run's max_cycles */
    i64 stop_at;          /* C = v + D once the stop condition held at v (§7), else NEVER */
    i64 nrun, n_wa, n_arrived, n_xphase, next_ev;
    i64 live, release, armed, xnext;
    int stop;             /* inside a window: a fault happened (the window rolls back) */
    int window;           /* inside a window: ecalls and faults do not decide the stop */
} Model;

static void copy_bytes(u8 *d, const u8 *s, i64 n) {
    for (i64 j = 0; j < n; j++) d[j] = s[j];
}

static inline MQ *MQE(const Model *M, i64 i, i64 u) { return M->mq + i * MQ_RING + (u & (MQ_RING - 1)); }

static inline void set_vis(Model *M, i64 i, i64 c, u8 s) {
    i64 ic = i * M->t + c;
    u8 old = M->vis[ic];
    if (old == s) return;
    if (old == ST_FAULT) return;           /* FAULT is final (contract-v2.md §6 point 6) */
    M->vis[ic] = s;
    i64 *cn = M->cnt + i * 8;
    cn[old]--; cn[s]++;
    if (old == ST_RUNNING) { M->nrun_ctx[c]--; M->nrun--; }
    if (s == ST_RUNNING) { M->nrun_ctx[c]++; M->nrun++; }
    if (old == ST_WAIT_ARRAY) M->n_wa--;
    if (s == ST_WAIT_ARRAY) M->n_wa++;
}

/* A state change of context (i, c) visible from ``cycle``. A context that is FAULT, or has a
 * FAULT pending, stays FAULT: only FAULT replaces a pending change. */
static inline void schedule(Model *M, i64 i, i64 c, i64 cycle, u8 s) {
    i64 ic = i * M->t + c;
    int pend_fault = M->pend_cycle[ic] != NEVER && M->pend_state[ic] == ST_FAULT;
    if (s != ST_FAULT && (M->vis[ic] == ST_FAULT || pend_fault))
        return;
    /* FAULT from the earliest cycle scheduled (an engine data fault visible at u + 2, then an
     * instruction of c_e issued at u + 1 that faults, visible at u + 6) */
    if (s == ST_FAULT && pend_fault && M->pend_cycle[ic] <= cycle) return;
    M->pend_cycle[ic] = cycle;
    M->pend_state[ic] = s;
    if (cycle < M->tev[i]) M->tev[i] = cycle;
    if (cycle < M->next_ev) M->next_ev = cycle;
}

/* The stop condition holds from cycle v (§7 "Stop"): the run ends after t_s = v + D - 1. */
static inline void stop_from(Model *M, i64 v) {
    if (v + M->dlat < M->stop_at) M->stop_at = v + M->dlat;
}

/* A fault of tile i visible from ``vis`` (§7): the tile keeps the record visible first (the
 * earlier-recorded one on a tie). In a window the stop is not decided here: the window rolls
 * back and lock step re-runs it. */
static void record_fault(Model *M, i64 i, i64 vis, i64 ctx, i64 cause, i64 pc, i64 addr) {
    if (vis < M->f_vis[i]) {
        M->f_has[i] = 1; M->f_vis[i] = vis; M->f_ctx[i] = ctx; M->f_cause[i] = cause;
        M->f_pc[i] = pc; M->f_addr[i] = addr;
    }
    if (M->window) M->stop = 1;
    else stop_from(M, vis);
}

static inline int tile_arrived(Model *M, i64 i) {
    const i64 *cn = M->cnt + i * 8;
    if (M->xphase[i]) return 0;
    return (cn[ST_WAIT_ARRAY] > 0 && cn[ST_WAIT_ARRAY] + cn[ST_HALTED] == M->t)
           || cn[ST_HALTED] == M->t;
}

static inline void update_arrived(Model *M, i64 i, i64 k) {
    u8 a = (u8)tile_arrived(M, i);
    if (a != M->arrived[i]) {
        M->n_arrived += a ? 1 : -1;
        M->arrived[i] = a;
        if (a) M->arr_cycle[i] = k;
    }
}

/* §8: the tile's counter category from cycle k on. */
static inline void recat(Model *M, i64 i, i64 k) {
    const i64 *cn = M->cnt + i * 8;
    i8 c;
    if (M->xphase[i]) c = CAT_EXCHANGE;
    else if (cn[ST_HALTED] + cn[ST_FAULT] == M->t) c = CAT_HALTED;
    else if (cn[ST_RUNNING] > 0) c = CAT_COMPUTE;
    else c = CAT_SYNC;
    if (c != M->cat[i]) {
        M->acc[(i64)M->cat[i] * M->n + i] += k - M->since[i];
        M->since[i] = k;
        M->cat[i] = c;
    }
}

static inline void retev(Model *M, i64 i) {
    i64 m = M->xphase_end[i];
    const i64 *pc = M->pend_cycle + i * M->t;
    for (i64 c = 0; c < M->t; c++) if (pc[c] < m) m = pc[c];
    M->tev[i] = m;
}

/* Changes of tile i visible at k, then its barrier decisions and category at k (§5, §8). */
static void tile_events(Model *M, i64 i, i64 k) {
    i64 T = M->t, base = i * T;
    for (i64 c = 0; c < T; c++) {
        if (M->pend_cycle[base + c] == k) {
            set_vis(M, i, c, M->pend_state[base + c]);
            M->pend_cycle[base + c] = NEVER;
        }
    }
    if (M->xphase_end[i] == k) { M->xphase[i] = 0; M->xphase_end[i] = NEVER; M->n_xphase--; }
    if (!M->armed) {                       /* TILE barrier */
        const i64 *cn = M->cnt + i * 8;
        if (cn[ST_WAIT_TILE] > 0 && cn[ST_WAIT_TILE] + cn[ST_HALTED] == T)
            for (i64 c = 0; c < T; c++)
                if (M->vis[base + c] == ST_WAIT_TILE) schedule(M, i, c, k + 1, ST_RUNNING);
    }
    update_arrived(M, i, k);
    recat(M, i, k);
    retev(M, i);
}

/* END of tile i's exchange phase at cycle e: its WAIT_ARRAY contexts run from e + 1. */
static void end_exchange(Model *M, i64 i, i64 e) {
    i64 T = M->t, base = i * T;
    M->xphase_end[i] = e + 1;
    if (e + 1 < M->tev[i]) M->tev[i] = e + 1;
    if (e + 1 < M->next_ev) M->next_ev = e + 1;
    for (i64 c = 0; c < T; c++)
        if (M->vis[base + c] == ST_WAIT_ARRAY) schedule(M, i, c, e + 1, ST_RUNNING);
}

/* ARRAY release at cycle k (§5): every tile starts its exchange phase (§6). */
static void do_release(Model *M, i64 k) {
    M->release = NEVER;
    M->armed = 0;
    i64 any = 0;
    M->n_xphase = M->n;
    for (i64 i = 0; i < M->n; i++) {
        M->xphase[i] = 1;
        u32 xp = M->xprog[i];
        M->x_inprog[i] = xp != 0;
        M->x_ptr[i] = xp;
        M->x_run_i[i] = 0;
        M->x_next[i] = xp != 0 ? k : NEVER;
        if (xp != 0) any = 1;
    }
    M->xnext = any ? k : NEVER;
    for (i64 i = 0; i < M->n; i++) {
        if (M->xprog[i] == 0) end_exchange(M, i, k);
        update_arrived(M, i, k);
        recat(M, i, k);
    }
}

/* An exchange fault of tile i's step at cycle k (§6): visible from k + 1 (§7); the tile's
 * program makes no further step and the tile stays in its exchange phase until the stop. */
static void xfault(Model *M, i64 i, i64 k, i64 pc, i64 addr) {
    record_fault(M, i, k + STEP_FAULT_VISIBLE_DELAY, -1, FAULT_EXCHANGE_FAULT, pc, addr);
    M->x_inprog[i] = 0;
    M->x_next[i] = NEVER;
}

/* Every exchange step that starts at cycle k (§6; checks in the order of §6). */
static void exchange_step(Model *M, i64 k) {
    i64 n = M->n, L1 = M->lat + 1, nbytes = M->nbytes;
    i64 slot = k % L1, old = (k - M->lat) % L1;
    if (old < 0) old += L1;
    M->slot_cycle[slot] = k;
    u32 *bv = M->bus_val + slot * n;
    u8 *bvalid = M->bus_valid + slot * n;
    for (i64 i = 0; i < n; i++) bvalid[i] = 0;
    int old_ok = M->slot_cycle[old] == k - M->lat;
    const u32 *ov = M->bus_val + old * n;
    const u8 *ovalid = M->bus_valid + old * n;
    i64 xnext = NEVER;
    for (i64 i = 0; i < n; i++) {
        if (!M->x_inprog[i]) continue;
        if (M->x_next[i] != k) { if (M->x_next[i] < xnext) xnext = M->x_next[i]; continue; }
        i64 addr = M->x_ptr[i];
        /* a faulting step has no effect; the sequencer stops */
#define XFAULT(a) { xfault(M, i, k, addr, (a)); continue; }
        i64 ri = M->x_run_i[i];
        u32 *mem = M->sram + i * M->words;
        i64 w0, w1;
        if (ri > 0) {              /* a later cycle of a run: the step is not re-read */
            w0 = M->x_run_w[2 * i]; w1 = M->x_run_w[2 * i + 1];
        } else {
            if (addr % STEP_BYTES != 0 || addr >= nbytes || addr < 0) XFAULT(addr);
            i64 wi = addr >> 2;
            w0 = mem[wi]; w1 = mem[wi + 1];
        }
        i64 op = w0 >> 30;
        if (op == XOP_RESERVED) XFAULT(addr);
        int is_step = op == XOP_STEP;
        int send_en = is_step && ((w0 >> 29) & 1);
        int recv_en = is_step && ((w0 >> 28) & 1);
        i64 send_b = ((w0 & X_ADDR_MASK) + ri) << 2;
        int rel = (w1 >> 31) & 1;
        i64 src = (w1 >> 20) & X_SRC_MASK;
        i64 recv_b = ((w1 & X_ADDR_MASK) + ri) << 2;
        if (send_en && send_b >= nbytes) XFAULT(send_b);
        if (recv_en && !rel && src >= n) XFAULT(src);
        if (recv_en && recv_b >= nbytes) XFAULT(recv_b);
#undef XFAULT
        /* a send reads the SRAM as after all writes of cycles < k: before this tile's
         * receive below; other tiles' receives write only their own SRAM */
        if (send_en) { bv[i] = mem[send_b >> 2]; bvalid[i] = 1; }
        if (recv_en) {
            i64 s = rel ? (i + src) % n : src;
            u32 v = (old_ok && ovalid[s]) ? ov[s] : 0;
            mem[recv_b >> 2] = v;
        }
        if (is_step && ri + 1 < ((w0 >> X_RUN_SHIFT) & (X_MAX_RUN - 1)) + 1) {
            M->x_run_i[i] = ri + 1;            /* the run goes on in the next cycle */
            M->x_run_w[2 * i] = w0; M->x_run_w[2 * i + 1] = w1;
            M->x_next[i] = k + 1;
            if (k + 1 < xnext) xnext = k + 1;
            continue;
        }
        M->x_run_i[i] = 0;
        M->x_ptr[i] = addr + STEP_BYTES;
        if (op == XOP_END) {
            M->x_inprog[i] = 0;
            M->x_next[i] = NEVER;
            end_exchange(M, i, k);
        } else {
            i64 nx = k + (op == XOP_IDLE ? (w0 & X_ADDR_MASK) + 1 : 1);
            M->x_next[i] = nx;
            if (nx < xnext) xnext = nx;
        }
    }
    M->xnext = xnext;
}

/* ===================================================================== matrix engine (§12)
 *
 * Timing. The engine step of cycle u of tile i runs inside catch_up(i, .) after the mrun/mwait
 * decisions of M = u and before the store/load whose M is u, so it reads the SRAM as after
 * all writes of cycles < u and its write is seen from u + 1 (§12 "Memory order"). Cycle u
 * (u > x) is an engine cycle unless the tile is in its exchange phase at u or the word issued
 * at u - 4 (the MQ entry of cycle u) is a LOAD/STORE (§12 "Engine cycles").
 *
 * Faults. A faulting step has no effect; the engine is frozen (fpend: no further steps, busy
 * until the stop). The fault is visible from v = u + 1 (checks 1 and 4, addresses) or u + 2
 * (checks 2 and 3, the data of the word read: ENGINE_DATA_FAULT_VISIBLE_DELAY; the step of
 * u + 1 would have no effect and no fault of its own, so freezing at u is the same): c_e
 * enters FAULT from v with final pc = pc_e and the record is kept if visible first, unless the
 * instruction issued on the tile at v - 5 faulted (visible from v too): then the engine fault
 * is dropped (§12). After a data fault c_e may still issue at u + 1, so its pc is set to pc_e
 * only once that issue is done (pcfix: at the next catch-up past u + 1, or at the end of the
 * run). In a window any fault rolls the window back.
 */
enum { PH_DESC, PH_PARAM, PH_LOAD, PH_STREAM, PH_DRAIN, PH_GATHER };
#define ELANES 8

typedef struct {
    i64 busy, x, step, nsteps, ws, c_e, d, pc_e;
    i64 busy_done;             /* engine counter: busy cycles of the finished commands */
    i64 fpend, faddr;          /* the faulting step's cycle (NEVER: none; frozen) and addr */
    /* descriptor fields (valid from step 8) */
    u32 a_base, a_s0, a_s1, ak_s1, w_base, w_sm, c_base, c_s0, c_s1, p_base;
    u32 J0, J1, K0, K1, C, mode, flags, J, OW, pad0;
    i64 KB, G;                 /* G = 1 with K_GATHER (one gather step per k1) */
    i64 g;                     /* the gather offset of the current k1 (u32) */
    i32 zp, qmin, qmax, pad1;
    /* cursors */
    i64 ph, r, b, k0, k1, j, j0, j1, sub, wj, wj0, wj1, ww;
    u8 desc[E_DESC_BYTES];
    i32 bias[ELANES], mult[ELANES], shift[ELANES];
    i32 S[ELANES][8];
    i64 fdata;                 /* the fault of fpend is a data fault (checks 2, 3): visible u + 2 */
    i64 pcfix;                 /* set c_e's pc to pc_e after the issue of this cycle (NEVER: none) */
} Eng;
/* The accumulators acc[j][m] of tile i live apart (M->eacc, [N][ACC_DEPTH][ELANES]): only
 * busy engines touch them. */
typedef i32 EAcc[E_ACC_DEPTH][ELANES];
#define EACC_BYTES ((i64)sizeof(EAcc))
static inline EAcc *EACC(const Model *M, i64 i) { return (EAcc *)(M->eacc + i * EACC_BYTES); }

static inline Eng *ENG(const Model *M, i64 i) { return (Eng *)(M->eng + i * (i64)sizeof(Eng)); }

static inline i64 eng_acc_bytes(const Eng *E) {
    return (E->busy && E->step > E_DESC_CHECK_STEP) ? E->J * ELANES * 4 : 0;
}

/* Window snapshot of tile i's engine before its first change in the window. */
static inline void etouch(Model *M, i64 i) {
    if (!M->window || M->esnap_gen[i] == M->gen) return;
    M->esnap_gen[i] = M->gen;
    Eng *E = ENG(M, i);
    copy_bytes(M->esnap + i * (i64)sizeof(Eng), (const u8 *)E, (i64)sizeof(Eng));
    copy_bytes(M->esnap_acc + i * EACC_BYTES, (const u8 *)EACC(M, i), eng_acc_bytes(E));
    M->etouched[M->n_etouched++] = i;
}

static void eng_restore(Model *M) {
    for (i64 q = 0; q < M->n_etouched; q++) {
        i64 i = M->etouched[q];
        const Eng *S = (const Eng *)(M->esnap + i * (i64)sizeof(Eng));
        copy_bytes((u8 *)ENG(M, i), (const u8 *)S, (i64)sizeof(Eng));
        copy_bytes((u8 *)EACC(M, i), M->esnap_acc + i * EACC_BYTES, eng_acc_bytes(S));
    }
    M->n_etouched = 0;
}

static inline u32 ld32(const u8 *p) { return p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24; }

/* gemmlowp SaturatingRoundingDoublingHighMul: ties toward +inf, saturates at (-2^31, -2^31). */
static inline i32 srdhm(i32 a, i32 b) {
    if (a == (i32)0x80000000 && b == (i32)0x80000000) return 0x7FFFFFFF;
    i64 ab = (i64)a * (i64)b;
    return (i32)((ab + ((i64)1 << 30)) >> 31);
}

/* gemmlowp RoundingDivideByPOT: ties away from zero. */
static inline i32 rdbpot(i32 x, int e) {
    i64 mask = ((i64)1 << e) - 1;
    i64 rem = (i64)x & mask;
    i64 thr = (mask >> 1) + (x < 0);
    return (i32)(((i64)x >> e) + (rem > thr));
}

/* TFLite MultiplyByQuantizedMultiplier; x << left wraps mod 2^32 (§12, §11 rule 1). */
static inline i32 mbqm(i32 x, i32 m, i32 sh) {
    int left = sh > 0 ? sh : 0, right = sh > 0 ? 0 : -sh;
    return rdbpot(srdhm((i32)((u32)x << left), m), right);
}

/* FLOAT32 mode (§12, the onnxruntime rule of §11 rule 2): rne(fl32(fl32(acc) * M)) with M the
 * binary32 value of the bits mb (finite: checked in step 8+2m), clipped to +-2^10 (every
 * byte output beyond saturates). IEEE binary32 arithmetic of the host (x86-64 SSE: round to
 * nearest even, no excess precision, subnormals kept; the build has no -ffast-math). */
static inline i64 f32_round(i32 acc, u32 mb) {
    union { u32 u; float f; } m = { .u = mb };
    volatile float p = (float)acc * m.f;    /* int32 -> float32 rounds to nearest even */
    float q = p;
    if (q > 1024.0f) q = 1024.0f;           /* +inf too */
    if (q < -1024.0f) q = -1024.0f;
    i64 i = (i64)q;                         /* toward zero; q - i is exact (|q| <= 2^10) */
    float fr = q - (float)i;
    if (fr > 0.5f || (fr == 0.5f && (i & 1))) i++;
    else if (fr < -0.5f || (fr == -0.5f && (i & 1))) i--;
    return i;
}

static inline int bad_read(const Model *M, u32 a) { return (a & 7) || (i64)a >= M->nbytes; }

/* The faulting step of cycle u (no effect; the caller freezes the engine): checks 1 and 4. */
static int efault(Model *M, Eng *E, i64 u, u32 addr) {
    (void)M;
    E->fpend = u;
    E->faddr = addr;
    E->fdata = 0;
    return 1;
}

/* The same for checks 2 and 3 (the data of the word read in cycle u: visible from u + 2). */
static int edfault(Model *M, Eng *E, i64 u, u32 addr) {
    efault(M, E, u, addr);
    E->fdata = 1;
    return 1;
}

/* The 8 bytes at a (8-byte aligned): the SRAM as after all writes of earlier cycles. */
static inline void eng_read(const Model *M, i64 i, u32 a, u8 out[8]) {
    const u8 *m8 = (const u8 *)(M->sram + i * M->words);
    for (int q = 0; q < 8; q++) out[q] = m8[a + q];
}

/* Write n bytes at a (within one aligned 8-byte word, or, n > 8, two consecutive aligned
 * words at a and a + 8: ENGINE_WRITE_WORDS, §12 "Engine cycles"); undo log inside a window
 * (2 or 4 u32 words). */
static void eng_write(Model *M, i64 i, u32 a, const u8 *data, int n) {
    u32 *mem = M->sram + i * M->words;
    i64 wi = (a >> 2) & ~(i64)1;
    if (M->window) {
        i64 nw = n > 8 ? 4 : 2;
        for (i64 q = 0; q < nw; q++) {
            M->ulog[2 * (M->ulog_n + q)] = (u32)(i * M->words + wi + q);
            M->ulog[2 * (M->ulog_n + q) + 1] = mem[wi + q];
        }
        M->ulog_n += nw;
    }
    u8 *m8 = (u8 *)mem;
    for (int q = 0; q < n; q++) m8[a + q] = data[q];
}

static void eng_start(Model *M, i64 i, Eng *E, i64 x, u32 d, i64 c, u32 pc) {
    E->busy = 1; E->x = x; E->step = 0; E->nsteps = NEVER; E->ws = NEVER;
    E->c_e = c; E->d = d; E->pc_e = pc; E->fpend = NEVER; E->fdata = 0; E->pcfix = NEVER;
    E->ph = PH_DESC; E->r = 0; E->wj = E->wj0 = E->wj1 = E->ww = 0; E->g = 0;
    M->ebusy[i] = 1;
    M->n_ebusy++;
}

/* Step 7: decode and check the descriptor (§12 "Engine faults" 2). Returns 1 if valid. */
static int eng_parse(Model *M, Eng *E) {
    const u8 *q = E->desc;
#define H16(o) ((u32)q[o] | (u32)q[(o) + 1] << 8)
#define S16(o) ((i32)(i16)H16(o))
    u32 J0 = H16(DESC_J0), J1 = H16(DESC_J1), K0 = H16(DESC_K0), K1 = H16(DESC_K1);
    u32 C = q[DESC_C], mode = q[DESC_MODE], flags = q[DESC_FLAGS];
    i32 zp = S16(DESC_ZP), qmin = S16(DESC_QMIN), qmax = S16(DESC_QMAX);
    if (C == 0 || C > (u32)M->lanes || !J0 || !J1 || !K0 || !K1) return 0;
    if (J0 * J1 > E_ACC_DEPTH) return 0;
    if (mode != MODE_RAW && mode != MODE_TFLITE && mode != MODE_FLOAT32) return 0;
    if (flags & ~(u32)(FLAG_A_UNSIGNED | FLAG_OUT_UNSIGNED | FLAG_K_GATHER)) return 0;
    if (mode == MODE_TFLITE || mode == MODE_FLOAT32) {
        i32 lo = (flags & FLAG_OUT_UNSIGNED) ? 0 : -128, hi = (flags & FLAG_OUT_UNSIGNED) ? 255 : 127;
        if (qmin > qmax || zp < lo || zp > hi || qmin < lo || qmin > hi || qmax < lo || qmax > hi)
            return 0;
    }
    E->a_base = ld32(q + DESC_A_BASE); E->a_s0 = ld32(q + DESC_A_S0); E->a_s1 = ld32(q + DESC_A_S1);
    E->ak_s1 = ld32(q + DESC_AK_S1); E->w_base = ld32(q + DESC_W_BASE); E->w_sm = ld32(q + DESC_W_SM);
    E->c_base = ld32(q + DESC_C_BASE); E->c_s0 = ld32(q + DESC_C_S0); E->c_s1 = ld32(q + DESC_C_S1);
    E->p_base = ld32(q + DESC_P_BASE);
    E->J0 = J0; E->J1 = J1; E->K0 = K0; E->K1 = K1; E->C = C; E->mode = mode; E->flags = flags;
    E->zp = zp; E->qmin = qmin; E->qmax = qmax;
    E->J = J0 * J1; E->KB = (i64)K0 * K1;
    /* OW (tessera.spec.engine.output_words): RAW writes 8 * ENGINE_WRITE_WORDS bytes a step */
    E->OW = mode == MODE_RAW ? (4 * C + E_RAW_WRITE_BYTES - 1) / E_RAW_WRITE_BYTES : 1;
    E->G = (flags & FLAG_K_GATHER) ? 1 : 0;
    i64 last = E_DESC_WORDS + 2 * (i64)C + (E->KB - 1) * (C + E->J)    /* first step of block KB-1 */
               + E->G * (i64)K1;
    E->ws = last + C + E_WRITE_DELAY;
    E->nsteps = last + C + (i64)E->J * E->OW + E_WRITE_DELAY;
#undef H16
#undef S16
    return 1;
}

/* The 8 bytes at a as the engine of cycle u sees them (port: hide a store of issue u-1). */
/* Execute the next step of tile i's command in engine cycle u. Returns 1 on an engine fault. */
__attribute__((noinline)) static int eng_step(Model *M, i64 i, Eng *E, i64 u) {
    u32 C = E->C;
    u8 v[8];
    u32 ra;
    int stream = 0, load = 0;
    switch (E->ph) {
    case PH_DESC:
        ra = (u32)E->d + 8 * (u32)E->r;
        if (bad_read(M, ra)) return efault(M, E, u, ra);
        eng_read(M, i, ra, E->desc + 8 * E->r);
        if (E->r == E_DESC_CHECK_STEP && !eng_parse(M, E)) return edfault(M, E, u, (u32)E->d);
        break;
    case PH_PARAM: {
        i64 m = E->r >> 1;
        ra = E->p_base + E_PARAM_BYTES * (u32)m + 8 * (u32)(E->r & 1);
        if (bad_read(M, ra)) return efault(M, E, u, ra);
        eng_read(M, i, ra, v);
        if ((E->r & 1) == 0) {
            u32 mb = ld32(v + 4);          /* FLOAT32: a binary32 infinity or NaN faults */
            if (E->mode == MODE_FLOAT32 && ((mb >> 23) & 0xFF) == E_F32_EXP_SPECIAL)
                return edfault(M, E, u, ra);
            E->bias[m] = (i32)ld32(v); E->mult[m] = (i32)mb;
        }
        else {
            i32 sh = (i32)ld32(v);
            if (E->mode == MODE_TFLITE && (sh < E_MIN_SHIFT || sh > E_MAX_SHIFT))
                return edfault(M, E, u, ra);
            E->shift[m] = sh;
        }
        break;
    }
    case PH_GATHER:                            /* the gather word of k1 (K_GATHER) */
        ra = E->ak_s1 + 8 * (u32)E->k1;
        if (bad_read(M, ra)) return efault(M, E, u, ra);
        break;
    case PH_LOAD:
        ra = E->w_base + (u32)E->r * E->w_sm + 8 * (u32)E->b;
        if (bad_read(M, ra)) return efault(M, E, u, ra);
        load = 1;
        break;
    case PH_STREAM:
        if (E->sub == 0) {
            ra = E->a_base + (u32)E->j1 * E->a_s1 + (u32)E->j0 * E->a_s0
                 + (E->G ? (u32)E->g : (u32)E->k1 * E->ak_s1) + 8 * (u32)E->k0;
            if (bad_read(M, ra)) return efault(M, E, u, ra);
            stream = 1;
        }
        break;
    default: break;
    }
    /* the write of this step (§12 "Engine faults" 4 after the read check) */
    int wn = 0;
    u32 wa = 0;
    u8 wd[E_RAW_WRITE_BYTES];
    if (E->step >= E->ws) {
        u32 cj = E->c_base + (u32)E->wj1 * E->c_s1 + (u32)E->wj0 * E->c_s0;
        const i32 *acc = (*EACC(M, i))[E->wj];
        if (E->mode != MODE_RAW) {
            if ((cj & 7) + C > 8 || (i64)cj >= M->nbytes) return efault(M, E, u, cj);
            wa = cj; wn = (int)C;
            for (u32 m = 0; m < C; m++) {
                i64 y = (E->mode == MODE_TFLITE ? (i64)mbqm(acc[m], E->mult[m], E->shift[m])
                                                : f32_round(acc[m], (u32)E->mult[m])) + E->zp;
                if (y < E->qmin) y = E->qmin;
                if (y > E->qmax) y = E->qmax;
                wd[m] = (u8)y;
            }
        } else {
            /* write ww: bytes 16 ww .. min(16 ww + 16, 4C) - 1 at C(j) + 16 ww (§12 check 4:
             * the first word's address, then the second word's) */
            wa = cj + E_RAW_WRITE_BYTES * (u32)E->ww;
            if ((cj & 7) || (i64)wa >= M->nbytes) return efault(M, E, u, wa);
            u32 b0 = E_RAW_WRITE_BYTES * (u32)E->ww;
            wn = 4 * C - b0 < E_RAW_WRITE_BYTES ? (int)(4 * C - b0) : E_RAW_WRITE_BYTES;
            if (wn > 8 && (i64)wa + 8 >= M->nbytes) return efault(M, E, u, wa + 8);
            u32 m0 = b0 / 4;
            for (int q = 0; q < wn; q++) wd[q] = (u8)((u32)acc[m0 + (q >> 2)] >> (8 * (q & 3)));
        }
    }
    /* commit */
    if (E->ph == PH_GATHER) {
        eng_read(M, i, ra, v);
        E->g = ld32(v);
    }
    if (load) {
        eng_read(M, i, ra, v);
        i32 *S = E->S[E->r];
        for (int q = 0; q < 8; q++) S[q] = (i8)v[q];
    }
    if (stream) {
        eng_read(M, i, ra, v);
        i32 xv[8];
        if (E->flags & FLAG_A_UNSIGNED) for (int q = 0; q < 8; q++) xv[q] = v[q];
        else for (int q = 0; q < 8; q++) xv[q] = (i8)v[q];
        i32 *acc = (*EACC(M, i))[E->j];
        int first = E->b == 0;
        for (u32 m = 0; m < C; m++) {
            const i32 *S = E->S[m];
            i32 sum = 0;
            for (int q = 0; q < 8; q++) sum += xv[q] * S[q];
            acc[m] = (i32)((u32)(first ? E->bias[m] : acc[m]) + (u32)sum);
        }
        M->macs[i] += 8 * C;
    }
    if (wn) {
        eng_write(M, i, wa, wd, wn);
        if (++E->ww == E->OW) { E->ww = 0; E->wj++; if (++E->wj0 == E->J0) { E->wj0 = 0; E->wj1++; } }
    }
    /* advance the cursors */
    E->step++;
    switch (E->ph) {
    case PH_DESC: if (++E->r == E_DESC_WORDS) { E->ph = PH_PARAM; E->r = 0; } break;
    case PH_PARAM:
        if (++E->r == 2 * (i64)C) { E->ph = E->G ? PH_GATHER : PH_LOAD; E->r = 0; E->b = E->k0 = E->k1 = 0; }
        break;
    case PH_GATHER: E->ph = PH_LOAD; E->r = 0; break;
    case PH_LOAD:
        if (++E->r == C) { E->ph = PH_STREAM; E->j = E->j0 = E->j1 = 0; E->sub = 0; }
        break;
    case PH_STREAM: {
        int last = E->b == E->KB - 1;
        if (last && E->OW > 1 && ++E->sub < E->OW) break;
        E->sub = 0;
        E->j++;
        if (++E->j0 == E->J0) { E->j0 = 0; E->j1++; }
        if (E->j == E->J) {
            if (last) E->ph = PH_DRAIN;
            else {
                E->b++;
                E->ph = PH_LOAD;
                if (++E->k0 == E->K0) { E->k0 = 0; E->k1++; if (E->G) E->ph = PH_GATHER; }
                E->r = 0;
            }
        }
        break;
    }
    default: break;
    }
    if (E->step == E->nsteps) {                /* the last step: idle from u + 1 */
        E->busy = 0;
        E->busy_done += u - E->x + 1;
        M->ebusy[i] = 0;
        M->n_ebusy--;
    }
    return 0;
}

/* The engine fault of tile i's step at cycle u (the engine is frozen: fpend = u), caught up
 * by catch_up(i, k), k > u: every issue of cycles < k is done. */
__attribute__((noinline, cold)) static void eng_fault(Model *M, i64 i, Eng *E, i64 u, i64 k) {
    i64 vis = u + (E->fdata ? ENGINE_DATA_FAULT_VISIBLE_DELAY : STEP_FAULT_VISIBLE_DELAY);
    /* the MQ entry of cycle vis - 1 is the issue at vis - 5, whose fault is visible from vis */
    const MQ *q = MQE(M, i, vis - 1);
    if (q->cyc == vis - 1 && q->ifault) return;  /* dropped: that instruction's record wins */
    record_fault(M, i, vis, E->c_e, FAULT_ENGINE_FAULT, (u32)E->pc_e, (u32)E->faddr);
    schedule(M, i, E->c_e, vis, ST_FAULT);
    if (vis - 1 < k) M->pc[i * M->t + E->c_e] = (u32)E->pc_e;  /* the issue of vis - 1 is done */
    else E->pcfix = vis - 1;
}

/* c_e's final pc after a data fault, once the issue of cycle pcfix is done (k > pcfix). */
static inline void eng_pcfix(Model *M, i64 i, Eng *E, i64 k) {
    if (E->pcfix != NEVER && k > E->pcfix) {
        M->pc[i * M->t + E->c_e] = (u32)E->pc_e;
        E->pcfix = NEVER;
    }
}

/* mrun / mwait of entry q decided in its M cycle u (§12 "Instructions"), with the engine as
 * after the steps of cycles < u: busy (a frozen engine too) -> no effect, the context retries;
 * idle -> it retires, and an mrun's command is accepted at x = u. */
__attribute__((noinline, cold)) static void mq_engine(Model *M, i64 i, const MQ *q, i64 u) {
    if (M->ebusy[i]) return;
    i64 ic = i * M->t + q->ctx;
    if (q->kind == MQ_MRUN) {
        etouch(M, i);
        eng_start(M, i, ENG(M, i), u, q->addr, q->ctx, q->pc);
    }
    M->pc[ic] = q->pc + 4;
    M->retired[ic]++;
}

/* The store or load of entry q in its M cycle (§4): the SRAM write, or the SRAM read and rd. */
__attribute__((always_inline)) static inline void mq_memory(Model *M, i64 i, const MQ *q) {
    u32 *mem = M->sram + i * M->words;
    u8 *m8 = (u8 *)mem;
    u32 a = q->addr;
    if (q->kind == MQ_STORE) {
        if (M->window) {                   /* undo log (window sizes keep it from overflowing) */
            M->ulog[2 * M->ulog_n] = (u32)(i * M->words + (a >> 2));
            M->ulog[2 * M->ulog_n + 1] = mem[a >> 2];
            M->ulog_n++;
        }
        if (q->size == 1) m8[a] = (u8)q->val;
        else if (q->size == 2) ((u16 *)mem)[a >> 1] = (u16)q->val;
        else mem[a >> 2] = q->val;
        return;
    }
    u32 v;
    if (q->size == 4) v = mem[a >> 2];
    else if (q->size == 2) v = q->sgn ? (u32)(i32)(i16)((u16 *)mem)[a >> 1] : ((u16 *)mem)[a >> 1];
    else v = q->sgn ? (u32)(i32)(i8)m8[a] : m8[a];
    if (q->rd) M->regs[(i * M->t + q->ctx) * 32 + q->rd] = v;
}

/* Tile i through cycle k - 1 (see the memory-order note at the top): per cycle u, the
 * mrun/mwait decided in M = u, the engine step of u, the store/load whose M is u. */
__attribute__((noinline)) static void catch_slow(Model *M, i64 i, i64 k) {
    Eng *E = M->lanes ? ENG(M, i) : 0;
    if (E && E->pcfix != NEVER) { etouch(M, i); eng_pcfix(M, i, E, k); }
    for (i64 u = M->cur[i]; u < k; u++) {
        MQ *q = MQE(M, i, u);
        int here = q->cyc == u;
        if (here && q->kind >= MQ_MRUN) mq_engine(M, i, q, u);
        int active = M->ebusy[i] && E->fpend == NEVER;
        if (active && u > E->x && !M->xphase[i] && !(here && q->ls)) {
            etouch(M, i);
            if (eng_step(M, i, E, u)) eng_fault(M, i, E, u, k);
        }
        if (here && q->kind != MQ_NONE) {
            if (q->kind <= MQ_LOAD) mq_memory(M, i, q);
            else M->n_mrun_pend--;
            q->kind = MQ_NONE;
            M->mq_n[i]--;
            M->mq_total--;
        }
        if (M->mq_n[i] == 0 && !(M->ebusy[i] && E->fpend == NEVER)) break;  /* nothing left */
    }
    M->cur[i] = k;
}

/* (cur[i] is kept only while the tile has work: mq_push sets it when work appears) */
__attribute__((always_inline)) static inline void catch_up(Model *M, i64 i, i64 k) {
    if ((M->mq_n[i] == 0 && !M->ebusy[i]) || M->cur[i] >= k) return;
    if (!M->ebusy[i] && M->cur[i] == k - 1) {   /* the common case: one cycle, no engine */
        MQ *q = MQE(M, i, k - 1);
        if (q->cyc == k - 1 && q->kind != MQ_NONE) {
            if (q->kind > MQ_LOAD) { catch_slow(M, i, k); return; }
            mq_memory(M, i, q);
            q->kind = MQ_NONE;
            M->mq_n[i]--;
            M->mq_total--;
        }
        M->cur[i] = k;
        return;
    }
    catch_slow(M, i, k);
}

/* An instruction fault of context c issued at k (§7): FAULT and the record visible at k + 5. */
static void ifault(Model *M, i64 i, i64 c, i64 k, u32 cause, u32 pc, u32 addr) {
    i64 vis = k + STATE_VISIBLE_DELAY;
    if (M->lanes) MQE(M, i, k + M_DELAY)->ifault = 1;   /* (stamped by issue) */
    record_fault(M, i, vis, c, cause, pc, addr);
    schedule(M, i, c, vis, ST_FAULT);
}

/* Queue q (the entry of the issue at k) as ``kind`` work for M = k + 4. The tile is caught up
 * through k - 1 (issue), so a tile without work so far has its cursor set to k. */
__attribute__((always_inline)) static inline void mq_push(Model *M, i64 i, MQ *q, u8 kind, i64 k) {
    if (M->mq_n[i] == 0 && !M->ebusy[i]) M->cur[i] = k;
    q->cyc = k + M_DELAY;
    q->kind = kind;
    M->mq_n[i]++;
    M->mq_total++;
}

/* Log the store retired by context c of tile i at issue cycle k (rolled back with a window:
 * window() restores slog_n). Past the capacity only the count grows. */
static inline void slog_push(Model *M, i64 i, i64 c, i64 k, u32 pc, u32 a, u32 size, u32 v) {
    i64 n = M->slog_n++;
    if (n >= M->slog_cap) return;
    SLog *r = M->slog + n;
    u32 sh = a & 3;
    r->cycle = k; r->pc = pc; r->addr = a & ~3u; r->tile = (u32)i; r->ctx = (u16)c;
    r->data = v << (8 * sh);
    r->mask = (u8)((((1u << size) - 1) << sh) & 0xF);
    r->pad = 0;
}

/* The issue slot of context c on tile i at cycle k (§4). */
static inline void issue(Model *M, i64 i, i64 c, i64 k) {
    i64 ic = i * M->t + c;
    catch_up(M, i, k);                     /* the fetch sees the SRAM writes of cycles < k */
    if (M->stop) return;                   /* window: an engine fault in the catch-up */
    u32 pc = M->pc[ic];
    MQ *q = MQE(M, i, k + M_DELAY);        /* this issue's M-stage entry (consumed: < k) */
    int lanes = M->lanes != 0;
    /* with an engine every issue stamps its entry (the LOAD/STORE flag and the fault of the
     * engine cycle k + 4); without one only issues with M-stage work use it (mq_push) */
    if (lanes) { q->cyc = k + M_DELAY; q->kind = MQ_NONE; q->ls = 0; q->ifault = 0; }
    q->ctx = (u16)c;
    if (pc & 3) { ifault(M, i, c, k, FAULT_MISALIGNED_FETCH, pc, pc); return; }
    if ((i64)pc >= M->nbytes) { ifault(M, i, c, k, FAULT_ACCESS_FAULT_FETCH, pc, pc); return; }
    u32 w = M->sram[i * M->words + (pc >> 2)];
    if (lanes) q->ls = (w & 0x5F) == 0x03; /* opcode LOAD or STORE: M owns the data port */
    Dec d = decode(w);
    if (is_div_op(d.op)) {                 /* division turns (§4, "Division") */
        u32 nturn = M->dturn[ic];
        u32 j = (M->dword[ic] == w && nturn > 0) ? nturn : 0;
        if (j < DIV_TURNS - 1) { M->dword[ic] = w; M->dturn[ic] = (u8)(j + 1); return; }
        M->dturn[ic] = 0;
    } else {
        M->dturn[ic] = 0;
    }
    Exec e;
    e.x = M->regs + ic * 32;
    e.nbytes = M->nbytes;
    e.pc = pc;
    e.cycle = k; e.tile = i; e.ctx = c; e.ntiles = M->n; e.nctx = M->t;
    e.instret = M->retired[ic];
    e.xprog = M->xprog + i;
    e.slimit = M->slimit + ic;
    e.macs = 0;
    int r = isa_exec(&e, w, &d);
    switch (r) {
    case R_FAULT:
        if ((d.op == OP_MRUN || d.op == OP_MWAIT) && lanes) {   /* decided in M (§12) */
            q->addr = e.x[d.rs1];
            q->pc = pc;
            mq_push(M, i, q, d.op == OP_MRUN ? MQ_MRUN : MQ_MWAIT, k);
            M->n_mrun_pend++;
            return;                        /* pc and retire in M */
        }
        ifault(M, i, c, k, e.cause, pc, e.faddr);
        return;
    case R_LOAD:
        q->addr = e.m_addr; q->size = (u8)e.m_size; q->sgn = (u8)e.m_signed; q->rd = (u8)d.rd;
        if (!lanes) { q->ls = 1; q->ifault = 0; }
        mq_push(M, i, q, MQ_LOAD, k);
        break;
    case R_STORE:
        q->addr = e.m_addr; q->size = (u8)e.m_size; q->val = e.m_val;
        if (!lanes) { q->ls = 1; q->ifault = 0; }
        mq_push(M, i, q, MQ_STORE, k);
        if (M->slog) slog_push(M, i, c, k, pc, e.m_addr, e.m_size, e.m_val);
        break;
    case R_ECALL:
        M->exitc[ic] = e.x[10];
        schedule(M, i, c, k + STATE_VISIBLE_DELAY, ST_HALTED);
        M->tile_live[i]--;
        M->e_last[i] = k;
        /* the last ecall: every context HALTED from k + 5 (§7 "Stop") */
        if (--M->live == 0 && !M->window) stop_from(M, k + STATE_VISIBLE_DELAY);
        break;
    case R_SYNC_TILE: schedule(M, i, c, k + STATE_VISIBLE_DELAY, ST_WAIT_TILE); break;
    case R_SYNC_ARRAY: schedule(M, i, c, k + STATE_VISIBLE_DELAY, ST_WAIT_ARRAY); break;
    default: break;
    }
    M->pc[ic] = e.npc;
    M->retired[ic]++;
    if (e.macs) M->macs[i] += e.macs;
}

/* ============================================================================ 3. run loop */

enum {  /* pointer table order (fast/run.py builds it) */
    P_REGS, P_PC, P_VIS, P_PEND_STATE, P_PEND_CYCLE, P_RETIRED, P_EXIT, P_DTURN, P_DWORD,
    P_MACS, P_XPROG, P_SRAM, P_XPHASE, P_XPHASE_END, P_CAT, P_SINCE, P_ACC,
    P_X_INPROG, P_X_NEXT, P_X_PTR, P_BUS_VAL, P_BUS_VALID, P_SLOT_CYCLE,
    P_MQ, P_CUR, P_MQN,
    P_F_HAS, P_F_CTX, P_F_CAUSE, P_F_PC, P_F_ADDR, P_F_VIS,
    P_TEV, P_CNT, P_ARRIVED, P_NRUN_CTX, P_TILES4, P_ULOG, P_CKPT,
    P_ENG, P_EBUSY, P_ESNAP, P_ESNAP_GEN, P_ETOUCHED, P_EACC, P_ESNAP_ACC,
    P_SLIMIT, P_X_RUN_I, P_X_RUN_W, P_SLOG, P_COUNT
};

enum {  /* scalar slots (in and out) */
    G_N, G_T, G_NBYTES, G_LAT, G_SYNC_LAT, G_CYCLE, G_MAX, G_LIVE, G_RELEASE, G_ARMED,
    G_XNEXT, G_STOP, G_ULOG_CAP, G_WINDOWS, G_ROLLBACKS, G_LANES, G_DLAT, G_STOP_AT,
    G_SLOG_CAP, G_SLOG_N, G_COUNT
};


/* The state a window changes (besides SRAM, which has the undo log): (pointer, bytes). */
static int ckpt_fields(const Model *M, void **ptr, i64 *bytes) {
    i64 NT = M->n * M->t, N = M->n;
    int f = 0;
#define F(p, b) do { ptr[f] = (void *)(p); bytes[f] = (b); f++; } while (0)
    F(M->regs, NT * 32 * 4); F(M->pc, NT * 4); F(M->vis, NT); F(M->pend_state, NT);
    F(M->pend_cycle, NT * 8); F(M->retired, NT * 8); F(M->exitc, NT * 4); F(M->dturn, NT);
    F(M->dword, NT * 4); F(M->slimit, NT * 4);
    F(M->macs, N * 8); F(M->xprog, N * 4); F(M->xphase, N); F(M->xphase_end, N * 8);
    F(M->cat, N); F(M->since, N * 8); F(M->acc, 4 * N * 8);
    F(M->mq, N * MQ_RING * (i64)sizeof(MQ)); F(M->cur, N * 8);
    F(M->f_has, N); F(M->f_vis, N * 8);
    F(M->tile_live, N * 8); F(M->e_last, N * 8); F(M->arr_cycle, N * 8);
#undef F
    return f;
}

static void ckpt(Model *M, int save) {
    void *ptr[32];
    i64 bytes[32];
    int nf = ckpt_fields(M, ptr, bytes);
    u8 *b = M->ckpt;
    for (int f = 0; f < nf; f++) {
        if (save) copy_bytes(b, ptr[f], bytes[f]);
        else copy_bytes(ptr[f], b, bytes[f]);
        b += bytes[f];
    }
}

/** Bytes of the checkpoint buffer for N tiles of T contexts. */
i64 tsr_ckpt_bytes(i64 n, i64 t) {
    Model m = {0};
    m.n = n; m.t = t;
    void *ptr[32];
    i64 bytes[32], s = 0;
    int nf = ckpt_fields(&m, ptr, bytes);
    for (int f = 0; f < nf; f++) s += bytes[f];
    return s;
}

/** Bytes of one M-stage ring entry (MQ); the ring of N tiles has N * tsr_mq_ring() of them. */
i64 tsr_mq_bytes(void) { return (i64)sizeof(MQ); }
/** Bytes of one store-log entry (SLog). */
i64 tsr_slog_bytes(void) { return (i64)sizeof(SLog); }
/** Entries of the M-stage ring per tile. */
i64 tsr_mq_ring(void) { return MQ_RING; }

/* Derived scratch state (state counts, events, arrivals, pending M work) from the arrays. */
static void rebuild(Model *M) {
    i64 N = M->n, T = M->t;
    M->nrun = M->n_wa = M->n_arrived = M->n_xphase = 0;
    M->next_ev = NEVER;
    for (i64 c = 0; c < T; c++) M->nrun_ctx[c] = 0;
    M->mq_total = M->n_mrun_pend = 0;
    for (i64 i = 0; i < N; i++) {
        i64 *cn = M->cnt + i * 8;
        for (int s = 0; s < 8; s++) cn[s] = 0;
        for (i64 c = 0; c < T; c++) {
            u8 s = M->vis[i * T + c];
            cn[s]++;
            if (s == ST_RUNNING) { M->nrun_ctx[c]++; M->nrun++; }
            if (s == ST_WAIT_ARRAY) M->n_wa++;
        }
        M->arrived[i] = (u8)tile_arrived(M, i);
        M->n_arrived += M->arrived[i];
        M->n_xphase += M->xphase[i] != 0;
        retev(M, i);
        if (M->tev[i] < M->next_ev) M->next_ev = M->tev[i];
        M->mq_n[i] = 0;
        for (i64 r = 0; r < MQ_RING; r++) {
            const MQ *q = M->mq + i * MQ_RING + r;
            if (q->kind == MQ_NONE) continue;
            M->mq_n[i]++;
            M->mq_total++;
            if (q->kind >= MQ_MRUN) M->n_mrun_pend++;
        }
    }
    M->n_ebusy = 0;
    for (i64 i = 0; i < N; i++) {
        M->ebusy[i] = (u8)(M->lanes && ENG(M, i)->busy != 0);
        M->n_ebusy += M->ebusy[i];
    }
}

static inline int window_ok(const Model *M) {
    return M->release == NEVER && M->xnext == NEVER && M->n_xphase == 0 && M->stop_at == NEVER;
}

/* Lock step from cycle k: every tile, one global cycle at a time, until the stop, maxc, or
 * (if ``until_window``) a cycle at which windows may run again. Returns the next cycle. */
static i64 lockstep(Model *M, i64 k, i64 maxc, int until_window) {
    i64 N = M->n, T = M->t;
    i64 c = k % T;
    while (k < maxc && k < M->stop_at) {
        if (until_window && window_ok(M)) break;
        /* every tile through cycle k - 1 (engine faults of k - 1 are visible at k) */
        if (M->n_ebusy || M->mq_total)
            for (i64 i = 0; i < N; i++) catch_up(M, i, k);
        if (k >= M->next_ev) {             /* state changes visible at k, barrier decisions */
            i64 nx = NEVER;
            for (i64 i = 0; i < N; i++) {
                if (M->tev[i] <= k) tile_events(M, i, k);
                if (M->tev[i] < nx) nx = M->tev[i];
            }
            M->next_ev = nx;
        }
        if (M->release == k) do_release(M, k);
        if (!M->armed && M->n_arrived == N && M->n_wa > 0) {
            M->armed = 1;
            M->release = k + M->sync_lat;
        }
        if (M->xnext == k) exchange_step(M, k);
        if (M->nrun_ctx[c] > 0) {
            u8 *vis = M->vis + c;
            for (i64 i = 0; i < N; i++)
                if (vis[i * T] == ST_RUNNING) issue(M, i, c, k);
        }
        k++;
        if (++c == T) c = 0;
        /* nobody can issue and no engine steps: jump to the next event (pending loads and
         * stores are applied by the next catch-up; nothing sees them in between) */
        if (M->nrun == 0 && M->n_ebusy == 0 && M->n_mrun_pend == 0) {
            i64 nx = M->next_ev;
            if (M->release < nx) nx = M->release;
            if (M->xnext < nx) nx = M->xnext;
            if (M->stop_at < nx) nx = M->stop_at;
            if (maxc < nx) nx = maxc;
            if (nx > k) { k = nx; c = k % T; }
        }
    }
    return k;
}

/* Tile i alone from cycle k to k1 (window mode: no release, no exchange). Stops after a
 * fault, or (``stop_done``) after the tile's last ecall. Sets lk[i]. */
static void tile_run(Model *M, i64 i, i64 k, i64 k1, int stop_done) {
    i64 T = M->t;
    i64 c = k % T;
    const u8 *vis = M->vis + i * T;
    const i64 *cn = M->cnt + i * 8;
    /* a tile done before the window only has visibility changes left: they wait for the
     * catch-up, which knows where the run ends */
    if (stop_done && M->tile_live[i] == 0) k1 = k;
    while (k < k1) {
        if (M->tev[i] <= k) tile_events(M, i, k);
        if (vis[c] == ST_RUNNING) {
            issue(M, i, c, k);
            if (M->stop || (stop_done && M->tile_live[i] == 0)) { k++; break; }
        }
        k++;
        if (++c == T) c = 0;
        if (cn[ST_RUNNING] == 0) {          /* nothing to issue: jump to the tile's next event */
            i64 nx = M->tev[i] < k1 ? M->tev[i] : k1;
            if (nx > k) { k = nx; c = k % T; }
        }
    }
    M->lk[i] = k;
}

/* One window [k, k1). Returns the next cycle; sets M->stop_at when the last ecall was in it. */
static i64 window(Model *M, i64 k, i64 k1, i64 maxc, i64 *rollbacks) {
    i64 N = M->n;
    ckpt(M, 1);
    i64 live0 = M->live, slog0 = M->slog_n;
    M->ulog_n = 0;
    M->n_etouched = 0;
    M->gen++;
    M->window = 1;
    for (i64 i = 0; i < N && !M->stop; i++) tile_run(M, i, k, k1, 1);
    i64 ke = k1, C = NEVER;
    if (!M->stop) {
        if (M->live == 0) {                /* the last ecall at e: HALTED visible at e + 5 */
            i64 e = -1;
            for (i64 i = 0; i < N; i++) if (M->e_last[i] > e) e = M->e_last[i];
            C = e + STATE_VISIBLE_DELAY + M->dlat;
            ke = C < maxc ? C : maxc;
        }
        /* the tiles behind (and, after the last ecall, every tile until the stop) catch up */
        for (i64 i = 0; i < N && !M->stop; i++) if (M->lk[i] < ke) tile_run(M, i, M->lk[i], ke, 0);
        /* the M-stage work and the engines too (their faults in the window show now), but
         * not into an exchange phase: a release armed in this window starts one at ks + D */
        i64 kb = ke;
        if (M->live != 0 && M->n_arrived == N && M->n_wa > 0) {
            i64 ks = 0;
            for (i64 i = 0; i < N; i++) if (M->arr_cycle[i] > ks) ks = M->arr_cycle[i];
            if (ks + M->sync_lat < kb) kb = ks + M->sync_lat;
        }
        for (i64 i = 0; i < N && !M->stop; i++) catch_up(M, i, kb);
    }
    M->window = 0;
    if (M->stop) {                         /* a fault: roll back, re-run in lock step */
        for (i64 j = M->ulog_n - 1; j >= 0; j--) M->sram[M->ulog[2 * j]] = M->ulog[2 * j + 1];
        ckpt(M, 0);
        eng_restore(M);
        M->live = live0;
        M->slog_n = slog0;
        M->stop = 0;
        rebuild(M);
        (*rollbacks)++;
        return lockstep(M, k, maxc, 0);
    }
    i64 nx = NEVER;
    for (i64 i = 0; i < N; i++) if (M->tev[i] < nx) nx = M->tev[i];
    M->next_ev = nx;
    if (M->live == 0) {
        M->stop_at = C;
        return ke;
    }
    if (M->n_arrived == N && M->n_wa > 0) {  /* every tile arrived: idle since the last one */
        i64 ks = 0;
        for (i64 i = 0; i < N; i++) if (M->arr_cycle[i] > ks) ks = M->arr_cycle[i];
        M->armed = 1;
        M->release = ks + M->sync_lat;
        return M->release < k1 ? M->release : k1;
    }
    return k1;
}

/** Run from cycle g[G_CYCLE] until the stop or g[G_MAX]; returns 0.
 *  On return g[G_CYCLE] is the cycle count C, g[G_STOP_AT] the decided stop (NEVER: none) and
 *  g[G_STOP] is 1 if the run stopped (C = stop_at). The M-stage work still in flight at C
 *  (instructions issued at C - 4 .. C - 1) is applied with the engines frozen at C (§7 "Final
 *  state"); the ring keeps those issues' LOAD/STORE flags. */
i64 tsr_run(void **p, i64 *g) {
    Model m, *M = &m;
    M->n = g[G_N]; M->t = g[G_T]; M->nbytes = g[G_NBYTES]; M->words = g[G_NBYTES] / 4;
    M->lat = g[G_LAT]; M->sync_lat = g[G_SYNC_LAT]; M->dlat = g[G_DLAT];
    M->regs = p[P_REGS]; M->pc = p[P_PC]; M->vis = p[P_VIS]; M->pend_state = p[P_PEND_STATE];
    M->pend_cycle = p[P_PEND_CYCLE]; M->retired = p[P_RETIRED]; M->exitc = p[P_EXIT];
    M->dturn = p[P_DTURN]; M->dword = p[P_DWORD]; M->macs = p[P_MACS]; M->xprog = p[P_XPROG];
    M->slimit = p[P_SLIMIT];
    M->sram = p[P_SRAM]; M->xphase = p[P_XPHASE]; M->xphase_end = p[P_XPHASE_END];
    M->cat = p[P_CAT]; M->since = p[P_SINCE]; M->acc = p[P_ACC];
    M->x_inprog = p[P_X_INPROG]; M->x_next = p[P_X_NEXT]; M->x_ptr = p[P_X_PTR];
    M->x_run_i = p[P_X_RUN_I]; M->x_run_w = p[P_X_RUN_W];
    M->bus_val = p[P_BUS_VAL]; M->bus_valid = p[P_BUS_VALID]; M->slot_cycle = p[P_SLOT_CYCLE];
    M->mq = p[P_MQ]; M->cur = p[P_CUR]; M->mq_n = p[P_MQN];
    M->f_has = p[P_F_HAS]; M->f_ctx = p[P_F_CTX]; M->f_cause = p[P_F_CAUSE];
    M->f_pc = p[P_F_PC]; M->f_addr = p[P_F_ADDR]; M->f_vis = p[P_F_VIS];
    M->tev = p[P_TEV]; M->cnt = p[P_CNT]; M->arrived = p[P_ARRIVED]; M->nrun_ctx = p[P_NRUN_CTX];
    i64 *t4 = p[P_TILES4];
    i64 N = M->n, T = M->t;
    M->tile_live = t4; M->e_last = t4 + N; M->arr_cycle = t4 + 2 * N; M->lk = t4 + 3 * N;
    M->ulog = p[P_ULOG]; M->ulog_cap = g[G_ULOG_CAP]; M->ulog_n = 0;
    M->ckpt = p[P_CKPT];
    M->slog = g[G_SLOG_CAP] > 0 ? p[P_SLOG] : 0;
    M->slog_cap = g[G_SLOG_CAP]; M->slog_n = g[G_SLOG_N];
    M->live = g[G_LIVE]; M->release = g[G_RELEASE]; M->armed = g[G_ARMED];
    M->xnext = g[G_XNEXT]; M->stop = 0; M->window = 0;
    M->stop_at = g[G_STOP_AT];
    M->lanes = g[G_LANES];
    M->eng = p[P_ENG]; M->ebusy = p[P_EBUSY]; M->esnap = p[P_ESNAP]; M->esnap_gen = p[P_ESNAP_GEN];
    M->etouched = p[P_ETOUCHED]; M->n_etouched = 0; M->gen = 0;
    M->eacc = p[P_EACC]; M->esnap_acc = p[P_ESNAP_ACC];
    M->maxc = g[G_MAX];
    i64 k0 = g[G_CYCLE];
    for (i64 i = 0; i < N; i++) {
        M->esnap_gen[i] = -1;
        M->cur[i] = k0;                    /* nothing is in flight at a run's start */
    }

    rebuild(M);
    for (i64 i = 0; i < N; i++) {          /* live contexts per tile: not (about to be) halted */
        i64 l = 0;
        for (i64 c = 0; c < T; c++) {
            i64 ic = i * T + c;
            u8 s = M->pend_cycle[ic] != NEVER ? M->pend_state[ic] : M->vis[ic];
            l += s != ST_HALTED;
        }
        M->tile_live[i] = l;
        M->e_last[i] = -1;
        M->arr_cycle[i] = M->arrived[i] ? 0 : -1;
    }
    /* window length: the undo log holds at most 4 words per tile and cycle (a store, or an
     * engine write of up to two 8-byte words; run.py allocates ULOG_FACTOR = 5 times the
     * capacity), for the W cycles of a window plus the catch-up behind it (up to the
     * stop after the last ecall, e + 5 + D, or a release ks + D) */
    i64 W = M->ulog_cap / N - (STATE_VISIBLE_DELAY + M->dlat + 1);
    if (W > (1 << 20)) W = 1 << 20;
    i64 k = k0, maxc = g[G_MAX], windows = 0, rollbacks = 0;
    while (k < maxc && k < M->stop_at) {
        if (!window_ok(M) || W < 8) { k = lockstep(M, k, maxc, W >= 8); continue; }
        i64 k1 = maxc - k < W ? maxc : k + W;
        k = window(M, k, k1, maxc, &rollbacks);
        windows++;
    }
    /* the end of the run, C = k: every tile through C - 1, then the M-stage work in flight
     * (issued at C - 4 .. C - 1) with the engines frozen: nothing of cycles >= C steps */
    for (i64 i = 0; i < N; i++) catch_up(M, i, k);
    for (i64 i = 0; i < N; i++) {
        if (M->mq_n[i] == 0) continue;
        for (i64 u = k; u < k + MQ_RING; u++) {
            MQ *q = MQE(M, i, u);
            if (q->cyc != u || q->kind == MQ_NONE) continue;
            if (q->kind >= MQ_MRUN) mq_engine(M, i, q, u);
            else mq_memory(M, i, q);
            q->kind = MQ_NONE;
        }
        M->mq_n[i] = 0;
    }
    if (M->lanes)                          /* c_e's final pc = pc_e (data faults, §12) */
        for (i64 i = 0; i < N; i++) eng_pcfix(M, i, ENG(M, i), NEVER);
    g[G_CYCLE] = k;
    g[G_LIVE] = M->live; g[G_RELEASE] = M->release; g[G_ARMED] = M->armed;
    g[G_XNEXT] = M->xnext; g[G_STOP] = k >= M->stop_at; g[G_STOP_AT] = M->stop_at;
    g[G_WINDOWS] = windows; g[G_ROLLBACKS] = rollbacks;
    g[G_SLOG_N] = M->slog_n;
    return 0;
}

/** Bytes of one tile's matrix-engine record (Eng). */
i64 tsr_eng_bytes(void) { return (i64)sizeof(Eng); }

/** Field offsets of Eng, in the order of run.py's ENG_FIELDS; returns sizeof(Eng). */
i64 tsr_eng_layout(i64 *out) {
#define OFF(f) (i64)__builtin_offsetof(Eng, f)
    i64 offs[] = {OFF(busy), OFF(x), OFF(step), OFF(nsteps), OFF(c_e), OFF(d), OFF(pc_e),
                  OFF(busy_done), OFF(fpend), OFF(desc), OFF(bias), OFF(mult), OFF(shift),
                  OFF(S), OFF(g)};
#undef OFF
    for (int q = 0; q < (int)(sizeof(offs) / sizeof(offs[0])); q++) out[q] = offs[q];
    return (i64)sizeof(Eng);
}
/** Set the cursors of a busy engine record from its step number (after an import). */
i64 tsr_eng_seek(u8 *blob, i64 i, i64 lanes) {
    Eng *E = (Eng *)(blob + i * (i64)sizeof(Eng));
    i64 s = E->step;
    E->ph = PH_DESC; E->r = s; E->b = E->k0 = E->k1 = E->j = E->j0 = E->j1 = E->sub = 0;
    E->wj = E->wj0 = E->wj1 = E->ww = 0;
    E->nsteps = E->ws = NEVER;
    if (s < E_DESC_WORDS) return 0;
    Model m;
    m.lanes = lanes;
    if (!eng_parse(&m, E)) return -1;
    i64 C = E->C, J = E->J, q = s - E_DESC_WORDS;
    if (q < 2 * C) { E->ph = PH_PARAM; E->r = q; return 0; }
    q -= 2 * C;
    /* per k1: G gather step, then K0 blocks of C + J steps (the last block longer) */
    i64 grp = E->G + E->K0 * (C + J);
    i64 k1 = q / grp;
    if (k1 > E->K1 - 1) k1 = E->K1 - 1;
    i64 rq = q - k1 * grp;
    if (E->G && rq == 0) {
        E->ph = PH_GATHER; E->r = 0; E->k1 = k1; E->k0 = 0; E->b = k1 * E->K0;
        return 0;
    }
    rq -= E->G;
    i64 k0 = rq / (C + J);
    if (k0 > E->K0 - 1) k0 = E->K0 - 1;
    rq -= k0 * (C + J);
    i64 b = k1 * E->K0 + k0;
    E->b = b; E->k0 = k0; E->k1 = k1;
    if (rq < C) { E->ph = PH_LOAD; E->r = rq; }
    else {
        rq -= C;
        i64 ow = b == E->KB - 1 ? E->OW : 1;
        if (rq < J * ow) { E->ph = PH_STREAM; E->j = rq / ow; E->sub = rq % ow; }
        else { E->ph = PH_DRAIN; E->j = J; }
        E->j0 = E->j % E->J0; E->j1 = E->j / E->J0;
    }
    if (s >= E->ws) {
        i64 n = s - E->ws;
        E->wj = n / E->OW; E->ww = n % E->OW;
        E->wj0 = E->wj % E->J0; E->wj1 = E->wj / E->J0;
    }
    return 0;
}

/** Reset ``n`` zero-filled engine records to idle (host start, §9). */
i64 tsr_eng_reset(u8 *blob, i64 n) {
    for (i64 i = 0; i < n; i++) {
        Eng *E = (Eng *)(blob + i * (i64)sizeof(Eng));
        E->fpend = NEVER;
        E->pcfix = NEVER;
        E->nsteps = E->ws = NEVER;
    }
    return 0;
}

/** The ``engine`` counter of ``n`` tiles for cycles 0..C-1 (§8): out[i]. */
i64 tsr_eng_counters(const u8 *blob, i64 n, i64 C, i64 *out) {
    for (i64 i = 0; i < n; i++) {
        const Eng *E = (const Eng *)(blob + i * (i64)sizeof(Eng));
        i64 v = E->busy_done;
        if (E->busy && C > E->x) v += C - E->x;
        out[i] = v;
    }
    return 0;
}

/** Decode one word (for the decoder test): out = {op, rd, rs1, rs2, imm}. */
i64 tsr_decode(u32 w, i64 *out) {
    Dec d = decode(w);
    out[0] = d.op; out[1] = d.rd; out[2] = d.rs1; out[3] = d.rs2; out[4] = d.imm;
    return 0;
}
