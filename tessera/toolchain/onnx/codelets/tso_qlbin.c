/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h and
 * tso_sf.h (soft float32). */
#include <stdint.h>
#include "tso_common.h"
#include "tso_sf.h"

/* ---------------------------------------------------------------------------------------
 * tso_qlbin: com.microsoft QLinearAdd (op 0) and QLinearMul (op 1) exactly as onnxruntime's
 * CPU kernels compute them in float32 (tessera.golden_model.kernels.qlinear):
 *
 *   op 0:  y[i] = sat(cvt(fma(fl32(x[ix]), r, tab[u[iu]])))   tab[k] = fma(fl32(code k), rB, F)
 *   op 1:  y[i] = sat(cvt(fl32(fl32(fl32(p) * r) + zc)))       p = (x[ix] - zx) * (u[iu] - zu)
 *
 * with ix = (i / xrep) % xper and iu = (i / urep) % uper (broadcasting), x and u 8-bit codes
 * (signed: is_signed), r and zc float32 bits, tab the 256 float32 words indexed by u's byte
 * (op 0, computed on the host with the reference), cvt = cvtps2dq and sat = the saturating
 * packs to [lo, hi]. xorv (0 or 0x80) is XORed into every input and output byte: 0x80 computes
 * int8 data in the uint8 domain (codes + 128), as onnxruntime does after its QDQ s8->u8
 * conversion.
 *
 * Fast path (fast = 1): the exact value s of the result before the float32 roundings, in fixed
 * point with 24 fraction bits, from integer tables the host computes exactly (op 0: fx = the
 * 256 int64 values x*rA by x's byte, then the 256 int64 values tab[u]; op 1: fx = {mantissa
 * mR of r, shift, int64 zc}: s = ((p * mR) << shift or >> -shift) + zc). The float32 roundings
 * move the value by less than WIN (2^-14 resp. 2^-13 with margin) where |s| < 512, so unless
 * s lies that close to a half-integer, cvt gives floor(s + 1/2); |s| >= 512 saturates. Only
 * the remaining elements (and |s| >= 2^30) take the soft-float path. */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(const uint8_t, u);
    TSR_FIELD(uint8_t, y);
    TSR_FIELD(const int32_t, tab);
    TSR_FIELD(const int32_t, fx);
    uint32_t n, xrep, xper, urep, uper, op, is_signed, r, zc, xorv, fast;
    int32_t zx, zu, lo, hi;
} tso_qlbin_fields;

/* 1 and *y if the fixed-point value s (2^-24 units) decides cvt(fl32(...)); 0: slow path */
static inline int fast_round(int64_t s, int32_t win, int32_t *y)
{
    const int64_t big = (int64_t)512 << 24, huge = (int64_t)1 << 54;
    if (s >= big || s <= -big) {
        if (s >= huge || s <= -huge)
            return 0;
        *y = s > 0 ? (1 << 20) : -(1 << 20);
        return 1;
    }
    const int32_t d = (int32_t)((uint32_t)s & 0xffffffu) - 0x800000;
    if (d <= win && d >= -win)
        return 0;
    *y = (int32_t)(s >> 24) + (d > 0);
    return 1;
}

void tso_qlbin(const tso_qlbin_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->n, i0, i1);
    const uint8_t *const X = f->x, *const U = f->u;
    uint8_t *const Y = f->y;
    const uint32_t *const T = (const uint32_t *)f->tab;
    const uint32_t xrep = f->xrep, xper = f->xper, urep = f->urep, uper = f->uper;
    const uint32_t op = f->op, sgn = f->is_signed, r = f->r, zc = f->zc, xorv = f->xorv;
    const int32_t zx = f->zx, zu = f->zu, lo = f->lo, hi = f->hi;
    const uint32_t fast = f->fast;
    const int64_t *const FX = (const int64_t *)f->fx;
    const uint32_t mr = (uint32_t)f->fx[0];
    const int32_t msh = f->fx[1];
    const int64_t mzc = fast && op == 1 ? FX[1] : 0;
    /* (quotient mod period, remainder) counters of i / rep */
    uint32_t xq = (i0 / xrep) % xper, xr = i0 % xrep, uq = (i0 / urep) % uper, ur = i0 % urep;
    for (uint32_t i = i0; i < i1; i++) {
        const uint32_t xb = X[xq] ^ xorv, ub = U[uq];
        const int32_t xv = sgn ? (int32_t)(int8_t)xb : (int32_t)xb;
        const uint32_t uc = ub ^ xorv;
        const int32_t uv = sgn ? (int32_t)(int8_t)uc : (int32_t)uc;
        const int32_t p = (xv - zx) * (uv - zu);
        int32_t y;
        int done = 0;
        if (fast) {
            int64_t sx;
            if (op == 0) {
                sx = FX[xb ^ xorv] + FX[256 + ub];
                done = fast_round(sx, 1 << 10, &y);
            } else {
                const int64_t prod = (int64_t)p * (int64_t)mr;
                sx = (msh >= 0 ? prod << msh : prod >> -msh) + mzc;
                done = fast_round(sx, 1 << 11, &y);
            }
        }
        if (!done) {
            const uint32_t v = op == 0 ? sf_fma(sf_from_int(xv), r, T[ub])
                                       : sf_add(sf_mul(sf_from_int(p), r), zc);
            y = sf_cvt_rne(v);
        }
        y = y < lo ? lo : y;
        y = y > hi ? hi : y;
        Y[i] = (uint8_t)((uint32_t)y ^ xorv);
        if (++xr == xrep) {
            xr = 0;
            if (++xq == xper)
                xq = 0;
        }
        if (++ur == urep) {
            ur = 0;
            if (++uq == uper)
                uq = 0;
        }
    }
}
