.venv/bin/tessera run matmul --m 64 --k 64 --n 32 --preset array16 --backend both
