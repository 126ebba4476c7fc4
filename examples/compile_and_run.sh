.venv/bin/tessera cc examples/prog.c -I examples/include -o prog.elf    # C and/or .S; -O2 by default
.venv/bin/tessera cc examples/hello.S -o bare.elf --no-crt              # bare program with its own _start
.venv/bin/tessera cc examples/prog.c -I examples/include -o prog16.elf -Os -DN=16
.venv/bin/tessera exec prog.elf                    # small preset: 4 tiles x 6 contexts, 64 KiB
.venv/bin/tessera exec prog.elf --preset array16 --max-cycles 200000 --json result.json
.venv/bin/tessera exec prog16.elf --tiles 8 --contexts 8 --sram-bytes 32768 --xlatency 5
.venv/bin/tessera exec bare.elf --preset tiny --trace trace.jsonl   # one JSON line per instruction
.venv/bin/tessera objdump -S prog.elf | head -40   # disassembly with symbols and source lines
.venv/bin/tessera demo --program vecsum --preset array16
