/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_binop: wrapping 8-bit Add (op 0) or Mul (op 1) of a and b (b_step 0: b broadcast from
 * b[i % bn], else same length); the low 8 bits of the exact result, like numpy. */
typedef struct {
    TSR_FIELD(const uint8_t, a);
    TSR_FIELD(const uint8_t, b);
    TSR_FIELD(uint8_t, y);
    uint32_t n, bn, op;
} tso_binop_fields;

void tso_binop(const tso_binop_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->n, i0, i1);
    uint32_t j = i0 % f->bn;
    for (uint32_t i = i0; i < i1; i++) {
        uint32_t a = f->a[i], b = f->b[j];
        f->y[i] = (uint8_t)(f->op ? a * b : a + b);
        if (++j == f->bn)
            j = 0;
    }
}

