/* ONNX importer codelets: patch gathering, packing, copies, pooling and element-wise ops
 * (docs/compiler.md, "ONNX importer"). Tensors are ONNX-layout (row-major, NCHW) per sample;
 * 8-bit elements are bytes, int32 / float32 elements are words (float32 as bit patterns).
 * Each codelet splits its work into contiguous chunks, one per part. */
#include <stdint.h>
#include "tsr_graph.h"

#define CHUNK(total, lo, hi)                                   \
    uint32_t chunk_ = ((total) + nparts - 1) / nparts;          \
    uint32_t lo = part * chunk_, hi = lo + chunk_;              \
    if (hi > (total))                                           \
        hi = (total);                                           \
    if (lo >= hi)                                               \
        return

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

/* ---------------------------------------------------------------------------------------
 * tso_pack: matmul operand rows. For m < nmat matrices (src m*ms bytes apart, dst m*rows*Kp),
 * dst[m][r][k] = src[m*ms + r*rs + k*cs] ^ xorv for k < cols, 0 for cols <= k < Kp. */
typedef struct {
    TSR_FIELD(const uint8_t, src);
    TSR_FIELD(uint8_t, dst);
    uint32_t nmat, ms, rows, cols, rs, cs, Kp, xorv;
} tso_pack_fields;

void tso_pack(const tso_pack_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t total = f->nmat * f->rows;
    CHUNK(total, r0, r1);
    const uint8_t xv = (uint8_t)f->xorv;
    uint32_t m = r0 / f->rows, r = r0 - m * f->rows;
    for (uint32_t q = r0; q < r1; q++) {
        const uint8_t *s = f->src + m * f->ms + r * f->rs;
        uint8_t *d = f->dst + q * f->Kp;
        for (uint32_t k = 0; k < f->cols; k++, s += f->cs)
            d[k] = (uint8_t)(*s ^ xv);
        for (uint32_t k = f->cols; k < f->Kp; k++)
            d[k] = 0;
        if (++r == f->rows) {
            r = 0;
            m++;
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * tso_rowsum: s[r] = sum of the int8 bytes of row r of p [rows][Kp] (the input-side
 * correction when the weight zero point is not 0). */
typedef struct {
    TSR_FIELD(const int8_t, p);
    TSR_FIELD(int32_t, s);
    uint32_t rows, Kp;
} tso_rowsum_fields;

void tso_rowsum(const tso_rowsum_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->rows, r0, r1);
    for (uint32_t r = r0; r < r1; r++) {
        const int8_t *p = f->p + r * f->Kp;
        int32_t acc = 0;
        for (uint32_t k = 0; k < f->Kp; k++)
            acc += p[k];
        f->s[r] = acc;
    }
}

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

/* ---------------------------------------------------------------------------------------
 * Element keys: kind 0 int8, 1 uint8 (bytes), 2 float32 (words; key = bits, or bits ^
 * 0x7fffffff for negative floats, so that keys order like the values). */
static inline int32_t load_key(const uint8_t *base, uint32_t i, uint32_t kind)
{
    if (kind == 0)
        return (int8_t)base[i];
    if (kind == 1)
        return base[i];
    int32_t b = ((const int32_t *)base)[i];
    return b ^ ((b >> 31) & 0x7fffffff);
}

static inline void store_key(uint8_t *base, uint32_t i, uint32_t kind, int32_t key)
{
    if (kind == 2)
        ((int32_t *)base)[i] = key ^ ((key >> 31) & 0x7fffffff);
    else if (kind == 3)
        ((int32_t *)base)[i] = key;
    else
        base[i] = (uint8_t)key;
}

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

void tso_maxpool(const tso_maxpool_fields *f, uint32_t part, uint32_t nparts)
{
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

/* ---------------------------------------------------------------------------------------
 * tso_zpfix: zero-point corrections of int32 accumulators acc [rows][cols]:
 * acc[r][c] -= zw[c] * rsum[r] + za * csum[c]   (32-bit wrapping; either term optional). */
typedef struct {
    TSR_FIELD(int32_t, acc);
    TSR_FIELD(const int32_t, rsum);
    TSR_FIELD(const int32_t, csum);
    TSR_FIELD(const int32_t, zw);
    uint32_t rows, cols, use_r, use_c;
    int32_t za;
} tso_zpfix_fields;

void tso_zpfix(const tso_zpfix_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->rows, r0, r1);
    for (uint32_t r = r0; r < r1; r++) {
        uint32_t *a = (uint32_t *)f->acc + r * f->cols;
        uint32_t rs = f->use_r ? (uint32_t)f->rsum[r] : 0u;
        for (uint32_t c = 0; c < f->cols; c++) {
            uint32_t v = a[c];
            if (f->use_r)
                v -= (uint32_t)f->zw[c] * rs;
            if (f->use_c)
                v -= (uint32_t)f->za * (uint32_t)f->csum[c];
            a[c] = v;
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * tso_planesum: s[p] = bias + sum of the hw 8-bit elements of plane p (signed if is_signed). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(int32_t, s);
    uint32_t planes, hw, is_signed;
    int32_t bias;
} tso_planesum_fields;

void tso_planesum(const tso_planesum_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->planes, p0, p1);
    for (uint32_t p = p0; p < p1; p++) {
        const uint8_t *x = f->x + p * f->hw;
        int32_t acc = f->bias;
        if (f->is_signed)
            for (uint32_t i = 0; i < f->hw; i++)
                acc += (int8_t)x[i];
        else
            for (uint32_t i = 0; i < f->hw; i++)
                acc += x[i];
        f->s[p] = acc;
    }
}
