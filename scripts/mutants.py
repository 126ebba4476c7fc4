#!/usr/bin/env python3
"""``make mutants``: a seeded mutation score of ``tessera/hdl/`` and ``tessera/golden_model/``.

Every mutation site of the two trees is found with Python's ``ast`` and ranked by a SHA-256 of
(seed, file path, the stripped text of the mutated line(s), the how-many-th identical such line
in the file, the operator, its occurrence index within the line) — :func:`rank`; the ``--per-tree``
sites of lowest rank per tree are the sample. A site's rank depends on nothing but its own
lines, so an edit of one file changes only the sites on the edited lines (plus, when the edit
adds or removes sites, which sites are just inside or outside the lowest ``--per-tree``). Ids are
``M`` + the first 6 hex digits of the rank: stable too. Each sampled mutant is applied one at
a time **in a temporary copy of the tree** (the git-tracked files, copied once; the worktree is
never touched), and the tests selected for the mutated file (``TESTS`` below) are run with a
per-mutant timeout. A mutant is

* ``killed``   — some selected test (or proof) failed,
* ``survived`` — every selected test passed,
* ``timeout``  — some selected test did not finish within its limit, the larger of
  ``--timeout`` seconds and 3 × its time on the unmutated tree (counted as killed by the score,
  reported separately: a mutant that hangs the suite is detected),
* ``invalid``  — the mutated file does not compile (not sampled: such sites are dropped first).

Mutation operators (the classic ones, as in mutmut / Jester):

* ``op``     binary/comparison/boolean operator swap (+ ↔ −, & ↔ |, ^ → |, << ↔ >>, == ↔ !=,
  < ↔ <=, > ↔ >=, and ↔ or);
* ``const``  integer constant ± 1 (the sign chosen by the rank: of the two, the one whose
  rank salted with the sign is lower);
* ``cond``   condition inverted: Amaranth ``m.If(c)`` / ``m.Elif(c)`` → ``(c) == 0``, Python
  ``if`` / ``while`` / ``x if c else y`` → ``not (c)``;
* ``drop``   assignment dropped: an Amaranth ``m.d.<domain> += ...`` statement, or a Python
  assignment inside a function, replaced by ``pass``.

Test selection (fast tests only; docs/verification.md explains the choice): Amaranth-simulator
unit and parity tests of the hdl blocks (including whole-array runs against the golden model:
the matrix engine, exchange STEP runs, the stack limit — tests/helpers/hdl_parity.py), the
formal proofs of the proven blocks (``--quick`` configurations with N = 3), the golden-model
tests for golden_model/, and one Verilator test (tests/test_exchange_after_run_end.py, one
4-tile build, 1-2 min) last for the exchange engine and the other tile / array files. Every
pytest run excludes the ``slow`` and ``rtl`` markers except for entries ending in ``@rtl``. The
full Verilator suite (parity, conformance, random programs) is not run per mutant: each mutant
would need a fresh Verilator build and minutes of simulation.

Writes ``build/mutants/results.json`` and ``build/mutants/summary.md``.

    python scripts/mutants.py                      # 100 hdl + 100 golden_model mutants, seed 17
    python scripts/mutants.py --per-tree 20 --tree tessera/hdl
    python scripts/mutants.py --list               # the sample only, nothing run
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("tessera/golden_model", "tessera/hdl")

_HDL_SIM = ["tests/test_hdl_exchange.py", "tests/test_hdl_host.py", "tests/test_hdl_stop.py",
            "tests/test_hdl_host_lowbits.py", "tests/test_hdl_fabric_core.py",
            "tests/test_hdl_fabric_model.py"]
# Amaranth-simulator array runs against the golden model (tests/helpers/hdl_parity.py): the
# matrix engine, exchange STEP runs, the stack limit
_ENGINE_SIM = ["tests/test_hdl_engine_model.py"]
# the engine's unit tests (its requantization chains against the reference, construction) and
# its data checks on the Amaranth array (tests/test_hdl_engine_checks.py)
_ENGINE_UNIT = ["tests/test_hdl_engine.py", "tests/test_hdl_engine_checks.py"]
_RUNS_SIM = ["tests/test_exchange_runs.py"]
_STACK_SIM = ["tests/test_model_stack_limit.py"]
# test_hdl_core_model: the v2 core against the golden model, one tile, random programs
_CORE_SIM = ["tests/test_hdl_core_units.py", "tests/test_hdl_restart.py", "tests/test_hdl_core.py",
             "tests/test_hdl_core_model.py", "tests/test_hdl_fabric_core.py",
             "tests/test_hdl_fabric_model.py"] + _STACK_SIM + _ENGINE_SIM
# the one Verilator test run per mutant (one 4-tile build, 1-2 min): only for the files
# whose Amaranth tests do not reach everything (run last, so only a survivor of the rest pays)
_RTL_END = ["tests/test_exchange_after_run_end.py@rtl"]
# the other hdl files (tile, SRAM, fault record, array, interfaces, the decision trees)
_HDL_REST = _HDL_SIM + ["tests/test_hdl_core.py", "tests/test_hdl_interfaces.py"] \
    + _RUNS_SIM + _ENGINE_SIM + _STACK_SIM + _RTL_END
_MODEL = ["tests/test_model_*.py", "tests/test_spec.py", "tests/test_hdl_fabric_model.py",
          "tests/test_exchange_runs.py", "tests/test_exchange_scheduler_model.py",
          "tests/test_graph_checked.py", "tests/test_hdl_engine_model.py"]
# test_model_*.py includes tests/test_model_mutant_survivors.py (written for earlier survivors),
# test_model_engine.py / test_model_engines.py (the matrix engine, the fast C engine) and
# test_model_stack_limit.py
# test_kernel_lib_pool.py checks the pooling codelets against golden_model/kernels/pool.py
_KERNELS = ["tests/test_kernels_*.py", "tests/test_model_mutant_survivors.py",
            "tests/test_kernel_lib.py", "tests/test_kernel_lib_engine.py",
            "tests/test_kernel_lib_pool.py"]


def _formal(block):
    return [f"formal:{block}"]


#: mutated file (relative to the repo) -> test files / proofs, in the order they are run
#: (fast first; the first failure kills the mutant). Prefix matches; first match wins.
#: Every pytest entry runs with ``-m "not slow and not rtl"`` unless it ends in ``@rtl``
#: (then ``-m "not slow"``: its Verilator tests too).
TESTS = [
    # contract v2: the stop controller and the registered reduction trees (architecture §7
    # "Array decisions") have their own unit tests, run first
    ("tessera/hdl/array/stop_controller.py", ["tests/test_hdl_stop.py"] + _HDL_REST),
    ("tessera/hdl/array/reduction_tree.py", ["tests/test_hdl_stop.py", "tests/test_hdl_sync.py"]
     + _formal("sync")
     + _HDL_REST),
    ("tessera/hdl/array/sync_controller.py", ["tests/test_hdl_sync.py"] + _HDL_SIM + _formal("sync")),
    ("tessera/hdl/array/exchange_fabric.py", ["tests/test_hdl_exchange.py", "tests/test_hdl_fabric_core.py",
                                "tests/test_hdl_fabric_model.py"] + _RUNS_SIM + _formal("fabric")),
    ("tessera/hdl/tile/core/scheduler.py", ["tests/test_hdl_core_units.py", "tests/test_hdl_core.py"]
     + _formal("scheduler")),
    ("tessera/hdl/array/host_port.py", ["tests/test_hdl_host.py", "tests/test_hdl_host_lowbits.py",
                          "tests/test_hdl_exchange.py"] + _formal("host_port")),
    ("tessera/hdl/tile/matrix_engine.py", _ENGINE_UNIT + _ENGINE_SIM + ["tests/test_hdl_core.py"]),
    # the engine's output stage (TFLITE / FLOAT32 chains): only the engine uses it
    ("tessera/hdl/tile/requant.py", _ENGINE_UNIT + _ENGINE_SIM + ["tests/test_hdl_core.py"]),
    ("tessera/hdl/tile/exchange_engine.py", _RUNS_SIM + ["tests/test_hdl_exchange.py",
                                                         "tests/test_hdl_fabric_core.py",
                                                         "tests/test_hdl_fabric_model.py"]
     + _RTL_END),
    ("tessera/hdl/tile/core/decoder.py", ["tests/test_hdl_core_units.py", "tests/test_hdl_engine.py"]
     + _CORE_SIM),
    ("tessera/hdl/tile/core/", _CORE_SIM),
    ("tessera/hdl/gen.py", ["tests/test_hdl_fabric_gen.py", "tests/test_rtl_tools.py"]),
    # the fault record's own cycle-by-cycle test first (2026-12-07: fields a cycle late)
    ("tessera/hdl/tile/fault_record.py", ["tests/test_hdl_fault_record.py"] + _HDL_REST),
    ("tessera/hdl/", _HDL_REST),
    ("tessera/golden_model/kernels/qlinear.py", ["tests/test_onnx_qlinear.py"] + _KERNELS),
    ("tessera/golden_model/kernels/", _KERNELS),
    ("tessera/golden_model/engine.py", ["tests/test_model_engine.py",
                                        "tests/test_kernel_lib_engine.py"] + _MODEL),
    ("tessera/golden_model/fast/", ["tests/test_model_engines.py"] + _MODEL),
    ("tessera/golden_model/", _MODEL),
]

_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
         ast.BitXor: ast.BitOr, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
         ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv,
         ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt,
         ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.And: ast.Or, ast.Or: ast.And}


def tests_for(path: str):
    for prefix, tests in TESTS:
        if path.startswith(prefix):
            return list(dict.fromkeys(tests))      # each test once, first position kept
    raise KeyError(path)


class _Sites(ast.NodeVisitor):
    """Collect (kind, node, replacement text) for one module."""

    def __init__(self, amaranth):
        self.amaranth = amaranth
        self.out, self.func_depth, self.skip = [], 0, 0

    def add(self, kind, node, text, desc):
        self.out.append((kind, node, text, desc))

    def visit_JoinedStr(self, node):      # f-strings: nothing inside is mutated
        return

    def visit_Expr(self, node):           # docstrings
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        self.func_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.func_depth -= 1

    def visit_AsyncFunctionDef(self, node):
        self.visit_FunctionDef(node)

    def visit_ClassDef(self, node):
        for stmt in node.body:
            self.visit(stmt)

    def _swap(self, node, ops_attr):
        pass

    def visit_BinOp(self, node):
        new = _SWAP.get(type(node.op))
        if new:
            m = ast.BinOp(left=node.left, op=new(), right=node.right)
            self.add("op", node, f"({ast.unparse(m)})",
                     f"{type(node.op).__name__} -> {new.__name__}")
        self.generic_visit(node)

    def visit_Compare(self, node):
        if len(node.ops) == 1 and type(node.ops[0]) in _SWAP:
            new = _SWAP[type(node.ops[0])]
            m = ast.Compare(left=node.left, ops=[new()], comparators=node.comparators)
            self.add("op", node, f"({ast.unparse(m)})",
                     f"{type(node.ops[0]).__name__} -> {new.__name__}")
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        new = _SWAP[type(node.op)]
        m = ast.BoolOp(op=new(), values=node.values)
        self.add("op", node, f"({ast.unparse(m)})", f"{type(node.op).__name__} -> {new.__name__}")
        self.generic_visit(node)

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, int) and not isinstance(v, bool) and self.func_depth:
            # both signs are sites; sites_of keeps one of the two per constant, by its rank
            for d in (1, -1):
                self.add("const", node, f"({v + d})", f"{v} -> {v + d}")

    def visit_Call(self, node):
        f = node.func
        if (self.amaranth and isinstance(f, ast.Attribute) and f.attr in ("If", "Elif")
                and node.args):
            a = node.args[0]
            self.add("cond", a, f"(({ast.unparse(a)}) == 0)", f"m.{f.attr}(c) -> c == 0")
        self.generic_visit(node)

    def _py_cond(self, node):
        if self.func_depth:
            self.add("cond", node.test, f"(not ({ast.unparse(node.test)}))", "c -> not c")

    def visit_If(self, node):
        self._py_cond(node)
        self.generic_visit(node)

    def visit_While(self, node):
        self._py_cond(node)
        self.generic_visit(node)

    def visit_IfExp(self, node):
        self._py_cond(node)
        self.generic_visit(node)

    def _stmt_drop(self, node):
        if not self.func_depth:
            return
        t = node.target if isinstance(node, ast.AugAssign) else None
        is_domain = (t is not None and isinstance(t, ast.Attribute)
                     and isinstance(t.value, ast.Attribute) and t.value.attr == "d")
        if self.amaranth and is_domain:
            self.add("drop", node, "pass", f"drop m.d.{t.attr} += ...")
        elif not self.amaranth:
            self.add("drop", node, "pass", "drop assignment")

    def visit_Assign(self, node):
        self._stmt_drop(node)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._stmt_drop(node)
        self.generic_visit(node)


def _offsets(src):
    starts, pos = [], 0
    for line in src.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    return starts


def _operator(kind, desc):
    """The operator part of a site's rank key: the kind and the swap, not the constant's value
    (that is on the line already) — ``const`` sites of one constant share the operator, and
    ``sites_of`` keeps the lower-ranked of their two signs."""
    return "const" if kind == "const" else f"{kind}:{desc}"


def rank(seed, rel, line_text, dup, operator, occurrence):
    """The rank of one site: SHA-256 of (seed, file path, the stripped text of the mutated
    line(s), the how-many-th identical such text in the file, the operator and its occurrence
    index within the line). It depends on nothing outside those lines, so an edit of one file
    re-ranks only the sites on the edited lines (and, for ``const``, the ± choice is part of it)."""
    key = "\0".join([str(seed), rel, line_text, str(dup), operator, str(occurrence)])
    return hashlib.sha256(key.encode()).hexdigest()


def sites_of(path: Path, rel: str, seed):
    src = path.read_text()
    tree = ast.parse(src)
    v = _Sites(amaranth=rel.startswith("tessera/hdl/"))
    v.visit(tree)
    lines = _offsets(src)
    src_lines = src.splitlines(keepends=True)
    # the how-many-th occurrence of each stripped line text (identical lines in one file get
    # different ranks)
    dup_of, seen = {}, {}
    for i, ln in enumerate(src_lines, 1):
        t = ln.strip()
        dup_of[i] = seen.get(t, 0)
        seen[t] = dup_of[i] + 1
    occ = {}
    out = []
    for kind, node, text, desc in v.out:
        a = lines[node.lineno - 1] + len(
            src_lines[node.lineno - 1].encode()[:node.col_offset].decode())
        b = lines[node.end_lineno - 1] + len(
            src_lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode())
        # the mutated line(s): every source line the node spans, stripped, joined
        span = "\n".join(ln.strip() for ln in src_lines[node.lineno - 1:node.end_lineno])
        op = _operator(kind, desc)
        okey = (node.lineno, node.end_lineno, op)
        sign = ""
        if kind == "const":
            sign = "+" if text == f"({node.value + 1})" else "-"
        if sign == "-":
            n_occ = occ[okey] - 1       # the -1 twin of the +1 site just counted
        else:
            n_occ = occ.get(okey, 0)
            occ[okey] = n_occ + 1
        r = rank(seed, rel, span, dup_of[node.lineno], op, n_occ)
        new = src[:a] + text + src[b:]
        if new == src:
            continue
        try:
            compile(new, rel, "exec")
        except SyntaxError:
            continue
        out.append({"file": rel, "line": node.lineno, "kind": kind, "desc": desc,
                    "orig": src[a:b].split("\n")[0][:80], "start": a, "end": b, "text": text,
                    "rank": r, "sign": sign})
    # const: one sign per constant, the one whose (sign-salted) rank is lower
    best = {}
    keep = []
    for s in out:
        if s["kind"] != "const":
            keep.append(s)
            continue
        k = (s["start"], s["end"])
        salted = hashlib.sha256((s["rank"] + s["sign"]).encode()).hexdigest()
        if k not in best or salted < best[k][0]:
            best[k] = (salted, s)
    keep += [s for _, s in best.values()]
    return keep


def collect(trees, per_tree, seed):
    """The sample: per tree, the ``per_tree`` sites of lowest :func:`rank` (ties by file and
    offset). Ids are ``M`` + the first 6 hex digits of the rank, so ``--only`` names the same
    mutant after unrelated edits."""
    sample = []
    for tree in trees:
        files = sorted(p for p in (ROOT / tree).rglob("*.py") if "__pycache__" not in p.parts)
        sites = []
        for p in files:
            rel = p.relative_to(ROOT).as_posix()
            sites += sites_of(p, rel, seed)
        sites.sort(key=lambda s: (s["rank"], s["file"], s["start"]))
        picked = sites[:min(per_tree, len(sites))]
        picked.sort(key=lambda s: (s["file"], s["start"]))
        for s in picked:
            sample.append(dict(s, tree=tree, population=len(sites)))
    for s in sample:
        s["id"] = "M" + s["rank"][:6]
    ids = [s["id"] for s in sample]
    assert len(set(ids)) == len(ids), "rank prefix collision: lengthen the id"
    return sample


def copy_tree(dst: Path):
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in files:
        if not f:
            continue
        s = ROOT / f
        if s.is_file():
            d = dst / f
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d)


def run_tests(tree: Path, tests, timeout, env):
    """Run the selected tests in ``tree``, each with its own time limit: ``timeout`` is the
    seconds for every test, or a dict test -> seconds. Returns (status, which, seconds, output):
    ``output`` is the last 3,000 characters of the failing run's stdout + stderr (else "")."""
    t0 = time.monotonic()
    for t in tests:
        left = timeout[t] if isinstance(timeout, dict) else timeout
        if t.startswith("formal:"):
            cmd = [sys.executable, "tests/formal/run.py", "--quick", "--tiles", "3", "-q",
                   "--timeout", "120", "--only", t.split(":", 1)[1] + ".",
                   "--build", str(tree.parent / "formal")]
        else:
            t, rtl = (t[:-4], True) if t.endswith("@rtl") else (t, False)
            paths = sorted(str(p.relative_to(tree)) for p in tree.glob(t)) or [t]
            mark = "not slow" if rtl else "not slow and not rtl"
            cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                   "-o", f"addopts=-m '{mark}'"] + paths
        try:
            r = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                               timeout=left)
        except subprocess.TimeoutExpired:
            return "timeout", t, time.monotonic() - t0, ""
        if r.returncode != 0:
            return "killed", t, time.monotonic() - t0, (r.stdout + r.stderr)[-3000:]
    return "survived", None, time.monotonic() - t0, ""


class _Worker:
    """One worker's private copy of the tree (``work/tree``), Verilator build directory
    (``work/rtl``) and proof directory (``work/formal``): ``--jobs`` workers never share a file."""

    def __init__(self, base: Path, i: int):
        self.work = base / f"w{i}"
        self.tree = self.work / "tree"
        copy_tree(self.tree)
        self.env = dict(os.environ, PYTHONPATH=str(self.tree), PYTHONDONTWRITEBYTECODE="1",
                        TESSERA_BUILD_DIR=str(self.work / "rtl"))
        self.env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + self.env.get("PATH", "")

    def clean(self):
        shutil.rmtree(self.work / "rtl", ignore_errors=True)
        shutil.rmtree(self.work / "formal", ignore_errors=True)


def summary_md(results, seed, per_tree):
    lines = [f"seed {seed}, {per_tree} sampled mutants per tree", "",
             "| tree | mutants | killed | timeout | survived | score |",
             "|---|---|---|---|---|---|"]
    for tree in TREES:
        rs = [r for r in results if r["tree"] == tree]
        if not rs:
            continue
        k = sum(r["status"] == "killed" for r in rs)
        to = sum(r["status"] == "timeout" for r in rs)
        sv = sum(r["status"] == "survived" for r in rs)
        lines.append(f"| {tree}/ (of {rs[0]['population']} sites) | {len(rs)} | {k} | {to} | "
                     f"{sv} | {100 * (k + to) / len(rs):.1f} % |")
    surv = [r for r in results if r["status"] == "survived"]
    if surv:
        lines += ["", "Survivors:", "", "| id | file:line | kind | mutation | original |",
                  "|---|---|---|---|---|"]
        for r in surv:
            lines.append(f"| {r['id']} | {r['file']}:{r['line']} | {r['kind']} | "
                         f"{r['desc']} → `{r['text'][:40]}` | `{r['orig'][:50]}` |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--per-tree", type=int, default=100)
    ap.add_argument("--tree", action="append", choices=TREES, help="default: both")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per selected test, at least (its limit is the larger of this and 3x "
                         "its unmutated run)")
    ap.add_argument("--out", default=str(ROOT / "build" / "mutants"))
    ap.add_argument("--only", help="comma-separated mutant ids to run")
    ap.add_argument("--list", action="store_true", help="print the sample and exit")
    ap.add_argument("--summary", action="store_true",
                    help="only (re)write OUT/summary.md from OUT/results.json")
    ap.add_argument("--jobs", type=int, default=1,
                    help="mutants run at the same time, each in its own copy of the tree "
                         "(default 1; `make mutants` uses MUTANTS_JOBS, default 2)")
    ap.add_argument("--resume", action="store_true",
                    help="keep results already in OUT/results.json (same seed and sample)")
    args = ap.parse_args(argv)
    trees = args.tree or list(TREES)
    sample = collect(trees, args.per_tree, args.seed)
    if args.only:
        keep = set(args.only.split(","))
        sample = [s for s in sample if s["id"] in keep]
    if args.list:
        for s in sample:
            print(f"{s['id']} {s['file']}:{s['line']} {s['kind']:<5} {s['desc']:<24} "
                  f"{s['orig']!r} -> {s['text'][:40]!r}")
        print(f"{len(sample)} mutants")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.summary:
        old = json.loads((out / "results.json").read_text())
        md = summary_md(old["results"], old["seed"], old["per_tree"])
        (out / "summary.md").write_text(md)
        print(md)
        return 0
    done = {}
    res_file = out / "results.json"
    if args.resume and res_file.exists():
        old = json.loads(res_file.read_text())
        if old.get("seed") == args.seed:
            done = {r["id"]: r for r in old["results"]
                    if any(r["id"] == s["id"] and r["file"] == s["file"]
                           and r["start"] == s["start"] for s in sample)}
    jobs = max(1, args.jobs)
    base = Path(tempfile.mkdtemp(prefix="tessera-mutants-"))
    t_all = time.monotonic()
    by_id = dict(done)
    order = [s["id"] for s in sample]
    lock = threading.Lock()

    def save(final=False):
        head = {"seed": args.seed, "per_tree": args.per_tree, "jobs": jobs}
        if final:
            head["wall_seconds"] = round(time.monotonic() - t_all, 1)
        res_file.write_text(json.dumps(dict(head, results=[by_id[i] for i in order
                                                           if i in by_id]), indent=1))

    try:
        workers = queue.Queue()
        for i in range(jobs):
            workers.put(_Worker(base, i))
        # baseline: every selected test must pass on the unmutated copy, or a "kill" would
        # mean nothing (run on the workers in parallel, as the mutants are: each test's time
        # limit below is measured under the same load)
        needed = []
        for s in sample:
            if s["id"] not in done:
                for t in tests_for(s["file"]):
                    if t not in needed:
                        needed.append(t)
        base_secs = {}

        def baseline(t):
            w = workers.get()
            try:
                st, _, secs, output = run_tests(w.tree, [t], 1800, w.env)
            finally:
                w.clean()
                workers.put(w)
            print(f"baseline {t}: {st} ({secs:.1f} s)", flush=True)
            if st != "survived":
                print(output)
                raise SystemExit(f"baseline failure in {t}: fix the tree before mutating")
            base_secs[t] = secs

        with ThreadPoolExecutor(jobs) as pool:
            for fut in [pool.submit(baseline, t) for t in needed]:
                fut.result()

        def mutant(s):
            w = workers.get()
            f = w.tree / s["file"]
            orig = f.read_text()
            f.write_text(orig[:s["start"]] + s["text"] + orig[s["end"]:])
            try:
                # each test's limit scales with its own unmutated run (a loaded machine must
                # not turn a slow survivor into a "timeout", and a mutant that hangs the first
                # test must not wait for the time of the whole selection)
                limit = {t: max(args.timeout, 3 * base_secs.get(t, 0))
                         for t in tests_for(s["file"])}
                status, which, secs, output = run_tests(w.tree, tests_for(s["file"]), limit,
                                                        w.env)
            finally:
                f.write_text(orig)
                w.clean()
                workers.put(w)
            r = dict(s, status=status, by=which, seconds=round(secs, 1))
            if status == "killed":
                r["evidence"] = [ln for ln in output.splitlines()
                                 if "FAIL" in ln or "Error" in ln][:3]
            with lock:
                by_id[s["id"]] = r
                print(f"{s['id']} {status:<8} {secs:6.1f} s  {s['file']}:{s['line']} {s['kind']} "
                      f"{s['desc']}  [{which or '-'}]", flush=True)
                save()

        with ThreadPoolExecutor(jobs) as pool:
            for fut in [pool.submit(mutant, s) for s in sample if s["id"] not in done]:
                fut.result()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    save(final=True)
    results = [by_id[i] for i in order if i in by_id]
    md = summary_md(results, args.seed, args.per_tree)
    (out / "summary.md").write_text(md)
    print()
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
