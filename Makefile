# ggmodules — every target a newcomer needs. `make run` and `make test` set everything up first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BUF    := .tools/node_modules/.bin/buf
STAMP  := $(VENV)/.installed
TS_CLIENT := clients/typescript/node_modules/.installed
PROTOS := $(shell find protos -name '*.proto' | sort)
SERVICE_PROTOS := $(filter %_service.proto,$(PROTOS))
GOOGLE_PROTOS := clients/typescript/proto

CHROMIUM := /usr/bin/chromium
SUDO := $(shell test "$$(id -u)" = 0 || echo sudo)

.PHONY: setup gen gen-into check-gen lint structure test run bench profile clean breaking contract release-contract chromium screenshots

setup: $(STAMP) $(BUF) $(TS_CLIENT)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,examples]'
	touch $(STAMP)

$(BUF): .tools/package.json
	cd .tools && npm install --no-audit --no-fund --silent
	touch $(BUF)

# The TypeScript client's packages (protobuf-es, Connect for Node, protoc-gen-es, tsc), as locked.
$(TS_CLIENT): clients/typescript/package.json clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund --ignore-scripts --silent
	touch $(TS_CLIENT)

# Regenerates the Python code beside each .proto (proto path = Python import path), and the TypeScript
# client's code (clients/typescript/src/gen, `buf generate` with buf.gen.yaml).
gen: $(STAMP) $(BUF) $(TS_CLIENT)
	find protos -name '*_pb2*.py*' -delete
	$(MAKE) --no-print-directory gen-into OUT=protos
	$(BUF) generate

# google/rpc/status.proto is read from the TypeScript client's vendored copy; its Python code is
# googleapis-common-protos' (a dependency), so none is generated for it here.
gen-into:
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m grpc_tools.protoc -I protos -I $(GOOGLE_PROTOS) \
	  --python_out=$(OUT) --mypy_out=quiet:$(OUT) $(PROTOS)
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m grpc_tools.protoc -I protos -I $(GOOGLE_PROTOS) \
	  --grpc_python_out=$(OUT) --mypy_grpc_out=quiet:$(OUT) $(SERVICE_PROTOS)

# Fails when the generated code in the tree (Python and TypeScript) differs from what `make gen` would write.
check-gen: $(STAMP) $(BUF) $(TS_CLIENT)
	@out=$$(mktemp -d); $(MAKE) --no-print-directory -s gen-into OUT=$$out >/dev/null; \
	  diff -r -q -x '*.proto' -x '__pycache__' -x released.binpb -x service_config.json protos $$out; stale=$$?; rm -rf $$out; \
	  test $$stale = 0 || { echo 'generated code is stale: run make gen and commit'; exit 1; }
	@out=$$(mktemp -d); sed "s|out: clients/typescript/src/gen|out: $$out|" buf.gen.yaml > $$out.yaml; \
	  $(BUF) generate --template $$out.yaml; diff -r -q clients/typescript/src/gen $$out; stale=$$?; \
	  rm -rf $$out $$out.yaml; \
	  test $$stale = 0 || { echo 'generated TypeScript is stale: run make gen and commit'; exit 1; }

lint: setup check-gen contract structure
	$(BUF) lint
	$(VENV)/bin/ruff check services clients tests examples tools
	$(VENV)/bin/mypy services clients examples tools

# Layers, import cycles and module sizes (tools/check_structure.py names each offending import or file).
structure: $(STAMP)
	$(PY) tools/check_structure.py

# The contract gate: the protos may not break the released contract, a committed image of it
# (protos/released.binpb; rules FILE, buf.yaml). Run by `make lint`, hence by .ci/run.
contract: setup
	$(BUF) breaking protos --against protos/released.binpb

# Deliberately moves the released contract to the protos as they are now. Run it in the same commit as
# a documented break (README, "The contract gate"), or at a release so later changes are judged
# against what was released; never just to turn `make contract` green.
release-contract: setup
	$(BUF) build protos --exclude-source-info -o protos/released.binpb

# Against main's contracts once they have landed (run from a branch).
breaking: setup
	$(BUF) breaking protos --against '.git#branch=main,subdir=protos'

# PostgreSQL too when GGMODULES_TEST_POSTGRES_URL is set or a local server answers at 127.0.0.1:5432
# (tests/tools/find_postgres.py); otherwise every PostgreSQL case is reported as skipped, with the reason.
# Three pytest-xdist workers, each given whole test modules (--dist loadscope: a module's fixtures, e.g. the
# replica clusters, start once); every test already has its own databases, ports and JetStream streams.
test: setup chromium
	GGMODULES_TEST_POSTGRES_URL="$$($(PY) -m tests.tools.find_postgres)" $(VENV)/bin/pytest -q -n 3 --dist loadscope --durations=20

# The web console's browser tests drive Debian's chromium through playwright (never a downloaded browser).
chromium:
	@test -x $(CHROMIUM) || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium; }

# Re-takes the web console's screenshots shown in README.md (services/ggmodules/web/screenshots/).
screenshots: setup chromium
	GGMODULES_UPDATE_SCREENSHOTS=1 $(VENV)/bin/pytest -q tests/web -k readme_fsm_run

run: setup
	$(VENV)/bin/ggmodules up

# ARGS="--only latency" (one section) or ARGS="--quick" passes options through.
bench: setup
	$(PY) -m tests.bench.run $(ARGS)

# py-spy profiles of the service processes on each issue 10 workload (tests/bench/profile.py; needs ptrace,
# i.e. root here). ARGS="--only p1-sqlite --seconds 20 --native" passes options through.
profile: setup
	$(PY) -m tests.bench.profile $(ARGS)

clean:
	rm -rf $(VENV) .tools/node_modules clients/typescript/node_modules clients/typescript/dist var \
	  .pytest_cache .mypy_cache .ruff_cache
