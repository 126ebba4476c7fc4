/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_copy: strided copy over a 4-D index space (n0, n1, n2, n3), element size esz (1 or 4):
 * dst[i0*d0 + i1*d1 + i2*d2 + i3*d3] = src[i0*s0 + i1*s1 + i2*s2 + i3*s3] (strides in
 * elements). Transpose, Concat, Flatten/Reshape materialisation and output copies. */
typedef struct {
    TSR_FIELD(const uint8_t, src);
    TSR_FIELD(uint8_t, dst);
    uint32_t esz, n0, n1, n2, n3, s0, s1, s2, s3, d0, d1, d2, d3;
} tso_copy_fields;

void tso_copy(const tso_copy_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t rows = f->n0 * f->n1 * f->n2;     /* split over the outer three axes */
    CHUNK(rows, r0, r1);
    uint32_t i2 = r0 % f->n2, t = r0 / f->n2;
    uint32_t i1 = t % f->n1, i0 = t / f->n1;
    for (uint32_t r = r0; r < r1; r++) {
        uint32_t so = i0 * f->s0 + i1 * f->s1 + i2 * f->s2;
        uint32_t dof = i0 * f->d0 + i1 * f->d1 + i2 * f->d2;
        if (f->esz == 4) {
            const int32_t *s = (const int32_t *)f->src + so;
            int32_t *d = (int32_t *)f->dst + dof;
            for (uint32_t i3 = 0; i3 < f->n3; i3++)
                d[i3 * f->d3] = s[i3 * f->s3];
        } else {
            const uint8_t *s = f->src + so;
            volatile uint8_t *d = f->dst + dof;
            for (uint32_t i3 = 0; i3 < f->n3; i3++)
                d[i3 * f->d3] = s[i3 * f->s3];
        }
        if (++i2 == f->n2) {
            i2 = 0;
            if (++i1 == f->n1) {
                i1 = 0;
                i0++;
            }
        }
    }
}

