/* ONNX float32 arithmetic with integer instructions only (docs/architecture.md §11), bit-exact
 * with golden_model.kernels.float_quant:
 *
 *   tso_rqf      int32 accumulators -> 8-bit codes, y = clamp(rne(fl32(fl32(acc) * M))) + zp
 *   tso_quant    float32 -> 8-bit codes, ONNX QuantizeLinear (threshold table search)
 *   tso_dequant  8-bit / int32 codes -> float32, ONNX DequantizeLinear
 *
 * float32 values are carried as their IEEE-754 bit patterns in 32-bit words.
 * Every codelet splits its elements into contiguous chunks, one per part. */
#include <stdint.h>
#include "tsr_graph.h"

static inline uint32_t bitlen32(uint32_t v)
{
    uint32_t n = 0;
    if (v >> 16) { n += 16; v >>= 16; }
    if (v >> 8) { n += 8; v >>= 8; }
    if (v >> 4) { n += 4; v >>= 4; }
    if (v >> 2) { n += 2; v >>= 2; }
    if (v >> 1) { n += 1; v >>= 1; }
    return n + v;
}

static inline uint32_t bitlen64(uint64_t v)
{
    uint32_t hi = (uint32_t)(v >> 32);
    return hi ? 32 + bitlen32(hi) : bitlen32((uint32_t)v);
}

/* Round v (< 2^64) to 24 significant bits, nearest even: returns the mantissa (< 2^24) and
 * adds the number of dropped bits to *e. */
static uint32_t round24(uint64_t v, int32_t *e)
{
    uint32_t L = bitlen64(v);
    if (L <= 24)
        return (uint32_t)v;
    uint32_t d = L - 24;
    uint64_t q = v >> d, rem = v & ((1ull << d) - 1), half = 1ull << (d - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    if (q == (1ull << 24)) {
        q >>= 1;
        d++;
    }
    *e += (int32_t)d;
    return (uint32_t)q;
}

/* rne(q * 2^e) for q < 2^24 (a magnitude), saturating at 2^30. */
static uint32_t rne_scaled(uint32_t q, int32_t e)
{
    if (e >= 0)
        return (e >= 30 || (q >> (30 - e)) != 0) ? (1u << 30) : q << e;
    uint32_t d = (uint32_t)-e;
    if (d > 26)
        return 0;
    uint32_t y = q >> d, rem = q & ((1u << d) - 1), half = 1u << (d - 1);
    if (rem > half || (rem == half && (y & 1)))
        y++;
    return y;
}

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

/* ---------------------------------------------------------------------------------------
 * tso_quant: ONNX QuantizeLinear. tab is int32 [C][256]: tab[c][k] (k = 1..255) is the
 * ordered key of the smallest float32 x whose code is at least qmin + k (key = bits for
 * x >= +0, bits ^ 0x7fffffff below, so keys order like the floats). The code is qmin + the
 * number of thresholds <= key (an 8-step binary search); NaN gives qmin.
 * Element i has channel (i / inner) % C. */
typedef struct {
    TSR_FIELD(const int32_t, x);
    TSR_FIELD(uint8_t, y);
    TSR_FIELD(const int32_t, tab);
    uint32_t n, inner, C;
    int32_t qmin;
} tso_quant_fields;

void tso_quant(const tso_quant_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t n = f->n, inner = f->inner, C = f->C;
    uint32_t chunk = (n + nparts - 1) / nparts;
    uint32_t i0 = part * chunk, i1 = i0 + chunk;
    if (i1 > n)
        i1 = n;
    if (i0 >= i1)
        return;
    const int32_t *const X = f->x;
    uint8_t *const Y = f->y;
    const int32_t *const tab = f->tab;
    const int32_t qmin = f->qmin;
    uint32_t blk = i0 / inner, in = i0 - blk * inner, c = blk % C;
    const int32_t *t = tab + 256 * c;
    for (uint32_t i = i0; i < i1; i++) {
        const int32_t b = X[i];
        uint32_t j = 0;
        if (((uint32_t)b & 0x7fffffffu) <= 0x7f800000u) {   /* not NaN */
            const int32_t key = b ^ ((b >> 31) & 0x7fffffff);
            j = (t[128] <= key) ? 128u : 0u;
            j += (t[j + 64] <= key) ? 64u : 0u;
            j += (t[j + 32] <= key) ? 32u : 0u;
            j += (t[j + 16] <= key) ? 16u : 0u;
            j += (t[j + 8] <= key) ? 8u : 0u;
            j += (t[j + 4] <= key) ? 4u : 0u;
            j += (t[j + 2] <= key) ? 2u : 0u;
            j += (t[j + 1] <= key) ? 1u : 0u;
        }
        Y[i] = (uint8_t)(qmin + (int32_t)j);
        if (++in == inner) {
            in = 0;
            if (++c == C)
                c = 0;
            t = tab + 256 * c;
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * tso_dequant: ONNX DequantizeLinear, y = fl32(fl32(x - zp) * scale) as float32 bits.
 * params per channel (2 words): zp, scale bits (a normal positive float32).
 * kind 0: int8 input, 1: uint8, 2: int32. */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(int32_t, y);
    TSR_FIELD(const int32_t, params);
    uint32_t n, inner, C, kind;
} tso_dequant_fields;

/* tso_dequant_tab: 8-bit input, y = tab[c][byte] (tab = the 256 float32 results per channel,
 * computed on the host with the same rule; kind 0 int8 indexes by the byte's bits). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(int32_t, y);
    TSR_FIELD(const int32_t, tab);
    uint32_t n, inner, C;
} tso_dequant_tab_fields;

void tso_dequant_tab(const tso_dequant_tab_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t n = f->n, inner = f->inner, C = f->C;
    uint32_t chunk = (n + nparts - 1) / nparts;
    uint32_t i0 = part * chunk, i1 = i0 + chunk;
    if (i1 > n)
        i1 = n;
    if (i0 >= i1)
        return;
    const uint8_t *const X = f->x;
    int32_t *const Y = f->y;
    const int32_t *const tab = f->tab;
    uint32_t blk = i0 / inner, in = i0 - blk * inner, c = blk % C;
    const int32_t *t = tab + 256 * c;
    for (uint32_t i = i0; i < i1; i++) {
        Y[i] = t[X[i]];
        if (++in == inner) {
            in = 0;
            if (++c == C)
                c = 0;
            t = tab + 256 * c;
        }
    }
}

static uint32_t dq_one(int32_t k, uint32_t sbits)
{
    if (k == 0)
        return 0;                                      /* +0.0 * scale = +0.0 */
    uint32_t sign = k < 0 ? 0x80000000u : 0u;
    uint32_t ak = k < 0 ? 0u - (uint32_t)k : (uint32_t)k;
    int32_t e = 0;
    uint32_t mk = round24(ak, &e);                    /* fl32(k) = mk * 2^e */
    uint32_t ms = (sbits & 0x7fffffu) | 0x800000u;     /* scale = ms * 2^(exp - 150) */
    int32_t E = e + (int32_t)((sbits >> 23) & 0xffu) - 150;
    uint32_t q = round24((uint64_t)mk * ms, &E);      /* product = q * 2^E, q < 2^24 */
    uint32_t L = bitlen32(q);                          /* normalise to 24 bits */
    q <<= 24 - L;
    E -= (int32_t)(24 - L);
    int32_t biased = E + 150;                          /* value = q * 2^E, q in [2^23, 2^24) */
    if (biased >= 255)
        return sign | 0x7f800000u;                     /* overflow: infinity */
    return sign | ((uint32_t)biased << 23) | (q & 0x7fffffu);
}

void tso_dequant(const tso_dequant_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t n = f->n, inner = f->inner, C = f->C, kind = f->kind;
    uint32_t chunk = (n + nparts - 1) / nparts;
    uint32_t i0 = part * chunk, i1 = i0 + chunk;
    if (i1 > n)
        i1 = n;
    if (i0 >= i1)
        return;
    uint32_t blk = i0 / inner, in = i0 - blk * inner, c = blk % C;
    int32_t zp = f->params[2 * c];
    uint32_t sb = (uint32_t)f->params[2 * c + 1];
    for (uint32_t i = i0; i < i1; i++) {
        int32_t v;
        if (kind == 0)
            v = (int8_t)f->x[i];
        else if (kind == 1)
            v = f->x[i];
        else
            v = ((const int32_t *)f->x)[i];
        f->y[i] = (int32_t)dq_one((int32_t)((uint32_t)v - (uint32_t)zp), sb);
        if (++in == inner) {
            in = 0;
            if (++c == C)
                c = 0;
            zp = f->params[2 * c];
            sb = (uint32_t)f->params[2 * c + 1];
        }
    }
}
