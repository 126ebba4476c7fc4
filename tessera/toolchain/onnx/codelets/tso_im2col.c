/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h. */
#include <stdint.h>
#include "tso_common.h"

/* ---------------------------------------------------------------------------------------
 * tso_im2col: convolution patches. x holds S samples (x_stride bytes apart); input element
 * (c, h, w) of a sample is at byte c*xc + h*xh + w*xw. p gets S * OH * OW rows of Kp bytes,
 * row (s, oh, ow); the columns are the taps of channels c0 .. c0+cg-1, kernel (i, j), in the
 * order (c, i, j) (order 0) or (i, j, c) (order 1), value x[s][c][oh*sh - pt + i*dh]
 * [ow*sw - pl + j*dw] XOR xorv (0x80 turns uint8 into int8 - 128), or padv in the padding;
 * columns cg*kh*kw .. Kp-1 are 0. Order 1 with xc = 1 (NHWC) and cg a multiple of 4 copies
 * whole words (the input and patch rows are word aligned). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(uint8_t, p);
    uint32_t S, x_stride, c0, cg, xc, xh, xw, H, W, kh, kw, sh, sw, dh, dw;
    int32_t pt, pl;
    uint32_t OH, OW, Kp, padv, xorv, order;
} tso_im2col_fields;

void tso_im2col(const tso_im2col_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t OH = f->OH, OW = f->OW, npix = OH * OW, rows = f->S * npix;
    CHUNK(rows, r0, r1);
    const uint8_t *const X = f->x;
    uint8_t *const Pt = f->p;
    const uint32_t x_stride = f->x_stride, c0 = f->c0, cg = f->cg;
    const uint32_t xc = f->xc, xh = f->xh, xw = f->xw;
    const int32_t H = (int32_t)f->H, W = (int32_t)f->W;
    const uint32_t kh = f->kh, kw = f->kw, sh = f->sh, sw = f->sw;
    const int32_t dh = (int32_t)f->dh, dw = (int32_t)f->dw, pt = f->pt, pl = f->pl;
    const uint32_t Kp = f->Kp, K = cg * kh * kw, order = f->order;
    const uint8_t padv = (uint8_t)f->padv, xv = (uint8_t)f->xorv;
    const uint32_t padw = 0x01010101u * padv, xvw = 0x01010101u * xv;
    const int words = order == 1 && xc == 1 && (cg & 3u) == 0;
    const int fast3 = kw == 3 && dw == 1 && xw == 1;
    uint32_t s = r0 / npix, pix = r0 - s * npix;
    uint32_t oh = pix / OW, ow = pix - oh * OW;
    for (uint32_t r = r0; r < r1; r++) {
        uint8_t *d = Pt + r * Kp;
        const uint8_t *xs = X + s * x_stride + c0 * xc;
        const int32_t ih0 = (int32_t)(oh * sh) - pt, iw0 = (int32_t)(ow * sw) - pl;
        if (order == 0) {
            for (uint32_t c = 0; c < cg; c++, xs += xc) {
                int32_t ih = ih0;
                for (uint32_t i = 0; i < kh; i++, ih += dh) {
                    if (ih < 0 || ih >= H) {
                        for (uint32_t j = 0; j < kw; j++)
                            *d++ = padv;
                        continue;
                    }
                    const uint8_t *row = xs + (uint32_t)ih * xh;
                    if (fast3 && iw0 >= 0 && iw0 + 2 < W) {
                        const uint8_t *q = row + iw0;
                        d[0] = (uint8_t)(q[0] ^ xv);
                        d[1] = (uint8_t)(q[1] ^ xv);
                        d[2] = (uint8_t)(q[2] ^ xv);
                        d += 3;
                        continue;
                    }
                    int32_t iw = iw0;
                    for (uint32_t j = 0; j < kw; j++, iw += dw)
                        *d++ = (iw < 0 || iw >= W) ? padv : (uint8_t)(row[(uint32_t)iw * xw] ^ xv);
                }
            }
        } else if (words) {
            uint32_t *dw32 = (uint32_t *)d;
            const uint32_t nw = cg >> 2;
            int32_t ih = ih0;
            for (uint32_t i = 0; i < kh; i++, ih += dh) {
                int32_t iw = iw0;
                for (uint32_t j = 0; j < kw; j++, iw += dw) {
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                        for (uint32_t q = 0; q < nw; q++)
                            *dw32++ = padw;
                    } else {
                        const uint32_t *src = (const uint32_t *)(xs + (uint32_t)ih * xh
                                                                 + (uint32_t)iw * xw);
                        for (uint32_t q = 0; q < nw; q++)
                            *dw32++ = src[q] ^ xvw;
                    }
                }
            }
            d = (uint8_t *)dw32;
        } else {
            int32_t ih = ih0;
            for (uint32_t i = 0; i < kh; i++, ih += dh) {
                int32_t iw = iw0;
                for (uint32_t j = 0; j < kw; j++, iw += dw) {
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                        for (uint32_t c = 0; c < cg; c++)
                            *d++ = padv;
                    } else {
                        const uint8_t *src = xs + (uint32_t)ih * xh + (uint32_t)iw * xw;
                        for (uint32_t c = 0; c < cg; c++, src += xc)
                            *d++ = (uint8_t)(*src ^ xv);
                    }
                }
            }
        }
        for (uint32_t k = K; k < Kp; k++)
            *d++ = 0;
        if (++ow == OW) {
            ow = 0;
            if (++oh == OH) {
                oh = 0;
                s++;
            }
        }
    }
}

