# ggmodules — every target a newcomer needs. `make run` and `make test` set everything up first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BUF    := .tools/node_modules/.bin/buf
STAMP  := $(VENV)/.installed
NODE_CLIENT := clients/node/node_modules/.installed
PROTOS := $(shell find protos -name '*.proto' | sort)
SERVICE_PROTOS := $(filter %_service.proto,$(PROTOS))

.PHONY: setup gen gen-into check-gen lint test run bench clean breaking contract release-contract

setup: $(STAMP) $(BUF) $(NODE_CLIENT)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(BUF): .tools/package.json
	cd .tools && npm install --no-audit --no-fund --silent
	touch $(BUF)

# The Node.js client loads the protos at run time; its packages come from the npm registry.
$(NODE_CLIENT): clients/node/package.json
	cd clients/node && npm install --no-audit --no-fund --ignore-scripts --silent
	touch $(NODE_CLIENT)

# Regenerates the Python code beside each .proto (proto path = Python import path).
gen: $(STAMP)
	find protos -name '*_pb2*.py*' -delete
	$(MAKE) --no-print-directory gen-into OUT=protos

gen-into:
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m grpc_tools.protoc -I protos \
	  --python_out=$(OUT) --mypy_out=quiet:$(OUT) $(PROTOS)
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m grpc_tools.protoc -I protos \
	  --grpc_python_out=$(OUT) --mypy_grpc_out=quiet:$(OUT) $(SERVICE_PROTOS)

# Fails when the generated code in the tree differs from what `make gen` would write.
check-gen: $(STAMP)
	@out=$$(mktemp -d); $(MAKE) --no-print-directory -s gen-into OUT=$$out >/dev/null; \
	  diff -r -q -x '*.proto' -x '__pycache__' -x released.binpb protos $$out; stale=$$?; rm -rf $$out; \
	  test $$stale = 0 || { echo 'generated code is stale: run make gen and commit'; exit 1; }

lint: setup check-gen contract
	$(BUF) lint
	$(VENV)/bin/ruff check services clients tests
	$(VENV)/bin/mypy services clients

# The contract gate: the protos may not break the released contract, a committed image of it
# (protos/released.binpb; rules FILE, buf.yaml). Run by `make lint`, hence by .ci/run.
contract: setup
	$(BUF) breaking --against protos/released.binpb

# Deliberately moves the released contract to the protos as they are now. Run it in the same commit as
# a documented break (README, "The contract gate"), or at a release so later changes are judged
# against what was released; never just to turn `make contract` green.
release-contract: setup
	$(BUF) build --exclude-source-info -o protos/released.binpb

# Against main's contracts once they have landed (run from a branch).
breaking: setup
	$(BUF) breaking --against '.git#branch=main'

# PostgreSQL too when GGMODULES_TEST_POSTGRES_URL is set or a local server answers at 127.0.0.1:5432
# (tests/find_postgres.py); otherwise every PostgreSQL case is reported as skipped, with the reason.
test: setup
	GGMODULES_TEST_POSTGRES_URL="$$($(PY) -m tests.find_postgres)" $(VENV)/bin/pytest -q

run: setup
	$(VENV)/bin/ggmodules up

bench: setup
	$(PY) -m tests.bench.run

clean:
	rm -rf $(VENV) .tools/node_modules clients/node/node_modules var .pytest_cache .mypy_cache .ruff_cache
