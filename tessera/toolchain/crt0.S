/* Tessera C runtime start (docs/architecture.md section 11).
 * Runs in every context of every tile (SPMD, all start at pc = 0):
 *   sp = sram_bytes - context_id * __stack_bytes, stack_limit = sp - __stack_bytes
 *   context 0 zeroes .bss (word by word, __bss_start..__bss_end)
 *   every context: sync TILE (so nobody reads .bss before it is zeroed), main(), ecall a0.
 * CSR numbers and the sync encoding come from the generated tessera.h. */
#include "tessera.h"

    .section .text.start, "ax"
    .globl _start
    .type _start, @function
_start:
    csrr    t0, TSR_CSR_CONTEXT_ID
    csrr    t1, TSR_CSR_SRAM_BYTES
    lui     t2, %hi(__stack_bytes)
    addi    t2, t2, %lo(__stack_bytes)
    mul     t3, t0, t2
    sub     sp, t1, t3
    sub     t3, sp, t2              /* the bottom of this context's stack ... */
    csrw    TSR_CSR_STACK_LIMIT, t3 /* ... is its stack limit (§7: sp below it faults) */
    bnez    t0, 2f
    lui     t4, %hi(__bss_start)
    addi    t4, t4, %lo(__bss_start)
    lui     t5, %hi(__bss_end)
    addi    t5, t5, %lo(__bss_end)
1:  bgeu    t4, t5, 2f
    sw      zero, 0(t4)
    addi    t4, t4, 4
    j       1b
2:  .insn i TSR_OPCODE_CUSTOM_1, TSR_FUNCT3_SYNC, x0, x0, TSR_SYNC_TILE
    jal     ra, main            /* one word: main is in range (SRAM <= 1 MiB) */
    ecall
    .size _start, . - _start
