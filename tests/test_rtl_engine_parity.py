"""Lock-step parity of the matrix-engine RTL with the golden model (docs/architecture.md §12):
seeded random RV32IM streams on every context of every tile mixed with random engine commands
(``tessera.tb.randprog.generate(..., engine=True)``: mrun of valid random descriptors of every
mode / flag / stride sign, mwait, loads of the engine's outputs while it runs, and with
``fault="engine"`` a faulting command), compared instruction by instruction and cycle by cycle
(``tessera.tb.parity``: retire trace, final state, counters, fault records) plus the engine
area and the data windows read back from the SRAM.

Default suite: a 2-tile, T = 4, 32 KiB array (P = 32), three seeds. ``slow``: more seeds and
the other engine sizes (P = 16, 64) and T = 6.
"""

import pytest

from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause

pytestmark = pytest.mark.rtl

SMALL = ArrayConfig(name="eng2", tiles=2, contexts=6, sram_bytes=32768, exchange_latency=2)  # T >= 6 (v2)


def _run(cfg, specs, total):
    from tessera.golden_model import Array
    from tessera.tb.parity import check_parity
    from tessera.tb.randprog import generate
    from tessera.tb.runner import build_array
    progs = [generate(cfg, s, total=total, engine=True, fault=f) for s, f in specs]
    jobs = []
    for p in progs:
        j = p.job(trace=True)
        # every byte of the image (code, data windows, engine area): the SRAM outside it
        # keeps what earlier jobs of the same simulation left there
        regions = [[t, a, len(d)] for t, a, d in p.segments]
        j["ops"] = ["load", "start", "wait", "collect", {"op": "readback", "regions": regions}]
        jobs.append(j)
    out = build_array(cfg).run({"jobs": jobs})
    reports = []
    for p, job, res in zip(progs, jobs, out["jobs"]):
        rep = check_parity(cfg, job, res)
        assert rep.ok, f"seed {p.seed}: {rep}"
        arr = Array(cfg)
        for tile, addr, hexdata in job["segments"]:
            arr.write_mem(int(tile), int(addr), bytes.fromhex(hexdata))
        arr.start(entry=0)
        arr.run(int(job["max_cycles"]))
        for (tile, addr, nbytes), got in zip(job["ops"][-1]["regions"], res["readback"]):
            want = arr.read_mem(tile, addr, nbytes)
            got = bytes.fromhex(got)
            bad = [hex(addr + i) for i in range(nbytes) if got[i] != want[i]]
            assert not bad, (p.seed, tile, len(bad), bad[:8], got[int(bad[0], 16) - addr:][:8].hex(), want[int(bad[0], 16) - addr:][:8].hex())
        reports.append((p, rep, res["result"]))
    return reports


def _check_coverage(reports, cfg):
    """The streams really used the engine: commands ran on every tile, with MACs."""
    for p, rep, r in reports:
        if p.fault is None:
            assert r["status"] == "halted", (p.seed, r["status"])
        else:
            assert r["status"] == "fault"
            faults = [t["fault"] for t in r["tiles"] if t["fault"]]
            assert faults and faults[0]["cause"] == FaultCause.ENGINE_FAULT.label, faults
        for t in r["tiles"]:
            if p.fault is None:
                assert t["counters"]["engine"] > 100 and t["counters"]["macs"] > 0, t["counters"]


def test_engine_parity_small():
    reps = _run(SMALL, [(1, None), (2, None), (3, "engine")], total=3000)
    _check_coverage(reps, SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [
    SMALL,
    ArrayConfig(name="eng16", tiles=2, contexts=6, sram_bytes=32768, engine_macs=16),
    ArrayConfig(name="eng64", tiles=4, contexts=7, sram_bytes=65536, engine_macs=64,
                exchange_latency=3),
], ids=lambda c: c.name)
def test_engine_parity_long(cfg):
    specs = [(s, "engine" if s % 4 == 3 else None) for s in range(10, 18)]
    reps = _run(cfg, specs, total=10_000)
    _check_coverage(reps, cfg)


def test_no_engine_build_makes_mrun_mwait_illegal():
    """engine_macs = 0 builds no engine: mrun and mwait are illegal_instruction (§3.1).

    On the ``small`` preset without the engine (4 tiles, 64 KiB: the build that test_demo and
    test_kernel_lib_rtl make anyway; test_hdl_core checks the same words on one Amaranth-
    simulated tile), every tile running the program."""
    from tessera.spec.config import preset
    from tessera.spec.result import RunStatus
    from tessera.tb.backend import result_from_json
    from tessera.tb.runner import build_array
    from tessera.toolchain import asm
    cfg = preset("small").replace(engine_macs=0)
    assert (cfg.tiles, cfg.contexts) == (4, 6)
    jobs = []
    for word in (asm.mrun(5), asm.mwait()):
        # context 0: nop (0), the word (4); the others spin (j .)
        code = [asm.csrrs(6, 0xCC1, 0), asm.bne(6, 0, 12), asm.addi(0, 0, 0), word, asm.jal(0, 0)]
        jobs.append({"name": hex(word), "entry": 0, "max_cycles": 200,
                     "segments": [[t, 0, asm.program(code).hex()] for t in range(cfg.tiles)]})
    out = build_array(cfg).run({"jobs": jobs})
    for word, res in zip((asm.mrun(5), asm.mwait()), out["jobs"]):
        r = result_from_json(res["result"])
        # v2 (T = 6, N = 4: D = ceil(log2 4) + 2 = 4): context 0 of every tile issues csrr
        # (0), bne (6), nop (12), the word (18): its fault is visible from 18 + 5 = 23 on every
        # tile, cycles = 23 + D = 27 (§4, §7 "Stop")
        assert r.status == RunStatus.FAULT and r.cycles == 27
        for t in range(cfg.tiles):
            f = r.tiles[t].fault
            assert (f.context, f.cause, f.pc, f.addr) == \
                (0, FaultCause.ILLEGAL_INSTRUCTION, 12, word), t
            assert r.tiles[t].counters["engine"] == 0
