/* ONNX float32 arithmetic with integer instructions only (docs/architecture.md §11), bit-exact
 * with tessera.golden_model.kernels.float_quant:
 *
 *   tso_rqf      int32 accumulators -> 8-bit codes, y = clamp(rne(fl32(fl32(acc) * M))) + zp
 *   tso_quant    float32 -> 8-bit codes, ONNX QuantizeLinear (threshold table search)
 *   tso_dequant  8-bit / int32 codes -> float32, ONNX DequantizeLinear
 *
 * float32 values are carried as their IEEE-754 bit patterns in 32-bit words.
 * Every codelet splits its elements into contiguous chunks, one per part. */

/* Shared helpers of the ONNX importer's codelets (one codelet per .c file, so that a graph
 * links only the codelets it uses). */
#ifndef TSO_COMMON_H
#define TSO_COMMON_H
#include <stdint.h>
#include "tsr_graph.h"

#define CHUNK(total, lo, hi)                                   \
    uint32_t chunk_ = ((total) + nparts - 1) / nparts;          \
    uint32_t lo = part * chunk_, hi = lo + chunk_;              \
    if (hi > (total))                                           \
        hi = (total);                                           \
    if (lo >= hi)                                               \
        return

static inline uint32_t bitlen32(uint32_t v)
{
    uint32_t n = 0;
    if (v >> 16) { n += 16; v >>= 16; }
    if (v >> 8) { n += 8; v >>= 8; }
    if (v >> 4) { n += 4; v >>= 4; }
    if (v >> 2) { n += 2; v >>= 2; }
    if (v >> 1) { n += 1; v >>= 1; }
    return n + v;
}

static inline uint32_t bitlen64(uint64_t v)
{
    uint32_t hi = (uint32_t)(v >> 32);
    return hi ? 32 + bitlen32(hi) : bitlen32((uint32_t)v);
}

/* Round v (< 2^64) to 24 significant bits, nearest even: returns the mantissa (< 2^24) and
 * adds the number of dropped bits to *e. */
static inline uint32_t round24(uint64_t v, int32_t *e)
{
    uint32_t L = bitlen64(v);
    if (L <= 24)
        return (uint32_t)v;
    uint32_t d = L - 24;
    uint64_t q = v >> d, rem = v & ((1ull << d) - 1), half = 1ull << (d - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    if (q == (1ull << 24)) {
        q >>= 1;
        d++;
    }
    *e += (int32_t)d;
    return (uint32_t)q;
}

/* rne(q * 2^e) for q < 2^24 (a magnitude), saturating at 2^30. */
static inline uint32_t rne_scaled(uint32_t q, int32_t e)
{
    if (e >= 0)
        return (e >= 30 || (q >> (30 - e)) != 0) ? (1u << 30) : q << e;
    uint32_t d = (uint32_t)-e;
    if (d > 26)
        return 0;
    uint32_t y = q >> d, rem = q & ((1u << d) - 1), half = 1u << (d - 1);
    if (rem > half || (rem == half && (y & 1)))
        y++;
    return y;
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


#endif
