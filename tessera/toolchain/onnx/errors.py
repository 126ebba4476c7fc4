"""Errors of the ONNX importer (docs/compiler.md, "ONNX importer").

Every error is raised before anything runs on the array, names what is wrong and where (node
name, op type, tensor, tile, bytes), and is a :class:`tessera.toolchain.ToolchainError`, so the CLI
prints one line and exits 2.
"""

from __future__ import annotations

from tessera.toolchain import ToolchainError

__all__ = ["OnnxError", "OnnxFileError", "UnsupportedError", "ModelMemoryError",
           "InputError"]


class OnnxError(ToolchainError):
    """Base class: a model or its inputs cannot be imported or run (CLI exit 2)."""

    exit_code = 2


class OnnxFileError(OnnxError):
    """The file is missing, unreadable, not ONNX, or fails the ONNX checker."""


class UnsupportedError(OnnxError):
    """An operator, attribute, data type, shape or opset the importer does not support.

    Attributes
    ----------
    node : str or None
        The ONNX node's name (or ``op_type#index`` when it has none).
    op_type : str or None
    """

    def __init__(self, message: str, node: str | None = None, op_type: str | None = None):
        super().__init__(message)
        self.node, self.op_type = node, op_type


class ModelMemoryError(OnnxError):
    """The compiled model does not fit a tile's SRAM.

    Attributes
    ----------
    tensor : str
        The model tensor (or compiler item) that does not fit.
    tile : int
    needed, free : int
        Bytes the tile would need and bytes it has.
    """

    def __init__(self, message: str, tensor: str, tile: int, needed: int, free: int):
        super().__init__(message)
        self.tensor, self.tile, self.needed, self.free = tensor, tile, needed, free


class InputError(OnnxError):
    """A run's inputs do not match the model (missing name, wrong dtype or shape)."""
