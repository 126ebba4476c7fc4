"""Comparisons of a value with a constant bound, written so synthesis needs no carry chain.

yosys maps ``value >= bound`` to a carry chain (CCU2C cells on the ECP5) even when ``bound`` is a
power of two; then the comparison is just "any bit at or above log2(bound) is set", an OR tree
of a few LUTs (docs/synthesis.md). Used for the SRAM range checks of the core, the exchange
engine and the matrix engine, and the exchange engine's source check.
"""

from amaranth.hdl import Value

__all__ = ["at_least"]


def at_least(value, bound: int):
    """``value >= bound`` for an unsigned ``value`` and a constant ``bound``.

    Parameters
    ----------
    value : amaranth Value
        Unsigned, any width.
    bound : int
        Constant, >= 0.

    Returns
    -------
    amaranth Value
        1 bit. For a power-of-two ``bound`` the OR of ``value``'s bits from log2(bound) up
        (0 if ``value`` is narrower), else the comparison itself.

    Raises
    ------
    ValueError
        ``bound`` is not a non-negative int, or ``value`` is signed.
    """
    if not isinstance(bound, int) or isinstance(bound, bool) or bound < 0:
        raise ValueError(f"at_least: bound must be an int >= 0, not {bound!r}")
    value = Value.cast(value)
    if value.shape().signed:
        raise ValueError("at_least: value must be unsigned")
    if bound == 0:
        return Value.cast(1)
    if bound & (bound - 1) == 0:
        k = bound.bit_length() - 1
        return value[k:].any() if len(value) > k else Value.cast(0)
    return value >= bound
