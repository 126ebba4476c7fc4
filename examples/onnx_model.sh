.venv/bin/python -m tessera.toolchain.models.digits_cnn --out build/onnx --images 8
.venv/bin/tessera onnx build/onnx/digits_cnn_int8.onnx --inputs build/onnx/digits_test.npz \
    --out build/onnx/out.npz --reference --json build/onnx/report.json
