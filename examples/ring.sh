.venv/bin/tessera cc examples/ring.c -o ring.elf --xlatency 5
.venv/bin/tessera exec ring.elf --xlatency 5       # tile t receives tile t-1's word
