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
 * e and 24-bit significand m has |x| / scale ~ mulhu(m << 8, R) >> (r + 126 - e);
 * tab[c][259] = zp - qmin.
 * Element i has channel (i / inner) % C. Output: element i = ((a·Cq + b)·H + h)·W + w goes to
 * byte a·ys + b·yc + h·yh + w·yw of y (a plain copy, or the interior of a padded NHWC input). */
#define QUANT_WORDS 260

typedef struct {
    TSR_FIELD(const int32_t, x);
    TSR_FIELD(uint8_t, y);
    TSR_FIELD(const int32_t, tab);
    uint32_t n, inner, C;
    int32_t qmin;
    uint32_t W, H, Cq, ys, yc, yh, yw;
} tso_quant_fields;

/* The channel's estimate parameters, in registers (stores through the uint8_t output may
 * alias the table, so the compiler would reload them per element). */
typedef struct {
    uint32_t R;
    int32_t rb, zq;
} quant_est;

static inline quant_est quant_est_of(const int32_t *t)
{
    quant_est q = {(uint32_t)t[257], t[258], t[259]};
    return q;
}

static inline int32_t quant1(int32_t bits, const int32_t *t, quant_est p)
{
    const uint32_t mag = (uint32_t)bits & 0x7fffffffu;
    if (mag > 0x7f800000u)                                  /* NaN */
        return 0;
    const int32_t key = bits ^ (int32_t)((uint32_t)(bits >> 31) >> 1);
    const uint32_t e = mag >> 23;
    const uint32_t sh = (uint32_t)p.rb - e;
    int32_t j = p.zq;
    if (sh - 1u < 31u && e != 0) {                          /* 1 <= sh <= 31, normal */
        uint32_t q = (uint32_t)(((uint64_t)((uint32_t)bits << 8 | 0x80000000u) * p.R) >> 32)
                     >> sh;
        if (q > 255u)
            q = 255u;                                       /* j saturates the same */
        j = bits < 0 ? j - (int32_t)q : j + (int32_t)q;
        if ((uint32_t)j > 255u)
            j = j < 0 ? 0 : 255;
    } else if ((int32_t)sh <= 0 && e != 0)                  /* |x| / scale >= 2^31 */
        j = bits < 0 ? 0 : 255;
    const int32_t *tj = t + j;
    if (tj[1] <= key) {                                     /* t[256] = INT32_MAX */
        do
            tj++;
        while (tj[1] <= key);
    } else {
        while (tj[0] > key)                                 /* t[0] = INT32_MIN */
            tj--;
    }
    return (int32_t)(tj - t);
}

void tso_quant(const tso_quant_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->n, i0, i1);
    const uint32_t inner = f->inner, C = f->C, W = f->W, H = f->H, Cq = f->Cq;
    const uint32_t ys = f->ys, yc = f->yc, yh = f->yh, yw = f->yw;
    const int32_t *const X = f->x;
    uint8_t *const Y = f->y;
    const int32_t *const tab = f->tab;
    const int32_t qmin = f->qmin;
    uint32_t in = 0, c = 0;
    if (C > 1) {
        uint32_t blk = i0 / inner;
        in = i0 - blk * inner;
        c = blk % C;
    }
    const int32_t *t = tab + QUANT_WORDS * c;
    quant_est p = quant_est_of(t);
    uint32_t w = i0 % W, q0 = i0 / W;
    uint32_t h = q0 % H, q1 = q0 / H;
    uint32_t b = q1 % Cq, a = q1 / Cq;
    for (uint32_t i = i0; i < i1;) {
        /* one output row: elements i .. end-1 at stride yw */
        uint32_t end = i + (W - w);
        if (end > i1)
            end = i1;
        uint8_t *yp = Y + a * ys + b * yc + h * yh + w * yw;
        if (C == 1) {
            for (; i < end; i++, yp += yw)
                *yp = (uint8_t)(qmin + quant1(X[i], t, p));
        } else {
            for (; i < end; i++, yp += yw) {
                *yp = (uint8_t)(qmin + quant1(X[i], t, p));
                if (++in == inner) {
                    in = 0;
                    if (++c == C)
                        c = 0;
                    t = tab + QUANT_WORDS * c;
                    p = quant_est_of(t);
                }
            }
        }
        w = 0;
        if (++h == H) {
            h = 0;
            if (++b == Cq) {
                b = 0;
                a++;
            }
        }
    }
}
