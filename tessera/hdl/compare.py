"""Comparisons of a value with constant bounds, written so synthesis needs no long carry chain.

yosys maps ``value >= bound`` to a carry chain (CCU2C cells on the ECP5) even when ``bound`` is a
power of two; then the comparison is just "any bit at or above log2(bound) is set", an OR tree
of a few LUTs (docs/synthesis.md). Used for the SRAM range checks of the core, the exchange
engine and the matrix engine, and the exchange engine's source check; :func:`in_signed_range`
for the matrix engine's data checks of a word in the cycle it arrives from the SRAM.
"""

from amaranth.hdl import Value

__all__ = ["at_least", "in_signed_range"]


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


def _signed_width(x: int) -> int:
    """Bits of the narrowest two's-complement type that holds ``x``."""
    return (x if x >= 0 else ~x).bit_length() + 1


def in_signed_range(value, lo: int, hi: int):
    """``lo <= value <= hi`` for a signed ``value`` and constant bounds.

    With n the width of the narrowest signed type holding ``lo`` and ``hi``, ``value`` is in
    range iff its bits from n − 1 up are all equal (it fits in n bits: an AND and an OR tree)
    and its low n bits, as a signed n-bit value, are within the bounds: a carry chain of n
    bits instead of ``len(value)`` (none where a bound is the n-bit type's own limit).

    Parameters
    ----------
    value : amaranth Value
        Signed, any width.
    lo, hi : int
        Constants, ``lo <= hi``.

    Returns
    -------
    amaranth Value
        1 bit.

    Raises
    ------
    ValueError
        ``lo`` or ``hi`` is not an int, ``lo > hi``, or ``value`` is unsigned.
    """
    for name, b in (("lo", lo), ("hi", hi)):
        if not isinstance(b, int) or isinstance(b, bool):
            raise ValueError(f"in_signed_range: {name} must be an int, not {b!r}")
    if lo > hi:
        raise ValueError(f"in_signed_range: lo must be <= hi, not {lo} > {hi}")
    value = Value.cast(value)
    if not value.shape().signed:
        raise ValueError("in_signed_range: value must be signed")
    n = max(_signed_width(lo), _signed_width(hi))
    if len(value) <= n:
        return (value >= lo) & (value <= hi)
    top = value[n - 1:]
    fits = top.all() | ~top.any()
    low = value[:n].as_signed()
    terms = [fits]
    if lo > -(1 << (n - 1)):
        terms.append(low >= lo)
    if hi < (1 << (n - 1)) - 1:
        terms.append(low <= hi)
    out = terms[0]
    for t in terms[1:]:
        out = out & t
    return out
