"""Tessera golden model: a vectorized numpy simulator, bit- and cycle-exact to
docs/architecture.md. Entry point: :class:`tessera.golden_model.Array`."""

from .array import Array

__all__ = ["Array"]
