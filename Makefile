# Flatland: the two quick-start commands are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: demo test deps build lint fuzz bench serve example

deps:
	@./scripts/ensure-deps.sh

## The main job: start the sample server on loopback, run the example flow against it, show the store.
demo: deps
	$(SWIFT) run -c release flatland demo

## The whole test suite.
test: deps
	$(SWIFT) test

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
