"""``tessera.hdl.gen.register_reset``: the testbench builds' registered reset.

The expected Verilog is written by hand from the function's docstring: every use of ``rst``
in the top module's body (instance connections, processes) reads ``tb_rst_q``, a register
that samples ``rst`` at each rising edge of ``clk``; the port declarations, the ports and
every other module are unchanged.
"""

import re

import pytest

from tessera.hdl.gen import REGISTERED_RESET, convert, register_reset
from tessera.spec.config import ArrayConfig

TOP_IN = r"""module tessera_array(clk, rst, a, y);
  input clk;
  wire clk;
  input rst;
  wire rst;
  input a;
  wire a;
  output y;
  reg y = 1'h0;
  reg \$1 ;
  wire \rst$7 ;
  always @(posedge clk)
    y <= \$1 ;
  always @* begin
    \$1  = a;
    if (rst) begin
      \$1  = 1'h0;
    end
  end
  \tessera_array.sub  sub (
    .clk(clk),
    .rst(rst),
    .rst_n(\rst$7 )
  );
endmodule
"""

SUB = r"""module \tessera_array.sub (clk, rst, rst_n);
  input clk;
  wire clk;
  input rst;
  wire rst;
  output rst_n;
  wire rst_n;
  assign rst_n = ~rst;
endmodule
"""

# by hand: the register after the two rst declarations; `if (rst)` and `.rst(rst)` read it;
# the pin names (.rst, .rst_n), the escaped name \rst$7 and the submodule are untouched
TOP_OUT = r"""module tessera_array(clk, rst, a, y);
  input clk;
  wire clk;
  input rst;
  wire rst;
  reg tb_rst_q = 1'h1;
  always @(posedge clk) tb_rst_q <= rst;
  input a;
  wire a;
  output y;
  reg y = 1'h0;
  reg \$1 ;
  wire \rst$7 ;
  always @(posedge clk)
    y <= \$1 ;
  always @* begin
    \$1  = a;
    if (tb_rst_q) begin
      \$1  = 1'h0;
    end
  end
  \tessera_array.sub  sub (
    .clk(clk),
    .rst(tb_rst_q),
    .rst_n(\rst$7 )
  );
endmodule
"""


def test_top_reads_the_registered_reset_and_nothing_else_changes():
    assert REGISTERED_RESET == "tb_rst_q"
    assert register_reset(SUB + TOP_IN) == SUB + TOP_OUT


def test_design_without_reset_is_unchanged():
    text = "module tessera_array(clk, a);\n  input clk;\n  wire clk;\n  input a;\n  wire a;\nendmodule\n"
    assert register_reset(text) == text


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="no module 'other'"):
        register_reset(TOP_IN, "other")
    no_clk = TOP_IN.replace("  input clk;\n", "")
    with pytest.raises(ValueError, match="rst input but no clk input"):
        register_reset(no_clk)
    taken = TOP_IN.replace("reg y = 1'h0;", "reg y = 1'h0;\n  wire tb_rst_q;")
    with pytest.raises(ValueError, match="already uses the name 'tb_rst_q'"):
        register_reset(taken)


def test_array_top_has_no_combinational_path_from_rst():
    """On the real 1-tile array: after the register, nothing in the top module reads the pin."""
    from tessera.hdl.array import Array
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=16 * 1024)
    text = convert(Array(cfg), dedupe=True, zero_memory_init=False, registered_reset=True)
    top = text[text.index("module tessera_array("):]
    top = top[:top.index("endmodule")]
    body = top.split("  input rst;\n  wire rst;\n", 1)[1]
    uses = re.findall(r"(?<![\w.\\$])rst(?![\w$])", body)
    assert uses == ["rst"]                       # only `tb_rst_q <= rst`
    assert "always @(posedge clk) tb_rst_q <= rst;" in body
    assert len(re.findall(r"\.rst\(tb_rst_q\)", body)) >= 3   # tile, host, stop/sync controllers
