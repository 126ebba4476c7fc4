"""scripts/mutants.py ranks every mutation site by a hash of (seed, file, the text of the mutated
line, the operator, its occurrence in the line) — docs/verification.md "Mutation score". An edit
of some lines of a file must leave the rank of every site on the other lines unchanged (so the
sample of `make mutants` moves only where the tree was edited)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
mutants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutants)

SRC = '''\
def f(a, b):
    x = a + b - 1
    if x > 3:
        x = x + 2 + a
    return x


def g(m, c):
    with m.If(c == 1):
        m.d.sync += c.eq(c + 1)
'''


def _ranks(tmp_path, text, rel):
    p = tmp_path / "f.py"
    p.write_text(text)
    return {(s["orig"], s["kind"], s["desc"].split(" -> ")[0] if s["kind"] == "const"
             else s["desc"], s["rank"]) for s in mutants.sites_of(p, rel, 17)}


def test_an_edit_moves_only_the_ranks_on_the_edited_lines(tmp_path):
    rel = "tessera/golden_model/f.py"
    before = _ranks(tmp_path, SRC, rel)
    # insert a line above everything and change line 4; lines 2, 3 and g are untouched
    edited = "import os\n" + SRC.replace("x = x + 2 + a", "x = x * 2 + a")
    after = _ranks(tmp_path, edited, rel)
    untouched = {r for r in before if "x + 2" not in r[0] and r[0] not in ("2", "a")}
    assert untouched and untouched <= after
    # the edited line's sites changed rank or disappeared
    assert {r for r in before if r[0] == "x + 2 + a"}.isdisjoint(after)


def test_rank_depends_on_seed_file_and_line(tmp_path):
    a = mutants.rank(17, "x.py", "y = a + b", 0, "op:Add -> Sub", 0)
    assert a == mutants.rank(17, "x.py", "y = a + b", 0, "op:Add -> Sub", 0)
    assert len({a, mutants.rank(18, "x.py", "y = a + b", 0, "op:Add -> Sub", 0),
                mutants.rank(17, "z.py", "y = a + b", 0, "op:Add -> Sub", 0),
                mutants.rank(17, "x.py", "y = a + c", 0, "op:Add -> Sub", 0),
                mutants.rank(17, "x.py", "y = a + b", 1, "op:Add -> Sub", 0),
                mutants.rank(17, "x.py", "y = a + b", 0, "op:Add -> Sub", 1)}) == 6


def test_every_mutated_file_has_a_test_selection():
    for tree in mutants.TREES:
        for f in sorted((ROOT / tree).rglob("*.py")):
            if "__pycache__" not in f.parts:
                assert mutants.tests_for(f.relative_to(ROOT).as_posix())
