/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_clamp: y = min(max(x, lo), hi) on keys (Relu, Clip; int8, uint8 or float32). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(uint8_t, y);
    uint32_t n, kind;
    int32_t lo, hi;
} tso_clamp_fields;

void tso_clamp(const tso_clamp_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->n, i0, i1);
    for (uint32_t i = i0; i < i1; i++) {
        int32_t v = load_key(f->x, i, f->kind);
        if (v < f->lo)
            v = f->lo;
        if (v > f->hi)
            v = f->hi;
        store_key(f->y, i, f->kind, v);
    }
}

