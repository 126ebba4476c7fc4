/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_maxpool: 2-D max pooling (ONNX MaxPool: padding taps never win; a window with no real
 * tap gives the lowest key) of S samples of C channels. Input element (s, c, h, w) is at
 * element index s*xs + c*xc + h*xh + w*xw, output (s, c, oh, ow) at s*ys + c*yc + oh*yh +
 * ow*yw (strides in elements), so NCHW and NHWC tensors are both handled. Work is split over
 * the output rows (s, oh); each window's valid taps are found once for all channels.
 * kind 0 int8, 1 uint8, 2 float32 (ordered keys), 3 int32 (accumulators: max before a
 * monotone requantization equals the requantized max). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(uint8_t, y);
    uint32_t S, C, H, W, OH, OW, kh, kw, sh, sw, dh, dw;
    int32_t pt, pl;
    uint32_t xs, xc, xh, xw, ys, yc, yh, yw, kind;
    int32_t lowest;
} tso_maxpool_fields;

/* Per-byte max of four 8-bit lanes (SWAR): a, b hold 4 codes each, biased so that unsigned
 * byte order is the code order (int8 codes ^ 0x80). Bit 7 of each byte of d is set when the
 * low 7 bits of a's byte are >= b's (no borrow crosses a byte); a byte's a >= b is then a's
 * top bit where the top bits differ, else d's; the lane mask 0xff is (ge << 1) - (ge >> 7). */
static inline uint32_t max4u(uint32_t a, uint32_t b)
{
    const uint32_t d = (a | 0x80808080u) - (b & 0x7f7f7f7fu);
    const uint32_t x = a ^ b;
    const uint32_t ge = ((a & ~b) | (~x & d)) & 0x80808080u;
    const uint32_t mask = (ge << 1) - (ge >> 7);
    return b ^ (x & mask);
}

/* The common case: 2x2 windows, stride 2, no padding, 8-bit codes, every window full. Work
 * is split over the output pixels (s, oh, ow); with channels contiguous in words (xc = yc =
 * 1, C and every stride and base a multiple of 4) four channels per word (max4u). */
static void pool2x2(const tso_maxpool_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t OH = f->OH, OW = f->OW, C = f->C, kind = f->kind;
    const uint32_t xs = f->xs, xc = f->xc, xh = f->xh, xw = f->xw;
    const uint32_t ys = f->ys, yc = f->yc, yh = f->yh, yw = f->yw;
    CHUNK(f->S * OH * OW, p0, p1);
    const uint8_t *const X = f->x;
    uint8_t *const Y = f->y;
    uint32_t ow = p0 % OW, t = p0 / OW;
    uint32_t oh = t % OH, s = t / OH;
    const int words = xc == 1 && yc == 1 && (C & 3) == 0 && ((xs | xh | xw | ys | yh | yw) & 3) == 0
                      && (((uintptr_t)X | (uintptr_t)Y) & 3) == 0;
    const uint32_t bias = kind == 0 ? 0x80808080u : 0u;
    for (uint32_t px = p0; px < p1; px++) {
        const uint8_t *p = X + s * xs + 2 * oh * xh + 2 * ow * xw;
        uint8_t *q = Y + s * ys + oh * yh + ow * yw;
        if (words) {
            const uint32_t *p0w = (const uint32_t *)p, *p1w = (const uint32_t *)(p + xw);
            const uint32_t *p2w = (const uint32_t *)(p + xh), *p3w = (const uint32_t *)(p + xh + xw);
            uint32_t *qw = (uint32_t *)q;
            for (uint32_t c = 0; c < C / 4; c++) {
                uint32_t m0 = max4u(p0w[c] ^ bias, p1w[c] ^ bias);
                uint32_t m1 = max4u(p2w[c] ^ bias, p3w[c] ^ bias);
                qw[c] = max4u(m0, m1) ^ bias;
            }
        } else if (kind == 0) {
            for (uint32_t c = 0; c < C; c++, p += xc, q += yc) {
                int32_t v0 = (int8_t)p[0], v1 = (int8_t)p[xw];
                int32_t v2 = (int8_t)p[xh], v3 = (int8_t)p[xh + xw];
                v0 = v1 > v0 ? v1 : v0;
                v2 = v3 > v2 ? v3 : v2;
                *q = (uint8_t)(v2 > v0 ? v2 : v0);
            }
        } else {
            for (uint32_t c = 0; c < C; c++, p += xc, q += yc) {
                uint32_t v0 = p[0], v1 = p[xw], v2 = p[xh], v3 = p[xh + xw];
                v0 = v1 > v0 ? v1 : v0;
                v2 = v3 > v2 ? v3 : v2;
                *q = (uint8_t)(v2 > v0 ? v2 : v0);
            }
        }
        if (++ow == OW) {
            ow = 0;
            if (++oh == OH) {
                oh = 0;
                s++;
            }
        }
    }
}

void tso_maxpool(const tso_maxpool_fields *f, uint32_t part, uint32_t nparts)
{
    if (f->kind <= 1 && f->kh == 2 && f->kw == 2 && f->sh == 2 && f->sw == 2 && f->dh == 1
        && f->dw == 1 && f->pt == 0 && f->pl == 0 && 2 * f->OH <= f->H && 2 * f->OW <= f->W) {
        pool2x2(f, part, nparts);
        return;
    }
    const uint32_t OH = f->OH, OW = f->OW, rows = f->S * OH;
    CHUNK(rows, r0, r1);
    const uint8_t *const X = f->x;
    uint8_t *const Y = f->y;
    const int32_t H = (int32_t)f->H, W = (int32_t)f->W;
    const uint32_t C = f->C, kind = f->kind, kh = f->kh, kw = f->kw, sh = f->sh, sw = f->sw;
    const int32_t dh = (int32_t)f->dh, dw = (int32_t)f->dw, pt = f->pt, pl = f->pl;
    const uint32_t xs = f->xs, xc = f->xc, xh = f->xh, xw = f->xw;
    const uint32_t ys = f->ys, yc = f->yc, yh = f->yh, yw = f->yw;
    const int32_t lowest = f->lowest;
    uint32_t s = r0 / OH, oh = r0 - s * OH;
    for (uint32_t r = r0; r < r1; r++) {
        const int32_t ih0 = (int32_t)(oh * sh) - pt;
        uint32_t i0 = 0, i1 = 0;
        for (uint32_t i = 0; i < kh; i++) {
            int32_t ih = ih0 + (int32_t)i * dh;
            if (ih < 0)
                i0 = i + 1;
            else if (ih < H)
                i1 = i + 1;
        }
        for (uint32_t ow = 0; ow < OW; ow++) {
            const int32_t iw0 = (int32_t)(ow * sw) - pl;
            uint32_t j0 = 0, j1 = 0;
            for (uint32_t j = 0; j < kw; j++) {
                int32_t iw = iw0 + (int32_t)j * dw;
                if (iw < 0)
                    j0 = j + 1;
                else if (iw < W)
                    j1 = j + 1;
            }
            const uint32_t yb = s * ys + oh * yh + ow * yw;
            const int empty = !(i0 < i1 && j0 < j1);
            const uint32_t first = s * xs + (uint32_t)(ih0 + (int32_t)i0 * dh) * xh
                                   + (uint32_t)(iw0 + (int32_t)j0 * dw) * xw;
            const uint32_t ni = i1 - i0, nj = j1 - j0;
            const uint32_t rstep = (uint32_t)dh * xh, cstep = (uint32_t)dw * xw;
            if (!empty && ni == 2 && nj == 2 && kind == 3) {
                /* the common case (a 2x2 window of int32 accumulators): no per-channel
                 * dispatch */
                const int32_t *p = (const int32_t *)X + first;
                int32_t *q = (int32_t *)Y + yb;
                for (uint32_t c = 0; c < C; c++, p += xc, q += yc) {
                    int32_t v0 = p[0], v1 = p[cstep], v2 = p[rstep], v3 = p[rstep + cstep];
                    v0 = v1 > v0 ? v1 : v0;
                    v2 = v3 > v2 ? v3 : v2;
                    *q = v2 > v0 ? v2 : v0;
                }
                continue;
            }
            if (!empty && ni == 2 && nj == 2 && kind == 0) {
                const int8_t *p = (const int8_t *)X + first;
                uint8_t *q = Y + yb;
                for (uint32_t c = 0; c < C; c++, p += xc, q += yc) {
                    int32_t v0 = p[0], v1 = p[cstep], v2 = p[rstep], v3 = p[rstep + cstep];
                    v0 = v1 > v0 ? v1 : v0;
                    v2 = v3 > v2 ? v3 : v2;
                    *q = (uint8_t)(v2 > v0 ? v2 : v0);
                }
                continue;
            }
            for (uint32_t c = 0; c < C; c++) {
                int32_t m = lowest;
                if (!empty) {
                    const uint32_t b = first + c * xc;
                    if (kind == 0 && ni == 2 && nj == 2) {
                        const int8_t *p = (const int8_t *)X + b;
                        int32_t v0 = p[0], v1 = p[cstep], v2 = p[rstep], v3 = p[rstep + cstep];
                        v0 = v1 > v0 ? v1 : v0;
                        v2 = v3 > v2 ? v3 : v2;
                        m = v2 > v0 ? v2 : v0;
                    } else if (kind == 0) {
                        const int8_t *p = (const int8_t *)X + b;
                        for (uint32_t i = 0; i < ni; i++, p += rstep)
                            for (uint32_t j = 0; j < nj; j++) {
                                int32_t v = p[j * cstep];
                                m = v > m ? v : m;
                            }
                    } else if (kind == 1) {
                        const uint8_t *p = X + b;
                        for (uint32_t i = 0; i < ni; i++, p += rstep)
                            for (uint32_t j = 0; j < nj; j++) {
                                int32_t v = p[j * cstep];
                                m = v > m ? v : m;
                            }
                    } else if (kind == 3) {
                        const int32_t *p = (const int32_t *)X + b;
                        if (ni == 2 && nj == 2) {
                            int32_t v0 = p[0], v1 = p[cstep], v2 = p[rstep], v3 = p[rstep + cstep];
                            v0 = v1 > v0 ? v1 : v0;
                            v2 = v3 > v2 ? v3 : v2;
                            m = v2 > v0 ? v2 : v0;
                        } else {
                            for (uint32_t i = 0; i < ni; i++, p += rstep)
                                for (uint32_t j = 0; j < nj; j++) {
                                    int32_t v = p[j * cstep];
                                    m = v > m ? v : m;
                                }
                        }
                    } else {
                        const int32_t *p = (const int32_t *)X + b;
                        for (uint32_t i = 0; i < ni; i++, p += rstep)
                            for (uint32_t j = 0; j < nj; j++) {
                                int32_t v = p[j * cstep];
                                v ^= (v >> 31) & 0x7fffffff;
                                m = v > m ? v : m;
                            }
                    }
                }
                store_key(Y, yb + c * yc, kind, m);
            }
        }
        if (++oh == OH) {
            oh = 0;
            s++;
        }
    }
}

