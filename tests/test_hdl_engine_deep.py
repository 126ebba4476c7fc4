"""The matrix engine's shapes for other values of ``WRITE_DELAY`` (tessera/hdl/tile/
matrix_engine.py: ``MAC_STAGES`` and the registered output stage ``OUT_Q``), against the
golden model built with the same constant.

The contract's ``WRITE_DELAY`` is 10 (docs/architecture.md §12, since 2026-12-07; 8 before),
and with it the engine has a three-stage MAC (the stream word registered before the
multipliers) and the output stage ``OUT_Q`` after the requantization (the TFLITE / FLOAT32 bytes
clamped and placed one step before their write); the rest of the suite tests that shape. The
RTL derives its depth from the constant: with ``WRITE_DELAY`` = 9 (= 1 + 3 + ``REQUANT_STAGES``)
the three-stage MAC without ``OUT_Q``, with 8 the two-stage MAC of the contract until
2026-12-07. The synthesis measurements of docs/synthesis.md compare those shapes; this test
keeps them correct, so that the constant stays a free parameter of the RTL.

Each case runs in a fresh interpreter that sets ``tessera.spec.engine.WRITE_DELAY`` before any
other module reads it, so the golden model (its compiled engine is built per set of constants)
and the RTL both follow it. It then runs the seeded random RV32IM + engine-command streams of
tests/test_hdl_engine_model.py (``tiny``: 1 tile, T = 6, P = 32) on the Amaranth simulator
and on the golden model and compares everything the host can read plus the engine's SRAM area.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The shapes of other WRITE_DELAY values are design what-ifs for docs/synthesis.md, not the
# contract's engine (which the default suite tests): ``make test-all`` runs them.
pytestmark = pytest.mark.slow

_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import tessera.spec.engine as spec_engine
spec_engine.WRITE_DELAY = int(sys.argv[2])
from tessera.hdl.tile import matrix_engine as me
from tessera.spec.config import PRESETS
from tessera.tb.randprog import engine_region, generate
from helpers.hdl_parity import compare
cfg = PRESETS["tiny"]
p = generate(cfg, int(sys.argv[3]), total=300, engine=True,
             fault=None if sys.argv[4] == "none" else sys.argv[4])
images = [[(a, d) for t, a, d in p.segments if t == i] for i in range(cfg.tiles)]
base, n = engine_region(cfg)
got = compare(cfg, images, p.max_cycles, [(base, base + n)])
print(json.dumps({"mac_stages": me.MAC_STAGES, "out_delay": me.OUT_DELAY, "out_q": me.OUT_Q,
                  "status": got["status"], "counters": got["tiles"][0]["counters"],
                  "fault": got["tiles"][0]["fault"]}))
"""


@pytest.mark.parametrize("write_delay, seed, fault, shape", [
    # 9 = 1 + 3 MAC stages + 5 requantization stages: no output stage
    (9, 2, "none", (3, 5, False)),
    # 8 = 1 + 2 MAC stages + 5 requantization stages (the contract until 2026-12-07)
    (8, 3, "engine", (2, 5, False)),
])
def test_other_write_delays_equal_the_model(write_delay, seed, fault, shape):
    tests = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tests), str(tests.parent)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    r = subprocess.run([sys.executable, "-c", _SCRIPT, str(tests), str(write_delay), str(seed),
                        fault], capture_output=True, text=True, env=env, timeout=900)
    # compare() asserts the parity itself: a mismatch is an AssertionError in the child
    assert r.returncode == 0, r.stderr[-4000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert (got["mac_stages"], got["out_delay"], got["out_q"]) == shape
    # the stream really used the engine
    assert got["counters"]["engine"] > 100 and got["counters"]["macs"] > 0, got["counters"]
    if fault == "none":
        assert got["status"] == "halted"
    else:
        assert got["status"] == "fault" and got["fault"]["cause"] == "engine_fault"
