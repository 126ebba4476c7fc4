/* ring.c -- ring shift over the exchange: tile t receives tile (t-1) mod N's word.
 * Context 0 of each tile builds the exchange program with the tessera.h helpers
 * (send at step 0, receive L cycles later from relative source N-1) and returns the
 * received word (t-1 mod N) * 7 + 1; the other contexts return 0 at once.
 * Compile with -DTSR_XLATENCY=L for an array with exchange latency L. */
#include <tessera.h>

int32_t mine;
int32_t got;
tsr_xstep_t ring_prog[4];

int main(void) {
    if (tsr_context_id() != 0)
        return 0;
    uint32_t n = tsr_tile_count(), me = tsr_tile_id();
    int k = 0;
    mine = (int32_t)(me * 7 + 1);
    got = -1;
    ring_prog[k++] = TSR_XSEND(&mine);
    if (TSR_XLATENCY > 1)
        ring_prog[k++] = TSR_XIDLE(TSR_XLATENCY - 1);
    ring_prog[k++] = TSR_XRECV_REL(n - 1, &got);
    ring_prog[k++] = TSR_XEND();
    tsr_set_xprog(ring_prog);
    tsr_sync_array();
    return got;
}
