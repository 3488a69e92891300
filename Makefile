# Flatland: the two quick-start commands are `make demo` and `make test`.
#
# Three packages (see "The package map" in the README): the libraries at the root, the server and
# the `flatland` tool in Server/, the benchmarks and `flatland-bench` in Benchmarks/.
SWIFT ?= swift
# Extra flags for every build and test (CI: -Xswiftc -warnings-as-errors).
SWIFT_FLAGS ?=

.PHONY: demo demo-postgres test deps build lint docs fuzz bench serve example

deps:
	@./scripts/ensure-deps.sh

## The main job: start the sample server on loopback, run the example flow against it, show the store.
demo: deps
	$(SWIFT) run --package-path Server -c release flatland demo

## The same demo with the table server's rows in PostgreSQL: $FLATLAND_DEMO_POSTGRES_URL, or a
## throwaway cluster from scripts/postgres-test-cluster.sh (installs PostgreSQL 15 when missing).
demo-postgres: deps
	@url="$$FLATLAND_DEMO_POSTGRES_URL"; \
	if [ -z "$$url" ]; then \
		dir=$$(mktemp -d); \
		eval "$$(scripts/postgres-test-cluster.sh start "$$dir/cluster")" || exit 1; \
		trap 'scripts/postgres-test-cluster.sh stop "'"$$dir"'/cluster"; rm -rf "'"$$dir"'"' EXIT; \
		url="$$FLATLAND_TEST_POSTGRES_URL"; \
	fi; \
	if [ -z "$$url" ]; then \
		echo "demo-postgres: no PostgreSQL. Set FLATLAND_DEMO_POSTGRES_URL=postgres://USER@127.0.0.1:PORT/DB"; \
		exit 2; \
	fi; \
	$(SWIFT) run --package-path Server -c release flatland demo --tables-db "$$url"

## The whole test suite: the libraries' (root), the server's, the tool's and the HTTP and sync
## integration suites (Server/), the seeded sync simulation, and the benchmark commands'
## (Benchmarks/). All three packages build in Server/'s build folder: they share GRDB and the
## libraries, and the last two SwiftNIO, Hummingbird, postgres-nio and BoringSSL, which are so
## compiled once (a developer's own `swift build` at the root still uses .build). Each package is built, then run,
## and the time of each step is printed; the last line sums the building and the running.
## SwiftPM keeps one build plan per build folder, and a `swift test --skip-build` runs the test
## bundle of the last plan made there: so each package that builds in Server/.build drops the
## plan first (a few seconds to make again) and runs its tests right after its own build.
## The table server's suites also run on PostgreSQL: at $FLATLAND_TEST_POSTGRES_URL, or else on a
## throwaway cluster the script starts (and installs PostgreSQL 15 for, when missing) and stops
## afterwards; FLATLAND_NO_POSTGRES=1 skips those cases. The simulation runs the suite's 20 seeds
## and SIM_SEEDS more (seeds 1 to SIM_SEEDS + 20) after the suite, on their own, two at a time,
## where nothing else competes for the machine: about a minute for 100. SIM_SEEDS=0 runs only the
## suite's 20, inside the suite; CI runs 300 more.
## The tool's suite (FlatlandCLITests) runs in a test process of its own. Its cases once waited
## for their `flatland` child processes on threads of Swift's cooperative pool (two on this
## machine): in one process with the other suites they starved every in-process server and timer
## (a whole run once saw every test wait about 12 minutes for a thread), and alone they ran two
## children at a time. They now wait on threads of their own (`CLI.run`); the suite keeps its
## process, where its many children compete with no in-process server.
SIM_SEEDS ?= 80
# The suite's own 20 seeds run in the same step, two at a time, rather than inside the suite,
# where they were its longest test.
SIM_TOTAL = $(shell echo $$(( $(SIM_SEEDS) + 20 )))
SERVER_PLAN = Server/.build/debug/description.json
# Every build of the shared build folder runs SwiftPM with deterministic hashing. SwiftPM passes a
# package's enabled traits to the compiler as -D flags in the iteration order of a Set, which is
# random per process: Hummingbird's two (-DFullFoundation -DConfigurationSupport) came out in a
# different order in the benchmark package's plan than in the server's, so each switch of plan
# compiled HummingbirdCore and Hummingbird again (the benchmark step took 170 s instead of 41).
BUILD = env SWIFT_DETERMINISTIC_HASHING=1 $(SWIFT) build
test: deps
	@built=0; ran=0; \
	step() { \
		kind=$$1; shift; t0=$$(date +%s); "$$@"; rc=$$?; t=$$(( $$(date +%s) - t0 )); \
		if [ "$$kind" = build ]; then built=$$((built + t)); else ran=$$((ran + t)); fi; \
		echo "-- $$kind: $$t s"; return $$rc; \
	}; \
	seeds() { \
		log=$$(mktemp); \
		env FLATLAND_SIM_SEEDS=$(SIM_TOTAL) FLATLAND_SIM_SEED_START=1 FLATLAND_SIM_PARALLEL=2 \
			$(SWIFT) test --package-path Server --skip-build $(SWIFT_FLAGS) --filter everySeedConverges >"$$log" 2>&1; \
		rc=$$?; cat "$$log"; \
		if [ $$rc = 0 ] && ! grep -q "^simulation: $(SIM_TOTAL) seeds" "$$log"; then \
			echo "make test: the simulation did not report $(SIM_TOTAL) seeds (was another package's test bundle run?)"; rc=1; \
		fi; \
		rm -f "$$log"; return $$rc; \
	}; \
	suite() { \
		echo "== the libraries (., built in Server/'s build folder)"; \
		rm -f $(SERVER_PLAN); \
		step build $(BUILD) --scratch-path Server/.build --build-tests $(SWIFT_FLAGS) || return 1; \
		step run $(SWIFT) test --scratch-path Server/.build --skip-build $(SWIFT_FLAGS) || return 1; \
		echo "== the server, the tool, and the HTTP and sync integration suites (Server/)"; \
		rm -f $(SERVER_PLAN); \
		step build $(BUILD) --package-path Server --build-tests $(SWIFT_FLAGS) || return 1; \
		if [ "$(SIM_SEEDS)" = "0" ]; then \
			step run $(SWIFT) test --package-path Server --skip-build $(SWIFT_FLAGS) \
				--skip FlatlandCLITests || return 1; \
		else \
			step run $(SWIFT) test --package-path Server --skip-build $(SWIFT_FLAGS) \
				--skip everySeedConverges --skip FlatlandCLITests || return 1; \
		fi; \
		echo "== the tool's suite (FlatlandCLITests), in a process of its own"; \
		step run $(SWIFT) test --package-path Server --skip-build $(SWIFT_FLAGS) --filter FlatlandCLITests \
			|| return 1; \
		if [ "$(SIM_SEEDS)" != "0" ]; then \
			echo "== the seeded sync simulation: seeds 1 to $(SIM_TOTAL), alone, two at a time"; \
			step run seeds || return 1; \
		fi; \
		echo "== the benchmark commands (Benchmarks/, built in Server/'s build folder)"; \
		rm -f $(SERVER_PLAN); \
		step build $(BUILD) --package-path Benchmarks --scratch-path Server/.build --build-tests \
			$(SWIFT_FLAGS) || return 1; \
		step run $(SWIFT) test --package-path Benchmarks --scratch-path Server/.build --skip-build \
			$(SWIFT_FLAGS) || return 1; \
	}; \
	finish() { rc=$$?; echo "== make test: built in $$built s, ran in $$ran s"; return $$rc; }; \
	if [ -n "$$FLATLAND_TEST_POSTGRES_URL" ] || [ "$$FLATLAND_NO_POSTGRES" = "1" ]; then \
		suite; finish; \
	else \
		dir=$$(mktemp -d); \
		trap 'scripts/postgres-test-cluster.sh stop "'"$$dir"'/cluster" >/dev/null 2>&1; rm -rf "'"$$dir"'"' EXIT; \
		eval "$$(scripts/postgres-test-cluster.sh start "$$dir/cluster")" || exit 1; \
		export FLATLAND_TEST_POSTGRES_URL; \
		suite; finish; \
	fi

build: deps
	$(SWIFT) build -Xswiftc -warnings-as-errors
	$(SWIFT) build --package-path Server -Xswiftc -warnings-as-errors

LINT_PATHS = Package.swift Sources Tests Fuzz Server/Package.swift Server/Sources Server/Tests \
	Transports/AsyncHTTPClient/Package.swift Transports/AsyncHTTPClient/Sources \
	Benchmarks/Package.swift Benchmarks/Sources Benchmarks/Tests Examples/SeedSDK/Package.swift \
	Examples/SeedSDK/Sources Examples/SeedSDK/Tests
lint:
	$(SWIFT) format lint --strict -r $(LINT_PATHS)

## The libraries' DocC catalogs, converted with the toolchain's docc over the debug build's symbol
## graphs; fails on any warning. Archives in .build/docs. ARGS=--server adds the server's modules.
docs: deps
	SWIFT_FLAGS="$(SWIFT_FLAGS)" ./scripts/docs.sh $(ARGS)

## The sample backend of the seed's API on loopback (PORT=8080 by default).
serve: deps
	$(SWIFT) run --package-path Server -c release flatland serve --port $(or $(PORT),8080)

## The example SDK's own tests, against the sample server.
example: deps
	$(SWIFT) test --package-path Examples/SeedSDK

fuzz: deps
	./scripts/fuzz.sh $(or $(SECONDS),60)

## The parse and ingest comparison (`flatland-bench bench`, release build of Benchmarks/); ARGS=…
## for its options, e.g. ARGS=--json. The other benchmark commands: see Benchmarks/README.md.
bench: deps
	$(SWIFT) run --package-path Benchmarks -c release flatland-bench bench $(ARGS)
