from tessera.spec.config import preset
from tessera.toolchain.models.digits import load_digits_split
from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
from tessera.toolchain.onnx import compare_outputs, import_model, reference_outputs

path = str(load_digits_cnn().int8_path)           # numpy-trained CNN, quantize_static QDQ
x = pixels_to_input(load_digits_split()[1][:8])   # 8 test images, float32 [8, 1, 8, 8]
prog = import_model(path, preset("small"), batch_hint=len(x))  # load, check, map, compile
run = prog.run({"x": x}, backend="model")         # or "rtl", or "both" (compared)
ref = reference_outputs(path, {"x": x})           # onnxruntime, default CPU session
cmp = compare_outputs(run.outputs, ref)           # reference_mismatches, _max_abs_diff
print(cmp["reference_mismatches"], "mismatches;", run.report["cycles_per_sample"],
      "cycles per sample;", [l["name"] for l in run.report["layers"]])
