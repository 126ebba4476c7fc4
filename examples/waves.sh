.venv/bin/tessera cc examples/prog.c -I examples/include -o prog.elf
.venv/bin/tessera exec prog.elf --backend rtl --waves vcd
