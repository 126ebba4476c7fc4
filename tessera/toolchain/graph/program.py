"""Programs: what runs, in which order (docs/compiler.md, "Programs").

``Sequence(p, q, ...)`` runs its parts in order; ``Execute(cs)`` runs a compute set;
``Copy(src, dst)`` copies tensor elements (an exchange phase across tiles, a local copy
vertex within a tile); ``Repeat(n, p)`` runs ``p`` n times.
"""

from __future__ import annotations

from .errors import GraphError
from .graph import ComputeSet
from .tensor import Tensor, Variable

__all__ = ["Program", "Sequence", "Execute", "Copy", "Repeat"]


class Program:
    """Base class of programs."""


class Sequence(Program):
    """Run ``programs`` one after the other."""

    def __init__(self, *programs):
        if len(programs) == 1 and isinstance(programs[0], (list, tuple)):
            programs = tuple(programs[0])
        for i, p in enumerate(programs):
            if not isinstance(p, Program):
                raise GraphError(f"Sequence: item {i} is not a Program: {p!r}")
        self.programs = list(programs)

    def add(self, program: "Program") -> "Sequence":
        if not isinstance(program, Program):
            raise GraphError(f"Sequence.add: not a Program: {program!r}")
        self.programs.append(program)
        return self


class Execute(Program):
    """Run every vertex of ``compute_set`` (one compute phase on every tile)."""

    def __init__(self, compute_set: ComputeSet):
        if not isinstance(compute_set, ComputeSet):
            raise GraphError(f"Execute needs a ComputeSet, not {compute_set!r}")
        self.compute_set = compute_set


def _as_tensor(t, what):
    if isinstance(t, Variable):
        return t.tensor()
    if not isinstance(t, Tensor):
        raise GraphError(f"Copy: {what} must be a Tensor or Variable, not {t!r}")
    return t


class Copy(Program):
    """Copy ``src`` to ``dst`` element by element (same shape and dtype).

    ``src`` and ``dst`` may also be equal-length lists of tensors: all pairs are copied
    in one exchange phase (e.g. a broadcast to per-tile copies). Destinations must not
    overlap each other or any source.

    Raises
    ------
    GraphError
        Shape or dtype mismatch, or overlapping destinations.
    """

    def __init__(self, src, dst):
        srcs = list(src) if isinstance(src, (list, tuple)) else [src]
        dsts = list(dst) if isinstance(dst, (list, tuple)) else [dst]
        if len(srcs) != len(dsts) or not srcs:
            raise GraphError(f"Copy: {len(srcs)} sources but {len(dsts)} destinations")
        self.pairs = []
        for i, (s, d) in enumerate(zip(srcs, dsts)):
            s, d = _as_tensor(s, f"source {i}"), _as_tensor(d, f"destination {i}")
            if s.shape != d.shape:
                raise GraphError(f"Copy: source {s.variable.name!r} has shape {s.shape} but "
                                 f"destination {d.variable.name!r} has shape {d.shape}")
            if s.dtype != d.dtype:
                raise GraphError(f"Copy: source {s.variable.name!r} is {s.dtype.name} but "
                                 f"destination {d.variable.name!r} is {d.dtype.name}")
            self.pairs.append((s, d))


class Repeat(Program):
    """Run ``program`` ``count`` times (a loop in the control table, not unrolled)."""

    def __init__(self, count: int, program: Program):
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count < 2**32:
            raise GraphError(f"Repeat: count must be an int in 0..2^32-1, not {count!r}")
        if not isinstance(program, Program):
            raise GraphError(f"Repeat: body is not a Program: {program!r}")
        self.count, self.program = count, program
