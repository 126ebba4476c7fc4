"""tessera.tb.coverage: Verilator coverage files read, merged and mapped to Amaranth sources.

The coverage file and the Verilog below are written by hand in the formats Verilator and
Amaranth produce (checked against a real coverage build of the 4-tile array when the module
was written), so the expected counts are known without running a simulator."""

from pathlib import Path

from tessera.tb.coverage import SourceMap, absorb, point_fields, read_dat, summarize, write_dat

PKG = Path(__file__).resolve().parents[1] / "tessera"
ALU = str(PKG / "hdl/tile/core/alu.py")
SCHED = str(PKG / "hdl/tile/core/scheduler.py")

VERILOG = f"""module \\tessera_array.tile0.core.alu (a, y);
  (* src = "{ALU}:40" *)
  input [31:0] a;
  wire [31:0] a;
  (* src = "{ALU}:41" *)
  output [31:0] y;
  reg [31:0] y;
  assign \\$1  = a & (* src = "{ALU}:55" *) 32'd3;
  always @* begin
    if (\\$1 ) begin
      y = a;
    end
  end
endmodule
module \\tessera_array.tile1.core.alu (a, y);
  (* src = "{ALU}:40" *)
  input [31:0] a;
  wire [31:0] a;
  (* src = "{ALU}:41" *)
  output [31:0] y;
  reg [31:0] y;
  assign \\$1  = a & (* src = "{ALU}:55" *) 32'd3;
  always @* begin
    if (\\$1 ) begin
      y = a;
    end
  end
endmodule
module other (q);
  (* src = "{SCHED}:7" *)
  output q;
  wire q;
endmodule
"""


def _key(vfile, line, typ, comment, hier, col=1):
    f = {"f": str(vfile), "l": str(line), "n": str(col), "t": typ, "page": f"v_{typ}/x",
         "o": comment, "h": hier}
    return "C '" + "".join(f"\x01{k}\x02{v}" for k, v in f.items()) + "'"


def test_source_map_locates_inline_declared_and_assigned(tmp_path):
    v = tmp_path / "t.v"
    v.write_text(VERILOG)
    sm = SourceMap(v)
    assert sm.locate(8) == f"{ALU}:55"      # inline attribute on the assign
    assert sm.locate(3) == f"{ALU}:40"      # a declaration line: its own attribute
    assert sm.locate(10) == f"{ALU}:41"     # `if` line: the signal assigned below it (y)
    assert sm.locate(11) == f"{ALU}:41"     # the assignment itself
    assert sm.locate(32) == f"{SCHED}:7"


def test_absorb_sums_runs_and_summarize_merges_instances(tmp_path):
    v = tmp_path / "t.v"
    v.write_text(VERILOG)
    cov = tmp_path / "cov"
    cov.mkdir()
    # tile0 reaches the `if` branch, tile1 does not; toggles of a[0] 0->1 hit on tile1 only
    run1 = {_key(v, 10, "branch", "if", "tessera_array.tile0.core.alu"): 2,
            _key(v, 24, "branch", "if", "tessera_array.tile1.core.alu"): 0,
            _key(v, 3, "toggle", "a[0]:0->1", "tessera_array.tile0.core.alu"): 0,
            _key(v, 17, "toggle", "a[0]:0->1", "tessera_array.tile1.core.alu"): 0,
            _key(v, 32, "toggle", "q:0->1", "tessera_array.other"): 0}
    run2 = dict.fromkeys(run1, 0)
    run2[_key(v, 17, "toggle", "a[0]:0->1", "tessera_array.tile1.core.alu")] = 5
    for i, pts in enumerate((run1, run2)):
        write_dat(cov / f"r{i}.dat", pts)
        merged = absorb(cov / f"r{i}.dat", cov, "array-x")
        assert not (cov / f"r{i}.dat").exists()
    total = read_dat(merged)
    assert total[_key(v, 10, "branch", "if", "tessera_array.tile0.core.alu")] == 2
    assert total[_key(v, 17, "toggle", "a[0]:0->1", "tessera_array.tile1.core.alu")] == 5
    assert point_fields(next(iter(total)))["t"] == "branch"
    out = summarize([merged], package_root=PKG)
    alu = out["tessera/hdl/tile/core/alu.py"]
    # the two instances of each point add up to one point, covered by either instance
    assert (alu.covered["branch"], alu.total["branch"]) == (1, 1)
    assert (alu.covered["toggle"], alu.total["toggle"]) == (1, 1)
    assert alu.lines[41] == [1, 1]
    sched = out["tessera/hdl/tile/core/scheduler.py"]
    assert (sched.covered["toggle"], sched.total["toggle"]) == (0, 1)
