"""Matrix-engine support of the kernel library (docs/compiler.md, "Matrix engine";
docs/architecture.md §12).

Kernels describe their work as engine commands whose address fields name graph tensors;
:func:`add_engine_vertex` turns them into a descriptor table (a late constant of the graph:
the bytes are packed by :meth:`tessera.spec.engine.Descriptor.pack` at compile time, once
every tensor has its address) on the tile and one ``tsk_engine`` vertex
(``tessera/toolchain/codelets/engine.c``: ``mrun`` per descriptor from one context, then
``mwait``). Operands the engine reads or writes must be 8-byte aligned
(:func:`require_align`).
"""

from __future__ import annotations

import numpy as np

from tessera.spec.engine import DESC_BYTES, PARAM_BYTES, ChannelParams, Descriptor, Flag, Mode
from tessera.toolchain.graph.graph import ComputeSet, Graph
from tessera.toolchain.graph.tensor import Tensor, Variable

from ._common import KernelError, codelet

__all__ = ["use_engine", "require_align", "Command", "add_engine_vertex", "issue_plan",
           "EXTRA_CONTEXT_CYCLES", "param_table",
           "float32_param_table", "output_rule", "ADDRESS_FIELDS", "engine_steps"]

#: Descriptor fields that hold byte addresses (given as (tensor, byte offset) in a Command;
#: ``ak_s1`` is one with ``K_GATHER``: the gather table's address).
ADDRESS_FIELDS = ("a_base", "w_base", "c_base", "p_base", "ak_s1")


def use_engine(graph: Graph, engine=None) -> bool:
    """Whether a kernel should use the matrix engine: ``engine`` if given (True needs
    ``engine_macs > 0``), else ``graph.config.engine_macs > 0``."""
    has = graph.config.engine_macs > 0
    if engine is None:
        return has
    if engine and not has:
        raise KernelError("engine=True but the array has no matrix engine (engine_macs = 0)")
    return bool(engine)


def require_align(var, align: int = 8) -> None:
    """Raise the address alignment of ``var``'s intervals (a Variable or a view of one)."""
    v = var.variable if isinstance(var, Tensor) else var
    if not isinstance(v, Variable):
        raise KernelError(f"require_align: not a graph variable: {var!r}")
    v.align = max(getattr(v, "align", 4), align)


class Command:
    """One engine command: :class:`~tessera.spec.engine.Descriptor` fields, with the address
    fields (``a_base``, ``w_base``, ``c_base``, ``p_base``) given as ``(Tensor, byte offset)``
    pairs resolved at compile time."""

    def __init__(self, **fields):
        self.fields = fields

    def descriptor(self, addr) -> Descriptor:
        f = dict(self.fields)
        for k in ADDRESS_FIELDS:
            if k in f and isinstance(f[k], tuple):
                t, off = f[k]
                f[k] = addr(t) + int(off)
        return Descriptor(**f)

    def steps(self) -> int:
        """Engine steps of the command (:func:`tessera.spec.engine.command_steps`)."""
        from tessera.spec.engine import command_steps
        return command_steps(Descriptor(**{k: v for k, v in self.fields.items()
                                           if k not in ADDRESS_FIELDS}))


def engine_steps(commands) -> int:
    """Total engine steps of a command list."""
    return sum(c.steps() for c in commands)


def param_table(bias, multiplier=None, shift=None, channels: int | None = None) -> np.ndarray:
    """Channel parameter records as int32 ``[C, 4]`` (bias, multiplier, shift, 0) — 16 bytes
    per channel as §12 wants; scalars broadcast to ``channels``."""
    b = np.asarray(bias, dtype=np.int64)
    n = channels if channels is not None else b.shape[0]
    cols = [np.broadcast_to(np.asarray(x if x is not None else 0, dtype=np.int64), (n,))
            for x in (bias, multiplier, shift)]
    out = np.zeros((n, PARAM_BYTES // 4), dtype=np.int64)
    for i, c in enumerate(cols):
        out[:, i] = c
    if out.min() < -2**31 or out.max() >= 2**31:
        raise KernelError("engine parameter table: a value does not fit int32")
    return out.astype(np.int32)


def float32_param_table(bias, multiplier, channels: int, where: str = "engine") -> np.ndarray:
    """``FLOAT32``-mode channel parameter records (architecture §12) as int32 ``[C, 4]``.

    Parameters
    ----------
    bias : None, int or array_like [C] of int32
        Added to the accumulators (32-bit wrap), at scale ``x_scale · w_scale``.
    multiplier : float32 scalar or array_like [C]
        onnxruntime's ``M = fl32(fl32(x_scale · w_scale) / y_scale)`` per tensor or per output
        channel (:func:`tessera.golden_model.kernels.float32_multiplier`); must be float32
        values (a float64 is refused unless it is exactly a float32 value) and finite.
    channels : int
        C.

    Returns
    -------
    numpy.ndarray of int32 [C, 4]
        ``(bias, bits(M), 0, 0)`` per channel; ``bits`` is the binary32 bit pattern.

    Raises
    ------
    KernelError
        A multiplier that is not a finite float32 value, a bias outside int32, or a length
        other than 1 or ``channels``; the message names ``where`` and the value.
    """
    m = np.asarray(multiplier)
    b = np.asarray(0 if bias is None else bias)
    for nm, v in (("multiplier", m), ("bias", b)):
        if v.ndim > 1 or (v.ndim == 1 and v.shape[0] not in (1, channels)):
            raise KernelError(f"{where}: {nm} must be a scalar or have {channels} values, "
                              f"got shape {v.shape}")
    m = np.broadcast_to(m.reshape(-1) if m.ndim else m, (channels,))
    b = np.broadcast_to(b.reshape(-1) if b.ndim else b, (channels,))
    rows = []
    for i in range(channels):
        try:
            rec = ChannelParams.float32(int(b[i]), m[i])
            rows.append((rec.bias, rec.multiplier, 0, 0))
        except (ValueError, TypeError, OverflowError) as e:
            raise KernelError(f"{where}: channel {i}: {e}") from None
        if not -2**31 <= int(b[i]) < 2**31:
            raise KernelError(f"{where}: channel {i}: bias {int(b[i])} does not fit int32")
    return np.array(rows, dtype=np.int64).astype(np.int32).reshape(channels, 4)


def output_rule(requant, bias, channels: int, where: str = "engine"):
    """Parameter table and descriptor fields of an engine kernel's byte-output rule.

    Parameters
    ----------
    requant : dict
        Either the TFLite rule (``TFLITE`` mode, architecture §11 rule 1)
        ``{"multiplier": int32, "shift": int, "zero_point": int, "relu": bool}`` (per tensor or
        per channel), or the ONNX float32 rule (``FLOAT32`` mode, §11 rule 2, onnxruntime's
        QLinearConv / QLinearMatMul) ``{"rule": "float32", "multiplier": float32 M,
        "zero_point": int, "dtype": "int8" | "uint8", "relu": bool}`` (``dtype`` default int8).
        ``relu`` clamps below at the zero point (``qmin = zp``).
    bias : None, int or array_like [C] of int32
        The accumulators' start (the kernel's folded bias).
    channels : int
        C.

    Returns
    -------
    (numpy.ndarray, dict, str)
        int32 ``[C, 4]`` parameter records; descriptor fields ``mode``, ``flags``, ``zp``,
        ``qmin``, ``qmax``; the output dtype (``"int8"`` or ``"uint8"``).

    Raises
    ------
    KernelError
        An unknown ``rule`` or ``dtype``, a zero point outside the output type, bad values.
    """
    from .requantize import requant_params
    rule = requant.get("rule", "tflite")
    zp = int(requant["zero_point"])
    if rule == "tflite":
        dtype, mode, flags = "int8", Mode.TFLITE, 0
        t = np.broadcast_to(requant_params(requant["multiplier"], requant["shift"], bias,
                                           channels, where), (channels, 3))
        table = param_table(t[:, 0], t[:, 1], t[:, 2])
    elif rule == "float32":
        dtype = requant.get("dtype", "int8")
        if dtype not in ("int8", "uint8"):
            raise KernelError(f"{where}: requant dtype must be 'int8' or 'uint8', not {dtype!r}")
        mode, flags = Mode.FLOAT32, (Flag.OUT_UNSIGNED if dtype == "uint8" else 0)
        table = float32_param_table(bias, requant["multiplier"], channels, where)
    else:
        raise KernelError(f"{where}: requant rule must be 'tflite' or 'float32', not {rule!r}")
    lo, hi = (0, 255) if dtype == "uint8" else (-128, 127)
    if not lo <= zp <= hi:
        raise KernelError(f"{where}: requant zero_point {zp} is outside {dtype} ({lo}..{hi})")
    return table, dict(mode=mode, flags=int(flags), zp=zp,
                       qmin=zp if requant.get("relu") else lo, qmax=hi), dtype


def _engine_codelet(graph: Graph):
    return codelet(graph, "tsk_engine", "engine.c", (("desc", "in", "uint8"),
                                                      ("count", "scalar")), single=True)


#: Estimated engine cycles a second issuing context costs (§12 "Engine cycles": the loads and
#: the store of its vertex dispatch — record, codelet, current entry, part, nparts, the
#: codelet's two fields — while the first command runs); used by :func:`issue_plan`.
EXTRA_CONTEXT_CYCLES = 7


def issue_plan(steps, contexts: int, sets=None):
    """Which context issues each of a tile's independent engine commands, so that each is
    accepted in the first cycle after the previous one ends.

    Context c issues in the cycles t ≡ c (mod T) (§4), so its ``mrun`` has its M cycle, and
    an accept, only in cycles ≡ c + 4; a command of s steps accepted at x leaves the engine
    idle from x + s + 1 (§12), and the next command is accepted in the first such cycle of a
    context that still has one. With one issuing context the accept waits up to T − 1
    cycles; with contexts T/2 apart a 128-step command (s + 1 ≡ 3 mod 6) is followed at once.
    The plan simulates that rule for each candidate set of contexts ({0}, {0, T/2},
    {0, T/3, 2T/3}, all T; context 0 always issues the first command, the runtime's engine
    start) with no load or store taking an engine cycle, adds
    :data:`EXTRA_CONTEXT_CYCLES` per extra context, and keeps the cheapest (the first on a
    tie, so {0} unless another set saves cycles).

    Parameters
    ----------
    steps : sequence of int
        §12 step counts of the commands in issue order (``Command.steps()``).
    contexts : int
        T.
    sets : None or sequence of sequences of int
        Candidate context sets (each containing 0); None: the four above.

    Returns
    -------
    (list of int, int)
        The issuing context of each command and the simulated cycles from the first accept
        to the end of the last command (without the extra-context estimate).
    """
    T = int(contexts)
    if sets is None:
        sets = [(0,)]
        if T % 2 == 0:
            sets.append((0, T // 2))
        if T % 3 == 0:
            sets.append((0, T // 3, 2 * T // 3))
        sets.append(tuple(range(T)))
    best = None
    for S in sets:
        S = set(S)
        x, owner = 4, [0]               # context 0's M cycles are ≡ 4 (mod T)
        for s_prev in steps[:-1]:
            y = x + s_prev + 1
            while (y - 4) % T not in S:
                y += 1
            owner.append((y - 4) % T)
            x = y
        end = x + (steps[-1] if steps else 0) - 4
        cost = end + EXTRA_CONTEXT_CYCLES * (len(set(owner)) - 1)
        if best is None or cost < best[0]:
            best = (cost, owner, end)
    return best[1], best[2]


def add_engine_vertex(graph: Graph, cs: ComputeSet, tile: int, commands, name: str,
                      independent: bool = False):
    """Put the descriptor table of ``commands`` on ``tile`` (constant ``<name>``) and add
    ``tsk_engine`` vertices running it to ``cs``. Returns the table variable.

    The first engine vertex of ``cs`` on a tile hands its first descriptor to the runtime
    (``cs.engine_start[tile]``: context 0 issues its ``mrun`` right after reading its
    worklist, before any vertex is dispatched; docs/compiler.md, "Matrix engine") and runs
    the others (``desc`` = the table from the second descriptor on, ``count`` = n − 1), then
    ``mwait``. The vertex is one part (``single``: the other contexts have no entry).

    With ``independent`` (no command reads what another writes, and no two write the same
    bytes, so their order is free) the commands may be issued from several contexts
    (:func:`issue_plan`): the table is then grouped by issuing context (context 0's first,
    starting with the engine start) and each group is one vertex on its context
    (``Vertex.context``), so the engine takes the next command in the first cycle after one
    ends instead of waiting for context 0's next issue slot. Every group's vertex ends with
    ``mwait``.

    Raises
    ------
    KernelError
        No commands, or the array has no engine.
    """
    commands = list(commands)
    if not commands:
        raise KernelError(f"{name}: no engine commands")
    if graph.config.engine_macs <= 0:
        raise KernelError(f"{name}: the array has no matrix engine (engine_macs = 0)")
    groups = None
    if independent and tile not in cs.engine_start and len(commands) > 2:
        owner, _ = issue_plan([c.steps() for c in commands], graph.config.contexts)
        if len(set(owner)) > 1:
            groups = {}
            for c, o in zip(commands, owner):
                groups.setdefault(o, []).append(c)
            commands = [c for o in sorted(groups) for c in groups[o]]

    def build(addr):
        return b"".join(c.descriptor(addr).pack() for c in commands)

    table = graph.add_late_constant(name, DESC_BYTES * len(commands), tile, build, align=8)
    table.engine_commands = commands
    n = len(commands)
    if groups is not None:
        cs.engine_start[tile] = table[:DESC_BYTES]
        pos = 0
        for o in sorted(groups):
            k = len(groups[o])
            lo = pos + (1 if o == 0 else 0)
            desc, count = (table[DESC_BYTES * lo:DESC_BYTES * (pos + k)], pos + k - lo) \
                if pos + k > lo else (table, 0)
            v = graph.add_vertex(cs, _engine_codelet(graph), tile=tile, desc=desc, count=count)
            v.context = o
            pos += k
        return table
    if tile not in cs.engine_start:
        cs.engine_start[tile] = table[:DESC_BYTES]
        desc, count = (table[DESC_BYTES:], n - 1) if n > 1 else (table, 0)
    else:
        desc, count = table, n
    graph.add_vertex(cs, _engine_codelet(graph), tile=tile, desc=desc, count=count)
    return table


def matmul_commands(*, a, a_off: int, rows: int, k: int, w, w_off: int, n0: int, cols: int,
                    lanes: int, c, c_off: int, c_row: int, c_elem: int, p, p_off: int,
                    mode: int, zp: int = 0, qmin: int = -128, qmax: int = 127,
                    flags: int = 0, max_j: int = 256) -> list:
    """Commands of ``out[r, n0:n0+cols] = rule(init + A[r] · Wt[n])`` for ``rows`` rows.

    ``a`` + ``a_off``: row 0 of A (rows ``k`` bytes apart, K contiguous); ``w`` + ``w_off``:
    Wᵀ row ``n0`` (``k`` bytes per output channel); ``c`` + ``c_off``: output of row 0,
    channel ``n0`` (rows ``c_row`` bytes apart, ``c_elem`` bytes per channel: 4 RAW, 1
    TFLITE); ``p`` + ``p_off``: parameter record of channel ``n0``. Rows in groups of
    ``max_j`` (≤ ACC_DEPTH), channels in groups of ``lanes``.
    """
    out = []
    for r0 in range(0, rows, max_j):
        nr = min(max_j, rows - r0)
        for m0 in range(0, cols, lanes):
            nc = min(lanes, cols - m0)
            out.append(Command(
                a_base=(a, a_off + r0 * k), a_s0=k, w_base=(w, w_off + m0 * k), w_sm=k,
                c_base=(c, c_off + r0 * c_row + m0 * c_elem), c_s0=c_row,
                p_base=(p, p_off + PARAM_BYTES * m0), J0=nr, K0=k // 8, C=nc, mode=mode,
                flags=flags, zp=zp, qmin=qmin, qmax=qmax))
    return out
