/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h and
 * tso_sf.h (soft float32). */
#include <stdint.h>
#include "tso_common.h"
#include "tso_sf.h"

/* ---------------------------------------------------------------------------------------
 * tso_qlsoftmax: com.microsoft QLinearSoftmax as onnxruntime computes it
 * (tessera.golden_model.kernels.qlinear.qlinear_softmax). rows rows of D elements; row r has
 * element d at (r / inner) * D * inner + (r % inner) + d * inner. Per row: m = max;
 * e = tab[x - m + 255] (uint8) or tab[(x - m + 127) & 0xff] (int8); s = sum of e in float32 in
 * order; y = min(cvt(fl32(fl32(e * Y) / s)) + yz, hi). tab = the 256 float32 exp values
 * (host, the reference); Y = floor(1 / y_scale) as float32 bits. Work split over rows. */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(uint8_t, y);
    TSR_FIELD(const int32_t, tab);
    uint32_t rows, D, inner, is_signed, ysc;
    int32_t yz, hi;
} tso_qlsoftmax_fields;

void tso_qlsoftmax(const tso_qlsoftmax_fields *f, uint32_t part, uint32_t nparts)
{
    CHUNK(f->rows, r0, r1);
    const uint32_t *const T = (const uint32_t *)f->tab;
    const uint32_t D = f->D, inner = f->inner, sgn = f->is_signed, ysc = f->ysc;
    const int32_t yz = f->yz, hi = f->hi;
    for (uint32_t r = r0; r < r1; r++) {
        const uint32_t base = (r / inner) * D * inner + (r % inner);
        const uint8_t *px = f->x + base;
        uint8_t *py = f->y + base;
        int32_t m = -1000;
        for (uint32_t d = 0; d < D; d++) {
            const int32_t v = sgn ? (int32_t)(int8_t)px[d * inner] : (int32_t)px[d * inner];
            m = v > m ? v : m;
        }
        const int32_t off = sgn ? 127 - m : 255 - m;
        uint32_t s = 0;
        for (uint32_t d = 0; d < D; d++) {
            const int32_t v = sgn ? (int32_t)(int8_t)px[d * inner] : (int32_t)px[d * inner];
            s = sf_add(s, T[(uint32_t)(v + off) & 0xffu]);
        }
        for (uint32_t d = 0; d < D; d++) {
            const int32_t v = sgn ? (int32_t)(int8_t)px[d * inner] : (int32_t)px[d * inner];
            const uint32_t e = T[(uint32_t)(v + off) & 0xffu];
            int32_t q = sf_cvt_rne(sf_div(sf_mul(e, ysc), s)) + yz;
            q = q > hi ? hi : q;
            py[d * inner] = (uint8_t)q;
        }
    }
}
