/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_pack: matmul operand rows. For m < nmat matrices (src m*ms bytes apart, dst m*rows*Kp),
 * dst[m][r][k] = src[m*ms + r*rs + k*cs] ^ xorv for k < cols, 0 for cols <= k < Kp. */
typedef struct {
    TSR_FIELD(const uint8_t, src);
    TSR_FIELD(uint8_t, dst);
    uint32_t nmat, ms, rows, cols, rs, cs, Kp, xorv;
} tso_pack_fields;

void tso_pack(const tso_pack_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t total = f->nmat * f->rows;
    CHUNK(total, r0, r1);
    const uint8_t xv = (uint8_t)f->xorv;
    uint32_t m = r0 / f->rows, r = r0 - m * f->rows;
    for (uint32_t q = r0; q < r1; q++) {
        const uint8_t *s = f->src + m * f->ms + r * f->rs;
        uint8_t *d = f->dst + q * f->Kp;
        for (uint32_t k = 0; k < f->cols; k++, s += f->cs)
            d[k] = (uint8_t)(*s ^ xv);
        for (uint32_t k = f->cols; k < f->Kp; k++)
            d[k] = 0;
        if (++r == f->rows) {
            r = 0;
            m++;
        }
    }
}

