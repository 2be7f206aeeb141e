# Two commands from a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
VAULT  ?= examples/vault
SPLIT  ?=
# Optional features, as pip extras: `make run EXTRAS=semantic` (semantic recall; see README)
EXTRAS ?=
comma  := ,
EXTRA  := $(if $(EXTRAS),$(VENV)/.extras-$(subst $(comma),-,$(EXTRAS)))

.PHONY: run test index bench clean

$(BIN)/vaultd: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,korean]'
	$(BIN)/python -m compileall -q vaultd  # bytecode now: vaultq starts fast even where PYTHONDONTWRITEBYTECODE is set
	@touch $@

$(VENV)/.extras-%: $(BIN)/vaultd
	$(BIN)/python -m pip install -q -e '.[test,$(EXTRAS)]'
	@touch $@

run: $(BIN)/vaultd $(EXTRA)
	$(BIN)/vaultd run --vault "$(VAULT)" $(if $(SPLIT),--split "$(SPLIT)")

# Two workers, each test file whole on one (its module fixtures built once): most of a test's
# time is waiting on a daemon, a watcher or fsync, so two files overlap well even on 2 cores.
test: $(BIN)/vaultd $(EXTRA)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

index: $(BIN)/vaultd $(EXTRA)
	$(BIN)/vaultd index --vault "$(VAULT)"

bench: $(BIN)/vaultd $(EXTRA)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
