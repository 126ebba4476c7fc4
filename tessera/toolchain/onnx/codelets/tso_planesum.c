/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_planesum: s[p] = bias + sum of the hw 8-bit elements of plane p (signed if is_signed). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(int32_t, s);
    uint32_t planes, hw, is_signed;
    int32_t bias;
} tso_planesum_fields;

void tso_planesum(const tso_planesum_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->planes, p0, p1);
    for (uint32_t p = p0; p < p1; p++) {
        const uint8_t *x = f->x + p * f->hw;
        int32_t acc = f->bias;
        if (f->is_signed)
            for (uint32_t i = 0; i < f->hw; i++)
                acc += (int8_t)x[i];
        else
            for (uint32_t i = 0; i < f->hw; i++)
                acc += x[i];
        f->s[p] = acc;
    }
}
