/* prog.c -- the README's first C program (SPMD: every context of every tile runs it).
 * Context c of tile t halts with exit code sum_squares(t * N + c, N): the sum of the
 * squares of N consecutive integers starting at t * N + c (N = 8 unless -DN=...).
 *   .venv/bin/tessera cc examples/prog.c -I examples/include -o prog.elf
 *   .venv/bin/tessera exec prog.elf */
#include <tessera.h>
#include "vecops.h"          /* examples/include/vecops.h */

#ifndef N
#define N 8
#endif

int main(void)
{
    uint32_t t = tsr_tile_id(), c = tsr_context_id();
    return (int)sum_squares(t * N + c, N);
}
