/* Local copy codelet: used by the graph compiler for a Copy whose source and
 * destination lie on the same tile. Parts split the bytes into contiguous chunks. */
#include <stdint.h>
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(uint8_t, dst);
    TSR_FIELD(const uint8_t, src);
    uint32_t nbytes;
} tsr_copy_fields;

void tsr_copy(const tsr_copy_fields *f, uint32_t part, uint32_t nparts)
{
    uint32_t n = f->nbytes;
    uint32_t chunk = (n + nparts - 1) / nparts;
    uint32_t lo = part * chunk, hi = lo + chunk;
    if (hi > n)
        hi = n;
    uint8_t *d = f->dst;
    const uint8_t *s = f->src;
    uint32_t i = lo;
    if ((((uintptr_t)d ^ (uintptr_t)s) & 3u) == 0) {
        for (; i < hi && ((uintptr_t)(d + i) & 3u); i++)
            d[i] = s[i];
        for (; i + 4 <= hi; i += 4)
            *(volatile uint32_t *)(d + i) = *(const uint32_t *)(s + i);
    }
    for (; i < hi; i++)
        ((volatile uint8_t *)d)[i] = s[i];
}
