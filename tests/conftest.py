"""Test-suite configuration.

Markers (pyproject.toml): ``slow`` (long regressions, ``make test-all``), ``rtl`` (needs a
Verilator build; each configuration is built once per design digest and cached in the user
cache). Shared helpers live in ``tests/helpers/`` (``from helpers.cli import run_cli``);
pytest puts this directory on ``sys.path`` because of this file.
"""

import os

# Graph runs on the golden model are tensor-bounds checked in the test suite
# (tessera.toolchain.graph.checked): a codelet store outside its vertex's tensors fails the test.
os.environ.setdefault("TESSERA_CHECKED", "1")


import pytest


@pytest.fixture
def unchecked(monkeypatch):
    """Plain (not tensor-bounds checked) graph runs for this test: for whole-model runs whose
    codelets have checked runs of their own in smaller tests (a checked run replays the retire
    trace and costs 7-20x a plain model run)."""
    monkeypatch.setenv("TESSERA_CHECKED", "0")
