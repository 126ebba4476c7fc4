"""Bring your own model: the ONNX int8 importer (docs/compiler.md, "ONNX importer").

Load an ONNX model (QDQ as written by ``onnxruntime.quantization.quantize_static``, QOperator,
or integer operators), check it, map it onto a Tessera array with the graph compiler, compile
once and run many times::

    from tessera.spec.config import preset
    from tessera.toolchain.onnx import import_model, reference_outputs

    prog = import_model("model.onnx", preset("small"))
    run = prog.run({"input": x}, backend="model")        # RunOutput(outputs, report, results)
    ref = reference_outputs("model.onnx", {"input": x})  # onnxruntime, default CPU session

Results equal onnxruntime's CPU provider (default session options) bit for bit: the int32
accumulations are exact and the float32 requantization, QuantizeLinear and DequantizeLinear
are emulated exactly with integer instructions (docs/architecture.md §11).
"""

from .convert import SUPPORTED_OPS, convert
from .errors import (InputError, ModelMemoryError, OnnxError, OnnxFileError,
                     UnsupportedError)
from .model import load_model
from .program import OnnxProgram, RunOutput, import_model
from .reference import compare_outputs, reference_outputs

__all__ = ["import_model", "OnnxProgram", "RunOutput", "load_model", "convert",
           "reference_outputs", "compare_outputs", "SUPPORTED_OPS", "OnnxError",
           "OnnxFileError", "UnsupportedError", "ModelMemoryError", "InputError"]
