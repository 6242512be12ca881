# RoadSave: the detection pipeline of RoadSaveKit on Linux.
# `make demo` runs the main job, `make test` the tests; both install missing Debian packages first.

SWIFT ?= swift
export PATH := $(PATH):/opt/swift/usr/bin
OUT := out
BIN := .build/debug/roadsave

.PHONY: deps build test lint format demo demo-replay bench up clean fuzz fuzz-smoke quality report-picture container-test swarm-test partition-test docs

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

## The product at work (scripts/demo.sh, under a minute after the build): `roadsave up` on loopback, a simulated
## morning of four devices (one crashes) sent through a gateway (`roadsave send`), the events printed as `roadsave tail`
## receives them, until as many as replay gives; then the services stopped cleanly.
demo: build
	scripts/demo.sh $(BIN)

## The same morning replayed through the engines in one process, the events printed.
demo-replay: build
	@mkdir -p $(OUT)
	$(BIN) simulate --devices 4 --crashes 1 --seed 7 --duration 45 --output $(OUT)/morning.ndjson --truth $(OUT)/morning-truth.json
	@echo "--- events of $(OUT)/morning.ndjson (log lines on stderr) ---"
	$(BIN) replay $(OUT)/morning.ndjson

## All tests: the fuzz smoke run (every libFuzzer target a few seconds on its seeds; under 2 minutes with its build),
## the count guards (scripts/bench_counters.py --check: each hot path's heap allocations a record, system calls a
## batch and ingest's bytes written a batch against scripts/counters-recorded.json, a few seconds), then unit,
## scenario, real recordings (skipped without ../shared/data) and end to end. The tests that start processes and
## time them run one at a time after the others, so a busy 2-core machine can't make them flaky.
## Then `roadsave report` end to end: its page in headless Chromium and its GeoJSON against RFC 7946; last, the
## services' and ingest's benchmarks on a short flood each (each fails when it cannot measure; no speed is
## judged). First, deploy/kubernetes against the Kubernetes 1.28 and newest schemas (scripts/check-kubernetes.sh,
## kubernetes-validate). Examples/AlertingService, a package of its own on the client library (its own .build: about
## 20 s from nothing, a few seconds after), is built before the tests: ClientTests runs it against `roadsave up`.
## The library's API reference is made by docc (scripts/client-docs.sh, its warnings as errors).
PROCESS_TESTS := IntegrationTests|^CommandTests\.|^ClientTests\.|CLITests|DetectionServiceTests|NotifierSinkTests
test: deps lint
	scripts/check-kubernetes.sh
	Fuzz/fuzz.sh run $(FUZZ_SMOKE_SECONDS)
	$(SWIFT) build --build-tests
	python3 scripts/bench_counters.py --bin $(dir $(BIN)) --check
	$(SWIFT) build --package-path Examples/AlertingService
	scripts/client-docs.sh
	$(SWIFT) test --skip-build --skip '$(PROCESS_TESTS)'
	$(SWIFT) test --skip-build --no-parallel --filter '$(PROCESS_TESTS)'
	python3 scripts/test_report.py --roadsave $(BIN)
	python3 scripts/bench_services.py --bin $(dir $(BIN)) --records 3000 --devices 50 --batch 200 --probes 5 \
		--flood-seconds 1 --skip-shards --skip-restart --client send --check
	python3 scripts/bench_ingest.py --bin $(dir $(BIN)) --records 3000 --devices 50 --rounds 1 --prefill 1
	python3 scripts/disk_stalls.py --seconds 1

## The client library's API reference (RoadSaveClient), made offline by the toolchain's docc from the module's
## symbol graph: .build/docs/RoadSaveClient (serve it, e.g. python3 -m http.server -d .build/docs/RoadSaveClient,
## and open /documentation/roadsaveclient).
docs: deps
	scripts/client-docs.sh

## The house style (.swift-format, swift format as the toolchain ships it): `make lint` fails on any file that
## `make format` would change, or on a rule the configuration enables, and when docs/contributing.md's graph of the
## targets no longer matches Package.swift (scripts/dependency-graph.py); `make test` runs it first.
SWIFT_SOURCES := Package.swift Shared Services Tests Fuzz Examples
lint:
	$(SWIFT) format lint --strict --recursive --parallel $(SWIFT_SOURCES)
	python3 scripts/dependency-graph.py --check docs/contributing.md

format:
	$(SWIFT) format --in-place --recursive --parallel $(SWIFT_SOURCES)

## The Dockerfile and docker-compose.yml for real, offline (scripts/container-test.sh; root, a few minutes, not part of
## `make test`): a debootstrap base image (cached in .build/container), the executables built on the host, the image;
## compose up with a gateway container sending a fleet with a crash and a subscriber container that must get it;
## restart and recreate keep the stores; every stop is SIGTERM, exit 0, within the grace period; all removed after.
container-test: deps
	scripts/container-test.sh

## deploy/swarm/stack.yml for real on a Docker Swarm of three docker-in-docker nodes (scripts/swarm-test.sh; root,
## minutes, not part of `make test`): the image as container-test builds it; a fleet with a crash through two ingests
## from a third node, replay's events once at a subscriber; then SIGKILL a detection task, drain its node, restart a
## node, scale an ingest to 0 and back, each time replay's events once. Everything it made is removed after.
swarm-test: deps
	scripts/swarm-test.sh

## Network partitions between the services (scripts/partition_test.py; root, about 25 minutes, not part of `make
## test`): five network namespaces (gateway, ingest, detection, notifier, subscriber) joined by TUN links that
## scripts/tun_forwarder.py cuts, heals, degrades (30 % loss, 200 ms) or makes forget their flows like a NAT; with
## keys and a reordering gateway, each drill checks that the subscriber gets replay's events once, nothing is left
## unapplied, every record is acknowledged, traffic flows within 5 s of the heal and readiness says 503 within 10 s.
## PARTITION_ARGS passes options (--drills, --runs, --cut-seconds, --json FILE, --keep; see --help).
partition-test: deps
	$(SWIFT) build
	python3 scripts/partition_test.py --bin .build/debug $(PARTITION_ARGS)

## The three services on this machine (set ROADSAVE_APPLICATIONS to the applicationIDs to accept).
up: build
	.build/debug/roadsave up

## Every benchmark, one table (scripts/bench.py): decoding and replay (NDJSON and MessagePack) against Foundation's
## JSONDecoder and msgpack-c's bare unpack; the engines alone; the three services with keys against a bare
## acknowledging server, crash latency under load and detection shards; detection's memory with many idle devices;
## the work counters (scripts/bench_counters.py: heap allocations and system calls a record, a batch, a feed reply,
## an event on each hot path, on the fleet of issue 46, out/fleet.ndjson). Each figure with its baseline from the same
## run, the ratio, the target and the load; also written to out/bench.json. `scripts/install-deps.sh bench` adds
## Debian's linux-perf, which counts the services' system calls.
bench:
	@scripts/install-deps.sh bench
	$(SWIFT) build -c release
	@mkdir -p $(OUT)
	@[ -f $(OUT)/bench.ndjson ] || .build/release/roadsave simulate --devices 200 --duration 60 --seed 42 --output $(OUT)/bench.ndjson
	@[ -f $(OUT)/fleet.ndjson ] || .build/release/roadsave simulate --devices 200 --duration 20 --seed 7 --output $(OUT)/fleet.ndjson
	python3 scripts/bench.py --bin .build/release --records $(OUT)/bench.ndjson --counter-records $(OUT)/fleet.ndjson \
		--output $(OUT)/bench.json

## Trips on the real recordings (../shared/data): per dataset and mode (MobilityNet also per OS and phone sensing),
## the labelled legs taken for driving and the enviroCar drives measured on their moving time (scripts/quality.py;
## skipped when the recordings are absent). QUALITY_JSON=FILE writes the figures too.
quality: deps
	$(SWIFT) build -c release --product roadsave
	python3 scripts/quality.py --roadsave .build/release/roadsave $(if $(QUALITY_JSON),--json $(QUALITY_JSON))

## libFuzzer on every decoder of outside input (Fuzz/README.md): FUZZ_SECONDS a target (default 60). A finding is
## kept in .build/fuzz/findings/<target>/ and fails the run.
FUZZ_SECONDS ?= 60
fuzz: deps
	Fuzz/fuzz.sh run $(FUZZ_SECONDS)

## Every fuzz target for a few seconds on its seeds: that the targets build and the seeds hold their properties.
FUZZ_SMOKE_SECONDS ?= 3
fuzz-smoke: deps
	Fuzz/fuzz.sh run $(FUZZ_SMOKE_SECONDS)

## docs/report.png, the picture of a report in the README and docs/replay-and-reports.md: the report test's day
## recording, drawn by `roadsave report` and photographed in headless Chromium (after the test's checks pass on it).
report-picture: deps
	$(SWIFT) build --product roadsave
	python3 scripts/test_report.py --roadsave $(BIN) --screenshot docs/report.png

clean:
	rm -rf .build Examples/AlertingService/.build $(OUT)
