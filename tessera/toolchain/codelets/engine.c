/* Matrix-engine codelet (docs/compiler.md, "Matrix engine"; docs/architecture.md section 12).
 *
 * The host precomputes every command's 64-byte descriptor (tessera/toolchain/kernels/engine.py)
 * and places the table, 8-byte aligned, in the tile's SRAM with the data, so the codelet is
 * only "mrun; mrun; ...; mwait". Part 0 issues the whole table from one context: an mrun
 * retries (without effect) while the engine is busy, so each command starts in the first
 * issue slot after the previous one ends. The other parts return at once and wait at the
 * compute set's TILE barrier without issuing (their loads and stores would take engine
 * cycles: section 12, "Engine cycles"). Commands run in order and each one's writes are done
 * before the next one starts, so a table may chain layers (a command reading another's
 * output).
 */
#include <stdint.h>
#include "tessera.h"
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(const uint8_t, desc);   /* count descriptors of TSR_MDESC_BYTES */
    uint32_t count;
} tsk_engine_fields;

void tsk_engine(const tsk_engine_fields *f, uint32_t part, uint32_t nparts)
{
    (void)nparts;
    if (part != 0)
        return;
    const tsr_mdesc *d = (const tsr_mdesc *)f->desc, *end = d + f->count;
    for (; d != end; d++)
        tsr_mrun(d);
    tsr_mwait();
}
