.venv/bin/tessera cc examples/load_data.c -o load_data.elf
.venv/bin/python -c "import numpy as np; np.array([1, 2, 3, -10], '<i4').tofile('in0.bin')"
.venv/bin/python -c "import numpy as np; np.array([25] * 4, '<i4').tofile('in1.bin')"
.venv/bin/tessera exec load_data.elf --load 0:input=in0.bin --load 1:input=in1.bin
