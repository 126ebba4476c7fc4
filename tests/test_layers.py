"""The package's layers (README "Layout"): tessera.spec at the ground, the CLI on top.

Checked on the source text (``ast``), so a violation is reported with the file and line that
imports across a layer, and by importing ``tessera.spec`` in a fresh interpreter.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "tessera"

#: For each layer (a sub-package of tessera), the tessera sub-packages/modules it may import.
#: ``tessera.backends`` is the backend registry (entry points), ``paths``/``output`` are
#: standard-library-only helpers (the golden model's fast engine caches its compiled library
#: under ``paths.cache_root()``); ``cli`` (CLI, demo, bench) may import everything.
ALLOWED = {
    "spec": {"spec"},
    "hdl": {"spec", "hdl"},
    "golden_model": {"spec", "golden_model", "backends", "paths"},
    "toolchain": {"spec", "toolchain", "golden_model", "backends", "paths", "output"},
    "tb": {"spec", "tb", "hdl", "golden_model", "toolchain", "backends", "paths"},
}


def _tessera_imports(path: Path):
    """(line, imported tessera sub-package) for every absolute or relative import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    rel = path.relative_to(PKG).parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "tessera" and len(parts) > 1:
                    yield node.lineno, parts[1]
        elif isinstance(node, ast.ImportFrom):
            if node.level:     # relative: resolve against the file's package
                base = list(rel[:-1])[: len(rel) - 1 - (node.level - 1)]
                parts = base + (node.module.split(".") if node.module else [])
            else:
                parts = (node.module or "").split(".")
                if parts[0] != "tessera":
                    continue
                parts = parts[1:]
            if parts:
                yield node.lineno, parts[0]
            else:              # from tessera import x, y
                for a in node.names:
                    yield node.lineno, a.name


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_what_is_below_it(layer):
    bad = []
    for f in sorted((PKG / layer).rglob("*.py")):
        for line, target in _tessera_imports(f):
            if target not in ALLOWED[layer]:
                bad.append(f"{f.relative_to(PKG.parent)}:{line} imports tessera.{target}")
    assert not bad, f"tessera.{layer} may import only {sorted(ALLOWED[layer])}:\n" + "\n".join(bad)


def test_nothing_below_the_cli_imports_it():
    bad = [f"{f.relative_to(PKG.parent)}:{line}"
           for f in sorted(PKG.rglob("*.py")) if f.relative_to(PKG).parts[0] != "cli"
           and f.name != "__main__.py"
           for line, target in _tessera_imports(f) if target == "cli"]
    assert not bad, "only tessera/__main__.py may import tessera.cli:\n" + "\n".join(bad)


def test_import_spec_loads_only_the_standard_library():
    code = ("import sys; before = set(sys.modules); import tessera.spec, tessera.spec.config, "
            "tessera.spec.isa, tessera.spec.csr, tessera.spec.faults, tessera.spec.exchange, "
            "tessera.spec.hostmap, tessera.spec.result, tessera.spec.instructions, "
            "tessera.spec.timing, tessera.spec.trace; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert any(m == "tessera.spec.isa" for m in out)
    third_party = sorted({m.split(".")[0] for m in out}
                         - set(sys.stdlib_module_names) - {"tessera"})
    assert not third_party, f"import tessera.spec loaded {third_party}"
    outside = sorted(m for m in out if m.startswith("tessera.") and not m.startswith("tessera.spec"))
    assert not outside, f"import tessera.spec loaded {outside}"


def test_test_modules_share_helpers_not_each_other():
    """Shared test code lives in tests/helpers/ (a test module importing another one runs the
    other's module-level code and breaks when that module is renamed)."""
    tests = Path(__file__).resolve().parent
    bad = []
    for f in sorted(tests.glob("test_*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{f.name}:{node.lineno} imports {n}" for n in names if n.startswith("test_")]
    assert not bad, "\n".join(bad)
