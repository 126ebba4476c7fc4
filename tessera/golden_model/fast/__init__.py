"""The fast engine of the golden model: a compiled (C, built with the ``ziglang`` wheel's
``zig cc``) cycle loop over the same numpy state as the vectorized engine.

:class:`tessera.golden_model.Array` uses it by default (``engine="fast"``); ``engine="vector"`` runs
the vectorized numpy implementation (``tessera/golden_model/array.py``), kept as a second,
independent implementation that the tests check this one against. The trace mode
(``trace=True``) always runs the vectorized engine.
"""

from .build import FastEngineUnavailable, library

__all__ = ["FastEngineUnavailable", "library", "available", "HAS_MATRIX_ENGINE",
           "CONTRACT_VERSION"]

#: The version of docs/architecture.md's timing rules the compiled loop implements: contract v2
#: (F-I-R-X-M-W, data-memory effects in M = t + 4, state changes visible from t + 5, the stop
#: at v + D). :class:`tessera.golden_model.Array` refuses ``engine="fast"`` while this differs
#: from its own ``CONTRACT_VERSION``.
CONTRACT_VERSION = 2

#: The compiled loop implements the matrix engine (§12), so :meth:`tessera.golden_model.Array.run`
#: does not fall back to the vectorized engine for programs with ``mrun``/``mwait``.
HAS_MATRIX_ENGINE = True


def available() -> bool:
    """True if the fast engine can be built and loaded here."""
    try:
        library()
    except FastEngineUnavailable:
        return False
    return True
