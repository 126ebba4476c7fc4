"""docs/architecture.md §3.1/§3.2 legal-encoding table, transcribed field by field.

Deliberately independent of tessera/spec/instructions.py: it is what the instruction table,
and every decoder derived from it, is checked against. Change it only together with the
contract.
"""

#: CSR numbers of §3.2; 0x800 (xprog) is the only writable one.
CSRS = {0xC00, 0xC80, 0xC02, 0xC82, 0xCC0, 0xCC1, 0xCC2, 0xCC3, 0xCC4, 0x800}


def legal(w: int, *, csr_rule: bool = True, engine: bool = True) -> bool:
    """True if ``w`` is a legal encoding (§3.1; with ``csr_rule`` also §3.2's CSR check).

    ``engine``: the configuration has a matrix engine (P = ``engine_macs`` > 0), which makes
    ``mrun`` and ``mwait`` legal (§3.1 CUSTOM_0 row, §12).
    """
    if w & 3 != 3:
        return False
    op, f3, f7 = w & 0x7F, (w >> 12) & 7, w >> 25
    if op in (0x37, 0x17, 0x6F):          # LUI AUIPC JAL
        return True
    if op == 0x67:                        # JALR
        return f3 == 0
    if op == 0x63:                        # BRANCH
        return f3 in (0, 1, 4, 5, 6, 7)
    if op == 0x03:                        # LOAD
        return f3 in (0, 1, 2, 4, 5)
    if op == 0x23:                        # STORE
        return f3 in (0, 1, 2)
    if op == 0x13:                        # OP-IMM (imm[11:5] of the shifts)
        if f3 == 1:
            return f7 == 0
        if f3 == 5:
            return f7 in (0, 0x20)
        return True
    if op == 0x33:                        # OP
        return f7 in (0, 1) or (f7 == 0x20 and f3 in (0, 5))
    if op == 0x0F:                        # MISC-MEM
        return f3 == 0
    if op == 0x73:                        # SYSTEM
        if w in (0x00000073, 0x00100073):
            return True
        if f3 not in (1, 2, 3, 5, 6, 7):
            return False
        if not csr_rule:
            return True
        csr, rs1 = w >> 20, (w >> 15) & 31
        writes = f3 in (1, 5) or rs1 != 0
        return csr in CSRS and (not writes or csr == 0x800)
    if op == 0x0B:                        # CUSTOM-0
        if f7 == 0 and f3 in (0, 1):      # dot4, dot4su
            return True
        rd, rs2 = (w >> 7) & 31, (w >> 20) & 31
        if engine and f3 == 2 and rd == 0 and rs2 == 0 and f7 == 0:   # mrun rs1 (any rs1)
            return True
        return engine and w == 0x0000300B                              # mwait
    if op == 0x2B:                        # CUSTOM-1
        return w in (0x0000002B, 0x0010002B)
    return False
