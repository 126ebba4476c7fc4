"""Lowering of ``Copy``: local copy vertices and exchange transfers (docs/compiler.md, "Copies").

Elements whose source and destination are on the same tile become ``tsr_copy`` vertices
(one per run of consecutive elements). The others become 32-bit word transfers for the
exchange scheduler (:func:`tessera.toolchain.exchange_scheduler.schedule_exchange`); a word is
sent once to every tile that needs it (multicast).

The exchange moves whole words, so for 8-bit data a cross-tile copy must keep each byte
in its lane (source and destination byte offsets equal mod 4) and must fill every data
byte of each destination word it touches (bytes past the end of an allocation are padding
and may be overwritten). Otherwise :class:`GraphError` explains which element breaks it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import GraphError
from .graph import ComputeSet, Vertex
from .tensor import Tensor

__all__ = ["CopyPlan", "plan_copy", "exchange_transfers"]


@dataclass
class _Remote:
    svar: object
    s_flat: np.ndarray
    dvar: object
    d_flat: np.ndarray


@dataclass
class CopyPlan:
    """A lowered Copy: ``local`` compute set (or None) and remote element lists."""
    name: str
    local: ComputeSet | None
    remote: list

    @property
    def has_exchange(self) -> bool:
        return any(r.s_flat.size for r in self.remote)


def _tiles_of(var, flat):
    ivi = var.interval_of(flat)
    return np.array([iv.tile for iv in var.intervals], dtype=np.int64)[ivi], ivi


def plan_copy(copy, name: str, codelet) -> CopyPlan:
    """Split a :class:`~tessera.toolchain.graph.program.Copy` into local vertices and remote elements.

    Raises
    ------
    GraphError
        A destination element is written twice, or a destination overlaps a source.
    """
    written: dict[str, list] = {}
    read: dict[str, list] = {}
    for s, d in copy.pairs:
        written.setdefault(d.variable.name, []).append(d.index.ravel())
        read.setdefault(s.variable.name, []).append(s.index.ravel())
    for vname, parts in written.items():
        w = np.concatenate(parts)
        if np.unique(w).size != w.size:
            raise GraphError(f"{name}: destination elements of {vname!r} are written more than once")
        if vname in read and np.isin(w, np.concatenate(read[vname])).any():
            raise GraphError(f"{name}: a destination of {vname!r} overlaps a source of the copy")

    local = ComputeSet(f"{name}.local")
    remote = []
    for s, d in copy.pairs:
        s_flat, d_flat = s.index.ravel(), d.index.ravel()
        st, s_ivi = _tiles_of(s.variable, s_flat)
        dt, d_ivi = _tiles_of(d.variable, d_flat)
        loc = st == dt
        if (~loc).any():
            remote.append(_Remote(s.variable, s_flat[~loc], d.variable, d_flat[~loc]))
        if loc.any():
            sl, dl = s_flat[loc], d_flat[loc]
            si, di, tl = s_ivi[loc], d_ivi[loc], st[loc]
            brk = np.flatnonzero((np.diff(sl) != 1) | (np.diff(dl) != 1)
                                 | (np.diff(si) != 0) | (np.diff(di) != 0)) + 1
            for lo, hi in zip(np.r_[0, brk], np.r_[brk, sl.size]):
                nbytes = int(hi - lo) * s.dtype.itemsize
                local.vertices.append(Vertex(codelet, int(tl[lo]), {
                    "dst": Tensor(d.variable, dl[lo:hi]),
                    "src": Tensor(s.variable, sl[lo:hi]),
                    "nbytes": nbytes}))
    return CopyPlan(name, local if local.vertices else None, remote)


def exchange_transfers(plan: CopyPlan, addr_of) -> list:
    """The word transfers of a plan's remote part, given the tensor layout.

    Parameters
    ----------
    plan : CopyPlan
    addr_of : callable
        ``addr_of(variable)`` -> int64 array of each interval's byte address.

    Returns
    -------
    list of tessera.toolchain.exchange_scheduler.Transfer

    Raises
    ------
    GraphError
        8-bit data would change byte lane, or a destination word would be only partly
        written (the rest of the word holds other data).
    """
    from tessera.toolchain.exchange_scheduler import Transfer

    cols = {k: [] for k in ("st", "sa", "dt", "da", "lanes")}
    for r in plan.remote:
        isz = r.svar.dtype.itemsize
        st, s_ivi = _tiles_of(r.svar, r.s_flat)
        dt, d_ivi = _tiles_of(r.dvar, r.d_flat)
        s_base, d_base = addr_of(r.svar), addr_of(r.dvar)
        s_start = np.array([iv.start for iv in r.svar.intervals], dtype=np.int64)
        d_start = np.array([iv.start for iv in r.dvar.intervals], dtype=np.int64)
        d_size = np.array([iv.size for iv in r.dvar.intervals], dtype=np.int64)
        sa = s_base[s_ivi] + (r.s_flat - s_start[s_ivi]) * isz
        da = d_base[d_ivi] + (r.d_flat - d_start[d_ivi]) * isz
        bad = np.flatnonzero((sa & 3) != (da & 3))
        if bad.size:
            i = bad[0]
            raise GraphError(
                f"{plan.name}: element {int(r.s_flat[i])} of {r.svar.name!r} (tile {int(st[i])}) "
                f"goes to element {int(r.d_flat[i])} of {r.dvar.name!r} (tile {int(dt[i])}) at a "
                "different byte offset within a word; cross-tile copies of 8-bit data must keep "
                "word alignment (slice at multiples of 4 elements)")
        # data bytes of the destination word (the rest is allocation padding)
        w = da & ~3
        lo = np.maximum(d_base[d_ivi], w)
        hi = np.minimum(d_base[d_ivi] + d_size[d_ivi] * isz, w + 4)
        cols["st"].append(st); cols["sa"].append(sa)
        cols["dt"].append(dt); cols["da"].append(da)
        cols["lanes"].append((hi - lo) // isz)
    if not cols["st"]:
        return []
    st, sa, dt, da, lanes = (np.concatenate(cols[k]) for k in ("st", "sa", "dt", "da", "lanes"))
    dkey = dt << 32 | (da & ~3)
    skey = st << 32 | (sa & ~3)
    order = np.lexsort((skey, dkey))
    dk, sk, ln = dkey[order], skey[order], lanes[order]
    starts = np.flatnonzero(np.r_[True, dk[1:] != dk[:-1]])
    counts = np.diff(np.r_[starts, dk.size])
    mixed = np.flatnonzero(sk[starts] != sk[starts + counts - 1])
    partial = np.flatnonzero(counts != ln[starts])
    for idx, what in ((mixed, "receives bytes from two different source words"),
                      (partial, "would be only partly written (other data shares the word)")):
        if idx.size:
            k = dk[starts[idx[0]]]
            raise GraphError(
                f"{plan.name}: destination word at byte address {int(k & 0xFFFFFFFF):#x} on tile "
                f"{int(k >> 32)} {what}; cross-tile copies of 8-bit data must move whole words "
                "(slice at multiples of 4 elements)")
    # one transfer per source word, to every destination word that needs it
    pairs = np.unique(np.stack([sk[starts], dk[starts]], axis=1), axis=0)
    out = []
    sstarts = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
    for a, b in zip(sstarts, np.r_[sstarts[1:], len(pairs)]):
        s = int(pairs[a, 0])
        dsts = [(int(k >> 32), int(k & 0xFFFFFFFF)) for k in pairs[a:b, 1]]
        out.append(Transfer(s >> 32, s & 0xFFFFFFFF, dsts))
    return out
