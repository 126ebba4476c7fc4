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



#: The longest test files of the default suite (each 70-210 CPU-seconds in a clean-clone run on
#: the 2-core machine, 2026-12-07), longest first. They are collected first, so that the two
#: pytest-xdist workers (``--dist loadfile`` hands out files in collection order) start with
#: them and end together, instead of one worker running a long file alone at the end.
LONG_FILES = ("test_model_engines.py", "test_cli_safety.py", "test_rtl_array.py",
              "test_hdl_engine_checks.py", "test_hdl_core_model.py", "test_hdl_fabric_model.py",
              "test_demo.py", "test_exchange_runs.py", "test_docs_examples.py",
              "test_hdl_exchange.py", "test_hdl_engine.py", "test_rtl_engine_parity.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))   # stable
