# RoadSave: the detection pipeline of RoadSaveKit on Linux.
# `make demo` runs the main job, `make test` the tests; both install missing Debian packages first.

SWIFT ?= swift
export PATH := $(PATH):/opt/swift/usr/bin
OUT := out
BIN := .build/debug/roadsave

.PHONY: deps build test demo bench clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

## Simulate a morning of four devices (one of them crashes), replay it, print the events.
demo: build
	@mkdir -p $(OUT)
	$(BIN) simulate --devices 4 --crashes 1 --seed 7 --duration 45 --output $(OUT)/morning.ndjson --truth $(OUT)/morning-truth.json
	@echo "--- events of $(OUT)/morning.ndjson (log lines on stderr) ---"
	$(BIN) replay $(OUT)/morning.ndjson

## All tests: unit, scenario, real recordings (skipped without ../shared/data) and end to end.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## Records a second for decoding and replay of a large simulated file, against Foundation's JSONDecoder.
bench: deps
	$(SWIFT) build -c release --product roadsave
	$(SWIFT) build -c release --product roadsave-bench
	@mkdir -p $(OUT)
	@[ -f $(OUT)/bench.ndjson ] || .build/release/roadsave simulate --devices 200 --duration 60 --seed 42 --output $(OUT)/bench.ndjson
	.build/release/roadsave-bench $(OUT)/bench.ndjson

clean:
	rm -rf .build $(OUT)
