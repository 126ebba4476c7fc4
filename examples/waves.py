from tessera.spec.config import preset
from tessera.toolchain.cc import compile_program
from tessera.toolchain.elf import load_elf
from tessera.tb.backend import last_run_info, run_on_rtl

compile_program(["examples/prog.c"], "prog.elf", include_dirs=["examples/include"])
result, _ = run_on_rtl(preset("small"), load_elf("prog.elf"), max_cycles=1_000_000, waves="vcd")
print(last_run_info["waves"])                      # the dump path
