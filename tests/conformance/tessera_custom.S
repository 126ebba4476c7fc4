# Tessera extensions: dot4 / dot4su (architecture 3.3), the Zicsr subset and the read-only
# CSRs (3.2), fence as a no-op. Expected values computed by hand from the spec.
#include "test_macros.h"

RVTEST_CODE_BEGIN
  # dot4: 4*4 + 3*3 + 2*2 + 1*(-1) = 28, plus accumulator 10
  TEST_CASE(2, x14, 38, li x14, 10; li x1, 0x01020304; li x2, 0xff020304; .insn r 0x0b, 0, 0, x14, x1, x2)
  # dot4su: rs2 bytes unsigned: 16 + 9 + 4 + 255 = 284, plus 10
  TEST_CASE(3, x14, 294, li x14, 10; li x1, 0x01020304; li x2, 0xff020304; .insn r 0x0b, 1, 0, x14, x1, x2)
  # dot4: 4 * (-128 * -128) = 65536
  TEST_CASE(4, x14, 0x10000, li x14, 0; li x1, 0x80808080; .insn r 0x0b, 0, 0, x14, x1, x1)
  # dot4su: 4 * (-128 * 255) = -130560
  TEST_CASE(5, x14, 0xfffe0200, li x14, 0; li x1, 0x80808080; li x2, -1; .insn r 0x0b, 1, 0, x14, x1, x2)
  # accumulator wraps mod 2^32
  TEST_CASE(6, x14, 0x8000fc03, li x14, 0x7fffffff; li x1, 0x7f7f7f7f; .insn r 0x0b, 0, 0, x14, x1, x1)
  # consecutive instructions of one context issue exactly context_count cycles apart
  TEST_CASE(7, x14, 0, csrr x1, 0xC00; csrr x2, 0xC00; csrr x3, 0xCC3; sub x14, x2, x1; sub x14, x14, x3)
  # instret counts this context's retired instructions
  TEST_CASE(8, x14, 2, csrr x1, 0xC02; nop; csrr x2, 0xC02; sub x14, x2, x1)
  TEST_CASE(9, x14, 0, csrr x1, 0xC82; csrr x2, 0xC80; or x14, x1, x2)
  # context_id < context_count, tile_id < tile_count, sram_bytes a power of two >= 16 KiB
  TEST_CASE(10, x14, 1, csrr x1, 0xCC1; csrr x2, 0xCC3; sltu x14, x1, x2)
  TEST_CASE(11, x14, 1, csrr x1, 0xCC0; csrr x2, 0xCC2; sltu x14, x1, x2)
  TEST_CASE(12, x14, 0, csrr x1, 0xCC4; addi x2, x1, -1; and x14, x1, x2)
  TEST_CASE(13, x14, 1, csrr x1, 0xCC4; li x2, 16383; sltu x14, x2, x1)
  # xprog (per tile, shared by the contexts, which all run this code one cycle apart): only
  # idempotent writes, and old values read only where no context changes the CSR
  TEST_CASE(14, x14, 0x1238, li x1, 0x1238; csrw 0x800, x1; csrr x14, 0x800)
  TEST_CASE(15, x14, 0x123f, li x1, 0x7; csrs 0x800, x1; csrr x14, 0x800)
  TEST_CASE(16, x14, 0x1230, li x1, 0xf; csrc 0x800, x1; csrr x14, 0x800)
  TEST_CASE(17, x14, 0x8, csrwi 0x800, 8; csrr x14, 0x800)
  TEST_CASE(18, x14, 0x18, csrsi 0x800, 0x10; csrr x14, 0x800)
  TEST_CASE(19, x14, 0x10, csrci 0x800, 8; csrr x14, 0x800)
  TEST_CASE(20, x14, 0x10, li x1, 0x10; csrrw x14, 0x800, x1)
  TEST_CASE(21, x14, 0x10, li x1, 0x10; csrrs x14, 0x800, x1)
  TEST_CASE(22, x14, 0x10, csrrci x14, 0x800, 1)
  TEST_CASE(23, x14, 0x10, csrrs x14, 0x800, x0)
  TEST_CASE(24, x14, 0, csrwi 0x800, 0; csrr x14, 0x800)
  # fence: no effect
  TEST_CASE(25, x14, 5, li x14, 5; fence; fence rw, rw)
  TEST_PASSFAIL
