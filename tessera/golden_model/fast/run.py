"""The fast engine's side of :meth:`tessera.golden_model.Array.run`: hand the array's numpy
state to the compiled loop (``engine.c``, ``tsr_run``) and take the scalars and fault records back.

The state layout is the vectorized engine's (``tessera/golden_model/array.py``); the only
translation is the fetch-after-store record, which the vectorized engine keeps for the
latest cycle with stores and the compiled loop keeps per tile. After a call every cache of
the vectorized engine is brought up to date, so a run may be continued by either engine.
"""

from __future__ import annotations

import ctypes

import numpy as np

from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState, Fault

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
                 esnap_gen=np.zeros(n, np.int64), etouched=np.zeros(n, np.int64))
        arr._fast_scratch = s
    return s


def _engines(arr) -> np.ndarray:
    """The fast engine's matrix-engine records of ``arr`` (uint8 [N * tsr_eng_bytes()]).

    Reset to idle when the array was (re)started (cycle 0: nothing can have been accepted).
    """
    lib = library()
    eb = int(lib.tsr_eng_bytes()) if arr.config.engine_lanes else 8
    blob = getattr(arr, "_fast_eng", None)
    if blob is None or blob.size != arr.n * eb or arr._cycle == 0:
        blob = np.zeros(arr.n * eb, np.uint8)
        if arr.config.engine_lanes:
            lib.tsr_eng_reset(blob.ctypes.data, arr.n)
        arr._fast_eng = blob
    return blob


def engine_counters(arr) -> np.ndarray:
    """The ``engine`` counter (§8) of ``arr``'s tiles as the fast engine left them, uint64 [N]."""
    out = np.zeros(arr.n, np.int64)
    if arr.config.engine_lanes:
        blob = _engines(arr)
        library().tsr_eng_counters(blob.ctypes.data, arr.n, arr._cycle, out.ctypes.data)
    return out.astype(np.uint64)


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
    s["st_cycle"][:] = np.where(arr._st_widx >= 0, arr._st_cycle, -1)
    s["f_has"][:] = 0
    u8, i8, i64, u32, u64 = np.uint8, np.int8, np.int64, np.uint32, np.uint64
    b = np.bool_
    arrays = [
        (arr._regs, u32), (arr._pc, u32), (arr._vis, u8), (arr._pend_state, u8),
        (arr._pend_cycle, i64), (arr._retired, u64), (arr._exit, u32), (arr._dturn, u8),
        (arr._dword, u32), (arr._macs, u64), (arr._xprog, u32), (arr.sram.w32, u32),
        (arr._xphase, b), (arr._xphase_end, i64), (arr._cat, i8), (arr._since, i64),
        (arr._acc, i64),
        (x.in_prog, b), (x.next_step, i64), (x.ptr, i64), (x.bus_val, u32), (x.bus_valid, b),
        (x.slot_cycle, i64),
        (s["st_cycle"], i64), (arr._st_widx, i64), (arr._st_old, u32),
        (s["f_has"], u8), (s["f_ctx"], i64), (s["f_cause"], i64), (s["f_pc"], i64),
        (s["f_addr"], i64),
        (s["tev"], i64), (s["cnt"], i64), (s["arrived"], u8), (s["nrun_ctx"], i64),
        (s["tiles4"], i64), (s["ulog"], u32), (s["ckpt"], u8),
        (_engines(arr), u8), (s["ebusy"], u8), (s["esnap"], u8), (s["esnap_gen"], i64),
        (s["etouched"], i64),
    ]
    ptrs = np.array([_check(a, dt, str(i)).__array_interface__["data"][0]
                     for i, (a, dt) in enumerate(arrays)], dtype=np.uint64)
    g = np.array([n, arr.t, arr.nbytes, arr.config.exchange_latency, arr.config.sync_latency,
                  arr._cycle, int(max_cycles), arr._live, arr._release, int(arr._armed),
                  x.next_cycle, 0, ULOG_ENTRIES, 0, 0, arr.config.engine_lanes],
                 dtype=np.int64)
    lib.tsr_run(ptrs.ctypes.data, g.ctypes.data)
    gd = dict(zip(_G_FIELDS, g.tolist()))
    arr._fast_stats = {"windows": gd["windows"], "rollbacks": gd["rollbacks"]}
    k = gd["cycle"]
    arr._cycle = k
    arr._live = gd["live"]
    arr._release = gd["release"]
    arr._armed = bool(gd["armed"])
    x.next_cycle = gd["xnext"]
    arr._stop = bool(gd["stop"])
    for t in np.nonzero(s["f_has"])[0].tolist():
        ctx = int(s["f_ctx"][t])
        arr._faults[t] = Fault(None if ctx < 0 else ctx, FaultCause(int(s["f_cause"][t])),
                               int(s["f_pc"][t]), int(s["f_addr"][t]))
    # back to the vectorized engine's representation and caches
    last = k - 1
    arr._st_cycle = last
    arr._st_widx[s["st_cycle"] != last] = -1
    arr._next_pend = int(arr._pend_cycle.min())
    arr._update_next_event()
    arr._running_ctx = (arr._vis == _RUNNING).any(axis=0)
    arr._div_ctx = arr._dturn.any(axis=0)


def decode_fast(word: int) -> tuple[int, int, int, int, int]:
    """The compiled decoder's fields ``(op, rd, rs1, rs2, imm)`` of ``word`` (for tests)."""
    out = np.zeros(5, dtype=np.int64)
    library().tsr_decode(ctypes.c_uint32(word & 0xFFFFFFFF), out.ctypes.data)
    return tuple(int(v) for v in out)
