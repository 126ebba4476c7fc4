/* 8-bit transpose codelet: dst[c * dst_stride + r] = src[r * cols + c] for r < rows,
 * c < cols; dst[c * dst_stride + r] = 0 for rows <= r < dst_stride (zero padding so a
 * dot4 loop can run over whole words). Parts take interleaved output rows c. */
#include <stdint.h>
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(int8_t, dst);
    TSR_FIELD(const int8_t, src);
    uint32_t rows, cols, dst_stride;
} tsr_transpose8_fields;

void tsr_transpose8(const tsr_transpose8_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t rows = f->rows, cols = f->cols, stride = f->dst_stride;
    for (uint32_t c = part; c < cols; c += nparts) {
        volatile int8_t *d = f->dst + c * stride;
        const int8_t *s = f->src + c;
        for (uint32_t r = 0; r < rows; r++)
            d[r] = s[r * cols];
        for (uint32_t r = rows; r < stride; r++)
            d[r] = 0;
    }
}
