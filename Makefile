# Everything strictmcp needs on a fresh machine with only Python 3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
EXAMPLE := examples/schema
# The scheduler example's jobs database during `make demo` (removed after).
SCHEDULER_DB := $(CURDIR)/.venv/scheduler-demo.db
# The npm MCP servers the third-party proxy tests run (pinned by their lock file).
NPM_DIR := tests/third_party
NPM_STAMP := $(NPM_DIR)/node_modules/.installed
# An older official client (Python SDK 1.9, speaking 2025-03-26) in its own environment, for
# tests/test_proxy_old_client.py; that SDK needs a pydantic from its own time.
OLD_CLIENT := .venv-mcp1
OLD_CLIENT_STAMP := $(OLD_CLIENT)/.installed
# FastMCP's tasks extension, for tests/test_integration_fastmcp_tasks.py: fastmcp-tasks 4.1.4
# needs FastMCP 4.1.4 and any redis-py but 8.1.0, the one strictmcp pins, so its own venv
# (pip warns of that pin when it installs fastmcp-tasks; the rate limits are not used there).
TASKS_ENV := .venv-fastmcp-tasks
TASKS_ENV_STAMP := $(TASKS_ENV)/.installed
# A real PostgreSQL server for the deep SQL check's tests (tests/postgres_cluster.py starts a
# scratch cluster from Debian's binaries); its major must be pglast's (pyproject.toml).
POSTGRES_STAMP := $(VENV)/.installed-postgresql
# A real Redis server for the rate limits shared by proxy replicas (tests/redis_support.py
# starts one on a free loopback port from Debian's binary).
REDIS_STAMP := $(VENV)/.installed-redis
# A real Prometheus server scrapes the proxy's /metrics in tests/test_observability.py.
PROMETHEUS_STAMP := $(VENV)/.installed-prometheus
# HAProxy in front of two proxy replicas, with examples/haproxy/haproxy.cfg, for
# tests/test_scaleout_haproxy.py.
HAPROXY_STAMP := $(VENV)/.installed-haproxy
# The compiled build (pyproject.toml's mypyc hook): a wheel built from a copy of the sources
# (hatch-mypyc compiles in place, and an extension beside an edited .py would shadow it),
# unpacked where `make unit` puts it first on PYTHONPATH.
COMPILED := build/compiled
# Whether this machine can compile it: a C compiler and the interpreter's headers.
CAN_COMPILE := $(shell command -v cc >/dev/null 2>&1 && $(PYTHON) -c \
  "import os, sys, sysconfig; sys.exit(not os.path.exists(sysconfig.get_paths()['include'] + '/Python.h'))" \
  2>/dev/null && echo yes)
# The tests run against the pure-Python build too: between them they drive every compiled
# module (pyproject.toml's list), from the strict reader to the relay.
PURE_TESTS := tests/test_build.py tests/test_json_numbers.py tests/test_alarms.py \
  tests/test_protocol_jsonrpc.py tests/test_protocol_conversation.py \
  tests/test_protocol_methods.py tests/test_protocol_tool_calls.py tests/test_protocol_tools.py \
  tests/test_enforce.py tests/test_hygiene.py tests/test_flows.py tests/test_proxy_session.py \
  tests/test_proxy_stdio.py tests/test_proxy_fail_closed.py tests/test_listing_checks.py \
  tests/test_gateway.py tests/test_gateway_attacks.py

.PHONY: demo test install install-test lint typecheck unit compiled bench bench-peers clean

demo: install  ## set up and run strictmcp on the bundled examples
	@# The main job: the validating proxy in front of a bundled server; one valid call goes
	@# through, one invalid call is answered by the proxy and never reaches the server.
	$(BIN)/python examples/proxy/demo.py
	@# One gateway for both bundled servers: their tools side by side, one guard over both.
	$(BIN)/python examples/gateway/gateway_demo.py
	$(BIN)/strictmcp schema check $(EXAMPLE)/search-tool.input-schema.json
	$(BIN)/strictmcp schema validate $(EXAMPLE)/search-tool.input-schema.json $(EXAMPLE)/good-call.json
	@# The second call is meant to be refused: exit status 1 is the expected outcome.
	$(BIN)/strictmcp schema validate $(EXAMPLE)/search-tool.input-schema.json $(EXAMPLE)/bad-call.json; \
	  status=$$?; test $$status -eq 1 || { echo "expected exit 1, got $$status"; exit 1; }
	@# A captured MCP session with planted faults: exit status 1 is expected here too.
	$(BIN)/strictmcp messages validate examples/messages/session.jsonl; \
	  status=$$?; test $$status -eq 1 || { echo "expected exit 1, got $$status"; exit 1; }
	@# Lint a sloppy tool list (findings expected: exit 1), then drive the bundled server
	@# through the proxy with generated valid and invalid inputs, asking its validate tool.
	$(BIN)/strictmcp lint examples/lint/tools.json; \
	  status=$$?; test $$status -eq 1 || { echo "expected exit 1, got $$status"; exit 1; }
	$(BIN)/strictmcp check --cases 5 -- $(BIN)/strictmcp proxy -- $(BIN)/python examples/proxy/weather_server.py
	@# Deep checks from a policy, in front of a scheduler that checks nothing: planted faults
	@# found by the proxy's validate tool and before real calls; then check plants a fault for
	@# each check of the policy and finds each caught by it (exit 0). SQLite: no server.
	$(BIN)/python examples/scheduler/scheduler_demo.py
	rm -f $(SCHEDULER_DB)
	SCHEDULER_DB=$(SCHEDULER_DB) $(BIN)/strictmcp check --cases 5 --policy examples/scheduler/policy.toml \
	  -- $(BIN)/strictmcp proxy --policy examples/scheduler/policy.toml -- $(BIN)/python examples/scheduler/scheduler_server.py
	rm -f $(SCHEDULER_DB)

test: install-test lint typecheck unit  ## set up and run the whole suite

install: $(STAMP)
install-test: $(TEST_STAMP) $(NPM_STAMP) $(CHROMIUM_STAMP) $(POSTGRES_STAMP) $(REDIS_STAMP) \
  $(HAPROXY_STAMP) $(PROMETHEUS_STAMP) $(OLD_CLIENT_STAMP) $(TASKS_ENV_STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# `make demo` runs `strictmcp check`, which needs the [check] extra; `make install-test` gets
# every extra through [test].
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[check]'
	touch $@

$(TEST_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP) $@

$(OLD_CLIENT_STAMP):
	$(PYTHON) -m venv $(OLD_CLIENT)
	$(OLD_CLIENT)/bin/pip install --quiet "mcp==1.9.4" "pydantic==2.10.6"
	touch $@

$(TASKS_ENV_STAMP): pyproject.toml
	$(PYTHON) -m venv $(TASKS_ENV)
	$(TASKS_ENV)/bin/pip install --quiet -e '.[fastmcp]' "fastmcp==4.1.4"
	$(TASKS_ENV)/bin/pip install --quiet "fastmcp-tasks==4.1.4"
	touch $@

$(CHROMIUM_STAMP): | $(BIN)/python
	command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	touch $@

$(POSTGRES_STAMP): | $(BIN)/python
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; }
	touch $@

$(REDIS_STAMP): | $(BIN)/python
	command -v redis-server >/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server; }
	touch $@

$(PROMETHEUS_STAMP): | $(BIN)/python
	command -v prometheus >/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; }
	touch $@

$(HAPROXY_STAMP): | $(BIN)/python
	{ command -v haproxy || test -x /usr/sbin/haproxy; } >/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy; }
	touch $@

$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	npm ci --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error
	touch $@

lint:
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

typecheck:
	$(BIN)/mypy

ifeq ($(CAN_COMPILE),yes)
unit: $(TEST_STAMP)
	@# The compiled build is made on one core (gcc on one C file) while the tests of every
	@# compiled module run on the other against pure Python; then the whole suite runs
	@# against the compiled build. STRICTMCP_BUILD makes a run whose imports miss the build
	@# it names fail at once. Two workers, each taking whole test files (module-scoped
	@# fixtures such as the conformance suite's direct runs are then made once).
	$(MAKE) --no-print-directory compiled & building=$$!; \
	  STRICTMCP_BUILD="pure Python" $(BIN)/pytest -q $(PURE_TESTS); pure=$$?; \
	  wait $$building && test $$pure -eq 0
	PYTHONPATH=$(CURDIR)/$(COMPILED) STRICTMCP_BUILD=compiled $(BIN)/pytest -q -n 2 --dist loadfile
else
unit:
	@echo "No C compiler or no Python headers here: the suite runs against the pure-Python build only."
	STRICTMCP_BUILD="pure Python" $(BIN)/pytest -q -n 2 --dist loadfile
endif

# The per-message path compiled with mypyc (pyproject.toml), about two minutes; `strictmcp
# --version` then says "compiled" when run with PYTHONPATH=build/compiled.
compiled: $(TEST_STAMP)
	rm -rf build/wheel-src build/dist $(COMPILED)
	mkdir -p build/wheel-src
	cp -r pyproject.toml README.md src build/wheel-src/
	find build/wheel-src -name __pycache__ -prune -exec rm -rf {} +
	cd build/wheel-src && HATCH_BUILD_HOOK_ENABLE_MYPYC=true \
	  $(CURDIR)/$(BIN)/hatchling build --target wheel --directory $(CURDIR)/build/dist
	$(BIN)/pip install --quiet --no-deps --target $(COMPILED) build/dist/strictmcp-*.whl

bench: install-test  ## engine and protocol benchmarks; figures go in docs/benchmarks.md
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/protocol.py
	$(BIN)/python bench/guards.py
	$(BIN)/python bench/hygiene.py
	$(BIN)/python bench/hygiene.py --proxy
	$(BIN)/python bench/proxy.py
	$(BIN)/python bench/proxy_auth.py
	$(BIN)/python bench/memory.py
	PYTHONPATH=$(CURDIR)/src $(BIN)/python bench/sustained.py
	$(MAKE) bench-peers

# Other MCP proxies next to strictmcp's, each installed (pinned) on first use in its own
# environment under bench/.peers/; see docs/benchmarks.md.
bench-peers: install-test
	$(BIN)/python bench/peers.py

clean:
	rm -rf $(VENV) $(OLD_CLIENT) $(TASKS_ENV) bench/.peers .mypy_cache .ruff_cache .pytest_cache .hypothesis $(NPM_DIR)/node_modules
