/* Pooling codelet (int8 NHWC, one image): max or average over windows, bit-exact with
 * tessera.golden_model.kernels.maxpool2d / avgpool2d / global_avgpool (TFLite reference semantics):
 *
 *   window of output (oh, ow): input rows oh*sh - pt .. + ph - 1, columns ow*sw - pl .. + pw - 1,
 *   clipped to the image (padding taps are ignored: never the max, never counted);
 *   max  : y = max of the real taps
 *   avg  : y = round(sum / count) with ties away from zero:
 *          sum > 0 ? (sum + count/2) / count : (sum - count/2) / count   (C division)
 *
 * x holds input rows ih0 .. ih0 + x_n/(w*c) - 1 of the image (row-major [rows][w][c]);
 * y holds output rows oh0 .. oh0 + y_n/(ow*c) - 1 (row-major [rows][ow][c]).
 * Parts take contiguous chunks of the output elements. */
#include <stdint.h>
#include "tsr_graph.h"

typedef struct {
    TSR_FIELD(const int8_t, x);
    TSR_FIELD(int8_t, y);
    uint32_t h, w, c, ow, ph, pw, sh, sw;
    int32_t pt, pl;
    uint32_t oh0, ih0, mode;
} tsk_pool_fields;

void tsk_pool(const tsk_pool_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t n = f->y_n, C = f->c, OW = f->ow;
    const int32_t H = (int32_t)f->h, W = (int32_t)f->w;
    uint32_t chunk = (n + nparts - 1) / nparts;
    uint32_t lo = part * chunk, hi = lo + chunk;
    if (hi > n)
        hi = n;
    if (lo >= hi)
        return;
    const uint32_t rowlen = (uint32_t)W * C;
    uint32_t ch = lo % C, pix = lo / C;
    uint32_t ox = pix % OW, oy = pix / OW;
    volatile int8_t *y = f->y;
    for (uint32_t i = lo; i < hi; i++) {
        int32_t r0 = (int32_t)((f->oh0 + oy) * f->sh) - f->pt, r1 = r0 + (int32_t)f->ph;
        int32_t q0 = (int32_t)(ox * f->sw) - f->pl, q1 = q0 + (int32_t)f->pw;
        if (r0 < 0)
            r0 = 0;
        if (r1 > H)
            r1 = H;
        if (q0 < 0)
            q0 = 0;
        if (q1 > W)
            q1 = W;
        const int8_t *row = f->x + (uint32_t)(r0 - (int32_t)f->ih0) * rowlen
                            + (uint32_t)q0 * C + ch;
        int32_t out;
        if (f->mode == 0) {
            int32_t m = -128;
            for (int32_t r = r0; r < r1; r++, row += rowlen) {
                const int8_t *p = row;
                for (int32_t q = q0; q < q1; q++, p += C)
                    if (*p > m)
                        m = *p;
            }
            out = m;
        } else {
            int32_t s = 0;
            for (int32_t r = r0; r < r1; r++, row += rowlen) {
                const int8_t *p = row;
                for (int32_t q = q0; q < q1; q++, p += C)
                    s += *p;
            }
            int32_t cnt = (r1 - r0) * (q1 - q0);
            out = s > 0 ? (s + cnt / 2) / cnt : (s - cnt / 2) / cnt;
        }
        y[i] = (int8_t)out;
        if (++ch == C) {
            ch = 0;
            if (++ox == OW) {
                ox = 0;
                oy++;
            }
        }
    }
}
