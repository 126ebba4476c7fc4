/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h and
 * tso_sf.h (soft float32). */
#include <stdint.h>
#include "tso_common.h"
#include "tso_sf.h"

/* ---------------------------------------------------------------------------------------
 * tso_binop: element-wise Add / Mul of a and b (b broadcast from b[i % bn]).
 * op 0: 8-bit wrapping Add, op 1: 8-bit wrapping Mul (the low 8 bits of the exact result,
 * like numpy); op 2: float32 Add, op 3: float32 Mul (IEEE-754 single, round half to even,
 * on the bit patterns, tso_sf.h). */
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
    const uint32_t op = f->op;
    if (op >= 2) {
        const uint32_t *const A = (const uint32_t *)f->a, *const B = (const uint32_t *)f->b;
        uint32_t *const Y = (uint32_t *)f->y;
        for (uint32_t i = i0; i < i1; i++) {
            Y[i] = op == 2 ? sf_add(A[i], B[j]) : sf_mul(A[i], B[j]);
            if (++j == f->bn)
                j = 0;
        }
        return;
    }
    for (uint32_t i = i0; i < i1; i++) {
        uint32_t a = f->a[i], b = f->b[j];
        f->y[i] = (uint8_t)(op ? a * b : a + b);
        if (++j == f->bn)
            j = 0;
    }
}
