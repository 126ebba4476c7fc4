/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_rqf: out[s*os_s + p*os_p + m*os_m] = clamp(rne(fl32(fl32(x) * M[m])), ylo, yhi) + zp with
 * x = acc[row][m], row = s*P + p (P rows per sample, M channels per row).
 *
 * params per channel m (4 words): 0 (unused), mant = m' (the 24-bit mantissa of M shifted left
 * by k), r (M = m' * 2^-(32 + r); r >= 16 means "no fast path": M >= 1 or M < 2^-24), and
 * (k << 16) | (e & 0xffff) with M = mantissa * 2^e.
 * Fast path (|x| < 2^24, so fl32(x) = x): p = |x| * m' exactly (mul/mulhu), floor(v) = hi >> r,
 * t16 = the top 16 bits of the (32 + r)-bit fraction; unless t16 is 0x7fff..0x8001 (the exact
 * product lies within 2^-16 of a half-integer, where the float32 rounding of the product could
 * decide the result) the result is floor(v) + (fraction > 1/2). Otherwise the slow path
 * emulates fl32(x), the float32 product and rne exactly. */
typedef struct {
    TSR_FIELD(const int32_t, acc);
    TSR_FIELD(uint8_t, out);
    TSR_FIELD(const int32_t, params);
    uint32_t rows, P, M, os_s, os_p, os_m;
    int32_t zp, ylo, yhi;
} tso_rqf_fields;

static int32_t rqf_slow(int32_t x, uint32_t mant24, int32_t e)
{
    if (x == 0)
        return 0;
    uint32_t ax = x < 0 ? 0u - (uint32_t)x : (uint32_t)x;
    int32_t ea = 0;
    uint32_t ma = round24(ax, &ea);                    /* fl32(x) */
    int32_t E = ea + e;
    uint32_t q = round24((uint64_t)ma * mant24, &E);   /* fl32(fl32(x) * M) */
    uint32_t y = rne_scaled(q, E);
    return x < 0 ? -(int32_t)y : (int32_t)y;
}

/* One channel, rows [row, end) of one output block: the fast loop (no calls, everything in
 * registers) flags the elements the fast path cannot decide; only then a second pass redoes
 * those exactly. */
static void rqf_run(const int32_t *a, uint32_t astep, uint8_t *o, uint32_t ostep, uint32_t n,
                    const int32_t *pm, int32_t zp, int32_t qlo, int32_t qhi)
{
    const uint32_t mant = (uint32_t)pm[1], r = (uint32_t)pm[2];
    const uint32_t mant24 = mant >> (uint32_t)(pm[3] >> 16);
    const int32_t e = (int32_t)(int16_t)pm[3];
    uint32_t bad = r >= 16u;
    if (!bad) {
        const uint32_t mask = (1u << r) - 1u, sl = 16u - r, sr = 16u + r;
        const int32_t *pa = a;
        uint8_t *po = o;
        for (uint32_t k = 0; k < n; k++, pa += astep, po += ostep) {
            const int32_t x = *pa;
            const int32_t neg = x >> 31;
            const uint32_t ax = (uint32_t)((x ^ neg) - neg);
            const uint64_t prod = (uint64_t)ax * mant;
            const uint32_t hi = (uint32_t)(prod >> 32), lo = (uint32_t)prod;
            const uint32_t t16 = ((hi & mask) << sl) | (lo >> sr);
            bad |= (uint32_t)(t16 - 0x7fffu <= 2u) | (ax >> 24);
            int32_t y = (((int32_t)((hi >> r) + (t16 >> 15))) ^ neg) - neg;
            y += zp;
            y = y < qlo ? qlo : y;
            y = y > qhi ? qhi : y;
            *po = (uint8_t)y;
        }
        if (!bad)
            return;
    }
    for (uint32_t k = 0; k < n; k++, a += astep, o += ostep) {
        const int32_t x = *a;
        const uint32_t ax = x < 0 ? 0u - (uint32_t)x : (uint32_t)x;
        if (r < 16u && (ax >> 24) == 0) {
            const uint64_t prod = (uint64_t)ax * mant;
            const uint32_t hi = (uint32_t)(prod >> 32), lo = (uint32_t)prod;
            const uint32_t t16 = ((hi & ((1u << r) - 1u)) << (16u - r)) | (lo >> (16u + r));
            if (t16 - 0x7fffu > 2u)
                continue;                         /* decided by the fast loop */
        }
        int32_t y = rqf_slow(x, mant24, e) + zp;
        y = y < qlo ? qlo : y;
        y = y > qhi ? qhi : y;
        *o = (uint8_t)y;
    }
}

void tso_rqf(const tso_rqf_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t rows = f->rows, M = f->M, P = f->P;
    uint32_t chunk = (rows + nparts - 1) / nparts;
    uint32_t r0 = part * chunk, r1 = r0 + chunk;
    if (r1 > rows)
        r1 = rows;
    if (r0 >= r1)
        return;
    const int32_t *const acc = f->acc;
    uint8_t *const out = f->out;
    const int32_t zp = f->zp, qlo = f->ylo + zp, qhi = f->yhi + zp;
    const uint32_t os_s = f->os_s, os_p = f->os_p, os_m = f->os_m;
    const int32_t *const params = f->params;
    uint32_t s = r0 / P, p = r0 - s * P;
    for (uint32_t row = r0; row < r1;) {
        uint32_t end = (s + 1) * P;
        if (end > r1)
            end = r1;
        const uint32_t n = end - row;
        for (uint32_t m = 0; m < M; m++)
            rqf_run(acc + row * M + m, M, out + s * os_s + p * os_p + m * os_m, os_p, n,
                    params + 4 * m, zp, qlo, qhi);
        row = end;
        s++;
        p = 0;
    }
}

