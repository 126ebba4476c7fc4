# rv32ui: loads and stores of every width, sign / zero extension, byte enables, negative
# offsets, la / li / .data.
#include "test_macros.h"

RVTEST_CODE_BEGIN
  TEST_LD_OP( 2, lb,  0xffffffff, 0,  tdat)
  TEST_LD_OP( 3, lb,  0x00000000, 1,  tdat)
  TEST_LD_OP( 4, lb,  0xfffffff0, 2,  tdat)
  TEST_LD_OP( 5, lb,  0x0000000f, 3,  tdat)
  TEST_LD_OP( 6, lb,  0x00000000, -3, tdat4)
  TEST_LD_OP( 7, lbu, 0x000000ff, 0,  tdat)
  TEST_LD_OP( 8, lbu, 0x00000000, 1,  tdat)
  TEST_LD_OP( 9, lbu, 0x000000f0, 2,  tdat)
  TEST_LD_OP(10, lbu, 0x0000000f, 3,  tdat)
  TEST_LD_OP(11, lh,  0x000000ff, 0,  hdat)
  TEST_LD_OP(12, lh,  0xffffff00, 2,  hdat)
  TEST_LD_OP(13, lh,  0x00000ff0, 4,  hdat)
  TEST_LD_OP(14, lh,  0xfffff00f, 6,  hdat)
  TEST_LD_OP(15, lh,  0xffffff00, -6, hdat4)
  TEST_LD_OP(16, lhu, 0x000000ff, 0,  hdat)
  TEST_LD_OP(17, lhu, 0x0000ff00, 2,  hdat)
  TEST_LD_OP(18, lhu, 0x00000ff0, 4,  hdat)
  TEST_LD_OP(19, lhu, 0x0000f00f, 6,  hdat)
  TEST_LD_OP(20, lw,  0x00ff00ff, 0,  wdat)
  TEST_LD_OP(21, lw,  0xff00ff00, 4,  wdat)
  TEST_LD_OP(22, lw,  0x0ff00ff0, 8,  wdat)
  TEST_LD_OP(23, lw,  0xf00ff00f, 12, wdat)
  TEST_LD_OP(24, lw,  0xf00ff00f, -4, wdat4)
  # stores, read back with the same width
  TEST_ST_OP(30, lb,  sb, 0xffffffaa, 0, sbuf)
  TEST_ST_OP(31, lb,  sb, 0x00000000, 1, sbuf)
  TEST_ST_OP(32, lh,  sh, 0xffffefa0, 2, sbuf)
  TEST_ST_OP(33, lhu, sh, 0x0000aa0a, 4, sbuf)
  TEST_ST_OP(34, lw,  sw, 0xaabbccdd, 8, sbuf)
  TEST_ST_OP(35, lw,  sw, 0x12345678, -4, sbuf4)
  # byte enables: sb / sh modify only their bytes of a word
test_40:
  li TESTNUM, 40
  la x15, sbuf2
  li x1, 0x11223344
  sw x1, 0(x15)
  li x2, 0xa5
  sb x2, 1(x15)
  lw x14, 0(x15)
  li x7, 0x1122a544
  bne x14, x7, fail
test_41:
  li TESTNUM, 41
  li x2, 0xbeef
  sh x2, 2(x15)
  lw x14, 0(x15)
  li x7, 0xbeefa544
  bne x14, x7, fail
test_42:
  li TESTNUM, 42
  lbu x14, 3(x15)
  li x7, 0xbe
  bne x14, x7, fail
  lh x14, 2(x15)
  li x7, 0xffffbeef
  bne x14, x7, fail
  # store data from a register with high bits set: only the low bits are stored
test_43:
  li TESTNUM, 43
  li x1, 0
  sw x1, 4(x15)
  li x2, 0xdeadbe77
  sb x2, 4(x15)
  sh x2, 6(x15)
  lw x14, 4(x15)
  li x7, 0xbe770077
  bne x14, x7, fail
  # load into x0 has no effect
test_44:
  li TESTNUM, 44
  la x15, wdat
  lw x0, 0(x15)
  bne x0, x14, 1f
  j fail
1:
  mv x14, x0
  bnez x14, fail
  TEST_PASSFAIL

  .data
  .align 4
tdat:
  .byte 0xff, 0x00, 0xf0, 0x0f
tdat4:
  .byte 0x00, 0x00, 0x00, 0x00
hdat:
  .half 0x00ff, 0xff00, 0x0ff0, 0xf00f
hdat4:
  .half 0, 0
wdat:
  .word 0x00ff00ff, 0xff00ff00, 0x0ff00ff0, 0xf00ff00f
wdat4:
  .word 0
sbuf:
  .word 0xefefefef, 0xefefefef, 0xefefefef
sbuf4:
  .word 0xefefefef
sbuf2:
  .word 0, 0
