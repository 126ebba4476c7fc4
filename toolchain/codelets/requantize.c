/* Requantize codelet: int32 accumulators -> int8, bit-exact with
 * golden_model.kernels.requantize (TFLite MultiplyByQuantizedMultiplier, double rounding):
 *
 *   x   = acc[i] + bias[c]                       (32-bit wrapping add)
 *   y   = RDBPOT(SRDHM(x << left, mult[c]), right)   left = max(shift,0), right = max(-shift,0)
 *   out = clamp(y, lo - zp, 127 - zp) + zp       lo = zp if relu else -128
 *
 * c = (c0 + i) mod channels is the channel of element i (the last axis of a row-major
 * [..., C] tensor whose slice starts at channel c0). params is int32 [channels][3]:
 * (bias, multiplier, shift). Parts take contiguous chunks of the elements.
 * SRDHM rounds half toward +inf, RDBPOT rounds half away from zero (see the reference). */
#include <stdint.h>
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(const int32_t, acc);
    TSR_FIELD(int8_t, out);
    TSR_FIELD(const int32_t, params);
    uint32_t channels, c0;
    int32_t zp;
    uint32_t relu;
} tsr_requant_fields;

static inline int32_t srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN)
        return INT32_MAX;
    int64_t ab = (int64_t)a * (int64_t)b;
    return (int32_t)((ab + (1LL << 30)) >> 31);
}

static inline int32_t rdbpot(int32_t x, uint32_t e)
{
    int32_t mask = (int32_t)((1u << e) - 1u);
    int32_t rem = x & mask;
    int32_t thr = (mask >> 1) + (x < 0);
    return (x >> e) + (rem > thr);
}

void tsr_requant(const tsr_requant_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t n = f->acc_n, C = f->channels;
    uint32_t chunk = (n + nparts - 1) / nparts;
    uint32_t lo = part * chunk, hi = lo + chunk;
    if (hi > n)
        hi = n;
    if (lo >= hi)
        return;
    const int32_t zp = f->zp;
    const int32_t ymin = (f->relu ? zp : -128) - zp, ymax = 127 - zp;
    uint32_t c = (f->c0 + lo) % C;
    const int32_t *acc = f->acc;
    volatile int8_t *out = f->out;
    for (uint32_t i = lo; i < hi; i++) {
        const int32_t *p = f->params + 3 * c;
        int32_t shift = p[2];
        uint32_t left = shift > 0 ? (uint32_t)shift : 0u;
        uint32_t right = shift < 0 ? (uint32_t)-shift : 0u;
        int32_t x = (int32_t)((uint32_t)acc[i] + (uint32_t)p[0]);
        x = (int32_t)((uint32_t)x << left);
        int32_t y = rdbpot(srdhm(x, p[1]), right);
        if (y < ymin)
            y = ymin;
        if (y > ymax)
            y = ymax;
        out[i] = (int8_t)(y + zp);
        if (++c == C)
            c = 0;
    }
}
