/* load_data.c -- per-tile input data from the command line (README, "Input data"):
 * `input` lives in .noinit, which crt0 does not touch, so the bytes that
 * `tessera exec --load TILE:input=FILE` writes before the start are still there.
 * Context 0 of each tile halts with the sum of its tile's four int32 inputs. */
#include <tessera.h>

int32_t input[4] __attribute__((section(".noinit")));

int main(void)
{
    if (tsr_context_id() != 0)
        return 0;
    return input[0] + input[1] + input[2] + input[3];
}
