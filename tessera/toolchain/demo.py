"""``tessera demo``: an SPMD int8 vector sum on the array, checked against numpy.

The C program is ``tessera/toolchain/programs/vecsum.c`` (see its header comment): each tile sums its slice
with ``dot4``, the contexts of a tile combine through ``sync TILE``, and the tile sums are
all-gathered with ``sync ARRAY`` + an exchange program, so every tile ends with the total.
The expected values are computed here independently with numpy from the same random data.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import numpy as np

from tessera.spec.config import ArrayConfig
from tessera.spec.result import RunStatus

from . import TOOLCHAIN_DIR, ToolchainError
from .cc import compile_program
from .elf import load_elf
from .header import _cache_root, generate
from .run import DEFAULT_MAX_CYCLES, UsageError, exec_program

__all__ = ["run_demo", "build_demo", "DEMO_SOURCE", "MAX_DEMO_TILES", "MAX_DEMO_WORDS"]

DEMO_SOURCE = TOOLCHAIN_DIR / "programs" / "vecsum.c"
#: Limits compiled into vecsum.c (VECSUM_MAX_TILES, VECSUM_MAX_WORDS).
MAX_DEMO_TILES = 64
MAX_DEMO_WORDS = 1024


def build_demo(config: ArrayConfig, out_dir=None) -> Path:
    """Compile ``tessera/toolchain/programs/vecsum.c`` for ``config``'s exchange latency (cached by content)."""
    if not DEMO_SOURCE.is_file():
        raise ToolchainError(f"demo source missing: {DEMO_SOURCE}")
    key = hashlib.sha256(DEMO_SOURCE.read_bytes() + generate().encode()
                         + (TOOLCHAIN_DIR / "crt0.S").read_bytes()
                         + (TOOLCHAIN_DIR / "link.ld").read_bytes()).hexdigest()[:12]
    out_dir = Path(out_dir) if out_dir else _cache_root() / "demo"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"vecsum-L{config.exchange_latency}-{key}.elf"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp.elf")
        compile_program([DEMO_SOURCE], tmp, defines=[f"TSR_XLATENCY={config.exchange_latency}"])
        tmp.replace(out)
    return out


def expected_sums(data: np.ndarray, contexts: int):
    """Independent reference: per-context partials, per-tile sums and the total.

    Parameters
    ----------
    data : ndarray of int8, shape (tiles, 4 * words)
    contexts : int

    Returns
    -------
    partials : ndarray int64 (tiles, contexts)
        Sum of the words ``c, c+T, ...`` of each tile's slice.
    tile_sums : ndarray int64 (tiles,)
    total : int
    """
    tiles, nbytes = data.shape
    per_word = data.astype(np.int64).reshape(tiles, nbytes // 4, 4).sum(axis=2)
    partials = np.stack([per_word[:, c::contexts].sum(axis=1) for c in range(contexts)], axis=1)
    tile_sums = data.astype(np.int64).sum(axis=1)
    return partials, tile_sums, int(tile_sums.sum())


def run_demo(config: ArrayConfig, *, words_per_tile: int = 96, seed: int = 2024,
             backend: str = "model", max_cycles: int = DEFAULT_MAX_CYCLES, out=print,
             json_out=None) -> int:
    """Build, run and check the vector-sum demo; print a report through ``out``.

    Parameters
    ----------
    config : ArrayConfig
        Target array (≤ 64 tiles).
    words_per_tile : int
        Slice length per tile in 32-bit words (4 int8 elements each), 1..1024.
    seed : int
        Seed of the numpy generator that draws the int8 data.
    backend, max_cycles
        As for ``tessera exec``.
    out : callable
        Receives each report line.
    json_out : str or path-like, optional
        Write the demo report as JSON here (``-`` = stdout): ``program`` ("vecsum"),
        ``match``, ``status``, ``cycles``, ``tiles``, ``contexts``, ``words_per_tile``,
        ``seed``, ``backend``, ``total`` / ``expected_total``, ``tile_totals`` (context 0 of
        each tile, signed), ``tile_sums`` / ``expected_tile_sums`` (the gathered sums of
        tile 0), ``mismatches`` (text, at most 10), ``counters`` (per tile), ``exit_code``
        and ``run_result`` (the §10 run-result JSON).

    Returns
    -------
    int
        0 if every checked value matches, 3 on a mismatch or if the run did not halt.

    Raises
    ------
    UsageError
        Too many tiles or a bad ``words_per_tile``.
    """
    if config.tiles > MAX_DEMO_TILES:
        raise UsageError(f"the demo supports at most {MAX_DEMO_TILES} tiles, not {config.tiles}")
    if not 1 <= words_per_tile <= MAX_DEMO_WORDS:
        raise UsageError(f"words per tile must be in 1..{MAX_DEMO_WORDS}, not {words_per_tile}")
    elf = build_demo(config)
    image = load_elf(elf)
    N, T = config.tiles, config.contexts
    rng = np.random.default_rng(seed)
    data = rng.integers(-128, 128, size=(N, 4 * words_per_tile), dtype=np.int8)
    args, gathered = image.symbols["args"], image.symbols["gathered"]
    preload = [(t, args, struct.pack("<II", words_per_tile, 0) + data[t].tobytes())
               for t in range(N)]
    readback = [(t, gathered, 4 * N) for t in range(N)]
    result, mem = exec_program(image, config, backend=backend, max_cycles=max_cycles,
                               preload=preload, readback=readback)
    partials, tile_sums, total = expected_sums(data, T)

    out(f"Tessera demo: SPMD int8 vector sum, {N} tiles x {T} contexts, "
        f"{N * 4 * words_per_tile} elements ({4 * words_per_tile} per tile), "
        f"L={config.exchange_latency}, backend {backend}")
    out(f"program: {elf}")
    ok = RunStatus(result.status) == RunStatus.HALTED
    out(f"status: {RunStatus(result.status).value}   cycles: {result.cycles}")
    problems = []
    if not ok:
        problems.append(f"run ended with status {RunStatus(result.status).value}")
    mask = 0xFFFFFFFF
    totals = []
    for t in result.tiles:
        codes = [c.exit_code for c in t.contexts]
        totals.append(codes[0])
        if codes[0] is None or codes[0] & mask != total & mask:
            problems.append(f"tile {t.tile} total {codes[0]} != expected {total}")
        for c in range(1, T):
            if codes[c] is None or codes[c] & mask != int(partials[t.tile, c]) & mask:
                problems.append(f"tile {t.tile} context {c} partial {codes[c]} != "
                                f"expected {int(partials[t.tile, c])}")
        got = np.frombuffer(mem[t.tile], dtype="<i4").astype(np.int64)
        if not np.array_equal(got, tile_sums):
            problems.append(f"tile {t.tile} gathered tile sums {got.tolist()} != "
                            f"expected {tile_sums.tolist()}")

    from .run import signed32 as signed
    out(f"result (context 0 of each tile): {[signed(v) for v in totals]}")
    out(f"expected (numpy):                {total}  (tile sums {tile_sums.tolist()})")
    out(f"match: {'yes' if not problems else 'NO'}")
    for p in problems[:10]:
        out(f"  mismatch: {p}")
    out("per-tile counters:")
    out("  tile " + " ".join(f"{k:>9}" for k in ("compute", "sync", "exchange", "halted",
                                                   "retired", "macs")))
    for t in result.tiles:
        cnt = t.counters
        out(f"  {t.tile:4d} " + " ".join(f"{int(cnt[k]):9d}" for k in
                                       ("compute", "sync", "exchange", "halted", "retired",
                                        "macs")))
    code = 0 if not problems else 3
    if json_out is not None:
        import json
        from tessera.output import write_output
        gathered0 = (np.frombuffer(mem[0], dtype="<i4").astype(np.int64).tolist()
                     if mem else [])
        report = {
            "program": "vecsum", "match": not problems,
            "status": RunStatus(result.status).value, "cycles": int(result.cycles),
            "backend": backend, "config": config.to_dict(), "tiles": N, "contexts": T,
            "words_per_tile": words_per_tile, "seed": seed,
            "total": signed(totals[0]) if totals else None, "expected_total": total,
            "tile_totals": [signed(v) for v in totals],
            "tile_sums": gathered0, "expected_tile_sums": tile_sums.tolist(),
            "mismatches": problems[:10],
            "counters": [{k: int(t.counters[k]) for k in t.counters} for t in result.tiles],
            "exit_code": code, "run_result": result.to_json()}
        write_output(json_out, json.dumps(report, indent=1), error=UsageError)
    return code
