/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_quant: ONNX QuantizeLinear. tab is int32 [C][QUANT_WORDS]: tab[c][k] (k = 1..255) is
 * the ordered key of the smallest float32 x whose code is at least qmin + k (key = bits for
 * x >= +0, bits ^ 0x7fffffff below, so keys order like the floats); the code is qmin + the
 * number of thresholds <= key (NaN gives qmin). tab[c][0] = INT32_MIN and tab[c][256] =
 * INT32_MAX are sentinels (no key of a non-NaN float reaches either), so the walks need no
 * index checks. The search starts at an estimate and walks the table to the answer (so the
 * estimate only sets the speed, never the result): with R = tab[c][257] (u32,
 * floor(2^r / scale) in [2^31, 2^32)) and tab[c][258] = r + 126, a float with exponent field
 * e and 24-bit significand m has 2 |x| / scale ~ mulhu(m << 8, R) >> (r + 125 - e), and the
 * walk starts at the nearest integer of half that (the codes round to nearest);
 * tab[c][259] = zp - qmin.
 *
 * A vertex quantizes elements i0 .. i1-1 (lower.quant_vertices splits a tensor into one
 * vertex per context and computes each one's start, so the codelet divides nothing).
 * Element i has channel (i / inner) % C: c0 and in0 are those of i0 (channel c0, i0 - in0 the
 * first element of its channel block). Output: element i = ((a·Cq + b)·H + h)·W + w goes to
 * byte a·ys + b·yc + h·yh + w·yw of y (a plain copy, or the interior of a padded NHWC input):
 * y0 is i0's byte, wl0 / hl0 / bl0 the elements left in its row (W - w), rows left in its
 * plane (H - h) and planes left in its image (Cq - b); after each element the pointer moves
 * by yw, then by dh = yh - W·yw at the end of a row, db = yc - H·yh at the end of a plane and
 * da = ys - Cq·yc at the end of an image. */
#define QUANT_WORDS 260

typedef struct {
    TSR_FIELD(const int32_t, x);
    TSR_FIELD(uint8_t, y);
    TSR_FIELD(const int32_t, tab);
    uint32_t i0, i1, inner, C, c0, in0;
    int32_t qmin;
    uint32_t y0, yw, wl0, hl0, bl0, W, H, Cq;
    int32_t dh, db, da;
} tso_quant_fields;

/* The channel's estimate parameters, in registers (stores through the uint8_t output may
 * alias the table, so the compiler would reload them per element). rb1 = r + 125: the
 * estimate's path needs 0 <= rb1 - e <= 30, which (for 31 <= rb1 <= 254) also excludes e = 0
 * (zeros, subnormals) and e = 255 (infinities, NaN). rbf is rb1 for those scales and
 * 2^31 for the others (rbf - e is then never <= 30: every element takes the general path). */
typedef struct {
    uint32_t R, rbf;
    int32_t zq;
} quant_est;

static inline quant_est quant_est_of(const int32_t *t)
{
    const uint32_t rb1 = (uint32_t)t[258] - 1u;
    quant_est q = {(uint32_t)t[257], rb1 - 31u <= 254u - 31u ? rb1 : 0x80000000u, t[259]};
    return q;
}

/* The start of the walk for a float the estimate's path does not cover (subnormal, tiny,
 * huge, infinite, NaN: -1), or for every nonzero float when rbf = 2^31 (see quant_est). Out
 * of line and cold, so that the per-element loop keeps its values in caller-saved registers. */
static __attribute__((noinline, cold)) int32_t quant_start_slow(int32_t bits, const int32_t *t)
{
    if (((uint32_t)bits & 0x7fffffffu) > 0x7f800000u)
        return -1;                                           /* NaN */
    const uint32_t e = ((uint32_t)bits << 1) >> 24;
    const int32_t sh = t[258] - (int32_t)e, zq = t[259];
    if (e == 0 || sh > 31)
        return zq;                                           /* |x| / scale < 1 */
    if (sh <= 0 || e == 255)
        return bits < 0 ? 0 : 255;                           /* |x| / scale >= 2^31 */
    uint32_t q = (uint32_t)(((uint64_t)((uint32_t)bits << 8 | 0x80000000u) * (uint32_t)t[257])
                            >> 32) >> sh;
    if (q > 255u)
        q = 255u;
    const int32_t j = bits < 0 ? zq - (int32_t)q : zq + (int32_t)q;
    return (uint32_t)j > 255u ? (bits < 0 ? 0 : 255) : j;
}

/* The code index (0..255) of one float32 (its bits): qmin + it is the code. */
static inline __attribute__((always_inline)) int32_t quant1(int32_t bits, const int32_t *t,
                                                            quant_est p)
{
    const int32_t sgn = bits >> 31;
    const uint32_t d = p.rbf - (((uint32_t)bits << 1) >> 24);      /* rb1 - e */
    int32_t j;
    if (__builtin_expect(d <= 30u, 1)) {
        /* q2 ~ 2 |x| / scale < 2^32 - 1 (the high word of a product of two words), so
         * q = round(|x| / scale) < 2^31 */
        const uint32_t q2 = (uint32_t)(((uint64_t)((uint32_t)bits << 8 | 0x80000000u) * p.R)
                                       >> 32) >> d;
        const uint32_t q = (q2 + 1u) >> 1;
        j = p.zq + (int32_t)((q ^ (uint32_t)sgn) - (uint32_t)sgn);
        if (__builtin_expect((uint32_t)j > 255u, 0))
            j = sgn ? 0 : 255;                                      /* saturated */
    } else if (((uint32_t)bits << 1) == 0) {
        j = p.zq;                                                   /* +-0: common */
    } else {
        j = quant_start_slow(bits, t);
        if (j < 0)
            return 0;                                               /* NaN: qmin */
    }
    const int32_t key = bits ^ (int32_t)((uint32_t)sgn >> 1);
    const int32_t *tj = t + j;
    if (__builtin_expect(tj[1] <= key, 0)) {                        /* t[256] = INT32_MAX */
        do
            tj++;
        while (tj[1] <= key);
    } else if (__builtin_expect(tj[0] > key, 0)) {                  /* t[0] = INT32_MIN */
        do
            tj--;
        while (tj[0] > key);
    } else
        return j;
    return (int32_t)(tj - t);
}

/* The output position after the last element of a row: + dh, and + db / + da when the row
 * also ends a plane / an image (hl, bl: the rows left in the plane, the planes left in the
 * image; both reloaded when they reach 0). */
static inline uint8_t *next_row(const tso_quant_fields *f, uint8_t *yp, uint32_t *hl,
                                uint32_t *bl)
{
    yp += f->dh;
    if (--*hl == 0) {
        *hl = f->H;
        yp += f->db;
        if (--*bl == 0) {
            *bl = f->Cq;
            yp += f->da;
        }
    }
    return yp;
}

/* Per-axis quantization (C > 1): the channel follows the elements. */
static __attribute__((noinline)) void quant_channels(const tso_quant_fields *f)
{
    const int32_t *xp = f->x + f->i0;
    const int32_t *const xe = f->x + f->i1;
    uint8_t *yp = f->y + f->y0;
    const uint32_t yw = f->yw, C = f->C, inner = f->inner;
    const int32_t qmin = f->qmin;
    uint32_t wl = f->wl0, hl = f->hl0, bl = f->bl0, c = f->c0, in = f->in0;
    const int32_t *t = f->tab + QUANT_WORDS * c;
    quant_est p = quant_est_of(t);
    for (;;) {
        *yp = (uint8_t)(qmin + quant1(*xp++, t, p));
        yp += yw;
        if (xp == xe)
            return;
        if (++in == inner) {
            in = 0;
            if (++c == C)
                c = 0;
            t = f->tab + QUANT_WORDS * c;
            p = quant_est_of(t);
        }
        if (--wl == 0) {
            wl = f->W;
            yp = next_row(f, yp, &hl, &bl);
        }
    }
}

void tso_quant(const tso_quant_fields *f, uint32_t part, uint32_t nparts)
{
    (void)part;
    (void)nparts;
    const int32_t *xp = f->x + f->i0;
    const int32_t *const xe = f->x + f->i1;
    if (xp >= xe)
        return;
    if (f->C != 1) {
        quant_channels(f);
        return;
    }
    uint8_t *yp = f->y + f->y0;
    const uint32_t yw = f->yw;
    const int32_t qmin = f->qmin;
    const int32_t *const t = f->tab;
    const quant_est p = quant_est_of(t);
    const int32_t *xr = xp + f->wl0;                        /* the end of the first row */
    uint32_t hl = f->hl0, bl = f->bl0;
    for (;;) {
        if (xr > xe)
            xr = xe;
        do {
            *yp = (uint8_t)(qmin + quant1(*xp++, t, p));
            yp += yw;
        } while (xp != xr);
        if (xp == xe)
            return;
        xr = xp + f->W;                                     /* the next row */
        yp = next_row(f, yp, &hl, &bl);
    }
}
