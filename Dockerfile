# RoadSave services in one image: roadsave-ingest, roadsave-detect and roadsave-notify (plus roadsave, for
# send/tail/ctl/replay/simulate inside the network). docker-compose.yml runs one container of it per service.
#
#   docker build -t roadsave:latest .
#
# The package needs a Swift 6 toolchain; pass --build-arg SWIFT_IMAGE=swift:6.x-bookworm to match the one the
# project is developed with if 6.0 lags behind it. Without a registry (the development machines), the base images
# are made locally and passed as build arguments: `make container-test` (scripts/container-test.sh) makes the
# runtime base with debootstrap and builds the executables on the host (BINARIES below); see "Containers" in
# docs/operating.md. Every apt-get step installs only the packages the base image lacks, so a base that has them all
# needs no network.

ARG SWIFT_IMAGE=swift:6.0-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# Where the executables and the Swift runtime come from: the stage `build` compiles them here. Any image that holds
# /staging/bin (the four executables) and /staging/swift (the Swift runtime libraries they link) can stand in for it;
# the build then skips the compile, with a builder that builds only the stages the target needs (BuildKit; the
# classic builder builds every stage, so it needs SWIFT_IMAGE to be a toolchain).
ARG BINARIES=build

# ---- build: the toolchain and the C libraries' development packages ---------------------------------------------
FROM ${SWIFT_IMAGE} AS build
RUN packages="libzmq3-dev libmsgpack-dev libsodium-dev libsqlite3-dev libzstd-dev libmicrohttpd-dev"; \
    missing="$(for p in $packages; do dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"; done)"; \
    if [ -n "$missing" ]; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing \
        && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
# Package.swift names every target, test targets included, so their folders must be present to load it.
COPY Package.swift ./
COPY Shared ./Shared
COPY Services ./Services
COPY Tests ./Tests
RUN swift build -c release --product roadsave-ingest \
    && swift build -c release --product roadsave-detect \
    && swift build -c release --product roadsave-notify \
    && swift build -c release --product roadsave
# Stage what the runtime image needs: the four executables and the Swift runtime libraries they link
# (their RUNPATH is /usr/lib/swift/linux, where the toolchain image keeps them).
RUN mkdir -p /staging/bin /staging/swift \
    && bin="$(swift build -c release --show-bin-path)" \
    && cp "$bin/roadsave" "$bin/roadsave-ingest" "$bin/roadsave-detect" "$bin/roadsave-notify" /staging/bin/ \
    && cp -P /usr/lib/swift/linux/*.so* /staging/swift/

FROM ${BINARIES} AS binaries

# ---- runtime: Debian slim, the shared C libraries, the Swift runtime, a non-root user ---------------------------
# libmicrohttpd12 serves each service's /metrics, /healthz and /readyz (--metrics-endpoint).
FROM ${RUNTIME_IMAGE}
RUN packages="libzmq5 libmsgpackc2 libsodium23 libsqlite3-0 libzstd1 sqlite3 \
        libcurl4 libxml2 libstdc++6 zlib1g tzdata ca-certificates bash libmicrohttpd12"; \
    missing="$(for p in $packages; do dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"; done)"; \
    if [ -n "$missing" ]; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing \
        && rm -rf /var/lib/apt/lists/*; \
    fi
COPY --from=binaries /staging/swift/ /usr/lib/swift/linux/
COPY --from=binaries /staging/bin/ /usr/local/bin/
# The loader finds the Swift runtime through ld.so.cache whatever RUNPATH the executables carry (a toolchain image's
# /usr/lib/swift/linux, or /opt/swift/usr/lib/swift/linux for executables built on the development machines).
RUN echo /usr/lib/swift/linux > /etc/ld.so.conf.d/swift.conf && ldconfig \
    && groupadd --system --gid 10001 roadsave \
    && useradd --system --uid 10001 --gid roadsave --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin roadsave \
    && mkdir -p /var/lib/roadsave/ingest /var/lib/roadsave/detect /var/lib/roadsave/notify \
    && chown -R roadsave:roadsave /var/lib/roadsave && chmod -R 700 /var/lib/roadsave
# Each service's durable state: ROADSAVE_DATA_DIR=/var/lib/roadsave/<service>, a named volume per service in
# docker-compose.yml (no VOLUME here: it would add an anonymous volume beside those). The directories exist in the
# image, owned by the service user, so a new named volume mounted on one takes that ownership.
USER roadsave:roadsave
WORKDIR /tmp
# gateways 5550, records (internal) 5551, control 5552, events (internal) 5553, subscribers 5554, catch-up 5555;
# HTTP /metrics, /healthz, /readyz of ingest 9550, detection 9551, notifier 9552 (as docker-compose.yml sets them)
EXPOSE 5550 5551 5552 5553 5554 5555 9550 9551 9552
# The services stop gracefully on SIGTERM (stop taking input, finish what is in hand, exit 0).
STOPSIGNAL SIGTERM
CMD ["roadsave", "--help"]
