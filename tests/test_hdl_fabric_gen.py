"""`tessera gen` / tessera.hdl.gen: single-file Verilog with top `tessera_array`, config.json, FuseSoC
core file, Verilator lint clean (with the waivers documented in tessera/hdl/gen.py; the lint
step is tessera/tb/lint.py)."""

import json
import re

import pytest

from tessera.spec.config import ArrayConfig, PRESETS
from tessera.cli import main
from tessera.hdl.gen import generate, GenError
from tessera.tb.lint import lint


def test_generate_tiny_and_lint(tmp_path):
    paths = generate(PRESETS["tiny"], tmp_path)
    lint(paths["verilog"], log_path=tmp_path / "lint.log")
    paths["lint"] = tmp_path / "lint.log"
    v = paths["verilog"].read_text()
    assert v.count("module tessera_array(") == 1
    header = v[v.index("module tessera_array("):v.index(");", v.index("module tessera_array("))]
    for port in ("clk", "rst", "s_axil_awaddr", "s_axil_wstrb", "s_axil_bresp", "s_axil_araddr",
                 "s_axil_rdata", "s_axil_rresp", "s_axil_rready", "done", "trace_valid",
                 "trace_st_data"):
        assert re.search(rf"\b{port}\b", header), port
    cfg = json.loads(paths["config"].read_text())
    assert ArrayConfig.from_dict({k: cfg[k] for k in ("tiles", "contexts", "sram_bytes",
                                                      "exchange_latency", "name")}) \
        == PRESETS["tiny"]
    assert cfg["derived"]["sync_latency"] == 2
    core = paths["core"].read_text()
    assert core.startswith("CAPI=2:") and "toplevel: tessera_array" in core
    assert "%Warning" not in paths["lint"].read_text()
    assert "%Error" not in paths["lint"].read_text()


def test_cli_gen(tmp_path, capsys):
    rc = main(["gen", "--tiles", "2", "--contexts", "6", "--sram-bytes", "16384",
               "--xlatency", "2", "-o", str(tmp_path / "out")])
    assert rc == 0
    cfg = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (cfg["tiles"], cfg["contexts"], cfg["sram_bytes"], cfg["exchange_latency"]) == \
        (2, 6, 16384, 2)
    v = (tmp_path / "out" / "tessera_array.v").read_text()
    assert "trace_valid" in v and "module tessera_array(" in v


def test_cli_gen_bad_input(tmp_path, capsys):
    assert main(["gen", "--sram-bytes", "1000", "-o", str(tmp_path)]) == 2
    assert "sram_bytes" in capsys.readouterr().err
    with pytest.raises(GenError, match="too large"):
        generate(PRESETS["gc2_like"], tmp_path)
