# Flatland: the two quick-start commands are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: demo test deps build lint fuzz bench

deps:
	@./scripts/ensure-deps.sh

## The main job: generate a seed-shaped response and show what Flatland does with it.
demo: deps
	$(SWIFT) run -c release flatland demo

## The whole test suite.
test: deps
	$(SWIFT) test

build: deps
	$(SWIFT) build -Xswiftc -warnings-as-errors

lint:
	$(SWIFT) format lint --strict -r Sources Tests

fuzz: deps
	./scripts/fuzz.sh $(or $(SECONDS),60)
