/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_dequant: ONNX DequantizeLinear, y = fl32(fl32(x - zp) * scale) as float32 bits.
 * params per channel (2 words): zp, scale bits (a normal positive float32).
 * kind 0: int8 input, 1: uint8, 2: int32.
 * Both codelets convert elements i0 .. i1-1 (lower.add_chunked_vertices: one vertex per
 * context); element i has channel (i / inner) % C, c0 and in0 = i0 % inner are i0's. */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(int32_t, y);
    TSR_FIELD(const int32_t, params);
    uint32_t i0, i1, inner, C, c0, in0, kind;
} tso_dequant_fields;

/* tso_dequant_tab: 8-bit input, y = tab[c][byte] (tab = the 256 float32 results per channel,
 * computed on the host with the same rule; kind 0 int8 indexes by the byte's bits). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(int32_t, y);
    TSR_FIELD(const int32_t, tab);
    uint32_t i0, i1, inner, C, c0, in0;
} tso_dequant_tab_fields;

void tso_dequant_tab(const tso_dequant_tab_fields *f, uint32_t part, uint32_t nparts)
{
    (void)part;
    (void)nparts;
    const uint8_t *xp = f->x + f->i0;
    const uint8_t *const xe = f->x + f->i1;
    if (xp >= xe)
        return;
    int32_t *yp = f->y + f->i0;
    if (f->C == 1) {
        const int32_t *const t = f->tab;
        do
            *yp++ = t[*xp++];
        while (xp != xe);
        return;
    }
    const uint32_t inner = f->inner, C = f->C;
    uint32_t in = f->in0, c = f->c0;
    const int32_t *t = f->tab + 256 * c;
    do {
        *yp++ = t[*xp++];
        if (++in == inner) {
            in = 0;
            if (++c == C)
                c = 0;
            t = f->tab + 256 * c;
        }
    } while (xp != xe);
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
    (void)part;
    (void)nparts;
    const uint32_t i1 = f->i1, inner = f->inner, C = f->C, kind = f->kind;
    uint32_t in = f->in0, c = f->c0;
    int32_t zp = f->params[2 * c];
    uint32_t sb = (uint32_t)f->params[2 * c + 1];
    for (uint32_t i = f->i0; i < i1; i++) {
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
