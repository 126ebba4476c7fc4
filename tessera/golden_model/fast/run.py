"""The fast engine's side of :meth:`tessera.golden_model.Array.run`: hand the array's numpy
state to the compiled loop (``engine.c``, ``tsr_run``) and take the scalars and fault records back.

The state layout is the vectorized engine's (the records of ``tessera/golden_model/contexts.py``,
``tiles.py``, ``schedule.py``, ``sync.Barrier`` and ``memorder.py``). A run never ends with
M-stage work in flight (both engines apply the work of the last four issue cycles at the end
of a run, §7 "Final state"), so the one memory-order record handed over is
:class:`tessera.golden_model.memorder.PortSlots` (the LOAD/STORE flags of the last four issue
cycles, which decide the first engine cycles of a continued run, §12); the compiled loop keeps
them in its per-tile M-stage ring. The matrix engines are translated between
:class:`tessera.golden_model.engine.MatrixEngines` and the compiled records. After a call every
cache of the vectorized engine is brought up to date, so a run may be continued by either
engine.
"""

from __future__ import annotations

import ctypes

import numpy as np

from tessera.spec.engine import ACC_DEPTH
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState, Fault
from tessera.spec.timing import Stage

from ..memorder import PORT_RING
from .build import library

__all__ = ["run_fast", "decode_fast", "STORE_DTYPE"]

_NEVER = np.iinfo(np.int64).max
_RUNNING = int(ContextState.RUNNING)
_M_DELAY = int(Stage.M)

# Order of the scalar slots: the G_* enum of engine.c.
_G_FIELDS = ("n", "t", "nbytes", "lat", "sync_lat", "cycle", "max", "live", "release",
             "armed", "xnext", "stop", "ulog_cap", "windows", "rollbacks", "lanes", "dlat",
             "stop_at", "slog_cap", "slog_n")
#: Entries of the SRAM undo log of a window (8 bytes each). A window is at most
#: ULOG_ENTRIES / N cycles long, less the catch-up behind it (5 + D cycles).
ULOG_ENTRIES = 1 << 20
#: The undo log is allocated 5 times that (plus slack): per tile and cycle a window logs a
#: store (1 word) or a matrix-engine write (2 u32 words, or 4 for a write of two 8-byte words,
#: ``ENGINE_WRITE_WORDS``).
ULOG_FACTOR = 5

#: The compiled loop's M-stage ring entry (``MQ`` in engine.c), in its C layout.
_MQ_DTYPE = np.dtype({"names": ["cyc", "addr", "val", "pc", "kind", "ls", "ifault", "size",
                                "sgn", "rd", "ctx"],
                      "formats": ["<i8", "<u4", "<u4", "<u4", "u1", "u1", "u1", "u1", "u1",
                                  "u1", "<u2"],
                      "offsets": [0, 8, 12, 16, 20, 21, 22, 23, 24, 25, 26], "itemsize": 32})


#: A store-log entry (``SLog`` in engine.c), in its C layout: the store fields of a retire
#: record (:data:`tessera.spec.trace.RECORD_KEYS`).
STORE_DTYPE = np.dtype({"names": ["cycle", "pc", "store_addr", "store_data", "tile", "context",
                                  "store_mask"],
                        "formats": ["<i8", "<u4", "<u4", "<u4", "<u4", "<u2", "u1"],
                        "offsets": [0, 8, 12, 16, 20, 24, 26], "itemsize": 32})


def _scratch(arr) -> dict:
    s = getattr(arr, "_fast_scratch", None)
    n, t = arr.n, arr.t
    ulog_size = 2 * (ULOG_FACTOR * ULOG_ENTRIES + 8 * n)
    if s is None or s["tev"].shape[0] != n or s["ulog"].size != ulog_size:
        lib = library()
        eb = int(lib.tsr_eng_bytes()) if arr.config.engine_lanes else 8
        if int(lib.tsr_mq_bytes()) != _MQ_DTYPE.itemsize or int(lib.tsr_mq_ring()) != PORT_RING:
            raise AssertionError("fast engine: the MQ ring layout of engine.c and run.py differ")
        s = dict(tev=np.zeros(n, np.int64), cnt=np.zeros(n * 8, np.int64),
                 arrived=np.zeros(n, np.uint8), nrun_ctx=np.zeros(t, np.int64),
                 f_has=np.zeros(n, np.uint8),
                 f_ctx=np.zeros(n, np.int64), f_cause=np.zeros(n, np.int64),
                 f_pc=np.zeros(n, np.int64), f_addr=np.zeros(n, np.int64),
                 cur=np.zeros(n, np.int64), mq_n=np.zeros(n, np.int64),
                 tiles4=np.zeros(4 * n, np.int64), ulog=np.zeros(ulog_size, np.uint32),
                 ckpt=np.zeros(int(lib.tsr_ckpt_bytes(n, t)), np.uint8),
                 ebusy=np.zeros(n, np.uint8), esnap=np.zeros(n * eb, np.uint8),
                 esnap_gen=np.zeros(n, np.int64), etouched=np.zeros(n, np.int64),
                 esnap_acc=np.zeros(n * ACC_DEPTH * 8 if arr.config.engine_lanes else 1,
                                    np.uint32))
        arr._fast_scratch = s
    return s


def _ring(arr) -> np.ndarray:
    """The compiled loop's M-stage ring of ``arr`` (structured [N, PORT_RING]), nothing in
    flight, made current from the vectorized engine's :class:`PortSlots` (the LOAD/STORE
    flags of the words issued at k0 - 4 .. k0 - 1) unless this engine left it at the current
    cycle itself."""
    k0 = arr._sch.cycle
    ring = getattr(arr, "_fast_mq", None)
    mark = getattr(arr, "_fast_mq_mark", None)
    if ring is not None and mark is not None and mark[0] is arr._lsu and mark[1] == k0:
        return ring
    if ring is None or ring.shape[0] != arr.n:
        ring = np.zeros((arr.n, PORT_RING), _MQ_DTYPE)
        arr._fast_mq = ring
    ring[...] = np.zeros((), _MQ_DTYPE)
    ring["cyc"] = -1
    for c in range(k0 - _M_DELAY, k0):
        ls = arr._lsu.at(c) if c >= 0 else None
        if ls is not None:
            r = (c + _M_DELAY) % PORT_RING
            ring["cyc"][:, r] = c + _M_DELAY
            ring["ls"][:, r] = ls
    return ring


def _export_ring(arr, ring) -> None:
    """The LOAD/STORE flags of the words issued at C - 4 .. C - 1 → :class:`PortSlots`."""
    C = arr._sch.cycle
    if arr.config.engine_lanes:
        for c in range(max(C - _M_DELAY, 0), C):
            r = (c + _M_DELAY) % PORT_RING
            i = c % PORT_RING
            arr._lsu.ls[i] = (ring["cyc"][:, r] == c + _M_DELAY) & (ring["ls"][:, r] != 0)
            arr._lsu.cycle[i] = c
    arr._fast_mq_mark = (arr._lsu, C)


#: Fields of the compiled engine's per-tile matrix-engine record (``Eng`` in engine.c), in
#: the order of ``tsr_eng_layout``: (name, numpy dtype, shape).
ENG_FIELDS = (
    ("busy", "<i8", ()), ("x", "<i8", ()), ("step", "<i8", ()), ("nsteps", "<i8", ()),
    ("c_e", "<i8", ()), ("d", "<i8", ()), ("pc_e", "<i8", ()), ("busy_done", "<i8", ()),
    ("fpend", "<i8", ()), ("desc", "u1", (64,)), ("bias", "<i4", (8,)),
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
    which also holds the cursors the shared state has no field for, is current)."""
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
    blob["busy_done"] = mx.busy_done
    for t in np.nonzero(mx.busy)[0].tolist():
        e = blob[t]
        e["busy"] = 1
        e["x"] = mx.accept[t]
        e["step"] = mx.step_no[t]
        e["c_e"] = mx.issuer[t]
        e["d"] = mx.desc_addr[t]
        e["pc_e"] = mx.issuer_pc[t]
        # a frozen engine (a step faulted, §12) makes no further steps; its fault cycle is
        # not part of the shared state (a faulted run is not continued), any value marks it
        if mx.frozen[t]:
            e["fpend"] = arr._sch.cycle - 1
        e["desc"] = mx.desc[t]
        m = mx.bias.shape[1]
        e["bias"][:m] = mx.bias[t]
        e["mult"][:m] = mx.multiplier[t]
        e["shift"][:m] = mx.shift[t]
        e["S"][:m] = mx.lanes_w[t]
        e["g"] = mx.gather[t]
        if mx.acc is not None:
            arr._fast_eacc[t, :, :m] = mx.acc[t]
        if library().tsr_eng_seek(blob.ctypes.data, t, arr.config.engine_lanes) != 0:
            raise AssertionError(f"fast engine: tile {t}'s busy engine has an invalid "
                                 "descriptor past step 7")


def _export_engines(arr, blob) -> None:
    """Compiled records → shared state, for the cycle count ``arr._sch.cycle``."""
    from ..engine import Command, NOT_YET
    from tessera.spec.engine import DESC_FIELDS, DESC_FORMAT
    import struct
    mx = arr._mx
    busy = blob["busy"] != 0
    mx.busy[:] = busy
    mx.accept[:] = blob["x"]
    mx.busy_done[:] = blob["busy_done"]
    mx.frozen[:] = busy & (blob["fpend"] != _NEVER)
    mx.nbusy = int(busy.sum())
    tiles = np.nonzero(busy)[0]
    if len(tiles) and mx.acc is None:
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
        if int(e["step"]) > 7:
            raw = e["desc"].tobytes()
            vals = struct.unpack(DESC_FORMAT, raw)
            cmd = Command(**{name: v for (name, _, _), v in zip(DESC_FIELDS, vals)})
            mx.cmd[t] = cmd
            mx.total[t] = cmd.total
            mx.cmd_id[t] = mx._intern(raw)
        else:
            mx.cmd[t] = None
            mx.total[t] = NOT_YET
            mx.cmd_id[t] = -1
    arr._fast_eng_mark = (mx, arr._sch.cycle)


def _check(a: np.ndarray, dtype, name: str) -> np.ndarray:
    if a.dtype != np.dtype(dtype) or not a.flags.c_contiguous or not a.flags.writeable:
        raise AssertionError(f"fast engine: state array {name} is {a.dtype}, contiguous="
                             f"{a.flags.c_contiguous}; expected contiguous {np.dtype(dtype)}")
    return a


def run_fast(arr, max_cycles: int) -> None:
    """Advance ``arr`` (a :class:`tessera.golden_model.Array`) to the stop or ``max_cycles``.

    Updates the array's state in place: the records, ``_sch.cycle`` and ``_sch.stop_at``,
    the fault records (``_tl.faults``, ``_tl.fault_vis``) and the vectorized engine's caches;
    the caller builds the result.

    Raises
    ------
    AssertionError
        The array has M-stage work in flight (a run always ends without any) or a state array
        has an unexpected dtype or layout.
    """
    if arr._mq:
        raise AssertionError("fast engine: the array has M-stage work in flight at the start "
                             "of a run (every run applies it at its end, §7 'Final state')")
    lib = library()
    s = _scratch(arr)
    x = arr._x
    n = arr.n
    s["f_has"][:] = 0
    lanes = arr.config.engine_lanes
    eng = _engines(arr) if lanes else np.zeros(1, np.uint64)
    eacc = arr._fast_eacc.reshape(-1) if lanes else np.zeros(1, np.uint32)
    ring = _ring(arr)
    slog = arr._slog if arr._slog is not None else np.zeros(1, STORE_DTYPE)
    if arr._slog is not None and int(lib.tsr_slog_bytes()) != STORE_DTYPE.itemsize:
        raise AssertionError("fast engine: the store-log layout of engine.c and run.py differ")
    u8, i8, i64, u32, u64 = np.uint8, np.int8, np.int64, np.uint32, np.uint64
    b = np.bool_
    ctx, tl = arr._ctx, arr._tl     # the named state records (P_* order below)
    arrays = [
        (ctx.regs, u32), (ctx.pc, u32), (ctx.state, u8), (ctx.pend_state, u8),
        (ctx.pend_cycle, i64), (ctx.retired, u64), (ctx.exit_code, u32), (ctx.div_turn, u8),
        (ctx.div_word, u32), (tl.macs, u64), (tl.xprog, u32), (arr.sram.w32, u32),
        (tl.xphase, b), (tl.xphase_end, i64), (tl.category, i8), (tl.since, i64),
        (tl.acc, i64),
        (x.in_prog, b), (x.next_step, i64), (x.ptr, i64), (x.bus_val, u32), (x.bus_valid, b),
        (x.slot_cycle, i64),
        (ring, _MQ_DTYPE), (s["cur"], i64), (s["mq_n"], i64),
        (s["f_has"], u8), (s["f_ctx"], i64), (s["f_cause"], i64), (s["f_pc"], i64),
        (s["f_addr"], i64), (tl.fault_vis, i64),
        (s["tev"], i64), (s["cnt"], i64), (s["arrived"], u8), (s["nrun_ctx"], i64),
        (s["tiles4"], i64), (s["ulog"], u32), (s["ckpt"], u8),
        (eng.view(u8), u8), (s["ebusy"], u8), (s["esnap"], u8), (s["esnap_gen"], i64),
        (s["etouched"], i64), (eacc, u32), (s["esnap_acc"], u32),
        (ctx.stack_limit, u32), (x.run_i, i64), (x.run_w, i64),
        (slog, STORE_DTYPE),
    ]
    ptrs = np.array([_check(a, dt, str(i)).__array_interface__["data"][0]
                     for i, (a, dt) in enumerate(arrays)], dtype=np.uint64)
    g = np.array([n, arr.t, arr.nbytes, arr.config.exchange_latency, arr.config.sync_latency,
                  arr._sch.cycle, int(max_cycles), arr._sch.live, arr._bar.release,
                  int(arr._bar.armed),
                  x.next_cycle, 0, ULOG_ENTRIES, 0, 0, arr.config.engine_lanes,
                  arr.config.decision_latency, arr._sch.stop_at,
                  0 if arr._slog is None else arr._slog.size, arr._slog_n],
                 dtype=np.int64)
    lib.tsr_run(ptrs.ctypes.data, g.ctypes.data)
    gd = dict(zip(_G_FIELDS, g.tolist()))
    arr._fast_stats = {"windows": gd["windows"], "rollbacks": gd["rollbacks"]}
    arr._slog_n = gd["slog_n"]
    k = gd["cycle"]
    arr._sch.cycle = k
    arr._sch.live = gd["live"]
    arr._sch.stop_at = gd["stop_at"]
    arr._bar.release = gd["release"]
    arr._bar.armed = bool(gd["armed"])
    x.next_cycle = gd["xnext"]
    for t in np.nonzero(s["f_has"])[0].tolist():
        fc = int(s["f_ctx"][t])
        tl.faults[t] = Fault(None if fc < 0 else fc, FaultCause(int(s["f_cause"][t])),
                             int(s["f_pc"][t]), int(s["f_addr"][t]))
    if lanes:
        _export_engines(arr, eng)
    _export_ring(arr, ring)
    # back to the vectorized engine's caches
    arr._sch.next_pend = int(arr._ctx.pend_cycle.min())
    arr._update_next_event()
    arr._sch.running_ctx = (arr._ctx.state == _RUNNING).any(axis=0)
    arr._ctx.div_any[:] = arr._ctx.div_turn.any(axis=0)


def decode_fast(word: int) -> tuple[int, int, int, int, int]:
    """The compiled decoder's fields ``(op, rd, rs1, rs2, imm)`` of ``word`` (for tests)."""
    out = np.zeros(5, dtype=np.int64)
    library().tsr_decode(ctypes.c_uint32(word & 0xFFFFFFFF), out.ctypes.data)
    return tuple(int(v) for v in out)
