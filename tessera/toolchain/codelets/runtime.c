/* Tessera graph runtime: the BSP "supervisor" every context of every tile runs (SPMD).
 *
 * crt0.S (tessera/toolchain/) sets up the stacks and calls main() in every context. main() reads
 * this tile's control table, placed by the graph compiler at the first 8-byte aligned
 * address after the program image (__image_end), and interprets it.
 *
 * Control table (32-bit little-endian words; docs/compiler.md, "Control table"):
 *   [0] TSR_CTRL_MAGIC   [1] number of top-level ops   [2..] ops, 3 words each:
 *   EXEC   a = worklist address (0: no vertex on this tile)  b = unused
 *          worklist = T words, one per context: address of that context's list
 *          list = count, then count entries (vertex record address, part, nparts);
 *          a record starts with the codelet's address, followed by its fields.
 *          Every context runs its entries, then `sync TILE`.
 *   EXCH   a = exchange program address (0: none); context 0 writes xprog, then every
 *          context runs `sync ARRAY` (the exchange phase follows the release).
 *   REPEAT a = iteration count   b = number of ops in the body (which follows).
 *   PROF   a = profile buffer address   b = capacity in records (optional, emitted first by
 *          compile_graph(profile=...)). Context 0 then records (tag, low word of the cycle
 *          CSR) at every superstep boundary: buffer = count, then count records of 2 words.
 *          tag = (flat op index << 4) | kind, kind: PROF start 0, EXEC done (after its
 *          sync TILE) 1, EXCH arrive (before sync ARRAY) 2, EXCH resume 3, end of table 15.
 * After the ops: T "current entry" words, one per context. Before calling a codelet a
 * context writes the address of its worklist entry there, and 0 when the codelet returns,
 * so after a fault or a timeout the host can name the vertex each context was running.
 */
#include <stdint.h>
#include "tessera.h"
#include "tsr_graph.h"

extern char __image_end[];

/* Profile state (context 0 only; .bss, zeroed by crt0). */
static volatile uint32_t *prof_buf;
static uint32_t prof_cap;
static const uint32_t *prof_ops;

static inline void prof_mark(const uint32_t *op, uint32_t kind)
{
    if (prof_buf) {
        uint32_t n = prof_buf[0];
        uint32_t t;
        __asm__ volatile("csrr %0, %1" : "=r"(t) : "i"(TSR_CSR_CYCLE));
        if (n < prof_cap) {
            prof_buf[1 + 2 * n] = ((uint32_t)(op - prof_ops) / 3u) << 4 | kind;
            prof_buf[2 + 2 * n] = t;
            prof_buf[0] = n + 1;
        }
    }
}

/* The "current entry" words (after the control table's ops); every context of the tile
 * stores the same address here. */
static volatile uint32_t *current;

static void run_exec(const uint32_t *worklist, uint32_t ctx)
{
    const uint32_t *list = (const uint32_t *)(uintptr_t)worklist[ctx];
    uint32_t n = list[0];
    const uint32_t *e = list + 1;
    volatile uint32_t *cur = current + ctx;
    for (uint32_t i = 0; i < n; i++, e += 3) {
        const uint32_t *rec = (const uint32_t *)(uintptr_t)e[0];
        tsr_vertex_fn fn = (tsr_vertex_fn)(uintptr_t)rec[0];
        *cur = (uint32_t)(uintptr_t)e;
        fn(rec + 1, e[1], e[2]);
        *cur = 0;
    }
    tsr_sync_tile();
}

static void run_ops(const uint32_t *op, uint32_t nops, uint32_t ctx)
{
    for (uint32_t i = 0; i < nops; i++, op += 3) {
        switch (op[0]) {
        case TSR_OP_EXEC:
            if (op[1])
                run_exec((const uint32_t *)(uintptr_t)op[1], ctx);
            if (ctx == 0)
                prof_mark(op, 1);
            break;
        case TSR_OP_EXCH:
            if (ctx == 0) {
                prof_mark(op, 2);
                tsr_set_xprog((const void *)(uintptr_t)op[1]);
            }
            tsr_sync_array();
            if (ctx == 0)
                prof_mark(op, 3);
            break;
        case TSR_OP_REPEAT:
            for (uint32_t k = 0; k < op[1]; k++)
                run_ops(op + 3, op[2], ctx);
            i += op[2];
            op += 3 * op[2];
            break;
        case TSR_OP_PROF:
            if (ctx == 0) {
                prof_ops = op;
                prof_buf = (volatile uint32_t *)(uintptr_t)op[1];
                prof_cap = op[2];
                prof_buf[0] = 0;
                prof_mark(op, 0);
            }
            break;
        default:
            tsr_halt(TSR_EXIT_BAD_OP);
        }
    }
}

int main(void)
{
    uintptr_t base = ((uintptr_t)__image_end + 7u) & ~(uintptr_t)7u;
    const uint32_t *ctrl = (const uint32_t *)base;
    if (ctrl[0] != TSR_CTRL_MAGIC)
        return TSR_EXIT_BAD_MAGIC;
    uint32_t ctx = tsr_context_id();
    current = (volatile uint32_t *)(ctrl + 2 + 3 * ctrl[1]);
    run_ops(ctrl + 2, ctrl[1], ctx);
    if (ctx == 0)
        prof_mark(ctrl + 2 + 3 * ctrl[1], 15);
    return 0;
}
