"""The matrix engine's deeper pipeline for a larger ``WRITE_DELAY`` (tessera/hdl/tile/
matrix_engine.py: ``MAC_STAGES`` = 3 and the registered output stage ``OUT_Q``), against the
golden model built with the same constant.

The contract's ``WRITE_DELAY`` is 8 (docs/architecture.md §12), and with it the engine has a
two-stage MAC and no output stage after the requantization. The RTL derives its depth from the
constant: with ``WRITE_DELAY`` >= 1 + 3 + ``REQUANT_STAGES`` (9) the stream word is registered
before the multipliers, and with one step more (10) the TFLITE / FLOAT32 bytes are clamped and
placed one step before their write. These shapes are what the synthesis measurements of
docs/synthesis.md ("the engine's deeper pipeline") were made on, and what the contract change of
``WRITE_DELAY`` would switch on; this test keeps them correct until then.

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
    # 10 = 1 + 3 MAC stages + 5 requantization stages + 1 output stage
    (10, 1, "none", (3, 6, True)),
    (10, 3, "engine", (3, 6, True)),
    # 9: the three-stage MAC, no output stage
    (9, 2, "none", (3, 5, False)),
])
def test_deeper_pipeline_equals_the_model(write_delay, seed, fault, shape):
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
