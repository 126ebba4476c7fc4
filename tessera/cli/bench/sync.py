"""ARRAY-barrier latency vs tiles, measured on the RTL from cycle counts of a sync-only program.

Program (every context of every tile; :func:`sync_program`)::

    csrr t0, tile_id ; csrr t1, tile_count ; addi t1, t1, -1
    bne  t0, t1, 1f  ; nop ; nop          # the last tile arrives 2 slots later
 1: csrr s0, cycle   ; sync ARRAY ; csrr a0, cycle ; ecall

``csrr`` of ``cycle`` returns its own issue cycle (architecture §3.2), so a context's
``sync ARRAY`` was issued at ``s0 + T`` (its next slot) and it resumed with the ``csrr`` at
``a0``. From the final registers: ``t_last`` = max ``s0 + T`` (the last arrival's issue);
release ``r`` = min ``a0`` − 1 (contexts are RUNNING from ``r + 1`` and some context owns
slot ``r + 1``). Reported: issue → release ``r − t_last`` and arrival → release
``r − (t_last + STATE_VISIBLE_DELAY)`` (the arrival is visible ``STATE_VISIBLE_DELAY`` = 5
cycles after the issue, §4 of contract v2), against the contract ``D = ceil(log2 N) + 2`` and
the goal ``ceil(log2 N) + 3``. The release cycle must be
the same on every tile. The golden model runs the same program as a cross-check and for sizes
the RTL is not built for (those rows are marked "model").
"""

from __future__ import annotations

import math

import numpy as np

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.timing import STATE_VISIBLE_DELAY

from .common import BenchError, Goal, Section, Timer, save_figure

__all__ = ["sync_program", "latency_from_regs", "run", "plot"]


def sync_program() -> list[int]:
    """The sync-only program (see module docstring)."""
    return [
        asm.csrr(5, Csr.TILE_ID), asm.csrr(6, Csr.TILE_COUNT), asm.addi(6, 6, -1),
        asm.bne(5, 6, 12), asm.nop(), asm.nop(),
        asm.csrr(8, Csr.CYCLE), asm.sync_array(), asm.csrr(10, Csr.CYCLE), asm.ecall(),
    ]


def latency_from_regs(regs: np.ndarray, contexts: int) -> dict:
    """Barrier timing from final registers ``regs`` [N, T, 32] (uint).

    Returns
    -------
    dict
        ``t_last``, ``release``, ``issue_to_release``, ``arrival_to_release``.

    Raises
    ------
    BenchError
        Tiles resumed in different cycles (the release is not simultaneous).
    """
    regs = np.asarray(regs, dtype=np.int64)
    t_last = int((regs[:, :, 8] + contexts).max())
    per_tile = regs[:, :, 10].min(axis=1) - 1
    if len(set(per_tile.tolist())) != 1:
        raise BenchError(f"release cycles differ between tiles: {sorted(set(per_tile.tolist()))}")
    r = int(per_tile[0])
    return dict(t_last=t_last, release=r, issue_to_release=r - t_last,
                arrival_to_release=r - t_last - STATE_VISIBLE_DELAY)


def _regs_of(result_json) -> np.ndarray:
    return np.array([[c["regs"] for c in t["contexts"]] for t in result_json["tiles"]])


def _cfg(n: int) -> ArrayConfig:
    return ArrayConfig(tiles=n, contexts=6, sram_bytes=64 * 1024)


def _model(n: int) -> dict:
    from tessera.golden_model import Array
    cfg = _cfg(n)
    arr = Array(cfg)
    arr.write_mem(None, 0, asm.program(sync_program()))
    res = arr.run(100_000)
    if res.status != "halted":
        raise BenchError(f"sync program on the model ({n} tiles) ended {res.status}")
    return latency_from_regs(np.asarray(arr.regs), cfg.contexts)


def _rtl(n: int) -> dict:
    from .rtl import build
    cfg = _cfg(n)
    model, _ = build(cfg)
    code = asm.program(sync_program()).hex()
    job = {"name": "sync", "segments": [[t, 0, code] for t in range(n)], "max_cycles": 100_000}
    (res,) = model.run({"jobs": [job]})["jobs"]
    if res["error"]:
        raise BenchError(f"sync program on the RTL ({n} tiles) failed:\n{res['error']}")
    if res["result"]["status"] != "halted":
        raise BenchError(f"sync program on the RTL ({n} tiles) ended {res['result']['status']}")
    return latency_from_regs(_regs_of(res["result"]), cfg.contexts)


def run(quick: bool = True) -> Section:
    """Measure on the RTL for N = 1, 4, 16 (64 in full mode), model-only up to 1216.

    Returns
    -------
    Section
    """
    rtl_sizes = (1, 4, 16) if quick else (1, 4, 16, 64)
    model_only = (64, 256, 1216) if quick else (256, 1216)
    sec = Section("sync", "ARRAY barrier latency",
                  "tessera bench --only sync" + (" --quick" if quick else ""))
    sec.columns = [("tiles", "tiles"), ("source", "measured on"),
                   ("issue_to_release", "last sync issue → release"),
                   ("arrival_to_release", "last arrival → release"),
                   ("contract", "contract S"), ("goal", "goal ceil(log2 N)+3"),
                   ("model_agrees", "model agrees")]
    with Timer() as tt:
        for n in (*rtl_sizes, *model_only):
            lg = math.ceil(math.log2(n)) if n > 1 else 0
            m = _model(n)
            if n in rtl_sizes:
                r = _rtl(n)
                src, agree = "RTL", r == m
            else:
                r, src, agree = m, "model", None
            sec.rows.append(dict(tiles=n, source=src, contract=lg + 2, goal=lg + 3,
                                 model_agrees=agree, **r))
    sec.seconds = tt.s
    rtl_rows = [r for r in sec.rows if r["source"] == "RTL"]
    ok = all(r["arrival_to_release"] <= r["goal"] for r in rtl_rows)
    sec.goals.append(Goal(
        "sync ≤ ceil(log2 N)+3 (last arrival → release)",
        "; ".join(f"N={r['tiles']}: {r['arrival_to_release']} (issue → release "
                  f"{r['issue_to_release']})" for r in rtl_rows), ok))
    sec.notes += [
        "\"Arrival\" is the cycle the last `sync ARRAY` is visible as a state change (issue + "
        f"{STATE_VISIBLE_DELAY} = `STATE_VISIBLE_DELAY`, architecture §4-5), so arrival → "
        "release is the contract's D = ceil(log2 N) + 2 when the RTL obeys the contract; the "
        f"issue → release column adds those {STATE_VISIBLE_DELAY} pipeline cycles. "
        "The last context to resume does so at most T − 1 cycles later (its next issue slot).",
        "Measured from `csrr cycle` values in the final registers (see "
        "`tessera/cli/bench/sync.py`), on the RTL for the sizes built, on the golden model "
        "(the contract's executable form) for the larger ones.",
    ]
    return sec


def plot(sec: Section, outdir) -> list[str]:
    """Barrier latency vs tiles with the contract and the goal."""
    import matplotlib.pyplot as plt
    rows = sec.rows
    fig, ax = plt.subplots(figsize=(5, 3), dpi=90)
    x = [r["tiles"] for r in rows]
    ax.plot(x, [r["goal"] for r in rows], "--", color="gray", label="goal ceil(log2 N)+3")
    ax.plot(x, [r["contract"] for r in rows], ":", color="k", label="contract S")
    for src, mk in (("RTL", "o"), ("model", "s")):
        pts = [(r["tiles"], r["arrival_to_release"]) for r in rows if r["source"] == src]
        if pts:
            ax.plot(*zip(*pts), mk, label=f"measured ({src})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tiles")
    ax.set_ylabel("cycles (last arrival → release)")
    ax.set_title("ARRAY barrier latency", fontsize=9)
    ax.legend(fontsize=7)
    return [save_figure(fig, outdir, "bench_sync.png")]
