#!/usr/bin/env python3
"""``make coverage``: Verilator line, branch and toggle coverage of the default suite's RTL tests.

Runs ``pytest -m "rtl and not slow"`` (the Verilator tests of ``make test``) with
``$TESSERA_RTL_COVERAGE`` set to a fresh directory, so every Verilator build is a coverage
build (``--coverage-line --coverage-toggle``, Verilog with Amaranth source attributes; cached
under its own key, so the first run rebuilds every configuration once) and every simulation's
points are summed into one file per configuration (:mod:`tessera.tb.coverage`). Then prints,
per Python source file of ``tessera/hdl``, the covered / total line, branch and toggle points,
and the source lines with a line or branch point that no test reached.

Coverage is measured on the Verilator models only; the Amaranth-simulator unit tests
(``tests/test_hdl_*.py``) and the formal proofs are not counted.

Usage: ``scripts/coverage.py [--out DIR] [--keep] [--report-only] [-- PYTEST ARGS]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tessera.tb.coverage import MERGED_SUFFIX, summarize  # noqa: E402
from tessera.tb.runner import COVERAGE_ENV  # noqa: E402


def _pct(c: int, t: int) -> str:
    return f"{100 * c / t:5.1f} %" if t else "    –  "


def report(out_dir: Path, *, show_uncovered: int = 60) -> str:
    """The coverage table and the uncovered source lines of the merged files in ``out_dir``."""
    files = sorted(out_dir.glob(f"*{MERGED_SUFFIX}"))
    if not files:
        raise SystemExit(f"coverage: no *{MERGED_SUFFIX} files in {out_dir} (no RTL test ran?)")
    cov = summarize(files)
    rows = [(p, fc) for p, fc in sorted(cov.items()) if p.startswith("tessera/hdl/")]
    lines = [f"Verilator coverage of {len(files)} configuration(s): "
             + ", ".join(f.name[:-len(MERGED_SUFFIX)] for f in files), "",
             "| file | line | branch | toggle |", "|---|---|---|---|"]
    tot = {"line": [0, 0], "branch": [0, 0], "toggle": [0, 0]}
    for path, fc in rows:
        cells = []
        for typ in ("line", "branch", "toggle"):
            c, t = fc.covered.get(typ, 0), fc.total.get(typ, 0)
            tot[typ][0] += c
            tot[typ][1] += t
            cells.append(f"{c}/{t} ({_pct(c, t).strip()})" if t else "–")
        lines.append(f"| {path} | " + " | ".join(cells) + " |")
    lines.append("| **all** | " + " | ".join(
        f"{c}/{t} ({_pct(c, t).strip()})" for c, t in tot.values()) + " |")
    lines += ["", "Source lines with a line or branch point no test reached:"]
    n = 0
    for path, fc in rows:
        src = (ROOT / path).read_text().splitlines() if (ROOT / path).exists() else []
        for sline, (c, t) in sorted(fc.lines.items()):
            if c < t:
                text = src[sline - 1].strip() if 0 < sline <= len(src) else ""
                lines.append(f"  {path}:{sline}: {c}/{t} reached: {text}")
                n += 1
                if n >= show_uncovered:
                    lines.append("  ... (more; raise --show)")
                    return "\n".join(lines)
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="coverage directory (default: a fresh temp dir)")
    ap.add_argument("--report-only", action="store_true",
                    help="only print the report of an existing --out directory")
    ap.add_argument("--show", type=int, default=60, help="uncovered lines to list")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="tessera-coverage-"))
    out = out.resolve()
    if not args.report_only:
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob(f"*{MERGED_SUFFIX}"):
            old.unlink()
        env = dict(os.environ, **{COVERAGE_ENV: str(out)})
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "rtl and not slow", "-p",
               "no:cacheprovider", *args.pytest_args]
        print("coverage:", " ".join(cmd), f"({COVERAGE_ENV}={out})", flush=True)
        rc = subprocess.call(cmd, cwd=ROOT, env=env)
        if rc:
            print(f"coverage: pytest exited with {rc}; the report covers the tests that ran",
                  file=sys.stderr)
    print(report(out, show_uncovered=args.show))
    print(f"\n(merged coverage files in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
