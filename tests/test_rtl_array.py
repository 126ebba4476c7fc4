"""The RTL array (tessera/hdl/array/array.py on Verilator) against hand-computed expectations and the
golden model: final state, cycles and the full retire trace (cycle-exact).

One Verilator build per configuration (cached on disk by tessera.tb.runner) and one simulator
process per configuration and job batch (module-scoped fixtures), so the default suite
stays fast. Expected register values / fault records come from tessera/tb/directed.py, computed
by hand from the ISA spec; parity compares everything else with tessera.golden_model.Array.
"""

import pytest

from tessera.spec.config import PRESETS, ArrayConfig
from tessera.spec.faults import FaultCause

pytestmark = pytest.mark.rtl

TINY = PRESETS["tiny"]
SMALL = PRESETS["small"]
DIRECTED = ["alu_job", "muldiv_job", "loadstore_job", "branch_job", "csr_job", "dot4_job"]
TINY_SEEDS = [(1, None), (2, None), (3, True)]
SMALL_SEEDS = [(1, None)]


def _regs(res, t, c):
    return res["tiles"][t]["contexts"][c]["regs"]


def _run_batch(cfg, jobs):
    from tessera.tb.runner import build_array
    model = build_array(cfg)
    out = model.run({"jobs": [j for j, _ in jobs]})
    return {j["name"]: (j, exp, res) for (j, exp), res in zip(jobs, out["jobs"])}


def _assert_parity(cfg, job, res):
    from tessera.tb.parity import check_parity
    assert res["error"] is None, res["error"]
    rep = check_parity(cfg, job, res)
    assert rep.ok, str(rep)
    return rep


@pytest.fixture(scope="module")
def tiny_batch():
    from tessera.tb import directed
    from tessera.tb.randprog import generate
    jobs = []
    for name in DIRECTED:
        job, exp = getattr(directed, name)(TINY)
        jobs.append((dict(job, trace=True), exp))
    for name in directed.FAULT_CASES:
        job, exp = directed.fault_job(TINY, name)
        jobs.append((dict(job, trace=True), exp))
    for seed, fault in TINY_SEEDS:
        jobs.append((generate(TINY, seed, fault=fault).job(trace=True), None))
    job, _ = directed.spin_job(TINY, max_cycles=1500)
    jobs.append((dict(job, trace=True), None))
    return _run_batch(TINY, jobs)


@pytest.fixture(scope="module")
def small_batch():
    from tessera.tb import directed
    from tessera.tb.randprog import generate
    jobs = []
    for f in (directed.ring_shift_job, directed.all_gather_job, directed.tile_sync_job,
              directed.csr_job, directed.dot4_job):
        job, exp = f(SMALL)
        jobs.append((dict(job, trace=True), exp))
    for seed, fault in SMALL_SEEDS:
        jobs.append((generate(SMALL, seed, fault=fault).job(trace=True), None))
    return _run_batch(SMALL, jobs)


@pytest.mark.parametrize("name", [n[:-4] for n in DIRECTED])
def test_directed_tiny(tiny_batch, name):
    job, exp, res = tiny_batch[name]
    assert res["error"] is None, res["error"]
    r = res["result"]
    assert r["status"] == "halted"
    for (t, c, reg), want in exp.items():
        got = _regs(r, t, c)[reg]
        assert got == want, f"{name}: tile {t} ctx {c} x{reg} = {got:#x}, expected {want:#x}"
    _assert_parity(TINY, job, res)


@pytest.mark.parametrize("name", ["illegal", "ebreak", "misaligned_load", "access_fault_load",
                                  "misaligned_store", "access_fault_store", "misaligned_fetch",
                                  "access_fault_fetch", "csr_write_ro", "csr_unlisted"])
def test_fault_tiny(tiny_batch, name):
    job, (ctx, cause, pc, addr), res = tiny_batch[f"fault-{name}"]
    assert res["error"] is None, res["error"]
    r = res["result"]
    assert r["status"] == "fault"
    assert r["tiles"][0]["fault"] == {"context": ctx, "cause": FaultCause(cause).label,
                                      "pc": pc, "addr": addr}
    st = r["tiles"][0]["contexts"][ctx]
    assert st["state"] == "fault" and st["pc"] == pc
    _assert_parity(TINY, job, res)


@pytest.mark.parametrize("seed,fault", TINY_SEEDS)
def test_random_tiny(tiny_batch, seed, fault):
    job, _, res = tiny_batch[f"rand-{seed}"]
    rep = _assert_parity(TINY, job, res)
    if not fault:
        assert res["result"]["status"] == "halted"
        assert rep.model_records >= 10_000 * 0.95     # ~10k retired instructions per seed
    else:
        assert res["result"]["status"] == "fault"


def test_timeout_tiny(tiny_batch):
    job, _, res = tiny_batch["spin"]
    r = res["result"]
    assert r["status"] == "timeout" and r["cycles"] == 1500
    assert all(c["state"] == "running" for c in r["tiles"][0]["contexts"])
    assert r["not_arrived"] == []
    _assert_parity(TINY, job, res)


@pytest.mark.parametrize("name", ["ring-shift", "all-gather"])
def test_exchange_small(small_batch, name):
    job, exp, res = small_batch[name]
    assert res["error"] is None, res["error"]
    r = res["result"]
    assert r["status"] == "halted"
    for (t, c, reg), want in exp.items():
        assert _regs(r, t, c)[reg] == want, (t, c, reg)
    assert all(t["counters"]["exchange"] > 0 for t in r["tiles"])
    _assert_parity(SMALL, job, res)


@pytest.mark.parametrize("name", ["tile-sync", "csr", "dot4"])
def test_sync_and_directed_small(small_batch, name):
    job, exp, res = small_batch[name]
    assert res["error"] is None, res["error"]
    for (t, c, reg), want in (exp or {}).items():
        assert _regs(res["result"], t, c)[reg] == want, (t, c, reg)
    _assert_parity(SMALL, job, res)


@pytest.mark.parametrize("seed,fault", SMALL_SEEDS)
def test_random_small(small_batch, seed, fault):
    job, _, res = small_batch[f"rand-{seed}"]
    _assert_parity(SMALL, job, res)


# ---------------------------------------------------------------- long regressions
@pytest.mark.slow
@pytest.mark.parametrize("cfg", [TINY, SMALL,
                                 ArrayConfig(name="t8l5", tiles=2, contexts=8,
                                             sram_bytes=32768, exchange_latency=5)],
                         ids=lambda c: c.name)
def test_random_regression(cfg):
    from tessera.tb.randprog import generate
    seeds = range(100, 120) if cfg.tiles == 1 else range(100, 106)
    jobs = [(generate(cfg, s, fault=(s % 3 == 0) or None).job(trace=True), None) for s in seeds]
    batch = _run_batch(cfg, jobs)
    for job, _, res in batch.values():
        _assert_parity(cfg, job, res)


@pytest.mark.slow
def test_array16_exchange_and_random():
    from tessera.tb import directed
    from tessera.tb.randprog import generate
    cfg = PRESETS["array16"]
    jobs = [(dict(directed.ring_shift_job(cfg)[0], trace=True), None),
            (dict(directed.all_gather_job(cfg)[0], trace=True), None),
            (generate(cfg, 5, total=3000).job(trace=True), None)]
    batch = _run_batch(cfg, jobs)
    for job, _, res in batch.values():
        _assert_parity(cfg, job, res)
