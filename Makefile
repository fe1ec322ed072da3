# ggmodules — every target a newcomer needs. `make run` and `make test` set everything up first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BUF    := .tools/node_modules/.bin/buf
STAMP  := $(VENV)/.installed
PROTOS := $(shell find protos -name '*.proto' | sort)
SERVICE_PROTOS := $(filter %_service.proto,$(PROTOS))

.PHONY: setup gen check-gen lint test run bench clean breaking

setup: $(STAMP) $(BUF)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(BUF): .tools/package.json
	cd .tools && npm install --no-audit --no-fund --silent
	touch $(BUF)

# Regenerates the Python code beside each .proto (proto path = Python import path).
gen: $(STAMP)
	find protos -name '*_pb2*.py*' -delete
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m grpc_tools.protoc -I protos \
	  --python_out=protos --mypy_out=quiet:protos $(PROTOS)
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m grpc_tools.protoc -I protos \
	  --grpc_python_out=protos --mypy_grpc_out=quiet:protos $(SERVICE_PROTOS)

# Fails when the committed generated code differs from what `make gen` produces.
check-gen: gen
	@git diff --exit-code --stat -- protos || { echo 'generated code is stale: run make gen and commit'; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- protos)" || { git status --short -- protos; echo 'generated code is stale: run make gen and commit'; exit 1; }

lint: setup check-gen
	$(BUF) lint
	$(VENV)/bin/ruff check services clients tests
	$(VENV)/bin/mypy services clients

# Against main's contracts once they have landed (run from a branch).
breaking: setup
	$(BUF) breaking --against '.git#branch=main'

test: setup
	$(VENV)/bin/pytest -q

run: setup
	$(VENV)/bin/ggmodules up

bench: setup
	$(PY) -m tests.bench.run

clean:
	rm -rf $(VENV) .tools/node_modules var .pytest_cache .mypy_cache .ruff_cache
