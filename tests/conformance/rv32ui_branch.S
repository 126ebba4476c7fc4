# rv32ui: conditional branches (taken / not taken, both directions), jal, jalr (link value,
# bit 0 of the target cleared, rd == rs1).
#include "test_macros.h"

RVTEST_CODE_BEGIN
  TEST_BR2_OP_TAKEN( 2, beq,  0,  0)
  TEST_BR2_OP_TAKEN( 3, beq,  1,  1)
  TEST_BR2_OP_TAKEN( 4, beq, -1, -1)
  TEST_BR2_OP_NOTTAKEN( 5, beq,  0,  1)
  TEST_BR2_OP_NOTTAKEN( 6, beq,  1,  0)
  TEST_BR2_OP_NOTTAKEN( 7, beq, -1,  1)
  TEST_BR2_OP_TAKEN( 8, bne,  0,  1)
  TEST_BR2_OP_TAKEN( 9, bne, -1,  1)
  TEST_BR2_OP_NOTTAKEN(10, bne,  0,  0)
  TEST_BR2_OP_NOTTAKEN(11, bne, -1, -1)
  TEST_BR2_OP_TAKEN(12, blt,  0,  1)
  TEST_BR2_OP_TAKEN(13, blt, -1,  1)
  TEST_BR2_OP_TAKEN(14, blt, -2, -1)
  TEST_BR2_OP_TAKEN(15, blt, 0x80000000, 0x7fffffff)
  TEST_BR2_OP_NOTTAKEN(16, blt,  1,  0)
  TEST_BR2_OP_NOTTAKEN(17, blt,  1, -1)
  TEST_BR2_OP_NOTTAKEN(18, blt, -1, -2)
  TEST_BR2_OP_NOTTAKEN(19, blt,  1,  1)
  TEST_BR2_OP_TAKEN(20, bge,  0,  0)
  TEST_BR2_OP_TAKEN(21, bge,  1,  0)
  TEST_BR2_OP_TAKEN(22, bge, -1, -2)
  TEST_BR2_OP_TAKEN(23, bge, 0x7fffffff, 0x80000000)
  TEST_BR2_OP_NOTTAKEN(24, bge,  0,  1)
  TEST_BR2_OP_NOTTAKEN(25, bge, -2, -1)
  TEST_BR2_OP_NOTTAKEN(26, bge, 0x80000000, 0)
  TEST_BR2_OP_TAKEN(27, bltu, 0, 1)
  TEST_BR2_OP_TAKEN(28, bltu, 0xfffffffe, 0xffffffff)
  TEST_BR2_OP_TAKEN(29, bltu, 0x7fffffff, 0x80000000)
  TEST_BR2_OP_NOTTAKEN(30, bltu, 1, 0)
  TEST_BR2_OP_NOTTAKEN(31, bltu, 0xffffffff, 0xfffffffe)
  TEST_BR2_OP_NOTTAKEN(32, bltu, 0x80000000, 0x7fffffff)
  TEST_BR2_OP_NOTTAKEN(33, bltu, 5, 5)
  TEST_BR2_OP_TAKEN(34, bgeu, 0, 0)
  TEST_BR2_OP_TAKEN(35, bgeu, 0xffffffff, 0xfffffffe)
  TEST_BR2_OP_TAKEN(36, bgeu, 0x80000000, 0x7fffffff)
  TEST_BR2_OP_NOTTAKEN(37, bgeu, 0, 1)
  TEST_BR2_OP_NOTTAKEN(38, bgeu, 0x7fffffff, 0x80000000)
  TEST_BR2_OP_NOTTAKEN(39, bgeu, 0xfffffffe, 0xffffffff)

  # jal: link = pc + 4, jumps forward and backward
test_40:
  li TESTNUM, 40
  li ra, 0
  jal x4, 1f
2:
  j fail
1:
  la x5, 2b
  bne x4, x5, fail
  j 3f
4:
  j 5f
3:
  jal x0, 4b
  j fail
5:
  # jalr: target = (rs1 + imm) & ~1, link = pc + 4
test_41:
  li TESTNUM, 41
  la x5, 1f
  addi x5, x5, -3
  jalr x6, 4(x5)        # (1f - 3 + 4) & ~1 = 1f + 0 (bit 0 cleared)
  j fail
1:
  la x7, 1b
  addi x7, x7, -4
  bne x6, x7, fail
test_42:
  li TESTNUM, 42
  la x5, 1f
  jalr x5, 0(x5)        # rd == rs1: target from the old value
2:
  j fail
1:
  la x7, 2b
  bne x5, x7, fail
test_43:
  li TESTNUM, 43
  la x5, 1f
  jalr x0, 0(x5)        # rd = x0: no link
  j fail
1:
  bne x0, x0, fail
  # branch with x0 operands
test_44:
  li TESTNUM, 44
  bne x0, x0, fail
  bltu x0, x0, fail
  blt x0, x0, fail
  bgeu x0, x0, 1f
  j fail
1:
  TEST_PASSFAIL
