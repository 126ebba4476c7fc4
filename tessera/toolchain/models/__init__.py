"""Reference networks for Tessera (numpy): trained in float, quantized to int8 with the
golden-model kernels (``tessera.golden_model.kernels``). ``digits``: the scikit-learn digits MLP."""

from .digits import (
    DigitsConfig, FloatMLP, QuantizedLayer, QuantizedMLP, load_digits_model, load_digits_split,
    load_or_train, quantize_mlp, train_float,
)

__all__ = [
    "DigitsConfig", "FloatMLP", "QuantizedLayer", "QuantizedMLP", "load_digits_model",
    "load_digits_split", "load_or_train", "quantize_mlp", "train_float",
]
