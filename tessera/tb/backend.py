"""The ``rtl`` backend: run a program on the Verilator model of ``tessera_array``.

Registered in :mod:`tessera.backends` on import (``tessera exec --backend rtl``). The
Verilator model is built once per (config, RTL sources) and cached (:mod:`tessera.tb.runner`);
each call runs one cocotb simulation that loads the image through the AXI4-Lite host
port, starts the array, sleeps until ``done`` and reads the result back
(:mod:`tessera.tb.host`), giving the same :class:`tessera.spec.result.RunResult` JSON as ``model``.

Waves: pass ``waves="vcd"`` (or ``"fst"``), or set ``TESSERA_RTL_WAVES=vcd`` in the
environment (what ``tessera exec --waves`` does); the dump path is then stored in
:data:`last_run_info` ``["waves"]`` and printed to stderr.
"""

from __future__ import annotations

import os
import sys

from tessera.backends import BackendError, register
from tessera.spec.config import ArrayConfig
from tessera.spec.result import RunResult

__all__ = ["run_on_rtl", "run_on_both", "BackendMismatch", "result_from_json", "image_segments",
           "last_run_info"]

#: Details of the last :func:`run_on_rtl` call: build dir, work dir, waves file, timings.
last_run_info: dict = {}


def result_from_json(d: dict, backend: str = "rtl") -> RunResult:
    """:meth:`tessera.spec.result.RunResult.from_json` with ``backend="rtl"``."""
    return RunResult.from_json(d, backend)


def image_segments(config: ArrayConfig, image, preload=()) -> list[list]:
    """SPMD image segments for every tile plus ``preload`` as ``[tile, addr, hex]`` lists.

    Raises
    ------
    ValueError
        A segment or preload write does not fit the tile SRAM (names tile and range).
    """
    segs = []
    for tile in range(config.tiles):
        for s in image.segments:
            data = bytes(s.data)
            if not data:
                continue
            if s.addr < 0 or s.addr + len(data) > config.sram_bytes:
                raise ValueError(f"image segment [{s.addr:#x}, {s.addr + len(data):#x}) does not "
                                 f"fit the {config.sram_bytes}-byte SRAM of tile {tile}")
            segs.append([tile, s.addr, data.hex()])
    for tile, addr, data in preload:
        data = bytes(data)
        if not 0 <= tile < config.tiles:
            raise ValueError(f"preload for tile {tile}: the array has {config.tiles} tiles")
        if addr < 0 or addr + len(data) > config.sram_bytes:
            raise ValueError(f"preload [{addr:#x}, {addr + len(data):#x}) does not fit the "
                             f"{config.sram_bytes}-byte SRAM of tile {tile}")
        segs.append([tile, addr, data.hex()])
    return segs


@register("rtl")
def run_on_rtl(config: ArrayConfig, image, max_cycles: int, *, preload=(), readback=(),
               waves: str | None = None) -> tuple[RunResult, list[bytes]]:
    """Run ``image`` SPMD on the RTL of ``config`` (see :func:`tessera.backends.run_program_io`).

    Parameters
    ----------
    config : ArrayConfig
    image : tessera.toolchain.elf.Image or compatible (``entry``, ``segments`` with ``addr``/``data``)
    max_cycles : int
        Cycle limit written to MAX_CYCLES.
    preload : iterable of (tile, addr, bytes)
    readback : iterable of (tile, addr, nbytes)
    waves : {None, "vcd", "fst"}
        Dump waves; default from ``$TESSERA_RTL_WAVES``.

    Returns
    -------
    (RunResult, list of bytes)

    Raises
    ------
    BackendError
        The RTL cannot be built or simulated here (message says why, with the log tail).
    ValueError
        The image does not fit the SRAM.
    """
    from .runner import RtlRunError, build_array

    if waves is None:
        waves = os.environ.get("TESSERA_RTL_WAVES") or None
    if waves not in (None, "vcd", "fst"):
        raise ValueError(f"waves must be 'vcd' or 'fst', not {waves!r}")
    readback = [(int(t), int(a), int(n)) for t, a, n in readback]
    job = {"name": "exec", "segments": image_segments(config, image, preload),
           "entry": int(image.entry), "max_cycles": int(max_cycles),
           "ops": ["load", "start", "wait", "collect"]
           + ([{"op": "readback", "regions": readback}] if readback else [])}
    try:
        model = build_array(config, waves=waves)
        out = model.run({"jobs": [job]}, waves=waves is not None)
    except RtlRunError as e:
        raise BackendError(f"rtl backend: {e}") from None
    (res,) = out["jobs"]
    last_run_info.clear()
    last_run_info.update(build_dir=str(model.build_dir), build_seconds=model.build_seconds,
                         work_dir=out.get("work_dir"), sim_cycles=res["sim_cycles"],
                         wall_s=res["wall_s"])
    if waves is not None and out.get("work_dir"):
        dump = os.path.join(out["work_dir"], "dump.fst" if waves == "fst" else "dump.vcd")
        last_run_info["waves"] = dump
        print(f"tessera: waves written to {dump}", file=sys.stderr)
    if res["error"] is not None:
        raise BackendError(f"rtl backend: simulation job failed:\n{res['error']}")
    result = result_from_json(res["result"])
    data = [bytes.fromhex(h) for h in res.get("readback", [])]
    return result, data


def run_jobs_on_rtl(config: ArrayConfig, image, max_cycles: int, jobs) -> list:
    """Several runs of ``image`` in one RTL simulation (one Verilator process, one load of the
    image): run ``i`` writes ``jobs[i]``'s preload, starts, waits, collects and reads back.

    Start resets everything but the SRAM (docs/architecture.md §9), so run ``i`` behaves like a
    separate :func:`run_on_rtl` whose preload is the SRAM after run ``i-1`` plus ``jobs[i]``'s
    preload; only the first run loads the image segments. This saves the per-run simulator
    start and the full-SRAM load and read-back of a run (most of an RTL run's wall time for a
    program of a few hundred thousand cycles).

    Parameters
    ----------
    config : ArrayConfig
    image : tessera.toolchain.elf.Image or compatible
    max_cycles : int
        Cycle limit of each run.
    jobs : list of (preload, readback)
        As :func:`run_on_rtl`'s ``preload`` and ``readback``, per run.

    Returns
    -------
    list of (RunResult, list of bytes)
        Per run.

    Raises
    ------
    BackendError
        The RTL cannot be built or simulated, or a run's job failed (naming it).
    ValueError
        A segment does not fit the SRAM; no jobs.
    """
    from .runner import RtlRunError, build_array
    jobs = list(jobs)
    if not jobs:
        raise ValueError("run_jobs_on_rtl: no jobs")
    payload = []
    for i, (preload, readback) in enumerate(jobs):
        readback = [(int(t), int(a), int(n)) for t, a, n in readback]
        segs = image_segments(config, image, preload) if i == 0 else \
            image_segments(config, _NoSegments, preload)
        payload.append({"name": f"run{i}", "segments": segs, "entry": int(image.entry),
                        "max_cycles": int(max_cycles),
                        "ops": ["load", "start", "wait", "collect"]
                        + ([{"op": "readback", "regions": readback}] if readback else [])})
    try:
        model = build_array(config)
        out = model.run({"jobs": payload})
    except RtlRunError as e:
        raise BackendError(f"rtl backend: {e}") from None
    results = []
    for i, res in enumerate(out["jobs"]):
        if res["error"] is not None:
            raise BackendError(f"rtl backend: simulation job {i} of {len(jobs)} failed:\n"
                               f"{res['error']}")
        results.append((result_from_json(res["result"]),
                        [bytes.fromhex(h) for h in res.get("readback", [])]))
    last_run_info.clear()
    last_run_info.update(build_dir=str(model.build_dir), build_seconds=model.build_seconds,
                         work_dir=out.get("work_dir"),
                         sim_cycles=sum(r["sim_cycles"] for r in out["jobs"]),
                         wall_s=sum(r["wall_s"] for r in out["jobs"]))
    return results


class _NoSegments:
    segments = ()


#: Found by :meth:`tessera.toolchain.graph.Engine.run_many` through the backend registry
#: (the toolchain does not import ``tessera.tb``).
run_on_rtl.run_jobs = run_jobs_on_rtl


class BackendMismatch(BackendError):
    """``--backend both``: the RTL and the golden model disagree (CLI exit code 3)."""
    exit_code = 3


@register("both")
def run_on_both(config: ArrayConfig, image, max_cycles: int, *, preload=(),
                readback=()) -> tuple[RunResult, list[bytes]]:
    """Run on the golden model and on the RTL and require identical results.

    Returns the RTL result and read-back data.

    Raises
    ------
    BackendMismatch
        The two RunResult JSON documents (or the read-back bytes) differ; the message lists
        the first differing fields.
    """
    from tessera.backends import get

    from .parity import compare_results

    m, md = get("model")(config, image, max_cycles, preload=list(preload),
                         readback=list(readback))
    r, rd = run_on_rtl(config, image, max_cycles, preload=preload, readback=readback)
    diffs = compare_results(m.to_json(), r.to_json())
    diffs += [f"readback[{i}] differs" for i, (a, b) in enumerate(zip(md, rd)) if a != b]
    if diffs:
        more = f"\n  ... {len(diffs) - 20} more" if len(diffs) > 20 else ""
        raise BackendMismatch("model and rtl disagree:\n  " + "\n  ".join(diffs[:20]) + more)
    return r, rd
