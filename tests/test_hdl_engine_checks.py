"""The matrix engine's data checks (docs/architecture.md §12 "Faults", checks 2 and 3) on the
Amaranth-simulated array, each case against the golden model and by hand.

Written for four RTL mutants of ``tessera/hdl/tile/matrix_engine.py`` that survived the fast
suite (docs/verification.md, "Mutation score"): the check of J = J0·J1 > 256 computed with
``//`` instead of ``*`` (M075b82), with 8-bit instead of 9-bit factors (M064929), the
``J0 > 256`` / ``J1 > 256`` terms joined with ``&`` (M01e5e6), and the zp/qmin/qmax checks
applied in every mode instead of only TFLITE and FLOAT32 (M03acbf). The random streams of
test_hdl_engine_model only draw valid descriptors and J ≤ 256. The check-3 cases (a FLOAT32
multiplier of exponent 255, a TFLITE shift outside −31..30, and each one's field ignored in the
other mode) were written for M083a6c (the FLOAT32 multiplier fault dropped), which only the
Verilator suite (tests/test_rtl_engine.py "f_fmult") saw, and the K_GATHER cases for M00c027
(the gathered address a_base + g narrowed to 31 bits), and a fault followed by an in-range
stream step for M086d6c (the engine not frozen after its fault).

Check 2 (step 7): "a loop count J0, J1, K0 or K1 of 0, J > 256, …, or in TFLITE or FLOAT32
mode qmin > qmax or zp, qmin or qmax outside the output type's range: addr = d". With the
issuer of tests/helpers/model_engine.py (mrun accepted at x = 28, step s at 29 + s, no
stalls) step s is at t_f = 29 + s; a fault of checks 1 and 4 (addresses) of it is visible from
t_f + 1, a fault of checks 2 and 3 (the data of the word it read) from t_f + 2 (§7 "Stop",
§12 "Engine faults", since 2026-12-02), so cycles = t_f + 1 + D or t_f + 2 + D and the record
is (context 0, engine_fault, pc of the mrun, addr): check 2 in step 7 with addr = d; check 3
(C = 1: channel 0 only) in step 8 (FLOAT32 multiplier, addr = p_base) or step 9 (TFLITE shift,
addr = p_base + 8).
"""

import pytest

from tessera.spec.engine import Flag, Mode
from tessera.spec.faults import FaultCause

from helpers.hdl_parity import assert_parity, model_run, rtl_run
from helpers.model_engine import A, CFG, D0, P, PC_MRUN, STD_MEM, good, image, issuer, params

INF_BITS = 0x7F800000          # binary32 +inf: exponent field 255
GT = 0x2000                    # a K_GATHER table (8 bytes per entry: u32 offset, ignored half)
# K_GATHER, C = 1, J = 1, K0 = K1 = 1, RAW: steps 0..7 descriptor, 8..9 channel 0's parameter
# words, 10 the gather step (g = the u32 at GT), 11 W(0, 0), 12 X(0, 0) at a_base + g
GATHER = dict(J0=1, ak_s1=GT, mode=Mode.RAW, flags=Flag.K_GATHER)
# channel 0's parameters of a TFLITE command that passes check 3 (shift 0)
TFL_OK = params([0], [1 << 30], [0])
# name: (descriptor fields over helpers.model_engine.good(), channel parameters at P — or a
# {addr: bytes} of extra memory — or None for STD_MEM's, the faulting (step, addr) or None)
CASES = {
    "j_17x17": (dict(J0=17, J1=17), None, (7, D0)),   # J = 289 > 256; 17 // 17 = 1 is not
    "j_256x2": (dict(J0=256, J1=2), None, (7, D0)),   # J = 512; 256 has no 8-bit form
    "j_2x256": (dict(J0=2, J1=256), None, (7, D0)),
    "j0_513": (dict(J0=513, J1=1), None, (7, D0)),    # J0 > 256 (513 mod 512 = 1: J0·J1 on
    "j1_513": (dict(J0=1, J1=513), None, (7, D0)),    # 9-bit factors is 1: only J0 > 256 sees it)
    # RAW ignores zp/qmin/qmax: qmin > qmax and values outside int8/uint8 are accepted
    "raw_any_clamp": (dict(mode=Mode.RAW, zp=1000, qmin=5, qmax=-3), None, None),
    "f32_qmin_gt_qmax": (dict(mode=Mode.FLOAT32, qmin=5, qmax=-3), None, (7, D0)),
    # the output type's bounds (qmax is the word read in step 7, checked the cycle it arrives
    # without a 16-bit carry chain: tessera.hdl.compare.in_signed_range, and qmin > qmax on 9
    # bits). int8: -128..127 accepted, 128 and -129 not, nor -32668 = 0x8064, whose low 9 bits
    # are 100 (in range; -128 > -32668 too, so the 16-bit qmin > qmax would also see it)
    "i8_extremes_ok": (dict(mode=Mode.TFLITE, zp=127, qmin=-128, qmax=127), TFL_OK, None),
    "i8_qmax_128": (dict(mode=Mode.TFLITE, qmax=128), TFL_OK, (7, D0)),
    "i8_qmin_m129": (dict(mode=Mode.FLOAT32, qmin=-129), None, (7, D0)),
    "i8_qmax_top_bit": (dict(mode=Mode.TFLITE, qmax=-32668), TFL_OK, (7, D0)),
    # uint8 (OUT_UNSIGNED): 0..255 accepted, 256 and a zp of -1 not; qmin 200 > qmax 100 (both
    # in range: the 9-bit comparison must be the signed one, 200 is not negative)
    "u8_extremes_ok": (dict(mode=Mode.TFLITE, flags=Flag.OUT_UNSIGNED, zp=255, qmin=0,
                            qmax=255), TFL_OK, None),
    "u8_qmax_256": (dict(mode=Mode.FLOAT32, flags=Flag.OUT_UNSIGNED, qmin=0, qmax=256), None,
                    (7, D0)),
    "u8_zp_m1": (dict(mode=Mode.TFLITE, flags=Flag.OUT_UNSIGNED, zp=-1, qmin=0, qmax=255),
                 TFL_OK, (7, D0)),
    "u8_qmin_gt_qmax": (dict(mode=Mode.FLOAT32, flags=Flag.OUT_UNSIGNED, qmin=200, qmax=100),
                        None, (7, D0)),
    # check 3, channel 0's parameter words: multiplier in step 8, shift in step 9
    "f32_mult_inf": (dict(mode=Mode.FLOAT32), params([0], [INF_BITS], [0]), (8, P)),
    "tflite_shift_31": (dict(mode=Mode.TFLITE), params([0], [1 << 30], [31]), (9, P + 8)),
    # the shift's bounds -31 and 30 are accepted, -32 is not, nor 0x40000005 (low bits 5)
    "tflite_shift_m31_ok": (dict(mode=Mode.TFLITE), params([0], [1 << 30], [-31]), None),
    "tflite_shift_30_ok": (dict(mode=Mode.TFLITE), params([0], [1 << 30], [30]), None),
    "tflite_shift_m32": (dict(mode=Mode.TFLITE), params([0], [1 << 30], [-32]), (9, P + 8)),
    "tflite_shift_top_bit": (dict(mode=Mode.TFLITE), params([0], [1 << 30], [0x40000005]),
                             (9, P + 8)),
    # each mode ignores the other's field: a TFLITE multiplier is an integer, FLOAT32 has no
    # shift
    "tflite_mult_inf_bits": (dict(mode=Mode.TFLITE), params([0], [INF_BITS], [0]), None),
    "f32_shift_31": (dict(mode=Mode.FLOAT32), params([0], [0x3F800000], [31]), None),
    # check 1 on X(0, 0) = A + g with g = 2^31: the 32-bit address 0x80000800 >= sram_bytes
    # (M00c027: a 31-bit a_base + g wrapped it to A, in range); g = 8: row 1 of A, no fault
    "gather_x_2g": (GATHER, {GT: (1 << 31).to_bytes(4, "little") + bytes(4)},
                    (12, A + (1 << 31))),
    "gather_ok": (GATHER, {GT: (8).to_bytes(4, "little") + bytes(4)}, None),
    # check 1 on the first stream step, X(0) = a_base = 0x4000 = sram_bytes (steps 0..7, 8..9,
    # 10 W(0, 0), 11 X(0)); X(1) = a_base + a_s0 (mod 2^32) = 0x800 is in range and would be
    # step 12 <= t_s = t_f + D, but the engine makes no further step after a faulting one (§12
    # "Faults"): macs stays 0 (M086d6c: the engine not frozen, X(1) accumulated, macs 8)
    "x_fault_then_stream": (dict(J0=2, a_base=0x4000, a_s0=(0x800 - 0x4000) & 0xFFFFFFFF,
                                 mode=Mode.RAW), None, (11, 0x4000)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_engine_data_check(name):
    fields, par, fault_at = CASES[name]
    desc = good(**fields)
    mem = dict(STD_MEM)
    mem[D0] = desc.pack()
    if isinstance(par, dict):
        mem.update(par)
    elif par is not None:
        mem[P] = par
    img = [(0, image({0: issuer(D0)}, CFG.contexts))] + sorted(mem.items())
    # by hand first (the RTL's run), then the golden model's run must be the same (parity)
    got = rtl_run(CFG, [img], 2000, [])
    t0 = got["tiles"][0]
    if fault_at is not None:
        step, addr = fault_at
        t_f = 29 + step
        # §7 "Stop": every case here in steps 7..9 is check 2 or 3 (visible from t_f + 2),
        # the others (steps 11, 12) are check 1 (visible from t_f + 1)
        visible = t_f + 2 if step in (7, 8, 9) else t_f + 1
        assert got["status"] == "fault"
        assert got["cycles"] == visible + CFG.decision_latency
        assert t0["fault"] == {"context": 0, "cause": FaultCause.ENGINE_FAULT.label,
                               "pc": PC_MRUN, "addr": addr}
        # no stream step of these commands takes effect before or after its faulting step
        assert t0["counters"]["macs"] == 0
    else:
        assert got["status"] == "halted" and t0["fault"] is None
    assert_parity(CFG, got, model_run(CFG, [img], 2000, []))
