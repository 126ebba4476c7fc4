/* vecsum.c -- the `tessera demo` program: SPMD sum of an int8 vector.
 *
 * The host places each tile's slice of the vector in `args` (section .noinit, so crt0 does
 * not zero it) before the run. Then, on every tile:
 *   1. context c sums the words c, c+T, c+2T, ... of the slice with dot4 against 0x01010101
 *      (each word holds 4 int8 elements) and stores its partial sum;
 *   2. sync TILE; contexts other than 0 halt with their partial sum as exit code;
 *   3. context 0 adds the partials into tile_sum, builds an all-gather exchange program
 *      (step k: tile k sends tile_sum; every tile receives tile k-L's word into gathered[k-L])
 *      and waits at the ARRAY barrier; the exchange runs at the release;
 *   4. context 0 adds gathered[0..N-1] and halts with the array total as exit code.
 * Compile with -DTSR_XLATENCY=L for an array with exchange latency L.
 */
#include <tessera.h>

#define VECSUM_MAX_TILES 64
#define VECSUM_MAX_WORDS 1024
#define VECSUM_MAX_CONTEXTS 16

struct vecsum_args {
    uint32_t nwords;                       /* words (4 int8 each) in this tile's slice */
    uint32_t reserved;
    uint32_t data[VECSUM_MAX_WORDS];       /* the slice, 4 int8 per word, little-endian */
};

__attribute__((section(".noinit"), aligned(8))) struct vecsum_args args;

int32_t partial[VECSUM_MAX_CONTEXTS];
int32_t tile_sum;
int32_t gathered[VECSUM_MAX_TILES];
tsr_xstep_t xprog[VECSUM_MAX_TILES + 64 + 1];

int main(void) {
    uint32_t c = tsr_context_id(), T = tsr_context_count();
    uint32_t n = args.nwords;
    int32_t acc = 0;
    if (n > VECSUM_MAX_WORDS || T > VECSUM_MAX_CONTEXTS)
        return -1;
    for (uint32_t i = c; i < n; i += T)
        acc = tsr_dot4(acc, args.data[i], 0x01010101u);
    partial[c] = acc;
    tsr_sync_tile();
    if (c != 0)
        return acc;

    int32_t s = 0;
    for (uint32_t i = 0; i < T; i++)
        s += partial[i];
    tile_sum = s;

    uint32_t N = tsr_tile_count(), me = tsr_tile_id(), L = TSR_XLATENCY, k, m = 0;
    if (N > VECSUM_MAX_TILES)
        return -2;
    for (k = 0; k < N + L; k++) {
        int send = (k == me), recv = (k >= L);
        uint32_t src = recv ? k - L : 0;
        xprog[m++] = TSR_XSTEP(send, &tile_sum, recv, 0, src, &gathered[src]);
    }
    xprog[m++] = TSR_XEND();
    tsr_set_xprog(xprog);
    tsr_sync_array();

    int32_t total = 0;
    for (uint32_t i = 0; i < N; i++)
        total += gathered[i];
    return total;
}
