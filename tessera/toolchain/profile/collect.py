"""Build a PopVision-style profile (a JSON-ready dict) from a graph run.

Sources:

- per-tile **hardware counters** of the run (``RunResult.tiles[t].counters``: compute, sync,
  exchange, halted cycles, retired, macs; docs/architecture.md §8) — the authoritative totals;
- the **superstep marks** written by the graph runtime when the program was compiled with
  ``compile_graph(profile=var)``: the last context of each tile records ``(tag, cycle)`` at
  every boundary (``tessera/toolchain/codelets/runtime.c``; tag = ``op << 4 | kind``, kind 0 start,
  1 EXEC done, 2 EXCH arrive, 3 EXCH resume, 15 end of the control table);
- the compiler's **memory report** (``CompiledGraph.memory``) and exchange schedule reports.

Segments of a tile's timeline, from consecutive marks ``m_i < m_{i+1}``:

- ``compute``: from a mark to an EXEC-done or EXCH-arrive mark (the compute set's vertices
  plus its ``sync TILE``; runtime control overhead is included);
- an EXCH arrive → resume interval of length ``D`` ends with ``exchange`` (the last ``X``
  cycles, ``X`` = the phase's scheduled length from the exchange scheduler report, which is
  exactly what the ``exchange`` counter counts), preceded by ``sync`` = ``max_u(a_u) - a_t + S``
  cycles (``a_u`` = the arrive marks of this barrier on every tile: all tiles release at the
  same cycle, so a tile waits for the latest one plus the barrier latency S, §5) and the rest
  as ``compute`` (the contexts' runtime instructions around ``sync ARRAY``, during which the
  hardware counts ``compute`` too);
- before the first mark (crt0, ``.bss``) and after the last (return, ``ecall``) until the
  end of the run: ``compute``.

So per tile the segment lengths add up to ``cycles``; the exchange total equals the
``exchange`` counter exactly, and ``sync`` is within a few cycles per barrier of the ``sync``
counter (which also counts the ~3-cycle ``sync TILE`` releases inside compute sets).
"""

from __future__ import annotations

import numpy as np

from tessera.toolchain.graph.control import (PROF_KIND_ARRIVE, PROF_KIND_END, PROF_KIND_EXEC,
                                            PROF_KIND_RESUME, PROF_KIND_START, PROF_TAG_SHIFT)

__all__ = ["build_profile", "decode_marks", "ProfileError", "KIND_START", "KIND_EXEC",
           "KIND_ARRIVE", "KIND_RESUME", "KIND_END"]

#: Mark kinds (:mod:`tessera.toolchain.graph.control`, the runtime's ``TSR_PROF_KIND_*``).
KIND_START, KIND_EXEC, KIND_ARRIVE, KIND_RESUME, KIND_END = (
    PROF_KIND_START, PROF_KIND_EXEC, PROF_KIND_ARRIVE, PROF_KIND_RESUME, PROF_KIND_END)
_KIND_MASK = (1 << PROF_TAG_SHIFT) - 1


class ProfileError(ValueError):
    """The profile buffer or its inputs are inconsistent (message says what and where)."""


def decode_marks(row) -> list[tuple[int, int, int]]:
    """Decode one tile's profile buffer row into ``[(op_index, kind, cycle), ...]``.

    Parameters
    ----------
    row : array_like of int, shape [1 + 2·R]
        ``count`` then ``R`` records ``(tag, cycle low word)``.

    Returns
    -------
    list of (int, int, int)

    Raises
    ------
    ProfileError
        The count is negative or larger than the capacity.
    """
    r = np.asarray(row, dtype=np.int64) & 0xFFFFFFFF
    if r.ndim != 1 or r.size < 1:
        raise ProfileError(f"profile row must be 1-D with a count word, got shape {r.shape}")
    n, cap = int(r[0]), (r.size - 1) // 2
    if n > cap:
        raise ProfileError(f"profile row says {n} records but holds at most {cap}")
    recs = r[1:1 + 2 * n].reshape(n, 2)
    return [(int(tag) >> PROF_TAG_SHIFT, int(tag) & _KIND_MASK, int(cyc)) for tag, cyc in recs]


def _op_name(ops, i):
    if 0 <= i < len(ops):
        op = ops[i]
        return str(op[1]) if op[0] != "repeat" else f"repeat x{op[1]}"
    return "end"


def build_profile(compiled, result, marks=None, *, title: str = "Tessera profile",
                  runs: list | None = None, extra_summary: list | None = None) -> dict:
    """Assemble the profile of one run of a compiled graph.

    Parameters
    ----------
    compiled : tessera.toolchain.graph.CompiledGraph
    result : tessera.spec.result.RunResult
        The profiled run (its counters and ``cycles``).
    marks : ndarray of int, shape [tiles, 1 + 2·R], or None
        The profile variable read back after the run (``Engine.read_tensor``). Without it
        the timeline has one ``compute``/``sync``/``exchange`` bar per tile from the counters.
    title : str
    runs : list of RunResult, optional
        All runs of a job (e.g. every batch); the summary adds their totals.
    extra_summary : list of (str, str), optional
        Rows appended to the summary table (e.g. accuracy).

    Returns
    -------
    dict
        JSON-ready: ``title``, ``config``, ``backend``, ``cycles``, ``tiles`` (per tile:
        ``counters``, ``segments`` [{kind, start, end, label, superstep}]), ``supersteps``
        ([{index, label, tiles: [{compute, sync, exchange}]}]), ``memory`` (per tile bytes per
        category + used/free), ``exchanges`` (scheduler reports), ``summary`` ([[name, value]]).

    Raises
    ------
    ProfileError
        ``marks`` does not match the array, or the marks are out of order.
    """
    cfg = compiled.config
    N = cfg.tiles
    cycles = int(result.cycles)
    ops = list(compiled.ops)
    xlen = {rep["name"]: int(rep["cycles"]) for rep in compiled.exchanges}
    tiles = []
    steps: dict[int, dict] = {}
    latest: dict = {}      # (op, occurrence) -> latest arrive mark over the tiles
    if marks is not None:
        marks = np.asarray(marks)
        if marks.ndim != 2 or marks.shape[0] != N:
            raise ProfileError(f"profile marks must have shape [{N}, 1 + 2*R], got {marks.shape}")
        for t in range(N):
            seen: dict = {}
            for op, kind, cyc in decode_marks(marks[t]):
                if kind == KIND_ARRIVE:
                    key = (op, seen.get(op, 0))
                    seen[op] = key[1] + 1
                    latest[key] = max(latest.get(key, cyc), cyc)
    for t in range(N):
        cnt = {k: int(v) for k, v in result.tiles[t].counters.items()}
        segs = []
        if marks is None:
            pos = 0
            for kind in ("compute", "sync", "exchange", "halted"):
                if cnt.get(kind, 0):
                    segs.append({"kind": kind, "start": pos, "end": pos + cnt[kind],
                                 "label": f"{kind} (counter total)", "superstep": 0})
                    pos += cnt[kind]
        else:
            recs = decode_marks(marks[t])
            prev, step = 0, 0
            seen, arrive = {}, 0

            def add(kind, start, end, lab, s):
                if end > start:
                    segs.append({"kind": kind, "start": start, "end": end, "label": lab,
                                 "superstep": s})
                    d = steps.setdefault(s, {"index": s, "labels": [], "tiles": {}})
                    per = d["tiles"].setdefault(t, {"compute": 0, "sync": 0, "exchange": 0})
                    per[kind] += end - start
                    if lab not in d["labels"]:
                        d["labels"].append(lab)
            for op, kind, cyc in recs:
                if cyc < prev or cyc > cycles:
                    raise ProfileError(f"tile {t}: profile mark at cycle {cyc} (op {op}) is out "
                                       f"of order (previous {prev}, run length {cycles})")
                name = _op_name(ops, op)
                if kind == KIND_ARRIVE:     # this tile's sync wait at the coming barrier
                    key = (op, seen.get(op, 0))
                    seen[op] = key[1] + 1
                    arrive = latest[key] - cyc + cfg.sync_latency
                if kind == KIND_START:
                    add("compute", prev, cyc, "runtime start", step)
                elif kind in (KIND_EXEC, KIND_ARRIVE, KIND_END):
                    add("compute", prev, cyc, name if kind == KIND_EXEC else
                        ("runtime end" if kind == KIND_END else f"{name} (control)"), step)
                elif kind == KIND_RESUME:
                    x = min(xlen.get(name, 0), cyc - prev)
                    w = max(0, min(arrive, cyc - prev - x))
                    add("compute", prev, cyc - x - w, f"{name} (control)", step)
                    add("sync", cyc - x - w, cyc - x, f"{name} sync", step)
                    add("exchange", cyc - x, cyc, f"{name} exchange", step)
                    step += 1
                else:
                    raise ProfileError(f"tile {t}: unknown profile mark kind {kind} (op {op})")
                prev = cyc
            add("compute", prev, cycles, "halt", step)
        tiles.append({"tile": t, "counters": cnt, "segments": segs})

    supersteps = []
    for s in sorted(steps):
        d = steps[s]
        labels = [x for x in d["labels"] if x not in ("runtime start", "runtime end", "halt")
                  and not x.endswith("(control)")]
        supersteps.append({"index": s, "label": ", ".join(labels) or "runtime",
                           "tiles": [d["tiles"].get(t, {"compute": 0, "sync": 0, "exchange": 0})
                                     for t in range(N)]})

    tot = {k: sum(int(t.counters.get(k, 0)) for t in result.tiles)
           for k in ("compute", "sync", "exchange", "halted", "retired", "macs")}
    tile_cycles = N * cycles
    summary = [
        ["array", f"{N} tiles x {cfg.contexts} contexts, {cfg.sram_bytes // 1024} KiB SRAM, "
                  f"L={cfg.exchange_latency}"],
        ["backend", str(getattr(result, "backend", "") or "")],
        ["cycles (profiled run)", f"{cycles}"],
        ["supersteps", f"{len(supersteps)}"],
        ["compute share", f"{tot['compute'] / tile_cycles:.1%}"],
        ["sync share", f"{tot['sync'] / tile_cycles:.2%}"],
        ["exchange share", f"{tot['exchange'] / tile_cycles:.2%}"],
        ["instructions retired", f"{tot['retired']}"],
        ["MACs (counter)", f"{tot['macs']}"],
        # against the tile's peak, as the ONNX report and the demo: the matrix engine's MACs
        # per cycle, or 4 (one dot4 per cycle) without one (ArrayConfig.peak_macs_per_cycle)
        ["MAC utilisation (run)",
         f"{tot['macs'] / (cfg.peak_macs_per_cycle * tile_cycles):.1%} of "
         f"{cfg.peak_macs_per_cycle} MACs/cycle/tile "
         f"({'matrix engine' if cfg.engine_macs else 'dot4'})"],
        ["exchange phases", ", ".join(f"{r['name']}: {r['cycles']} cycles "
                                      f"({'bound met' if r['bound_met'] else 'bound missed'})"
                                      for r in compiled.exchanges) or "none"],
    ]
    if runs:
        total = sum(int(r.cycles) for r in runs)
        summary.append(["runs", f"{len(runs)} ({total} cycles in total)"])
    if extra_summary:
        summary.extend([str(a), str(b)] for a, b in extra_summary)
    return {"title": title, "config": cfg.to_dict(), "backend": summary[1][1],
            "cycles": cycles, "tiles": tiles, "supersteps": supersteps,
            "memory": [dict(m) for m in compiled.memory], "exchanges": list(compiled.exchanges),
            "summary": summary}
