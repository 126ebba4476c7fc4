/* scale_add.c -- a custom codelet (docs/compiler.md, "Writing your own codelet"):
 * dst[i] = src[i] * scale + offset on int32 tensors. The compiler may split one vertex
 * over several contexts (part `part` of `nparts`), so each part takes every nparts-th
 * element. */
#include <stdint.h>
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(const int32_t, src);   /* tensor field: pointer + element count (src_n) */
    TSR_FIELD(int32_t, dst);
    int32_t scale;                   /* scalar fields: one word each */
    int32_t offset;
} scale_add_fields;

void scale_add(const scale_add_fields *f, uint32_t part, uint32_t nparts)
{
    for (uint32_t i = part; i < f->dst_n; i += nparts)
        f->dst[i] = f->src[i] * f->scale + f->offset;
}
