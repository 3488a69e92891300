# Flatland: the two quick-start commands are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: demo demo-postgres test deps build lint fuzz bench serve example

deps:
	@./scripts/ensure-deps.sh

## The main job: start the sample server on loopback, run the example flow against it, show the store.
demo: deps
	$(SWIFT) run -c release flatland demo

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
	$(SWIFT) run -c release flatland demo --tables-db "$$url"

## The whole test suite. The table server's suites also run on PostgreSQL: at
## $FLATLAND_TEST_POSTGRES_URL, or else on a throwaway cluster the script starts (and installs
## PostgreSQL 15 for, when missing) and stops afterwards; FLATLAND_NO_POSTGRES=1 skips those cases.
## Then the seeded sync simulation runs SIM_SEEDS more seeds (21 onwards; the suite ran 1–20)
## on its own, two at a time, where nothing else competes for the machine: two to three minutes
## for 300. SIM_SEEDS=0 skips them.
SIM_SEEDS ?= 300
test: deps
	@suite() { \
		$(SWIFT) test || return 1; \
		[ "$(SIM_SEEDS)" = "0" ] && return 0; \
		echo "== the seeded sync simulation: $(SIM_SEEDS) more seeds, alone"; \
		FLATLAND_SIM_SEEDS=$(SIM_SEEDS) FLATLAND_SIM_SEED_START=21 FLATLAND_SIM_PARALLEL=2 \
			$(SWIFT) test --skip-build --filter everySeedConverges; \
	}; \
	if [ -n "$$FLATLAND_TEST_POSTGRES_URL" ] || [ "$$FLATLAND_NO_POSTGRES" = "1" ]; then \
		suite; \
	else \
		dir=$$(mktemp -d); \
		trap 'scripts/postgres-test-cluster.sh stop "'"$$dir"'/cluster" >/dev/null 2>&1; rm -rf "'"$$dir"'"' EXIT; \
		eval "$$(scripts/postgres-test-cluster.sh start "$$dir/cluster")" || exit 1; \
		export FLATLAND_TEST_POSTGRES_URL; \
		suite; \
	fi

build: deps
	$(SWIFT) build -Xswiftc -warnings-as-errors

lint:
	$(SWIFT) format lint --strict -r Sources Tests Fuzz Examples/SeedSDK/Sources Examples/SeedSDK/Tests

## The sample backend of the seed's API on loopback (PORT=8080 by default).
serve: deps
	$(SWIFT) run -c release flatland serve --port $(or $(PORT),8080)

## The example SDK's own tests, against the sample server.
example: deps
	$(SWIFT) test --package-path Examples/SeedSDK

fuzz: deps
	./scripts/fuzz.sh $(or $(SECONDS),60)
