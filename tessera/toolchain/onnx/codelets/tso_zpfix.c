/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_zpfix: zero-point corrections of int32 accumulators acc [rows][cols]:
 * acc[r][c] -= zw[c] * rsum[r] + za * csum[c]   (32-bit wrapping; either term optional). */
typedef struct {
    TSR_FIELD(int32_t, acc);
    TSR_FIELD(const int32_t, rsum);
    TSR_FIELD(const int32_t, csum);
    TSR_FIELD(const int32_t, zw);
    uint32_t rows, cols, use_r, use_c;
    int32_t za;
} tso_zpfix_fields;

void tso_zpfix(const tso_zpfix_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->rows, r0, r1);
    for (uint32_t r = r0; r < r1; r++) {
        uint32_t *a = (uint32_t *)f->acc + r * f->cols;
        uint32_t rs = f->use_r ? (uint32_t)f->rsum[r] : 0u;
        for (uint32_t c = 0; c < f->cols; c++) {
            uint32_t v = a[c];
            if (f->use_r)
                v -= (uint32_t)f->zw[c] * rs;
            if (f->use_c)
                v -= (uint32_t)f->za * (uint32_t)f->csum[c];
            a[c] = v;
        }
    }
}

