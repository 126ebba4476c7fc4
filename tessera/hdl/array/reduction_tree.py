"""Registered binary reduction trees for the array decisions (docs/architecture.md §7 "Array
decisions", docs/rtl.md "Run control").

An array decision whose condition on the tiles' visible states first holds at cycle v acts on
every tile at v + D, D = ceil(log2 N) + 2 (:func:`tessera.spec.timing.decision_latency`): one
register leaving each tile, one register per level of a binary tree, one register entering each
tile. :func:`reduce_tree` builds the first two parts: the leaving registers and the levels up to
(not including) the root register, and returns the root register's input; the caller adds the
root register (the last tree level: it may also combine two trees or detect an edge) and the
entering registers. So no combinational path joins two tiles' signals, and every gate of the tree
is one 2-input operation between two registers: the tree's critical path does not depend on N.

Register count from a tile's signal at cycle k to the root register's output: the leaving
register (k + 1) and ceil(log2 N) − 1 levels give the root input at k + ceil(log2 N); the root
register holds it at k + ceil(log2 N) + 1 = k + D − 1; an entering register holds it at k + D.
With N = 1 there are no levels: the leaving register *is* the root register (the root input is
the tile's signal itself), which keeps the count at D(1) = 2.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, Value

__all__ = ["reduce_tree", "tree_levels"]


def tree_levels(n: int) -> int:
    """Register levels of a binary tree over ``n`` leaves, the root register included:
    ceil(log2 n) (0 for n = 1).

    Raises
    ------
    ValueError
        ``n`` is not an int ≥ 1.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"tree_levels: n must be an int >= 1, not {n!r}")
    return (n - 1).bit_length()


def reduce_tree(m: Module, leaves, op: str, *, name: str, clear: Value) -> Value:
    """Leaving registers and tree levels over ``leaves``; returns the root register's input.

    Parameters
    ----------
    m : Module
        Module receiving the registers (domain ``sync``).
    leaves : sequence of Value
        One 1-bit value per tile (N ≥ 1), each a signal of that tile in cycle k.
    op : {"and", "or"}
        The reduction.
    name : str
        Prefix of the register names (``{name}_leave{i}``, ``{name}_l{level}_{j}``).
    clear : Value
        Synchronous clear of every register (to 0).

    Returns
    -------
    Value
        With N = 1: ``leaves[0]`` (the caller's root register is the leaving register). With
        N ≥ 2: the reduction, over the N leaves' values of cycle k, available in cycle
        k + ceil(log2 N) as a 2-input gate between two registers of the last level.

    Raises
    ------
    ValueError
        ``leaves`` is empty or ``op`` is not "and" / "or".
    """
    leaves = list(leaves)
    if not leaves:
        raise ValueError(f"reduce_tree {name}: no leaves")
    if op not in ("and", "or"):
        raise ValueError(f"reduce_tree {name}: op must be 'and' or 'or', not {op!r}")
    def fn(values):
        v = Cat(*values)
        return v.all() if op == "and" else v.any()

    if len(leaves) == 1:
        return leaves[0]

    def register(value, rname):
        r = Signal(name=rname)
        with m.If(clear):
            m.d.sync += r.eq(0)
        with m.Else():
            m.d.sync += r.eq(value)
        return r

    level = [register(v, f"{name}_leave{i}") for i, v in enumerate(leaves)]
    depth = 1
    while len(level) > 2:
        level = [register(fn(level[j:j + 2]), f"{name}_l{depth}_{j // 2}")
                 for j in range(0, len(level), 2)]
        depth += 1
    return fn(level)
