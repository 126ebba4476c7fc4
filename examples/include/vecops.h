/* vecops.h -- a header of examples/prog.c, found through `-I examples/include`. */
#ifndef VECOPS_H
#define VECOPS_H
#include <stdint.h>

/* start^2 + (start+1)^2 + ... + (start+n-1)^2, wrapping at 32 bits. */
static inline uint32_t sum_squares(uint32_t start, uint32_t n)
{
    uint32_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += (start + i) * (start + i);
    return s;
}
#endif
