"""The docs cannot drift: every fenced block of README.md and
docs/compiler.md is marked, every code block is a file under ``examples/`` with exactly
the block's text, and the examples run (fast ones here, the RTL ones in ``make test-all``).

Markers (an HTML comment on the line before the fence):

``<!-- example: examples/FILE -->``       the block is FILE; run by the fast suite
``<!-- example-slow: examples/FILE -->``  the block is FILE; run by the slow suite (RTL builds)
``<!-- output: ... -->``                  printed output; its labels are checked against a run
``<!-- synopsis: tessera CMD ... -->``    a usage synopsis; its options are checked vs --help
``<!-- not-run: REASON -->``              make targets / long benchmarks / a diagram; the
                                          make targets and tessera options are checked
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", ROOT / "docs" / "compiler.md")
EXAMPLES = ROOT / "examples"
_MARK = re.compile(r"^<!-- (example|example-slow|output|synopsis|not-run): (.+?) -->$")


def blocks(doc: Path):
    """``(line, kind, arg, lang, text)`` of every fenced block of ``doc``."""
    lines = doc.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, start = lines[i][3:].strip(), i
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            m = _MARK.match(prev.strip())
            text = "\n".join(lines[start + 1:j]) + "\n"
            out.append((start + 1, m.group(1) if m else None, m.group(2) if m else None,
                        lang, text))
            i = j + 1
        else:
            i += 1
    return out


ALL = [(doc, *b) for doc in DOCS for b in blocks(doc)]


def _examples(kind):
    return sorted({arg for _, _, k, arg, _, _ in ALL if k == kind})


def test_every_block_is_marked_and_equals_its_file():
    """Case 11: README's prog.c, start.S, include/ existed nowhere; now every block is either
    a file under examples/ (identical text) or explicitly marked as not a runnable snippet."""
    assert len(ALL) >= 15
    for doc, line, kind, arg, lang, text in ALL:
        where = f"{doc.name}:{line}"
        assert kind is not None, f"{where}: fenced block without a marker comment"
        if kind in ("example", "example-slow"):
            path = ROOT / arg
            assert path.parent == EXAMPLES or EXAMPLES in path.parents, where
            assert path.is_file(), f"{where}: {arg} does not exist"
            assert path.read_text() == text, f"{where}: block differs from {arg}"
        else:
            assert len(arg) > 3, f"{where}: say why the block is not run"


def test_example_files_are_used():
    """Every file under examples/ is a doc block, or used by one (included, compiled)."""
    files = [p for p in EXAMPLES.rglob("*") if p.is_file()]
    docs = "\n".join(d.read_text() for d in DOCS)
    for p in files:
        others = docs + "\n".join(q.read_text() for q in files if q != p)
        assert p.name in others, f"examples/{p.relative_to(EXAMPLES)} is not used anywhere"


def _workdir(tmp_path):
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "examples").symlink_to(EXAMPLES)
    return tmp_path


def _run_example(rel, cwd, timeout=900):
    path = ROOT / rel
    if path.suffix == ".sh":
        cmd = ["bash", "-e", str(path)]
    elif path.suffix == ".py":
        cmd = [sys.executable, str(path)]
    else:
        return None
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, (rel, r.stdout[-3000:], r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _sum_squares(start, n):
    return sum((start + i) ** 2 for i in range(n)) & 0xFFFFFFFF


#: What each fast example must have produced (checked independently of the code under test).
def _check(rel, r, cwd):
    name = Path(rel).name
    if name == "compile_and_run.sh":
        res = json.loads((cwd / "result.json").read_text())
        assert res["status"] == "halted" and res["config"]["tiles"] == 16
        for t in res["tiles"]:
            assert [c["exit_code"] for c in t["contexts"]] == \
                [_sum_squares(t["tile"] * 8 + c, 8) for c in range(6)]
        assert f"tile 1: exit codes [{', '.join(str(_sum_squares(16 + c, 16)) for c in range(8))}]" \
            in r.stdout, r.stdout                     # prog16.elf, -DN=16, 8 contexts (T >= 6)
        trace = [json.loads(x) for x in (cwd / "trace.jsonl").read_text().splitlines()]
        assert [x["asm"] for x in trace[:4]] == ["csrrs a0,tile_id,zero"] * 4    # hello.S
        assert "00000000 <_start>:" in r.stdout and "match: yes" in r.stdout   # objdump, demo
    elif name == "load_data.sh":
        assert "tile 0: exit codes [-4, 0, 0, 0, 0, 0]" in r.stdout, r.stdout
        assert "tile 1: exit codes [100, 0, 0, 0, 0, 0]" in r.stdout
    elif name == "ring.sh":                              # ring.c: (t-1 mod N) * 7 + 1
        for t in range(4):
            assert f"tile {t}: exit codes [{(t - 1) % 4 * 7 + 1}, 0, 0, 0, 0, 0]" in r.stdout
    elif name == "gen_verilog.sh":
        assert (cwd / "build" / "rtl" / "tessera_array.v").is_file()
        assert "lint: clean" in r.stdout
    elif name == "run_kernel.sh":
        assert r.stdout.count("MATCH vs numpy reference") == 2, r.stdout
        assert json.loads((cwd / "out.json").read_text())["match"] is True
        assert (cwd / "build" / "mm" / "profile.html").is_file()
    elif name == "golden_model.py":
        lines = r.stdout.splitlines()
        assert lines[0].startswith("RunStatus.HALTED")
        assert lines[1] == str([_sum_squares(8 + c, 8) for c in range(6)])
    elif name == "exchange_schedule.py":
        assert "bound met" in r.stdout
    elif name == "custom_codelet.py":
        assert "1 exchange phase(s)" in r.stdout
    elif name == "onnx_model.sh":                        # outputs == onnxruntime's, all of them
        rep = json.loads((cwd / "build" / "onnx" / "report.json").read_text())
        assert rep["reference_mismatches"] == 0 and rep["batch"] == 8
        assert "onnxruntime: 0 element(s) differ" in r.stdout
    elif name == "onnx_api.py":
        assert r.stdout.startswith("0 mismatches;"), r.stdout


@pytest.mark.parametrize("rel", _examples("example"))
def test_fast_examples_run(rel, tmp_path):
    """Case 11: every fast doc example runs as written (from a directory holding .venv and
    examples/, like the repository root) and gives the documented results."""
    cwd = _workdir(tmp_path)
    r = _run_example(rel, cwd)
    if r is not None:
        _check(rel, r, cwd)


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("rel", _examples("example-slow"))
def test_slow_examples_run(rel, tmp_path):
    """The RTL doc examples (Verilator builds, minutes): run by ``make test-all``."""
    cwd = _workdir(tmp_path)
    r = _run_example(rel, cwd, timeout=3600)
    if Path(rel).name.startswith("waves"):
        dump = re.search(r"(\S+\.vcd)", r.stdout + r.stderr)
        assert dump and Path(dump.group(1)).is_file(), (r.stdout, r.stderr)


def _help(cmd):
    r = subprocess.run([sys.executable, "-m", "tessera.cli", *cmd.split(), "--help"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_not_run_blocks_name_real_targets_and_options():
    """The blocks that are not run still cannot drift: make targets exist in the Makefile and
    every ``tessera CMD --option`` exists in ``tessera CMD --help``; the synopsis of
    ``tessera run`` lists only real options."""
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z-]+):", makefile, re.M))
    checked = 0
    for doc, line, kind, arg, lang, text in ALL:
        if kind == "not-run" and lang == "sh":
            for cmd in text.splitlines():
                cmd = cmd.split("#")[0].strip()
                if cmd.startswith("make "):
                    assert cmd.split()[1] in targets, f"{doc.name}:{line}: {cmd}"
                    checked += 1
                m = re.match(r"\S*tessera (\w+)(.*)", cmd)
                if m:
                    h = _help(m.group(1))
                    for opt in re.findall(r"(--[a-z][a-z-]*)", m.group(2)):
                        assert opt in h, f"{doc.name}:{line}: {opt} not in tessera {m.group(1)}"
                        checked += 1
        if kind == "synopsis":
            sub = re.match(r"tessera (\w+)", arg).group(1)
            h = _help(sub)
            for opt in re.findall(r"(--[a-z][a-z-]*)", text):
                assert opt in h, f"{doc.name}:{line}: {opt} not in tessera {sub} --help"
                checked += 1
    assert checked >= 20


def test_demo_output_block_labels(tmp_path):
    """The README's 'What the demo prints' block: every labelled line it shows is printed by
    the demo (model backend, a few images)."""
    (block,) = [b for b in ALL if b[2] == "output" and "tessera demo" in b[3]]
    labels = []
    for ln in block[5].splitlines():
        if ln.startswith("$ ") or "━" in ln:
            continue                                  # the command and the progress bar
        m = re.match(r"^(\s*[A-Za-z][A-Za-z ]*?)(:| [a-z]+:)", ln)
        assert m, ln
        labels.append(ln[:ln.index(":") + 1])
    r = subprocess.run([sys.executable, "-m", "tessera.cli", "demo", "--backend", "model",
                        "--images", "4", "--no-progress", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    printed = r.stdout.splitlines()
    for lab in labels:
        assert any(p.startswith(lab) for p in printed), (lab, r.stdout)
    assert len(labels) >= 8


def _split_args(text):
    """Top-level comma split of a documented argument list (brackets and quotes respected)."""
    out, depth, cur, quote = [], 0, "", None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    return [a for a in out + [cur.strip()] if a]


def test_kernel_library_names_and_signatures_as_documented():
    """Case 11 (a user following docs/compiler.md verbatim): every builder of the kernel
    table is importable from ``tessera.toolchain.kernels`` (``matmul_cols`` was not), and
    every documented call ``name(a, b, key=...)`` of those names is legal: arguments written
    positionally are positional parameters in that order, ``key=`` names a parameter
    (``conv2d_nhwc(g, xp, w, in_shape, stride, ...)`` passed stride positionally to a
    keyword-only parameter)."""
    import inspect
    import tessera.toolchain.kernels as kernels
    text = (ROOT / "docs" / "compiler.md").read_text()
    table = text.split("Every library kernel and where it is reached from:", 1)[1]
    table = table.split("\n\n", 2)[1]
    builders = set()
    for row in table.splitlines()[2:]:
        builders |= set(re.findall(r"`(\w+)`", row.split("|")[2]))
    assert {"matmul", "matmul_cols", "conv2d_nhwc", "pad_input", "global_avgpool"} <= builders
    missing = sorted(b for b in builders if not hasattr(kernels, b))
    assert not missing, f"docs/compiler.md names {missing}; not in tessera.toolchain.kernels"
    checked = 0
    for name, args in re.findall(r"`(\w+)\(([^`]*)\)`", text):
        if name not in kernels.__all__ or args.strip() in ("", "..."):
            continue
        parts = _split_args(args)
        if "=" in parts[0]:
            continue             # e.g. the numpy reference's global_avgpool(keepdims=True)
        params = list(inspect.signature(getattr(kernels, name)).parameters.values())
        for i, a in enumerate(parts):
            if "=" in a:
                key = a.split("=")[0].strip()
                assert key in {p.name for p in params}, f"{name}({args}): no parameter {key}"
            else:
                assert i < len(params) and params[i].kind == params[i].POSITIONAL_OR_KEYWORD, \
                    f"{name}({args}): argument {i + 1} ({a}) is not positional in " \
                    f"{name}{inspect.signature(getattr(kernels, name))}"
        checked += 1
    assert checked >= 8


def test_waveforms_section_says_waves_need_their_own_build():
    """Case 11: the README's waveform example took minutes on first use without saying why:
    tracing is compiled in, so ``--waves`` needs its own Verilator build (the README before
    the fix did not say so)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Waveforms", 1)[1].split("\n## ", 1)[0]
    flat = " ".join(section.split())
    assert "Waves need a separate Verilator build with tracing compiled in" in flat
    assert "the first run with `--waves` builds it" in flat and "later runs reuse it" in flat
