"""Loading and checking an ONNX model (docs/compiler.md, "ONNX importer").

:func:`load_model` reads a file (or bytes, or a ``ModelProto``) with the ``onnx`` package and
checks what the importer needs before anything is mapped: that it is ONNX at all, the ONNX
checker, the opsets (default domain 10 … the installed onnx's latest, ``com.microsoft`` 1), and
that graph inputs and outputs have tensor types. Errors are :class:`~tessera.toolchain.onnx.errors.OnnxError`
subclasses with one-line messages.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import OnnxFileError, UnsupportedError

__all__ = ["load_model", "MIN_OPSET", "MS_DOMAIN", "np_dtype", "node_label", "attributes",
           "DTYPE_NAMES"]

#: Oldest default-domain opset accepted (QuantizeLinear / QLinearConv appear in opset 10).
MIN_OPSET = 10
#: Domain of onnxruntime's contrib operators.
MS_DOMAIN = "com.microsoft"

#: ONNX element types the importer can carry, by TensorProto code.
DTYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64"}


def np_dtype(elem_type: int, what: str) -> str:
    """The numpy dtype name of an ONNX element type, or UnsupportedError naming ``what``."""
    import onnx
    if elem_type in DTYPE_NAMES:
        return DTYPE_NAMES[elem_type]
    try:
        name = onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        name = str(elem_type)
    raise UnsupportedError(f"{what} has element type {name}; Tessera supports float32, uint8, "
                           "int8 and int32 tensors (int64 only for shape constants)")


def node_label(node, index: int) -> str:
    """A node's name, or ``<op_type>#<index>`` when it has none."""
    return node.name or f"{node.op_type}#{index}"


def attributes(node) -> dict:
    """The node's attributes as Python values (ints, floats, strings, lists, arrays)."""
    import onnx
    from onnx import numpy_helper
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, onnx.TensorProto):
            v = numpy_helper.to_array(v)
        elif isinstance(v, (list, tuple)):
            v = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
        out[a.name] = v
    return out


def load_model(source):
    """Read and check an ONNX model.

    Parameters
    ----------
    source : str, Path, bytes or onnx.ModelProto
        A file name, the serialized model, or a loaded model.

    Returns
    -------
    onnx.ModelProto

    Raises
    ------
    OnnxFileError
        Missing or unreadable file, not an ONNX model (says so), or the ONNX checker rejects it.
    UnsupportedError
        An opset outside the supported range (default domain ``MIN_OPSET`` … the onnx package's
        latest; ``com.microsoft`` version 1) or a domain other than these.
    """
    import onnx
    from google.protobuf.message import DecodeError
    where = "model"
    if isinstance(source, onnx.ModelProto):
        model = source
    else:
        if isinstance(source, (bytes, bytearray)):
            data = bytes(source)
        else:
            path = Path(source)
            where = str(path)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise OnnxFileError(f"{path}: no such file") from None
            except IsADirectoryError:
                raise OnnxFileError(f"{path}: is a directory, not an ONNX file") from None
            except OSError as e:
                raise OnnxFileError(f"{path}: cannot read: {e.strerror}") from None
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except (DecodeError, ValueError, RuntimeError):
            raise OnnxFileError(f"{where}: not an ONNX model (the file is not a serialized "
                                "onnx.ModelProto)") from None
    if model.ir_version == 0 or not model.HasField("graph") or not model.opset_import:
        raise OnnxFileError(f"{where}: not an ONNX model (no ir_version, graph or opset_import; "
                            "is this the right file?)")
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "invalid model"
        raise OnnxFileError(f"{where}: the ONNX checker rejects the model: {first}") from None
    latest = onnx.defs.onnx_opset_version()
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx"):
            if not MIN_OPSET <= op.version <= latest:
                raise UnsupportedError(
                    f"{where}: default-domain opset {op.version} is not supported (supported: "
                    f"{MIN_OPSET}..{latest})")
        elif op.domain == MS_DOMAIN:
            if op.version != 1:
                raise UnsupportedError(f"{where}: opset {MS_DOMAIN} version {op.version} is not "
                                       "supported (supported: 1)")
        elif op.domain != "ai.onnx.ml" or any(n.domain == op.domain for n in model.graph.node):
            raise UnsupportedError(f"{where}: operator domain {op.domain!r} is not supported "
                                   f"(supported: the default domain and {MS_DOMAIN})")
    for vi in list(model.graph.input) + list(model.graph.output):
        if vi.type.WhichOneof("value") != "tensor_type":
            raise UnsupportedError(f"{where}: graph {('input' if vi in model.graph.input else 'output')} "
                                   f"{vi.name!r} is not a tensor")
    return model


def opset_version(model) -> int:
    """The model's default-domain opset version."""
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx"):
            return int(op.version)
    return MIN_OPSET


def value_shape(vi) -> list:
    """Dims of a ValueInfoProto: ints, or None for symbolic/unknown dims."""
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]


def as_array(tensor_proto) -> np.ndarray:
    """An initializer or Constant tensor as a numpy array."""
    from onnx import numpy_helper
    return numpy_helper.to_array(tensor_proto)
