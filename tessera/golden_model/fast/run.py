"""The fast engine's side of :meth:`tessera.golden_model.Array.run`: hand the array's numpy
state to the compiled loop (``engine.c``, ``tsr_run``) and take the scalars and fault records back.

The state layout is the vectorized engine's (the records of ``tessera/golden_model/contexts.py``,
``tiles.py``, ``schedule.py``, ``sync.Barrier`` and ``memorder.py``); the only
translation is the fetch-after-store record, which the vectorized engine keeps for the
latest cycle with stores and the compiled loop keeps per tile. After a call every cache of
the vectorized engine is brought up to date, so a run may be continued by either engine.
"""

from __future__ import annotations

import ctypes

import numpy as np

from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState, Fault

from tessera.spec.engine import ACC_DEPTH

from ..memorder import LoadRecord
from .build import library

__all__ = ["run_fast", "decode_fast"]

_NEVER = np.iinfo(np.int64).max
_RUNNING = int(ContextState.RUNNING)

# Order of the pointer table and the scalar slots: the P_* / G_* enums of engine.c.
_G_FIELDS = ("n", "t", "nbytes", "lat", "sync_lat", "cycle", "max", "live", "release",
             "armed", "xnext", "stop", "ulog_cap", "windows", "rollbacks", "lanes")
#: Entries of the SRAM undo log of a window (8 bytes each). A window is at most
#: ULOG_ENTRIES / N cycles long (one store per tile per cycle), e.g. 862 cycles at 1216 tiles.
ULOG_ENTRIES = 1 << 20
#: The undo log is allocated 3 times that (plus slack): in a window a tile also logs its
#: matrix engine's writes (at most 2 words per cycle), besides its stores (at most 1).
ULOG_FACTOR = 3


def _scratch(arr) -> dict:
    s = getattr(arr, "_fast_scratch", None)
    n, t = arr.n, arr.t
    ulog_size = 2 * (ULOG_FACTOR * ULOG_ENTRIES + 8 * n)
    if s is None or s["tev"].shape[0] != n or s["ulog"].size != ulog_size:
        eb = int(library().tsr_eng_bytes()) if arr.config.engine_lanes else 8
        s = dict(tev=np.zeros(n, np.int64), cnt=np.zeros(n * 8, np.int64),
                 arrived=np.zeros(n, np.uint8), nrun_ctx=np.zeros(t, np.int64),
                 st_cycle=np.zeros(n, np.int64), f_has=np.zeros(n, np.uint8),
                 f_ctx=np.zeros(n, np.int64), f_cause=np.zeros(n, np.int64),
                 f_pc=np.zeros(n, np.int64), f_addr=np.zeros(n, np.int64),
                 tiles4=np.zeros(4 * n, np.int64), ulog=np.zeros(ulog_size, np.uint32),
                 ckpt=np.zeros(int(library().tsr_ckpt_bytes(n, t)), np.uint8),
                 ebusy=np.zeros(n, np.uint8), esnap=np.zeros(n * eb, np.uint8),
                 esnap_gen=np.zeros(n, np.int64), etouched=np.zeros(n, np.int64),
                 esnap_acc=np.zeros(n * ACC_DEPTH * 8 if arr.config.engine_lanes else 1,
                                    np.uint32))
        arr._fast_scratch = s
    return s


#: Fields of the compiled engine's per-tile matrix-engine record (``Eng`` in engine.c), in
#: the order of ``tsr_eng_layout``: (name, numpy dtype, shape).
ENG_FIELDS = (
    ("busy", "<i8", ()), ("x", "<i8", ()), ("next", "<i8", ()), ("step", "<i8", ()),
    ("nsteps", "<i8", ()), ("c_e", "<i8", ()), ("d", "<i8", ()), ("pc_e", "<i8", ()),
    ("busy_done", "<i8", ()), ("end_x", "<i8", ()), ("end_cycle", "<i8", ()),
    ("fpend", "<i8", ()), ("ls0", "<i8", ()), ("ls1", "<i8", ()), ("j_undone", "<i8", ()),
    ("st_mcycle", "<i8", ()), ("st_mmask", "<i8", ()), ("ld_cycle", "<i8", ()),
    ("ld_ctx", "<i8", ()), ("ld_rd", "<i8", ()), ("ld_addr", "<i8", ()), ("ld_size", "<i8", ()),
    ("ld_signed", "<i8", ()), ("q_x", "<i8", ()), ("q_d", "<i8", ()), ("q_c", "<i8", ()),
    ("q_pc", "<i8", ()), ("desc", "u1", (64,)), ("bias", "<i4", (8,)),
    ("mult", "<i4", (8,)), ("shift", "<i4", (8,)), ("S", "<i4", (8, 8)), ("g", "<i8", ()),
)
_ENG_DTYPE = None


def _eng_dtype() -> np.dtype:
    global _ENG_DTYPE
    if _ENG_DTYPE is None:
        out = np.zeros(len(ENG_FIELDS), np.int64)
        size = int(library().tsr_eng_layout(out.ctypes.data))
        _ENG_DTYPE = np.dtype({"names": [f[0] for f in ENG_FIELDS],
                               "formats": [(f[1], f[2]) if f[2] else f[1] for f in ENG_FIELDS],
                               "offsets": out.tolist(), "itemsize": size})
    return _ENG_DTYPE


def _engines(arr) -> np.ndarray:
    """The compiled engine's matrix-engine records of ``arr`` (structured [N], ``_eng_dtype``),
    made current from the array's :class:`tessera.golden_model.engine.MatrixEngines` state
    unless this engine wrote that state at the current cycle itself (then its own record,
    which also holds what the shared state has no field for, is current)."""
    lib = library()
    blob = getattr(arr, "_fast_eng", None)
    mark = getattr(arr, "_fast_eng_mark", None)
    if blob is not None and mark is not None and mark[0] is arr._mx and mark[1] == arr._sch.cycle:
        return blob
    if blob is None or blob.shape[0] != arr.n:
        blob = np.zeros(arr.n, _eng_dtype())
        arr._fast_eacc = np.zeros((arr.n, ACC_DEPTH, 8), np.uint32)   # pages touched on use
    else:
        blob[...] = np.zeros((), blob.dtype)
    lib.tsr_eng_reset(blob.ctypes.data, arr.n)
    arr._fast_eng = blob
    _import_engines(arr, blob)
    return blob


def _import_engines(arr, blob) -> None:
    """Shared state (vectorized engine's representation) → compiled records."""
    mx = arr._mx
    k0 = arr._sch.cycle
    blob["busy_done"] = mx.busy_done
    for t in np.nonzero(mx.busy)[0].tolist():
        e = blob[t]
        e["busy"] = 1
        e["x"] = mx.accept[t]
        e["next"] = max(k0, int(mx.accept[t]) + 1)
        e["step"] = mx.step_no[t]
        e["c_e"] = mx.issuer[t]
        e["d"] = mx.desc_addr[t]
        e["pc_e"] = mx.issuer_pc[t]
        e["desc"] = mx.desc[t]
        m = mx.bias.shape[1]
        e["bias"][:m] = mx.bias[t]
        e["mult"][:m] = mx.multiplier[t]
        e["shift"][:m] = mx.shift[t]
        e["S"][:m] = mx.lanes_w[t]
        e["g"] = mx.gather[t]
        if mx.acc is not None:
            arr._fast_eacc[t, :, :m] = mx.acc[t]
        library().tsr_eng_seek(blob.ctypes.data, t, arr.config.engine_lanes)
        q = mx.queued.get(t)
        if q is not None:
            e["q_x"], e["q_d"], e["q_c"], e["q_pc"] = q
        # the instructions issued at k0 - 2 and k0 - 1 (LOAD/STORE words, the store's bytes,
        # the load), for the first engine cycle of the run
        for c in (k0 - 2, k0 - 1):
            if arr._lsu.cycle[c & 1] == c and arr._lsu.ls[c & 1, t]:
                e["ls1"] = e["ls0"]
                e["ls0"] = c
        if arr._st.cycle == k0 - 1 and arr._st.word[t] >= 0:
            e["st_mcycle"] = k0 - 1
            e["st_mmask"] = arr._st.mask[t]
        rec = arr._ld_rec
        if rec is not None and rec.cycle == k0 - 1 and t in rec.tiles:
            rd, la, size, signed = rec.tiles[t]
            e["ld_cycle"], e["ld_ctx"], e["ld_rd"] = k0 - 1, rec.context, rd
            e["ld_addr"], e["ld_size"], e["ld_signed"] = la, size, int(bool(signed))


def _export_engines(arr, blob) -> None:
    """Compiled records → shared state, for the cycle count ``arr._sch.cycle`` (C)."""
    from ..engine import Command, NOT_YET
    from tessera.spec.engine import DESC_FIELDS, DESC_FORMAT
    import struct
    mx = arr._mx
    C = arr._sch.cycle
    cnt = np.zeros(arr.n, np.int64)
    library().tsr_eng_counters(blob.ctypes.data, arr.n, C, cnt.ctypes.data)
    busy = blob["busy"] != 0
    # a command whose last step this loop executed past the end (the step of cycle C, done
    # early for an mrun at C - 1 and undone at the end): the shared state has it busy with
    # that step to come, and the command accepted meanwhile queued behind it
    late = (blob["j_undone"] != 0) & (blob["end_cycle"] >= C)
    accept = np.where(late, blob["end_x"], blob["x"])
    mx.queued = {}
    for t in np.nonzero(late & busy)[0].tolist():
        mx.queued[t] = (int(blob["x"][t]), int(blob["d"][t]), int(blob["c_e"][t]),
                        int(blob["pc_e"][t]))
    for t in np.nonzero(busy & (blob["q_x"] != _NEVER))[0].tolist():
        mx.queued[t] = (int(blob["q_x"][t]), int(blob["q_d"][t]), int(blob["q_c"][t]),
                        int(blob["q_pc"][t]))
    busy = busy | late
    mx.busy[:] = busy
    mx.accept[:] = accept
    mx.busy_done[:] = cnt - np.where(busy, np.maximum(C - accept, 0), 0)
    mx.nbusy = int(busy.sum())
    tiles = np.nonzero(busy)[0]
    if len(tiles) and mx.acc is None:
        from tessera.spec.engine import ACC_DEPTH
        mx.acc = np.zeros((arr.n, ACC_DEPTH, max(mx.lanes, 1)), dtype=np.uint32)
    m = mx.bias.shape[1]
    for t in tiles.tolist():
        e = blob[t]
        mx.desc_addr[t] = e["d"]
        mx.issuer[t] = e["c_e"]
        mx.issuer_pc[t] = e["pc_e"]
        mx.step_no[t] = e["step"]
        mx.desc[t] = e["desc"]
        mx.bias[t] = e["bias"][:m]
        mx.multiplier[t] = e["mult"][:m]
        mx.shift[t] = e["shift"][:m]
        mx.lanes_w[t] = e["S"][:m]
        mx.gather[t] = e["g"]
        mx.acc[t] = arr._fast_eacc[t, :, :m]
        if late[t]:
            vals = struct.unpack(DESC_FORMAT, e["desc"].tobytes())
            cmd = Command(**{name: v for (name, _, _), v in zip(DESC_FIELDS, vals)})
            mx.cmd[t] = cmd
            mx.total[t] = cmd.total
            mx.step_no[t] = cmd.total - 1
        elif int(e["step"]) > 7:
            vals = struct.unpack(DESC_FORMAT, e["desc"].tobytes())
            cmd = Command(**{name: v for (name, _, _), v in zip(DESC_FIELDS, vals)})
            mx.cmd[t] = cmd
            mx.total[t] = cmd.total
        else:
            mx.cmd[t] = None
            mx.total[t] = NOT_YET
    # what the first engine cycle of a continued run needs of the issues at C-2 and C-1
    if mx.nbusy:
        for c in (C - 2, C - 1):
            arr._lsu.cycle[c & 1] = c
            arr._lsu.ls[c & 1] = busy & ((blob["ls0"] == c) | (blob["ls1"] == c))
        st = busy & (blob["st_mcycle"] == C - 1) & (arr._st.word >= 0)
        arr._st.mask[st] = blob["st_mmask"][st].astype(np.uint8)
        ld = np.nonzero(busy & (blob["ld_cycle"] == C - 1))[0].tolist()
        if ld:
            c = int(blob["ld_ctx"][ld[0]])
            arr._ld_rec = LoadRecord(C - 1, c, {
                t: (int(blob["ld_rd"][t]), int(blob["ld_addr"][t]), int(blob["ld_size"][t]),
                    bool(blob["ld_signed"][t])) for t in ld})
    arr._fast_eng_mark = (mx, C)


def _check(a: np.ndarray, dtype, name: str) -> np.ndarray:
    if a.dtype != dtype or not a.flags.c_contiguous or not a.flags.writeable:
        raise AssertionError(f"fast engine: state array {name} is {a.dtype}, contiguous="
                             f"{a.flags.c_contiguous}; expected contiguous {np.dtype(dtype)}")
    return a


def run_fast(arr, max_cycles: int) -> None:
    """Advance ``arr`` (a :class:`tessera.golden_model.Array`) to halt, fault or ``max_cycles``.

    Updates the array's state in place and sets ``_cycle``, ``_stop``, ``_faults`` and the
    vectorized engine's caches; the caller builds the result.
    """
    lib = library()
    s = _scratch(arr)
    x = arr._x
    n = arr.n
    # fetch-after-store record: per tile the cycle of its recorded store (-1: none)
    s["st_cycle"][:] = np.where(arr._st.word >= 0, arr._st.cycle, -1)
    s["f_has"][:] = 0
    lanes = arr.config.engine_lanes
    eng = _engines(arr) if lanes else np.zeros(1, np.uint64)
    eacc = arr._fast_eacc.reshape(-1) if lanes else np.zeros(1, np.uint32)
    u8, i8, i64, u32, u64 = np.uint8, np.int8, np.int64, np.uint32, np.uint64
    b = np.bool_
    ctx, tl, st = arr._ctx, arr._tl, arr._st     # the named state records (P_* order below)
    arrays = [
        (ctx.regs, u32), (ctx.pc, u32), (ctx.state, u8), (ctx.pend_state, u8),
        (ctx.pend_cycle, i64), (ctx.retired, u64), (ctx.exit_code, u32), (ctx.div_turn, u8),
        (ctx.div_word, u32), (tl.macs, u64), (tl.xprog, u32), (arr.sram.w32, u32),
        (tl.xphase, b), (tl.xphase_end, i64), (tl.category, i8), (tl.since, i64),
        (tl.acc, i64),
        (x.in_prog, b), (x.next_step, i64), (x.ptr, i64), (x.bus_val, u32), (x.bus_valid, b),
        (x.slot_cycle, i64),
        (s["st_cycle"], i64), (st.word, i64), (st.old, u32),
        (s["f_has"], u8), (s["f_ctx"], i64), (s["f_cause"], i64), (s["f_pc"], i64),
        (s["f_addr"], i64),
        (s["tev"], i64), (s["cnt"], i64), (s["arrived"], u8), (s["nrun_ctx"], i64),
        (s["tiles4"], i64), (s["ulog"], u32), (s["ckpt"], u8),
        (eng.view(u8), u8), (s["ebusy"], u8), (s["esnap"], u8), (s["esnap_gen"], i64),
        (s["etouched"], i64), (eacc, u32), (s["esnap_acc"], u32),
        (ctx.stack_limit, u32), (x.run_i, i64), (x.run_w, i64),
    ]
    ptrs = np.array([_check(a, dt, str(i)).__array_interface__["data"][0]
                     for i, (a, dt) in enumerate(arrays)], dtype=np.uint64)
    g = np.array([n, arr.t, arr.nbytes, arr.config.exchange_latency, arr.config.sync_latency,
                  arr._sch.cycle, int(max_cycles), arr._sch.live, arr._bar.release,
                  int(arr._bar.armed),
                  x.next_cycle, 0, ULOG_ENTRIES, 0, 0, arr.config.engine_lanes],
                 dtype=np.int64)
    lib.tsr_run(ptrs.ctypes.data, g.ctypes.data)
    gd = dict(zip(_G_FIELDS, g.tolist()))
    arr._fast_stats = {"windows": gd["windows"], "rollbacks": gd["rollbacks"]}
    k = gd["cycle"]
    arr._sch.cycle = k
    arr._sch.live = gd["live"]
    arr._bar.release = gd["release"]
    arr._bar.armed = bool(gd["armed"])
    x.next_cycle = gd["xnext"]
    arr._sch.stop = bool(gd["stop"])
    for t in np.nonzero(s["f_has"])[0].tolist():
        fc = int(s["f_ctx"][t])
        tl.faults[t] = Fault(None if fc < 0 else fc, FaultCause(int(s["f_cause"][t])),
                             int(s["f_pc"][t]), int(s["f_addr"][t]))
    if lanes:
        _export_engines(arr, eng)
    # back to the vectorized engine's representation and caches
    last = k - 1
    arr._st.cycle = last
    arr._st.word[s["st_cycle"] != last] = -1
    arr._sch.next_pend = int(arr._ctx.pend_cycle.min())
    arr._update_next_event()
    arr._sch.running_ctx = (arr._ctx.state == _RUNNING).any(axis=0)
    arr._ctx.div_any[:] = arr._ctx.div_turn.any(axis=0)


def decode_fast(word: int) -> tuple[int, int, int, int, int]:
    """The compiled decoder's fields ``(op, rd, rs1, rs2, imm)`` of ``word`` (for tests)."""
    out = np.zeros(5, dtype=np.int64)
    library().tsr_decode(ctypes.c_uint32(word & 0xFFFFFFFF), out.ctypes.data)
    return tuple(int(v) for v in out)
