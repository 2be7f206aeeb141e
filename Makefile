# Two commands from a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
VAULT  ?= examples/vault
SPLIT  ?=

.PHONY: run test index bench clean

$(BIN)/vaultd: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m compileall -q vaultd  # bytecode now: vaultq starts fast even where PYTHONDONTWRITEBYTECODE is set
	@touch $@

run: $(BIN)/vaultd
	$(BIN)/vaultd run --vault "$(VAULT)" $(if $(SPLIT),--split "$(SPLIT)")

test: $(BIN)/vaultd
	$(BIN)/python -m pytest -q

index: $(BIN)/vaultd
	$(BIN)/vaultd index --vault "$(VAULT)"

bench: $(BIN)/vaultd
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
