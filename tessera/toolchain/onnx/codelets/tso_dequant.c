/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

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
