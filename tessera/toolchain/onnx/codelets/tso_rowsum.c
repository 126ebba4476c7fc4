/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_rowsum: s[r] = sum of the int8 bytes of row r of p [rows][Kp] (the input-side
 * correction when the weight zero point is not 0). */
typedef struct {
    TSR_FIELD(const int8_t, p);
    TSR_FIELD(int32_t, s);
    uint32_t rows, Kp;
} tso_rowsum_fields;

void tso_rowsum(const tso_rowsum_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->rows, r0, r1);
    for (uint32_t r = r0; r < r1; r++) {
        const int8_t *p = f->p + r * f->Kp;
        int32_t acc = 0;
        for (uint32_t k = 0; k < f->Kp; k++)
            acc += p[k];
        f->s[r] = acc;
    }
}

