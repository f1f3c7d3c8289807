# Toolshed build. Everything needs only the standard Go toolchain.
GO        ?= go
BIN       ?= bin/toolshed
PLUGINS   := $(wildcard plugins/*/main.go)
WASM      := $(patsubst plugins/%/main.go,plugin-manifests/%.wasm,$(PLUGINS))
EVAL      ?= ../shared/eval
# Packages with concurrent code run under the race detector.
RACE_PKGS := ./search/... ./host/... ./sdk/... ./internal/oci/... ./internal/embed/...

.PHONY: all build plugins bundle install test vet race hostile bench bench-test bench-go bench-runtime bench-serve replicas deploy-test eval embed-server fuzz clean run conformance clients clients-python

all: build plugins bundle

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/toolshed

# bin/toolshed again, now carrying the bundled catalog (manifests, modules,
# grants, data: package plugin-manifests under the tag toolshed_bundle), so
# that the binary alone searches, calls and serves the bundled plugins.
bundle: plugins
	$(GO) build -trimpath -tags toolshed_bundle -o $(BIN) ./cmd/toolshed

# make install PREFIX=DIR: DIR/bin/toolshed and the catalog it finds in
# DIR/share/toolshed/plugin-manifests (an operator edits or adds plugins
# there; the binary's own copy serves when that folder is gone).
PREFIX  ?= /usr/local
SHARE   := $(DESTDIR)$(PREFIX)/share/toolshed/plugin-manifests
install: bundle
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE)
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/toolshed
	install -m 0644 plugin-manifests/*.json plugin-manifests/*.wasm $(SHARE)/
	for d in plugin-manifests/*/; do install -d $(SHARE)/$$(basename $$d) && install -m 0644 $$d* $(SHARE)/$$(basename $$d)/; done

# Each plugins/NAME/main.go is compiled to plugin-manifests/NAME.wasm, and
# the module's sha256 is pinned into plugin-manifests/NAME.json. The build is
# reproducible (-trimpath, no VCS stamp): the same Go version gives the same
# bytes, so the committed pins hold.
plugins: build $(WASM)

plugin-manifests/%.wasm: plugins/%/*.go sdk/*.go sdk/abi/*.go
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildvcs=false -buildmode=c-shared -o $@ ./plugins/$*
	@if [ -f plugin-manifests/$*.json ]; then $(BIN) plugins pin plugin-manifests/$*.json; fi

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }

race:
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) test -race -count=1 ./internal/config/
	$(GO) test -race -count=1 -run 'TestChatCompletions|TestMCP|TestServeModels|TestServeRefusesBad|TestServeDrains' ./cmd/toolshed/

# The main module's tests print as plain go test does, then every skipped
# test with its reason (internal/testsummary). The timeout is per package:
# cmd/toolshed builds and runs the binary many times, which on a loaded
# 2-core machine takes well past go test's default 10 minutes.
test: build plugins bundle vet
	$(GO) test -count=1 -timeout 60m -json ./... | $(GO) run ./internal/testsummary
	$(MAKE) race
	$(MAKE) bench-test
	$(MAKE) deploy-test
	$(MAKE) clients

# The benchmark suite against peers (bench/, its own module so the peers
# never enter this one): prints every table and writes docs/BENCHMARKS.md
# and docs/bench-*.svg. -mod=mod lets bench/go.sum follow this module's
# requirements.
BENCH_GO := GOFLAGS=-mod=mod $(GO)

bench:
	cd bench && $(BENCH_GO) run . -eval $(abspath $(EVAL)) -docs ../docs

# The bench module's vet and quick tests (make test runs them).
bench-test:
	cd bench && $(BENCH_GO) vet ./... && $(BENCH_GO) test -count=1 ./...

# deploy/: the Kubernetes manifests decoded strictly into the Kubernetes
# API's types and checked against each other and toolshed.yaml (module
# deploy/check, so those types never enter this one).
deploy-test:
	cd deploy/check && $(BENCH_GO) vet ./... && $(BENCH_GO) test -count=1 ./...

# The main module's Go benchmarks, then the comparison tables of the
# evaluation sets and the runtime's figures.
bench-go: build
	$(GO) test -run '^$$' -bench . -benchmem ./search/... ./internal/evalrun/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 20x ./host/...
	$(MAKE) eval
	$(MAKE) bench-runtime

# The plugin runtime's figures, one run, as a table (docs/RUNTIME.md), and
# the bundled plugins' costs (docs/SQL.md).
bench-runtime:
	$(GO) test -count=1 -run '^TestRuntimeReport$$' -v ./host/wasm -args -report
	$(GO) test -count=1 -run '^TestSQLCostReport$$' -v ./plugins/sql -args -report
	$(GO) test -count=1 -run '^TestChartReport$$' -v ./plugins/chart -args -report
	$(GO) test -count=1 -run '^TestReloadLatency$$' -v ./host/catalog -args -drops 100
	$(GO) test -count=1 -run '^TestReloadMemoryFlat$$' -v ./host/wasm -args -cycles 1000

# The hostile suite's table (docs/SECURITY.md): every attack class through
# the built binary, with its time to fail and peak RSS; then the Extism
# ABI's twins.
hostile:
	$(GO) test -count=1 -run '^TestHostile$$' -v ./cmd/toolshed/ -args -hostile-report
	$(GO) test -count=1 -run '^TestHostileExtism$$' -v ./cmd/toolshed/ -args -hostile-report

# toolshed serve under load: 500 concurrent chat completions (docs/SERVING.md).
bench-serve:
	$(GO) test -count=1 -run '^TestServeLoad$$' -v ./cmd/toolshed/ -args -load-n 500

# Two toolshed serve processes following one tag of an in-process OCI
# registry under a load of chat completions: convergence time, requests
# served, failures; then toolshed serve processes sharing MCP sessions in
# a real redis-server on 127.0.0.1 (Debian's redis-server): a session
# served by B after A is killed, a key's share held across replicas, an
# artifact link of A downloaded from B, redis-server killed under a
# request loop (docs/DEPLOY.md).
replicas:
	$(GO) test -count=1 -run '^TestReplicasConverge$$' -v ./cmd/toolshed/
	$(GO) test -count=1 -run '^TestReplicas(ShareSessions|Artifacts|StoreOutage)$$' -v ./cmd/toolshed/ -args -store-outage 20s

# The official MCP conformance suite's server scenarios against toolshed
# serve (docs/SERVING.md has the outcomes). Installs the suite with npm on
# first use, into ~/.cache/toolshed/conformance; not part of make test.
conformance: build plugins
	BIN=$(BIN) host/mcpserver/conformance/run.sh

# The agent frameworks and SDKs against toolshed serve over the scripted
# model (host/openaiapi/clients: the openai package's chat and responses,
# the AI SDK, LangChain JS, the OpenAI Agents SDK; a failure names the
# framework and the step). Installs the pinned packages with npm on first
# use, into ~/.cache/toolshed/clients; about 20 s after that. make test
# runs it.
clients: build plugins
	BIN=$(BIN) GO=$(GO) host/openaiapi/clients/run.sh
	$(MAKE) clients-python

# The official Python clients against toolshed serve over the same
# scripted model: the openai package (chat completions and responses,
# host/openaiapi/clients/python) and the MCP Python SDK reading back a
# chart with a Chinese title over stdio and streamable HTTP
# (host/mcpserver/python). Nothing is installed: where python3 lacks
# openai or mcp it prints one skip line with the pip command and passes.
clients-python: build plugins
	BIN=$(BIN) GO=$(GO) host/openaiapi/clients/run.sh python

# The evaluation table (docs/SEARCH.md, "The protocol"): every labelled set
# (EVAL's public sets, bench/testdata/eval's converted ones, the Chinese
# set) at its own size and padded to 5,000-100,000 tools, on the test half
# of its requests, Toolshed beside bleve and the naive BM25 in one run.
# EVAL_FLAGS adds bench flags, e.g. EVAL_FLAGS='-half tune -sizes 10000'.
# EMBED=URL (an OpenAI-compatible embeddings API, e.g. the one make
# embed-server starts) adds the candidate list's share with the semantic
# stage; vectors are kept in bench/.cache across runs.
eval:
	cd bench && $(BENCH_GO) run . -only eval -eval $(abspath $(EVAL)) $(if $(EMBED),-embed $(EMBED)) $(EVAL_FLAGS)

# A local embeddings endpoint (Universal Sentence Encoder lite, English,
# from npm) on 127.0.0.1:$(EMBED_PORT), for make eval EMBED=http://127.0.0.1:$(EMBED_PORT)/v1.
EMBED_PORT ?= 8090
embed-server:
	EMBED_PORT=$(EMBED_PORT) bench/embed/run.sh

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./host/manifest
	$(GO) test -run '^$$' -fuzz FuzzAnalyzer -fuzztime 30s ./search/internal/text
	$(GO) test -run '^$$' -fuzz FuzzAppendString -fuzztime 30s ./sdk
	$(GO) test -run '^$$' -fuzz FuzzDecodeFast -fuzztime 30s ./sdk
	$(GO) test -run '^$$' -fuzz FuzzEncodeFast -fuzztime 30s ./sdk
	$(GO) test -run '^$$' -fuzz FuzzRequest -fuzztime 30s ./sdk
	$(GO) test -run '^$$' -fuzz FuzzEval -fuzztime 30s ./plugins/calculate
	$(GO) test -run '^$$' -fuzz FuzzReadInterface -fuzztime 30s ./host/wasm/internal/wasmcheck
	$(GO) test -run '^$$' -fuzz FuzzSplit -fuzztime 30s ./host/wasm/internal/wasmcheck
	$(GO) test -run '^$$' -fuzz FuzzCheckElicitSchema -fuzztime 30s ./host/wasm
	$(GO) test -run '^$$' -fuzz FuzzExtismBlocks -fuzztime 30s ./host/wasm
	$(GO) test -run '^$$' -fuzz FuzzServletResult -fuzztime 30s ./host/wasm
	$(GO) test -run '^$$' -fuzz FuzzResponsesRequest -fuzztime 30s ./host/openaiapi

clean:
	rm -rf bin plugin-manifests/*.wasm
