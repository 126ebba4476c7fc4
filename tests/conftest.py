"""Test-suite configuration.

Markers (pyproject.toml): ``slow`` (long regressions, ``make test-all``), ``rtl`` (needs a
Verilator build; each configuration is built once per design digest and cached in the user
cache). Shared helpers live in ``tests/helpers/`` (``from helpers.cli import run_cli``);
pytest puts this directory on ``sys.path`` because of this file.
"""

import os

# Graph runs on the golden model are tensor-bounds checked in the test suite
# (tessera.toolchain.graph.checked): a codelet store outside its vertex's tensors fails the test.
# Every graph run on the model is checked: on the fast engine a checked run costs about as much
# as a plain one (its store log).
os.environ.setdefault("TESSERA_CHECKED", "1")

