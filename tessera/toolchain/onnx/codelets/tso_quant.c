/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

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

