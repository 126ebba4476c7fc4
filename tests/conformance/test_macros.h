/* Self-checking test macros in the style of riscv-tests (rv32ui / rv32um), for Tessera.
 *
 * Every test case loads its test number into TESTNUM (gp, x3) first; a mismatch branches to
 * `fail`, which halts the context with `ecall` and a0 = the failing test number. Falling through
 * every case reaches `pass`: `ecall` with a0 = 0. There is no tohost: the exit code of each
 * context is its a0 at the ecall (docs/architecture.md 3.1). Every context of every tile runs
 * the same code (entry 0), so results must not depend on the context or tile.
 */
#define TESTNUM gp

#define RVTEST_CODE_BEGIN  .section .text.init; .align 2; .globl _start; _start:
#define RVTEST_PASS        li a0, 0; ecall
#define RVTEST_FAIL        mv a0, TESTNUM; ecall
#define RVTEST_CODE_END    pass: RVTEST_PASS; fail: RVTEST_FAIL
#define TEST_PASSFAIL      bne x0, TESTNUM, pass; fail: RVTEST_FAIL; pass: RVTEST_PASS

#define MASK_XLEN(x) ((x) & 0xffffffff)
#define SEXT_IMM(x)  ((x) | (-(((x) >> 11) & 1) << 11))

#define TEST_CASE(testnum, testreg, correctval, code...) \
test_ ## testnum: \
    li TESTNUM, testnum; \
    code; \
    li x7, MASK_XLEN(correctval); \
    bne testreg, x7, fail;

#define TEST_IMM_OP(testnum, inst, result, val1, imm) \
    TEST_CASE(testnum, x14, result, li x1, MASK_XLEN(val1); inst x14, x1, SEXT_IMM(imm))

#define TEST_IMM_SRC1_EQ_DEST(testnum, inst, result, val1, imm) \
    TEST_CASE(testnum, x1, result, li x1, MASK_XLEN(val1); inst x1, x1, SEXT_IMM(imm))

#define TEST_IMM_ZERODEST(testnum, inst, val1, imm) \
    TEST_CASE(testnum, x0, 0, li x1, MASK_XLEN(val1); inst x0, x1, SEXT_IMM(imm))

#define TEST_RR_OP(testnum, inst, result, val1, val2) \
    TEST_CASE(testnum, x14, result, li x1, MASK_XLEN(val1); li x2, MASK_XLEN(val2); \
              inst x14, x1, x2)

#define TEST_RR_SRC1_EQ_DEST(testnum, inst, result, val1, val2) \
    TEST_CASE(testnum, x1, result, li x1, MASK_XLEN(val1); li x2, MASK_XLEN(val2); \
              inst x1, x1, x2)

#define TEST_RR_SRC2_EQ_DEST(testnum, inst, result, val1, val2) \
    TEST_CASE(testnum, x2, result, li x1, MASK_XLEN(val1); li x2, MASK_XLEN(val2); \
              inst x2, x1, x2)

#define TEST_RR_SRC12_EQ_DEST(testnum, inst, result, val1) \
    TEST_CASE(testnum, x1, result, li x1, MASK_XLEN(val1); inst x1, x1, x1)

#define TEST_RR_ZEROSRC1(testnum, inst, result, val) \
    TEST_CASE(testnum, x2, result, li x1, MASK_XLEN(val); inst x2, x0, x1)

#define TEST_RR_ZEROSRC2(testnum, inst, result, val) \
    TEST_CASE(testnum, x2, result, li x1, MASK_XLEN(val); inst x2, x1, x0)

#define TEST_RR_ZERODEST(testnum, inst, val1, val2) \
    TEST_CASE(testnum, x0, 0, li x1, MASK_XLEN(val1); li x2, MASK_XLEN(val2); inst x0, x1, x2)

/* load: base register points at `base`, loads at `offset` */
#define TEST_LD_OP(testnum, inst, result, offset, base) \
    TEST_CASE(testnum, x14, result, la x15, base; inst x14, offset(x15))

/* store then load back */
#define TEST_ST_OP(testnum, load_inst, store_inst, result, offset, base) \
    TEST_CASE(testnum, x14, result, la x15, base; li x1, MASK_XLEN(result); \
              store_inst x1, offset(x15); load_inst x14, offset(x15))

/* branch taken: must reach 2f; not taken: must fall through */
#define TEST_BR2_OP_TAKEN(testnum, inst, val1, val2) \
test_ ## testnum: \
    li TESTNUM, testnum; \
    li x1, MASK_XLEN(val1); \
    li x2, MASK_XLEN(val2); \
    inst x1, x2, 2f; \
    bne x0, TESTNUM, fail; \
1:  bne x0, TESTNUM, 3f; \
2:  inst x1, x2, 1b; \
    bne x0, TESTNUM, fail; \
3:

#define TEST_BR2_OP_NOTTAKEN(testnum, inst, val1, val2) \
test_ ## testnum: \
    li TESTNUM, testnum; \
    li x1, MASK_XLEN(val1); \
    li x2, MASK_XLEN(val2); \
    inst x1, x2, 1f; \
    bne x0, TESTNUM, 2f; \
1:  bne x0, TESTNUM, fail; \
2:  inst x1, x2, 1b; \
3:
