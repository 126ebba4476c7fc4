"""The ISA semantics of the vectorized golden model: what one operation does to the [N] vectors.

docs/architecture.md §3 (RV32IM, Zicsr subset, the custom instructions), §2 (memory access
and its faults), §7 (faults, the stack limit) and §12 (``mrun``/``mwait`` as seen by the
core). :meth:`IsaSemantics.execute` applies one decoded operation, issued by context c of a
set of tiles at cycle k, to the register files, pcs and CSRs of those tiles in one vectorized
step, and reports which of them retire. The operation's **M-stage** part (contract v2, §4: a
store's SRAM write, a load's SRAM read, the ``mrun``/``mwait`` decision of §12, all in
M = k + 4) is handed to the timing machinery as a memory-order record
(:mod:`tessera.golden_model.memorder`), which calls :meth:`IsaSemantics.memory_effects` and
:meth:`IsaSemantics.engine_decisions` in that cycle.

What is *not* here is the timing machinery (:mod:`tessera.golden_model.array`): which context
owns the issue slot, the fetch, the division turns, the M cycle, the state changes that become
visible at k + 5, the fault records' visibility, the barriers, the exchange phase and the stop.
The semantics reach it only through the two callables given to :class:`IsaSemantics`.
"""

from __future__ import annotations

import numpy as np

from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause
from tessera.spec.instructions import FUNCT3_MEM_UNSIGNED_BIT, Kind
from tessera.spec.isa import MACS_PER_DOT4
from tessera.spec.result import ContextState, Fault
from tessera.spec.timing import Stage

from .alu import ALU, branch_taken, dot4
from .contexts import Contexts
from .decode import ROW_OF, Op
from .engine import MatrixEngines
from .memorder import EngineWork, LoadWork, StoreWork
from .memory import Sram
from .tiles import Tiles

__all__ = ["IsaSemantics"]

_U32 = np.uint32
_M32 = 0xFFFFFFFF
_M_DELAY = int(Stage.M)
WAIT_TILE, WAIT_ARRAY, HALTED, FAULT = (int(ContextState.WAIT_TILE),
                                         int(ContextState.WAIT_ARRAY),
                                         int(ContextState.HALTED), int(ContextState.FAULT))


def _ops(kind: Kind) -> frozenset:
    return frozenset(op for op, row in ROW_OF.items() if row.kind is kind)


def _size(op) -> int:
    return 1 << (ROW_OF[op].funct3 & ~(1 << FUNCT3_MEM_UNSIGNED_BIT))


# Op groups from the instruction table's kinds; a load is (bytes, sign-extended).
_IMM_FORM = _ops(Kind.OP_IMM)
_BRANCHES = _ops(Kind.BRANCH)
_LOADS = {op: (_size(op), _size(op) < 4 and not ROW_OF[op].funct3 >> FUNCT3_MEM_UNSIGNED_BIT & 1)
          for op in _ops(Kind.LOAD)}
_STORES = {op: _size(op) for op in _ops(Kind.STORE)}
_CSR_OPS = _ops(Kind.CSR)


class IsaSemantics:
    """The operations of the ISA applied to the state records of one array.

    Parameters
    ----------
    contexts : tessera.golden_model.contexts.Contexts
        Registers, pcs, CSRs, exit codes and retire counts [N, T] (written).
    tiles : tessera.golden_model.tiles.Tiles
        xprog, macs, fault records [N] (written).
    sram : tessera.golden_model.memory.Sram
        The tiles' SRAM (loads, stores).
    engines : tessera.golden_model.engine.MatrixEngines
        The matrix engines (an accepted ``mrun`` hands them a command).
    state_change : callable ``(k, c, tiles, state, faults) -> None``
        Context c of ``tiles`` (int64 [M]) enters ``state`` (a ContextState value), visible
        at k + 5 (§4 "State changes"); HALTED counts the contexts out of the run (§7 "Stop");
        for FAULT, ``faults`` is the list of the tiles' fault records (one per tile, visible
        from k + 5), else None.
    m_stage : callable ``(k, work) -> None``
        Queue ``work`` (a :class:`~tessera.golden_model.memorder.StoreWork`, ``LoadWork`` or
        ``EngineWork``) of an instruction issued at k for its M cycle k + 4 (§4, §12).
    trace : bool
        Build the retire records of :attr:`tr`.

    Members
    -------
    tr : dict or None
        While tracing, the retire records of the current issue cycle: tile → dict (the keys of
        ``Array.trace``); the timing machinery sets it to ``{}`` before an issue and collects it.
    """

    def __init__(self, contexts: Contexts, tiles: Tiles, sram: Sram, engines: MatrixEngines,
                 state_change, m_stage, trace: bool):
        self.ctx = contexts
        self.tl = tiles
        self.sram = sram
        self.mx = engines
        self.state_change = state_change
        self.m_stage = m_stage
        self.trace_on = bool(trace)
        self.n, self.t = contexts.pc.shape
        self.nbytes = sram.nbytes
        self.tr: dict | None = None

    def execute(self, op, k, c, tiles, pcs, rd, rs1, rs2, imm, words):
        """Execute operation ``op`` on ``tiles`` (context c, issue cycle k).

        Parameters
        ----------
        op : tessera.golden_model.decode.Op
            The decoded operation (a division: its last turn, §4 "Division").
        k, c : int
            Issue cycle and context.
        tiles : numpy.ndarray, int64, shape (M,)
            The issuing tiles.
        pcs : numpy.ndarray, uint32, shape (M,)
            Their pcs.
        rd, rs1, rs2, imm : int or numpy.ndarray (int64 [M]; imm uint32 [M])
            Decoded fields: scalars when every tile issues the same word, else per tile.
        words : numpy.ndarray, uint32, shape (M,)
            The instruction words.

        Returns
        -------
        None, numpy.ndarray or False
            Which of ``tiles`` retire at this issue: None all of them, a bool [M] mask, False
            none (the operation faulted on every tile: ``ebreak``, illegal; or it is an
            ``mrun``/``mwait``, which retires or not in its M cycle,
            :meth:`engine_decisions`).
        """
        R = self.ctx.regs
        ok = None  # tiles that retire (None = all)
        if op in ALU:
            a = R[tiles, c, rs1]
            b = imm if op in _IMM_FORM else R[tiles, c, rs2]
            ok = self._write_result(k, c, tiles, pcs, rd, ALU[op](a, b))
        elif op in _LOADS:
            ok = self._load(op, k, c, tiles, pcs, rd, rs1, imm)
        elif op in _STORES:
            ok = self._store(op, k, c, tiles, pcs, rs1, rs2, imm)
        elif op in _BRANCHES:
            taken = branch_taken(op, R[tiles, c, rs1], R[tiles, c, rs2])
            target = (pcs + np.asarray(imm, dtype=_U32)).astype(_U32)
            ok = self._jump(k, c, tiles, pcs, target, taken, None)
        elif op == Op.JAL:
            target = (pcs + np.asarray(imm, dtype=_U32)).astype(_U32)
            ok = self._jump(k, c, tiles, pcs, target, None, rd)
        elif op == Op.JALR:
            target = (R[tiles, c, rs1] + np.asarray(imm, dtype=_U32)).astype(_U32) & _U32(~1 & _M32)
            ok = self._jump(k, c, tiles, pcs, target, None, rd)
        elif op == Op.LUI:
            ok = self._write_result(k, c, tiles, pcs, rd, np.broadcast_to(
                np.asarray(imm, dtype=_U32), tiles.shape))
        elif op == Op.AUIPC:
            ok = self._write_result(k, c, tiles, pcs, rd,
                                    (pcs + np.asarray(imm, dtype=_U32)).astype(_U32))
        elif op in (Op.DOT4, Op.DOT4SU):
            val = dot4(R[tiles, c, rd], R[tiles, c, rs1], R[tiles, c, rs2], op == Op.DOT4)
            ok = self._write_result(k, c, tiles, pcs, rd, val)
            self.tl.macs[tiles if ok is None else tiles[ok]] += MACS_PER_DOT4
        elif op in (Op.MRUN, Op.MWAIT):   # decided in M, k + 4 (§12): engine_decisions
            d = self.ctx.regs[tiles, c, rs1].astype(np.int64) if op == Op.MRUN else None
            self.m_stage(k, EngineWork(op, c, tiles.copy(), np.array(pcs, dtype=_U32), d,
                                       np.broadcast_to(np.asarray(words, dtype=_U32),
                                                       tiles.shape).copy(),
                                       self.trace_on))
            return False
        elif op in _CSR_OPS:
            ok = self._csr(op, k, c, tiles, pcs, rd, rs1, imm)
        elif op == Op.FENCE:
            self.ctx.pc[tiles, c] = pcs + _U32(4)
        elif op == Op.ECALL:
            self.ctx.exit_code[tiles, c] = R[tiles, c, 10]
            self.ctx.pc[tiles, c] = pcs + _U32(4)
            self.state_change(k, c, tiles, HALTED)
        elif op in (Op.SYNC_TILE, Op.SYNC_ARRAY):
            self.ctx.pc[tiles, c] = pcs + _U32(4)
            self.state_change(k, c, tiles, WAIT_TILE if op == Op.SYNC_TILE else WAIT_ARRAY)
        elif op == Op.EBREAK:
            self.fault(k, c, tiles, FaultCause.BREAKPOINT, pcs, pcs)
            return False
        else:  # Op.ILLEGAL: addr = the instruction word
            self.fault(k, c, tiles, FaultCause.ILLEGAL_INSTRUCTION, pcs, words)
            return False
        return ok

    def _sp_ok(self, k, c, tiles, pcs, rd, val):
        """§7 stack limit: mask of ``tiles`` whose write of ``val`` to ``rd`` is allowed (None:
        all); the others fault ``stack_overflow`` (addr = val)."""
        if np.ndim(rd) == 0:
            if rd != 2:
                return None
            bad = np.broadcast_to(np.asarray(val, dtype=_U32), np.shape(tiles)) \
                < self.ctx.stack_limit[tiles, c]
        else:
            bad = (np.asarray(rd) == 2) \
                & (np.asarray(val, dtype=_U32) < self.ctx.stack_limit[tiles, c])
        if not bad.any():
            return None
        vals = np.broadcast_to(np.asarray(val, dtype=_U32), np.shape(tiles))
        self.fault(k, c, tiles[bad], FaultCause.STACK_OVERFLOW, np.asarray(pcs)[bad]
                    if np.ndim(pcs) else pcs, vals[bad])
        return ~bad

    def _write_result(self, k, c, tiles, pcs, rd, val):
        """Write ``val`` to ``rd`` and pc + 4 for the tiles the stack limit allows; returns
        the retire mask (None: all)."""
        ok = self._sp_ok(k, c, tiles, pcs, rd, val)
        if ok is not None:
            tiles, pcs = tiles[ok], np.asarray(pcs)[ok] if np.ndim(pcs) else pcs
            val = np.broadcast_to(np.asarray(val, dtype=_U32), ok.shape)[ok]
            if np.ndim(rd):
                rd = np.asarray(rd)[ok]
        self._wr(tiles, c, rd, val)
        self.ctx.pc[tiles, c] = pcs + _U32(4)
        return ok

    def _wr(self, tiles, c, rd, val) -> None:
        R = self.ctx.regs
        if np.ndim(rd) == 0:
            if rd:
                R[tiles, c, rd] = val
        else:
            R[tiles, c, rd] = val
            R[tiles, c, 0] = 0
        if self.trace_on:
            self._wr_trace(tiles, rd, val)

    def _wr_trace(self, tiles, rd, val) -> None:
        rds = np.broadcast_to(np.asarray(rd), np.shape(tiles))
        vals = np.broadcast_to(np.asarray(val, dtype=_U32), np.shape(tiles))
        for t, r, v in zip(np.asarray(tiles).tolist(), rds.tolist(), vals.tolist()):
            self.tr.setdefault(t, {})["rd"] = (r, v) if r else None

    def fault(self, k, c, tiles, cause, pcs, addrs) -> None:
        """Fault ``cause`` of context c on ``tiles`` (§7): their fault records and FAULT, both
        visible from k + 5 (``pcs``, ``addrs``: per tile or scalar; addr masked to 32 bits)."""
        if len(tiles) == 0:
            return
        recs = [Fault(c, FaultCause(cause), int(p), int(a) & _M32)
                for p, a in zip(np.broadcast_to(np.asarray(pcs), np.shape(tiles)).tolist(),
                                np.broadcast_to(np.asarray(addrs), np.shape(tiles)).tolist())]
        self.state_change(k, c, tiles, FAULT, recs)

    def _jump(self, k, c, tiles, pcs, target, taken, rd):
        """Common part of branches (``taken`` given) and jumps (rd given)."""
        mis = (target & _U32(3)) != 0
        if taken is not None:
            mis &= taken
        ok = ~mis
        if mis.any():
            self.fault(k, c, tiles[mis], FaultCause.MISALIGNED_FETCH, pcs[mis], target[mis])
            tiles_ok, pcs_ok, tgt = tiles[ok], pcs[ok], target[ok]
            if taken is not None:
                taken = taken[ok]
            if np.ndim(rd):
                rd = rd[ok]
        else:
            tiles_ok, pcs_ok, tgt = tiles, pcs, target
        nxt = (pcs_ok + _U32(4)).astype(_U32)
        if rd is not None:
            sp = self._sp_ok(k, c, tiles_ok, pcs_ok, rd, nxt)
            if sp is not None:
                ok = ok.copy()
                ok[np.nonzero(ok)[0][~sp]] = False
                tiles_ok, tgt, nxt = tiles_ok[sp], tgt[sp], nxt[sp]
                if np.ndim(rd):
                    rd = rd[sp]
            self._wr(tiles_ok, c, rd, nxt)
            self.ctx.pc[tiles_ok, c] = tgt
        else:
            self.ctx.pc[tiles_ok, c] = np.where(taken, tgt, nxt)
        return ok

    def _addr_checks(self, k, c, tiles, pcs, A, size, load: bool):
        mis = (A & _U32(size - 1)) != 0 if size > 1 else np.zeros(len(tiles), dtype=bool)
        oor = ~mis & (A >= self.nbytes)
        if mis.any():
            cause = FaultCause.MISALIGNED_LOAD if load else FaultCause.MISALIGNED_STORE
            self.fault(k, c, tiles[mis], cause, pcs[mis], A[mis])
        if oor.any():
            cause = FaultCause.ACCESS_FAULT_LOAD if load else FaultCause.ACCESS_FAULT_STORE
            self.fault(k, c, tiles[oor], cause, pcs[oor], A[oor])
        return ~(mis | oor)

    def _load(self, op, k, c, tiles, pcs, rd, rs1, imm):
        size, signed = _LOADS[op]
        A = (self.ctx.regs[tiles, c, rs1] + np.asarray(imm, dtype=_U32)).astype(_U32)
        ok = self._addr_checks(k, c, tiles, pcs, A, size, True)
        t, a = tiles[ok], A[ok]
        if np.ndim(rd):
            rd = rd[ok]
        if self.trace_on:               # the retire record; its value is filled in in M
            self._wr_trace(t, rd, np.zeros(len(t), dtype=_U32))
        self.m_stage(k, LoadWork(c, t, rd, a, size, signed, self.tr))   # reads the SRAM in M
        self.ctx.pc[t, c] = pcs[ok] + _U32(4)
        return ok

    def _store(self, op, k, c, tiles, pcs, rs1, rs2, imm):
        size = _STORES[op]
        A = (self.ctx.regs[tiles, c, rs1] + np.asarray(imm, dtype=_U32)).astype(_U32)
        ok = self._addr_checks(k, c, tiles, pcs, A, size, False)
        t, a = tiles[ok], A[ok]
        if np.ndim(rs2):
            rs2 = rs2[ok]
        v = self.ctx.regs[t, c, rs2]
        self.m_stage(k, StoreWork(t, a, v.copy(), size))      # writes the SRAM in M (§4)
        self.ctx.pc[t, c] = pcs[ok] + _U32(4)
        if self.trace_on:
            sh = (a & _U32(3)).astype(np.int64) * 8
            data = ((v.astype(np.int64) << sh) & _M32)
            mask = (((1 << size) - 1) << (a & _U32(3)).astype(np.int64)) & 0xF
            for tt, aa, dd, mm in zip(t.tolist(), a.tolist(), data.tolist(), mask.tolist()):
                self.tr.setdefault(tt, {})["store"] = (aa & ~3, dd, mm)
        return ok

    def _csr(self, op, k, c, tiles, pcs, rd, rs1, csr):
        """A Zicsr instruction (§3.2); returns the retire mask of ``tiles`` (None: all)."""
        if np.ndim(csr):  # different CSRs in one group: one vectorized call per CSR number
            ok_all = np.ones(len(tiles), dtype=bool)
            for num in np.unique(csr):
                sel = np.nonzero(csr == num)[0]
                r = self._csr(op, k, c, tiles[sel], pcs[sel],
                              rd[sel] if np.ndim(rd) else rd, rs1[sel] if np.ndim(rs1) else rs1,
                              int(num))
                if r is not None:
                    ok_all[sel[~r]] = False
            return None if ok_all.all() else ok_all
        csr = int(csr)
        n = len(tiles)
        if csr == Csr.CYCLE:
            old = np.full(n, k & _M32, dtype=_U32)
        elif csr == Csr.CYCLEH:
            old = np.full(n, (k >> 32) & _M32, dtype=_U32)
        elif csr == Csr.INSTRET:
            old = (self.ctx.retired[tiles, c] & np.uint64(_M32)).astype(_U32)
        elif csr == Csr.INSTRETH:
            old = (self.ctx.retired[tiles, c] >> np.uint64(32)).astype(_U32)
        elif csr == Csr.TILE_ID:
            old = tiles.astype(_U32)
        elif csr == Csr.CONTEXT_ID:
            old = np.full(n, c, dtype=_U32)
        elif csr == Csr.TILE_COUNT:
            old = np.full(n, self.n, dtype=_U32)
        elif csr == Csr.CONTEXT_COUNT:
            old = np.full(n, self.t, dtype=_U32)
        elif csr == Csr.SRAM_BYTES:
            old = np.full(n, self.nbytes, dtype=_U32)
        elif csr == Csr.XPROG:
            old = self.tl.xprog[tiles].copy()
        elif csr == Csr.STACK_LIMIT:
            old = self.ctx.stack_limit[tiles, c].copy()
        else:  # pragma: no cover - decode() makes unlisted CSRs illegal
            raise AssertionError(hex(csr))
        ok = self._sp_ok(k, c, tiles, pcs, rd, old)   # §7: csrr sp, ... is checked too
        if ok is not None:
            tiles, old = tiles[ok], old[ok]
            pcs = np.asarray(pcs)[ok] if np.ndim(pcs) else pcs
            rd = np.asarray(rd)[ok] if np.ndim(rd) else rd
            rs1 = np.asarray(rs1)[ok] if np.ndim(rs1) else rs1
            n = len(tiles)
        if csr in (Csr.XPROG, Csr.STACK_LIMIT):  # the writable CSRs; decode() rejected RO writes
            if op in (Op.CSRRWI, Op.CSRRSI, Op.CSRRCI):
                src = np.broadcast_to(np.asarray(rs1, dtype=_U32), (n,))
                writes = np.broadcast_to(np.asarray(rs1) != 0, (n,)) | (op == Op.CSRRWI)
            else:
                src = self.ctx.regs[tiles, c, rs1]
                writes = np.broadcast_to(np.asarray(rs1) != 0, (n,)) | (op == Op.CSRRW)
            if op in (Op.CSRRW, Op.CSRRWI):
                new = src
            elif op in (Op.CSRRS, Op.CSRRSI):
                new = old | src
            else:
                new = old & ~src
            if csr == Csr.XPROG:
                self.tl.xprog[tiles[writes]] = new[writes]
            else:
                self.ctx.stack_limit[tiles[writes], c] = new[writes]
        self._wr(tiles, c, rd, old)
        self.ctx.pc[tiles, c] = pcs + _U32(4)
        return ok

    # ------------------------------------------------------------------ the M stage
    def memory_effects(self, work: list) -> None:
        """The stores and loads of ``work`` (one M cycle's items) act on the SRAM (§4: a store
        writes its bytes, a load reads, extends and writes rd; rd is read by the context's
        next slot at the earliest, after W)."""
        sram = self.sram
        for item in work:
            if isinstance(item, StoreWork):
                t, a, v = item.tiles, item.addrs, item.values
                if item.size == 1:
                    sram.w8[t, a] = v.astype(np.uint8)
                elif item.size == 2:
                    sram.w16[t, a >> 1] = v.astype(np.uint16)
                else:
                    sram.w32[t, a >> 2] = v
            elif isinstance(item, LoadWork):
                t, a, rd = item.tiles, item.addrs, item.rd
                if item.size == 1:
                    v = sram.w8[t, a]
                    val = v.view(np.int8).astype(np.int32).view(_U32) if item.signed \
                        else v.astype(_U32)
                elif item.size == 2:
                    v = sram.w16[t, a >> 1]
                    val = v.view(np.int16).astype(np.int32).view(_U32) if item.signed \
                        else v.astype(_U32)
                else:
                    val = sram.w32[t, a >> 2]
                R = self.ctx.regs
                if np.ndim(rd) == 0:
                    if rd:
                        R[t, item.context, rd] = val
                else:
                    R[t, item.context, rd] = val
                    R[t, item.context, 0] = 0
                if item.trace is not None:
                    for tt, vv in zip(t.tolist(), np.broadcast_to(val, t.shape).tolist()):
                        r = item.trace.get(tt)
                        if r is not None and r.get("rd") is not None:
                            r["value"] = vv

    def engine_decisions(self, m: int, work: list) -> list:
        """The ``mrun``/``mwait`` of ``work`` in their M cycle ``m`` (§12 "Instructions"), with
        the engines as after their steps of cycles < m: on an idle engine ``mrun`` retires and
        the engine accepts the command at m (busy from m), ``mwait`` retires; on a busy one
        the issue has no effect (the context retries at its next slot).

        Returns
        -------
        list of dict
            The retire records (keys of ``Array.trace``; issue cycle m − 4) of the retiring
            issues whose item asked for a trace.
        """
        mx = self.mx
        recs = []
        for item in work:
            if not isinstance(item, EngineWork):
                continue
            c, tiles, pcs = item.context, item.tiles, item.pcs
            ok = ~mx.busy[tiles]
            acc = tiles[ok]
            if item.op == Op.MRUN:
                mx.accept_cmd(acc, m, item.desc[ok], c, pcs[ok])
            self.ctx.pc[acc, c] = pcs[ok] + _U32(4)
            self.ctx.retired[acc, c] += 1
            if item.trace:
                for t, p, w in zip(acc.tolist(), pcs[ok].tolist(), item.words[ok].tolist()):
                    recs.append({"cycle": m - _M_DELAY, "tile": t, "context": c, "pc": p,
                                 "insn": w, "rd": None, "value": None, "store_addr": None,
                                 "store_data": None, "store_mask": None})
        return recs

    def trace_retire(self, k, c, rt, tiles, pcs, words, ok) -> None:
        """Complete the retire records of ``rt`` (retiring ``tiles``, ``ok`` as returned by
        :meth:`execute`) in :attr:`tr`."""
        if ok is not None:
            pcs, words = pcs[ok], np.broadcast_to(words, tiles.shape)[ok]
        for t, p, w in zip(rt.tolist(), pcs.tolist(), np.broadcast_to(words, rt.shape).tolist()):
            info = self.tr.get(t, {})
            rdv = info.get("rd")
            st = info.get("store")
            self.tr[t] = {"cycle": k, "tile": t, "context": c, "pc": p, "insn": w,
                           "rd": None if rdv is None else rdv[0],
                           "value": None if rdv is None else rdv[1],
                           "store_addr": None if st is None else st[0],
                           "store_data": None if st is None else st[1],
                           "store_mask": None if st is None else st[2]}
