/* Requantize codelet: int32 accumulators -> int8, bit-exact with
 * tessera.golden_model.kernels.requantize (TFLite MultiplyByQuantizedMultiplier, double rounding):
 *
 *   x   = acc[i] + bias[c]                       (32-bit wrapping add)
 *   y   = RDBPOT(SRDHM(x << left, mult[c]), right)   left = max(shift,0), right = max(-shift,0)
 *   out = clamp(y, lo - zp, 127 - zp) + zp       lo = zp if relu else -128
 *
 * c = (c0 + i) mod channels is the channel of element i (the last axis of a row-major
 * [..., C] tensor whose slice starts at channel c0). params is int32 [channels][3]:
 * (bias, multiplier, shift). Parts take contiguous chunks of the elements.
 * SRDHM rounds half toward +inf, RDBPOT rounds half away from zero (see the reference).
 *
 * Speed: each part walks its chunk channel-major (element i, i + C, i + 2C, ... share one
 * channel), so the per-channel parameters and rounding constants live in registers and the
 * inner loop is straight 32-bit code. With P = x * m = hi * 2^32 + lo (mulh / mul):
 *
 *   s = SRDHM(x, m) = floor((P + 2^30) / 2^31) = 2 hi + ((lo >> 30) + 1) >> 1   (fits int32
 *       unless x = m = INT32_MIN, the saturating case, which takes the generic loop)
 *   right = e >= 1:  RDBPOT(s, e) = floor((s + 2^(e-1) - neg) / 2^e), neg = [s < 0]
 *       and neg may be taken as [P < 0] = [hi < 0]: the two differ only when s = 0, where
 *       both give 0. Folding the floors:
 *       y = (hi + ((lo >> 30) + 1 + 2^e - 2 neg) >> 2) >> (e - 1)
 *       where the inner sum is in 0 .. 2^31 + 4 (unsigned) and |hi| < 2^30, so nothing wraps.
 *
 * The output is written through a plain pointer (byte stores at stride C: no memset/memcpy
 * idiom the compiler could turn into a library call). */
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

static inline int32_t mul_hi(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * (int64_t)b) >> 32);       /* one mulh */
}

/* RDBPOT(SRDHM(x, m), e) for e >= 1, m != INT32_MIN; k = 1 + 2^e, e1 = e - 1. */
static inline int32_t rq_right(int32_t x, int32_t m, uint32_t k, uint32_t e1)
{
    uint32_t lo = (uint32_t)x * (uint32_t)m;
    int32_t hi = mul_hi(x, m);
    uint32_t t = (lo >> 30) + k + 2u * (uint32_t)(hi >> 31);   /* hi >> 31 = -neg */
    return (hi + (int32_t)(t >> 2)) >> e1;
}

/* SRDHM(x, m) for m != INT32_MIN (x already shifted left). */
static inline int32_t rq_left(int32_t x, int32_t m)
{
    uint32_t lo = (uint32_t)x * (uint32_t)m;
    int32_t hi = mul_hi(x, m);
    return (int32_t)(((uint32_t)hi << 1) + (((lo >> 30) + 1u) >> 1));
}

static inline int8_t rq_out(int32_t y, int32_t ymin, int32_t ymax, int32_t zp)
{
    if (y < ymin)
        y = ymin;
    if (y > ymax)
        y = ymax;
    return (int8_t)(y + zp);
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
    const uint32_t kend = hi - lo < C ? hi - lo : C;
    const int32_t *const end = f->acc + hi;
    uint32_t c = (f->c0 + lo) % C;
    for (uint32_t k = 0; k < kend; k++) {
        const int32_t *p = f->params + 3 * c;
        const int32_t bias = p[0], m = p[1], shift = p[2];
        const int32_t *a = f->acc + lo + k;
        int8_t *o = f->out + lo + k;
        if (m == INT32_MIN) {                      /* may saturate: the reference formula */
            uint32_t left = shift > 0 ? (uint32_t)shift : 0u;
            uint32_t right = shift < 0 ? (uint32_t)-shift : 0u;
            for (; a < end; a += C, o += C) {
                int32_t x = (int32_t)(((uint32_t)*a + (uint32_t)bias) << left);
                *o = rq_out(rdbpot(srdhm(x, m), right), ymin, ymax, zp);
            }
        } else if (shift < 0) {
            const uint32_t e = (uint32_t)-shift;
            const uint32_t kk = 1u + (1u << e), e1 = e - 1u;
            for (; a < end; a += C, o += C) {
                int32_t x = (int32_t)((uint32_t)*a + (uint32_t)bias);
                *o = rq_out(rq_right(x, m, kk, e1), ymin, ymax, zp);
            }
        } else {
            const uint32_t left = (uint32_t)shift;
            for (; a < end; a += C, o += C) {
                int32_t x = (int32_t)(((uint32_t)*a + (uint32_t)bias) << left);
                *o = rq_out(rq_left(x, m), ymin, ymax, zp);
            }
        }
        if (++c == C)
            c = 0;
    }
}
