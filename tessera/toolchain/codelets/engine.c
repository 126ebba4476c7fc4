/* Matrix-engine codelet (docs/compiler.md, "Matrix engine"; docs/architecture.md section 12).
 *
 * The host precomputes every command's 64-byte descriptor (tessera/toolchain/kernels/engine.py)
 * and places the table, 8-byte aligned, in the tile's SRAM with the data, so the codelet is
 * only "mrun; mrun; ...; mwait". The runtime has already issued the tile's first command
 * (the control table's EXEC word b, runtime.c) before dispatching this vertex, so `desc` and
 * `count` are the remaining descriptors (count may be 0: then only the mwait). The vertex is
 * one part (Codelet.single) on one context: an mrun retries (without effect) while the engine
 * is busy, so each command starts in the first issue slot after the previous one ends. The
 * other contexts have no entry and wait at the compute set's TILE barrier without loads or
 * stores (which would take engine cycles: section 12, "Engine cycles"). Commands run in
 * order and each one's writes are done before the next one starts, so a table may chain
 * layers (a command reading another's output). A kernel with independent commands may split
 * its table over several such vertices pinned to contexts T/2 (or T/3) apart
 * (add_engine_vertex(independent=True)): each spins on its own next mrun, and the engine
 * takes whichever comes first after a command ends; each vertex ends with its own mwait.
 */
#include <stdint.h>
#include "tessera.h"
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(const uint8_t, desc);   /* count descriptors of TSR_MDESC_BYTES (count may be 0) */
    uint32_t count;
} tsk_engine_fields;

/* In assembly (naked: no stack frame; the compiler saved ra/s0 around the loop), because the
 * instructions before the first mrun and after the mwait are on the compute set's critical
 * path at one issue slot every T cycles. Equivalent C (part is always 0 of 1; the check
 * stays for a hand-built worklist that splits the vertex):
 *     if (part != 0) return;
 *     for (d = f->desc; d != f->desc + f->count; d++) tsr_mrun(d);
 *     tsr_mwait();                                                             */
__attribute__((naked)) void tsk_engine(const tsk_engine_fields *f, uint32_t part,
                                       uint32_t nparts)
{
    __asm__ volatile(
        "bnez a1, 2f\n"
        "lw a2, 8(a0)\n"                       /* count */
        "lw a0, 0(a0)\n"                       /* desc */
        "beqz a2, 1f\n"
        "slli a2, a2, 6\n"                     /* TSR_MDESC_BYTES = 64 */
        "add a2, a2, a0\n"
        "3: .insn r " TSR_STR(TSR_OPCODE_CUSTOM_0) ", " TSR_STR(TSR_FUNCT3_MRUN) ", 0, x0, a0, x0\n"
        "addi a0, a0, " TSR_STR(TSR_MDESC_BYTES) "\n"
        "bne a0, a2, 3b\n"
        "1: .insn i " TSR_STR(TSR_OPCODE_CUSTOM_0) ", " TSR_STR(TSR_FUNCT3_MWAIT) ", x0, x0, 0\n"
        "2: ret\n");
}
_Static_assert(TSR_MDESC_BYTES == 64, "tsk_engine shifts the count by 6");
_Static_assert(__builtin_offsetof(tsk_engine_fields, count) == 8, "tsk_engine field offsets");
