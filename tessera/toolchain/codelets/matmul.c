/* int8 matmul codelet: c[i][j] = sum_k a[i][k] * bt[j][k] (int32, wrapping), for
 * i < rows, j < cols, k < depth. a is row-major [rows, depth]; bt is B transposed,
 * row-major [cols, bt_stride] (bt_stride >= depth, 4-byte multiple); c is [rows, cols].
 * When depth is a multiple of 4 and a, bt are word aligned, the inner loop is dot4
 * (docs/architecture.md 3.3); otherwise a scalar loop. Parts take interleaved rows i. */
#include <stdint.h>
#include "tessera.h"
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(const int8_t, a);
    TSR_FIELD(const int8_t, bt);
    TSR_FIELD(int32_t, c);
    uint32_t rows, cols, depth, bt_stride;
} tsr_matmul8_fields;

void tsr_matmul8(const tsr_matmul8_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t rows = f->rows, cols = f->cols, depth = f->depth, stride = f->bt_stride;
    const int words = (depth & 3u) == 0 && ((uintptr_t)f->a & 3u) == 0
                      && ((uintptr_t)f->bt & 3u) == 0 && (stride & 3u) == 0;
    for (uint32_t i = part; i < rows; i += nparts) {
        const int8_t *arow = f->a + i * depth;
        volatile int32_t *crow = f->c + i * cols;
        for (uint32_t j = 0; j < cols; j++) {
            const int8_t *brow = f->bt + j * stride;
            int32_t acc = 0;
            if (words) {
                const uint32_t *aw = (const uint32_t *)arow;
                const uint32_t *bw = (const uint32_t *)brow;
                for (uint32_t k = 0; k < depth / 4; k++)
                    acc = tsr_dot4(acc, aw[k], bw[k]);
            } else {
                for (uint32_t k = 0; k < depth; k++)
                    acc += (int32_t)arow[k] * (int32_t)brow[k];
            }
            crow[j] = acc;
        }
    }
}
