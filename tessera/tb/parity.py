"""RTL vs golden-model parity: final state, cycles and the retire trace.

The golden model (``tessera.golden_model.Array(config, trace=True)``) and the RTL run the same job
(:mod:`tessera.tb.cocotb_array` format). :func:`compare_results` diffs the two
``RunResult.to_json()`` documents field by field; :func:`compare_traces` walks the two
retire traces in (cycle, tile) order and reports the first divergence with disassembly
(:mod:`tessera.toolchain.disasm`) and the last entries of the diverging context.

Trace records (both sides) have the keys ``cycle, tile, context, pc, insn, rd, value,
store_addr, store_data, store_mask``. The RTL monitor's cycles are relative (it cannot know
where cycle 0 is), so RTL cycles are aligned to the model's by the constant offset of the
first record; every later record must then agree exactly (cycle-exact parity).
Normalisation before comparing: ``rd = 0`` (or None) means "no register write" and the
value is ignored; ``store_mask = 0`` (or None) means "no store" and the store address /
data are ignored; store data is compared only on the bytes the mask enables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tessera.spec.config import ArrayConfig
from tessera.spec.trace import RECORD_KEYS

__all__ = ["ParityReport", "run_model", "compare_results", "compare_traces", "check_parity",
           "normalise_record", "KEYS"]

#: Record keys compared besides ``cycle`` (:data:`tessera.spec.trace.RECORD_KEYS`).
KEYS = tuple(k for k in RECORD_KEYS if k != "cycle")
CONTEXT_LINES = 8


def _disasm(word: int, pc: int) -> str:
    try:
        from tessera.toolchain.disasm import disasm
        return disasm(word, pc)
    except Exception:  # disassembler missing or word it rejects
        return f".word {word:#010x}"


def normalise_record(r: dict) -> dict:
    """Canonical form of one trace record (see module docstring)."""
    rd = int(r.get("rd") or 0)
    mask = int(r.get("store_mask") or 0)
    out = {"cycle": int(r["cycle"]), "tile": int(r["tile"]), "context": int(r["context"]),
           "pc": int(r["pc"]) & 0xFFFFFFFF, "insn": int(r["insn"]) & 0xFFFFFFFF,
           "rd": rd, "value": (int(r.get("value") or 0) & 0xFFFFFFFF) if rd else 0,
           "store_mask": mask, "store_addr": 0, "store_data": 0}
    if mask:
        out["store_addr"] = int(r.get("store_addr") or 0) & 0xFFFFFFFF
        lanes = sum(0xFF << (8 * i) for i in range(4) if mask >> i & 1)
        out["store_data"] = int(r.get("store_data") or 0) & lanes
    return out


def _fmt(r: dict) -> str:
    s = (f"cycle {r['cycle']:>7} tile {r['tile']} ctx {r['context']} pc {r['pc']:#07x} "
         f"{r['insn']:08x}  {_disasm(r['insn'], r['pc']):<28}")
    if r["rd"]:
        s += f" x{r['rd']}={r['value']:#010x}"
    if r["store_mask"]:
        s += f" mem[{r['store_addr']:#x}]={r['store_data']:#010x}/{r['store_mask']:04b}"
    return s


@dataclass
class ParityReport:
    """Outcome of one parity check.

    Attributes
    ----------
    ok : bool
    state_diffs : list of str
        Field-level differences of the final RunResult JSON (``path: model X, rtl Y``).
    trace_divergence : str or None
        Human-readable description of the first trace divergence.
    model_records, rtl_records : int
        Trace lengths.
    """
    ok: bool
    state_diffs: list[str] = field(default_factory=list)
    trace_divergence: str | None = None
    model_records: int = 0
    rtl_records: int = 0

    def __str__(self) -> str:
        if self.ok:
            return f"parity OK ({self.model_records} retired instructions compared)"
        parts = []
        if self.state_diffs:
            parts.append("final state differs:\n  " + "\n  ".join(self.state_diffs[:40]))
            if len(self.state_diffs) > 40:
                parts.append(f"  ... {len(self.state_diffs) - 40} more")
        if self.trace_divergence:
            parts.append(self.trace_divergence)
        return "\n".join(parts)


def run_model(config: ArrayConfig, job: dict, *, trace: bool = True) -> tuple[dict, list[dict]]:
    """Run a :mod:`tessera.tb.cocotb_array` job on the golden model.

    Returns
    -------
    (dict, list of dict)
        ``RunResult.to_json()`` and the model's trace records (empty if ``trace=False``).
    """
    from tessera.golden_model import Array

    arr = Array(config, trace=trace) if trace else Array(config)
    for tile, addr, hexdata in job.get("segments", []):
        arr.write_mem(int(tile), int(addr), bytes.fromhex(hexdata))
    arr.start(entry=int(job.get("entry", 0)))
    res = arr.run(int(job["max_cycles"]))
    records = [dict(r) for r in (getattr(arr, "trace", None) or [])] if trace else []
    return res.to_json(), records


def compare_results(model: dict, rtl: dict, path: str = "") -> list[str]:
    """Field-by-field differences between two JSON documents (``path: model X, rtl Y``)."""
    diffs: list[str] = []
    if isinstance(model, dict) and isinstance(rtl, dict):
        for k in sorted(set(model) | set(rtl), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in model or k not in rtl:
                diffs.append(f"{p}: model {model.get(k, '<missing>')!r}, "
                             f"rtl {rtl.get(k, '<missing>')!r}")
            else:
                diffs += compare_results(model[k], rtl[k], p)
    elif isinstance(model, list) and isinstance(rtl, list):
        if len(model) != len(rtl):
            diffs.append(f"{path}: length model {len(model)}, rtl {len(rtl)}")
        for i, (a, b) in enumerate(zip(model, rtl)):
            diffs += compare_results(a, b, f"{path}[{i}]")
    elif model != rtl:
        fa = f"{model:#x}" if isinstance(model, int) and not isinstance(model, bool) else repr(model)
        fb = f"{rtl:#x}" if isinstance(rtl, int) and not isinstance(rtl, bool) else repr(rtl)
        diffs.append(f"{path}: model {fa}, rtl {fb}")
    return diffs


def compare_traces(model: list[dict], rtl: list[dict]) -> str | None:
    """First divergence between two retire traces, or None if they agree.

    RTL cycles are shifted by the offset of the first records (see module docstring).
    """
    m = sorted((normalise_record(r) for r in model), key=lambda r: (r["cycle"], r["tile"]))
    r = sorted((normalise_record(x) for x in rtl), key=lambda x: (x["cycle"], x["tile"]))
    off = (r[0]["cycle"] - m[0]["cycle"]) if m and r else 0
    for x in r:
        x["cycle"] -= off
    for i in range(max(len(m), len(r))):
        a = m[i] if i < len(m) else None
        b = r[i] if i < len(r) else None
        if a is not None and b is not None and a == b:
            continue
        ref = a or b
        lines = [f"trace diverges at retired instruction #{i} "
                 f"(RTL cycles shifted by {off}):"]
        lines.append("  model: " + (_fmt(a) if a else "<trace ended>"))
        lines.append("  rtl:   " + (_fmt(b) if b else "<trace ended>"))
        if a and b:
            bad = [k for k in ("cycle",) + KEYS if a[k] != b[k]]
            lines.append(f"  differing fields: {', '.join(bad)}")
        hist = [x for x in m[:i] if x["tile"] == ref["tile"] and x["context"] == ref["context"]]
        lines.append(f"  last {CONTEXT_LINES} model entries of tile {ref['tile']} "
                     f"context {ref['context']}:")
        lines += ["    " + _fmt(x) for x in hist[-CONTEXT_LINES:]] or ["    (none)"]
        return "\n".join(lines)
    return None


def check_parity(config: ArrayConfig, job: dict, rtl_job_out: dict,
                 model_out: tuple[dict, list[dict]] | None = None) -> ParityReport:
    """Compare one RTL job output (from :meth:`tessera.tb.runner.RtlModel.run`) with the model.

    Parameters
    ----------
    config : ArrayConfig
    job : dict
        The job that was run (segments, entry, max_cycles, trace).
    rtl_job_out : dict
        One element of the RTL results' ``"jobs"``.
    model_out : (dict, list), optional
        Precomputed :func:`run_model` output.

    Returns
    -------
    ParityReport
    """
    if rtl_job_out.get("error"):
        return ParityReport(False, [f"RTL job failed:\n{rtl_job_out['error']}"])
    want_trace = bool(job.get("trace"))
    mres, mtrace = model_out if model_out is not None else run_model(config, job,
                                                                     trace=want_trace)
    diffs = compare_results(mres, rtl_job_out["result"])
    div = None
    rtrace = rtl_job_out.get("trace") or []
    if want_trace:
        div = compare_traces(mtrace, rtrace)
    return ParityReport(not diffs and div is None, diffs, div, len(mtrace), len(rtrace))
