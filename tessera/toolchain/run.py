"""``tessera exec``: load an ELF into every tile, run it on a backend, summarise, write JSON.

Spec: docs/architecture.md sections 7 (status, exit codes), 10 (run result JSON) and 11
(loader checks).
"""

from __future__ import annotations

import json
from pathlib import Path

from tessera.backends import run_program_io
from tessera.spec.config import ArrayConfig, preset as lookup_preset
from tessera.output import write_output
from tessera.spec.result import RunResult, RunStatus

from . import ToolchainError
from .elf import Image, load_elf

__all__ = ["resolve_config", "exec_program", "summarize", "DEFAULT_PRESET", "DEFAULT_MAX_CYCLES",
           "UsageError"]

DEFAULT_PRESET = "small"
DEFAULT_MAX_CYCLES = 1_000_000
#: Per-tile exit codes are printed when the array has at most this many tiles.
SUMMARY_MAX_TILES = 16


class UsageError(ToolchainError):
    """Bad command-line input (unknown preset, out-of-range number, ...): CLI exit 2."""


def resolve_config(preset: str | None = None, *, tiles=None, contexts=None, sram_bytes=None,
                   xlatency=None) -> ArrayConfig:
    """Build the target :class:`ArrayConfig` from a preset name and/or explicit fields.

    Parameters
    ----------
    preset : str, optional
        A name from :data:`tessera.spec.config.PRESETS`; default ``small`` when no field is given,
        otherwise the :class:`ArrayConfig` defaults.
    tiles, contexts, sram_bytes, xlatency : int, optional
        Override the preset's ``tiles``, ``contexts``, ``sram_bytes``, ``exchange_latency``.

    Raises
    ------
    UsageError
        Unknown preset or a field out of range (message from :class:`ArrayConfig`).
    """
    overrides = {k: v for k, v in (("tiles", tiles), ("contexts", contexts),
                                   ("sram_bytes", sram_bytes), ("exchange_latency", xlatency))
                 if v is not None}
    try:
        if preset is not None:
            base = lookup_preset(preset)
        elif overrides:
            base = ArrayConfig()
        else:
            base = lookup_preset(DEFAULT_PRESET)
        return base.replace(**overrides) if overrides else base
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from None


def exec_program(program, config: ArrayConfig, *, backend: str = "model",
                 max_cycles: int = DEFAULT_MAX_CYCLES, json_out=None, preload=(),
                 readback=()) -> tuple[RunResult, list[bytes]]:
    """Load ``program`` SPMD into every tile, run it and optionally write the JSON result.

    Parameters
    ----------
    program : str, path-like or Image
        ELF path or an already loaded :class:`tessera.toolchain.elf.Image`.
    config : ArrayConfig
    backend : str
        Backend name (:mod:`tessera.backends`).
    max_cycles : int
        Cycle limit, ≥ 1.
    json_out : str or path-like, optional
        Where to write ``RunResult.to_json()`` (architecture §10); ``-`` for stdout.
    preload, readback
        See :func:`tessera.backends.run_program_io`.

    Returns
    -------
    (RunResult, list of bytes)

    Raises
    ------
    ElfError, ProgramTooBig
        Bad ELF or image + stacks larger than the SRAM.
    UsageError
        ``max_cycles`` < 1.
    tessera.backends.BackendError
        Unknown/unavailable backend.
    """
    image = program if isinstance(program, Image) else load_elf(program)
    image.check_fits(config)
    image.check_xlatency(config)
    if not isinstance(max_cycles, int) or max_cycles < 1:
        raise UsageError(f"--max-cycles must be a positive integer, not {max_cycles!r}")
    result, data = run_program_io(backend, config, image, max_cycles, preload=preload,
                                  readback=readback)
    if json_out is not None:
        write_output(json_out, result.dumps(), error=UsageError)
    return result, data


def summarize(result: RunResult, *, max_tiles: int = SUMMARY_MAX_TILES) -> str:
    """A short human summary: status, cycles, faults, per-tile exit codes (few tiles only)."""
    cfg = result.config
    lines = [f"status: {RunStatus(result.status).value}   cycles: {result.cycles}   "
             f"array: {cfg.name} ({cfg.tiles} tile{'s' if cfg.tiles != 1 else ''} x "
             f"{cfg.contexts} contexts, "
             f"{cfg.sram_bytes // 1024} KiB, L={cfg.exchange_latency})   backend: {result.backend}"]
    retired = sum(int(t.counters["retired"]) for t in result.tiles)
    macs = sum(int(t.counters["macs"]) for t in result.tiles)
    lines.append(f"retired: {retired}   macs: {macs}")
    for t in result.tiles:
        if t.fault is not None:
            f = t.fault.to_json()
            lines.append(f"tile {t.tile}: FAULT {f['cause']} context={f['context']} "
                         f"pc={f['pc']:#x} addr={f['addr']:#x}")
    if result.not_arrived:
        lines.append(f"not arrived at the ARRAY barrier: tiles {result.not_arrived}")
    if len(result.tiles) <= max_tiles:
        for t in result.tiles:
            cells = []
            for c in t.contexts:
                if c.exit_code is not None:
                    cells.append(str(c.exit_code))
                else:
                    cells.append(c.to_json()["state"])
            label = ("exit codes" if all(c.exit_code is not None for c in t.contexts)
                     else "context states")   # running/waiting contexts (timeout) have no code
            lines.append(f"tile {t.tile}: {label} [{', '.join(cells)}]")
    return "\n".join(lines)


def load_json(path) -> dict:
    """Read a JSON run result written by :func:`exec_program` (helper for tests/tools)."""
    return json.loads(Path(path).read_text())
