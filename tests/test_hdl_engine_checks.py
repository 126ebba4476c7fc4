"""The matrix engine's descriptor checks of step 7 (docs/architecture.md §12 "Faults", check 2)
on the Amaranth-simulated array, each case against the golden model and by hand.

Written for four RTL mutants of ``tessera/hdl/tile/matrix_engine.py`` that survived the fast
suite (docs/verification.md, "Mutation score"): the check of J = J0·J1 > 256 computed with
``//`` instead of ``*`` (M075b82), with 8-bit instead of 9-bit factors (M064929), the
``J0 > 256`` / ``J1 > 256`` terms joined with ``&`` (M01e5e6), and the zp/qmin/qmax checks
applied in every mode instead of only TFLITE and FLOAT32 (M03acbf). The random streams of
test_hdl_engine_model only draw valid descriptors and J ≤ 256.

Check 2 (step 7): "a loop count J0, J1, K0 or K1 of 0, J > 256, …, or in TFLITE or FLOAT32
mode qmin > qmax or zp, qmin or qmax outside the output type's range: addr = d". With the
issuer of tests/helpers/model_engine.py (mrun accepted at x = 28, step s at 29 + s, no
stalls) a check-2 fault is decided in step 7: t_f = 36, visible from 37, so cycles =
t_f + 1 + D (§7 "Stop") and the record is (context 0, engine_fault, pc of the mrun, d).
"""

import pytest

from tessera.spec.engine import Mode
from tessera.spec.faults import FaultCause

from helpers.hdl_parity import compare
from helpers.model_engine import CFG, D0, PC_MRUN, STD_MEM, good, image, issuer

# name: (descriptor fields over helpers.model_engine.good(), faults?)
CASES = {
    "j_17x17": (dict(J0=17, J1=17), True),          # J = 289 > 256; 17 // 17 = 1 is not
    "j_256x2": (dict(J0=256, J1=2), True),          # J = 512; 256 has no 8-bit form
    "j_2x256": (dict(J0=2, J1=256), True),
    "j0_513": (dict(J0=513, J1=1), True),           # J0 > 256 (513 mod 512 = 1: J0·J1 on
    "j1_513": (dict(J0=1, J1=513), True),           # 9-bit factors is 1, so only J0 > 256 sees it)
    # RAW ignores zp/qmin/qmax: qmin > qmax and values outside int8/uint8 are accepted
    "raw_any_clamp": (dict(mode=Mode.RAW, zp=1000, qmin=5, qmax=-3), False),
    "f32_qmin_gt_qmax": (dict(mode=Mode.FLOAT32, qmin=5, qmax=-3), True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_step7_descriptor_check(name):
    fields, faults = CASES[name]
    desc = good(**fields)
    mem = dict(STD_MEM)
    mem[D0] = desc.pack()
    img = [(0, image({0: issuer(D0)}, CFG.contexts))] + sorted(mem.items())
    got = compare(CFG, [img], 2000, [])
    t0 = got["tiles"][0]
    if faults:
        t_f = 28 + 1 + 7
        assert got["status"] == "fault"
        assert got["cycles"] == t_f + 1 + CFG.decision_latency
        assert t0["fault"] == {"context": 0, "cause": FaultCause.ENGINE_FAULT.label,
                               "pc": PC_MRUN, "addr": D0}
    else:
        assert got["status"] == "halted" and t0["fault"] is None
