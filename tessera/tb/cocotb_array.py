"""The cocotb test module :class:`tessera.tb.runner.RtlModel` runs: a list of host jobs in, results out.

Input (``$TESSERA_TB_PAYLOAD``, JSON)::

    {"config": ArrayConfig dict,
     "jobs": [{"name": str,
               "segments": [[tile, byte_offset, "hex bytes"], ...],
               "entry": int, "max_cycles": int,
               "trace": bool,              # collect the retire trace (slow, parity runs)
               "ops": [...]}]}             # optional; default ["load","start","wait","collect"]

Ops (strings or dicts with an ``"op"`` key), executed in order:
``load`` (write the segments through AXI), ``start``, ``wait`` (until ``done``),
``collect`` (read the RunResult), ``{"op": "write", "addr", "data": int}`` /
``{"op": "read", "addr", "n": words}`` (raw AXI, response recorded, no exception),
``{"op": "cycles", "n"}`` (let n clock cycles pass),
``{"op": "readback", "regions": [[tile, addr, nbytes], ...]}`` (SRAM bytes into
``"readback"``: a list of hex strings).

Output (``$TESSERA_TB_RESULTS``)::

    {"jobs": [{"name", "result": RunResult JSON or null, "trace": [...] or null,
               "axi": [{"op", "addr", "resp", "data"}], "error": str or null,
               "sim_cycles": int, "wall_s": float}]}

A job's exception is caught and reported in ``error`` (with traceback); the DUT is then
reset before the next job, so one bad job does not hide the others.
"""

from __future__ import annotations

import json
import os
import time
import traceback

import cocotb
from cocotb.triggers import ClockCycles, Timer

from tessera.spec.config import ArrayConfig

from .host import TesseraHost
from .trace_monitor import TraceMonitor

DEFAULT_OPS = ("load", "start", "wait", "collect")


def _sim_ns() -> int:
    from cocotb.simtime import get_sim_time
    return int(get_sim_time("ns"))


async def _run_job(host: TesseraHost, job: dict, monitor_factory) -> dict:
    out = {"name": job.get("name", "?"), "result": None, "trace": None, "axi": [],
           "error": None, "sim_cycles": 0, "wall_s": 0.0}
    segments = [(int(t), int(o), bytes.fromhex(h)) for t, o, h in job.get("segments", [])]
    entry, max_cycles = int(job.get("entry", 0)), int(job.get("max_cycles", 0))
    monitor = None
    t0, s0 = time.monotonic(), _sim_ns()
    try:
        for op in job.get("ops") or DEFAULT_OPS:
            kind = op if isinstance(op, str) else op["op"]
            if kind == "load":
                await host.load(segments)
            elif kind == "start":
                if job.get("trace"):
                    monitor = monitor_factory()   # relative cycles: any start point works
                await host.start(entry, max_cycles)
            elif kind == "wait":
                w0, ws0 = time.monotonic(), _sim_ns()
                await host.wait_done()
                out["wait_s"] = time.monotonic() - w0
                out["wait_cycles"] = (_sim_ns() - ws0) // host.period_ns
                if monitor is not None:
                    # let the W stage of the last issued instructions drain into the monitor
                    await ClockCycles(host.dut.clk, 8)
                    monitor.stop()
            elif kind == "collect":
                out["result"] = (await host.collect()).to_json()
            elif kind == "write":
                data = int(op["data"]) & 0xFFFFFFFF
                resp = await host.write_raw(int(op["addr"]), data.to_bytes(4, "little"))
                out["axi"].append({"op": "write", "addr": int(op["addr"]), "resp": resp,
                                   "data": data})
            elif kind == "read":
                n = int(op.get("n", 1))
                data, resp = await host.read_raw(int(op["addr"]), 4 * n)
                words = [int.from_bytes(data[4 * i:4 * i + 4], "little") for i in range(n)]
                out["axi"].append({"op": "read", "addr": int(op["addr"]), "resp": resp,
                                   "data": words})
            elif kind == "readback":
                got = []
                for tile, addr, nbytes in op["regions"]:
                    from tessera.spec.hostmap import sram_addr
                    data, resp = await host.read_raw(sram_addr(int(tile), int(addr)), int(nbytes))
                    if resp != 0:
                        raise RuntimeError(f"read-back of tile {tile} [{addr:#x}, +{nbytes}) "
                                           f"got AXI response {resp}")
                    got.append(data.hex())
                out["readback"] = got
            elif kind == "cycles":
                await Timer(int(op["n"]) * host.period_ns, unit="ns")
            else:
                raise ValueError(f"job {out['name']!r}: unknown op {kind!r}")
    except Exception:
        out["error"] = traceback.format_exc()
    finally:
        if monitor is not None:
            monitor.stop()
            out["trace"] = monitor.records
    out["sim_cycles"] = (_sim_ns() - s0) // host.period_ns
    out["wall_s"] = time.monotonic() - t0
    return out


@cocotb.test()
async def run_jobs(dut):
    """Run every job of the payload and write the results file."""
    payload = json.loads(open(os.environ["TESSERA_TB_PAYLOAD"]).read())
    config = ArrayConfig.from_dict(payload["config"])
    host = TesseraHost(dut, config)
    await host.reset()
    results = {"jobs": []}
    geometry_error = None
    try:
        await host.check_geometry()
    except Exception:
        geometry_error = traceback.format_exc()
    for job in payload.get("jobs", []):
        if geometry_error is not None:
            results["jobs"].append({"name": job.get("name", "?"), "result": None, "trace": None,
                                    "axi": [], "error": geometry_error, "sim_cycles": 0,
                                    "wall_s": 0.0})
            continue

        def factory():
            mon = TraceMonitor(dut, config.tiles)
            mon.start()
            return mon
        res = await _run_job(host, job, factory)
        results["jobs"].append(res)
        if res["error"] is not None:
            await host.reset()
    with open(os.environ["TESSERA_TB_RESULTS"], "w") as fh:
        json.dump(results, fh)
