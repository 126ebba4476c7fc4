from tessera.spec.config import preset
from tessera.toolchain.cc import compile_program
from tessera.toolchain.elf import load_elf
import tessera.golden_model

compile_program(["examples/prog.c"], "prog.elf", include_dirs=["examples/include"])
arr = tessera.golden_model.Array(preset("small"))          # 4 tiles x 6 contexts, cycle-exact
img = load_elf("prog.elf")
for s in img.segments:
    arr.write_mem(None, s.addr, bytes(s.data))       # None = every tile (SPMD)
arr.start(img.entry)
result = arr.run(max_cycles=1_000_000)             # tessera.spec.result.RunResult
print(result.status, result.cycles, result.tiles[0].counters)
print([c.exit_code for c in result.tiles[1].contexts])   # sum_squares(8 + c, 8), c = 0..5
print(arr.read_mem(0, 0x100, 16))                  # tile 0 SRAM after the run
