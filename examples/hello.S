/* hello.S -- a bare program (tessera cc --no-crt): every context halts with
 * exit code tile_id * 16 + context_id. */
#include "tessera.h"
    .section .text.start, "ax"
    .globl _start
_start:
    csrr    a0, TSR_CSR_TILE_ID
    slli    a0, a0, 4
    csrr    a1, TSR_CSR_CONTEXT_ID
    add     a0, a0, a1
    ecall
