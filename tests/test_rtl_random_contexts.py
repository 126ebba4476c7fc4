"""Seeded random instruction streams (tessera/tb/randprog.py, ≥ 10k instructions per seed) with large
context counts (T = 12 and T = 16, the maximum) and per-context
coverage: every context of every tile retires a large share of the stream, and the RTL agrees with the golden model instruction by
instruction and cycle by cycle (tessera/tb/parity.py). Slow: one more Verilator build."""

import pytest

from tessera.spec.config import ArrayConfig

pytestmark = [pytest.mark.rtl, pytest.mark.slow]

@pytest.mark.parametrize("contexts", [12, 16])
def test_random_many_contexts(contexts):
    T16 = ArrayConfig(name=f"t{contexts}c", tiles=2, contexts=contexts, sram_bytes=32768,
                      exchange_latency=2)
    from tessera.tb.parity import check_parity
    from tessera.tb.randprog import generate
    from tessera.tb.runner import build_array
    progs = [generate(T16, s, fault=("misaligned_load" if s == 3 else None)) for s in (1, 2, 3)]
    jobs = [p.job(trace=True) for p in progs]
    out = build_array(T16).run({"jobs": jobs})
    for p, job, res in zip(progs, jobs, out["jobs"]):
        rep = check_parity(T16, job, res)
        assert rep.ok, str(rep)
        r = res["result"]
        if p.fault is None:
            assert r["status"] == "halted"
            assert rep.model_records >= 0.95 * 10_000 * T16.tiles
            per_ctx = [c["retired"] for t in r["tiles"] for c in t["contexts"]]
            assert min(per_ctx) >= 0.5 * rep.model_records / len(per_ctx), per_ctx
        else:
            assert r["status"] == "fault"
