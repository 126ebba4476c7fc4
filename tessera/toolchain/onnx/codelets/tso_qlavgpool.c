/* ONNX importer codelet (docs/compiler.md, "ONNX importer"); helpers in tso_common.h and
 * tso_sf.h (soft float32). */
#include <stdint.h>
#include "tso_common.h"
#include "tso_sf.h"

/* ---------------------------------------------------------------------------------------
 * tso_qlavgpool: com.microsoft QLinearAveragePool as onnxruntime computes it in float32
 * (tessera.golden_model.kernels.qlinear.qlinear_average_pool): for each window (start
 * o*stride - pad, clipped to the input) acc = 0.0f; acc += dtab[x] in row-major order;
 * acc /= count (count_include_pad: kh*kw, else the clipped window's size);
 * y = clamp(cvt(fl32(fl32(acc / ys) + yz)), lo, hi). dtab = the 256 dequantized float32 values
 * fl32(x_scale * fl32(x - x_zp)) indexed by the input byte (computed on the host). S planes
 * (sample x channel) with element strides xs/xh/xw and ys_/yh/yw; work split over the planes'
 * output rows. xorv (0 or 0x80) is XORed into the output bytes (int8 data computed in the uint8
 * domain, as onnxruntime does after its QDQ s8->u8 conversion; lo/hi/yz are then uint8). */
typedef struct {
    TSR_FIELD(const uint8_t, x);
    TSR_FIELD(uint8_t, y);
    TSR_FIELD(const int32_t, dtab);
    uint32_t S, H, W, OH, OW, kh, kw, sh, sw;
    int32_t pt, pl;
    uint32_t xs, xh, xw, ys_, yh, yw, cip, ysc, yz, xorv;
    int32_t lo, hi;
} tso_qlavgpool_fields;

void tso_qlavgpool(const tso_qlavgpool_fields *f, uint32_t part, uint32_t nparts)
{
    const uint32_t OH = f->OH, OW = f->OW, rows = f->S * OH;
    CHUNK(rows, r0, r1);
    const uint8_t *const X = f->x;
    uint8_t *const Y = f->y;
    const uint32_t *const D = (const uint32_t *)f->dtab;
    const int32_t H = (int32_t)f->H, W = (int32_t)f->W, kh = (int32_t)f->kh, kw = (int32_t)f->kw;
    const uint32_t ysc = f->ysc, yz = f->yz, cip = f->cip;
    const int32_t lo = f->lo, hi = f->hi;
    uint32_t s = r0 / OH, oh = r0 - s * OH;
    for (uint32_t row = r0; row < r1; row++) {
        int32_t hs = (int32_t)(oh * f->sh) - f->pt, he = hs + kh;
        he = he < H ? he : H;
        hs = hs > 0 ? hs : 0;
        for (uint32_t ow = 0; ow < OW; ow++) {
            int32_t ws = (int32_t)(ow * f->sw) - f->pl, we = ws + kw;
            we = we < W ? we : W;
            ws = ws > 0 ? ws : 0;
            uint32_t acc = 0;
            for (int32_t h = hs; h < he; h++) {
                const uint8_t *px = X + s * f->xs + (uint32_t)h * f->xh + (uint32_t)ws * f->xw;
                for (int32_t w = ws; w < we; w++, px += f->xw)
                    acc = sf_add(acc, D[*px]);
            }
            const int32_t cnt = cip ? kh * kw : (he - hs) * (we - ws);
            acc = sf_div(acc, sf_from_int(cnt));
            int32_t q = sf_cvt_rne(sf_add(sf_div(acc, ysc), yz));
            q = q < lo ? lo : q;
            q = q > hi ? hi : q;
            Y[s * f->ys_ + oh * f->yh + ow * f->yw] = (uint8_t)((uint32_t)q ^ f->xorv);
        }
        if (++oh == OH) {
            oh = 0;
            s++;
        }
    }
}
