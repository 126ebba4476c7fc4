"""Helpers shared by the formal specs (tests/formal/spec_*.py).

Amaranth 0.5 has no ``Past``/``Rose``/``Fell``: :func:`past` keeps a register of the previous
value instead. Every spec is a test-only :class:`~amaranth.hdl.Elaboratable` that wraps the
product block unchanged and adds ``Assume``/``Assert``/``Cover`` around it; free inputs of the
proof are the ports of that wrapper (SymbiYosys leaves top-level inputs unconstrained in every
cycle).
"""

from __future__ import annotations

from amaranth.hdl import Assume, ResetSignal, Signal, Value

__all__ = ["past", "no_reset", "any_of", "all_of", "Spec"]


def past(m, value, name=None, init=0):
    """A register holding ``value`` of the previous cycle (``init`` in the first cycle)."""
    value = Value.cast(value)
    r = Signal(len(value), name=name or "past", init=init)
    m.d.sync += r.eq(value)
    return r


def no_reset(m):
    """The synchronous reset is never asserted: every register starts from its init value
    (SymbiYosys honours the init attributes in the base case) and the product's own
    start/clear inputs are the only resets the properties talk about."""
    m.d.comb += Assume(~ResetSignal())


def any_of(values):
    out = 0
    for v in values:
        out = out | v
    return out


def all_of(values):
    out = 1
    for v in values:
        out = out & v
    return out


class Spec:
    """What the runner needs to prove one property of one block in one configuration.

    Parameters
    ----------
    block : str
        Product block (``sync``, ``fabric``, ...).
    prop : str
        Property name, unique within the block.
    text : str
        One line: the contract sentence the property formalises.
    build : callable
        ``build(config, prop) -> (elaboratable, ports)``.
    prove_depth, cover_depth : callable
        ``f(config) -> int``: induction depth and cover search depth.
    configs : list
        ``(label, config)`` pairs to prove the property for.
    """

    def __init__(self, block, prop, text, build, prove_depth, cover_depth, configs):
        self.block, self.prop, self.text = block, prop, text
        self.build = build
        self.prove_depth, self.cover_depth = prove_depth, cover_depth
        self.configs = configs

    @property
    def name(self):
        return f"{self.block}.{self.prop}"
