.venv/bin/tessera run matmul --m 64 --k 64 --n 32 --preset array16
.venv/bin/tessera run block_sparse_matmul --sparsity 0.75 --json out.json --profile build/mm
